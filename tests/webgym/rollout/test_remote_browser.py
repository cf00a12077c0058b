"""Scale-out browsers: a shard runs its episodes on a Playwright browser server over `connect`."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from schemas.tasks import Task
from tests.conftest import NOW, rows
from webgym.config import load_config, replaced
from webgym.lake import Lake
from webgym.rollout.runner import rollout_tasks
from webgym.sites.site import load_sites
from webgym.sites.tasks import task_record
from webgym.sites.verify import verify


@pytest.fixture
def browser_server():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    # Its own process group: the command runs Playwright's node driver as a child, which would outlive it (and
    # which stops on SIGINT, not on SIGTERM).
    server = subprocess.Popen([sys.executable, "-m", "playwright", "run-server", "--unsafe", "--host", "127.0.0.1",
                               "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with socket.socket() as client:
            if client.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.2)
    yield f"ws://127.0.0.1:{port}/"
    os.killpg(server.pid, signal.SIGINT)
    server.wait(timeout=10)


@pytest.mark.slow
def test_shard_runs_on_a_remote_browser_server(browser_server, tmp_path):
    config = load_config(data_dir=str(tmp_path / "data"))
    config = config.model_copy(update={"env": replaced(config.env, browser_endpoint=browser_server),
                                       "policy": replaced(config.policy, kind="oracle")})
    site = load_sites(names=["recipes-a"])["recipes-a"]
    record = task_record(site, site.spec.goals[0])
    task = Task(task_id=record["source_id"], source="synthetic", source_id=record["source_id"], text=record["text"],
                website=record["hostname"], start_url=record["start_url"], difficulty=record["difficulty"],
                split="train", rubric=record["rubric"], created_at=NOW)
    summary = asyncio.run(rollout_tasks(rows([task]), config, iteration=0, run_key="remote"))
    assert summary.terminations == {"answered": 1}
    (trajectory,) = Lake(tmp_path / "data").read_table("trajectories").itertuples()
    assert verify(record["rubric"], trajectory.final_state, trajectory.answer).success
