"""Start, replace and stop the policy server from the profile's command template (the `serve` flow).

The server outlives the flow that started it (rollouts of the next hours use it), so what it is
lives in a state file: pid, process start time, served name, checkpoint, log. The next serve
stops that process (SIGTERM to it and its children, SIGKILL after a grace period) before starting
the new one, and only then waits for the new name at `/v1/models`. The start time guards against
a recycled pid: a process that is not the one started is never signalled.
"""

from __future__ import annotations

import datetime as dt
import json
import shlex
import subprocess
import sys
import time
from collections import deque
from dataclasses import asdict, dataclass
from pathlib import Path

import httpx
import psutil

from webgym.config import ConfigError, ServeConfig

STATE_FILE = "server.json"
LOG_FILE = "server.log"
PREVIOUS_LOG_FILE = "server.previous.log"
LOG_TAIL_LINES = 30

_started: dict[int, subprocess.Popen] = {}
"""Servers this process started, by pid: held while they run (they outlive the call that started them)
and reaped when stopped, so a long-lived worker keeps no zombies."""


class ServeError(RuntimeError):
    """A server did not come up: it exited early or was not serving in time; holds its log's last lines."""


@dataclass(frozen=True)
class ServerState:
    """The server process a serve flow started (the state file's content)."""

    pid: int
    create_time: float
    """The process's start time (psutil): with the pid, identifies it even after the pid is reused."""
    name: str
    checkpoint: str
    base_url: str
    command: list[str]
    log: str
    started_at: str
    since_boot: float | None = None
    """The process's start in seconds since boot, which identifies it like create_time but does not move when
    the wall clock is stepped (NTP): psutil's create_time is the boot time, read from the clock now, plus
    this. None in state files written before it was recorded."""


def _since_boot(process: psutil.Process) -> float:
    return process.create_time() - psutil.boot_time()


def state_dir(config: ServeConfig) -> Path:
    return Path(config.state_dir)


def base_url(config: ServeConfig) -> str:
    """The API root clients use (serve.base_url, else the local port)."""
    return (config.base_url or f"http://127.0.0.1:{config.port}/v1").rstrip("/")


def read_state(config: ServeConfig) -> ServerState | None:
    path = state_dir(config) / STATE_FILE
    if not path.is_file():
        return None
    try:
        return ServerState(**json.loads(path.read_text(encoding="utf-8")))
    except (ValueError, TypeError) as error:
        raise ConfigError(f"serve state file {path} is unreadable ({error}); stop the server it names by hand, "
                          "then delete the file") from None


def process_of(state: ServerState) -> psutil.Process | None:
    """The state's process if it still runs (not a zombie, not a different process with a reused pid)."""
    try:
        process = psutil.Process(state.pid)
        if state.since_boot is not None:
            moved = abs(_since_boot(process) - state.since_boot)
        else:
            moved = abs(process.create_time() - state.create_time)
        if moved > 0.01 or process.status() == psutil.STATUS_ZOMBIE:
            return None
    except psutil.NoSuchProcess:
        return None
    return process


def listed_models(url: str) -> list[str]:
    """Model ids the server at `url` lists; empty when it does not answer (yet)."""
    try:
        response = httpx.get(f"{url}/models", timeout=5.0)
        return [model["id"] for model in response.json()["data"]] if response.status_code == 200 else []
    except (httpx.HTTPError, ValueError, KeyError, TypeError):
        return []


def log_tail(path: str | Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as log:
            return "".join(deque(log, maxlen=lines)).rstrip()
    except FileNotFoundError:
        return "(no log)"


def stop(config: ServeConfig) -> ServerState | None:
    """Stop the server of the state file, if it still runs, and forget it; return what was stopped."""
    state = read_state(config)
    if state is None:
        return None
    process = process_of(state)
    popen = _started.pop(state.pid, None)
    if process is None and popen is not None and popen.poll() is None:
        process = psutil.Process(popen.pid)  # started here and not reaped yet, so its pid is not reused
    if process is not None:
        _terminate(process, config.stop_grace_s)
    if popen is not None:
        popen.wait()
    (state_dir(config) / STATE_FILE).unlink(missing_ok=True)
    return state if process is not None else None


def _terminate(process: psutil.Process, grace_s: float) -> None:
    """SIGTERM the server and its children (vLLM runs engine processes), SIGKILL what outlives the grace."""
    family = [process, *process.children(recursive=True)]
    for member in family:
        try:
            member.terminate()
        except psutil.NoSuchProcess:
            pass
    _, alive = psutil.wait_procs(family, timeout=grace_s)
    for member in alive:
        try:
            member.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(alive, timeout=10)


def start(config: ServeConfig, checkpoint: str, name: str) -> tuple[ServerState, subprocess.Popen]:
    """Launch the command template for `checkpoint` served as `name`, in its own session (it outlives
    the flow and a Ctrl-C of the terminal), output to the log; record it in the state file."""
    if config.command is None:
        raise ConfigError("serve.command is null: nothing to start (set a command template in the profile)")
    values = {"checkpoint": checkpoint, "name": name, "port": config.port, "python": sys.executable}
    # Split first, then fill: a checkpoint path with spaces stays one argument.
    command = [word.format(**values) for word in shlex.split(config.command)]
    directory = state_dir(config)
    directory.mkdir(parents=True, exist_ok=True)
    log_path = directory / LOG_FILE
    if log_path.exists():  # the previous server's log, kept for a post-mortem
        log_path.replace(directory / PREVIOUS_LOG_FILE)
    with open(log_path, "wb") as log:
        try:  # the caller's working directory: a relative checkpoint path means the same to both
            popen = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        except OSError as error:
            raise ServeError(f"serve.command {command[0]!r} could not be started: {error}") from None
    process = psutil.Process(popen.pid)
    state = ServerState(pid=popen.pid, create_time=process.create_time(), name=name, checkpoint=checkpoint,
                        base_url=base_url(config), command=command, log=str(log_path),
                        started_at=dt.datetime.now(dt.UTC).isoformat(), since_boot=_since_boot(process))
    (directory / STATE_FILE).write_text(json.dumps(asdict(state), indent=2) + "\n", encoding="utf-8")
    _started[popen.pid] = popen
    return state, popen


def wait_until_served(config: ServeConfig, state: ServerState, popen: subprocess.Popen) -> float:
    """Seconds until `/v1/models` lists the new name. An early exit or the timeout raises ServeError
    with the log's last lines; on a timeout the half-started server is stopped first."""
    began = time.monotonic()
    while state.name not in listed_models(state.base_url):
        code = popen.poll()
        if code is not None:
            _started.pop(popen.pid, None)
            (state_dir(config) / STATE_FILE).unlink(missing_ok=True)
            raise ServeError(f"the server exited with code {code} before {state.base_url}/models listed "
                             f"{state.name!r}; last lines of {state.log}:\n{log_tail(state.log)}")
        if time.monotonic() - began > config.startup_timeout_s:
            stop(config)
            raise ServeError(f"{state.base_url}/models did not list {state.name!r} within serve.startup_timeout_s="
                             f"{config.startup_timeout_s:g} s (server stopped); last lines of {state.log}:\n"
                             f"{log_tail(state.log)}")
        time.sleep(0.5)
    return time.monotonic() - began


def serving(config: ServeConfig, checkpoint: str, name: str) -> ServerState | None:
    """The running server of the state file when it already serves `checkpoint` as `name` (a rerun has nothing to do)."""
    state = read_state(config)
    if state is None or (state.checkpoint, state.name) != (checkpoint, name) or process_of(state) is None:
        return None
    return state if name in listed_models(state.base_url) else None
