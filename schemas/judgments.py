"""judgments: one row per (trajectory, judge) judgment; rejudging adds rows."""

from __future__ import annotations

import datetime as dt
from typing import Literal

from pydantic import Field

from schemas.table import Row, TableSchema, flow_run_field


class FactVerdict(Row):
    fact: str = Field(description="The fact checked.")
    success: bool | None = Field(description="True, False, or null when not evaluable.")
    rationale: str | None = Field(default=None, description="Why.")


class GroupVerdict(Row):
    description: str = Field(description="The fact group checked.")
    success: bool = Field(description="Every fact of the group holds.")
    facts: list[FactVerdict] = Field(description="Per-fact verdicts.")


class Judgment(Row):
    judgment_id: str = Field(description="Unique id of this judgment.")
    trajectory_id: str = Field(description="The episode judged (trajectories.trajectory_id).")
    judge: str = Field(description="exact, reference, rubric, webjudge, task_only or gate.")
    status: Literal["judged", "gated", "error", "not_evaluable"] = Field(
        description="judged: a verdict; gated: a rule decided; error/not_evaluable: no verdict (never a success).")
    success: bool = Field(description="Fail closed: false unless every criterion held.")
    reward: float = Field(description="Reward given for training.")
    groups: list[GroupVerdict] | None = Field(default=None, description="Per-group and per-fact verdicts.")
    blocked: bool = Field(default=False, description="Failure came from anti-bot measures.")
    rationale: str | None = Field(default=None, description="Summary of why.")
    model: str | None = Field(default=None, description="Judge model, for LLM judges.")
    prompt_version: str | None = Field(default=None, description="Judge prompt version.")
    cost_usd: float | None = Field(default=None, ge=0, description="LLM cost of this judgment.")
    judged_at: dt.datetime = Field(description="When it was judged (UTC).")
    flow_run_id: str | None = flow_run_field()


SCHEMA = TableSchema(
    name="judgments", row=Judgment, keys=("judgment_id",),
    references={"trajectory_id": "trajectories.trajectory_id"},
    description="One row per (trajectory, judge) judgment; rejudging adds rows.")
