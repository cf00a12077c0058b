"""seed_tasks: one row per task as found in a source benchmark (or a synthetic-site goal)."""

from __future__ import annotations

import datetime as dt

from pydantic import Field

from schemas.rubric import Rubric
from schemas.table import Row, TableSchema, flow_run_field


class SeedTask(Row):
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
    stale_phrase: str | None = Field(
        default=None, description="The date (or time anchored to a year) in the text that had passed on stale_as_of, "
                                  "for a task that plans something then (stages/stale.py); null when none did.")
    stale_as_of: dt.datetime | None = Field(
        default=None, description="The 'as of' date the staleness check used (taskset.stale.as_of); null: unchecked.")
    source_file: str | None = Field(default=None, description="File the record was read from.")
    source_line: int | None = Field(default=None, description="1-based line the record starts on (null in "
                                                               "Parquet files).")
    raw: str = Field(description="The record exactly as read, as JSON.")
    ingested_at: dt.datetime = Field(description="When the record was ingested (UTC).")
    flow_run_id: str | None = flow_run_field()
    # Identity and revisions, and what some sources add (issue 19): kept together.
    revision: int | None = Field(
        default=None, ge=1,
        description="1, 2, ...: the n-th distinct content (text, start URL, evaluation block, reference answer) "
                    "ingested under this source and source_id; a record with a known content is already present. "
                    "The task set uses the newest revision unless taskset.revisions says otherwise. Null in rows "
                    "written before revisions were kept: read as 1.")
    previous_revision: int | None = Field(
        default=None, ge=1,
        description="The revision this record replaces: the newest one held under the same source and source_id "
                    "when it came in (null for a first revision).")
    published: dt.datetime | None = Field(
        default=None,
        description="When the source published this revision (UTC midnight): the record's own date, the date given "
                    "to ingest (--published) or the one in the file name. Which revision is current follows it "
                    "(stages/revisions.py), not the order of ingests; null: undated, older than any dated one.")
    derived_from: str | None = Field(
        default=None,
        description="'<source>/<source_id>' of the task this record revises in another benchmark, e.g. "
                    "WebArena-Lite's old_task_id (a webarena task).")
    reference_length: int | None = Field(
        default=None, ge=0,
        description="Steps a human needed, when the source says (Online-Mind2Web's reference_length, "
                    "Mind2Web-Live's reference_task_length), or a synthetic goal's shortest path.")
    source_record: int | None = Field(
        default=None, ge=1,
        description="1-based position among the elements of a JSON array or the rows of a Parquet file "
                    "(null in line-based files, where source_line alone says where the record is).")


SCHEMA = TableSchema(
    name="seed_tasks", row=SeedTask, keys=("source", "source_id", "revision"),
    description="One row per revision of a task as found in a source benchmark or a synthetic-site goal.")

