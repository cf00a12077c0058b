"""Iteration bookkeeping of the nightly loop, over the checkpoints, promotions, evals and trajectories
tables: which checkpoint is served (the newest not kept back), which iteration runs next, whether a warm
start is due, how much dynamic sampling still wants, and how an iteration's rollouts did."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass

import pandas as pd


@dataclass(frozen=True)
class IterationPlan:
    """What the next iteration of the nightly loop is."""

    iteration: int
    warm_start: bool
    """It is the warm start: oracle demonstrations on train tasks, then SFT."""
    checkpoint: str | None
    """The served checkpoint's path (the newest of an earlier iteration not kept back by promotion), which
    the iteration rolls out (None: the profile's policy)."""
    checkpoint_id: str | None
    """The served checkpoint's id (None: the profile's policy)."""
    checkpoint_iteration: int | None
    """The iteration that trained the served checkpoint (where its validation episodes are)."""
    untrained: bool
    """No checkpoint exists yet."""
    trained: dict | None = None
    """The iteration's own checkpoints row when a run stopped after training it and before its evaluation
    ended: the iteration resumes at evaluate (rolling out and training again would add episodes and a
    second checkpoint)."""


def latest_checkpoint(checkpoints: pd.DataFrame, before: int | None = None,
                      rejected: Collection[str] = ()) -> dict | None:
    """The newest checkpoints row (of an iteration before `before`, when given), leaving out the `rejected`
    ones (kept back by promotion: stages.promote): the served checkpoint. None when there is none."""
    rows = checkpoints[~checkpoints["checkpoint_id"].isin(set(rejected))]
    rows = rows if before is None else rows[rows["iteration"] < before]
    return None if rows.empty else rows.sort_values(["iteration", "created_at"]).iloc[-1].to_dict()


def latest_iteration(trajectories: pd.DataFrame) -> int:
    """The newest iteration with trajectories (0 when there are none)."""
    return int(trajectories["iteration"].max()) if len(trajectories) else 0


TRAJECTORY_COLUMNS = ["iteration", "purpose", "ended_at"]
"""The trajectories columns the bookkeeping reads."""

EVALUATION_PURPOSES = ("evaluation", "validation")


def training_rollouts(trajectories: pd.DataFrame, iteration: int | None = None) -> pd.DataFrame:
    """The training and demonstration episodes (of `iteration`, when given): not evaluation or validation."""
    rows = trajectories[~trajectories["purpose"].isin(EVALUATION_PURPOSES)]
    return rows if iteration is None else rows[rows["iteration"] == iteration]


def finished(iteration: int, checkpoints: pd.DataFrame, evals: pd.DataFrame, trajectories: pd.DataFrame) -> bool:
    """An iteration is finished when the test split was evaluated after its own work: after its checkpoint,
    or, when it trained none (its rollouts gave accept no step: no training signal), after its training
    rollouts ended. Its validation, which comes first, does not count, nor does the untrained policy's
    evaluation, which comes before the warm start's demonstrations."""
    mine = checkpoints.loc[checkpoints["iteration"] == iteration, "created_at"]
    if len(mine):
        done = mine.max()
    else:
        rolled = training_rollouts(trajectories, iteration)
        if rolled.empty:
            return False
        done = rolled["ended_at"].max()
    later = evals.loc[(evals["iteration"] == iteration) & (evals["split"] == "test"), "evaluated_at"]
    return bool(len(later)) and later.max() >= done


def next_iteration(checkpoints: pd.DataFrame, evals: pd.DataFrame, trajectories: pd.DataFrame) -> int:
    """The iteration to run: the newest one (by checkpoints and training rollouts: an evaluation run by hand
    under a later iteration number does not move the loop) if it is not finished, else the one after (0
    on an empty lake)."""
    rolled = training_rollouts(trajectories)
    newest = max(int(checkpoints["iteration"].max()) if len(checkpoints) else 0, latest_iteration(rolled))
    return newest + 1 if finished(newest, checkpoints, evals, trajectories) else newest


def warm_start_due(iteration: int, warm_start_tasks: int) -> bool:
    """Iteration 0 is the warm start (oracle demonstrations, then SFT) when the profile asks for one,
    also when a run stopped after its checkpoint was saved: it stays the warm start when resumed."""
    return iteration == 0 and warm_start_tasks > 0


def plan_iteration(checkpoints: pd.DataFrame, evals: pd.DataFrame, trajectories: pd.DataFrame,
                   warm_start_tasks: int, rejected: Collection[str] = ()) -> IterationPlan:
    """The next iteration from the checkpoints, evals and trajectories (TRAJECTORY_COLUMNS) tables
    (`warm_start_tasks`: the profile's nightly.warm_start_tasks; `rejected`: checkpoints kept back by
    promotion)."""
    iteration = next_iteration(checkpoints, evals, trajectories)
    served = latest_checkpoint(checkpoints, before=iteration, rejected=rejected)
    own = checkpoints[checkpoints["iteration"] == iteration]
    return IterationPlan(iteration, warm_start_due(iteration, warm_start_tasks), served["path"] if served else None,
                         served["checkpoint_id"] if served else None, int(served["iteration"]) if served else None,
                         checkpoints.empty, latest_checkpoint(own) if len(own) else None)


def rolled_out(trajectories: pd.DataFrame, iteration: int) -> list[str]:
    """Ids of the iteration's training and demonstration episodes (not its evaluation or validation episodes)."""
    return training_rollouts(trajectories, iteration)["trajectory_id"].tolist()


def rollout_success(verdicts: pd.DataFrame, trajectory_ids: list[str]) -> float | None:
    """Success rate of these episodes by their verdicts; None when none is judged."""
    mine = verdicts[verdicts["trajectory_id"].isin(trajectory_ids)]
    return float(mine["success"].mean()) if len(mine) else None


def dynamic_sampling(max_rounds: int, groups_missing: Callable[[], int | None]) -> Iterator[tuple[int, int]]:
    """DAPO's dynamic sampling for GRPO: (draw, tasks) for each extra rollout round, while accept still
    lacks effective groups (`groups_missing`, asked again after every round) and rounds remain."""
    for draw in range(1, max_rounds + 1):
        missing = groups_missing()
        if not missing:
            return
        yield draw, missing
