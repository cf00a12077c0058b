"""The nightly main job on the CI profile: two short iterations end to end (warm start, then the
scorer's own rollouts), each evaluated; quality and the printed SQL queries answer afterwards; a run
killed in the middle of a rollout finishes on the rerun without lost or duplicated episodes; a night whose
rollouts give no training signal keeps the served policy, evaluates it and ends."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from tests.tensorboard_events import scalars, tags
from webgym import PROJECT_ROOT, warehouse
from webgym.cli.nightly import NIGHTLY_QUERIES
from webgym.lake import Lake


def _profile(tmp_path: Path) -> Path:
    path = tmp_path / "ci.yaml"
    path.write_text(f"extends: {PROJECT_ROOT / 'configs' / 'ci.yaml'}\nlake:\n  data_dir: {tmp_path / 'data'}\n"
                    f"warehouse:\n  path: {tmp_path / 'w.duckdb'}\n")
    return path


def _webgym(profile: Path, *args: str, timeout: int = 900) -> subprocess.CompletedProcess:
    env = {**os.environ, "WEBGYM_DATA": ""}
    return subprocess.run([sys.executable, "-m", "webgym.cli", "--config", str(profile), *args], env=env,
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow
def test_ci_profile_runs_two_iterations_and_the_lake_answers_quality_and_sql(tmp_path):
    profile = _profile(tmp_path)
    # 5 more validation tasks gained than lost, of 4: every rollout night's checkpoint is kept back
    profile.write_text(profile.read_text() + "nightly:\n  promotion_min_gain: 5\n")
    done = _webgym(profile, "nightly")
    assert done.returncode == 0, done.stderr[-3000:]
    out = " ".join(done.stdout.split())
    assert "iteration 0 (warm start): 6 episodes" in out and "iteration 1 (rollout): 8 episodes" in out
    lake = Lake(tmp_path / "data")
    checkpoints = lake.read_table("checkpoints").sort_values("iteration")
    assert checkpoints["iteration"].tolist() == [0, 1] and checkpoints["objective"].tolist() == ["sft", "filtered_bc"]
    # the warm start trains nightly.warm_start_epochs (local.yaml's 30), iterations the profile's 4
    assert [dict(m)["train/epochs"] for m in checkpoints["metrics"]] == [30.0, 4.0]
    all_evals = lake.read_table("evals")
    evals = all_evals[all_evals["split"] == "test"]
    # 4 tasks of each held-out kind of the synthetic sites, and the 2 MiniWoB++ tasks of the external kind
    assert sorted(evals.groupby("iteration").size().tolist()) == [10, 10]
    assert evals.groupby(["iteration", "held_out"]).size().to_dict() == {
        (i, kind): n for i in (0, 1) for kind, n in (("external", 2), ("family", 4), ("site", 4))}
    assert evals["evaluation"].nunique() == 1
    # every checkpoint is validated on the same 4 validation tasks, never on test tasks, before it is served
    validation = all_evals[all_evals["split"] == "validation"]
    assert validation.groupby("checkpoint").size().to_dict() == dict.fromkeys(checkpoints["checkpoint_id"], 4)
    assert validation["evaluation"].nunique() == 1 and not set(validation["task_id"]) & set(evals["task_id"])
    promotions = lake.read_table("promotions").set_index("iteration")
    warm, first = checkpoints["checkpoint_id"].tolist()
    assert promotions.loc[0, "promoted"] and promotions.loc[1, "served_checkpoint"] == warm
    assert not promotions.loc[1, "promoted"]  # kept back: the warm start stays served and is evaluated
    assert set(evals.loc[evals["iteration"] == 1, "checkpoint"]) == {warm}
    assert promotions.loc[1, "reason"] in out and "on the same 4 tasks" in promotions.loc[1, "reason"]
    assert "at least 5 more gained than lost" in promotions.loc[1, "reason"]
    trajectories = lake.read_table("trajectories").merge(lake.read_table("tasks")[["task_id", "split"]])
    train = trajectories[trajectories["split"] == "train"]
    assert set(train[train["iteration"] == 0]["policy"]) == {"oracle"}
    assert set(train[train["iteration"] == 1]["policy_version"]) == {checkpoints["checkpoint_id"].iloc[0]}
    report = Path(out.split("report: ")[1].split()[0])
    assert report.is_file() and "no data yet" not in report.read_text().split("Held-out success")[1][:2000]
    held_out_section = report.read_text().split('<section id="heldout-success">')[1].split("</section>")[0]
    assert held_out_section.count("<td>external</td>") == 2  # the external kind has a row per evaluation
    decisions = report.read_text().split('<section id="decisions-by-kind">')[1].split("</section>")[0]
    assert "no data yet" not in decisions and decisions.count("<td>all</td>") == 2  # it0 and it1, labelled
    _assert_lineage(profile, lake)
    assert _webgym(profile, "quality").returncode == 0
    for sql in NIGHTLY_QUERIES:
        answered = _webgym(profile, "sql", sql, timeout=120)
        assert answered.returncode == 0 and "(0 rows)" not in answered.stdout, (sql, answered.stdout[-500:])
    again = _webgym(profile, "nightly", "--iterations", "1")
    assert again.returncode == 0 and "iteration 2 (rollout)" in " ".join(again.stdout.split())
    rolled = lake.read_table("trajectories", columns=["iteration", "purpose", "policy_version"])
    assert set(rolled.loc[(rolled["iteration"] == 2) & (rolled["purpose"] == "train"), "policy_version"]) == {warm}


def _assert_lineage(profile: Path, lake: Lake) -> None:
    """The night's runs rows, named by what each did, and every row it wrote traced to the run that wrote it."""
    runs = lake.read_table("runs")
    night = runs[runs["flow_name"] == "nightly"].iloc[0]
    assert night.run_name.startswith("nightly-ci-") and (night.profile, night.seed, night.outcome) == ("ci", 0, "completed")
    assert night.commit and pd.isna(night.parent_flow_run_id) and runs["flow_run_id"].is_unique
    assert {"build-taskset", "evaluate-it0-test", "rollout-it0-train", "judge-it0", "train-it0", "evaluate-it0-validation",
            "rollout-it0-validation", "rollout-it1-train", "judge-it1", "train-it1", "evaluate-it1-validation",
            "evaluate-it1-test", "rollout-it1-test"} <= set(runs["run_name"])
    assert set(runs["parent_flow_run_id"].dropna()) <= set(runs["flow_run_id"]) and (runs["outcome"] == "completed").all()
    name = runs.set_index("flow_run_id")["run_name"]
    assert set(name[lake.read_table("checkpoints")["flow_run_id"]]) == {"train-it0", "train-it1"}
    assert {n.split("-")[0] for n in name[lake.read_table("trajectories")["flow_run_id"]]} == {"rollout"}
    evaluated = lake.read_table("evals")
    assert set(name[evaluated["flow_run_id"]]) == {"evaluate-it0-test", "evaluate-it0-validation", "evaluate-it1-test",
                                                   "evaluate-it1-validation"}
    assert not lake.read_table("steps", columns=["flow_run_id"])["flow_run_id"].isna().any()
    sql = ("SELECT count(*) AS episodes FROM run_ancestors a JOIN trajectories t USING (flow_run_id) "
           f"WHERE a.ancestor_flow_run_id = '{night.flow_run_id}'")
    answered = _webgym(profile, "sql", sql, "--format", "csv", timeout=120)  # from the UI's run id to its episodes
    assert answered.stdout.split() == ["episodes", str(lake.count("trajectories"))], answered.stdout
    night_s = (night.ended_at - night.started_at).total_seconds()
    with warehouse.connect(lake) as con:
        stages = con.execute("SELECT * EXCLUDE (iteration, started) FROM stage_wall_time").df()
    assert len(stages) == 2 and 0 < stages.sum(axis=1).max() and stages.fillna(0).to_numpy().sum() < night_s


SMALL = "nightly:\n  warm_start_tasks: 3\n  warm_start_epochs: 5\n  eval_tasks: 2\n  build_taskset: false\n"


@pytest.fixture(scope="module")
def taskset_lake(tmp_path_factory) -> Path:
    """The CI profile's task set, built once (`nightly --iterations 0`), for the interrupted runs to copy."""
    folder = tmp_path_factory.mktemp("taskset")
    done = _webgym(_profile(folder), "nightly", "--iterations", "0")
    assert done.returncode == 0, done.stderr[-3000:]
    return folder / "data"


def _small_profile(folder: Path, taskset: Path) -> Path:
    shutil.copytree(taskset, folder / "data")
    path = _profile(folder)
    path.write_text(path.read_text() + SMALL)
    return path


@pytest.mark.slow
def test_nightly_killed_mid_rollout_finishes_the_iteration_on_the_rerun(taskset_lake, tmp_path):
    profile = _small_profile(tmp_path, taskset_lake)
    lake = Lake(tmp_path / "data")
    command = [sys.executable, "-m", "webgym.cli", "--config", str(profile), "nightly"]
    first = subprocess.Popen(command, env={**os.environ, "WEBGYM_DATA": ""}, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True)

    def rolled_out_in_iteration_1() -> int:
        if not lake.count("checkpoints"):
            return 0
        trajectories = lake.read_table("trajectories", columns=["iteration", "policy"])
        return int(((trajectories["iteration"] == 1) & (trajectories["policy"] == "scorer")).sum())

    deadline = time.monotonic() + 600
    while rolled_out_in_iteration_1() < 2 and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.5)
    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    # killed inside iteration 1 (8 train episodes), before its validation (4) and evaluation (2 of each kind) ended
    assert 2 <= rolled_out_in_iteration_1() < 8 + 4 + 3 * 2
    done = _webgym(profile, "nightly", "--iterations", "1")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "iteration 1 (rollout): 8 episodes" in " ".join(done.stdout.split())
    trajectories = lake.read_table("trajectories")
    assert trajectories["trajectory_id"].is_unique
    steps = lake.read_table("steps")
    assert not steps.duplicated(["trajectory_id", "t"]).any()
    assert set(steps["trajectory_id"]) <= set(trajectories["trajectory_id"])
    assert lake.read_table("checkpoints")["iteration"].tolist().count(1) == 1
    assert lake.read_table("evals")["trajectory_id"].is_unique


def _outcome(lake: Lake) -> dict:
    """What an uninterrupted and a resumed warm start must agree on (checkpoint ids carry their time)."""
    trajectories = lake.read_table("trajectories")
    evals = lake.read_table("evals").sort_values(["iteration", "task_id"])
    return {"checkpoints": lake.read_table("checkpoints")[["iteration", "objective"]].values.tolist(),
            "episodes": trajectories.groupby(["iteration", "purpose", "policy"]).size().to_dict(),
            "unique episodes": trajectories["trajectory_id"].is_unique,
            "evals": evals[["iteration", "task_id", "held_out"]].values.tolist()}


@pytest.fixture(scope="module")
def uninterrupted_outcome(prefect_harness, taskset_lake, tmp_path_factory) -> dict:
    """The small warm start run straight through once, for every stopped run to be compared with."""
    from flows.nightly import nightly

    folder = tmp_path_factory.mktemp("straight")
    nightly(iterations=1, config_path=str(_small_profile(folder, taskset_lake)))
    return _outcome(Lake(folder / "data"))


@pytest.mark.slow
@pytest.mark.parametrize("stopped_after", ["rollout", "judge", "train", "evaluate's rollout"])
def test_a_warm_start_stopped_after_any_stage_resumes_to_the_uninterrupted_outcome(prefect_harness, taskset_lake,
                                                                                    uninterrupted_outcome, tmp_path,
                                                                                    stopped_after):
    from flows.judge import judge
    from flows.nightly import nightly
    from flows.rollout import rollout
    from flows.train import train

    profile = str(_small_profile(tmp_path / "stopped", taskset_lake))
    stages = ["rollout", "judge", "train", "evaluate's rollout"]
    done = stages[:stages.index(stopped_after) + 1]
    rollout(iteration=0, split="train", size=3, policy="oracle", group_size=1, config_path=profile)
    if "judge" in done:
        judge(iteration=0, config_path=profile)
    if "train" in done:
        trained = train(iteration=0, objective="sft", epochs=5, config_path=profile)
    if "evaluate's rollout" in done:
        rollout(iteration=0, split="test", size=2, checkpoint=trained.path, greedy=True, config_path=profile)
    summary = nightly(iterations=1, config_path=profile)
    assert [(it.iteration, it.kind, it.episodes) for it in summary.iterations] == [(0, "warm start", 3)]
    assert _outcome(Lake(tmp_path / "stopped" / "data")) == uninterrupted_outcome


@pytest.mark.slow
def test_an_iteration_without_training_signal_keeps_the_served_policy_and_evaluates_it(prefect_harness,
                                                                                       taskset_lake, tmp_path):
    from flows.nightly import next_plan, nightly
    from webgym.config import load_config

    profile = _small_profile(tmp_path, taskset_lake)  # GRPO groups of one episode: never any reward variance
    mlflow_uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    profile.write_text(profile.read_text() + "  episodes: 2\n  grpo_max_rounds: 0\naccept:\n  objective: grpo\n"
                       f"train:\n  objective: grpo\ntracking:\n  mlflow_uri: {mlflow_uri}\n")
    summary = nightly(iterations=2, config_path=str(profile))
    warm, barren = summary.iterations
    assert (barren.iteration, barren.kind, barren.episodes, barren.accepted_steps) == (1, "no training signal", 2, 0)
    assert barren.checkpoint_id is None and barren.promotion is None
    lake = Lake(tmp_path / "data")
    assert lake.read_table("checkpoints")["checkpoint_id"].tolist() == [warm.checkpoint_id]
    evals = lake.read_table("evals")
    tested = evals[(evals["iteration"] == 1) & (evals["split"] == "test")]
    assert len(tested) == barren.evaluation.episodes > 0 and set(tested["checkpoint"]) == {warm.checkpoint_id}
    assert not len(evals[evals["split"] == "validation"].query("iteration == 1"))  # nothing new to validate
    plan = next_plan.fn(load_config(str(profile)))
    assert (plan.iteration, plan.checkpoint_id, plan.trained) == (2, warm.checkpoint_id, None)
    _assert_tracked(tmp_path, mlflow_uri, summary)


def _assert_tracked(tmp_path: Path, mlflow_uri: str, summary) -> None:
    """The night's per-iteration scalars and its warm start's step scalars, read back by TensorBoard's reader and
    MLflow's client, the training's run nested under the night's and tagged with both flow-run ids."""
    from mlflow.tracking import MlflowClient

    warm, barren = summary.iterations
    # the lake copied from taskset_lake holds the folder of the night that built it (no iteration: only the task
    # set's build time, at the step of its next iteration); folders sort by start time
    earlier, night_dir = sorted((tmp_path / "data" / "tensorboard").iterdir())
    assert [(name, [s for s, _ in points]) for name, points in scalars(earlier).items()] == [
        ("stage_s/build_taskset", [0])]
    assert tags(earlier)["flow_run_id"] != tags(night_dir)["flow_run_id"]
    night = scalars(night_dir)
    assert night["night/heldout_success"] == [(0, pytest.approx(warm.evaluation.success_rate)),
                                              (1, pytest.approx(barren.evaluation.success_rate))]
    assert night["night/accepted_steps"] == [(0, warm.accepted_steps), (1, 0.0)]
    assert night["night/episodes"] == [(0, 3.0), (1, 2.0)] and [s for s, _ in night["night/rollout_success"]] == [0, 1]
    assert night["night/validation_success"] == [(0, pytest.approx(warm.promotion["success_rate"]))]
    assert [step for step, _ in night["night/rollout_steps_per_s"]] == [0, 1]
    assert all(value > 0 for _, value in night["night/rollout_steps_per_s"])
    for name, steps in (("rollout_train", [0, 1]), ("judge", [0, 1]), ("train", [0]), ("evaluate_validation", [0]),
                        ("serve", [0, 1]), ("evaluate", [0, 1])):
        assert [step for step, _ in night[f"stage_s/{name}"]] == steps, name
    assert all(value > 0 for _, value in night["stage_s/train"] + night["stage_s/evaluate"])
    assert night["night/iteration_s"][0][1] > sum(night[f"stage_s/{n}"][0][1] for n in ("rollout_train", "train"))
    training = scalars(night_dir / "train-it0")
    steps = [step for step, _ in training["train/loss"]]
    assert steps == list(range(1, len(steps) + 1)) and len(steps) > 1
    for name in ("train/accuracy", "train/entropy", "train/lr", "train/grad_norm"):
        assert [step for step, _ in training[name]] == steps, name
    night_tags, train_tags = tags(night_dir), tags(night_dir / "train-it0")
    assert night_tags["flow_run_id"] == night_tags["root_flow_run_id"] == train_tags["root_flow_run_id"] != "None"
    assert train_tags["flow_run_id"] not in (night_tags["flow_run_id"], "None") and night_tags["profile"] == "ci"
    client = MlflowClient(mlflow_uri)
    experiment = client.get_experiment_by_name("webgym").experiment_id
    (root,) = client.search_runs([experiment], "tags.scope = 'root'")
    (child,) = client.search_runs([experiment], "tags.scope = 'train-it0'")
    assert root.data.tags["flow_run_id"] == night_tags["flow_run_id"] and root.info.run_name == night_dir.name
    assert child.data.tags["mlflow.parentRunId"] == root.info.run_id
    assert len(client.get_metric_history(child.info.run_id, "train/loss")) == len(steps)
    assert [m.step for m in client.get_metric_history(root.info.run_id, "night/heldout_success")] == [0, 1]
