"""Blocking detection (WebGym appendix B.2 and E.4): did a failure come from anti-bot measures
rather than the agent? Blocked trajectories are flagged (training leaves them out) and their
websites go to the blocklist, which the task sampler avoids."""

from __future__ import annotations

import datetime as dt

import pandas as pd
from pydantic import BaseModel, Field

from schemas.blocklist import BlockedWebsite
from schemas.judgments import Judgment
from stages.judge.calls import JudgeCalls
from stages.judge.episode import Episode
from stages.judge.rubric import distinct

PURPOSES = ("blocking",)


class Blocking(BaseModel):
    reasoning: str = Field(description="What the pages show: a CAPTCHA, an access-denied page, or agent mistakes.")
    blocked: bool = Field(description="true only when the website prevented access, whatever the agent did.")


async def blocked(episode: Episode, calls: JudgeCalls, screenshots: int) -> Blocking:
    """The detector's answer for a failed trajectory, from its last distinct screenshots."""
    shown = [s.sha256 for s in distinct(episode.screenshots)[-screenshots:]]
    return await calls.ask("blocking", "judge_blocking", Blocking, shown, task=episode.task,
                           website=episode.website or "unknown", url=episode.final_url or "unknown",
                           answer=episode.answer or "(none)", history=episode.history_text())


def blocklist_rows(judgments: list[Judgment], episode: Episode, known: set[str]) -> pd.DataFrame:
    """One blocklist row for the episode's website the first time a judgment flags it blocked;
    adds the website to `known`."""
    flagged = next((j for j in judgments if j.blocked), None)
    if flagged is None or not episode.website or episode.website in known:
        return pd.DataFrame(columns=list(BlockedWebsite.model_fields))
    known.add(episode.website)
    return pd.DataFrame([BlockedWebsite(
        website=episode.website, evidence=f"{flagged.judge} judgment: {flagged.rationale}",
        trajectory_id=episode.trajectory_id, first_seen=dt.datetime.now(dt.UTC)).model_dump()])
