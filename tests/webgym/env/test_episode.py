"""The browser environment in real Chromium: tools with feedback, observations, and the URL guard."""

from __future__ import annotations

import asyncio
import io

from PIL import Image

from schemas.steps import Action
from tests.fixture_site import run_in_browser, url_of
from webgym.config import EnvConfig
from webgym.env import actions
from webgym.env.episode import Episode, NavigationFailed
from webgym.env.safety import UrlPolicy
from webgym.sites.render import TEMPLATES


def _policy(*servers) -> UrlPolicy:
    return UrlPolicy(allowed_hosts=frozenset(f"127.0.0.1:{s.server_address[1]}" for s in servers), allow_public=False)


def test_tools_report_what_they_did(site):
    async def scenario(browser):
        async with Episode(browser, EnvConfig(), _policy(site)) as episode:
            await episode.open(url_of(site))
            done = await episode.act([
                Action(name="click", x=40, y=35),
                Action(name="back"),
                Action(name="type", text="mug", x=60, y=95),
                Action(name="type", text="Ann", x=60, y=145),
                Action(name="click", x=900, y=600),
                Action(name="scroll", direction="up"),
                Action(name="scroll", direction="down"),
                Action(name="press_keys", keys=["Tab"]),
                Action(name="click", x=40, y=245),
                Action(name="switch_tab", tab=0),
                Action(name="answer", text="done"),
                Action(name="click", x=40, y=195),
            ])
            feedback = [a.feedback for a in done]
            assert all(a.ok for a in done), feedback
            assert len(done) == 11  # nothing runs after the answer
            assert "on <a> \"Next page\"" in feedback[0] and "Page navigated to" in feedback[0]
            assert feedback[1].startswith("Succeed: 'back' returned to")
            assert 'actual value is "MUG"' in feedback[2]
            assert "differs" not in feedback[3] and 'into <input> "Name"' in feedback[3]
            assert "no visible navigation" in feedback[4]
            assert "did not change and may be at a boundary" in feedback[5]
            assert "boundary" not in feedback[6]
            assert "A new tab opened" in feedback[8]
            assert episode.answer == "done"

    run_in_browser(scenario)


HOOKED = f"""<html><head><title>Hooked</title></head><body style="margin:0">
  <a href="/slow" style="position:absolute;left:20px;top:20px;width:120px;height:30px">Slow page</a>
  <a href="/next" onclick="event.preventDefault()"
     style="position:absolute;left:20px;top:80px;width:120px;height:30px">Stays</a>
  <div id="wg-toast"></div><script>{(TEMPLATES / "site.js").read_text()}</script></body></html>"""
"""A page with the synthetic sites' own script, so it has their readiness hook (window.__wg.idle)."""


def test_a_page_with_the_readiness_hook_is_followed_through_slow_links_and_not_waited_on_otherwise(site, monkeypatch):
    site.pages["/hooked"] = HOOKED
    monkeypatch.setattr(actions, "NAVIGATION_GRACE_S", 60.0)  # waiting on a guess would now show as a stall

    async def scenario(browser):
        async with Episode(browser, EnvConfig(), _policy(site)) as episode:
            await episode.open(url_of(site, "/hooked"))
            # a link whose page takes a second to commit: the hook reports it navigating from the click on
            assert not await episode.browsing.page.evaluate(
                "() => { document.querySelector('a[href=\"/slow\"]').click(); return window.__wg.idle(); }")
            await episode.open(url_of(site, "/hooked"))
            [slow] = await episode.act([Action(name="click", x=40, y=35)])
            assert "Page navigated to" in slow.feedback and (await episode.observe()).title == "Slow"
            await episode.open(url_of(site, "/hooked"))
            # a link whose click handler keeps the page: once it settles, no navigation is waited for
            [stays] = await asyncio.wait_for(episode.act([Action(name="click", x=40, y=95)]), timeout=20)
            assert "no visible navigation" in stays.feedback and episode.browsing.page.url == url_of(site, "/hooked")

    run_in_browser(scenario)


def test_bad_calls_fail_with_feedback_not_exceptions(site):
    async def scenario(browser):
        async with Episode(browser, EnvConfig(), _policy(site)) as episode:
            await episode.open(url_of(site))
            done = await episode.act([
                Action(name="type", text="x"),  # nothing focused
                Action(name="switch_tab", tab=5),
                Action(name="close_tab"),
                Action(name="click", mark=3),  # coordinate mode: no marks
            ])
            assert [a.ok for a in done] == [False] * 4
            assert "no text field is focused" in done[0].feedback
            assert "tab must be between 0 and 0" in done[1].feedback
            assert "last tab cannot be closed" in done[2].feedback
            assert "no element numbered 3" in done[3].feedback

    run_in_browser(scenario)


def test_set_of_marks_numbers_elements_and_clicks_by_mark(site):
    async def scenario(browser):
        async with Episode(browser, EnvConfig(observation="set_of_marks"), _policy(site)) as episode:
            await episode.open(url_of(site))
            observation = await episode.observe()
            texts = {e.text: e.mark for e in observation.elements}
            assert {"Next page", "Buy", "New tab"} <= set(texts)
            assert Image.open(io.BytesIO(observation.screenshot)).size == (1280, 720)
            (clicked,) = await episode.act([Action(name="click", mark=texts["Buy"])])
            assert clicked.ok and await episode.browsing.page.title() == "bought"

    run_in_browser(scenario)


def test_normalized_coordinates_scale_to_the_viewport(site):
    async def scenario(browser):
        config = EnvConfig(normalized_coordinates=True)
        async with Episode(browser, config, _policy(site)) as episode:
            await episode.open(url_of(site))
            (clicked,) = await episode.act([Action(name="click", x=62.5, y=270.8)])  # (80, 195) in pixels
            assert "<button>" in clicked.feedback and await episode.browsing.page.title() == "bought"

    run_in_browser(scenario)


def test_guard_refuses_files_metadata_loopback_and_redirects(site, secret):
    secret_url = url_of(secret, "/secret")
    site.redirects["/to-secret"] = secret_url
    site.redirects["/to-metadata"] = "http://169.254.169.254/latest/meta-data"
    site.pages["/leaky"] = (f"<html><body><img src='{secret_url}'><script>fetch('{secret_url}')"
                            ".then(r => r.text()).then(t => document.title = t).catch(e => document.title = 'blocked')"
                            "</script></body></html>")

    async def scenario(browser):
        async with Episode(browser, EnvConfig(), _policy(site)) as episode:
            await episode.open(url_of(site))
            done = await episode.act([
                Action(name="goto", url="file:///etc/passwd"),
                Action(name="goto", url="http://169.254.169.254/latest/meta-data"),
                Action(name="goto", url=secret_url),
                Action(name="goto", url=url_of(site, "/to-secret")),
                Action(name="goto", url=url_of(site, "/to-metadata")),
                Action(name="new_tab", url="chrome://settings"),
                Action(name="goto", url=url_of(site, "/leaky")),
            ])
            await episode.browsing.page.wait_for_function("document.title !== ''")
            assert [a.ok for a in done[:3]] == [False, False, False]
            assert "file: scheme" in done[0].feedback and "link-local" in done[1].feedback
            assert not done[5].ok and "chrome: scheme" in done[5].feedback
            assert await episode.browsing.page.title() == "blocked"
            refused = "\n".join(episode.violations.refused)
            assert "redirect from" in refused and "169.254.169.254" in refused and secret_url in refused
            with __import__("pytest").raises(NavigationFailed, match="refused"):
                await episode.open("file:///etc/passwd")

    run_in_browser(scenario)
    assert secret.requests == []


def test_policy_rules():
    policy = UrlPolicy(site_hosts=frozenset({"shop-a.test"}), allow_public=False)
    assert policy.refusal("http://shop-a.test/cart") is None
    assert policy.refusal("about:blank") is None
    assert "not one of the configured sites" in policy.refusal("https://example.com/")
    assert "data: scheme" in policy.refusal("data:text/html,<b>x</b>")
    assert "private" in policy.refusal("http://10.0.0.8/")
    assert "private" in policy.refusal("http://[::1]:8080/")
    assert "local host name" in UrlPolicy().refusal("http://printer.local/")
    assert UrlPolicy().refusal("https://example.com/") is None
    self_hosted = UrlPolicy(allowed_hosts=frozenset({"10.0.0.8:7770"}), allow_public=False)
    assert self_hosted.refusal("http://10.0.0.8:7770/admin") is None and not self_hosted.is_site("http://10.0.0.8:7770/")
    assert "private" in self_hosted.refusal("http://10.0.0.8:22/")
    assert policy.is_site("http://shop-a.test:8123/x")
