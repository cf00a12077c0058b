"""The observation layer on pages no one here wrote: elements clickable only by script or cursor,
inputs named by the text beside them, selects and their options, formless forms grouped by layout,
each control's kind and state, submenus opened by hovering, and `back` on a page with no earlier one."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from playwright.async_api import Browser, Page

from schemas.steps import Action, Element
from tests.fixture_site import run_in_browser
from webgym.env.actions import Browsing, execute
from webgym.env.observe import page_state, watch_listeners
from webgym.policies.scorer.candidates import Candidate, page_candidates

SCRIPTED = """<html><body style="margin:0; font: 16px sans-serif">
  <p>Lorem <span class="alink">ipsum</span> dolor <span class="alink">sit</span> amet.</p>
  <div class="thread" style="cursor: pointer; width: 300px">Ann Lee Meeting notes <span class="star">*</span></div>
  <div class="card" style="cursor: pointer"><b>Card</b> <i>with nested styled text</i></div>
  <label class="check" style="cursor: pointer"><input type="checkbox" checked> Keep me signed in</label>
  <div class="widget"><label><input type="radio"> Widget radio</label></div>
  <div role="tablist"><a role="tab" aria-selected="true" href="#a">Inbox</a>
    <a role="tab" aria-selected="false" href="#b">Sent</a></div>
  <button aria-expanded="false">Menu</button>
  <div contenteditable="true" aria-label="Message" style="width: 200px; height: 40px"></div>
  <script>
    for (const span of document.querySelectorAll('.alink, .star')) span.addEventListener('click', () => {});
    document.querySelector('.thread').addEventListener('click', () => {});
    document.querySelector('.widget').addEventListener('click', () => {});  // adds nothing beside its radio
    document.body.addEventListener('click', () => {});  // a page-wide handler makes nothing clickable
  </script>
</body></html>"""

LABELS = """<html><body style="margin:0; font: 16px sans-serif">
  <div id="form">
    <p><label class="bold">Username</label><input type="text" id="username"></p>
    <p><label class="bold">Password</label><input type="password" id="password"></p>
    <button id="subbtn">Login</button>
  </div>
  <table><tr><td>Card number</td><td><input id="card"></td></tr></table>
  <div><div style="font-size: 13px">Street</div><input id="street"></div>
  <span id="who">Recipient</span><input aria-labelledby="who" id="to">
  <div>Select Eula from the list and click Submit.</div><div><select id="pick"><option>Eula</option></select></div>
</body></html>"""

SELECT = """<html><body style="margin:0; font: 16px sans-serif">
  <label for="colour">Colour</label>
  <select id="colour"><option>Red</option><option>Green</option><option disabled>Grey</option><option>Blue</option></select>
  <div role="listbox" aria-label="Size"><div role="option">Small</div><div role="option">Large</div></div>
  <button id="submit">Submit</button>
  <p id="out"></p>
  <script>
    document.querySelector('#colour').addEventListener('change', e => document.querySelector('#out').textContent = 'changed to ' + e.target.value);
    for (const o of document.querySelectorAll('[role=option]')) o.addEventListener('click', () => {
      for (const p of document.querySelectorAll('[role=option]')) p.setAttribute('aria-selected', String(p === o)); });
  </script>
</body></html>"""


DRAWN = """<html><body style="margin:0; font: 16px sans-serif">
  <svg width="300" height="60"><text class="text" x="10" y="30" font-size="20">7</text>
    <g class="slice"><path d="M100 10 L140 10 L140 50 Z" fill="#ccc"></path><text x="112" y="40">Q</text></g></svg>
  <div id="area">
    <span style="display:inline-block; width:30px; height:30px; background-color:hsl(0, 40%, 80%)"></span>
    <span style="display:inline-block; width:30px; height:30px; background-color:hsl(120, 60%, 35%)"></span>
    <div class="color" style="width:30px; height:30px; background-color:pink"></div>
  </div>
  <p>Date: <input id="date" readonly></p>
  <button id="go">Submit</button>
  <script>
    for (const e of document.querySelectorAll('svg text.text, g.slice, #area span, #area div')) e.addEventListener('click', () => {});
    document.querySelector('#date').addEventListener('click', e => e.target.value = '12/01/2016');
  </script>
</body></html>"""

MENU = """<html><body style="margin:0; font: 16px sans-serif">
  <ul role="menu" tabindex="0" style="width: 120px">
    <li><div role="menuitem" tabindex="-1">Save</div></li>
    <li><div role="menuitem" tabindex="-1">Playback</div>
      <ul role="menu" style="display: none"><li><div role="menuitem" tabindex="-1">Play</div></li></ul></li>
  </ul>
  <div tabindex="0" style="width: 200px">Notes <a href="#more">more</a></div>
  <svg width="200" height="40" id="board"></svg>
  <svg width="200" height="40">
    <rect x="0" y="0" width="20" height="20" fill="yellow"></rect>
    <circle cx="40" cy="10" r="10" fill="rgb(0, 128, 0)"></circle>
    <polygon points="60,20 70,0 80,20" fill="blue"></polygon>
    <text x="100" y="20" fill="magenta">T</text>
  </svg>
  <script>for (const e of document.querySelectorAll('svg, svg *')) e.addEventListener('click', () => {});</script>
</body></html>"""
"""jQuery UI's menu (a focusable list around its items, a hidden submenu), a focusable note with a link,
and drawn shapes that differ only by fill and kind (MiniWoB++'s click-menu-2 and click-shape)."""


SUBMENU = """<html><body style="margin:0; font: 16px sans-serif">
  <ul role="menu" style="width: 120px; margin: 0; padding: 0; list-style: none">
    <li><div role="menuitem">Save</div></li>
    <li><div role="menuitem" id="playback" aria-haspopup="true">Playback</div>
      <ul role="menu" aria-hidden="true" style="display: none; position: absolute; left: 120px; top: 20px;
          margin: 0; padding: 0; list-style: none"><li><div role="menuitem">Stop</div></li></ul></li>
  </ul>
  <select multiple style="position: absolute; top: 100px"><option>Ann</option><option>Bob</option>
    <option>Cy</option></select>
  <script>
    playback.addEventListener('mouseenter', () => setTimeout(() => {
      playback.nextElementSibling.style.display = 'block'; }, 300));
    for (const item of document.querySelectorAll('[role=menuitem]')) {
      item.addEventListener('click', () => { document.title = 'chose ' + item.innerText; });
    }
  </script>
</body></html>"""
"""jQuery UI's menu as MiniWoB++'s click-menu builds it (a parent item marked aria-haspopup whose submenu opens
300 ms after the pointer enters it; a click on any item chooses it), and a multiple select (click-scroll-list)."""


SWATCHES = """<html><body style="margin:0">
  <span style="display: inline-block; width: 20px; height: 20px; background: rgb(93, 192, 93)"></span>
  <span style="display: inline-block; width: 20px; height: 20px; background: rgb(55, 55, 179)"></span>
  <script>
    for (const s of document.querySelectorAll('span')) s.addEventListener('click', () => s.classList.toggle('selected'));
  </script>
</body></html>"""
"""Colour swatches a script selects by a class (MiniWoB++'s click-shades)."""


CALENDAR = """<html><body style="margin:0; font: 12px sans-serif">
  <div class="ui-datepicker"><div class="ui-datepicker-header">
      <a class="ui-datepicker-prev" title="Prev"><span>Prev</span></a>
      <a class="ui-datepicker-next" title="Next"><span>Next</span></a>
      <div class="ui-datepicker-title"><span>November</span>&nbsp;<span>2016</span></div></div>
    <table class="ui-datepicker-calendar"><thead><tr><th><span title="Sunday">Su</span></th><th>Mo</th><th>Tu</th>
      <th>We</th><th>Th</th><th>Fr</th><th>Sa</th></tr></thead>
      <tbody><tr><td></td><td></td><td><a href="#">1</a></td><td><a href="#">2</a></td><td><a href="#">3</a></td>
        <td><a href="#">4</a></td><td><a href="#">5</a></td></tr></tbody></table></div>
  <table><tr><th>Page</th></tr><tr><td><a href="#">2</a></td></tr></table>
  <p>Orders of March 2024</p>
  <table><tr><th>Id</th><th>Mo</th><th>Tu</th><th>We</th><th>Th</th><th>Fr</th><th>Sa</th></tr>
    <tr><td><a href="#">7</a></td></tr></table>
  <script>
    for (const a of document.querySelectorAll('.ui-datepicker-header a')) a.addEventListener('click', () => {});
  </script>
</body></html>"""
"""jQuery UI's date picker (MiniWoB++'s choose-date), a table of page numbers and a table that is not a week."""

FADING = """<html><body style="margin:0; font: 16px sans-serif">
  <button id="close" style="position: absolute; top: 0">Close picker</button>
  <button style="position: absolute; top: 60px">Submit</button>
  <div id="picker" style="position: absolute; top: 40px; width: 200px; height: 80px; background: white;
       transition: opacity 0.5s"><a href="#">12</a></div>
  <script>
    document.getElementById('close').addEventListener('click', () => { picker.style.opacity = 0; });
    picker.addEventListener('transitionend', () => { picker.style.display = 'none'; });
  </script>
</body></html>"""
"""A picker that fades out over Submit before it is gone (jQuery UI's date picker after a day is chosen)."""

SUGGEST = """<html><body style="margin:0; font: 16px sans-serif">
  <p><label for="from">From:</label><input id="from"></p>
  <p><label for="to">To:</label><input id="to"></p>
  <button>Search</button>
  <ul id="list" style="display: none; position: absolute; top: 20px; left: 0; width: 300px; height: 80px;
      margin: 0; background: white"><li>GLV (Golovin)</li></ul>
  <script>
    from.addEventListener('input', () => list.style.display = 'block');
    from.addEventListener('keydown', e => { if (e.key === 'Escape') list.style.display = 'none'; });
    list.addEventListener('click', () => { from.value = 'GLV (Golovin)'; list.style.display = 'none'; from.focus(); });
  </script>
</body></html>"""
"""An autocomplete whose suggestions, once open, cover the next field (MiniWoB++'s book-flight)."""

DIALOG = """<html><body style="margin:0">
  <div id="dialog" role="dialog" style="padding: 40px; width: 300px"><input id="name"></div>
  <script>document.addEventListener('keydown', e => { if (e.key === 'Escape') dialog.hidden = true; });</script>
</body></html>"""
"""A dialog that Escape closes, with a field in it."""


def _in_page(html: str, scenario: Callable[[Browser, Page], Awaitable[None]], listeners: bool = True) -> None:
    async def main(browser: Browser) -> None:
        context = await browser.new_context()
        if listeners:
            await watch_listeners(context)
        page = await context.new_page()
        await page.set_content(html)
        await scenario(browser, page)
        await context.close()

    run_in_browser(main)


def _centres(elements: list[Element]) -> dict[int, tuple[float, float]]:
    return {e.mark: (e.x + e.width / 2, e.y + e.height / 2) for e in elements}


async def _take(page: Page, elements: list[Element], candidate: Candidate, typed: list[str] | None = None) -> None:
    """Runs a candidate's tool calls on the page it was offered on; each must succeed."""
    browsing = Browsing(page.context, page, marks=_centres(elements))
    for action in candidate.actions(typed or []):
        assert (await execute(browsing, action, 10)).ok


def _by_text(elements: list[Element]) -> dict[str, Element]:
    return {e.text: e for e in elements}


def test_script_listeners_and_the_outermost_pointer_element_are_candidates_without_a_flood():
    async def scenario(browser: Browser, page: Page) -> None:
        elements = (await page_state(page))[0]
        found = _by_text(elements)
        assert {"ipsum", "sit", "*", "Ann Lee Meeting notes *", "Card with nested styled text"} <= set(found)
        assert found["ipsum"].tag == "span" and found["ipsum"].control is None
        assert not [e for e in elements if e.tag in ("b", "i", "label", "p", "body")]  # no nested spans, no label
        assert [e.tag for e in elements if e.text == "Widget radio"] == ["input"]
        assert found["Keep me signed in"].control == "checkbox" and found["Keep me signed in"].checked is True
        assert (found["Inbox"].control, found["Inbox"].selected, found["Sent"].selected) == ("tab", True, False)
        assert (found["Menu"].control, found["Menu"].expanded) == ("button", False)
        message = next(e for e in elements if e.tag == "div" and e.control == "textbox")
        texts = [c.text for c in page_candidates(elements, "")]
        assert 'click option "Inbox" [tab, selected]' in texts and 'click button "Menu" [collapsed]' in texts
        assert any(c.kind == "fill" and c.fields == (message,) for c in page_candidates(elements, ""))

    _in_page(SCRIPTED, scenario)


def test_without_the_listener_hook_a_script_only_span_is_not_seen():
    async def scenario(browser: Browser, page: Page) -> None:
        assert "ipsum" not in _by_text((await page_state(page))[0])

    _in_page(SCRIPTED, scenario, listeners=False)


def test_inputs_are_named_by_the_text_beside_or_above_them_and_grouped_with_their_button():
    async def scenario(browser: Browser, page: Page) -> None:
        elements = (await page_state(page))[0]
        fields = {e.label: e for e in elements if e.tag == "input"}
        assert set(fields) == {"Username", "Password", "Card number", "Street", "Recipient"}
        assert next(e for e in elements if e.tag == "select").label is None  # an instruction is not its name
        login = next(e for e in elements if e.text == "Login")
        assert fields["Username"].form == fields["Password"].form == login.form is not None
        assert login.control == "submit"
        fill = next(c for c in page_candidates(elements, "") if c.kind == "fill" and c.mark == login.mark)
        assert [f.label for f in fill.fields] == ["Username", "Password"]
        await _take(page, elements, fill, ["ana", "pw1"])
        assert await page.evaluate("() => [username.value, password.value]") == ["ana", "pw1"]

    _in_page(LABELS, scenario)


def test_select_option_chooses_in_a_select_and_a_listbox_and_the_scorer_offers_each_option():
    async def scenario(browser: Browser, page: Page) -> None:
        elements = (await page_state(page))[0]
        colour = next(e for e in elements if e.tag == "select")
        assert (colour.control, colour.label, colour.text) == ("select", "Colour", "Red")
        assert colour.options == ["Red", "Green", "Blue"]  # not the disabled one
        size = next(e for e in elements if e.control == "listbox")
        assert (size.text, size.options) == ("Small Large", ["Small", "Large"])
        offered = [c.option for c in page_candidates(elements, "") if c.mark == colour.mark]
        assert offered == ["Red", "Green", "Blue"]
        browsing = Browsing(page.context, page, marks=_centres(elements))
        done = await execute(browsing, Action(name="select_option", mark=colour.mark, text="Green"), 10)
        assert done.ok and 'chose "Green" in <select> "Colour"' in done.feedback
        assert await page.evaluate("() => document.querySelector('#out').textContent") == "changed to Green"
        refused = await execute(browsing, Action(name="select_option", mark=colour.mark, text="Mauve"), 10)
        assert not refused.ok and '"Red", "Green", "Grey", "Blue"' in refused.feedback
        grey = await execute(browsing, Action(name="select_option", mark=colour.mark, text="Grey"), 10)
        assert "disabled" in grey.feedback
        assert (await execute(browsing, Action(name="select_option", mark=size.mark, text="large"), 10)).ok
        selected = await page.evaluate("() => [...document.querySelectorAll('[role=option]')]"
                                       ".map(o => o.getAttribute('aria-selected'))")
        assert selected == ["false", "true"]

    _in_page(SELECT, scenario)


def test_back_on_the_first_page_of_a_tab_is_refused_and_works_after_a_navigation():
    async def scenario(browser: Browser) -> None:
        context = await browser.new_context()
        page = await context.new_page()
        await page.goto("data:text/html,<p>one</p>")
        browsing = Browsing(context, page)
        refused = await execute(browsing, Action(name="back"), 10)
        assert not refused.ok and "no earlier page" in refused.feedback and page.url.startswith("data:")
        await page.goto("data:text/html,<p>two</p>")
        done = await execute(browsing, Action(name="back"), 10)
        assert done.ok and "one" in await page.content()
        await context.close()

    run_in_browser(scenario)


def test_drawn_numbers_colour_swatches_and_a_read_only_date_field_are_named_and_clicked():
    async def scenario(browser: Browser, page: Page) -> None:
        elements = (await page_state(page))[0]
        texts = [e.text for e in elements]
        assert texts[:2] == ["7", "Q"]  # SVG text: no innerText, named by its text content
        assert texts[2:5] == ["red", "green", "pink color"]  # a shade's hue family; a CSS name with the class
        date = next(e for e in elements if e.tag == "input")
        assert (date.control, date.label, date.text) == ("readonly", "Date:", "Date:")
        candidates = page_candidates(elements, "")
        assert not [c for c in candidates if c.kind == "fill"]  # nothing to type into: a picker is clicked
        click = next(c for c in candidates if c.mark == date.mark)
        assert click.text == 'click button "Date:" [readonly]'
        await _take(page, elements, click)
        picked = next(e for e in (await page_state(page))[0] if e.tag == "input")
        assert picked.text == "Date: 12/01/2016"

    _in_page(DRAWN, scenario)


def test_a_calendars_days_are_named_by_their_date_and_other_numbered_tables_are_not():
    """A day's link says only "3"; the task says "11/03/2016". Named by the picker's month and year, the day is the
    one element whose text is that date."""
    async def scenario(browser: Browser, page: Page) -> None:
        texts = [e.text for e in (await page_state(page))[0]]
        assert texts == ["Prev", "Next", "November 1, 2016", "November 2, 2016", "November 3, 2016",
                         "November 4, 2016", "November 5, 2016", "2", "7"]

    _in_page(CALENDAR, scenario)


def test_an_action_returns_once_the_animation_it_started_has_finished():
    """Observed mid-fade, the picker still covers Submit and offers its day; the action waits for the fade."""
    async def scenario(browser: Browser, page: Page) -> None:
        elements = (await page_state(page))[0]
        assert [e.text for e in elements] == ["Close picker", "12"]
        close = next(c for c in page_candidates(elements, "") if c.target == "Close picker")
        await _take(page, elements, close)
        assert [e.text for e in (await page_state(page))[0]] == ["Close picker", "Submit"]

    _in_page(FADING, scenario)


def test_a_focusable_menu_offers_its_items_and_drawn_shapes_are_named_by_colour_and_kind():
    async def scenario(browser: Browser, page: Page) -> None:
        elements = (await page_state(page))[0]
        texts = [e.text for e in elements]
        assert "Save" in texts and "Playback" in texts and "Play" not in texts  # a hidden submenu is not seen
        assert not [e for e in elements if e.tag == "ul"]  # the menu's box adds no mark of its own
        assert "Notes more" in texts and "more" in texts  # a focusable box does not hide the link in it
        drawn = [e.text for e in elements if e.tag in ("rect", "circle", "polygon", "text")]
        assert drawn == ["yellow rectangle", "green circle", "blue triangle", "magenta T"]
        assert next(e for e in elements if e.tag == "svg").text == ""  # a drawing board is not named by a fill

    _in_page(MENU, scenario)


def test_a_menu_item_whose_submenu_is_hidden_is_hovered_open_and_a_multiple_select_keeps_every_choice():
    """A click on Playback would choose it; its candidate hovers it, and the hover returns once the submenu shows.
    A multiple select is a listbox whose options add to its choices."""
    async def scenario(browser: Browser, page: Page) -> None:
        elements = (await page_state(page))[0]
        items = _by_text(elements)
        assert (items["Save"].expanded, items["Playback"].expanded) == (None, False) and "Stop" not in items
        candidates = page_candidates(elements, "")
        playback = next(c for c in candidates if c.target == "Playback")
        assert playback.text == 'hover option "Playback" [menuitem, collapsed]'
        await _take(page, elements, playback)
        items = _by_text((await page_state(page))[0])
        assert items["Playback"].expanded is True and "Stop" in items and await page.title() == ""
        names = next(e for e in elements if e.tag == "select")
        assert names.control == "listbox" and names.options == ["Ann", "Bob", "Cy"]
        for option in ("Ann", "Cy"):
            await _take(page, elements, next(c for c in candidates if c.option == option and c.several))
        assert await page.evaluate("() => Array.from(document.querySelector('select').selectedOptions, "
                                   "o => o.text)") == ["Ann", "Cy"]

    _in_page(SUBMENU, scenario)


def test_a_swatch_a_script_marks_selected_keeps_its_colour_name_and_reads_as_selected():
    async def scenario(browser: Browser, page: Page) -> None:
        elements = (await page_state(page))[0]
        assert [(e.text, e.selected) for e in elements] == [("green", None), ("blue", None)]
        await _take(page, elements, next(c for c in page_candidates(elements, "") if c.target == "green"))
        assert [(e.text, e.selected) for e in (await page_state(page))[0]] == [("green", True), ("blue", None)]

    _in_page(SWATCHES, scenario)


def test_typing_into_a_field_an_open_suggestion_list_covers_closes_the_list_first():
    async def scenario(browser: Browser, page: Page) -> None:
        elements = (await page_state(page))[0]
        fill = next(c for c in page_candidates(elements, "") if c.kind == "fill")
        assert [f.label for f in fill.fields] == ["From:", "To:"]
        await _take(page, elements, fill, ["GLV", "TCL"])
        assert await page.evaluate("() => [from.value, to.value]") == ["GLV", "TCL"]

    _in_page(SUGGEST, scenario)


def test_typing_at_bare_coordinates_beside_a_field_presses_no_escape_that_would_close_its_dialog():
    async def scenario(browser: Browser, page: Page) -> None:
        missed = await execute(Browsing(page.context, page), Action(name="type", text="Ann", x=10, y=10), 10)
        assert not missed.ok and "no text field is focused" in missed.feedback
        assert await page.evaluate("() => dialog.hidden") is False

    _in_page(DIALOG, scenario)
