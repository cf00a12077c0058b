"""Prefect settings the project needs, applied before Prefect is imported.

Prefect reads its settings from the environment once, at import; these defaults keep it local
(ephemeral server, one PREFECT_HOME per project), quiet and off the network. A value the user has
already set wins.
"""

from __future__ import annotations

import os
from pathlib import Path

from webgym.config import project_path

DEFAULTS: dict[str, str] = {
    "DO_NOT_TRACK": "1",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "60",
    "PREFECT_LOGGING_LEVEL": "WARNING",
    "PREFECT_LOGGING_TO_API_ENABLED": "false",
}


def configure_prefect(home: Path | None = None) -> Path:
    """Set Prefect's environment defaults; return the PREFECT_HOME in force."""
    os.environ.setdefault("PREFECT_HOME", str(home or project_path(".prefect")))
    for key, value in DEFAULTS.items():
        os.environ.setdefault(key, value)
    return Path(os.environ["PREFECT_HOME"])
