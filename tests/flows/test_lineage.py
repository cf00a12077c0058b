"""Flow-run lineage without a Prefect server: the runs row a flow run's end writes (once per run), the names
subflow runs get, and the guard that stops a nightly run on another profile's lake."""

from __future__ import annotations

import datetime as dt
import json
import uuid
from types import SimpleNamespace

import pandas as pd
import pytest
from prefect.client.schemas.objects import FlowRun
from prefect.states import Completed, Failed

from flows import lineage
from flows.lineage import record_run, require_lake_profile
from flows.rollout import rollout
from tests.conftest import NOW, night_runs
from webgym import PROJECT_ROOT
from webgym.config import ConfigError, load_config, replaced
from webgym.lake import Lake

CI = str(PROJECT_ROOT / "configs" / "ci.yaml")


def _run(tmp_path, **parameters) -> FlowRun:
    return FlowRun(id=uuid.uuid4(), name="rollout-it2-train", flow_id=uuid.uuid4(), start_time=NOW,
                   parameters={"iteration": 2, "split": "train", "config_path": CI,
                               "data_dir": str(tmp_path / "data"), **parameters})


def test_a_flow_runs_end_records_its_profile_seed_commit_and_outcome_once(tmp_path):
    run = _run(tmp_path)
    record_run(rollout, run, Failed(message="boom"))
    record_run(rollout, run, Completed())  # retried under the same id: its row is replaced, not repeated
    runs = Lake(tmp_path / "data").read_table("runs")
    assert len(runs) == 1
    row = runs.iloc[0]
    assert (row.flow_run_id, row.flow_name, row.run_name, row.iteration, row.split) == (
        str(run.id), "rollout", "rollout-it2-train", 2, "train")
    assert (row.profile, row.seed, row.outcome) == ("ci", 0, "completed") and pd.isna(row.parent_flow_run_id)
    assert row.commit and row.started_at == NOW and row.ended_at > NOW
    assert json.loads(row.config)["profile"] == "ci" and json.loads(row.parameters)["iteration"] == 2


def test_a_scorer_run_is_recorded_under_the_scorers_seed_not_the_unused_policy_seed(tmp_path):
    profile = tmp_path / "seeded.yaml"
    profile.write_text(f"extends: {CI}\npolicy:\n  seed: 5\n  scorer:\n    seed: 7\n")
    record_run(rollout, _run(tmp_path, config_path=str(profile)), Completed())
    assert Lake(tmp_path / "data").read_table("runs").iloc[0].seed == 7


def test_a_run_whose_profile_does_not_load_records_nothing(tmp_path):
    record_run(rollout, _run(tmp_path, config_path=str(tmp_path / "missing.yaml")), Failed(message="no profile"))
    assert not (tmp_path / "data").exists()


@pytest.mark.parametrize(("name", "parameters", "expected"), [
    ("rollout_run_name", {"iteration": 2, "split": "train", "draw": 0}, "rollout-it2-train"),
    ("rollout_run_name", {"iteration": 2, "split": "train", "draw": 1}, "rollout-it2-train-draw1"),
    ("evaluate_run_name", {"iteration": 3, "split": "test"}, "evaluate-it3-test"),
    ("evaluate_run_name", {"iteration": 3, "split": "validation"}, "evaluate-it3-validation"),
    ("evaluate_run_name", {"iteration": None, "split": "test"}, "evaluate-newest-test"),
    ("judge_run_name", {"iteration": 2}, "judge-it2"),
    ("train_run_name", {"iteration": 2}, "train-it2"),
    ("serve_run_name", {"checkpoint": "/ckpt/it2-abc", "served_model_name": None}, "serve-it2-abc"),
    ("nightly_run_name", {"config_path": CI}, f"nightly-ci-{dt.datetime.now(dt.UTC):%Y-%m-%d}"),
])
def test_runs_are_named_by_what_they_do(monkeypatch, name, parameters, expected):
    monkeypatch.setattr(lineage, "current_run", SimpleNamespace(parameters=parameters))
    assert getattr(lineage, name)() == expected


def test_a_nightly_on_a_lake_another_profile_built_stops_unless_the_profile_allows_it(tmp_path):
    Lake(tmp_path / "data").write_table("runs", night_runs(profile="ci"))
    local = load_config(PROJECT_ROOT / "configs" / "local.yaml", str(tmp_path / "data"))
    with pytest.raises(ConfigError, match=r"built by nightly runs of profile 'ci', this run uses 'local'.*"
                                          r"nightly.allow_profile_change: true"):
        require_lake_profile.fn(local)
    allowed = local.model_copy(update={"nightly": replaced(local.nightly, allow_profile_change=True)})
    require_lake_profile.fn(allowed)
    require_lake_profile.fn(load_config(CI, str(tmp_path / "data")))
