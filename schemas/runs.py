"""runs: one row per Prefect flow run (the nightly and each stage it runs), written when the run ends."""

from __future__ import annotations

import datetime as dt
from typing import Literal

from pydantic import Field

from schemas.table import Row, TableSchema

Outcome = Literal["completed", "failed", "crashed", "cancelled"]
"""The run's final state type in Prefect."""


class Run(Row):
    flow_run_id: str = Field(description="Prefect's flow run id: the id in the Prefect UI's URL, and the flow_run_id "
                                         "of every row the run wrote.")
    flow_name: str = Field(description="The flow: nightly, rollout, judge, train, evaluate, serve, build_taskset.")
    run_name: str = Field(description="The run's name in the UI, e.g. rollout-it2-train, evaluate-it3-test.")
    parent_flow_run_id: str | None = Field(default=None, description="The run that started it as a subflow "
                                                                     "(null: a run of its own, e.g. the nightly).")
    iteration: int | None = Field(default=None, ge=0, description="The iteration it worked on (null: the flow has "
                                                                  "none, or left it to the lake's newest).")
    split: str | None = Field(default=None, description="Rollout and evaluate: the split its tasks came from.")
    profile: str | None = Field(default=None, description="Name of the profile it ran (null: its profile failed "
                                                          "to load).")
    config: str | None = Field(default=None, description="The resolved profile as JSON (before the flow's "
                                                         "parameters: they are in `parameters`).")
    parameters: str = Field(description="The flow run's parameters as JSON.")
    seed: int | None = Field(default=None, description="The policy's acting seed (policy.scorer.seed for the scorer, "
                                                       "else policy.seed): what a learning-curve study varies "
                                                       "(benchmarks/learning_curve.py).")
    commit: str = Field(description="The code's commit (`git describe --always --dirty`: `-dirty` when files "
                                    "changed since).")
    started_at: dt.datetime = Field(description="When the run started (UTC).")
    ended_at: dt.datetime = Field(description="When it ended (UTC).")
    outcome: Outcome = Field(description="completed, failed, crashed or cancelled.")
    message: str | None = Field(default=None, description="Why it ended so: the state's message (the error of a "
                                                          "failed run).")


SCHEMA = TableSchema(
    name="runs", row=Run, keys=("flow_run_id",),
    description="One row per Prefect flow run: the nightly and each stage subflow, with its profile, seed, commit, "
                "start, end and outcome.")
