"""`webgym server`: the deployments are listed through the Prefect API, a run triggered through the API
completes on this machine, nightly carries its schedule, and stopping it leaves no process behind and
prints no warning."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import psutil
import pytest

from tests.prefect_server import webgym_server
from webgym.lake import Lake


@pytest.mark.slow
def test_webgym_server_serves_the_deployments_and_runs_one_triggered_through_the_api(tmp_path):
    from prefect import get_client
    from prefect.deployments import run_deployment
    from prefect.settings import PREFECT_API_URL, temporary_settings

    Lake(tmp_path / "data").init()
    with webgym_server(tmp_path / "data", tmp_path / "prefect") as server:
        with temporary_settings(updates={PREFECT_API_URL: server.api_url}):
            with get_client(sync_client=True) as client:
                deployments = {d.name: d for d in client.read_deployments()}
            assert set(deployments) == {"build_taskset", "rollout", "judge", "train", "serve", "evaluate", "nightly"}
            assert [s.schedule.cron for s in deployments["nightly"].schedules] == ["0 2 * * *"]
            assert deployments["judge"].parameters["data_dir"] == str(tmp_path / "data")
            run = run_deployment("serve/serve", parameters={"checkpoint": "no-server-needed"}, timeout=120)
        assert run.state.is_completed(), run.state
        children = psutil.Process(server.process.pid).children(recursive=True)
        assert children, "the Prefect server runs in a child process"
    assert f"Prefect UI: http://127.0.0.1:{server.port}" in server.output
    assert "nightly/nightly (cron 0 2 * * * UTC)" in server.output
    assert not [c for c in children if c.is_running() and c.status() != psutil.STATUS_ZOMBIE]
    assert "Warning" not in server.output and "Traceback" not in server.output, server.output


def test_a_port_in_use_is_named_instead_of_answering_for_another_server(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run([sys.executable, "-m", "webgym.cli", "--data-dir", str(tmp_path), "server", "--port",
                                 str(port)], env={**os.environ, "PREFECT_HOME": str(tmp_path / "prefect"),
                                                  "COLUMNS": "200"}, capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert f"port {port} on 127.0.0.1 is in use" in result.stderr
