"""mkdocs hook: the build fails when docs/configuration.md is not what the config models render.

The reference is generated from webgym/config/ (webgym/config/reference.py); committing the page keeps it
readable on GitHub, and this check keeps it from drifting: `python -m webgym.config.reference --write`
brings it up to date.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError

ROOT = Path(__file__).resolve().parents[1]


def on_pre_build(config: Any) -> None:
    """Compare the committed page with a fresh rendering of the checkout's config models."""
    if str(ROOT) not in sys.path:   # this checkout's webgym, not whichever one the venv installed
        sys.path.insert(0, str(ROOT))
    from webgym.config.reference import PAGE, render

    if PAGE.read_text(encoding="utf-8") != render():
        raise PluginError(f"{PAGE.relative_to(ROOT)} differs from the config models in webgym/config/: "
                          "run `python -m webgym.config.reference --write` and commit it")
