"""The code's commit, which every flow run records (schemas/runs.py) so results name the code that made them."""

from __future__ import annotations

import subprocess

from webgym.config import project_path


def commit() -> str:
    """The checkout's commit (`git describe --always --dirty`: `-dirty` when files changed since)."""
    try:
        done = subprocess.run(["git", "-C", str(project_path(".")), "describe", "--always", "--dirty", "--abbrev=12"],
                              capture_output=True, text=True, timeout=30, check=True)
    except (OSError, subprocess.SubprocessError):
        return "unknown (not a git checkout)"
    return done.stdout.strip()
