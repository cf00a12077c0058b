"""Promotion: whether a new checkpoint becomes the served policy, from its greedy episodes on the
validation split (training-family tasks never trained on) paired task by task with the served checkpoint's
on the same evaluation. A night that makes the policy worse keeps the previous policy served; the test split
never takes part in the decision, so the held-out headline stays an unbiased estimate. Each decision states
the tasks gained and lost and the exact McNemar p, so a refusal that is noise reads as noise."""

from __future__ import annotations

import datetime as dt

import pandas as pd

from stages.evaluate import EvaluateReport
from webgym.stats import discordant, mcnemar_exact


def paired_validation(evals: pd.DataFrame, validated: EvaluateReport, served_validated: EvaluateReport
                      ) -> tuple[int, int, int]:
    """(tasks, gained, lost): the tasks of the validation evaluation both checkpoints were evaluated on
    (evals rows: evaluation, checkpoint, task_id, success), those only the new one solved and those only
    the served one solved."""
    rows = evals[evals["evaluation"] == validated.evaluation]

    def outcomes(versions: list[str]) -> pd.Series:
        mine = rows[rows["checkpoint"].isin(versions)].drop_duplicates("task_id")
        return mine.set_index("task_id")["success"].astype(bool)

    new, old = outcomes(validated.policy_versions), outcomes(served_validated.policy_versions)
    tasks = new.index.intersection(old.index)
    gained, lost = discordant(new[tasks].to_numpy(), old[tasks].to_numpy())
    return len(tasks), gained, lost


def promotion(iteration: int, candidate: str, validated: EvaluateReport | None, served: str | None,
              served_validated: EvaluateReport | None, evals: pd.DataFrame, tolerance: float, min_gain: int,
              now: dt.datetime) -> dict:
    """The promotions row of `candidate`: promoted when nothing is served yet, when there is no validation
    (validated None), or when, on the validation tasks both were evaluated on (`evals`), it solves at least
    `min_gain` more than the served checkpoint less `tolerance` of them (tasks gained minus tasks lost >=
    min_gain - tolerance x tasks); else kept back, the served checkpoint staying served."""
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
    tasks, gained, lost = paired_validation(evals, validated, served_validated)
    if not tasks:
        raise ValueError(f"checkpoint {candidate}: no validation task of evaluation {validated.evaluation} has "
                         f"episodes of both it and the served checkpoint {served}; nothing to compare")
    new, old = validated.success_rate, served_validated.success_rate
    promoted = gained - lost >= min_gain - tolerance * tasks
    verb = "promoted" if promoted else f"kept back, {served} stays served"
    needed = f"; at least {min_gain} more gained than lost" if min_gain else ""
    return {**row, "served_success_rate": old, "promoted": promoted,
            "reason": f"validation success {new:.1%} vs the served {old:.1%}; on the same {tasks} tasks {gained} "
                      f"gained, {lost} lost (exact McNemar p = {mcnemar_exact(gained, lost):.2f}; tolerance "
                      f"{tolerance:.1%}{needed}): {verb}"}


def rejected_checkpoints(promotions: pd.DataFrame) -> set[str]:
    """Checkpoints kept back by a promotion decision (never served, never trained from)."""
    return set(promotions.loc[~promotions["promoted"].astype(bool), "checkpoint_id"]) if len(promotions) else set()
