"""The evaluate flow: a checkpoint (or the profile's policy) rolled out greedily on the held-out test
split, judged, one `evals` row per episode.

Resumable like its parts: the rollout skips finished episodes, the judge skips judged ones, and evals
rows already written are not written again.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

import pandas as pd
import pyarrow.dataset as ds
from prefect import flow, task
from prefect.cache_policies import NO_CACHE

from flows.gates import quality_gate
from flows.judge import judge
from flows.rollout import rollout
from stages.evaluate import evaluation_rows, success_by
from webgym.config import load_config
from webgym.lake import Lake
from webgym.warehouse import query


@dataclass
class EvaluateReport:
    """Held-out success of one evaluation, overall and by difficulty band and domain."""

    iteration: int
    policy_versions: list[str]
    episodes: int
    success_rate: float
    by_band: list[dict] = field(default_factory=list)
    by_domain: list[dict] = field(default_factory=list)


@task(cache_policy=NO_CACHE)
def record_evals(data_root: str, trajectory_ids: list[str], judge_priority: list[str]) -> list[dict]:
    """Write the evals rows of these episodes that are not there yet; return all of their rows."""
    lake = Lake(data_root)
    wanted = ds.field("trajectory_id").isin(trajectory_ids)
    trajectories = lake.read_table("trajectories", filter=wanted)
    verdicts = query(lake, "SELECT trajectory_id, success FROM verdicts", tuple(judge_priority))
    rows = evaluation_rows(trajectories, verdicts, lake.read_table("tasks"), dt.datetime.now(dt.UTC))
    present = set(lake.read_table("evals", columns=["trajectory_id"], filter=wanted)["trajectory_id"])
    new = rows[~rows["trajectory_id"].isin(present)]
    if len(new):
        lake.write_table("evals", new, run_id=f"evals-{int(rows['iteration'].max())}")
    return rows.to_dict("records")


def latest_iteration(data_root: str) -> int:
    """The newest iteration with trajectories (0 on an empty lake)."""
    iterations = Lake(data_root).read_table("trajectories", columns=["iteration"])["iteration"]
    return int(iterations.max()) if len(iterations) else 0


@flow(name="evaluate")
def evaluate(checkpoint: str | None = None, iteration: int | None = None, size: int | None = None,
             config_path: str | None = None, data_dir: str | None = None) -> EvaluateReport:
    """Roll out a checkpoint greedily on held-out test tasks, judge, record one evals row per episode.

    Args:
        checkpoint: Checkpoint directory (default: the profile's policy as configured).
        iteration: Iteration the evals rows belong to (default: the newest in the lake).
        size: Held-out tasks, a seeded sample that is the same every time (default: the whole test split).
        config_path: Profile YAML (default configs/local.yaml).
        data_dir: Lake root, a path or an fsspec URL.
    """
    config = load_config(config_path, {"lake.data_dir": data_dir} if data_dir else None)
    root = config.data_root()
    iteration = latest_iteration(root) if iteration is None else iteration
    rolled = rollout(iteration=iteration, split="test", size=size, checkpoint=checkpoint, greedy=True,
                     config_path=config_path, data_dir=data_dir)
    judge(iteration=iteration, config_path=config_path, data_dir=data_dir)
    rows = record_evals(root, rolled.trajectory_ids, list(config.judge.priority))
    quality_gate(root, ["evals"])
    evals = pd.DataFrame(rows, columns=["trajectory_id", "checkpoint", "difficulty_band", "domain", "success"])
    return EvaluateReport(iteration, sorted(set(evals["checkpoint"])), len(evals),
                          float(evals["success"].mean()) if len(evals) else 0.0,
                          success_by(evals, "difficulty_band").to_dict("records"),
                          success_by(evals, "domain").to_dict("records"))
