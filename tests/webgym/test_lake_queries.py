"""The named reads the flows make (webgym/lake/queries.py): each returns exactly the rows it names, over
three-row tables where one row of each kind is left out."""

from __future__ import annotations

import datetime as dt

from schemas.accepted import AcceptedStep
from schemas.checkpoints import Checkpoint
from schemas.evals import Eval
from schemas.judgments import Judgment
from schemas.promotions import Promotion
from tests.conftest import NOW, rows, steps_frame, tasks_frame, trajectories_frame
from webgym.lake import queries


def _ids(frame, column: str = "trajectory_id") -> list[str]:
    return sorted(frame[column])


def test_reads_by_iteration_and_by_id_keep_only_the_named_rows(lake):
    lake.write_table("tasks", tasks_frame())
    lake.write_table("trajectories", trajectories_frame().assign(iteration=[0, 1, 1]))
    lake.write_table("steps", steps_frame())
    assert _ids(queries.iteration_trajectories(lake, 1)) == ["r1", "r2"]
    assert list(queries.iteration_trajectories(lake, 0, ["trajectory_id"]).columns) == ["trajectory_id"]
    assert queries.iteration_trajectories(lake, 5).empty
    assert _ids(queries.trajectories_by_id(lake, ["r0", "r2", "absent"])) == ["r0", "r2"]
    assert _ids(queries.tasks_by_id(lake, ["t3", "t1"]), "task_id") == ["t1", "t3"]
    assert queries.tasks_by_id(lake, []).empty  # an empty id list is a valid filter
    steps = queries.steps_of(lake, ["r1"], ["trajectory_id", "t"])
    assert (list(steps.columns), sorted(steps["t"])) == (["trajectory_id", "t"], [0, 1])
    assert set(steps["trajectory_id"]) == {"r1"}


def test_judgments_evals_and_blocking_evidence(lake):
    endings = ["answered", "navigation_failed", "answered"]
    lake.write_table("trajectories", trajectories_frame().assign(termination=endings))
    lake.write_table("judgments", rows([
        Judgment(judgment_id=f"j{i}", trajectory_id=f"r{i}", judge="exact", status="judged", success=i == 0,
                 reward=float(i == 0), blocked=i == 2, judged_at=NOW + dt.timedelta(minutes=i)) for i in range(3)]))
    lake.write_table("evals", rows([
        Eval(trajectory_id=f"r{i}", evaluation="e", iteration=0, checkpoint="ck0", split="test", held_out="site",
             task_id="t3", difficulty_band="hard", success=False, evaluated_at=NOW) for i in (0, 1)]))
    assert _ids(queries.judgments_of(lake, ["r0", "r1"])) == ["r0", "r1"]
    assert _ids(queries.evals_of(lake, ["r1", "r2"])) == ["r1"]
    flagged = queries.blocking_judgments(lake, ["trajectory_id", "blocked"])
    assert _ids(flagged) == ["r2"] and flagged["blocked"].all()
    assert _ids(queries.blocked_episodes(lake, flagged["trajectory_id"])) == ["r1", "r2"]  # ended so, or flagged
    assert _ids(queries.blocked_episodes(lake, [])) == ["r1"]


def test_accepted_checkpoints_and_promotions_of_one_iteration_and_objective(lake):
    lake.write_table("accepted", rows([
        AcceptedStep(trajectory_id="r0", t=t, iteration=iteration, objective=objective, reason="success", weight=1.0)
        for t, iteration, objective in [(0, 1, "filtered_bc"), (1, 1, "grpo"), (2, 0, "filtered_bc")]]))
    lake.write_table("checkpoints", rows([
        Checkpoint(checkpoint_id=f"ck{i}", iteration=iteration, path=f"/ckpt/{i}", objective=objective,
                   metrics={}, created_at=NOW + dt.timedelta(minutes=minutes))
        for i, (iteration, objective, minutes) in enumerate([(1, "grpo", 5), (1, "grpo", 0), (0, "filtered_bc", 0)])]))
    lake.write_table("promotions", rows([
        Promotion(checkpoint_id=f"ck{i}", iteration=i, promoted=True, evaluation="v", episodes=4, success_rate=0.5,
                  reason="promoted", decided_at=NOW) for i in range(3)]))
    assert list(queries.accepted_rows(lake, 1, "filtered_bc")["t"]) == [0]
    assert list(queries.accepted_rows(lake, 1, "grpo", ["t"]).columns) == ["t"]
    assert queries.iteration_checkpoint(lake, 1, "grpo")["checkpoint_id"] == "ck0"  # the newest of a resumed run
    assert queries.iteration_checkpoint(lake, 1, "filtered_bc") is None
    assert queries.promotion_of(lake, "ck2")["iteration"] == 2
    assert queries.promotion_of(lake, "ck9") is None
