"""trajectories: one row per episode."""

from __future__ import annotations

import datetime as dt
from typing import Literal

from pydantic import Field

from schemas.table import Row, TableSchema, flow_run_field

Purpose = Literal["train", "demonstration", "evaluation", "validation"]
"""Why an episode was run: a training rollout of the policy, a demonstration (the oracle on training
tasks: the warm start), an evaluation on held-out tasks, or a validation of a new checkpoint on the
validation split (whether it is promoted). Rates never mix them."""

Termination = Literal["answered", "task_ended", "max_steps", "parse_error", "env_error", "navigation_failed",
                      "blocked", "timeout", "policy_error", "context_overflow", "cut", "failed"]
"""`task_ended`: the page ended the task itself (MiniWoB++ gives its reward), so no answer is due. `failed`: the
episode raised an unexpected error (its reason is in `error`); recorded so that one bad
episode never loses the others of its batch."""


class Trajectory(Row):
    trajectory_id: str = Field(description="Unique episode id.")
    task_id: str = Field(description="The task attempted (tasks.task_id).")
    iteration: int = Field(ge=0, description="Training iteration that produced it.")
    group_id: str | None = Field(default=None, description="Episodes of one task rolled out together (GRPO).")
    purpose: Purpose | None = Field(default=None, description="Why it was run: train, demonstration, evaluation or validation "
                                                              "(null: recorded before episodes said why).")
    policy: str = Field(description="Policy kind: chat, local, oracle, random, ...")
    policy_version: str = Field(description="Checkpoint or model the policy ran.")
    prompt_version: str | None = Field(default=None, description="Prompt template version.")
    horizon: int = Field(ge=1, description="Step limit of this episode.")
    n_steps: int = Field(ge=0, description="Steps taken.")
    termination: Termination = Field(description="Why the episode ended.")
    answer: str | None = Field(default=None, description="The agent's final answer, if it answered.")
    final_state: str | None = Field(default=None, description="Synthetic sites: the session state at the end (JSON).")
    error: str | None = Field(default=None, description="What went wrong, for env/policy errors.")
    attempt: int = Field(default=1, ge=1, description="Environment retries: 1 for the first try.")
    started_at: dt.datetime = Field(description="Episode start (UTC).")
    ended_at: dt.datetime = Field(description="Episode end (UTC).")
    flow_run_id: str | None = flow_run_field()


SCHEMA = TableSchema(
    name="trajectories", row=Trajectory, keys=("trajectory_id",),
    references={"task_id": "tasks.task_id"},
    description="One row per episode.")
