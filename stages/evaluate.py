"""Evaluation rows: one `evals` row per judged held-out episode, and success tables by band or domain."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

import pandas as pd

from schemas import schema_for
from schemas.values import difficulty_band


def evaluation_rows(trajectories: pd.DataFrame, verdicts: pd.DataFrame, tasks: pd.DataFrame,
                    now: dt.datetime) -> pd.DataFrame:
    """The evals rows of `trajectories` (evaluation episodes): iteration, the policy version that acted,
    the task's split, band and domain, and the authoritative verdict. An episode without a verdict
    (not judged yet) is left out rather than counted as a failure."""
    judged = trajectories.merge(verdicts[["trajectory_id", "success"]], on="trajectory_id")
    judged = judged.merge(tasks[["task_id", "split", "difficulty", "domain"]], on="task_id", how="left")
    rows = pd.DataFrame({
        "trajectory_id": judged["trajectory_id"], "iteration": judged["iteration"],
        "checkpoint": judged["policy_version"], "split": judged["split"].fillna("test"),
        "task_id": judged["task_id"],
        "difficulty_band": [difficulty_band(int(d)) if pd.notna(d) else None for d in judged["difficulty"]],
        "domain": judged["domain"], "success": judged["success"].astype(bool), "evaluated_at": now})
    return rows[schema_for("evals").columns]


def success_by(evals: pd.DataFrame, column: str) -> pd.DataFrame:
    """Episodes, successes and success rate per value of `column` (band, domain...), plus an `all` row."""
    grouped = evals.groupby(evals[column].fillna("unknown"))["success"].agg(["count", "sum", "mean"])
    total = pd.DataFrame({"count": [len(evals)], "sum": [evals["success"].sum()],
                          "mean": [evals["success"].mean() if len(evals) else 0.0]}, index=["all"])
    table = pd.concat([grouped, total]).rename(columns={"count": "episodes", "sum": "successes", "mean": "success_rate"})
    table.index.name = column
    return table.reset_index().astype({"episodes": int, "successes": int})


@dataclass
class EvaluateReport:
    """Held-out success of one evaluation, overall and by difficulty band and domain."""

    iteration: int
    policy_versions: list[str]
    episodes: int
    success_rate: float
    by_band: list[dict] = field(default_factory=list)
    by_domain: list[dict] = field(default_factory=list)


def evaluation_report(evals: pd.DataFrame, iteration: int) -> EvaluateReport:
    """What an evaluation's evals rows say: which checkpoints acted, episodes, success overall and by
    band and domain."""
    return EvaluateReport(iteration, sorted(set(evals["checkpoint"])), len(evals),
                          float(evals["success"].mean()) if len(evals) else 0.0,
                          success_by(evals, "difficulty_band").to_dict("records"),
                          success_by(evals, "domain").to_dict("records"))
