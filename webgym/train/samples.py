"""What the trainer learns from: one policy step as the policy saw it and what it answered.

`training_samples` rebuilds them from the lake's rows (accepted, steps, trajectories, tasks and the
screenshot blobs) with the rollout's own context builder, so the model is trained on exactly the
messages it saw.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pandas as pd
import pyarrow.dataset as ds

from schemas.steps import Action, Element, stored_actions, stored_elements
from webgym.config import ContextConfig
from webgym.env.observe import Observation, element_at
from webgym.lake import Lake
from webgym.policies.base import PolicyInput, Turn, task_specs
from webgym.policies.context import build_messages, prompt_version


@dataclass(frozen=True)
class TrainingSample:
    """One step: the context messages, the response to learn, and how much it counts.

    `messages` are exactly what the policy saw (webgym.policies.context.build_messages: system,
    earlier turns, the current observation; images as {"type": "image", "png": bytes}); the loss
    covers only `response` and its end-of-turn token.
    """

    messages: list[dict[str, Any]]
    response: str
    weight: float = 1.0
    """Filtered BC / SFT: the step's weight (1 for a kept step). GRPO: the weight of its supervised term
    (0 for a rolled-out step, accept.grpo_demonstration_weight for a demonstration)."""
    advantage: float = 0.0
    """REINFORCE / GRPO: the step's advantage (reward minus baseline, or group-normalised)."""
    old_logprob: float | None = None
    """Sum of the response's token log-probabilities under the policy that sampled it (steps.logprob), if known."""
    sample_id: str | None = None
    """Where the sample came from (e.g. "trajectory_id:t"), named in error reports."""
    response_ids: tuple[int, ...] | None = None
    """The response's tokens as the policy sampled them (steps.token_ids); the trainer learns these when set."""
    old_token_logprobs: tuple[float, ...] | None = None
    """Per-token terms of `old_logprob` (steps.token_logprobs): what the trainer's recomputation must equal."""


TEXT_POLICIES = frozenset({"chat", "local"})
"""Policy kinds whose recorded response is the model's own text in the prompt's format. Steps of the
other kinds (oracle, scorer, random) are learned as the tool calls they made (`action_response`)."""


MARKED_TOOLS = ("click", "hover", "drag", "type", "select_option")
"""Tools whose (first) point a policy may give as a set-of-marks number instead (webgym/env/actions.py)."""


def _by_mark(action: Action, elements: list[Element] | None) -> Action:
    """The call naming the numbered element its point falls in, when the step was observed with marks."""
    if not elements or action.name not in MARKED_TOOLS or action.mark is not None or action.x is None:
        return action
    element = element_at(elements, action.x, action.y)
    return action if element is None else action.model_copy(update={"mark": element.mark, "x": None, "y": None})


def action_response(actions: list[Action], elements: list[Element] | None = None) -> str:
    """Recorded calls as the <tool_call> text the parser reads: what a text policy would have answered
    to take the same step (oracle demonstrations become chat targets this way). On a set-of-marks
    observation (`elements`) a call at a point inside a numbered element names its mark instead, as a
    policy that reads the marks answers (run, such a call clicks the element's centre)."""
    calls = []
    for action in (_by_mark(a, elements) for a in actions):
        arguments = action.model_dump(exclude_none=True, exclude={"name", "ok", "feedback"})
        call = json.dumps({"name": action.name, "arguments": arguments}, ensure_ascii=False)
        calls.append(f"<tool_call>{call}</tool_call>")
    return "\n".join(calls)


def _present(value: Any) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def _turns(rows: pd.DataFrame, text_policy: bool, screenshot: Callable[[str], bytes]) -> list[Turn]:
    """Every step of one trajectory as the Turn the rollout kept (webgym/rollout/episode_run.py)."""
    turns = []
    for row in rows.itertuples(index=False):
        actions = stored_actions(row.actions)
        if not _present(row.screenshot_sha256):
            raise ValueError(f"step {row.t}: no screenshot recorded")
        tabs = list(row.tabs) if _present(row.tabs) else [row.url]  # rows recorded before tabs were: one tab
        observation = Observation(
            url=row.url, title=row.title, tabs=tabs, active_tab=int(row.active_tab) if _present(row.active_tab) else 0,
            screenshot=screenshot(row.screenshot_sha256),
            elements=stored_elements(row.elements),
            page_text=row.page_text if _present(row.page_text) else None)
        response = row.response if text_policy else action_response(actions, observation.elements)
        memory = row.memory if text_policy and _present(row.memory) else None
        parse_error = row.parse_error if _present(row.parse_error) else None
        turn = Turn(observation, response if _present(response) else None, memory, actions, parse_error)
        recorded = row.feedback if _present(row.feedback) else ""
        if turn.feedback != recorded:
            raise ValueError(f"step {row.t}: recorded feedback {recorded[:60]!r} is not what its actions report")
        turns.append(turn)
    return turns


def training_samples(accepted: pd.DataFrame, steps: pd.DataFrame, trajectories: pd.DataFrame, tasks: pd.DataFrame,
                     screenshot: Callable[[str], bytes],
                     context: ContextConfig) -> tuple[list[TrainingSample], list[str]]:
    """One sample per accepted (trajectory_id, t) row, in the accepted rows' order: the messages the
    policy saw at that step, rebuilt from the lake's rows with the rollout's own context builder, and
    one problem line per trajectory or step that could not be rebuilt (skipped; the rest go on).

    `screenshot` reads a blob by hash (Lake.get_blob); `context` is the profile's policy.context.
    Trajectories of text policies must have been rolled out with that context's prompt version.
    """
    key = ["trajectory_id", "t"]
    if accepted.duplicated(key).any():
        first = accepted.loc[accepted.duplicated(key), key].iloc[0]
        raise ValueError(f"accepted has several rows for step {first['trajectory_id']}:{first['t']}; pass the "
                         f"rows of one objective and iteration")
    meta = trajectories.drop_duplicates("trajectory_id").set_index("trajectory_id").to_dict("index")
    specs = {spec.task_id: spec for spec in task_specs(tasks)}
    wanted_prompt = prompt_version(context)
    built: dict[tuple[str, int], TrainingSample] = {}
    problems: list[str] = []
    ids = accepted["trajectory_id"].unique()
    wanted_by_trajectory = dict(tuple(accepted.groupby("trajectory_id", sort=False)))
    for trajectory_id, rows in steps[steps["trajectory_id"].isin(ids)].groupby("trajectory_id"):
        rows = rows.sort_values("t")
        episode = meta.get(trajectory_id)
        if episode is None or episode["task_id"] not in specs:
            problems.append(f"trajectory {trajectory_id}: no trajectories row or no task row")
            continue
        text_policy = episode["policy"] in TEXT_POLICIES
        if text_policy and episode["prompt_version"] != wanted_prompt:
            problems.append(f"trajectory {trajectory_id}: rolled out with prompt {episode['prompt_version']}, the "
                            f"profile's policy.context builds {wanted_prompt}; set policy.context to match")
            continue
        if rows["t"].tolist() != list(range(len(rows))):
            problems.append(f"trajectory {trajectory_id}: step rows {rows['t'].tolist()} are not 0..{len(rows) - 1}")
            continue
        try:
            turns = _turns(rows, text_policy, screenshot)
        except (ValueError, FileNotFoundError) as error:
            problems.append(f"trajectory {trajectory_id}: {error}")
            continue
        task, logprobs = specs[episode["task_id"]], rows["logprob"].tolist()
        token_ids, token_logprobs, dropped = ([rows[name].tolist() if name in rows else [None] * len(rows)
                                               for name in ("token_ids", "token_logprobs", "context_dropped")])
        wanted = wanted_by_trajectory[trajectory_id][["t", "weight", "advantage"]]
        for t, weight, advantage in wanted.itertuples(index=False):
            if t >= len(turns) or turns[t].response is None:
                problems.append(f"step {trajectory_id}:{t}: no such step or no response to learn")
                continue
            observed = PolicyInput(task, turns[t].observation, turns[:t], t, int(episode["horizon"]))
            built[(trajectory_id, t)] = TrainingSample(
                build_messages(observed, context, int(dropped[t]) if _present(dropped[t]) else 0),
                turns[t].response, float(weight),
                float(advantage) if _present(advantage) else 0.0,
                float(logprobs[t]) if text_policy and _present(logprobs[t]) else None, f"{trajectory_id}:{t}",
                tuple(map(int, token_ids[t])) if text_policy and token_ids[t] is not None else None,
                tuple(map(float, token_logprobs[t])) if text_policy and token_logprobs[t] is not None else None)
    missing = set(ids) - set(steps["trajectory_id"])
    problems += [f"trajectory {t}: no steps rows" for t in sorted(missing)]
    samples = [built[k] for k in accepted[key].itertuples(index=False, name=None) if k in built]
    return samples, problems


def samples_from_lake(lake: Lake, accepted: pd.DataFrame,
                      context: ContextConfig) -> tuple[list[TrainingSample], list[str]]:
    """`training_samples` for accepted rows, reading only their trajectories' rows and blobs from the lake."""
    ids = ds.field("trajectory_id").isin(list(accepted["trajectory_id"].unique()))
    steps, trajectories = lake.read_table("steps", filter=ids), lake.read_table("trajectories", filter=ids)
    tasks = lake.read_table("tasks", filter=ds.field("task_id").isin(list(trajectories["task_id"].unique())))
    return training_samples(accepted, steps, trajectories, tasks, lake.get_blob, context)
