"""The evaluate flow: a checkpoint (or the profile's policy) rolled out greedily on the held-out test
split (or the validation split), judged, one `evals` row per episode.

Resumable like its parts: the rollout skips finished episodes, the judge skips judged ones, and evals
rows already written are not written again.
"""

from __future__ import annotations

import datetime as dt
import logging
from typing import Literal

from prefect import flow, task
from prefect.cache_policies import NO_CACHE

from flows.artifacts import publish_evaluation
from flows.gates import quality_gate
from flows.judge import judge
from flows.lineage import RUN_HOOKS, evaluate_run_name
from flows.rollout import rollout
from stages.evaluate import (
    EvaluateReport,
    evaluation_id,
    evaluation_kind,
    evaluation_report,
    evaluation_rows,
    unrecorded,
)
from stages.iterations import latest_iteration
from webgym.config import Config, load_config
from webgym.lake import Lake
from webgym.lake.queries import evals_of, trajectories_by_id
from webgym.warehouse import query

log = logging.getLogger(__name__)


@task(cache_policy=NO_CACHE)
def newest_iteration(config: Config) -> int:
    """The newest iteration with trajectories in the lake (0 on an empty lake)."""
    return latest_iteration(Lake(config.lake.data_dir).read_table("trajectories", columns=["iteration"]))


@task(cache_policy=NO_CACHE)
def record_evals(config: Config, iteration: int, trajectory_ids: list[str]) -> EvaluateReport:
    """Write the evals rows of these episodes that are not there yet; report on all of them."""
    lake = Lake(config.lake.data_dir)
    trajectories = trajectories_by_id(lake, trajectory_ids)
    verdicts = query(lake, "SELECT trajectory_id, success FROM verdicts", config.judge)
    evaluation = evaluation_id(config.policy.label(greedy=True), trajectories["task_id"].tolist())
    rows = evaluation_rows(trajectories, verdicts, lake.read_table("tasks"), evaluation, dt.datetime.now(dt.UTC))
    new = unrecorded(rows, evals_of(lake, trajectory_ids, ["trajectory_id"]))
    if len(new):
        lake.write_table("evals", new, run_id=f"evals-{iteration}")
    report = evaluation_report(rows, iteration, evaluation)
    log.info("evaluation %s, iteration %d: %d episodes, success %.3f (95%% interval %.3f-%.3f)", evaluation,
             iteration, report.episodes, report.success_rate, *report.interval)
    return report


@flow(name="evaluate", flow_run_name=evaluate_run_name, **RUN_HOOKS)
def evaluate(checkpoint: str | None = None, iteration: int | None = None, size: int | None = None,
             split: Literal["test", "validation"] = "test", config_path: str | None = None,
             data_dir: str | None = None) -> EvaluateReport:
    """Roll out a checkpoint greedily on held-out test tasks (or the validation split), judge, record one
    evals row per episode.

    Args:
        checkpoint: Checkpoint directory (default: the profile's policy as configured).
        iteration: Iteration the evals rows belong to (default: the newest in the lake).
        size: Held-out tasks per held-out kind (unseen family, unseen site), a seeded sample that is the same
            every time (default: the whole split).
        split: test (held out: the headline) or validation (training families never trained on: whether a
            new checkpoint is promoted).
        config_path: Profile YAML (default configs/local.yaml).
        data_dir: Lake root, a path or an fsspec URL.
    """
    config = load_config(config_path, data_dir)
    iteration = newest_iteration(config) if iteration is None else iteration
    # One greedy episode per task: the profile's GRPO group size would repeat it and inflate the episode count.
    rolled = rollout(iteration=iteration, split=split, size=size, checkpoint=checkpoint, greedy=True, group_size=1,
                     config_path=config_path, data_dir=config.lake.data_dir)
    judge(iteration=iteration, config_path=config_path, data_dir=config.lake.data_dir)
    report = record_evals(config, iteration, rolled.trajectory_ids)
    quality_gate(config.lake.data_dir, ["evals"])
    publish_evaluation(report, evaluation_kind(split, checkpoint))
    return report
