"""The asynchronous rollout engine against the synchronous baseline (WebGym section 4.2).

    .venv/bin/python benchmarks/rollout.py [--quick] [--episodes N] [--concurrency N] [--capacity N] [--median S]
    .venv/bin/webgym bench rollout [--quick] ...        # the same, through the command line

Both engines run the same episodes with the same concurrency, browser and policy code on the
synthetic sites. The policy is the real chat policy talking to the scripted OpenAI-compatible
server as a stand-in for a GPU server: each answer takes a lognormal time (median m, p95 4m),
at most `capacity` requests are in service at once, and on a random 30% of steps past the third
the answer ends the episode. The difficulty mix easy:medium:hard = 2:5:3 sets the horizons.

The default workload keeps twice as many episodes in flight (64) as the stand-in serves at once (32),
as a rollout fleet in front of a GPU server does: with no more episodes than slots, a slot idles
while its episode is in the browser, and the stand-in's capacity could not be reached by construction.
Its 384 episodes are six batches of the baseline, so the ramp-up and the tail weigh little in the
whole-run rates (about 25 minutes here, most of it the baseline's).

Besides the speedup, the async engine's throughput is given as a share of its bound: the smaller of
the stand-in's capacity (`capacity` / mean answer time) and the browser bound, measured by a third
run of the same episodes with instant answers and no slot limit. That share uses the async engine's
steady rate: its steps per second from the `concurrency`-th finished episode to the last start (when the
(episodes - `concurrency`)-th finishes), while `concurrency` episodes are always in flight, each episode's
steps spread evenly over its run time. Over the whole run, the ramp-up and the tail (the last long episodes,
one step at a time) weigh more the fewer episodes there are; the whole-run rate is printed too, and the
speedup compares whole runs, since waiting for a batch's slowest episode is what the synchronous baseline
costs (its in-flight count is never steady, so it has no steady rate). `--quick` (0.2 s answers) only
smoke-tests: with so little policy time asynchrony has little to hide, and the report says so.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import math
import random
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from playwright.async_api import async_playwright

from schemas.values import HORIZONS
from webgym.browser import launch_browser
from webgym.config import ContextConfig, EndpointConfig, EnvConfig, LLMConfig, RolloutConfig, SamplingConfig
from webgym.env.safety import UrlPolicy
from webgym.lake import Lake
from webgym.llm.client import LLM
from webgym.llm.scripted_server import Latency, ReceivedRequest, Reply, ScriptedServer
from webgym.policies.base import TaskSpec
from webgym.policies.chat import ChatPolicy
from webgym.rollout.collect import RolloutSummary, collect, episode_specs
from webgym.rollout.episode_run import EpisodeResult
from webgym.rollout.ops import OPS
from webgym.sites.server import SiteServer
from webgym.sites.site import load_sites

MIX = {"easy": 2, "medium": 5, "hard": 3}
BAND_DIFFICULTY = {"easy": 2, "medium": 5, "hard": 8}
STEP = re.compile(r"Step (\d+) of at most")


@dataclass(frozen=True)
class BenchSettings:
    episodes: int = 384
    concurrency: int = 64
    median_s: float = 2.0
    capacity: int = 32
    early_answer: float = 0.3
    seed: int = 0
    smoke_test: bool = False
    """--quick: too little policy time for the comparison to measure the engine."""

    @classmethod
    def quick(cls) -> BenchSettings:
        return cls(episodes=32, concurrency=32, capacity=16, median_s=0.2, smoke_test=True)

    @property
    def capacity_steps_per_s(self) -> float:
        """Steps per second the stand-in serves at most: `capacity` answers in service, each taking the
        lognormal's mean (median * exp(sigma^2 / 2), sigma from p95 = 4 * median)."""
        sigma = math.log(4) / 1.6448536269514722
        return self.capacity / (self.median_s * math.exp(sigma ** 2 / 2))


@dataclass
class EngineResult:
    engine: str
    summary: RolloutSummary
    cpu_utilisation: float
    """Busy share of all cores while the engine ran (browser and server included)."""
    episodes: list[tuple[float, float, int]] = field(default_factory=list)
    """(start, end, steps) of every finished episode in seconds since the run started, in the order they finished."""
    concurrency: int = 0

    @property
    def steady_steps_per_s(self) -> float | None:
        """The async engine's steady rate (module docstring); None when the run has too few episodes for it."""
        first, last = self.concurrency, len(self.episodes) - self.concurrency
        if first < 1 or last <= first:
            return None
        start, end = self.episodes[first - 1][1], self.episodes[last - 1][1]
        if end <= start:
            return None
        return sum(_steps_within(episode, start, end) for episode in self.episodes) / (end - start)

    @property
    def per_step(self) -> dict[str, float]:
        steps = max(self.summary.steps, 1)
        return {op: self.summary.op_busy_s[op] / steps for op in OPS}


def _steps_within(episode: tuple[float, float, int], start: float, end: float) -> int:
    """How many of the episode's steps, spread evenly over its run time, ended in (start, end]."""
    began, ended, steps = episode
    return sum(start < began + (i + 1) / steps * (ended - began) <= end for i in range(steps))


def _cpu_times() -> tuple[float, float]:
    fields = [float(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + fields[4]
    return sum(fields), idle


def stand_in_reply(settings: BenchSettings) -> Callable[[ReceivedRequest], Reply]:
    """A valid action every step; past the third step, an answer with probability early_answer."""
    rng = random.Random(settings.seed)

    def reply(request: ReceivedRequest) -> Reply:
        match = STEP.search(request.last_user_text)
        step = int(match.group(1)) if match else 1
        if step > 3 and rng.random() < settings.early_answer:
            return Reply.tools(("answer", {"text": "done"}))
        direction = "down" if step % 2 else "up"
        return Reply.tools(("scroll", {"direction": direction, "amount": 0.3}))

    return reply


def _tasks(settings: BenchSettings, start_urls: list[str]) -> list[TaskSpec]:
    """Episodes in the 2:5:3 mix, spread over the sites' start pages."""
    bands = [band for band, weight in MIX.items() for _ in range(weight)]
    return [TaskSpec(f"bench-{i}", "Browse the site and report what you find.", start_urls[i % len(start_urls)],
                     difficulty=BAND_DIFFICULTY[bands[i % len(bands)]]) for i in range(settings.episodes)]


async def _run_engine(engine: str, settings: BenchSettings, workdir: Path) -> EngineResult:
    sites = load_sites()
    lake = Lake(workdir / engine)
    rollout = RolloutConfig(engine=engine, concurrency=settings.concurrency, horizons=dict(HORIZONS),
                            queues={"navigate": 4, "screenshot": 4, "execute": 4, "policy": 256}, commit_every=64)
    with ScriptedServer(latency=Latency.lognormal(settings.median_s, 4 * settings.median_s),
                        capacity=settings.capacity, seed=settings.seed) as server, SiteServer(sites) as site_server:
        server.add(stand_in_reply(settings))
        llm_config = LLMConfig(default=[EndpointConfig(base_url=server.base_url, model="stand-in", max_concurrency=256,
                                                       timeout_s=300)], cache=False, cache_dir=str(workdir / "cache"))
        tasks = _tasks(settings, [f"http://{host}/" for host in site_server.sites])
        specs = episode_specs(tasks, iteration=0, config=rollout, run_key=engine)
        url_policy = UrlPolicy(site_hosts=frozenset(site_server.sites), allow_public=False)
        with LLM(llm_config, lake, run_id=f"bench-{engine}") as llm:
            policy = ChatPolicy(llm, ContextConfig(prompt="agent_qwen"), SamplingConfig(temperature=1.0, logprobs=False))
            async with async_playwright() as playwright:
                browser = await launch_browser(playwright, site_hosts=site_server.host_map())
                episodes: list[tuple[float, float, int]] = []
                run_started = dt.datetime.now(dt.UTC)

                def progress(result: EpisodeResult) -> None:
                    episodes.append(((result.started_at - run_started).total_seconds(),
                                     (result.ended_at - run_started).total_seconds(), len(result.steps)))

                try:
                    total, idle = _cpu_times()
                    summary = await collect(specs, policy, browser, lake, rollout, EnvConfig(), url_policy,
                                            run_id=f"bench-{engine}", progress=progress)
                    total_after, idle_after = _cpu_times()
                finally:
                    await browser.close()
    busy = 1 - (idle_after - idle) / max(total_after - total, 1e-9)
    return EngineResult(engine, summary, busy, episodes, settings.concurrency)


def report(results: list[EngineResult], settings: BenchSettings, browser_bound: float) -> str:
    """The figures, one engine a column, the bound and the share of it the async engine reached, ending
    with the speedup line."""
    lines = [f"workload: {settings.episodes} episodes, {settings.concurrency} concurrent, mix easy:medium:hard = 2:5:3 "
             f"(horizons 10/20/30), policy median {settings.median_s:g} s / p95 {4 * settings.median_s:g} s, "
             f"{settings.capacity} in service, early answer {settings.early_answer:.0%} past step 3"]
    lines.append(f"{'':32}" + "".join(f"{r.engine:>12}" for r in results))
    rows = [("trajectories/min", lambda r: f"{r.summary.trajectories_per_min:.2f}"),
            ("steps/s", lambda r: f"{r.summary.steps_per_s:.2f}"),
            ("steps/s, steady", lambda r: f"{r.steady_steps_per_s:.2f}"
             if r.engine == "async" and r.steady_steps_per_s is not None else "-"),
            ("wall time (s)", lambda r: f"{r.summary.wall_s:.1f}"),
            ("steps", lambda r: str(r.summary.steps)),
            ("CPU utilisation", lambda r: f"{r.cpu_utilisation:.0%}")]
    rows += [(f"per step: {op} (s)", lambda r, op=op: f"{r.per_step[op]:.3f}") for op in OPS]
    for label, cell in rows:
        lines.append(f"{label:32}" + "".join(f"{cell(r):>12}" for r in results))
    by_engine = {r.engine: r for r in results}
    speedup = by_engine["async"].summary.trajectories_per_min / max(by_engine["sync"].summary.trajectories_per_min, 1e-9)
    lines.append("terminations: " + json.dumps({r.engine: dict(r.summary.terminations) for r in results}))
    bound = min(settings.capacity_steps_per_s, browser_bound)
    steady = by_engine["async"].steady_steps_per_s
    reached = (f"async's steady rate reached {steady / bound:.0%} of it" if steady is not None else
               f"too few episodes for a steady rate; async's whole run reached "
               f"{by_engine['async'].summary.steps_per_s / bound:.0%} of it")
    lines.append(f"bound: {bound:.2f} steps/s = min(stand-in capacity {settings.capacity_steps_per_s:.2f}, browser "
                 f"{browser_bound:.2f} measured with instant answers); {reached}")
    if settings.smoke_test:
        lines.append("--quick only smoke-tests: at this policy time asynchrony has little to hide, so the speedup "
                     "does not measure the engine (run without --quick for that)")
    lines.append(f"speedup: {speedup:.2f}")
    return "\n".join(lines)


def run_bench(settings: BenchSettings) -> str:
    """Run both engines (async first) in a scratch lake and return the report."""
    with tempfile.TemporaryDirectory(prefix="webgym-bench-") as scratch:
        results = [asyncio.run(_run_engine(engine, settings, Path(scratch))) for engine in ("async", "sync")]
        instant = replace(settings, median_s=0.0, capacity=10_000)
        browser = asyncio.run(_run_engine("async", instant, Path(scratch) / "browser-bound"))
    return report(results, settings, browser.summary.steps_per_s)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="Median policy time 0.2 s and fewer episodes (about a minute).")
    parser.add_argument("--episodes", type=int, help="Episodes per engine.")
    parser.add_argument("--concurrency", type=int, help="Episodes in flight (both engines).")
    parser.add_argument("--capacity", type=int, help="Requests the stand-in serves at once.")
    parser.add_argument("--median", type=float, help="Median policy answer time m in seconds (p95 = 4m).")
    args = parser.parse_args()
    settings = BenchSettings.quick() if args.quick else BenchSettings()
    changes = {"episodes": args.episodes, "concurrency": args.concurrency, "capacity": args.capacity,
               "median_s": args.median}
    print(run_bench(replace(settings, **{k: v for k, v in changes.items() if v is not None})))


if __name__ == "__main__":
    main()
