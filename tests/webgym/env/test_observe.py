"""Set-of-marks observations of forms: which form a field is in, its label and value, options named
by their label and group, wrapped links clickable at their mark, and the page's text."""

from __future__ import annotations

from tests.fixture_site import run_in_browser, url_of
from webgym.config import EnvConfig
from webgym.env.episode import Episode
from webgym.env.observe import page_state
from webgym.env.safety import UrlPolicy
from webgym.policies.scorer.candidates import page_candidates

PAGE = """<html><body style="margin:0; font: 16px sans-serif">
  <form id="search"><input name="q" aria-label="Search" value="mug"><button type="submit">Go</button></form>
  <form id="order">
    <label>Full name <input name="name" placeholder="e.g. Jane Doe"></label>
    <label>City <input name="city" value="York"></label>
    <fieldset><legend>Delivery</legend>
      <label><input type="radio" name="speed" value="std"> Standard (3-5 days)</label>
      <label><input type="radio" name="speed" value="exp"> Express (next day)</label>
    </fieldset>
    <textarea name="note" aria-label="Note"></textarea>
    <button type="submit">Place order</button>
  </form>
  <label><input type="checkbox"> Acme Home</label>
  <div role="radiogroup" aria-label="Quantity"><button role="radio">1</button><button role="radio">2</button></div>
  <div style="width: 90px"><a href="#p1">Stoneware Coffee Mug With A Long Name</a></div>
  <p>Price</p><p>$45.00</p>
</body></html>"""


def test_fields_options_and_wrapped_links_as_the_scorer_needs_them():
    async def scenario(browser):
        page = await browser.new_page()
        await page.set_content(PAGE)
        found = {e.text: e for e in (await page_state(page))[0]}
        search, go = found["mug"], found["Go"]
        assert (search.form, search.label, search.value, go.form, go.role) == (0, "Search", "mug", 0, "submit")
        name, city = found["e.g. Jane Doe"], found["York"]
        assert (name.form, name.label, name.value) == (1, "Full name", "")
        assert (city.label, city.value) == ("City", "York")
        assert found["Note"].tag == "textarea" and (found["Note"].label, found["Note"].value) == ("Note", "")
        express = found["Express (next day)"]  # a radio is named by its label and boxed by it
        assert (express.role, express.label, express.form, express.value) == ("radio", "Delivery", 1, None)
        assert express.width > 100
        assert found["Acme Home"].role == "checkbox" and found["Acme Home"].form is None
        assert found["2"].label == "Quantity"
        link = found["Stoneware Coffee Mug With A Long Name"]
        hit = await page.evaluate("([x, y]) => document.elementFromPoint(x, y).tagName",
                                  [link.x + link.width / 2, link.y + link.height / 2])
        assert hit == "A"  # the centre of its first line, not of the wrapped block
        assert (await page_state(page))[1].splitlines()[-2:] == ["Price", "$45.00"]

    run_in_browser(scenario)


LIST = """<html><body style="margin:0; font: 16px sans-serif">
  <a href="#cart">Cart</a>
  <ul>
    <li><h3>Croissants</h3><span>€2.40</span> <button>Add</button> <a href="#c">Details</a></li>
    <li><h3>Rye bread</h3><span>€3.10</span> <button>Add</button> <a href="#r">Details</a></li>
  </ul>
  <div><p>Sourdough (large)</p><button>Add</button></div>
</body></html>"""


def test_buttons_and_links_that_read_alike_are_named_by_the_item_they_sit_in():
    """Which "Add" adds the croissants is what the scorer reads from the item around it; a button or link no other
    reads like keeps no item name."""
    elements = []

    async def scenario(browser):
        page = await browser.new_page()
        await page.set_content(LIST)
        elements.extend((await page_state(page))[0])

    run_in_browser(scenario)
    assert [(e.text, e.label) for e in elements] == [
        ("Cart", None), ("Add", "Croissants €2.40 Details"), ("Details", "Croissants €2.40 Add"),
        ("Add", "Rye bread €3.10 Details"), ("Details", "Rye bread €3.10 Add"), ("Add", "Sourdough (large)")]
    described = [c.text for c in page_candidates(elements, "") if c.kind in ("link", "button")]
    assert described == ['click link "Cart"',
                         'click button "Add" (Croissants €2.40 Details)', 'click link "Details" (Croissants €2.40 Add)',
                         'click button "Add" (Rye bread €3.10 Details)', 'click link "Details" (Rye bread €3.10 Add)',
                         'click button "Add" (Sourdough large)']


def test_page_text_is_observed_in_set_of_marks_mode_only(site):
    async def scenario(browser):
        policy = UrlPolicy(allowed_hosts=frozenset({f"127.0.0.1:{site.server_address[1]}"}), allow_public=False)
        for mode, expected in (("set_of_marks", "Next page\nBuy\nNew tab\nbottom"), ("coordinates", None)):
            async with Episode(browser, EnvConfig(observation=mode), policy) as episode:
                await episode.open(url_of(site))
                assert (await episode.observe()).page_text == expected

    run_in_browser(scenario)
