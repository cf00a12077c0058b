"""nightly.dispatch: deployments: the nightly run starts its stages as deployment runs on a Prefect server
(`webgym server` here), waits for them, reads their reports back, and a failed stage run stops it by name."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
import yaml

from webgym import PROJECT_ROOT
from webgym.lake import Lake
from webgym.server_cli import free_port


@contextmanager
def webgym_server(profile: Path, data: Path, home: Path) -> Iterator[str]:
    """`webgym server` on a free port with its 7 deployments registered; yields the API URL."""
    from prefect import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings

    port = free_port()
    api_url = f"http://127.0.0.1:{port}/api"
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env.update(PREFECT_HOME=str(home), COLUMNS="200")
    server = subprocess.Popen([sys.executable, "-m", "webgym.cli", "--config", str(profile), "--data-dir", str(data),
                               "server", "--port", str(port), "--poll-seconds", "1"], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 120
        while True:
            assert server.poll() is None, server.stdout.read()
            try:
                if httpx.get(f"{api_url}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "server not healthy within 120 s"
            time.sleep(0.5)
        with temporary_settings(updates={PREFECT_API_URL: api_url}), get_client(sync_client=True) as client:
            while len(client.read_deployments()) < 7:
                assert time.monotonic() < deadline, "deployments not registered within 120 s"
                time.sleep(0.5)
        yield api_url
    finally:
        server.send_signal(signal.SIGTERM)
        server.communicate(timeout=60)


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
    with webgym_server(profile, data, tmp_path / "server-prefect") as api_url:
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
