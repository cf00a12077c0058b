"""The task-only judge: the final check from the task description alone, with no rubric and no key
points; the baseline the rubric judge is compared with in WebGym's figure 5."""

from __future__ import annotations

from schemas.judgments import Judgment
from stages.judge.calls import JudgeCalls, Verdict
from stages.judge.episode import Episode, judgment
from stages.judge.rubric import distinct

PURPOSES = ("judge-verdict",)


async def task_only_judgment(episode: Episode, calls: JudgeCalls, image_budget: int) -> Judgment:
    """The task-only row: one verdict over the last `image_budget` distinct screenshots."""
    shown = [s.sha256 for s in distinct(episode.screenshots)[-image_budget:]]
    verdict = await calls.ask("judge-verdict", "judge_task_only", Verdict, shown, task=episode.task,
                              answer=episode.answer, history=episode.history_text())
    return judgment(episode, "task_only", status="judged", success=verdict.holds, rationale=verdict.reasoning)
