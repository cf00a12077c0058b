"""Prefect's temporary API started early, beside a command's imports (webgym.prefect_env.api_starting)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

PROBE = """
from webgym.prefect_env import api_starting, configure_prefect
configure_prefect()
with api_starting():
    pass
import os, sys, httpx
from pathlib import Path
from prefect.settings import PREFECT_API_URL
url = PREFECT_API_URL.value()
def parent(stat):
    try:
        return stat.read_text().rsplit(")", 1)[1].split()[1]
    except OSError:  # gone meanwhile
        return None
children = [p for p in Path("/proc").glob("[0-9]*/stat") if parent(p) == str(os.getpid())]
print(url, url == os.environ["PREFECT_API_URL"], len(children), "prefect.server.api.server" in sys.modules)
if children:
    print(httpx.get(url + "/health").status_code)
"""


def _probe(tmp_path, **env: str) -> list[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=180,
                          env={**clean, "PREFECT_HOME": str(tmp_path / "prefect"), **env})
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


@pytest.mark.slow
def test_leaving_the_block_points_prefect_at_a_temporary_api_that_answers(tmp_path):
    url, in_environment, children, server_imported, health = _probe(tmp_path)
    assert url.startswith("http://127.0.0.1:") and in_environment == "True" and children == "1" and health == "200"
    # Prefect's own start would import its whole server application into this process.
    assert server_imported == "False"


def test_nothing_starts_when_an_api_url_is_configured(tmp_path):
    assert _probe(tmp_path, PREFECT_API_URL="http://127.0.0.1:9/api") == ["http://127.0.0.1:9/api", "True", "0",
                                                                          "False"]
