"""MiniWoB++ as a world: the task list, seeded utterances, and the task's own reward judged."""

from __future__ import annotations

import asyncio
import functools
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

import pytest

from webgym.sites import miniwob

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
    ({"raw_reward": 1, "reward": 0.8, "done": True}, True, 1.0),
    ({"raw_reward": 0.4, "reward": 0.3, "done": True}, True, 0.4),
    ({"raw_reward": -1, "reward": -1, "done": True}, False, -1.0),
    ({"raw_reward": 0, "reward": 0, "done": False}, False, 0.0),
])
def test_judge_counts_a_positive_raw_reward_as_success_and_keeps_the_credit(state, success, credit):
    outcome = miniwob.judge(state)
    assert (outcome.success, outcome.credit, outcome.done) == (success, credit, state["done"])


@pytest.fixture
def pages():
    """The package's html folder on a local port, reached in the browser as miniwob.local."""
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(miniwob.html_root()))
    handler.log_message = lambda *a: None
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield {"miniwob.local": f"127.0.0.1:{server.server_address[1]}"}
    server.shutdown()


async def _episodes(hosts, runs):
    from playwright.async_api import async_playwright

    from webgym.browser import launch_browser

    results = []
    async with async_playwright() as playwright:
        browser = await launch_browser(playwright, hosts)
        for task, seed, act in runs:
            page = await browser.new_page()
            await page.goto(f"http://miniwob.local/miniwob/{task}.html")
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
