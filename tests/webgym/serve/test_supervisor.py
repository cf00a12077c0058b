"""The server supervisor keeps track of the server it started when the wall clock is stepped (NTP), and
stopping a server this process started never waits on a process it failed to signal."""

from __future__ import annotations

import dataclasses
import json
import threading

import pytest

from webgym.config import ServeConfig
from webgym.ports import free_port
from webgym.serve import supervisor

SLEEPER = "{python} -c \"import time; time.sleep(600)\" {checkpoint} {name}"


@pytest.fixture
def started(tmp_path):
    config = ServeConfig(command=SLEEPER, port=free_port(), state_dir=str(tmp_path / "serve"), stop_grace_s=5)
    state, popen = supervisor.start(config, "/models/it-1", "it-1")
    yield config, state, popen
    popen.kill()
    popen.wait()


def test_the_server_is_still_known_after_the_wall_clock_steps(started):
    _, state, popen = started
    stepped = dataclasses.replace(state, create_time=state.create_time + 10.0)  # what psutil reports then
    assert supervisor.process_of(stepped).pid == popen.pid
    assert supervisor.process_of(dataclasses.replace(stepped, since_boot=state.since_boot + 10.0)) is None


def test_stopping_a_server_started_here_ends_it_even_when_its_state_file_no_longer_identifies_it(started):
    config, state, popen = started
    path = supervisor.state_dir(config) / supervisor.STATE_FILE
    old = {**dataclasses.asdict(state), "create_time": state.create_time + 10.0}  # a stepped clock, no since_boot
    del old["since_boot"]
    path.write_text(json.dumps(old))
    stopping = threading.Thread(target=supervisor.stop, args=(config,), daemon=True)
    stopping.start()
    stopping.join(timeout=30)
    assert not stopping.is_alive() and popen.poll() is not None
    assert not path.exists()
