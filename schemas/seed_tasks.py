"""seed_tasks: one row per task as found in a source benchmark (or a synthetic-site goal)."""

from __future__ import annotations

import datetime as dt

from pydantic import BaseModel, Field

from schemas.rubric import Rubric
from schemas.table import TableSchema


class SeedTask(BaseModel):
    source: str = Field(description="Adapter that read it: webvoyager, webarena, synthetic, ...")
    source_id: str = Field(description="The record's id in its source (or file:line when it has none).")
    text: str = Field(description="The task instruction as the source states it.")
    website: str | None = Field(default=None, description="Host name of the target website, when given.")
    start_url: str | None = Field(default=None, description="URL the episode starts from, when given.")
    reference_answer: str | None = Field(default=None, description="The source's reference answer.")
    evaluation: str | None = Field(
        default=None, description="The source's evaluation block as JSON (e.g. WebArena 'eval').")
    rubric: Rubric | None = Field(default=None, description="Fact groups shipped by the source.")
    domain: str | None = Field(default=None, description="Domain given by the source.")
    subdomain: str | None = Field(default=None, description="Subdomain given by the source.")
    source_difficulty: str | None = Field(default=None, description="The source's own difficulty label.")
    source_file: str | None = Field(default=None, description="File the record was read from.")
    source_line: int | None = Field(default=None, description="Line (JSONL/CSV) or index (JSON array).")
    raw: str = Field(description="The record exactly as read, as JSON.")
    ingested_at: dt.datetime = Field(description="When the record was ingested (UTC).")


SCHEMA = TableSchema(
    name="seed_tasks", row=SeedTask, keys=("source", "source_id"),
    description="One row per task as found in a source benchmark or a synthetic-site goal.")
