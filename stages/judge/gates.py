"""Rule gates (OpenWebRL appendix A.4): trajectories that did not end with a usable answer are
decided by rule, before any verifier or LLM judge is asked."""

from __future__ import annotations

import datetime as dt
import uuid

import pandas as pd

from schemas.judgments import Judgment

REASONS = {
    "max_steps": "ran out of steps without answering",
    "parse_error": "ended on repeated unparseable responses",
    "env_error": "the environment failed",
    "navigation_failed": "the start page never loaded",
    "timeout": "the episode timed out",
    "policy_error": "the policy failed to answer",
    "context_overflow": "even the latest observation did not fit the model's context",
    "cut": "cut off by the straggler limit",
    "blocked": "the website blocked the agent",
    "failed": "the episode failed with an unexpected error",
}


def gate_judgments(trajectories: pd.DataFrame, format_error_reward: float = 0.0,
                   now: dt.datetime | None = None) -> pd.DataFrame:
    """One `gate` judgment per trajectory that a rule decides (reward 0, or `format_error_reward`
    for repeated format errors); trajectories that answered with text, or whose page ended the task, get no row."""
    now = now or dt.datetime.now(dt.UTC)
    rows = []
    for record in trajectories.itertuples(index=False):
        answer = (record.answer or "").strip() if isinstance(record.answer, str) else ""
        if (record.termination == "answered" and answer) or record.termination == "task_ended":
            continue
        reason = REASONS.get(record.termination, "answered with an empty answer")
        rows.append(Judgment(
            judgment_id=uuid.uuid4().hex, trajectory_id=record.trajectory_id, judge="gate", status="gated",
            success=False, reward=format_error_reward if record.termination == "parse_error" else 0.0,
            blocked=record.termination == "blocked", rationale=reason, judged_at=now).model_dump())
    return pd.DataFrame(rows, columns=list(Judgment.model_fields))
