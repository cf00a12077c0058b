"""blocklist: one row per website listed for blocking agents (or unreachable), with its evidence."""

from __future__ import annotations

import datetime as dt
from typing import Literal

from pydantic import Field

from schemas.table import Row, TableSchema


class BlockedWebsite(Row):
    website: str = Field(description="Host name.")
    reason: Literal["blocked", "unreachable"] | None = Field(
        default=None, description="blocked: it blocked agents (CAPTCHA, 403, the blocking detector) in episodes of "
                                  "env.block_after tasks; unreachable: env.unreachable_after episodes could not "
                                  "open it.")
    evidence: str = Field(description="What showed it: how many episodes of how many tasks, and what each one saw.")
    trajectory_id: str | None = Field(default=None, description="Episode where it was first seen.")
    trajectory_ids: list[str] | None = Field(default=None, description="Every episode of the evidence.")
    tasks: int | None = Field(default=None, ge=0, description="Distinct tasks of those episodes.")
    first_seen: dt.datetime = Field(description="When the first episode of the evidence ended (UTC).")
    listed_at: dt.datetime | None = Field(default=None, description="When it was listed (UTC).")
    cleared_at: dt.datetime | None = Field(
        default=None, description="When `webgym judge unblock` cleared it (UTC); null: listed, the sampler skips it. "
                                  "Only evidence seen after the clearing lists it again.")
    flow_run_id: str | None = Field(
        default=None, description="The Prefect flow run that last listed or cleared it (runs.flow_run_id; the table "
                                  "is rewritten whole, so the lake stamps the rows a rewrite changes); null: changed "
                                  "outside a flow run or before rows recorded it.")


SCHEMA = TableSchema(
    name="blocklist", row=BlockedWebsite, keys=("website",),
    description="One row per website listed for blocking agents or being unreachable, with its evidence.")
