"""The exact verifier as a judge: synthetic-site tasks are judged from the final state the rollout
recorded (webgym/sites/verify.py), MiniWoB++ tasks from the task's own reward recorded as their final
state (webgym/sites/miniwob.py), with no LLM, no browser and no running site server."""

from __future__ import annotations

import json

from schemas.judgments import Judgment
from stages.judge.episode import Episode, judgment
from webgym.sites import miniwob
from webgym.sites.verify import verify


def exact_judgment(episode: Episode) -> Judgment:
    """The exact row: per-fact verdicts from the state; `not_evaluable` when no fact failed but some
    could not be checked (no final state recorded, a broken check)."""
    if episode.on_miniwob:
        return _miniwob_judgment(episode)
    assert episode.rubric is not None
    verdict = verify(episode.rubric, episode.final_state, episode.answer)
    facts = [f.success for g in verdict.groups for f in g.facts]
    status = "not_evaluable" if None in facts and False not in facts else "judged"
    return judgment(episode, "exact", status=status, success=verdict.success, groups=verdict.groups,
                    rationale=verdict.rationale)


def _miniwob_judgment(episode: Episode) -> Judgment:
    """Success when the task's raw reward is positive; the reward itself (partial credit, -1 for a failure) is
    in the rationale and stays in the trajectory's final state. No state recorded: not evaluable."""
    if episode.final_state is None:
        return judgment(episode, "exact", status="not_evaluable", success=False,
                        rationale="no MiniWoB++ reward was recorded (the page never opened)")
    outcome = miniwob.judge(json.loads(episode.final_state))
    ended = "the task ended" if outcome.done else "the task had not ended"
    return judgment(episode, "exact", status="judged", success=outcome.success,
                    rationale=f"MiniWoB++ raw reward {outcome.credit:g} ({ended})")
