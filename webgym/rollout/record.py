"""Episode results as lake rows: one trajectories row and its steps, screenshots in the blob store."""

from __future__ import annotations

import json
from collections.abc import Callable

import pandas as pd

from schemas.steps import Step
from schemas.trajectories import Trajectory
from webgym.policies.base import feedback_text
from webgym.rollout.episode_run import EpisodeResult


def episode_frames(result: EpisodeResult, put_blob: Callable[[bytes], str]) -> dict[str, pd.DataFrame]:
    """{"steps", "trajectories"} for one finished episode, appended together. A page that blocked the
    agent ends it as `blocked` with what showed it (error): evidence for the blocklist (stages/blocklist.py)."""
    spec = result.spec
    steps = [Step(
        trajectory_id=spec.trajectory_id, t=step.t, screenshot_sha256=put_blob(step.screenshot), url=step.url,
        title=step.title, tabs=step.tabs, active_tab=step.active_tab, elements=step.elements,
        page_text=step.page_text, response=step.output.response,
        memory=step.output.memory, actions=step.executed or step.output.actions or None, parse_error=step.output.parse_error,
        feedback=feedback_text(step.executed, step.output.parse_error) or None, logprob=step.output.logprob,
        context_dropped=step.output.context_dropped,
        token_ids=list(step.output.token_ids) if step.output.token_ids is not None else None,
        token_logprobs=list(step.output.token_logprobs) if step.output.token_logprobs is not None else None,
        state_hash=step.state_hash, latency=step.latency,
        expert_actions=step.expert_actions).model_dump() for step in result.steps]
    error = result.error
    if result.refused:
        error = "; ".join(filter(None, [error, *result.refused]))
    trajectory = Trajectory(
        trajectory_id=spec.trajectory_id, task_id=spec.task.task_id, iteration=spec.iteration, group_id=spec.group_id,
        purpose=spec.purpose,
        policy=result.policy, policy_version=result.policy_version, prompt_version=result.prompt_version,
        horizon=spec.horizon, n_steps=len(result.steps), termination=result.termination, answer=result.answer,
        final_state=json.dumps(result.final_state, sort_keys=True) if result.final_state is not None else None,
        error=error, attempt=result.attempt, started_at=result.started_at, ended_at=result.ended_at)
    return {"steps": pd.DataFrame(steps, columns=Step.model_fields),
            "trajectories": pd.DataFrame([trajectory.model_dump()])}
