"""Run tracking: a night's and a training's scalars read back by TensorBoard's own reader and by MLflow's client
(a sqlite store, offline), the training nested under its flow-run tree's root, every run tagged with flow-run
id, profile, seed and commit; where event files go."""

from __future__ import annotations

import pytest

from tests.tensorboard_events import scalars, tags
from webgym import PROJECT_ROOT
from webgym.config import Config, ConfigError, TrackingConfig, load_config, project_path, replaced, tensorboard_dir
from webgym.provenance import commit
from webgym.tracking import FlowRunIds, current_flow_run, open_tracker

NIGHT = FlowRunIds("night-id", "night-id", "20261204-020000-nightly-run")
TRAINING = FlowRunIds("train-id", "night-id", "20261204-020000-nightly-run")
"""A nightly's flow run and a train stage it started (its root is the nightly)."""


def _config(tmp_path, **tracking) -> Config:
    config = load_config(PROJECT_ROOT / "configs" / "ci.yaml", str(tmp_path / "data"))
    scorer = replaced(config.policy.scorer, seed=7)  # the seed the scorer acts with; policy.seed it does not use
    return config.model_copy(update={"tracking": TrackingConfig(**tracking), "train": replaced(config.train, seed=3),
                                     "policy": replaced(config.policy, seed=5, scorer=scorer)})


def test_a_night_and_its_training_write_event_files_that_tensorboard_reads_back(tmp_path):
    config = _config(tmp_path)
    with open_tracker(config, NIGHT) as night:
        night.scalars({"night/heldout_success": 0.25, "night/rollout_success": None}, step=0)
        with open_tracker(config, TRAINING, "train-it0") as training:
            for step in (1, 2, 3):
                training.scalars({"train/loss": 1.0 / step, "train/lr": 1e-3}, step=step)
        night.scalars({"night/heldout_success": 0.5}, step=1)

    root = tmp_path / "data" / "tensorboard"
    assert night.links.logdir == root / "20261204-020000-nightly-run" and night.links.tensorboard_root == root
    assert training.links.logdir == night.links.logdir / "train-it0"
    assert scalars(night.links.logdir) == {"night/heldout_success": [(0, 0.25), (1, 0.5)]}  # None is left out
    steps = scalars(training.links.logdir)
    assert [s for s, _ in steps["train/loss"]] == [1, 2, 3] and steps["train/loss"][1][1] == pytest.approx(0.5)
    assert tags(training.links.logdir) == {"flow_run_id": "train-id", "root_flow_run_id": "night-id", "profile": "ci",
                                           "seed": "7", "train_seed": "3", "commit": commit()}
    assert night.links.mlflow_run_id is None


def test_mlflow_runs_in_a_sqlite_store_nest_each_training_under_its_night(tmp_path):
    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    config = _config(tmp_path, tensorboard=False, mlflow_uri=uri)
    with open_tracker(config, NIGHT) as night:
        night.scalars({"night/heldout_success": 0.25, "stage_s/rollout_train": 12.5}, step=0)
        with open_tracker(config, TRAINING, "train-it0") as training:
            for step in (1, 2, 3):
                training.scalars({"train/loss": 1.0 / step}, step=step)
    with pytest.raises(RuntimeError), open_tracker(config, TRAINING, "train-it1") as failed:
        raise RuntimeError("training stopped")

    client = MlflowClient(uri)
    assert night.links.logdir is None and not (tmp_path / "data" / "tensorboard").exists()
    assert [(m.step, m.value) for m in client.get_metric_history(training.links.mlflow_run_id, "train/loss")] == \
        [(1, 1.0), (2, 0.5), (3, pytest.approx(1 / 3))]
    root = client.get_run(night.links.mlflow_run_id)
    assert root.data.metrics == {"night/heldout_success": 0.25, "stage_s/rollout_train": 12.5}
    assert root.info.run_name == "20261204-020000-nightly-run" and root.info.status == "FINISHED"
    trained = client.get_run(training.links.mlflow_run_id)
    assert trained.info.run_name == "train-it0" and trained.info.status == "FINISHED"
    assert {name: trained.data.tags[name] for name in ("mlflow.parentRunId", "flow_run_id", "root_flow_run_id",
                                                       "profile", "seed", "train_seed", "commit")} == {
        "mlflow.parentRunId": root.info.run_id, "flow_run_id": "train-id", "root_flow_run_id": "night-id",
        "profile": "ci", "seed": "7", "train_seed": "3", "commit": commit()}
    stopped = client.get_run(failed.links.mlflow_run_id)
    assert stopped.info.status == "FAILED" and stopped.data.tags["mlflow.parentRunId"] == root.info.run_id


def test_a_folder_store_is_refused_by_setting_name_unless_mlflow_allows_it_then_reads_back(tmp_path, monkeypatch):
    from mlflow.tracking import MlflowClient

    uri = (tmp_path / "mlruns").as_uri()
    config = _config(tmp_path, tensorboard=False, mlflow_uri=uri)
    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE", raising=False)
    with pytest.raises(ConfigError, match=r"tracking.mlflow_uri .*mlruns.*sqlite:////.*MLFLOW_ALLOW_FILE_STORE=true"):
        open_tracker(config, NIGHT)

    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    with open_tracker(config, NIGHT) as night:
        night.scalars({"night/heldout_success": 0.5}, step=2)
    assert [(m.step, m.value) for m in MlflowClient(uri).get_metric_history(night.links.mlflow_run_id,
                                                                              "night/heldout_success")] == [(2, 0.5)]


def test_a_training_run_on_its_own_gets_a_root_run_of_its_own(tmp_path):
    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    alone = FlowRunIds("train-id", "train-id", "20261204-090000-train-run")
    with open_tracker(_config(tmp_path, mlflow_uri=uri), alone, "train-it4") as training:
        training.scalars({"train/loss": 1.0}, step=1)
    client = MlflowClient(uri)
    root = client.get_run(client.get_run(training.links.mlflow_run_id).data.tags["mlflow.parentRunId"])
    assert root.data.tags["scope"] == "root" and root.data.tags["flow_run_id"] == "train-id"
    assert root.info.status == "FINISHED"
    assert training.links.logdir == tmp_path / "data" / "tensorboard" / "20261204-090000-train-run" / "train-it4"


def test_ranks_other_than_0_of_a_multi_process_training_track_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("RANK", "1")
    with open_tracker(_config(tmp_path), TRAINING, "train-it0") as training:
        training.scalars({"train/loss": 1.0}, step=1)
    assert training.links.logdir is None and not (tmp_path / "data").exists()


def test_event_files_of_a_lake_at_a_url_go_to_the_setting_else_under_the_project(tmp_path):
    config = load_config(PROJECT_ROOT / "configs" / "ci.yaml", "s3://bucket/lake")
    assert tensorboard_dir(config) == project_path("tensorboard")
    shared = config.model_copy(update={"tracking": TrackingConfig(tensorboard_dir=str(tmp_path / "tb"))})
    assert tensorboard_dir(shared) == tmp_path / "tb"
    assert tensorboard_dir(load_config(PROJECT_ROOT / "configs" / "cluster.yaml")) != project_path("tensorboard")


def test_outside_a_flow_run_there_is_no_flow_run_id():
    run = current_flow_run()
    assert run.flow_run_id is None and run.root_flow_run_id is None and run.root_name.endswith("-outside-prefect")
