"""Prefect's temporary API started early, beside a command's imports (webgym.prefect_env.api_starting)."""

from __future__ import annotations

import os
import subprocess
import sys

PROBE = """
from webgym.prefect_env import api_starting, configure_prefect
configure_prefect()
with api_starting():
    pass
from prefect.server.api.server import SubprocessASGIServer
import httpx
server = SubprocessASGIServer()
print(server.running, server.running and httpx.get(server.api_url + "/health").status_code)
"""


def _probe(tmp_path, **env: str) -> list[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=180,
                          env={**clean, "PREFECT_HOME": str(tmp_path / "prefect"), **env})
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_leaving_the_block_finds_the_temporary_api_answering(tmp_path):
    assert _probe(tmp_path) == ["True", "200"]


def test_nothing_starts_when_an_api_url_is_configured(tmp_path):
    assert _probe(tmp_path, PREFECT_API_URL="http://127.0.0.1:9/api") == ["False", "False"]
