"""One rollout shard end to end: tasks in, trajectories and steps in the lake out.

Starts what the shard's tasks need (a site server on a free port for synthetic tasks, serving
MiniWoB++'s pages too for its tasks, Chromium mapped to it, the configured policy), runs `collect`,
and logs periodic counts: episodes done, steps per second, and success so far (exact verdicts for
synthetic and MiniWoB++ tasks, answered otherwise).
A shard is self-contained, so the flow can run shards in threads, Dask or Ray workers alike.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import pandas as pd
from playwright.async_api import async_playwright

from schemas.trajectories import Purpose
from webgym.browser import connect_browser, launch_browser
from webgym.config import Config, SitesConfig
from webgym.env.safety import UrlPolicy
from webgym.lake import Lake
from webgym.policies.base import Expert, TaskSpec, task_specs
from webgym.policies.factory import open_policy
from webgym.policies.oracle import EXPERT_MAX_STATES, SiteOracle
from webgym.rollout.collect import RolloutSummary, collect, episode_specs
from webgym.rollout.episode_run import EpisodeResult
from webgym.rollout.site_state import MiniwobStateReader, SiteStateReader, StateReaders, start_miniwob_episode
from webgym.sites import miniwob
from webgym.sites.server import SiteServer
from webgym.sites.site import Site
from webgym.sites.world import world_of
from webgym.sites.verify import verify

log = logging.getLogger(__name__)


@dataclass
class Progress:
    """Counts for the periodic progress line (every `every_s` seconds and at the end)."""

    label: str
    total: int
    every_s: float = 10.0
    episodes: int = 0
    steps: int = 0
    verified: int = 0
    successes: int = 0
    started: float = field(default_factory=time.monotonic)
    publish: Callable[[Progress], None] | None = None
    """Also called with these counts at every progress line (the rollout flow's progress artifact)."""
    skipped: int = 0
    """Episodes an earlier try finished, known once the shard is done (they count as done)."""
    _last: float = 0.0

    def __call__(self, result: EpisodeResult) -> None:
        self.episodes += 1
        self.steps += len(result.steps)
        rubric = result.spec.task.rubric
        if rubric and result.final_state is not None:
            self.verified += 1
            self.successes += verify(rubric, result.final_state, result.answer).success
        elif result.spec.task.website == miniwob.HOST and result.final_state is not None:
            self.verified += 1
            self.successes += miniwob.judge(result.final_state).success
        if time.monotonic() - self._last >= self.every_s or self.episodes == self.total:
            self.report()

    @property
    def done(self) -> int:
        return self.episodes + self.skipped

    def report(self) -> None:
        """Log the progress line and publish the counts."""
        self._last = time.monotonic()
        log.info("%s", self)
        if self.publish:
            self.publish(self)

    def __str__(self) -> str:
        elapsed = max(time.monotonic() - self.started, 1e-9)
        success = f", success so far {self.successes}/{self.verified}" if self.verified else ""
        earlier = f" ({self.skipped} already done)" if self.skipped else ""
        return (f"{self.label}: {self.done}/{self.total} episodes{earlier}, {self.steps} steps, "
                f"{self.steps / elapsed:.2f} steps/s{success}")


def _sites_for(tasks: list[TaskSpec], config: SitesConfig) -> dict[str, Site]:
    hosts = {t.website for t in tasks}
    return {name: site for name, site in world_of(config).sites.items() if site.spec.hostname in hosts}


def expert_for(config: Config, purpose: Purpose, sites: dict[str, Site]) -> Expert | None:
    """The oracle as the labelling expert of episodes on synthetic sites: a learned policy's training
    episodes when the profile trains with dagger (its labels are what dagger learns), evaluation episodes
    when rollout.label_evaluations asks (the report's decisions by kind); None otherwise."""
    dagger = purpose == "train" and config.accept.objective == "dagger"
    if not sites or not (dagger or (purpose == "evaluation" and config.rollout.label_evaluations)):
        return None
    return SiteOracle(sites, max_states=EXPERT_MAX_STATES)


async def rollout_tasks(tasks: pd.DataFrame, config: Config, iteration: int, run_key: str, shard: int = 0,
                        purpose: Purpose = "train",
                        publish: Callable[[Progress], None] | None = None) -> RolloutSummary:
    """Roll out every task of `tasks` (group_size episodes each) not yet in the lake; `publish` gets the
    progress counts every time they are logged. Training episodes of a learned policy under
    accept.objective dagger, and evaluation episodes under rollout.label_evaluations, record the oracle's
    label of every step (steps.expert_actions)."""
    lake = Lake(config.lake.data_dir)
    task_list = task_specs(tasks)
    specs = episode_specs(task_list, iteration, config.rollout, run_key, purpose)
    # In a thread: building the world the first time replays its sites with asyncio.run, which cannot
    # run inside this event loop.
    sites = await asyncio.to_thread(_sites_for, task_list, config.sites)
    external = any(t.website == miniwob.HOST for t in task_list)
    static = {miniwob.HOST: miniwob.html_root()} if external else {}
    progress = Progress(f"rollout {run_key} shard {shard}", len(specs), publish=publish)
    with contextlib.ExitStack() as stack:
        server = stack.enter_context(SiteServer(sites, host=config.sites.host, port=0, static=static)) \
            if sites or static else None
        site_reader = SiteStateReader(server) if sites else None
        reader = StateReaders(*filter(None, [site_reader, MiniwobStateReader() if external else None])) \
            if server else None
        policy = stack.enter_context(open_policy(config.policy, config.llm, lake, sites, f"{run_key}-{shard}"))
        expert = expert_for(config, purpose, sites)
        url_policy = UrlPolicy(site_hosts=frozenset([*server.sites, *server.static] if server else ()),
                               allowed_hosts=frozenset(config.env.allowed_hosts),
                               allow_public=config.env.allow_public_web)
        async with async_playwright() as playwright:
            site_hosts = server.host_map() if server else None
            allow = config.env.allowed_hosts if config.env.allow_public_web else None
            if config.env.browser_endpoint:
                browser = await connect_browser(playwright, config.env.browser_endpoint, site_hosts, allow)
            else:
                browser = await launch_browser(playwright, site_hosts=site_hosts, allow=allow)
            try:
                summary = await collect(specs, policy, browser, lake, config.rollout, config.env, url_policy, reader,
                                        run_id=f"{run_key}-{shard}", progress=progress, expert=expert,
                                        prepare=start_miniwob_episode if external else None)
            finally:
                await browser.close()
                if site_reader is not None:
                    await site_reader.aclose()
    if summary.skipped:  # the closing line counts what an earlier try finished
        progress.skipped = summary.skipped
        progress.report()
    return summary
