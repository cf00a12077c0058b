"""Which revision of each seed task the task set uses.

A source's task can come in several revisions (seed_tasks.revision: 1, 2, ... in the order they were
ingested; e.g. FARA's re-worded WebVoyager texts beside the original ones). Revisions are ordered by
publication (seed_tasks.published: the source's own date; undated ones first), and by ingest order
among equally dated ones, so ingesting an old file after a new one does not make the old texts
current. Dedup, annotation and the split see one revision per (source, source_id): the newest by
default, the first (the benchmark as first published, for comparisons with published results), or
all of them.
"""

from __future__ import annotations

import pandas as pd

from schemas.values import WhichRevision


def revision_numbers(frame: pd.DataFrame) -> pd.Series:
    """Each row's revision; rows written before revisions were kept (null) are the first."""
    if "revision" not in frame.columns:
        return pd.Series(1, index=frame.index, dtype="int64")
    return frame["revision"].fillna(1).astype("int64")


def publication_order(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows of `frame` (one source's task revisions, or many) sorted oldest first within each
    (source, source_id): by publication date (undated first), then by revision."""
    published = (pd.to_datetime(frame["published"], utc=True) if "published" in frame.columns
                 else pd.Series(pd.NaT, index=frame.index, dtype="datetime64[ns, UTC]"))
    keys = pd.DataFrame({"source": frame["source"], "source_id": frame["source_id"],
                         "dated": published.notna(), "published": published, "revision": revision_numbers(frame)})
    order = keys.sort_values(["source", "source_id", "dated", "published", "revision"], kind="stable").index
    return frame.loc[order]


def chosen_revisions(frame: pd.DataFrame, which: WhichRevision = "newest") -> pd.DataFrame:
    """The rows of `frame` (seed_tasks, or tasks: decomposed tasks follow their parent) of the chosen
    revision of each (source, source_id), in their order in `frame`; all rows for `all`."""
    if which == "all" or frame.empty:
        return frame
    decomposed = frame["parent_task_id"].notna() if "parent_task_id" in frame.columns else \
        pd.Series(False, index=frame.index)
    originals = publication_order(frame[~decomposed])
    grouped = originals.groupby([originals["source"], originals["source_id"]], sort=False)
    chosen = (grouped.tail(1) if which == "newest" else grouped.head(1)).index
    kept = frame.loc[frame.index.isin(chosen)]
    if not decomposed.any():
        return kept
    children = frame[decomposed & frame["parent_task_id"].isin(set(kept["task_id"]))]
    return frame.loc[frame.index.isin(kept.index) | frame.index.isin(children.index)]
