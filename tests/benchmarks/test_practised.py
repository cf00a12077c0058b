"""The practised-tasks benchmark measures what it claims: the tasks are every training task the nights rolled out
(not evaluations, not its own re-runs), by world and by whether any night solved it; the two checkpoints are the
first and the last promoted; and the pairing counts tasks only one checkpoint solved."""

from __future__ import annotations

import pandas as pd
import pytest

from schemas.accepted import AcceptedStep
from schemas.checkpoints import Checkpoint
from schemas.evals import Eval
from schemas.judgments import Judgment
from schemas.promotions import Promotion
from schemas.tasks import Task
from schemas.trajectories import Trajectory
from tests.benchmarks import load_benchmark
from tests.conftest import NOW, rows
from webgym.config import JudgeConfig
from webgym.lake import Lake

bench = load_benchmark("practised")


def _episodes(lake, episodes: list[tuple[str, str, int, str, bool]]) -> None:
    """(trajectory, task, iteration, purpose, success) episodes, each judged by the exact verifier."""
    lake.write_table("trajectories", rows([
        Trajectory(trajectory_id=tid, task_id=task, iteration=it, purpose=purpose, policy="scorer",
                   policy_version="c", horizon=10, n_steps=2, termination="answered", started_at=NOW, ended_at=NOW)
        for tid, task, it, purpose, _ in episodes]))
    lake.write_table("judgments", rows([
        Judgment(judgment_id=f"j-{tid}", trajectory_id=tid, judge="exact", status="judged", success=ok,
                 reward=float(ok), judged_at=NOW) for tid, _, _, _, ok in episodes]))


def test_practised_tasks_are_the_nights_training_tasks_by_world_and_whether_a_night_solved_them(lake):
    lake.write_table("tasks", rows([
        Task(task_id=t, source=source, source_id=t, text=f"task {t}", website="a.test", split="train", created_at=NOW)
        for t, source in (("t1", "synthetic"), ("t2", "synthetic"), ("m1", "miniwob"), ("v1", "synthetic"))]))
    _episodes(lake, [("a", "t1", 1, "train", False), ("b", "t1", 2, "train", True), ("c", "t2", 1, "train", False),
                     ("d", "m1", 3, "train", True), ("e", "v1", 1, "validation", True),
                     ("f", "t2", 1100, "train", True)])  # the benchmark's own greedy episode: not practice
    tasks = bench.practised_tasks(lake, JudgeConfig()).set_index("task_id")
    assert tasks.index.tolist() == ["m1", "t1", "t2"]
    assert tasks["world"].tolist() == ["miniwob", "synthetic", "synthetic"]
    assert tasks["solved_by_nights"].tolist() == [True, True, False]


def test_the_checkpoints_are_the_first_and_last_promoted_found_where_the_lake_moved(lake, tmp_path):
    (tmp_path / "models" / "c0").mkdir(parents=True)
    lake.write_table("checkpoints", rows([
        Checkpoint(checkpoint_id=c, iteration=i, path=f"/gone/{c}", objective="sft", metrics={}, created_at=NOW)
        for i, c in enumerate(("c0", "c1", "c2", "c3"))]))
    lake.write_table("promotions", rows([
        Promotion(checkpoint_id=c, iteration=i, promoted=ok, episodes=40, reason="r", decided_at=NOW)
        for i, (c, ok) in enumerate((("c0", True), ("c1", False), ("c2", True), ("c3", False)))]))
    served = bench.served(lake, tmp_path / "models")
    assert served == {"warm start": {"checkpoint": "c0", "path": str(tmp_path / "models" / "c0")},
                      "last served": {"checkpoint": "c2", "path": str(tmp_path / "models" / "c2")}}
    refused = Lake(tmp_path / "refused")
    refused.init()
    refused.write_table("promotions", rows([Promotion(checkpoint_id="c1", iteration=1, promoted=False, episodes=40,
                                                      reason="r", decided_at=NOW)]))
    with pytest.raises(ValueError, match="no promoted checkpoint"):
        bench.served(refused, tmp_path / "models")


def test_pairs_count_tasks_only_one_checkpoint_solved_in_all_and_per_group_of_each_grouping():
    table = pd.DataFrame({"world": ["synthetic"] * 4 + ["miniwob"] * 2,
                          "solved_by_nights": [True, True, False, False, False, True],
                          "warm start": [True, False, False, True, False, False],
                          "last served": [True, True, True, False, False, True]})
    found = {(p["world"], p["solved_by_nights"]): p
             for p in bench.pairs(table, "last served", "warm start", [["world"], ["world", "solved_by_nights"]])}
    assert list(found) == [("all", "all"), ("miniwob", "all"), ("synthetic", "all"), ("miniwob", False),
                           ("miniwob", True), ("synthetic", False), ("synthetic", True)]
    assert [found["all", "all"][k] for k in ("tasks", "gained", "lost")] == [6, 3, 1]
    assert [found["synthetic", "all"][k] for k in ("tasks", "gained", "lost")] == [4, 2, 1]
    assert [found["synthetic", False][k] for k in ("tasks", "gained", "lost")] == [2, 1, 1]
    assert [found["miniwob", True][k] for k in ("tasks", "gained", "lost")] == [1, 1, 0]
    assert found["synthetic", "all"]["warm start"]["successes"] == 2
    assert found["synthetic", "all"]["last served"]["episodes"] == 4


def test_held_out_kinds_pair_the_warm_start_the_last_night_and_the_control_with_the_external_kind_apart(lake):
    solved = {("untrained", 0, "site"): set(), ("warm", 0, "site"): {0, 1}, ("warm", 0, "family"): {0},
              ("warm", 0, "external"): {0}, ("c2", 2, "site"): {1, 2, 3}, ("c2", 2, "family"): set(),
              ("c2", 2, "external"): {0, 1}, ("ctl", 1102, "site"): {0, 1, 2}, ("ctl", 1102, "family"): {0}}
    lake.write_table("evals", rows([
        Eval(trajectory_id=f"{c}-{kind}-{i}", evaluation="e", iteration=it, checkpoint=c, split="test",
             held_out=kind, task_id=f"{kind}{i}", domain="shopping", success=i in won, evaluated_at=NOW)
        for (c, it, kind), won in solved.items() for i in range(4)]))
    outcomes = bench.held_out_outcomes(lake, {"warm start": {"checkpoint": "warm"}, "last served": {"checkpoint": "c2"},
                                              "demonstrations only": {"checkpoint": "ctl"}})
    nights = {p["held_out"]: p for p in bench.held_out_pairs(outcomes, "last served", "warm start")}
    assert list(nights) == ["all", "family", "site", "external"]
    assert [nights["all"][k] for k in ("tasks", "gained", "lost")] == [8, 2, 2]  # the synthetic kinds only
    assert [nights["site"][k] for k in ("tasks", "gained", "lost")] == [4, 2, 1]
    assert [nights["external"][k] for k in ("tasks", "gained", "lost")] == [4, 1, 0]
    # the control was evaluated on the synthetic kinds only: its pairs have no external row
    control = {p["held_out"]: p for p in bench.held_out_pairs(outcomes, "last served", "demonstrations only")}
    assert list(control) == ["all", "family", "site"]
    assert [control["site"][k] for k in ("gained", "lost")] == [1, 1] and control["family"]["lost"] == 1


def test_the_control_trains_on_each_nights_demonstration_steps_and_not_on_its_own_episodes(lake):
    lake.write_table("trajectories", rows([
        Trajectory(trajectory_id=tid, task_id="t1", iteration=it, purpose=purpose, policy="scorer",
                   policy_version="c", horizon=10, n_steps=2, termination="answered", started_at=NOW, ended_at=NOW)
        for tid, it, purpose in (("demo", 0, "demonstration"), ("own", 1, "train"))]))
    lake.write_table("accepted", rows([
        AcceptedStep(trajectory_id=tid, t=t, iteration=it, objective="filtered_bc", reason="success", weight=1.0)
        for tid, it in (("demo", 0), ("demo", 2), ("own", 2)) for t in (0, 1)]))
    night = bench.night_demonstrations(lake, 2, "filtered_bc")
    assert night["trajectory_id"].tolist() == ["demo", "demo"] and set(night["iteration"]) == {2}


def test_a_points_outcomes_are_its_own_checkpoints_episodes_at_its_iteration(lake):
    lake.write_table("trajectories", rows([
        Trajectory(trajectory_id=tid, task_id=task, iteration=it, purpose="train", policy="scorer", policy_version=c,
                   horizon=10, n_steps=2, termination="answered", started_at=NOW, ended_at=NOW)
        for tid, task, it, c in (("w1", "t1", 1100, "warm"), ("l1", "t1", 1101, "last"), ("c1", "t1", 1102, "ctl"),
                                 ("x1", "t1", 1102, "an earlier control"))]))
    lake.write_table("judgments", rows([
        Judgment(judgment_id=f"j-{tid}", trajectory_id=tid, judge="exact", status="judged", success=ok,
                 reward=float(ok), judged_at=NOW) for tid, ok in (("w1", False), ("l1", True), ("c1", False),
                                                                   ("x1", True))]))
    points = {"warm start": {"checkpoint": "warm"}, "last served": {"checkpoint": "last"},
              "demonstrations only": {"checkpoint": "ctl"}}
    table = bench.outcomes(lake, JudgeConfig(), points)
    assert table.loc["t1"].to_dict() == {"demonstrations only": False, "last served": True, "warm start": False}


def test_a_lake_without_training_rollouts_is_named(lake):
    lake.write_table("tasks", rows([Task(task_id="t1", source="synthetic", source_id="t1", text="task",
                                         website="a.test", split="train", created_at=NOW)]))
    _episodes(lake, [("e", "t1", 0, "demonstration", True)])
    with pytest.raises(ValueError, match="no training rollouts; did a night run there"):
        bench.practised_tasks(lake, JudgeConfig())
