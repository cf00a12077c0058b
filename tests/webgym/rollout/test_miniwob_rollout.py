"""MiniWoB++ episodes through the project's own episode runner: the page is seeded at the start so it shows
the task's recorded utterance, the page's own end of the task ends the episode, and the exact judge pays the
task's own reward, with no gate for not answering."""

from __future__ import annotations

import asyncio
import datetime as dt
import re

import pandas as pd
import pytest

from schemas.steps import Action
from stages.judge.episode import episodes
from stages.judge.exact import exact_judgment
from stages.judge.gates import gate_judgments
from webgym.browser import launch_browser
from webgym.config import EnvConfig, RolloutConfig
from webgym.env.safety import UrlPolicy
from webgym.policies.base import PolicyInput, PolicyOutput, task_specs
from webgym.rollout.collect import collect, episode_specs
from webgym.rollout.site_state import MiniwobStateReader, StateReaders, start_miniwob_episode
from webgym.sites import miniwob
from webgym.sites.server import SiteServer

pytest.importorskip("playwright")


class ClickQuoted:
    """Clicks the button named in quotes in the task (`wrong`: another button); never answers."""

    name, version, prompt_version, privileged = "scripted", "v1", None, False

    def __init__(self, wrong: bool = False) -> None:
        self.wrong = wrong

    async def act(self, observed: PolicyInput) -> PolicyOutput:
        named = re.search(r'"([^"]+)"', observed.task.text).group(1)
        buttons = [e for e in observed.observation.elements if e.tag == "button"]
        target = next(e for e in buttons if (e.text != named) == self.wrong)
        return PolicyOutput([Action(name="click", mark=target.mark)], response=f"click({target.mark})")


def _run(tmp_path, policy, seeds) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    from webgym.lake import Lake

    lake = Lake(str(tmp_path / f"lake-{policy.wrong}"))
    now = dt.datetime(2026, 12, 4, tzinfo=dt.UTC)
    said = asyncio.run(miniwob.seeded_utterances([("click-button", s) for s in seeds]))
    tasks = pd.DataFrame([miniwob.task_row("click-button", s, said[("click-button", s)], now) for s in seeds])
    settings = RolloutConfig(default_horizon=4)
    specs = episode_specs(task_specs(tasks), iteration=0, config=settings, run_key="mw", purpose="evaluation")

    async def scenario() -> None:
        from playwright.async_api import async_playwright

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
    return tasks, lake.read_table("trajectories"), lake.read_table("steps")


@pytest.mark.slow
def test_a_miniwob_episode_ends_with_the_page_and_is_paid_its_own_reward(tmp_path):
    seeds = [0, 1, 2]
    tasks, trajectories, steps = _run(tmp_path, ClickQuoted(), seeds)
    assert set(trajectories["termination"]) == {"task_ended"}
    assert (steps.groupby("trajectory_id").size() == 1).all(), "the episode ends at the click that ended the task"
    first = steps.merge(trajectories[["trajectory_id", "task_id"]]).merge(tasks[["task_id", "text"]])
    assert all(text in page for text, page in zip(first["text"], first["page_text"])), "the seeded page shows the task"
    assert not any("Time left" in page for page in first["page_text"]), "the scoreboard is hidden"
    assert gate_judgments(trajectories).empty, "a task the page ended is not gated for not answering"
    found, problems = episodes(trajectories, tasks, steps)
    verdicts = [exact_judgment(e) for e in found]
    assert not problems and all(v.success and v.reward == 1.0 for v in verdicts)
    assert {v.rationale for v in verdicts} == {"MiniWoB++ raw reward 1 (the task ended)"}

    tasks, trajectories, steps = _run(tmp_path, ClickQuoted(wrong=True), [0])  # seed 0 shows a second button
    found, _ = episodes(trajectories, tasks, steps)
    verdicts = [exact_judgment(e) for e in found]
    assert set(trajectories["termination"]) == {"task_ended"}
    assert not any(v.success for v in verdicts) and {v.rationale for v in verdicts} == {
        "MiniWoB++ raw reward -1 (the task ended)"}
