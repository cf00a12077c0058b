"""Prefect settings the project needs, applied before Prefect is imported.

Prefect reads its settings from the environment once, at import; these defaults keep it local
(ephemeral server, one PREFECT_HOME per project) and off the network, and send the run logs of
Prefect and of the project's own loggers (webgym.logs) to the API at INFO, so every run's Logs tab in
the UI shows its stages' counts, progress and errors. A value the user has already set wins.
"""

from __future__ import annotations

import atexit
import logging
import os
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from webgym.config import project_path
from webgym.logs import PROJECT_LOGGERS, set_levels
from webgym.ports import HOST, free_port

DEFAULTS: dict[str, str] = {
    "DO_NOT_TRACK": "1",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "60",
    "PREFECT_LOGGING_LEVEL": "INFO",
    "PREFECT_LOGGING_TO_API_ENABLED": "true",
    "PREFECT_LOGGING_EXTRA_LOGGERS": ",".join(PROJECT_LOGGERS),
    # The project's loggers also log outside runs (e.g. `webgym sql`): nothing to send, no warning.
    "PREFECT_LOGGING_TO_API_WHEN_MISSING_FLOW": "ignore",
}

SERVER_ENV = {"PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1", "PREFECT__SERVER_FINAL": "1"}
"""What Prefect's SubprocessASGIServer adds to the temporary server's environment (no UI; the server's own
ephemeral mode)."""
UVICORN_STARTUP_FAILURE = 3
"""uvicorn's exit status when it cannot start: the port was taken after it was chosen (try another), or the
application itself failed (hence only PORT_TRIES tries)."""
PORT_TRIES = 3


def configure_prefect(home: Path | None = None) -> Path:
    """Set Prefect's environment defaults and the log levels (webgym.logs); return the PREFECT_HOME in force.

    Also run by the processes that execute served runs (flows/__init__), whose loggers Prefect set up."""
    os.environ.setdefault("PREFECT_HOME", str(home or project_path(".prefect")))
    for key, value in DEFAULTS.items():
        os.environ.setdefault(key, value)
    if not logging.getLogger(PROJECT_LOGGERS[0]).level:  # the CLI's -v set them already
        set_levels()
    return Path(os.environ["PREFECT_HOME"])


@contextmanager
def api_starting() -> Iterator[None]:
    """Start a temporary Prefect API server while the block runs (a command imports its flow there); after the
    block, this process's flows use it.

    Prefect starts its temporary server only when the flow first asks for a client: after the flow's imports
    instead of beside them, and only after importing its whole server application (2 s of this process's CPU)
    to build one command line. Here a thread runs that command line (what prefect.server.api.server's
    SubprocessASGIServer runs) as soon as Prefect's settings are loaded, and waits for the server to answer.
    Leaving the block points PREFECT_API_URL at it for the rest of this process and the processes it starts
    (a command runs one flow, then exits). The server stops when the process exits, after Prefect's log and
    event workers have drained. Nothing starts when an API URL is configured; if the server cannot start,
    nothing is pointed at it and the flow's own start of Prefect's server reports the error."""
    started: list[str] = []
    abandon = threading.Event()

    def start() -> None:
        url = _start_temporary_api(abandon)
        if url:
            started.append(url)

    thread = threading.Thread(target=start, name="prefect-api-start", daemon=True)
    thread.start()
    try:
        yield
    except BaseException:  # e.g. Ctrl-C during the imports: no server for a command that is ending
        abandon.set()
        raise
    finally:
        thread.join()
    if started:
        from prefect.context import refresh_global_settings_context

        os.environ["PREFECT_API_URL"] = started[0]
        refresh_global_settings_context()


def _start_temporary_api(abandon: threading.Event) -> str | None:
    """The API URL of a temporary server that answers; None when none is needed, it did not start, or `abandon`
    was set."""
    try:
        from prefect.settings import (
            PREFECT_API_URL,
            PREFECT_SERVER_EPHEMERAL_ENABLED,
            PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS,
            get_current_settings,
        )

        if PREFECT_API_URL.value() or not PREFECT_SERVER_EPHEMERAL_ENABLED.value():
            return None
        env = {**os.environ, **SERVER_ENV, **get_current_settings().to_environment_variables(exclude_unset=True)}
        deadline = time.monotonic() + PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS.value()
        for _ in range(PORT_TRIES):
            server, url = _spawn(env)
            if _answered(server, f"{url}/health", deadline, abandon):
                return url
            if server.poll() != UVICORN_STARTUP_FAILURE:  # timed out, abandoned or failed otherwise
                _stop(server)
                return None
    except Exception as error:  # noqa: BLE001 - the flow's own start raises it where the user sees it
        logging.getLogger(__name__).debug("early start of Prefect's temporary API failed: %s", error)
    return None


def _spawn(env: dict[str, str]) -> tuple[subprocess.Popen, str]:
    """Prefect's temporary server on a free port, stopped when this process exits; (process, API URL)."""
    import prefect

    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "uvicorn", "--app-dir", str(prefect.__module_path__.parent),
                               "--factory", "prefect.server.api.server:create_app", "--host", HOST,
                               "--port", str(port), "--log-level", "error", "--lifespan", "on"], env=env)
    atexit.register(_stop, server)
    return server, f"http://{HOST}:{port}/api"


def _answered(server: subprocess.Popen, health_url: str, deadline: float, abandon: threading.Event) -> bool:
    """Whether the server answered its health check before it exited, the deadline passed or `abandon` was set."""
    while time.monotonic() < deadline and server.poll() is None and not abandon.is_set():
        try:
            with urllib.request.urlopen(health_url, timeout=5) as response:
                if response.status == 200:
                    return True
        except OSError:  # refused while it starts (URLError is an OSError)
            pass
        abandon.wait(0.1)
    return False


def _stop(server: subprocess.Popen) -> None:
    """Stop the temporary server as Prefect stops its own: terminate, then kill after 5 s."""
    if server.poll() is not None:
        return
    server.terminate()
    try:
        server.wait(timeout=5)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()
