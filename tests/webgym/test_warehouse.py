"""Warehouse: views over the lake, statistics views, and warehouse.duckdb for external tools."""

from __future__ import annotations

import datetime as dt
import os
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from schemas.judgments import Judgment
from schemas.trajectories import Trajectory
from tests.conftest import NOW, night_runs, rows, steps_frame, tasks_frame, trajectories_frame
from webgym import warehouse
from webgym.config import JudgeConfig
from webgym.lake import lineage


def _judgment(tid: str, judge: str, success: bool, status: str = "judged", minutes: int = 0) -> Judgment:
    return Judgment(judgment_id=f"{tid}-{judge}-{minutes}", trajectory_id=tid, judge=judge, status=status,
                    success=success, reward=float(success), judged_at=NOW + dt.timedelta(minutes=minutes))


def test_views_exist_for_every_table_even_when_empty(lake):
    with warehouse.connect(lake) as con:
        assert con.execute("SELECT count(*) FROM steps").fetchall() == [(0,)]
        names = {r[0] for r in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}
    assert set(warehouse.describe()["name"]) == names


def test_verdicts_prefer_exact_over_rubric_and_the_newest_real_verdict_of_a_judge(lake):
    lake.write_table("tasks", tasks_frame())
    lake.write_table("trajectories", trajectories_frame())
    lake.write_table("judgments", rows([
        _judgment("r0", "rubric", True), _judgment("r0", "exact", False),
        _judgment("r1", "rubric", True), _judgment("r1", "rubric", False, "error", minutes=5),  # a rejudge errored
        _judgment("r2", "rubric", False), _judgment("r2", "rubric", True, minutes=5),  # rejudged later
    ]))
    verdicts = warehouse.query(lake, "SELECT trajectory_id, judge, success, verdict_reason FROM verdicts ORDER BY 1")
    assert verdicts[["trajectory_id", "judge", "success"]].values.tolist() == [
        ["r0", "exact", False], ["r1", "rubric", True], ["r2", "rubric", True]]
    assert verdicts["verdict_reason"][0] == "exact decided: the highest-priority judge with a verdict"
    bands = warehouse.query(lake, "SELECT difficulty_band, trajectories, successes FROM success_by_band ORDER BY 1")
    assert bands.values.tolist() == [["easy", 2, 1], ["hard", 1, 1]]


def _errored_judgments(lake) -> None:
    """r0: the reference judge errored, the rubric judge says success; r1: every judge errored; r2: the
    exact verifier could not evaluate it and the rubric judge says success."""
    lake.write_table("trajectories", trajectories_frame())
    errored = _judgment("r0", "reference", False, "error").model_copy(update={"rationale": "judge-equivalence: 500"})
    lake.write_table("judgments", rows([
        errored, _judgment("r0", "rubric", True), _judgment("r0", "webjudge", True),
        _judgment("r1", "rubric", False, "error"), _judgment("r1", "webjudge", False, "error"),
        _judgment("r2", "exact", False, "not_evaluable"), _judgment("r2", "rubric", True)]))


def test_an_erroring_top_judge_fails_closed_and_says_so(lake):
    _errored_judgments(lake)
    verdicts = warehouse.query(lake, "SELECT * FROM verdicts ORDER BY trajectory_id").set_index("trajectory_id")
    assert verdicts[["judge", "status", "success"]].values.tolist() == [
        ["reference", "error", False], ["rubric", "error", False], ["rubric", "judged", True]]
    assert verdicts.loc["r0", "verdict_reason"] == (
        "reference errored, so the trajectory is no success (fail closed: judge.fallback_on_error is off): "
        "judge-equivalence: 500")
    assert verdicts.loc["r2", "verdict_reason"] == "rubric decided: the highest-priority judge with a verdict"


def test_with_fallback_on_error_the_next_verdict_stands_in_and_names_the_error(lake):
    _errored_judgments(lake)
    fallback = JudgeConfig(fallback_on_error=True)
    verdicts = warehouse.query(lake, "SELECT * FROM verdicts ORDER BY trajectory_id", fallback)
    verdicts = verdicts.set_index("trajectory_id")
    assert verdicts[["judge", "status", "success"]].values.tolist() == [
        ["rubric", "judged", True], ["rubric", "error", False], ["rubric", "judged", True]]
    assert verdicts.loc["r0", "verdict_reason"] == (
        "rubric decided after reference (judge-equivalence: 500) errored (judge.fallback_on_error)")
    assert verdicts.loc["r1", "verdict_reason"].startswith("every judge that applies errored: rubric (")


def test_same_screenshot_rate_and_steps_per_trajectory(lake):
    lake.write_table("trajectories", trajectories_frame())
    lake.write_table("steps", steps_frame())
    rate = warehouse.query(lake, "SELECT steps, same_screenshot_rate FROM same_screenshot_rate")
    assert rate.values.tolist() == [[2, 0.5]]  # r0 repeats a, r1 goes b -> c
    lengths = warehouse.query(lake, "SELECT trajectories, mean_steps FROM steps_per_trajectory")
    assert lengths.values.tolist() == [[3, 2.0]]


def test_task_composition_views(lake):
    lake.write_table("tasks", tasks_frame())
    by_band = warehouse.query(lake, "SELECT difficulty_band, split, tasks FROM tasks_by_band")
    assert by_band.values.tolist() == [["easy", "train", 2], ["hard", "test", 1]]
    by_split = warehouse.query(lake, "SELECT split, tasks, websites FROM tasks_by_split")
    assert by_split.values.tolist() == [["test", 1, 1], ["train", 2, 1]]
    lake.replace_table("tasks", tasks_frame().assign(domain=["Lifestyle & Leisure", "Lifestyle & Leisure", "Misc."],
                                                     subdomain=["Shopping", "Shopping", "General Info."]))
    by_domain = warehouse.query(lake, "SELECT domain, subdomain, split, tasks FROM tasks_by_domain")
    assert by_domain.values.tolist() == [["Lifestyle & Leisure", "Shopping", "train", 2],
                                         ["Misc.", "General Info.", "test", 1]]


def test_warehouse_file_sees_parts_appended_after_it_was_built(lake, tmp_path):
    path = warehouse.build(lake, tmp_path / "warehouse.duckdb")
    lake.write_table("tasks", tasks_frame().iloc[:1])
    with duckdb.connect(str(path), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM tasks").fetchall() == [(1,)]
    lake.write_table("tasks", tasks_frame().iloc[1:])
    with duckdb.connect(str(path), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM tasks").fetchall() == [(3,)]
        assert con.execute("SELECT count(*) FROM tasks_by_source").fetchall() == [(2,)]


def test_queries_are_not_blocked_by_a_writer_holding_the_warehouse_file(lake, tmp_path):
    path = warehouse.build(lake, tmp_path / "warehouse.duckdb")
    with duckdb.connect(str(path)):  # a read-write connection locks the file for other processes
        with lake.stream("rollout", batch_rows=100) as writer:
            writer.append({"tasks": tasks_frame()})
            assert isinstance(warehouse.query(lake, "SELECT * FROM tasks"), pd.DataFrame)


def test_verdicts_follow_the_configured_judge_priority(lake):
    lake.write_table("trajectories", trajectories_frame())
    lake.write_table("judgments", rows([_judgment("r0", "rubric", True), _judgment("r0", "exact", False)]))
    sql = "SELECT judge, success FROM verdicts"
    assert warehouse.query(lake, sql).values.tolist() == [["exact", False]]
    assert warehouse.query(lake, sql, JudgeConfig(priority=["rubric", "exact"])).values.tolist() == [["rubric", True]]


def test_warehouse_build_on_another_lake_writes_that_lakes_file(lake, monkeypatch):
    from typer.testing import CliRunner

    from webgym.cli import app
    from webgym.config import load_config, warehouse_path

    monkeypatch.delenv("WEBGYM_DATA", raising=False)
    checkout = warehouse_path(load_config())
    before = checkout.stat().st_mtime_ns if checkout.exists() else None
    result = CliRunner().invoke(app, ["--data-dir", lake.root, "warehouse", "build"])
    assert result.exit_code == 0, result.output
    assert f"warehouse written to {Path(lake.root) / 'warehouse.duckdb'}" in result.output
    assert (checkout.stat().st_mtime_ns if checkout.exists() else None) == before


def test_the_duckdb_shell_the_readme_names_opens_the_warehouse(lake):
    shell = shutil.which("duckdb", path=os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]))
    if shell is None:
        pytest.skip("the duckdb-cli package (extra `shell`, part of `test`) is not installed")
    lake.write_table("tasks", tasks_frame())
    path = warehouse.build(lake, Path(lake.root) / "warehouse.duckdb")
    done = subprocess.run([shell, "-readonly", "-csv", str(path), "-c",
                           "SELECT split, tasks FROM tasks_by_split ORDER BY split"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["split,tasks", "test,1", "train,2"]


def test_rollout_throughput_keeps_two_evaluations_of_one_iteration_apart(lake):
    """Iteration 0 evaluates the untrained policy, trains for an hour, then evaluates the warm start: each
    evaluation's rate is its own episodes over its own wall time, not both over the span with the training."""
    def episode(tid: str, version: str, start_min: int) -> Trajectory:
        start = NOW + dt.timedelta(minutes=start_min)
        return Trajectory(trajectory_id=tid, task_id="t1", iteration=0, purpose="evaluation", policy="scorer",
                          policy_version=version, horizon=10, n_steps=6, termination="answered", answer="Done.",
                          started_at=start, ended_at=start + dt.timedelta(seconds=30))
    lake.write_table("trajectories", rows([episode("u0", "init", 0), episode("u1", "init", 0),
                                           episode("w0", "warm", 60), episode("w1", "warm", 60)]))
    frame = warehouse.query(lake, "SELECT policy_version, episodes, steps, wall_s, steps_per_s FROM rollout_throughput")
    assert frame.values.tolist() == [["init", 2, 12, 30.0, 0.4], ["warm", 2, 12, 30.0, 0.4]]


def test_stage_wall_time_is_each_stage_runs_own_span_per_iteration_with_evaluations_apart(lake):
    lake.write_table("runs", night_runs())
    frame = warehouse.query(lake, "SELECT * EXCLUDE (started) FROM stage_wall_time").set_index("iteration")
    assert frame.to_dict("index") == {
        0: {"rollout_s": 10.0, "judge_s": 2.0, "train_s": 30.0, "validation_s": 18.0, "serve_s": 2.0,
            "evaluation_s": 60.0},
        1: {"rollout_s": 80.0, "judge_s": 8.0, "train_s": 12.0, "validation_s": 30.0, "serve_s": 1.0,
            "evaluation_s": 30.0}}
    started = warehouse.query(lake, "SELECT started FROM stage_wall_time ORDER BY iteration")["started"]
    assert [s.to_pydatetime() for s in started] == [NOW + dt.timedelta(seconds=50), NOW + dt.timedelta(seconds=200)]
    assert frame.sum(axis=1).max() < 1000  # no iteration outlasts the night


def test_stage_wall_time_is_empty_for_a_lake_without_runs(lake):
    lake.write_table("trajectories", trajectories_frame())
    assert warehouse.query(lake, "SELECT * FROM stage_wall_time").empty


def test_run_ancestors_lead_from_a_ui_run_id_to_its_episodes_and_back(lake, monkeypatch):
    lake.write_table("runs", night_runs())
    episodes = trajectories_frame()
    for row, run in zip(range(3), ["r0", "e1r", "r1"], strict=True):  # each episode written by its own run
        monkeypatch.setattr(lineage, "_source", lambda run=run: run)
        lake.write_table("trajectories", episodes.iloc[[row]])
    found = warehouse.query(lake, """
        SELECT t.trajectory_id, r.run_name FROM run_ancestors a JOIN trajectories t USING (flow_run_id)
        JOIN runs r USING (flow_run_id) WHERE a.ancestor_flow_run_id = 'n' ORDER BY 1""")
    assert found.values.tolist() == [["r0", "rollout-it0-train"], ["r1", "rollout-it0-test"],
                                     ["r2", "rollout-it1-train"]]
    above = warehouse.query(lake, """
        SELECT r.run_name FROM trajectories t JOIN run_ancestors a USING (flow_run_id)
        JOIN runs r ON r.flow_run_id = a.ancestor_flow_run_id WHERE t.trajectory_id = 'r1' ORDER BY a.depth""")
    assert above["run_name"].tolist() == ["rollout-it0-test", "evaluate-it0-test", "nightly-ci"]
