"""MiniWoB++ as an external world: its task pages, the tasks no policy here can act on, and its reward.

The pages come from the `miniwob` package (Farama Foundation, MIT; the optional extra `miniwob`). Only
its HTML folder is used, found without importing the package: its `__init__` registers gymnasium
environments and would pull selenium and gymnasium, which the project does not need.

An episode is seeded as BrowserGym seeds it: `Math.seedrandom(seed)` (core.js ships seedrandom), then
`core.startEpisodeReal()`, so the same (task, seed) always shows the same utterance. The time limit
of core.js (EPISODE_MAX_TIME, 10 s) is set long, as BrowserGym does, because a policy step here takes
longer than a person's click. The reward is the task's own: core.js sets WOB_RAW_REWARD_GLOBAL (the
reward without the time penalty) and WOB_DONE_GLOBAL when the task ends.
"""

from __future__ import annotations

import datetime as dt
import importlib.util
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HOST = "miniwob.local"
"""The host name the site server serves the html folder under (SiteServer's `static`): pages at
http://miniwob.local/miniwob/<task>.html, beside core/ and common/ which they load relatively."""

MAX_TIME_MS = 24 * 3600 * 1000
"""core.EPISODE_MAX_TIME for an episode here: a day, never reached. Not more: setTimeout fires at once
for a delay over 2**31 - 1 ms, which would end every episode at its start."""

EXCLUDED: dict[str, str] = {
    "button-delay": "real-time: the second click must come the asked 1-3 seconds after the first, within 15%",
    "chase-circle": "real-time: the pointer must follow a moving circle",
    "draw-circle": "drawing on a canvas",
    "draw-line": "drawing on a canvas",
    "drag-box": "dragging an element onto another",
    "drag-circle": "dragging on a canvas",
    "drag-cube": "dragging to rotate a cube",
    "drag-items": "dragging to reorder a list",
    "drag-items-grid": "dragging to reorder a grid",
    "drag-shapes": "dragging shapes into a box",
    "drag-shapes-2": "dragging shapes into a box",
    "drag-single-shape": "dragging a shape into a box",
    "drag-sort-numbers": "dragging to sort numbers",
    "highlight-text": "selecting text by dragging",
    "highlight-text-2": "selecting text by dragging",
    "moving-items": "real-time: the items move while the agent decides",
    "resize-textarea": "dragging the textarea's resize handle",
    "simon-says": "real-time: a sequence is shown once and must be remembered while it plays",
    "stock-market": "real-time: buy when a live price falls to a target",
    "use-colorwheel": "picking a colour by pixel on a canvas wheel",
    "use-colorwheel-2": "picking a colour by pixel on a canvas wheel",
    "use-slider": "dragging a slider handle",
    "use-slider-2": "dragging slider handles",
}
"""Tasks the project's actions (click, type, scroll, back) cannot do, each with the reason."""

FAMILIES = ("email-inbox", "click-checkboxes", "click-collapsible", "click-tab", "click-test", "click-dialog",
            "click-menu", "click-pie", "click-button", "choose-date", "enter-text", "enter", "use-autocomplete",
            "book-flight", "social-media", "login-user", "focus-text", "form-sequence", "read-table",
            "scroll-text", "copy-paste", "text-transform", "count", "find", "search-engine", "navigate-tree")
"""Family prefixes, longest first where one is a prefix of another; a task matching none is its own family.
Variants of one page (click-tab-2-hard, email-inbox-reply) are one family: training on one variant and
testing on another is not testing on pages never trained on."""


def family_of(task: str) -> str:
    """The task's family: the first of FAMILIES it starts with, else the task itself."""
    return next((f for f in FAMILIES if task == f or task.startswith(f + "-") or task.startswith(f)), task)


START_JS = """(seed) => {
  Math.seedrandom(seed);
  core.EPISODE_MAX_TIME = %d;
  core.startEpisodeReal();
  core.startEpisode = () => {};
  document.getElementById('reward-display').style.display = 'none';
  const said = core.getUtterance();
  return typeof said === 'string' ? said : said.utterance;
}""" % MAX_TIME_MS
"""Page function (Playwright `evaluate`, argument the seed): seeds and starts the episode, returns the utterance.
core.js would put a START cover over the page once the task ends, whose click starts an unseeded problem and
resets the reward: it is disabled, so the ended task and its reward stay as they are. The scoreboard beside the task
(last reward, time left) is hidden: the agent sees the task, as MiniWoB++'s own 160x210 crop of the page does.
Some tasks (email-inbox-forward-nl, email-inbox-nl-turk) give the utterance with its fields, `{utterance, fields}`:
the text is the utterance, as BrowserGym's."""

REWARD_JS = """() => typeof WOB_DONE_GLOBAL === 'undefined'
  ? {raw_reward: 0, reward: 0, task_ended: false, off_task: true}
  : {raw_reward: WOB_RAW_REWARD_GLOBAL, reward: WOB_REWARD_GLOBAL, task_ended: WOB_DONE_GLOBAL}"""
"""Page function returning the task's own reward: the final state an episode on a MiniWoB++ page records
(`task_ended`: the page ended the task, which ends the episode, as BrowserGym's `terminated`). On a page that
is not the task's (the agent followed a link away from it) there is no reward: `off_task`, nothing is paid."""


@dataclass(frozen=True)
class Outcome:
    """The verdict on a MiniWoB++ episode: success when the raw reward is positive, the reward kept
    as partial credit (tasks such as click-checkboxes-soft give fractions, failures give -1)."""

    success: bool
    credit: float
    done: bool


def html_root() -> Path:
    """The package's `html` folder (core/, common/, miniwob/); LookupError when the extra is missing."""
    spec = importlib.util.find_spec("miniwob")
    if spec is None or not spec.submodule_search_locations:
        raise LookupError("MiniWoB++ pages need the optional extra: pip install 'webgym[miniwob]'")
    return Path(next(iter(spec.submodule_search_locations))) / "html"


def page_url(task: str) -> str:
    """The address of a task's page on the site server."""
    return f"http://{HOST}/miniwob/{task}.html"


def task_names(root: Path | None = None) -> list[str]:
    """Every MiniWoB++ task the project's actions can do, sorted: the package's pages minus EXCLUDED."""
    pages = (root or html_root()) / "miniwob"
    return sorted(p.stem for p in pages.glob("*.html") if p.stem not in EXCLUDED)


def judge(state: dict) -> Outcome:
    """The verdict on the state REWARD_JS read at the episode's end."""
    raw = float(state.get("raw_reward") or 0.0)
    return Outcome(success=raw > 0, credit=raw, done=bool(state.get("task_ended")))


async def read_utterances(browser: Any, pairs: Iterable[tuple[str, int]]) -> dict[tuple[str, int], str]:
    """Each (task, seed)'s utterance, read in a real page of `browser` (Playwright, async; its host
    rules must map HOST to a site server serving html_root()): what a task's instruction is recorded as
    when the task set is built. An episode started with START_JS and the same seed shows the same one."""
    utterances = {}
    page = await browser.new_page()
    try:
        for task, seed in pairs:
            await page.goto(page_url(task))
            utterances[(task, seed)] = await page.evaluate(START_JS, seed)
    finally:
        await page.close()
    return utterances


def unknown_tasks(tasks: Iterable[str], root: Path | None = None) -> list[str]:
    """The names among `tasks` that are not MiniWoB++ tasks the project can do (misspelt, or EXCLUDED)."""
    known = set(task_names(root))
    return [t for t in tasks if t not in known]


async def seeded_utterances(pairs: list[tuple[str, int]]) -> dict[tuple[str, int], str]:
    """`read_utterances` in a Chromium of its own, with a site server serving the pages at HOST."""
    from playwright.async_api import async_playwright

    from webgym.browser import launch_browser
    from webgym.sites.server import SiteServer

    with SiteServer({}, static={HOST: html_root()}) as server:
        async with async_playwright() as playwright:
            browser = await launch_browser(playwright, site_hosts=server.host_map())
            try:
                return await read_utterances(browser, pairs)
            finally:
                await browser.close()


def task_id(task: str, seed: int) -> str:
    """The tasks table's id of one seeded MiniWoB++ episode."""
    return f"miniwob/{task}/{seed}"


def seed_of(source_id: str) -> tuple[str, int]:
    """(task, seed) of a MiniWoB++ task's source_id `<task>/<seed>`."""
    task, seed = source_id.rsplit("/", 1)
    return task, int(seed)


def task_row(task: str, seed: int, utterance: str, created_at: dt.datetime) -> dict[str, Any]:
    """A row of the tasks table for one seeded MiniWoB++ episode: source `miniwob`, source_id
    `<task>/<seed>`, the utterance as its text (the benchmark's own words), and the seed in its
    evaluation block, which the episode must start with so the page matches the text."""
    from schemas.tasks import Task

    source_id = f"{task}/{seed}"
    return Task(task_id=task_id(task, seed), source="miniwob", source_id=source_id, text=utterance,
                text_writer="source", website=HOST, start_url=page_url(task),
                evaluation=json.dumps({"kind": "miniwob", "task": task, "seed": seed}),
                created_at=created_at).model_dump()
