"""evals: one row per evaluated episode."""

from __future__ import annotations

import datetime as dt
from typing import Literal

from pydantic import Field

from schemas.table import Row, TableSchema, flow_run_field


class Eval(Row):
    trajectory_id: str = Field(description="The evaluation episode (trajectories.trajectory_id).")
    evaluation: str | None = Field(
        default=None, description="Which evaluation the episode belongs to: the policy kind and a hash of the task "
                                  "sample, so only evaluations of the same tasks and settings are compared (null: "
                                  "recorded before evaluations were told apart).")
    iteration: int = Field(ge=0, description="Iteration evaluated.")
    checkpoint: str = Field(description="Checkpoint or policy version evaluated.")
    split: Literal["train", "validation", "test"] = Field(
        description="Split the task came from: test (the held-out headline) or validation (promotion decisions).")
    held_out: Literal["family", "site", "external"] | None = Field(
        default=None, description="How the task is held out: unseen site family, unseen site, or an external world "
                                  "never trained on (tasks.held_out).")
    task_id: str = Field(description="The task (tasks.task_id).")
    difficulty_band: Literal["easy", "medium", "hard"] | None = Field(default=None, description="Band of the task.")
    domain: str | None = Field(default=None, description="Domain of the task.")
    success: bool = Field(description="Authoritative verdict.")
    evaluated_at: dt.datetime = Field(description="When (UTC).")
    flow_run_id: str | None = flow_run_field()


SCHEMA = TableSchema(
    name="evals", row=Eval, keys=("trajectory_id",),
    references={"trajectory_id": "trajectories.trajectory_id", "task_id": "tasks.task_id"},
    description="One row per evaluated episode.")
