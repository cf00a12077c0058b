"""The rollout flow: draw tasks, shard their episodes across the task runner, list the websites the
evidence shows blocking agents (or unreachable), check the tables.

Each shard is one task that starts its own browser, site server and policy (webgym/rollout/runner.py),
so the same code runs in threads here and in Dask or Ray workers on a cluster. Rerunning an
iteration skips the episodes already in the lake.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Literal

from prefect import flow, task
from prefect.cache_policies import NO_CACHE

from flows.artifacts import progress_publisher, publish_rollout
from flows.gates import MissingInputError, quality_gate
from flows.judge import list_blocked_websites
from flows.lineage import RUN_HOOKS, rollout_run_name
from flows.reports import RolloutReport
from flows.runners import task_runner
from schemas.trajectories import Purpose
from stages.blocklist import listed_websites
from stages.sample import (batch_seed, curriculum_batch, evaluation_batch, split_task_ids, task_outcomes,
                           training_batch)
from webgym.config import Config, PolicyKind, load_config, replaced, with_checkpoint
from webgym.lake import Lake
from webgym.lake.queries import tasks_by_id
from webgym.policies.oracle import PLANNED_SOURCES
from webgym.rollout.episode_run import rollout_purpose, run_key_for, trajectory_id_for
from webgym.rollout.runner import rollout_tasks
from webgym.warehouse import query

log = logging.getLogger(__name__)


@task(cache_policy=NO_CACHE)
def select_tasks(config: Config, split: str, size: int | None, seed: int, chosen: list[str] | None = None,
                 iteration: int = 0) -> list[str]:
    """Task ids to roll out: `chosen` when given (each must be a task of `split`), else a training batch by
    difficulty ratio and source shares (blocklist skipped; the frontier curriculum reads the policy's training
    rollouts of the iterations before `iteration`; the oracle's demonstrations draw only the tasks it can
    plan), or the validation or held-out test tasks to evaluate on."""
    lake = Lake(config.lake.data_dir)
    tasks = lake.read_table("tasks")
    in_split = split_task_ids(tasks, split)
    if not in_split:
        raise MissingInputError(f"no {split} tasks in the lake at {lake.root} ({len(tasks)} tasks in all): build the "
                                "task set first (`webgym taskset build`, or the build_taskset flow)")
    if chosen is not None:
        unknown = sorted(set(chosen) - in_split)
        if unknown:
            raise MissingInputError(f"{len(unknown)} of the {len(chosen)} chosen tasks are not {split} tasks of the "
                                    f"lake at {lake.root}: {', '.join(unknown[:3])}")
        return list(chosen)
    if split == "train":
        blocked = listed_websites(lake.read_table("blocklist", columns=["website", "cleared_at"]))
        sample = config.taskset.sample
        if config.policy.kind == "oracle":
            tasks = tasks[tasks["source"].isin(PLANNED_SOURCES)]
        if sample.curriculum == "uniform":
            return training_batch(tasks, size or len(tasks), sample.ratio, seed, blocked,
                                  source_shares=sample.source_shares)["task_id"].tolist()
        outcomes = task_outcomes(lake.read_table("trajectories", columns=["trajectory_id", "task_id", "iteration",
                                                                          "purpose"]),
                                 query(lake, "SELECT trajectory_id, success FROM verdicts", config.judge), iteration)
        batch = curriculum_batch(tasks, outcomes, size or len(tasks), sample.ratio, seed, blocked, sample.retry_share,
                                 sample.source_shares)
        log.info("frontier curriculum: %d of %d tasks tried before (%d tried in all)",
                 int(batch["task_id"].isin(outcomes["task_id"]).sum()), len(batch), len(outcomes))
        return batch["task_id"].tolist()
    return evaluation_batch(tasks, size, seed, split)["task_id"].tolist()


@task(retries=1, retry_delay_seconds=10, cache_policy=NO_CACHE)
def rollout_shard(task_ids: list[str], config: Config, iteration: int, run_key: str, shard: int,
                  purpose: Purpose) -> dict[str, Any]:
    """Roll out one shard of tasks in this worker; finished episodes of an earlier try are skipped."""
    tasks = tasks_by_id(Lake(config.lake.data_dir), task_ids)
    publish = progress_publisher(f"rollout {run_key} shard {shard}")
    summary = asyncio.run(rollout_tasks(tasks, config, iteration, run_key, shard, purpose, publish))
    return {"episodes": summary.episodes, "skipped": summary.skipped, "steps": summary.steps,
            "wall_s": summary.wall_s, "terminations": dict(summary.terminations)}


def _with_parameters(config: Config, policy: PolicyKind | None, engine: Literal["async", "sync"] | None,
                     concurrency: int | None, group_size: int | None, horizons: dict[str, int] | None,
                     shards: int | None, checkpoint: str | None, greedy: bool) -> Config:
    """The profile with the flow's parameters set (None keeps the profile's value)."""
    config = config.model_copy(update={
        "policy": replaced(config.policy, kind=policy),
        "rollout": replaced(config.rollout, engine=engine, concurrency=concurrency, group_size=group_size,
                            horizons=horizons, shards=shards)})
    return with_checkpoint(config, checkpoint, greedy)


def _shards(ids: list[str], shards: int) -> list[list[str]]:
    """The task ids dealt round-robin into at most `shards` non-empty parts."""
    count = max(1, min(shards, len(ids)))
    return [ids[i::count] for i in range(count)]


@flow(name="rollout", flow_run_name=rollout_run_name, **RUN_HOOKS)
def rollout(iteration: int = 0, split: Literal["train", "validation", "test"] = "train", size: int | None = 32,
            policy: PolicyKind | None = None, checkpoint: str | None = None, greedy: bool = False, draw: int = 0,
            engine: Literal["async", "sync"] | None = None, concurrency: int | None = None,
            group_size: int | None = None, horizons: dict[str, int] | None = None, shards: int | None = None,
            tasks: list[str] | None = None, config_path: str | None = None,
            data_dir: str | None = None) -> RolloutReport:
    """Roll out `size` tasks of `split` for `iteration` (all of the split when None), or the task ids
    `tasks` of `split`; unset parameters come from the profile. `checkpoint` points the policy at a
    checkpoint directory; `greedy` decodes without sampling (evaluation); `draw` > 0 draws another batch
    of the same iteration (GRPO's dynamic sampling rolls out more)."""
    config = _with_parameters(load_config(config_path, data_dir), policy, engine, concurrency, group_size, horizons,
                              shards, checkpoint, greedy)
    ids = select_tasks(config, split, size, batch_seed(config.taskset.sample.seed, iteration, split, draw), tasks,
                       iteration)
    run_key = run_key_for(iteration, split, config.policy.label(config.policy.scorer.greedy), checkpoint, draw)
    purpose = rollout_purpose(split, config.policy.kind)
    parts = _shards(ids, config.rollout.shards)
    log.info("rollout %s: %d %s tasks x %d episodes, policy %s, %d shard(s)", run_key, len(ids), split,
             config.rollout.group_size, config.policy.kind, len(parts))
    futures = [rollout_shard.submit(part, config, iteration, run_key, i, purpose) for i, part in enumerate(parts)]
    report = RolloutReport(run_key, [trajectory_id_for(run_key, task_id, sample)
                                     for task_id in ids for sample in range(config.rollout.group_size)])
    for future in futures:
        report.add(future.result())
    log.info("rollout %s done: %d episodes (%d already done), %d steps in %.1f s; endings %s", run_key,
             report.episodes, report.skipped, report.steps, report.wall_s, report.terminations)
    list_blocked_websites(config)
    quality_gate(config.lake.data_dir, ["trajectories", "steps", "blocklist"])
    publish_rollout(report, split, config.policy.kind)
    return report


def run_rollout(config_path: str | None = None, data_dir: str | None = None, **parameters: Any) -> RolloutReport:
    """Run the flow on the task runner the profile names (threads, Dask or Ray)."""
    settings = load_config(config_path, data_dir).rollout
    runner = task_runner(settings.task_runner, settings.workers, settings.cluster_address)
    return rollout.with_options(task_runner=runner)(config_path=config_path, data_dir=data_dir, **parameters)
