"""The exact verifier as a judge: synthetic-site tasks are judged from the final state the rollout
recorded (webgym/sites/verify.py), with no LLM, no browser and no running site server."""

from __future__ import annotations

from schemas.judgments import Judgment
from stages.judge.episode import Episode, judgment
from webgym.sites.verify import verify


def exact_judgment(episode: Episode) -> Judgment:
    """The exact row: per-fact verdicts from the state; `not_evaluable` when no fact failed but some
    could not be checked (no final state recorded, a broken check)."""
    assert episode.rubric is not None
    verdict = verify(episode.rubric, episode.final_state, episode.answer)
    facts = [f.success for g in verdict.groups for f in g.facts]
    status = "not_evaluable" if None in facts and False not in facts else "judged"
    return judgment(episode, "exact", status=status, success=verdict.success, groups=verdict.groups,
                    rationale=verdict.rationale)
