"""The rollout flow: draw tasks, shard their episodes across the task runner, check the tables.

Each shard is one task that starts its own browser, site server and policy (webgym/rollout/runner.py),
so the same code runs in threads here and in Dask or Ray workers on a cluster. Rerunning an
iteration skips the episodes already in the lake.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pyarrow.dataset as ds
from prefect import flow, task
from prefect.cache_policies import NO_CACHE

from flows.gates import quality_gate
from flows.runners import task_runner
from stages.sample import evaluation_batch, training_batch
from webgym.config import Config, load_config
from webgym.lake import Lake
from webgym.policies.settings import policy_overrides
from webgym.rollout.episode_run import trajectory_id_for
from webgym.rollout.runner import rollout_tasks


@dataclass
class RolloutReport:
    """What the flow did, summed over shards."""

    run_key: str = ""
    trajectory_ids: list[str] = field(default_factory=list)
    """Every episode of this rollout, run now or by an earlier try."""
    episodes: int = 0
    skipped: int = 0
    steps: int = 0
    wall_s: float = 0.0
    terminations: dict[str, int] = field(default_factory=dict)

    def add(self, shard: dict[str, Any]) -> None:
        self.episodes += shard["episodes"]
        self.skipped += shard["skipped"]
        self.steps += shard["steps"]
        self.wall_s = max(self.wall_s, shard["wall_s"])
        for name, count in shard["terminations"].items():
            self.terminations[name] = self.terminations.get(name, 0) + count


@task(cache_policy=NO_CACHE)
def select_tasks(data_root: str, split: str, size: int | None, ratio: dict[str, float] | None, seed: int) -> list[str]:
    """Task ids to roll out: a training batch by difficulty ratio (blocklist skipped), or held-out tasks."""
    lake = Lake(data_root)
    tasks = lake.read_table("tasks")
    if split == "train":
        blocked = lake.read_table("blocklist", columns=["website"])["website"]
        return training_batch(tasks, size or len(tasks), ratio, seed, blocked)["task_id"].tolist()
    return evaluation_batch(tasks, size, seed)["task_id"].tolist()


@task(retries=1, retry_delay_seconds=10, cache_policy=NO_CACHE)
def rollout_shard(task_ids: list[str], config: Config, iteration: int, run_key: str, shard: int) -> dict[str, Any]:
    """Roll out one shard of tasks in this worker; finished episodes of an earlier try are skipped."""
    tasks = Lake(config.data_root()).read_table("tasks", filter=ds.field("task_id").isin(task_ids))
    summary = asyncio.run(rollout_tasks(tasks, config, iteration, run_key, shard))
    return {"episodes": summary.episodes, "skipped": summary.skipped, "steps": summary.steps,
            "wall_s": summary.wall_s, "terminations": dict(summary.terminations)}


@flow(name="rollout")
def rollout(iteration: int = 0, split: Literal["train", "test"] = "train", size: int | None = 32,
            policy: Literal["chat", "local", "scorer", "oracle", "random"] | None = None,
            checkpoint: str | None = None, greedy: bool = False, draw: int = 0,
            engine: Literal["async", "sync"] | None = None, concurrency: int | None = None,
            group_size: int | None = None, horizons: dict[str, int] | None = None, shards: int | None = None,
            config_path: str | None = None, data_dir: str | None = None) -> RolloutReport:
    """Roll out `size` tasks of `split` for `iteration` (all of the split when None); unset parameters
    come from the profile. `checkpoint` points the policy at a checkpoint directory; `greedy` decodes
    without sampling (evaluation); `draw` > 0 draws another batch of the same iteration (GRPO's dynamic
    sampling rolls out more)."""
    config = rollout_config(config_path, data_dir, policy=policy, engine=engine, concurrency=concurrency,
                            group_size=group_size, horizons=horizons, shards=shards)
    if checkpoint or greedy:
        config = rollout_config(config_path, data_dir, policy=config.policy.kind, engine=engine,
                                concurrency=concurrency, group_size=group_size, horizons=horizons, shards=shards,
                                **policy_overrides(config.policy.kind, checkpoint, greedy,
                                                   config.llm.endpoints.get("policy", [])))
    root = config.data_root()
    # A fresh training batch every iteration; the same held-out tasks every time, so evaluations compare.
    seed = config.taskset.sample.seed + (iteration + 7919 * draw if split == "train" else 0)
    ids = select_tasks(root, split, size, config.taskset.sample.ratio, seed)
    run_key = (f"it{iteration}-{split}-{config.policy.kind}" + (f"-{Path(checkpoint).name}" if checkpoint else "")
               + (f"-d{draw}" if draw else ""))
    count = max(1, min(config.rollout.shards, len(ids)))
    futures = [rollout_shard.submit(ids[i::count], config, iteration, run_key, i) for i in range(count)]
    report = RolloutReport(run_key, [trajectory_id_for(run_key, task_id, sample)
                                     for task_id in ids for sample in range(config.rollout.group_size)])
    for future in futures:
        report.add(future.result())
    quality_gate(root, ["trajectories", "steps", "blocklist"])
    return report


def rollout_config(config_path: str | None, data_dir: str | None, **overrides: Any) -> Config:
    """The profile with the flow's parameters applied (None means: keep the profile's value); other
    keys are dotted profile paths."""
    fields = {"policy": "policy.kind", "engine": "rollout.engine", "concurrency": "rollout.concurrency",
              "group_size": "rollout.group_size", "horizons": "rollout.horizons", "shards": "rollout.shards"}
    dotted = {fields.get(k, k): v for k, v in overrides.items() if v is not None}
    if data_dir:
        dotted["lake.data_dir"] = data_dir
    return load_config(config_path, dotted)


def run_rollout(config_path: str | None = None, data_dir: str | None = None, **parameters: Any) -> RolloutReport:
    """Run the flow on the task runner the profile names (threads, Dask or Ray)."""
    config = rollout_config(config_path, data_dir)
    runner = task_runner(config.rollout.task_runner, config.rollout.workers, config.rollout.cluster_address)
    return rollout.with_options(task_runner=runner)(config_path=config_path, data_dir=data_dir, **parameters)
