"""Values that columns take and that the configuration, stages and views share: difficulty bands and
horizons, the judges' order of authority, the external worlds' sources, and what a website is (the
`website` column's host name). Importable without pandas."""

from __future__ import annotations

import re
import urllib.parse
from typing import Any, Literal

DIFFICULTY_BANDS: dict[str, tuple[int, int | None]] = {"easy": (1, 3), "medium": (4, 6), "hard": (7, None)}
"""WebGym's bands over the number of facts; the upper bound is inclusive, None means open."""

HORIZONS: dict[str, int] = {"easy": 10, "medium": 20, "hard": 30}
"""WebGym's shortened step limits per band: an episode's horizon, and the longest shortest path a
synthetic goal of that band may have."""

JUDGE_PRIORITY: tuple[str, ...] = ("gate", "exact", "reference", "rubric", "webjudge", "task_only")
"""Which judge is authoritative for the verdicts view, first wins: a rule gate disqualifies
before any verifier or judge is asked, then exact verifier > reference answer > rubric judge."""


EXTERNAL_SOURCES: frozenset[str] = frozenset({"miniwob"})
"""Sources of an external world (pages this project did not write, MiniWoB++): its tasks are test tasks held
out as `external`, or train tasks of other task families; one host serves all its pages, so its test line is
drawn by task family (the `family` column), not by website."""


def difficulty_band(difficulty: int) -> str:
    """Band name for a difficulty (number of facts)."""
    for band, (low, high) in DIFFICULTY_BANDS.items():
        if difficulty >= low and (high is None or difficulty <= high):
            return band
    raise ValueError(f"difficulty {difficulty} is below every band (must be >= 1)")


WhichRevision = Literal["newest", "first", "all"]
"""Which revision of each seed task the task set uses (seed_tasks.revision): the newest, the first (the
benchmark as first published), or all of them."""


_PLACEHOLDER = re.compile(r"^(__[A-Z0-9_]+__)")


def website_of(value: Any) -> str | None:
    """Host name of a URL or bare domain, lower-cased, without port or a leading 'www.'.

    WebArena's placeholder hosts (`__SHOPPING__/...`) are kept as the token itself, so the split
    still sees one website per placeholder.
    """
    if not isinstance(value, str) or not value.strip():
        return None
    value = value.strip()
    placeholder = _PLACEHOLDER.match(value)
    if placeholder:
        return placeholder.group(1)
    parts = urllib.parse.urlsplit(value if "//" in value else f"//{value}")
    host = (parts.hostname or "").rstrip(".")
    if "." not in host and host != "localhost":
        return None
    return host.removeprefix("www.")
