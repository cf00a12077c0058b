"""checkpoints: one row per trained model."""

from __future__ import annotations

import datetime as dt

from pydantic import Field

from schemas.table import Row, TableSchema, flow_run_field


class Checkpoint(Row):
    checkpoint_id: str = Field(description="Unique name of the checkpoint.")
    iteration: int = Field(ge=0, description="Iteration that trained it.")
    path: str = Field(description="Directory in Hugging Face layout (or the policy's own format).")
    base: str | None = Field(default=None, description="Checkpoint or model it started from.")
    objective: str = Field(description="Objective trained with.")
    metrics: dict[str, float] = Field(description="Final training metrics, e.g. train/loss.")
    created_at: dt.datetime = Field(description="When it was saved (UTC).")
    flow_run_id: str | None = flow_run_field()


SCHEMA = TableSchema(
    name="checkpoints", row=Checkpoint, keys=("checkpoint_id",),
    description="One row per trained model.")
