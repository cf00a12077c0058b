"""blocklist: one row per website blocked for agents."""

from __future__ import annotations

import datetime as dt

from pydantic import BaseModel, Field

from schemas.table import TableSchema


class BlockedWebsite(BaseModel):
    website: str = Field(description="Host name.")
    evidence: str = Field(description="What showed it was blocked (status code, CAPTCHA, judge).")
    trajectory_id: str | None = Field(default=None, description="Episode where it was first seen.")
    first_seen: dt.datetime = Field(description="When (UTC).")


SCHEMA = TableSchema(
    name="blocklist", row=BlockedWebsite, keys=("website",),
    description="One row per website blocked for agents.")
