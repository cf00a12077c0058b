"""The reference-answer judge: the source benchmark's answer decides when it is authoritative
(stages/judge/reference.py), optionally with an LLM equivalence check where text matching is not
enough. Its row carries the reference checks as one fact group."""

from __future__ import annotations

import asyncio

from pydantic import BaseModel, Field

from schemas.judgments import GroupVerdict, Judgment
from stages.judge.calls import JudgeCalls
from stages.judge.episode import Episode, judgment
from stages.judge.reference import reference_verdict

PURPOSES = ("judge-equivalence",)


class Equivalence(BaseModel):
    reasoning: str = Field(description="How the answer relates to the reference.")
    equivalent: bool = Field(description="true when the answer states what the reference states.")


async def reference_judgment(episode: Episode, calls: JudgeCalls | None) -> Judgment | None:
    """The reference row, or None when the task has no authoritative reference. With `calls`, an
    LLM settles answers in which text matching found no value (stages/judge/reference.py); its errors
    make the row an error, not a failure."""
    loop = asyncio.get_running_loop()

    def equivalent(question: str, reference: str, answer: str) -> bool:
        asked = calls.ask("judge-equivalence", "judge_equivalence", Equivalence, task=question,
                          reference=reference, answer=answer)
        return asyncio.run_coroutine_threadsafe(asked, loop).result().equivalent

    verdict = await asyncio.to_thread(reference_verdict, episode.task, episode.answer, episode.final_url,
                                      episode.reference_answer, episode.evaluation,
                                      equivalent if calls is not None else None)
    if verdict is None:
        return None
    groups = [GroupVerdict(description="reference answer", success=verdict.success, facts=verdict.checks)]
    return judgment(episode, "reference", status=verdict.status, success=verdict.success, groups=groups,
                    rationale=verdict.rationale)
