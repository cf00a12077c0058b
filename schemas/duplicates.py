"""duplicates: one row per seed task dropped by dedup, with the task it duplicates and how similar."""

from __future__ import annotations

import datetime as dt
from typing import Literal

from pydantic import Field

from schemas.table import Row, TableSchema, flow_run_field


class Duplicate(Row):
    source: str = Field(description="Source of the dropped task (seed_tasks.source).")
    source_id: str = Field(description="Id of the dropped task in its source (seed_tasks.source_id).")
    duplicate_of_source: str = Field(description="Source of the kept task it duplicates.")
    duplicate_of_source_id: str = Field(description="Id of the kept task it duplicates.")
    kind: Literal["exact", "near", "eval_overlap"] = Field(
        description="exact: same normalised text; near: embedding similarity at or above the threshold; "
                    "eval_overlap: a training task near a task of a named evaluation benchmark.")
    similarity: float = Field(ge=-1.0, le=1.0, description="Cosine similarity of the two texts (1 for exact).")
    threshold: float = Field(description="Threshold in force when it was dropped.")
    detected_at: dt.datetime = Field(description="When dedup dropped it (UTC).")
    flow_run_id: str | None = flow_run_field()
    revision: int | None = Field(
        default=None, ge=1,
        description="Revision of the dropped task (seed_tasks.revision): a later revision is judged afresh. Null in "
                    "rows written before revisions were kept: read as 1.")


SCHEMA = TableSchema(
    name="duplicates", row=Duplicate, keys=("source", "source_id", "revision"),
    description="One row per seed task dropped by dedup, with the kept task it duplicates.")
