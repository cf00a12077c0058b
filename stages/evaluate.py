"""Evaluation rows: one `evals` row per judged held-out episode, and success tables by band or domain."""

from __future__ import annotations

import datetime as dt
import hashlib
from dataclasses import dataclass, field
from typing import Literal

import pandas as pd

from schemas import schema_for
from schemas.values import difficulty_band
from webgym.stats import wilson_interval


EvaluationKind = Literal["baseline", "test", "validation"]


def evaluation_kind(split: str, checkpoint: str | None) -> EvaluationKind:
    """What an evaluation measures, so that unlike ones are never shown or compared as one series: validation
    (the promotion check, on training families), test (a checkpoint's held-out success) or baseline (held-out
    success of the profile's own policy, no checkpoint given: the untrained starting point)."""
    if split == "validation":
        return "validation"
    return "test" if checkpoint else "baseline"


def evaluation_id(policy: str, task_ids: list[str]) -> str:
    """The name of an evaluation: the policy kind and a hash of its task sample (which the sample's size,
    seed and task set decide), so that only like is compared with like."""
    digest = hashlib.sha256("\n".join(sorted(set(task_ids))).encode()).hexdigest()[:10]
    return f"{policy}-{len(set(task_ids))}-{digest}"


def evaluation_rows(trajectories: pd.DataFrame, verdicts: pd.DataFrame, tasks: pd.DataFrame, evaluation: str,
                    now: dt.datetime) -> pd.DataFrame:
    """The evals rows of `trajectories` (evaluation episodes of `evaluation`): iteration, the policy version
    that acted, the task's split, how it is held out, band and domain, and the authoritative verdict. An
    episode without a verdict (not judged yet) is left out rather than counted as a failure."""
    judged = trajectories.merge(verdicts[["trajectory_id", "success"]], on="trajectory_id")
    judged = judged.merge(tasks[["task_id", "split", "held_out", "difficulty", "domain"]], on="task_id", how="left")
    rows = pd.DataFrame({
        "trajectory_id": judged["trajectory_id"], "evaluation": evaluation, "iteration": judged["iteration"],
        "checkpoint": judged["policy_version"], "split": judged["split"].fillna("test"),
        "held_out": judged["held_out"].astype(object).where(judged["held_out"].notna(), None),
        "task_id": judged["task_id"],
        "difficulty_band": [difficulty_band(int(d)) if pd.notna(d) else None for d in judged["difficulty"]],
        "domain": judged["domain"], "success": judged["success"].astype(bool), "evaluated_at": now})
    return rows.reindex(columns=schema_for("evals").columns)  # flow_run_id: the lake fills it


def unrecorded(rows: pd.DataFrame, recorded: pd.DataFrame) -> pd.DataFrame:
    """The evals `rows` whose trajectory has no row in `recorded` (the evals table's) yet: what an evaluation
    resumed after a crash still writes, so each episode is recorded once."""
    return rows[~rows["trajectory_id"].isin(recorded["trajectory_id"])]


def success_by(evals: pd.DataFrame, column: str) -> pd.DataFrame:
    """Episodes, successes, success rate and its 95% Wilson interval per value of `column` (band, domain,
    held-out kind...), plus an `all` row."""
    grouped = evals.groupby(evals[column].fillna("unknown"))["success"].agg(["count", "sum", "mean"])
    total = pd.DataFrame({"count": [len(evals)], "sum": [evals["success"].sum()],
                          "mean": [evals["success"].mean() if len(evals) else 0.0]}, index=["all"])
    table = pd.concat([grouped, total]).rename(columns={"count": "episodes", "sum": "successes", "mean": "success_rate"})
    table.index.name = column
    table = table.reset_index().astype({"episodes": int, "successes": int})
    bounds = [wilson_interval(k, n) for k, n in zip(table["successes"], table["episodes"], strict=True)]
    return table.assign(ci_low=[low for low, _ in bounds], ci_high=[high for _, high in bounds])


@dataclass
class EvaluateReport:
    """Held-out success of one evaluation, overall (with its 95% interval) and by held-out kind,
    difficulty band and domain."""

    iteration: int
    evaluation: str
    policy_versions: list[str]
    episodes: int
    success_rate: float
    interval: tuple[float, float] = (0.0, 1.0)
    by_held_out: list[dict] = field(default_factory=list)
    by_band: list[dict] = field(default_factory=list)
    by_domain: list[dict] = field(default_factory=list)


def evaluation_report(evals: pd.DataFrame, iteration: int, evaluation: str) -> EvaluateReport:
    """What an evaluation's evals rows say: which checkpoints acted, episodes, success overall and by
    held-out kind (unseen family, unseen site, external world), band and domain, each with its 95% interval."""
    successes = int(evals["success"].sum())
    return EvaluateReport(iteration, evaluation, sorted(set(evals["checkpoint"])), len(evals),
                          successes / len(evals) if len(evals) else 0.0, wilson_interval(successes, len(evals)),
                          success_by(evals, "held_out").to_dict("records"),
                          success_by(evals, "difficulty_band").to_dict("records"),
                          success_by(evals, "domain").to_dict("records"))
