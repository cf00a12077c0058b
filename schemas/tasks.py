"""tasks: one row per task in the environment, original or decomposed."""

from __future__ import annotations

import datetime as dt
import hashlib
import math
from typing import Literal

from pydantic import Field

from schemas.rubric import Rubric
from schemas.table import Row, TableSchema, flow_run_field

TAXONOMY: dict[str, tuple[str, ...]] = {
    "Lifestyle & Leisure": ("Sports & Fitness", "Health & Medicine", "Shopping", "Food & Cooking",
                            "Pets & Animal Welfare", "Fashion & Beauty", "Hobbies & DIY"),
    "Career & Education": ("Jobs & Career", "Education & Learning"),
    "Science & Research": ("Technology & Science", "Research & Academia"),
    "Entertainment": ("Music", "Books & Reading", "Films & TV Shows", "Live Shows & Performances",
                      "Gaming & Virtual Worlds"),
    "Travel & Transportation": ("Outdoor & Recreation", "Ticketed Activities", "Travel & Accommodation"),
    "Misc.": ("News", "General Info.", "Real Estate", "Finance & Investment", "Legal & Government Services"),
}
"""The task domains and subdomains (tasks.domain, tasks.subdomain): the Mind2Web-2 taxonomy WebGym uses
(6 domains, 24 subdomains), labels as Mind2Web-2 publishes them. Source: the domain chart of the
Mind2Web-2 project page, github.com/OSU-NLP-Group/Mind2Web-2, branch gh-page,
static/js/domain-sunburst.js (commit 84feaa3, 2025-07-03: `domainData`, with the 130 tasks' counts per
subdomain); the paper's figure 1 shows the same six domains. Defined only here: the annotate prompt,
its answer check and the statistics read it."""


class Task(Row):
    task_id: str = Field(description="Stable hash of source, source_id and (for decomposed tasks) the groups kept.")
    parent_task_id: str | None = Field(default=None, description="The task this one was decomposed from.")
    parent_groups: list[int] | None = Field(
        default=None, description="Indices of the parent's fact groups this task keeps.")
    source: str = Field(description="Source benchmark (seed_tasks.source).")
    source_id: str = Field(description="Id in the source (seed_tasks.source_id).")
    text: str = Field(description="Instruction shown to the agent.")
    text_writer: Literal["source", "template", "llm"] | None = Field(
        default=None, description="Who wrote `text`: source (the benchmark's own words), template (a decomposed "
                                  "task without an LLM, or after a bad answer) or llm (a decomposed task written by "
                                  "the LLM, or a stale task's date moved by it: then original_text holds the source's).")
    original_text: str | None = Field(
        default=None, description="The source's text when the LLM rewrote a stale task's date; null otherwise.")
    stale_phrase: str | None = Field(
        default=None, description="The date (or time anchored to a year) in the source's text that had passed on "
                                  "stale_as_of, for a task that plans something then; null when none did.")
    stale_as_of: dt.datetime | None = Field(
        default=None, description="The 'as of' date the staleness check used (taskset.stale.as_of); null: unchecked.")
    website: str | None = Field(default=None, description="Host name of the target website.")
    start_url: str | None = Field(default=None, description="URL the episode starts from.")
    domain: str | None = Field(default=None, description="One of the 6 domains of TAXONOMY (Mind2Web-2's taxonomy).")
    subdomain: str | None = Field(default=None, description="One of the domain's subdomains in TAXONOMY (24 in all).")
    difficulty: int | None = Field(default=None, ge=1, description="Number of facts in the rubric.")
    source_difficulty: str | None = Field(default=None, description="The source's own difficulty label.")
    split: Literal["train", "validation", "test"] | None = Field(
        default=None, description="OOD split, set by the split stage: train, validation (training-family tasks never "
                                  "trained on, which decide whether a new checkpoint is promoted) or test (held out).")
    held_out: Literal["family", "site", "external"] | None = Field(
        default=None, description="How a test task is held out (split stage): with its whole site family (unseen "
                                  "structure), as one website (unseen data of a training family, or an unseen "
                                  "real website), or as a world no task of which is ever trained on (external: "
                                  "MiniWoB++); null for training tasks.")
    family: str | None = Field(default=None, description="Site family of a synthetic site's task (the graph the site "
                                                         "instantiates), or an external world's task family "
                                                         "(miniwob/click-tab for click-tab-2-hard: the split stage "
                                                         "keeps a family on one side); null for other sources.")
    rubric: Rubric | None = Field(default=None, description="Fact groups the judge checks.")
    reference_answer: str | None = Field(default=None, description="Reference answer from the source.")
    evaluation: str | None = Field(default=None, description="Source evaluation block as JSON.")
    created_at: dt.datetime = Field(description="When this row was produced (UTC).")
    flow_run_id: str | None = flow_run_field()
    revision: int | None = Field(
        default=None, ge=1,
        description="The revision of the seed task it was made from (seed_tasks.revision; decomposed tasks carry "
                    "their parent's); null in rows written before revisions were kept: read as 1.")
    published: dt.datetime | None = Field(
        default=None, description="When the source published that revision (seed_tasks.published); which revision "
                                  "is current follows it. Null: undated (decomposed tasks follow their parent).")


SCHEMA = TableSchema(
    name="tasks", row=Task, keys=("task_id",),
    references={"parent_task_id": "tasks.task_id"},
    description="One row per task in the environment (original or decomposed).")


def task_id_for(source: str, source_id: str, groups: tuple[int, ...] | None = None,
                revision: int | None = None) -> str:
    """Stable task id: a hash of source and source id, plus the kept groups for a decomposed task and the
    revision from the second on (so a first revision keeps the id tasks had before revisions existed)."""
    key = f"{source}\x1f{source_id}" + ("" if groups is None else "\x1f" + ",".join(map(str, groups)))
    if revision is not None and not math.isnan(revision) and revision > 1:  # NaN: a null as pandas reads it
        key += f"\x1frevision {int(revision)}"
    return hashlib.sha256(key.encode()).hexdigest()[:20]
