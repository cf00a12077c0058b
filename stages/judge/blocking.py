"""Blocking detection (WebGym appendix B.2 and E.4): did a failure come from anti-bot measures
rather than the agent? Blocked trajectories are flagged (training leaves them out); the flags are
evidence for the blocklist (stages/blocklist.py), which the task sampler avoids."""

from __future__ import annotations

from pydantic import BaseModel, Field

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
