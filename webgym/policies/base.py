"""The policy interface the rollout engines call: one decision per step.

Text policies (chat endpoint, local checkpoint) return their raw response and the parsed calls;
the oracle and random policies return calls directly. Nothing here raises for a bad response:
a parse problem is a field of the output.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import pandas as pd
from playwright.async_api import Page

from schemas.steps import Action
from webgym.env.observe import Observation


@dataclass(frozen=True)
class TaskSpec:
    """The task of an episode, as policies and engines see it."""

    task_id: str
    text: str
    start_url: str
    website: str | None = None
    difficulty: int | None = None
    rubric: dict | None = None
    """The task's rubric (fact groups, with exact checks for synthetic sites)."""
    source_id: str | None = None
    """The id in its source; on a synthetic site "<site>/<goal>", the goal a decomposed task is part of."""


def task_specs(tasks: pd.DataFrame) -> list[TaskSpec]:
    """TaskSpecs from rows of the tasks table."""
    return [TaskSpec(r.task_id, r.text, r.start_url, r.website,
                     int(r.difficulty) if pd.notna(r.difficulty) else None,
                     r.rubric if isinstance(r.rubric, dict) else None, getattr(r, "source_id", None))
            for r in tasks.itertuples(index=False)]


def feedback_text(executed: list[Action], parse_error: str | None) -> str:
    """The environment feedback of one step as the agent reads it at the next step."""
    lines = [a.feedback for a in executed if a.feedback]
    if parse_error:
        lines.append(f"Failed: your response could not be parsed ({parse_error}); answer with a tool call.")
    return "\n".join(lines)


@dataclass(frozen=True)
class Turn:
    """One earlier step as the context policy keeps it."""

    observation: Observation
    response: str | None
    memory: str | None
    executed: list[Action]
    """Calls as executed, each with its feedback."""
    parse_error: str | None = None

    @property
    def feedback(self) -> str:
        return feedback_text(self.executed, self.parse_error)


@dataclass(frozen=True)
class Privileged:
    """What only scripted policies (the oracle) may see; learned policies never get it."""

    page: Page
    """The live page, to locate elements of the planned action."""
    site_state: dict[str, Any] | None
    """Synthetic sites: the session's state snapshot (what the oracle plans from)."""


@dataclass(frozen=True)
class PolicyInput:
    task: TaskSpec
    observation: Observation
    history: list[Turn]
    step: int
    horizon: int
    privileged: Privileged | None = None
    """Filled only for policies whose `privileged` is True."""
    episode_id: str = ""
    """The trajectory id, for policies that keep per-episode state."""


@dataclass(frozen=True)
class PolicyOutput:
    actions: list[Action]
    response: str | None = None
    memory: str | None = None
    parse_error: str | None = None
    logprob: float | None = None
    context_dropped: int = 0
    """Context items left out to fit the token budget (webgym.policies.context.fit_messages)."""
    token_ids: tuple[int, ...] | None = None
    """The sampled tokens, when the backend reports them (the trainer learns exactly these)."""
    token_logprobs: tuple[float, ...] | None = None
    """Per-token terms of `logprob`, as the server or the local model reported them."""
    usage: dict[str, int] = field(default_factory=dict)


class PolicyError(Exception):
    """The policy could not produce a decision (endpoint down after retries, model failure)."""


class ContextOverflow(PolicyError):
    """Even the latest observation alone does not fit the model's context: the episode cannot go on."""


class Policy(Protocol):
    """What every policy backend provides."""

    name: str
    """Kind: chat, local, oracle, random, ..."""
    version: str
    """Model or checkpoint identity, recorded on every trajectory."""
    prompt_version: str | None
    privileged: bool
    """True for scripted policies that read the page and site state (PolicyInput.privileged)."""

    async def act(self, observed: PolicyInput) -> PolicyOutput:
        """Decide the next calls; raise PolicyError only when no decision is possible."""
        ...


class Expert(Protocol):
    """Labels the states a learned policy reaches with what a privileged policy would do there (DAgger)."""

    async def label(self, observed: PolicyInput) -> list[Action] | None:
        """The expert's calls from this observation (given its privileged view); None where it has none."""
        ...
