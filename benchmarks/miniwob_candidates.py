"""What the observation layer offers on MiniWoB++ pages: episodes a simple scripted agent completes by
choosing among the scorer's candidates, per task.

    .venv/bin/python benchmarks/miniwob_candidates.py [--seeds 10] [--task click-link ...] [--scorer [CKPT]]

The agent sees what the scorer sees (the set-of-marks elements and `page_candidates`) and picks by
rules over the utterance: when it asks for typing, fill the fields with its quoted phrases (matched
to a field by the words before the phrase, else in order), choose a list option or click an element named in the utterance
(or holding a name it gives, or the icon it names), open a tab not yet opened, then click the button
the utterance names. It never reads the DOM itself,
so a task it completes has the candidates it needs, and one it fails on a page whose candidates are
missing shows that too. The same rules run on an older checkout (PYTHONPATH at its export) give the
before figure; `watch_listeners` is used when the checkout has it. The task's own JavaScript reward
decides success (raw reward > 0), as `webgym.sites.miniwob.judge` does.

With --scorer the set-of-marks scorer acts instead (untrained, seed 0, greedy, unless a checkpoint is
given), through the project's own rollout (`collect`, the episode's horizon 10 as the main job's
external kind), judged by the exact judge on the task's own reward.
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
         "navigate-tree", "click-widget", "click-collapsible", "search-engine", "click-button-sequence", "enter-text-2"]
"""The issue's 7 named tasks first, then easy ones of the same kinds."""
MAX_STEPS = 8
START_WAIT_MS = 300
"""After the seeded start: icons the task drew (CSS images) load before the first observation."""
CLICKS = ("link", "button", "option", "toggle", "submit")
TYPING = re.compile(r"\b(enter|type|fill|search|username|password)\b", re.I)
"""An utterance that asks for typing (only then are fields filled)."""
SUBMIT = re.compile(r"\b(submit|login|log in|search|ok|yes|no|cancel|close)\b", re.I)


def _words(text: str) -> set[str]:
    return {w.lower() for w in re.findall(r"[A-Za-z0-9]+", text)}


def pick(utterance: str, candidates: list[Candidate], done: set[str]) -> tuple[Candidate, list[str | None]] | None:
    """The next candidate by the rules of the module docstring; None when no rule applies."""
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
    buttons = [c for c in fresh if c.kind in CLICKS and SUBMIT.search(c.target)
               and SUBMIT.search(c.target).group(0).lower() in utterance.lower()]
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


def scorer_run(tasks: list[str], seeds: int, checkpoint: str | None) -> None:
    """Per task, the episodes the scorer completes through the rollout (see the module docstring)."""
    import datetime as dt
    import tempfile

    import pandas as pd

    from stages.judge.episode import episodes
    from stages.judge.exact import exact_judgment
    from webgym.config import EnvConfig, RolloutConfig
    from webgym.config.policy import ScorerConfig
    from webgym.env.safety import UrlPolicy
    from webgym.lake import Lake
    from webgym.policies.base import task_specs
    from webgym.policies.scorer.checkpoint import open_scorer
    from webgym.policies.scorer.embeddings import scorer_embeddings
    from webgym.policies.scorer.policy import ScorerPolicy
    from webgym.rollout.collect import collect, episode_specs
    from webgym.rollout.site_state import MiniwobStateReader, StateReaders, start_miniwob_episode

    runs = [(task, seed) for task in tasks for seed in range(seeds)]
    said = asyncio.run(miniwob.seeded_utterances(runs))
    now = dt.datetime.now(dt.UTC)
    rows = pd.DataFrame([miniwob.task_row(task, seed, said[(task, seed)], now) for task, seed in runs])
    settings = RolloutConfig(default_horizon=10)
    specs = episode_specs(task_specs(rows), iteration=0, config=settings, run_key="mw", purpose="evaluation")
    config = ScorerConfig(checkpoint=checkpoint, greedy=True)
    policy = ScorerPolicy(open_scorer(config), scorer_embeddings(config), temperature=config.temperature,
                          greedy=True, seed=config.seed, done_margin=config.done_margin)
    lake = Lake(tempfile.mkdtemp(prefix="miniwob-scorer-"))
    started = time.monotonic()

    async def scenario() -> None:
        with SiteServer([], static={miniwob.HOST: miniwob.html_root()}) as server:
            async with async_playwright() as playwright:
                browser = await launch_browser(playwright, site_hosts=server.host_map())
                try:
                    await collect(specs, policy, browser, lake, settings, EnvConfig(observation="set_of_marks"),
                                  UrlPolicy(site_hosts=frozenset({miniwob.HOST}), allow_public=False),
                                  StateReaders(MiniwobStateReader()), prepare=start_miniwob_episode)
                finally:
                    await browser.close()

    asyncio.run(scenario())
    policy.close()
    trajectories, steps = lake.read_table("trajectories"), lake.read_table("steps")
    found, _ = episodes(trajectories, rows, steps)
    wins = {task: 0 for task in tasks}
    names = {miniwob.task_id(task, seed): task for task, seed in runs}
    for episode_found in found:
        if exact_judgment(episode_found).success:
            wins[names[episode_found.task_id]] += 1
    for task in tasks:
        print(f"{task:24s} {wins[task]:3d}/{seeds}", flush=True)
    print(f"{'all':24s} {sum(wins.values()):3d}/{len(runs)}  ({time.monotonic() - started:.0f} s, "
          f"{len(found)} episodes judged)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10, help="Seeds 0..N-1 per task.")
    parser.add_argument("--task", action="append", help="Only these tasks (repeatable).")
    parser.add_argument("--scorer", nargs="?", const="", default=None,
                        help="The scorer acts instead (a checkpoint directory, or none: untrained).")
    args = parser.parse_args()
    if args.scorer is None:
        asyncio.run(run(args.task or TASKS, args.seeds))
    else:
        scorer_run(args.task or TASKS, args.seeds, args.scorer or None)


if __name__ == "__main__":
    main()
