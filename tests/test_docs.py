"""The docs site builds strictly: no broken link or anchor, no page outside the nav, and a configuration
reference equal to what webgym/config/ renders (docs/hooks.py). CI runs this as part of the test command."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

from webgym import PROJECT_ROOT


def _nav_pages() -> list[str]:
    config = yaml.safe_load((PROJECT_ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    return [page for entry in config["nav"] for page in entry.values()]


def test_mkdocs_build_strict_passes(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT), "NO_MKDOCS_2_WARNING": "1"}
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
                            cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-4000:]
    for page in _nav_pages():
        built = tmp_path / ("index.html" if page == "index.md" else page.removesuffix(".md") + "/index.html")
        assert built.is_file(), f"{page} was not built"


def test_every_page_in_docs_is_in_the_nav() -> None:
    pages = sorted(path.name for path in (PROJECT_ROOT / "docs").glob("*.md"))
    assert sorted(_nav_pages()) == pages
