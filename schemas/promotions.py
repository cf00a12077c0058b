"""promotions: one row per checkpoint the nightly loop decided to serve or to keep back."""

from __future__ import annotations

import datetime as dt

from pydantic import Field

from schemas.table import Row, TableSchema, flow_run_field


class Promotion(Row):
    checkpoint_id: str = Field(description="The new checkpoint (checkpoints.checkpoint_id).")
    iteration: int = Field(ge=0, description="Iteration that trained it.")
    promoted: bool = Field(description="It became the served policy; false: the previous one stays served.")
    evaluation: str | None = Field(default=None, description="The validation evaluation both were measured on "
                                                             "(evals.evaluation); null when nothing was compared.")
    episodes: int = Field(ge=0, description="Validation episodes of the new checkpoint.")
    success_rate: float | None = Field(default=None, ge=0, le=1, description="Its validation success.")
    served_checkpoint: str | None = Field(default=None, description="The checkpoint served before (null: none).")
    served_success_rate: float | None = Field(default=None, ge=0, le=1,
                                              description="The served checkpoint's success on the same evaluation.")
    reason: str = Field(description="Why, in words.")
    decided_at: dt.datetime = Field(description="When (UTC).")
    flow_run_id: str | None = flow_run_field()


SCHEMA = TableSchema(
    name="promotions", row=Promotion, keys=("checkpoint_id",),
    references={"checkpoint_id": "checkpoints.checkpoint_id"},
    description="One row per checkpoint judged on the validation split: promoted to serve, or kept back.")
