"""Starting `webgym server` for a test: free ports, the Prefect API healthy and the 7 deployments
registered before the test goes on, SIGTERM and the whole output collected afterwards."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from webgym.ports import free_port


@dataclass
class RunningServer:
    """A `webgym server` process; `output` is filled in once it has stopped."""

    api_url: str
    port: int
    reports_url: str
    """Where it serves the lake's reports folder."""
    process: subprocess.Popen
    output: str = ""


@contextmanager
def webgym_server(data: Path, home: Path, profile: Path | None = None) -> Iterator[RunningServer]:
    """`webgym server` on a free port with its deployments registered, PREFECT_HOME at `home`."""
    from prefect import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings

    port, reports_port = free_port(), free_port()
    api_url = f"http://127.0.0.1:{port}/api"
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env.update(PREFECT_HOME=str(home), COLUMNS="200")
    config = ["--config", str(profile)] if profile else []
    process = subprocess.Popen([sys.executable, "-m", "webgym.cli", *config, "--data-dir", str(data), "server",
                                "--port", str(port), "--reports-port", str(reports_port), "--poll-seconds", "1"],
                               env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    server = RunningServer(api_url, port, f"http://127.0.0.1:{reports_port}/", process)
    try:
        deadline = time.monotonic() + 300  # a loaded 2-core machine needs minutes
        while True:
            assert process.poll() is None, process.stdout.read()
            try:
                if httpx.get(f"{api_url}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "server not healthy within 300 s"
            time.sleep(0.5)
        with temporary_settings(updates={PREFECT_API_URL: api_url}), get_client(sync_client=True) as client:
            while len(client.read_deployments()) < 7:  # registered just after the API is up
                assert time.monotonic() < deadline, "deployments not registered within 300 s"
                time.sleep(0.5)
        yield server
    finally:
        process.send_signal(signal.SIGTERM)
        server.output = process.communicate(timeout=60)[0]
