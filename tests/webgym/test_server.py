"""`webgym server`: the deployments are listed through the Prefect API, a run triggered through the API
completes on this machine, nightly carries its schedule, and stopping it leaves no process behind."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import httpx
import psutil
import pytest

from webgym.lake import Lake
from webgym.server_cli import free_port


@pytest.mark.slow
def test_webgym_server_serves_the_deployments_and_runs_one_triggered_through_the_api(tmp_path):
    from prefect import get_client
    from prefect.deployments import run_deployment
    from prefect.settings import PREFECT_API_URL, temporary_settings

    Lake(tmp_path / "data").init()
    port = free_port()
    api_url = f"http://127.0.0.1:{port}/api"
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env.update(PREFECT_HOME=str(tmp_path / "prefect"), COLUMNS="200")
    server = subprocess.Popen([sys.executable, "-m", "webgym.cli", "--data-dir", str(tmp_path / "data"), "server",
                               "--port", str(port), "--poll-seconds", "1"], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
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
        with temporary_settings(updates={PREFECT_API_URL: api_url}):
            with get_client(sync_client=True) as client:
                for _ in range(120):  # the deployments are registered just after the API is up
                    deployments = {d.name: d for d in client.read_deployments()}
                    if len(deployments) == 7:
                        break
                    time.sleep(0.5)
            assert set(deployments) == {"build_taskset", "rollout", "judge", "train", "serve", "evaluate", "nightly"}
            assert [s.schedule.cron for s in deployments["nightly"].schedules] == ["0 2 * * *"]
            assert deployments["judge"].parameters["data_dir"] == str(tmp_path / "data")
            run = run_deployment("judge/judge", parameters={"iteration": 0}, timeout=120)
        assert run.state.is_completed(), run.state
        children = psutil.Process(server.pid).children(recursive=True)
        assert children, "the Prefect server runs in a child process"
    finally:
        server.send_signal(signal.SIGTERM)
        output = server.communicate(timeout=60)[0]
    assert f"Prefect UI: http://127.0.0.1:{port}" in output and "nightly/nightly (cron 0 2 * * * UTC)" in output
    assert not [c for c in children if c.is_running() and c.status() != psutil.STATUS_ZOMBIE]


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
