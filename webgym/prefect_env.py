"""Prefect settings the project needs, applied before Prefect is imported.

Prefect reads its settings from the environment once, at import; these defaults keep it local
(ephemeral server, one PREFECT_HOME per project) and off the network, and send the run logs of
Prefect and of the project's own loggers (webgym.logs) to the API at INFO, so every run's Logs tab in
the UI shows its stages' counts, progress and errors. A value the user has already set wins.
"""

from __future__ import annotations

import logging
import os
import threading
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
    """Start Prefect's temporary API server in a thread while the block runs (a command imports its flow there).

    The server is a subprocess that takes 3-5 s to answer; started only when the flow first asks for a client, it
    waits after the flow's imports instead of beside them, on the other core. Leaving the block waits for the server,
    so the flow finds it running. Nothing starts when an API URL is configured; if the early start fails, the flow's
    own start tries again and reports the error."""
    thread = threading.Thread(target=_start_temporary_api, name="prefect-api-start", daemon=True)
    thread.start()
    try:
        yield
    finally:
        thread.join()


def _start_temporary_api() -> None:
    """What prefect.get_client does first when no API URL is set (prefect/client/orchestration)."""
    try:
        from prefect.settings import PREFECT_API_URL, PREFECT_SERVER_EPHEMERAL_ENABLED

        if PREFECT_API_URL.value() or not PREFECT_SERVER_EPHEMERAL_ENABLED.value():
            return
        from prefect.server.api.server import SubprocessASGIServer

        SubprocessASGIServer().start()
    except Exception as error:  # noqa: BLE001 - the flow's own start raises it where the user sees it
        logging.getLogger(__name__).debug("early start of Prefect's temporary API failed: %s", error)
