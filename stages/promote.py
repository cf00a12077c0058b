"""Promotion: whether a new checkpoint becomes the served policy, from its greedy success on the
validation split (training-family tasks never trained on) against the served checkpoint's on the same
evaluation. A night that makes the policy worse keeps the previous policy served; the test split never
takes part in the decision, so the held-out headline stays an unbiased estimate."""

from __future__ import annotations

import datetime as dt

import pandas as pd

from stages.evaluate import EvaluateReport


def promotion(iteration: int, candidate: str, validated: EvaluateReport | None, served: str | None,
              served_validated: EvaluateReport | None, tolerance: float, now: dt.datetime) -> dict:
    """The promotions row of `candidate`: promoted when nothing is served yet, when there is no validation
    (validated None), or when its validation success is at least the served checkpoint's minus `tolerance`
    on the same evaluation; else kept back, the served checkpoint staying served."""
    row = {"checkpoint_id": candidate, "iteration": iteration, "evaluation": None, "episodes": 0, "success_rate": None,
           "served_checkpoint": served, "served_success_rate": None, "decided_at": now}
    if validated is None:
        return {**row, "promoted": True, "reason": "no validation split (nightly.validation_tasks 0): promoted"}
    row.update(evaluation=validated.evaluation, episodes=validated.episodes, success_rate=validated.success_rate)
    if served is None:
        return {**row, "promoted": True, "reason": "the first checkpoint: nothing served to compare with"}
    if served_validated is None or served_validated.evaluation != validated.evaluation:
        raise ValueError(f"checkpoint {candidate}: the served checkpoint {served} has no validation on evaluation "
                         f"{validated.evaluation}; validate both on the same tasks before deciding")
    new, old = validated.success_rate, served_validated.success_rate
    promoted = new >= old - tolerance
    verb = "promoted" if promoted else f"kept back, {served} stays served"
    return {**row, "served_success_rate": old, "promoted": promoted,
            "reason": f"validation success {new:.1%} vs the served {old:.1%} (tolerance {tolerance:.1%}): {verb}"}


def rejected_checkpoints(promotions: pd.DataFrame) -> set[str]:
    """Checkpoints kept back by a promotion decision (never served, never trained from)."""
    return set(promotions.loc[~promotions["promoted"].astype(bool), "checkpoint_id"]) if len(promotions) else set()
