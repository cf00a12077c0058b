"""Collect trajectories: episode specs in, trajectories and steps in the lake out.

Finished episodes are journaled one by one (steps and trajectory together), so a killed rollout
resumes where it stopped: specs whose trajectory id is already in the lake are skipped.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from playwright.async_api import Browser

from schemas.trajectories import Purpose
from webgym.config import EnvConfig, RolloutConfig
from webgym.env.safety import UrlPolicy
from webgym.lake import Lake
from webgym.policies.base import Expert, Policy, TaskSpec
from webgym.rollout.engines import failure, run_async, run_sync
from webgym.rollout.episode_run import (EpisodeResult, EpisodeRun, EpisodeSpec, RolloutLimits, StartHook,
                                        StateReader, trajectory_id_for)
from webgym.rollout.ops import OPS, OpQueues
from webgym.rollout.record import episode_frames

log = logging.getLogger(__name__)


def episode_specs(tasks: list[TaskSpec], iteration: int, config: RolloutConfig, run_key: str,
                  purpose: Purpose = "train") -> list[EpisodeSpec]:
    """group_size episodes per task, each with its band's horizon, a stable trajectory id and why it runs."""
    specs = []
    for task in tasks:
        group = trajectory_id_for(run_key, task.task_id, -1) if config.group_size > 1 else None
        for sample in range(config.group_size):
            specs.append(EpisodeSpec(task, config.horizon(task.difficulty), iteration,
                                     trajectory_id_for(run_key, task.task_id, sample), group, purpose))
    return specs


@dataclass
class RolloutSummary:
    """What a rollout did, for logs, the progress bar and the benchmark."""

    episodes: int = 0
    skipped: int = 0
    steps: int = 0
    wall_s: float = 0.0
    terminations: Counter = field(default_factory=Counter)
    op_busy_s: dict[str, float] = field(default_factory=dict)
    op_waited_s: dict[str, float] = field(default_factory=dict)

    @property
    def steps_per_s(self) -> float:
        return self.steps / self.wall_s if self.wall_s else 0.0

    @property
    def trajectories_per_min(self) -> float:
        return 60 * self.episodes / self.wall_s if self.wall_s else 0.0


async def collect(specs: list[EpisodeSpec], policy: Policy, browser: Browser, lake: Lake, config: RolloutConfig,
                  env_config: EnvConfig, url_policy: UrlPolicy, read_state: StateReader | None = None,
                  run_id: str = "rollout", progress: Callable[[EpisodeResult], None] | None = None,
                  expert: Expert | None = None, prepare: StartHook | None = None) -> RolloutSummary:
    """Run every spec not already in the lake and record it (with the expert's label of every step, when
    one is given; `prepare` readies each episode's page once its start URL opened); return the summary."""
    lake.recover()
    finished = set(lake.read_table("trajectories", columns=["trajectory_id"])["trajectory_id"])
    todo = [s for s in specs if s.trajectory_id not in finished]
    summary = RolloutSummary(skipped=len(specs) - len(todo))
    ops = OpQueues(config.queues)
    limits = RolloutLimits(config.env_retries, config.max_parse_errors, config.episode_timeout_s,
                           config.max_calls_per_step, config.max_response_chars)

    def new_run(spec: EpisodeSpec) -> EpisodeRun:
        return EpisodeRun(spec, browser, policy, ops, env_config, url_policy, limits, read_state, expert,
                          prepare=prepare)

    started = time.monotonic()
    with lake.stream(run_id, batch_rows=config.commit_every) as writer:
        def record(result: EpisodeResult) -> None:
            try:
                writer.append(episode_frames(result, lake.put_blob))
            except Exception as error:  # rows the lake refuses: keep the episode as failed, commit the others
                log.warning("episode %s: could not record its steps (%s); recorded as failed",
                            result.spec.trajectory_id, error)
                result = dataclasses.replace(result, termination="failed", steps=[],
                                             error=f"could not record the episode: {failure(error)}")
                writer.append(episode_frames(result, lake.put_blob))
            summary.episodes += 1
            summary.steps += len(result.steps)
            summary.terminations[result.termination] += 1
            if progress:
                progress(result)

        if config.engine == "async":
            await run_async(todo, new_run, config.concurrency, record, config.straggler_fraction)
        else:
            await run_sync(todo, new_run, config.concurrency, record)
    summary.wall_s = time.monotonic() - started
    summary.op_busy_s = {op: ops.busy[op] for op in OPS}
    summary.op_waited_s = {op: ops.waited[op] for op in OPS}
    log.info("rollout: %d episodes (%d already done), %d steps in %.1f s, %s", summary.episodes, summary.skipped,
             summary.steps, summary.wall_s, dict(summary.terminations))
    return summary
