"""What the test split holds out, in one definition for the stages that must not learn from it and the
checks that look for leaks: the test tasks' websites in the project's own worlds, their task families in an
external world (EXTERNAL_SOURCES: MiniWoB++ serves every family from one website, so the website would hold
its train tasks out too)."""

from __future__ import annotations

import pandas as pd

from schemas.values import EXTERNAL_SOURCES


def test_lines(tasks: pd.DataFrame) -> tuple[set[str], set[str]]:
    """(websites, families) of the test tasks: the websites of own-world ones, the families of external ones."""
    test = tasks[tasks["split"] == "test"]
    external = test["source"].isin(EXTERNAL_SOURCES)
    return set(test.loc[~external, "website"].dropna()), set(test.loc[external, "family"].dropna())
