"""Which revision of each seed task the task set uses.

A source's task can come in several revisions (seed_tasks.revision: 1, 2, ...; e.g. FARA's re-worded
WebVoyager texts after the original ones). Dedup, annotation and the split see one revision per
(source, source_id): the newest by default, the first (the benchmark as first published, for
comparisons with published results), or all of them.
"""

from __future__ import annotations

import pandas as pd

from schemas.values import WhichRevision


def revision_numbers(frame: pd.DataFrame) -> pd.Series:
    """Each row's revision; rows written before revisions were kept (null) are the first."""
    if "revision" not in frame.columns:
        return pd.Series(1, index=frame.index, dtype="int64")
    return frame["revision"].fillna(1).astype("int64")


def chosen_revisions(frame: pd.DataFrame, which: WhichRevision = "newest") -> pd.DataFrame:
    """The rows of `frame` (seed_tasks, or tasks: decomposed tasks follow their parent) of the chosen
    revision of each (source, source_id); all rows for `all`."""
    if which == "all" or frame.empty:
        return frame
    decomposed = frame["parent_task_id"].notna() if "parent_task_id" in frame.columns else \
        pd.Series(False, index=frame.index)
    originals = frame[~decomposed]
    numbers = revision_numbers(originals)
    grouped = numbers.groupby([originals["source"], originals["source_id"]])
    best = grouped.transform("max" if which == "newest" else "min")
    kept = originals[numbers == best]
    if not decomposed.any():
        return kept
    children = frame[decomposed & frame["parent_task_id"].isin(set(kept["task_id"]))]
    return frame.loc[frame.index.isin(kept.index) | frame.index.isin(children.index)]
