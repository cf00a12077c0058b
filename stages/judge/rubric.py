"""The WebGym rubric judge (section 3.5, appendix E.2-E.3).

(a) Key screenshots: every distinct screenshot is asked about on its own (purpose judge-keypoints,
    a cheap model is fine), with high recall; the last screenshot is always kept, then the latest
    key screenshots up to the image budget.
(b) Criterion B first: the final answer against the key screenshots (purpose judge-hallucination);
    a hallucinated answer fails the trajectory without asking about any fact.
(c) Criterion A: every fact of every group against the key screenshots and the answer (purpose
    judge-facts). Success only when every fact holds.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from schemas.judgments import FactVerdict, GroupVerdict, Judgment
from schemas.rubric import Rubric
from stages.judge.calls import JudgeCalls, Verdict, all_of
from stages.judge.episode import Episode, Screenshot, judgment

PURPOSES = ("judge-keypoints", "judge-hallucination", "judge-facts")


class KeyScreenshot(BaseModel):
    reasoning: str = Field(description="What the screenshot shows that bears on the task, or why nothing does.")
    keep: bool = Field(description="true when it may be evidence for any fact or for the answer; when in doubt, true.")


def rubric_text(rubric: Rubric) -> str:
    return "\n".join(f"Group {i}: {group.description}\n" + "\n".join(f"  - {fact}" for fact in group.facts)
                     for i, group in enumerate(rubric.groups, 1))


def within_budget(chosen: list[Screenshot], last: Screenshot, budget: int) -> list[Screenshot]:
    """The last screenshot plus the latest chosen ones, `budget` in all, in the order they were seen."""
    others = [s for s in chosen if s.sha256 != last.sha256][-(budget - 1):] if budget > 1 else []
    return [*others, last]


def distinct(screenshots: tuple[Screenshot, ...]) -> list[Screenshot]:
    """Each screenshot once, at its last occurrence (a repeated page needs one look)."""
    latest = {s.sha256: s for s in screenshots}
    return sorted(latest.values(), key=lambda s: s.t)


async def key_screenshots(episode: Episode, calls: JudgeCalls, budget: int) -> list[Screenshot]:
    """(a): the screenshots the verdict calls see."""
    if not episode.screenshots:
        return []
    candidates = distinct(episode.screenshots)
    rubric = rubric_text(episode.rubric) if episode.rubric else "(none)"
    answers = await all_of(
        calls.ask("judge-keypoints", "judge_keypoint", KeyScreenshot, [s.sha256], task=episode.task, rubric=rubric,
                  answer=episode.answer, step=s.t + 1, steps=len(episode.history), url=s.url or "unknown",
                  action=s.step)
        for s in candidates)
    chosen = [s for s, answer in zip(candidates, answers) if answer.keep]
    return within_budget(chosen, episode.screenshots[-1], budget)


def _unchecked(rubric: Rubric, why: str) -> list[GroupVerdict]:
    return [GroupVerdict(description=g.description, success=False,
                         facts=[FactVerdict(fact=f, success=None, rationale=why) for f in g.facts])
            for g in rubric.groups]


async def rubric_judgment(episode: Episode, calls: JudgeCalls, image_budget: int) -> Judgment:
    """The rubric judge's row: per-group and per-fact verdicts, success only when all hold."""
    assert episode.rubric is not None
    kept = [s.sha256 for s in await key_screenshots(episode, calls, image_budget)]
    context = {"task": episode.task, "answer": episode.answer, "history": episode.history_text()}
    grounded = await calls.ask("judge-hallucination", "judge_hallucination", Verdict, kept, **context)
    if not grounded.holds:
        return judgment(
            episode, "rubric", status="judged", success=False,
            rationale=f"criterion B failed, the answer is not grounded in the screenshots: {grounded.reasoning}",
            groups=_unchecked(episode.rubric, "not checked: the answer failed the hallucination check"))
    facts = [(group, fact) for group in episode.rubric.groups for fact in group.facts]
    verdicts = iter(await all_of(
        calls.ask("judge-facts", "judge_fact", Verdict, kept, group=group.description, fact=fact, **context)
        for group, fact in facts))
    groups = []
    for group in episode.rubric.groups:
        checked = [FactVerdict(fact=fact, success=v.holds, rationale=v.reasoning)
                   for fact, v in zip(group.facts, verdicts)]
        groups.append(GroupVerdict(description=group.description, success=all(f.success for f in checked),
                                   facts=checked))
    failed = [f.fact for g in groups for f in g.facts if not f.success]
    return judgment(
        episode, "rubric", status="judged", success=not failed, groups=groups,
        rationale=f"{len(facts)} fact(s) hold and the answer is grounded" if not failed
        else "criterion A failed for: " + "; ".join(failed))
