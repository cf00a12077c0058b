"""Replay check: every oracle path clicked through in Chromium, and confirmed by the verifier.

For each goal, a fresh browser context opens the site, and each FSM step of the oracle path is
turned into browser actions on the rendered page (to_browser_actions: the element found by its
data attributes, clicked at the centre of its bounding box, text typed, Enter pressed). After each
step the session's state hash (read by the harness's StateClient) must equal the spec's; at the end the
exact verifier must confirm the goal from the recorded state and the oracle's answer. The first
mismatch between spec and rendered site is reported with the failing step and a screenshot.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import async_playwright

from webgym.browser import VIEWPORT, launch_browser
from webgym.env.actions import Browsing, execute
from webgym.progress import Ticker
from webgym.sites.harness import StateClient
from webgym.sites.machine import ANSWER, Step, snapshot_hash
from webgym.sites.oracle import NoElement, to_browser_actions
from webgym.sites.server import SiteServer
from webgym.sites.site import Site
from webgym.sites.tasks import start_url
from webgym.sites.verify import verify

log = logging.getLogger(__name__)

IDLE_JS = "() => !!(window.__wg && window.__wg.idle())"
ACTION_TIMEOUT_S = 15.0
MAX_SCROLLS = 4


@dataclass
class ReplayResult:
    site: str
    goal: str
    ok: bool
    steps: int
    seconds: float
    failed_step: int | None = None
    message: str | None = None
    screenshot: str | None = None


async def settle(page: Any, timeout_s: float = 10.0) -> None:
    """Wait until the page's script has sent every action and the page it led to has loaded."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if await page.evaluate(IDLE_JS):
                return
        except PlaywrightError:
            pass
        await asyncio.sleep(0.02)
    raise TimeoutError(f"page {page.url} did not settle within {timeout_s:.0f} s")


async def run_step(browsing: Browsing, step: Step) -> str | None:
    """Perform one step with the agent's tools (scrolling as often as needed); the failure, if any."""
    for _ in range(MAX_SCROLLS + 1):
        actions = await to_browser_actions(browsing.page, step)
        for action in actions:
            done = await execute(browsing, action, ACTION_TIMEOUT_S)
            if not done.ok:
                return f"{action.name} failed: {done.feedback}"
        if actions[-1].name != "scroll":
            return None
    return f"still out of view after {MAX_SCROLLS} scrolls"


def _difference(expected: dict[str, Any], seen: dict[str, Any]) -> str:
    parts = [f"page {seen.get('page')!r} (spec: {expected['page']!r})"] if seen.get("page") != expected["page"] else []
    for name, value in expected["state"].items():
        if seen.get("state", {}).get(name) != value:
            parts.append(f"{name} = {seen.get('state', {}).get(name)!r} (spec: {value!r})")
    return "; ".join(parts) or "states differ"


async def replay_goal(browser: Any, site: Site, goal_id: str, states: StateClient,
                      shots: Path | None = None) -> ReplayResult:
    """Replay one goal's oracle path in a fresh context; the first mismatch ends it."""
    plan = site.oracle_path(goal_id)
    machine = site.machine
    started = time.monotonic()
    context = await browser.new_context(viewport=VIEWPORT)
    page = await context.new_page()
    browsing = Browsing(context, page, (VIEWPORT["width"], VIEWPORT["height"]))
    step_no = 0

    async def fail(message: str) -> ReplayResult:
        path = None
        if shots is not None:
            shots.mkdir(parents=True, exist_ok=True)
            path = str(shots / f"{site.name}--{goal_id}--step{step_no}.png")
            try:
                await page.screenshot(path=path)
            except PlaywrightError:
                path = None
        return ReplayResult(site.name, goal_id, False, plan.length, time.monotonic() - started, step_no, message, path)

    try:
        await page.goto(start_url(site))
        await settle(page)
        answer = None
        for step_no, step in enumerate(plan.steps, start=1):
            try:
                problem = await run_step(browsing, step)
            except NoElement as error:
                problem = str(error)
            if problem:
                return await fail(f"step {step_no} {step}: {problem}")
            if step.action == ANSWER:
                answer = browsing.answer
                continue
            await settle(page)
            seen = await states.snapshot(context, site.spec.hostname)
            expected = machine.snapshot(plan.states[step_no])
            if seen.get("hash") != snapshot_hash(expected):
                return await fail(f"step {step_no} {step}: state differs from the spec: {_difference(expected, seen)}")
        final = await states.snapshot(context, site.spec.hostname)
        verdict = verify(site.rubric(goal_id), final, answer)
        if not verdict.success:
            return await fail(f"the verifier rejected the final state: {verdict.rationale}")
        return ReplayResult(site.name, goal_id, True, plan.length, time.monotonic() - started)
    except (PlaywrightError, TimeoutError) as error:
        return await fail(f"step {step_no}: browser error: {str(error).splitlines()[0]}")
    finally:
        await context.close()


async def replay_sites(sites: list[Site], goals: dict[str, list[str]] | None = None, concurrency: int = 4,
                       shots: Path | None = None) -> list[ReplayResult]:
    """Replay the oracle path of every goal (or the chosen goals per site) of the given sites."""
    jobs = [(site, goal.id) for site in sites for goal in site.spec.goals
            if goals is None or goal.id in goals.get(site.name, [])]
    for site, goal_id in jobs:
        site.oracle_path(goal_id)
    gate = asyncio.Semaphore(concurrency)
    with SiteServer(sites) as server:
        states = StateClient(server)
        async with async_playwright() as playwright:
            browser = await launch_browser(playwright, server.host_map())

            ticker = Ticker(log, "replay in Chromium", len(jobs), "goals")
            failed = 0

            async def run(site: Site, goal_id: str) -> ReplayResult:
                nonlocal failed
                async with gate:
                    result = await replay_goal(browser, site, goal_id, states, shots)
                failed += not result.ok
                ticker.tick(f"{failed} failed" if failed else "")
                return result
            try:
                return list(await asyncio.gather(*(run(site, goal_id) for site, goal_id in jobs)))
            finally:
                await browser.close()
                await states.aclose()


def verify_sites(sites: list[Site], goals: dict[str, list[str]] | None = None, concurrency: int = 4,
                 shots: Path | None = None) -> list[ReplayResult]:
    """Synchronous entry point of the replay check."""
    return asyncio.run(replay_sites(sites, goals, concurrency, shots))
