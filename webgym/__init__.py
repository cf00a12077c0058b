"""WebGym pipeline runtime: config, lake, warehouse, quality suites and the CLI."""

from __future__ import annotations

from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
"""The checkout this package runs from (the directory holding pyproject.toml)."""
