"""nightly.dispatch: deployments: the nightly run starts its stages as deployment runs on a Prefect server
(`webgym server` here), waits for them, reads their reports back, and a failed stage run stops it by name."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import yaml

from tests.prefect_server import webgym_server
from webgym import PROJECT_ROOT
from webgym.lake import Lake


@pytest.mark.slow
def test_nightly_starts_its_stages_as_deployment_runs_and_stops_on_a_failed_one(tmp_path):
    from prefect import get_client
    from prefect.client.schemas.filters import DeploymentFilter, DeploymentFilterName, FlowFilter, FlowFilterName
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from flows.judge import judge
    from flows.nightly import StageFailed, stage

    data = tmp_path / "data"
    Lake(data).init()
    profile = tmp_path / "deployed.yaml"
    profile.write_text(yaml.safe_dump({
        "extends": str(PROJECT_ROOT / "configs" / "ci.yaml"), "lake": {"data_dir": str(data)},
        "nightly": {"dispatch": "deployments", "iterations": 0, "build_taskset": True}}))
    with webgym_server(data, tmp_path / "server-prefect", profile) as server:
        api_url = server.api_url
        # Another PREFECT_HOME than the server's: the stage's report is read from where the run wrote it.
        env = {**os.environ, "PREFECT_API_URL": api_url, "PREFECT_HOME": str(tmp_path / "nightly-prefect"),
               "COLUMNS": "200"}
        nightly = subprocess.run([sys.executable, "-m", "webgym.cli", "--config", str(profile), "nightly"],
                                 env=env, capture_output=True, text=True, timeout=150)
        assert nightly.returncode == 0, nightly.stdout + nightly.stderr
        with temporary_settings(updates={PREFECT_API_URL: api_url}):
            with get_client(sync_client=True) as client:
                runs = client.read_flow_runs(deployment_filter=DeploymentFilter(
                    name=DeploymentFilterName(any_=["build_taskset"])))
                nightlies = client.read_flow_runs(flow_filter=FlowFilter(name=FlowFilterName(any_=["nightly"])))
            assert [run.state.type.value for run in runs] == ["COMPLETED"]
            assert runs[0].parent_task_run_id is not None  # linked under the nightly run as a subflow
            # The run started from the command line, not one of the deployment's scheduled ones.
            assert [run.state.type.value for run in nightlies if run.deployment_id is None] == ["COMPLETED"]
            with pytest.raises(StageFailed, match=r"stage judge: deployment run \S+ \([0-9a-f-]+\) ended FAILED"):
                stage("deployments", judge, iteration=0, config_path=str(tmp_path / "missing.yaml"))
    tasks = Lake(data).read_table("tasks")
    assert len(tasks) and set(tasks["split"]) >= {"train", "test"}
