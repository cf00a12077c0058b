"""MiniWoB++ as a world: the task list, seeded utterances, and the task's own reward judged."""

from __future__ import annotations

import asyncio
import datetime as dt
import http.client
import json

import pytest

from webgym.sites import miniwob
from webgym.sites.server import SiteServer

pytest.importorskip("playwright")


def test_task_names_are_the_package_pages_minus_the_named_exclusions():
    names = miniwob.task_names()
    pages = {p.stem for p in (miniwob.html_root() / "miniwob").glob("*.html")}
    assert set(miniwob.EXCLUDED) <= pages, "every exclusion names a real task"
    assert set(names) == pages - set(miniwob.EXCLUDED)
    assert {"click-button", "click-test", "enter-text"} <= set(names)
    assert "drag-box" not in names and all(miniwob.EXCLUDED.values())


def test_task_names_of_an_empty_folder_are_none(tmp_path):
    (tmp_path / "miniwob").mkdir()
    assert miniwob.task_names(tmp_path) == []


@pytest.mark.parametrize(("state", "success", "credit"), [
    ({"raw_reward": 1, "reward": 0.8, "task_ended": True}, True, 1.0),
    ({"raw_reward": 0.4, "reward": 0.3, "task_ended": True}, True, 0.4),
    ({"raw_reward": -1, "reward": -1, "task_ended": True}, False, -1.0),
    ({"raw_reward": 0, "reward": 0, "task_ended": False}, False, 0.0),
])
def test_judge_counts_a_positive_raw_reward_as_success_and_keeps_the_credit(state, success, credit):
    outcome = miniwob.judge(state)
    assert (outcome.success, outcome.credit, outcome.done) == (success, credit, state["task_ended"])


@pytest.fixture
def pages():
    """The site server with no synthetic site, serving the package's html folder as miniwob.local."""
    with SiteServer([], static={miniwob.HOST: miniwob.html_root()}) as server:
        yield server


def _get(server: SiteServer, path: str, host: str = miniwob.HOST) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection(server.host, server.port, timeout=5)
    connection.request("GET", path, headers={"Host": host})
    response = connection.getresponse()
    return response.status, response.read()


def test_the_site_server_serves_the_pages_under_their_host_and_nothing_outside_the_folder(pages):
    status, body = _get(pages, "/miniwob/click-button.html")
    assert status == 200 and b"../core/core.js" in body
    assert _get(pages, "/core/core.js")[0] == 200
    assert miniwob.HOST in pages.host_map()
    for escape in ("/../../../../etc/passwd", "/%2e%2e/%2e%2e/miniwob/__init__.py", "/miniwob/nope.html", "/"):
        assert _get(pages, escape)[0] == 404, escape
    assert _get(pages, "/miniwob/click-button.html", host="other.test")[0] == 404


async def _episodes(server, runs):
    from playwright.async_api import async_playwright

    from webgym.browser import launch_browser

    results = []
    async with async_playwright() as playwright:
        browser = await launch_browser(playwright, server.host_map())
        for task, seed, act in runs:
            page = await browser.new_page()
            await page.goto(miniwob.page_url(task))
            utterance = await page.evaluate(miniwob.START_JS, seed)
            await act(page, utterance)
            await page.wait_for_timeout(100)
            results.append((utterance, miniwob.judge(await page.evaluate(miniwob.REWARD_JS))))
            await page.close()
        await browser.close()
    return results


def _target(utterance: str) -> str:
    return utterance.split('"')[1]


async def _right(page, utterance):
    await page.click(f'#area button:text-is("{_target(utterance)}")')


async def _wrong(page, utterance):
    await page.click(f'#area button:not(:text-is("{_target(utterance)}"))')


@pytest.mark.slow
def test_a_seeded_episode_rewards_the_right_click_and_not_a_wrong_one(pages):
    runs = [("click-button", 3, _right), ("click-button", 3, _wrong), ("click-button", 4, _right),
            ("click-test", 0, lambda page, _: page.click("#subbtn"))]
    (u1, right), (u2, wrong), (u3, other), (u4, test) = asyncio.run(_episodes(pages, runs))
    assert u1 == u2 and u1.startswith('Click on the "'), "the same seed gives the same utterance"
    assert u3 != u1
    assert right.success and right.done and right.credit == 1.0
    assert not wrong.success and wrong.done and wrong.credit == -1.0
    assert other.success and test.success and u4


async def _utterances(server, pairs):
    from playwright.async_api import async_playwright

    from webgym.browser import launch_browser

    async with async_playwright() as playwright:
        browser = await launch_browser(playwright, server.host_map())
        try:
            return await miniwob.read_utterances(browser, pairs)
        finally:
            await browser.close()


@pytest.mark.slow
def test_task_rows_carry_the_utterance_the_seeded_episode_shows(pages):
    pairs = [("click-button", 3), ("enter-text", 1), ("email-inbox-forward-nl", 1000)]
    utterances = asyncio.run(_utterances(pages, pairs))
    forward = utterances[("email-inbox-forward-nl", 1000)]  # the page gives {utterance, fields}: its text is the first
    assert forward == "Please find the mail by Sherline. Forward it to Henryetta."
    (episode, _), = asyncio.run(_episodes(pages, [("click-button", 3, _right)]))
    assert utterances[("click-button", 3)] == episode
    row = miniwob.task_row("enter-text", 1, utterances[("enter-text", 1)], dt.datetime(2026, 1, 1, tzinfo=dt.UTC))
    assert (row["source"], row["source_id"], row["start_url"]) == (
        "miniwob", "enter-text/1", "http://miniwob.local/miniwob/enter-text.html")
    assert row["text"] == utterances[("enter-text", 1)] and "Enter" in row["text"]
    assert json.loads(row["evaluation"]) == {"kind": "miniwob", "task": "enter-text", "seed": 1}


async def _read_final_state(server, task, seed, act, spec):
    from types import SimpleNamespace

    from playwright.async_api import async_playwright

    from webgym.browser import launch_browser
    from webgym.rollout.site_state import MiniwobStateReader

    async with async_playwright() as playwright:
        browser = await launch_browser(playwright, server.host_map())
        page = await browser.new_page()
        await page.goto(miniwob.page_url(task))
        await act(page, await page.evaluate(miniwob.START_JS, seed))
        await page.wait_for_timeout(100)
        state = await MiniwobStateReader()(SimpleNamespace(browsing=SimpleNamespace(page=page)), spec)
        await browser.close()
    return state


@pytest.mark.slow
def test_the_state_reader_records_the_page_reward_for_miniwob_tasks_only(pages):
    from webgym.policies.base import TaskSpec

    spec = TaskSpec(task_id="miniwob/click-button/3", text="", start_url=miniwob.page_url("click-button"),
                    website=miniwob.HOST, source_id="click-button/3")
    state = asyncio.run(_read_final_state(pages, "click-button", 3, _right, spec))
    assert state["task_ended"] and state["raw_reward"] == 1 and miniwob.judge(state).success
    other = TaskSpec(task_id="t", text="", start_url="http://shop-a.test/", website="shop-a.test")
    assert asyncio.run(_read_final_state(pages, "click-button", 3, _right, other)) is None


async def _reward_off_the_task(server):
    from playwright.async_api import async_playwright

    from webgym.browser import launch_browser

    async with async_playwright() as playwright:
        browser = await launch_browser(playwright, server.host_map())
        page = await browser.new_page()
        await page.goto(f"http://{miniwob.HOST}/core/core.css")
        state = await page.evaluate(miniwob.REWARD_JS)
        await browser.close()
    return state


@pytest.mark.slow
def test_a_page_that_is_not_the_task_has_no_reward_and_raises_nothing(pages):
    state = asyncio.run(_reward_off_the_task(pages))
    assert state == {"raw_reward": 0, "reward": 0, "task_ended": False, "off_task": True}
    assert not miniwob.judge(state).success


async def _free_choices(page, utterance: str, steps: int) -> list:
    """`steps` steps as greedy decoding's named-target rule allows: each observes the page, keeps the candidates the
    rule leaves free (there must be one) and takes it with the agent's own tools; the free candidates per step."""
    import numpy as np

    from webgym.env.actions import Browsing, execute
    from webgym.env.observe import page_state
    from webgym.policies.scorer.candidates import page_candidates
    from webgym.policies.scorer.named_target import held_back

    free = []
    for _ in range(steps):
        elements, text, _ = await page_state(page)
        candidates = page_candidates(elements, text)
        held = held_back(utterance, [c.text for step in free for c in step], candidates,
                         np.zeros(len(candidates), dtype=bool))
        free.append([c for c, h in zip(candidates, held, strict=True) if h == 0])
        (chosen,) = free[-1]
        browsing = Browsing(page.context, page, marks={e.mark: (e.x + e.width / 2, e.y + e.height / 2)
                                                       for e in elements})
        for action in chosen.actions():
            assert (await execute(browsing, action, 10)).ok
    return free


def _episode(pages, task: str, seed: int, play):
    """One seeded episode of a MiniWoB++ task played by `play(page, utterance)`: the utterance, what play returned
    and the page's own verdict."""
    from playwright.async_api import async_playwright

    from webgym.browser import launch_browser

    async def run():
        async with async_playwright() as playwright:
            browser = await launch_browser(playwright, pages.host_map())
            page = await browser.new_page()
            await page.goto(miniwob.page_url(task))
            utterance = await page.evaluate(miniwob.START_JS, seed)
            played = await play(page, utterance)
            await page.wait_for_timeout(100)
            result = utterance, played, miniwob.judge(await page.evaluate(miniwob.REWARD_JS))
            await browser.close()
            return result

    return asyncio.run(run())


async def _pick_the_named_day(page, utterance: str) -> list:
    """choose-date-easy: before the picker is open only its field is free, once open only the day the utterance
    names (jQuery UI's markup, named by observe.py); then Submit."""
    free = await _free_choices(page, utterance, 2)
    await page.click("#subbtn")
    return free


@pytest.mark.slow
def test_the_day_a_date_task_names_is_the_only_choice_on_jquery_uis_picker(pages):
    utterance, free, verdict = _episode(pages, "choose-date-easy", 3, _pick_the_named_day)
    month, day, year = utterance.split()[1].split("/")
    assert [c.text for c in free[0]] == ['click button "Date:" [readonly]']
    assert [c.text for c in free[1]] == [f'click link "December {int(day)}, {year}"'] and month == "12"
    assert verdict.success


async def _follow_the_menu_path(page, utterance: str) -> list:
    """click-menu: the path's items with hidden submenus are hovered open, then its last item is clicked."""
    return await _free_choices(page, utterance, len(utterance.split(">")))


@pytest.mark.slow
def test_a_menu_path_is_followed_by_hovering_jquery_uis_submenus_open_and_clicking_its_last_item(pages):
    utterance, free, verdict = _episode(pages, "click-menu", 1, _follow_the_menu_path)  # seed 1: three items
    *parents, leaf = utterance.removeprefix("Select ").split(">")
    assert parents, utterance
    assert [[c.text for c in step] for step in free] == [
        *([f'hover option "{name}" [menuitem, collapsed]'] for name in parents), [f'click option "{leaf}" [menuitem]']]
    assert verdict.success
