"""accepted: one row per step kept for training, with why and how much it counts."""

from __future__ import annotations

from pydantic import Field

from schemas.table import Row, TableSchema, flow_run_field


class AcceptedStep(Row):
    trajectory_id: str = Field(description="The episode (trajectories.trajectory_id).")
    t: int = Field(ge=0, description="The step kept.")
    iteration: int = Field(ge=0, description="Training iteration this selection feeds.")
    objective: str = Field(description="filtered_bc, reinforce, grpo, sft or dagger.")
    reason: str = Field(description="Why it was kept, e.g. 'success', 'replay', 'group advantage', "
                                    "'oracle label'.")
    weight: float = Field(description="Sample weight in the loss.")
    advantage: float | None = Field(default=None, description="Advantage for policy-gradient objectives.")
    flow_run_id: str | None = flow_run_field()


SCHEMA = TableSchema(
    name="accepted", row=AcceptedStep, keys=("trajectory_id", "t", "iteration", "objective"),
    references={"trajectory_id": "trajectories.trajectory_id"},
    description="One row per (trajectory_id, t) kept for training, with the reason it was kept.")
