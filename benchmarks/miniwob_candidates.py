"""What the observation layer offers on MiniWoB++ pages: episodes a simple scripted agent completes by
choosing among the scorer's candidates, per task.

    .venv/bin/python benchmarks/miniwob_candidates.py [--seeds 10] [--task click-link ...]

The agent sees what the scorer sees (the set-of-marks elements and `page_candidates`) and picks by
rules over the utterance: when it asks for typing, fill the fields with its quoted phrases (matched
to a field by the words before the phrase, else in order), choose a list option or click an element named in the utterance
(or holding a name it gives, or the icon it names), open a tab not yet opened, then click the button
the utterance names. A date it asks for (mm/dd/yyyy) is chosen in a read-only date field's picker: the
field is clicked, Prev or Next pages to the month, the day is clicked. It never reads the DOM itself,
so a task it completes has the candidates it needs, and one it fails on a page whose candidates are
missing shows that too. The same rules run on an older checkout (PYTHONPATH at its export) give the
before figure; `watch_listeners` is used when the checkout has it. The task's own JavaScript reward
decides success (raw reward > 0), as `webgym.sites.miniwob.judge` does.

How a policy (a scorer checkpoint) does on the same pages, through the user's own rollout and judge, is
benchmarks/external.py.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import time

from playwright.async_api import async_playwright

from webgym.browser import launch_browser
from webgym.env import observe
from webgym.env.actions import Browsing, execute
from webgym.policies.scorer.candidates import Candidate, phrases, page_candidates
from webgym.sites import miniwob
from webgym.sites.server import SiteServer

TASKS = ["click-link", "email-inbox", "enter-password", "login-user", "choose-list", "click-checkboxes", "click-tab",
         "click-button", "click-test", "enter-text", "focus-text", "click-option", "click-dialog", "click-tab-2",
         "navigate-tree", "click-widget", "click-collapsible", "search-engine", "click-button-sequence", "enter-text-2",
         "choose-date", "click-shades", "click-scroll-list"]
"""The issue's 7 named tasks first, then easy ones of the same kinds, then three families the main job's
checkpoint solved none of (RESULTS R14): a date picker, colour swatches, a multi-select list."""
MAX_STEPS = 16
"""Enough for a date a year back in a picker (open, 11 months back, the day, submit)."""
START_WAIT_MS = 300
"""After the seeded start: icons the task drew (CSS images) load before the first observation; and after
each step, about a policy's step time, so an animation it started (a date picker's fade) has ended."""
CLICKS = ("link", "button", "option", "toggle", "submit")
TYPING = re.compile(r"\b(enter|type|fill|search|username|password)\b", re.I)
"""An utterance that asks for typing (only then are fields filled)."""
SUBMIT = re.compile(r"\b(submit|login|log in|search|ok|yes|no|cancel|close)\b", re.I)
DATE = re.compile(r"\b(\d{2})/(\d{2})/(\d{4})\b")
MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
          "november", "december"]
SHOWN_MONTH = re.compile(r"(" + "|".join(MONTHS) + r") (\d{4})", re.I)


def _words(text: str) -> set[str]:
    return {w.lower() for w in re.findall(r"[A-Za-z0-9]+", text)}


def _named_buttons(utterance: str, candidates: list[Candidate]) -> list[Candidate]:
    """The submit-like buttons (Submit, OK, Log in, ...) whose word the utterance uses."""
    return [c for c in candidates if c.kind in CLICKS and SUBMIT.search(c.target)
            and SUBMIT.search(c.target).group(0).lower() in utterance.lower()]


def pick_date(utterance: str, candidates: list[Candidate]) -> Candidate | None:
    """A date the utterance asks for (mm/dd/yyyy), chosen in a read-only date field's picker: open it, page by
    Prev or Next to the month its header shows (a line of the page text), click the day, then the button the
    utterance names. None when no picker is on the page."""
    wanted = DATE.search(utterance)
    pickers = [c for c in candidates if c.text.endswith("[readonly]")]
    if not wanted or not pickers:
        return None
    if any(wanted.group(0) in c.target for c in pickers):
        return next(iter(_named_buttons(utterance, candidates)), None)
    month, day, year = (int(part) for part in wanted.groups())
    shown = next(filter(None, (SHOWN_MONTH.fullmatch(c.answer or "") for c in candidates if c.kind == "answer")), None)
    if shown is None:
        return pickers[0]
    at = (int(shown.group(2)), MONTHS.index(shown.group(1).lower()) + 1)
    name = "Prev" if at > (year, month) else "Next" if at < (year, month) else str(day)
    return next((c for c in candidates if c.kind in CLICKS and c.target.strip() == name), None)


def pick(utterance: str, candidates: list[Candidate], done: set[str]) -> tuple[Candidate, list[str | None]] | None:
    """The next candidate by the rules of the module docstring; None when no rule applies."""
    dated = pick_date(utterance, candidates)
    if dated is not None:
        return dated, []
    found = phrases(utterance)
    quoted = [p for p in found if p.source == "quoted"]
    fresh = [c for c in candidates if c.key not in done]
    fills = [c for c in fresh if c.kind == "fill"]
    if fills and quoted and TYPING.search(utterance):
        fill = fills[0]
        typed: list[str | None] = []
        for i, element in enumerate(fill.fields):
            name = _words(element.label or element.text)
            match = next((p.text for p in quoted if name & _words(p.context)), None)
            typed.append(match or quoted[min(i, len(quoted) - 1)].text)
        return fill, typed
    options = [c for c in fresh if getattr(c, "option", None) and c.option in utterance]
    if options:
        return max(options, key=lambda c: len(c.option)), []
    named = [c for c in fresh if c.kind in CLICKS and c.target.strip()
             and not SUBMIT.fullmatch(c.target.strip())]
    exact = [c for c in named if any(c.target.strip() == p.text for p in quoted)]
    listed = [c for c in named if re.search(r"(?<!\w)" + re.escape(c.target.strip()) + r"(?!\w)", utterance)]
    holding = [c for c in named if any(p.source == "name" and len(p.text) > 3 and p.text in c.target for p in found)]
    icon = re.search(r"(\w+) icon", utterance)
    icons = [c for c in named if icon and icon.group(1).lower() in _words(c.target)]
    for group in (exact, listed, holding, icons):
        if group:
            return max(group, key=lambda c: len(c.target)), []
    tabs = [c for c in fresh if c.kind == "option" and "tab" in c.text.lower()]
    if tabs:
        return tabs[0], []
    buttons = _named_buttons(utterance, fresh)
    return (buttons[0], []) if buttons else None


async def episode(browser, task: str, seed: int) -> tuple[bool, int]:
    """(success, steps taken) of one seeded episode."""
    context = await browser.new_context(viewport={"width": 1280, "height": 720})
    if hasattr(observe, "watch_listeners"):
        await observe.watch_listeners(context)
    page = await context.new_page()
    await page.goto(miniwob.page_url(task))
    utterance = await page.evaluate(miniwob.START_JS, seed)
    await page.wait_for_timeout(START_WAIT_MS)
    browsing = Browsing(context, page)
    done: set[str] = set()
    steps = 0
    for steps in range(1, MAX_STEPS + 1):
        elements, text, _ = await observe.page_state(browsing.page)
        browsing.marks = {e.mark: (e.x + e.width / 2, e.y + e.height / 2) for e in elements}
        chosen = pick(utterance, page_candidates(elements, text), done)
        if chosen is None:
            break
        candidate, typed = chosen
        done.add(candidate.key)
        for action in candidate.actions(typed):
            await execute(browsing, action, 10)
        await page.wait_for_timeout(START_WAIT_MS)
        if miniwob.judge(await page.evaluate(miniwob.REWARD_JS)).done:
            break
    state = await page.evaluate(miniwob.REWARD_JS)
    await context.close()
    return miniwob.judge(state).success, steps


async def run(tasks: list[str], seeds: int) -> None:
    with SiteServer([], static={miniwob.HOST: miniwob.html_root()}) as server:
        async with async_playwright() as playwright:
            browser = await launch_browser(playwright, server.host_map())
            total = 0
            started = time.monotonic()
            for task in tasks:
                results = [await episode(browser, task, seed) for seed in range(seeds)]
                wins = sum(ok for ok, _ in results)
                total += wins
                print(f"{task:24s} {wins:3d}/{seeds}", flush=True)
            print(f"{'all':24s} {total:3d}/{seeds * len(tasks)}  ({time.monotonic() - started:.0f} s)")
            await browser.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10, help="Seeds 0..N-1 per task.")
    parser.add_argument("--task", action="append", help="Only these tasks (repeatable).")
    args = parser.parse_args()
    asyncio.run(run(args.task or TASKS, args.seeds))


if __name__ == "__main__":
    main()
