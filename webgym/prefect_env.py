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
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from webgym.config import project_path
from webgym.logs import PROJECT_LOGGERS, set_levels

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
"""uvicorn's exit status when it cannot start, e.g. the port was taken after it was chosen: try another port."""


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
    SubprocessASGIServer runs) as soon as Prefect's settings are loaded, and waits for the server to answer;
    leaving the block points PREFECT_API_URL at it, for this process and the processes it starts. The server
    stops when the process exits, after Prefect's log and event workers have drained. Nothing starts when an API
    URL is configured; if the server cannot start, nothing is pointed at it and the flow's own start of Prefect's
    server reports the error."""
    started: list[str] = []
    thread = threading.Thread(target=lambda: started.extend(_start_temporary_api()), name="prefect-api-start",
                              daemon=True)
    thread.start()
    try:
        yield
    finally:
        thread.join()
    if started:
        from prefect.context import refresh_global_settings_context

        os.environ["PREFECT_API_URL"] = started[0]
        refresh_global_settings_context()


def _start_temporary_api() -> list[str]:
    """[the API URL of a temporary server that answers], or [] when none is needed or it did not start."""
    try:
        from prefect.settings import (
            PREFECT_API_URL,
            PREFECT_SERVER_EPHEMERAL_ENABLED,
            PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS,
            get_current_settings,
        )

        if PREFECT_API_URL.value() or not PREFECT_SERVER_EPHEMERAL_ENABLED.value():
            return []
        env = {**os.environ, **get_current_settings().to_environment_variables(exclude_unset=True), **SERVER_ENV}
        deadline = time.monotonic() + PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS.value()
        while time.monotonic() < deadline:
            port = _free_port()
            server = subprocess.Popen([sys.executable, "-m", "uvicorn", "--app-dir", str(_site_packages()),
                                       "--factory", "prefect.server.api.server:create_app", "--host", "127.0.0.1",
                                       "--port", str(port), "--log-level", "error", "--lifespan", "on"], env=env)
            atexit.register(_stop, server)
            url = f"http://127.0.0.1:{port}/api"
            while time.monotonic() < deadline and server.poll() is None:
                if _answers(f"{url}/health"):
                    return [url]
                time.sleep(0.1)
            if server.poll() != UVICORN_STARTUP_FAILURE:  # timed out or failed otherwise; another port won't help
                _stop(server)
                return []
    except Exception as error:  # noqa: BLE001 - the flow's own start raises it where the user sees it
        logging.getLogger(__name__).debug("early start of Prefect's temporary API failed: %s", error)
    return []


def _free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _site_packages() -> Path:
    """The folder holding the prefect package (uvicorn's --app-dir, as Prefect passes it)."""
    import prefect

    return Path(prefect.__file__).resolve().parent.parent


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
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
