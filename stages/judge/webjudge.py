"""Online-Mind2Web's WebJudge, a second judge that needs no rubric: (1) key points from the task,
(2) every screenshot scored 1-5 against them, those at or above a threshold kept with their
reasoning, (3) one final verdict from key points, action history and kept screenshots.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from schemas.judgments import Judgment
from stages.judge.calls import JudgeCalls, Verdict, all_of
from stages.judge.episode import Episode, judgment

PURPOSES = ("judge-keypoints", "judge-verdict")


class KeyPoints(BaseModel):
    key_points: list[str] = Field(min_length=1, description="The key points the task states, one short line each.")


class ScreenshotScore(BaseModel):
    reasoning: str = Field(description="What the screenshot shows and how it bears on the key points.")
    score: int = Field(ge=1, le=5, description="1: nothing relevant ... 5: crucial steps or evidence.")


async def webjudge_judgment(episode: Episode, calls: JudgeCalls, threshold: int, max_images: int) -> Judgment:
    """WebJudge's row: its verdict, with the key points and the screenshots it kept in the rationale."""
    found = await calls.ask("judge-keypoints", "judge_webjudge_keypoints", KeyPoints, task=episode.task)
    key_points = "\n".join(f"{i}. {point}" for i, point in enumerate(found.key_points, 1))
    scores = await all_of(
        calls.ask("judge-keypoints", "judge_webjudge_image", ScreenshotScore, [s.sha256], task=episode.task,
                  key_points=key_points)
        for s in episode.screenshots)
    kept = [(s, score) for s, score in zip(episode.screenshots, scores) if score.score >= threshold][:max_images]
    reasons = "\n".join(f"{i}. (step {s.t + 1}) {score.reasoning}" for i, (s, score) in enumerate(kept, 1))
    verdict = await calls.ask(
        "judge-verdict", "judge_webjudge_verdict", Verdict, [s.sha256 for s, _ in kept], task=episode.task,
        key_points=key_points, answer=episode.answer, history=episode.history_text(),
        reasons=reasons or "(no screenshot scored at or above the threshold)")
    return judgment(
        episode, "webjudge", status="judged", success=verdict.holds,
        rationale=f"key points: {'; '.join(found.key_points)}; kept {len(kept)} of {len(episode.screenshots)} "
                  f"screenshot(s); {verdict.reasoning}")
