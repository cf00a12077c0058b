"""One episode as a sequence of phases (start, observe, decide, execute, finish) that both
engines drive: the asynchronous engine runs them back to back per episode, the synchronous
baseline runs each phase across a whole batch. Each phase goes through its operation queue.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from playwright.async_api import Browser

from schemas.steps import Action, Latency
from schemas.trajectories import Purpose
from webgym.config import EnvConfig
from webgym.env.episode import Episode, NavigationFailed
from webgym.env.observe import Observation
from webgym.env.safety import UrlPolicy
from webgym.policies.base import (ContextOverflow, Expert, Policy, PolicyError, PolicyInput, PolicyOutput,
                                  Privileged, TaskSpec, Turn)
from webgym.rollout.ops import OpQueues

log = logging.getLogger(__name__)

StateReader = Callable[[Episode, TaskSpec], Awaitable[dict[str, Any] | None]]
"""Reads a synthetic site's session state for the episode (None for other websites)."""

StartHook = Callable[[Episode, TaskSpec], Awaitable[None]]
"""Readies an episode's page once its start URL opened (a MiniWoB++ page is seeded and started)."""


@dataclass(frozen=True)
class EpisodeSpec:
    """What to run: a task, its step limit, and where the episode belongs."""

    task: TaskSpec
    horizon: int
    iteration: int
    trajectory_id: str
    group_id: str | None = None
    purpose: Purpose = "train"


def rollout_purpose(split: str, policy: str) -> Purpose:
    """Why a rollout's episodes run: evaluation on the test split, validation on the validation split, a
    demonstration when the oracle acts on training tasks (the warm start), else training."""
    if split in ("test", "validation"):
        return "evaluation" if split == "test" else "validation"
    return "demonstration" if policy == "oracle" else "train"


def run_key_for(iteration: int, split: str, policy: str, checkpoint: str | None = None, draw: int = 0) -> str:
    """The name of one rollout of an iteration (e.g. `it3-train-scorer-<checkpoint>`), from which its
    trajectory ids derive: the same rollout run again finds the episodes it already finished."""
    return (f"it{iteration}-{split}-{policy}" + (f"-{Path(checkpoint).name}" if checkpoint else "")
            + (f"-d{draw}" if draw else ""))


def trajectory_id_for(run_key: str, task_id: str, sample: int) -> str:
    """Stable id, so a resumed rollout recognises the episodes it already finished."""
    return hashlib.sha256(f"{run_key}|{task_id}|{sample}".encode()).hexdigest()[:24]


def state_hash(state: dict[str, Any]) -> str:
    """The state's own hash when the site reports one, else a hash of its JSON."""
    return state.get("hash") or hashlib.sha256(json.dumps(state, sort_keys=True, default=str).encode()).hexdigest()[:16]


@dataclass
class RecordedStep:
    t: int
    screenshot: bytes
    url: str
    title: str
    elements: list | None
    page_text: str | None
    output: PolicyOutput
    executed: list[Action]
    state_hash: str | None
    latency: Latency
    tabs: list[str]
    active_tab: int
    expert_actions: list[Action] | None = None


@dataclass
class EpisodeResult:
    spec: EpisodeSpec
    policy: str
    policy_version: str
    prompt_version: str | None
    termination: str
    answer: str | None
    steps: list[RecordedStep]
    final_state: dict[str, Any] | None
    error: str | None
    attempt: int
    refused: list[str]
    started_at: dt.datetime
    ended_at: dt.datetime


@dataclass
class RolloutLimits:
    env_retries: int = 2
    max_parse_errors: int = 3
    """Consecutive unparseable responses that end an episode (termination parse_error)."""
    episode_timeout_s: float = 900.0
    max_calls_per_step: int = 10
    max_response_chars: int = 32_000


def capped(output: PolicyOutput, limits: RolloutLimits) -> PolicyOutput:
    """The policy's output within the caps: the first max_calls_per_step calls, the response and memory cut to
    max_response_chars; what was cut is added to parse_error (None of it when nothing was)."""
    cuts = []
    if len(output.actions) > limits.max_calls_per_step:
        cuts.append(f"{len(output.actions)} tool calls in one step; ran the first {limits.max_calls_per_step} "
                    f"(rollout.max_calls_per_step)")
    longest = max(len(output.response or ""), len(output.memory or ""))
    if longest > limits.max_response_chars:
        cuts.append(f"response of {longest} characters; kept the first {limits.max_response_chars} "
                    f"(rollout.max_response_chars)")
    if not cuts:
        return output
    size = limits.max_response_chars
    return dataclasses.replace(
        output, actions=output.actions[:limits.max_calls_per_step],
        response=output.response[:size] if output.response else output.response,
        memory=output.memory[:size] if output.memory else output.memory,
        parse_error="; ".join(filter(None, [output.parse_error, *cuts])))


@dataclass
class EpisodeRun:
    """State of one episode between phases."""

    spec: EpisodeSpec
    browser: Browser
    policy: Policy
    ops: OpQueues
    env_config: EnvConfig
    url_policy: UrlPolicy
    limits: RolloutLimits
    read_state: StateReader | None = None
    expert: Expert | None = None
    """Labels every observed state with the expert's calls (steps.expert_actions), beside the policy's own."""
    prepare: StartHook | None = None
    attempt: int = 1
    episode: Episode | None = None
    steps: list[RecordedStep] = field(default_factory=list)
    history: list[Turn] = field(default_factory=list)
    termination: str | None = None
    error: str | None = None
    parse_errors_in_a_row: int = 0
    started_at: dt.datetime = field(default_factory=lambda: dt.datetime.now(dt.UTC))
    _clock: float = field(default_factory=time.monotonic)
    _observation: Observation | None = None
    _state: dict[str, Any] | None = None
    _output: PolicyOutput | None = None
    _expert_actions: list[Action] | None = None
    _latency: dict[str, float] = field(default_factory=dict)

    @property
    def done(self) -> bool:
        return self.termination is not None

    def end(self, termination: str, error: str | None = None) -> None:
        if self.termination is None:
            self.termination, self.error = termination, error

    async def start(self) -> None:
        """Open a fresh context and the start URL, and ready the page (navigate queue)."""
        self.episode = await Episode(self.browser, self.env_config, self.url_policy).__aenter__()
        try:
            async with self.ops.use("navigate") as timer:
                await self.episode.open(self.spec.task.start_url)
                if self.prepare is not None:
                    await self.prepare(self.episode, self.spec.task)
            self._latency = {"navigate_s": timer.seconds}
        except NavigationFailed as error:
            self.end("navigation_failed", str(error))
            return
        await self._check_blocked()

    async def _check_blocked(self) -> None:
        evidence = await self.episode.blocked()
        if evidence:
            self.end("blocked", evidence)

    async def observe(self) -> None:
        """Screenshot, page info and (synthetic sites) session state (screenshot queue)."""
        if time.monotonic() - self._clock > self.limits.episode_timeout_s:
            self.end("timeout", f"episode exceeded {self.limits.episode_timeout_s:g} s")
            return
        async with self.ops.use("screenshot") as timer:
            self._observation = await self.episode.observe()
            if self.read_state is not None:
                self._state = await self.read_state(self.episode, self.spec.task)
        self._latency["screenshot_s"] = timer.seconds

    async def decide(self) -> None:
        """Ask the expert for its label, if any (a label that fails leaves the step unlabelled; the
        episode goes on), then the policy (policy queue)."""
        view = Privileged(self.episode.browsing.page, self._state)
        observed = PolicyInput(self.spec.task, self._observation, list(self.history), len(self.steps),
                               self.spec.horizon, view if self.policy.privileged else None, self.spec.trajectory_id)
        self._expert_actions = None
        if self.expert is not None and self._state is not None:
            try:
                self._expert_actions = await self.expert.label(dataclasses.replace(observed, privileged=view))
            except Exception as error:  # e.g. the page navigated while located: the step goes unlabelled
                log.debug("episode %s step %d: no expert label (%s)", self.spec.trajectory_id, len(self.steps), error)
        try:
            async with self.ops.use("policy") as timer:
                self._output = capped(await self.policy.act(observed), self.limits)
        except ContextOverflow as error:
            self.end("context_overflow", str(error))
            return
        except PolicyError as error:
            self.end("policy_error", str(error))
            return
        self._latency["policy_s"] = timer.seconds

    async def execute(self) -> None:
        """Run the parsed calls (execute queue) and record the step."""
        output = self._output
        executed: list[Action] = []
        if output.parse_error is None or output.actions:
            async with self.ops.use("execute") as timer:
                executed = await self.episode.act(output.actions)
            self._latency["execute_s"] = timer.seconds
        state = await self.read_state(self.episode, self.spec.task) if self.read_state else None
        observation = self._observation
        self.steps.append(RecordedStep(
            len(self.steps), observation.screenshot, observation.url, observation.title, observation.elements,
            observation.page_text, output, executed, state_hash(state) if state is not None else None,
            Latency(**self._latency), observation.tabs, observation.active_tab, self._expert_actions))
        self.history.append(Turn(observation, output.response, output.memory, executed, output.parse_error))
        self._latency = {}
        self._state = state
        self.parse_errors_in_a_row = self.parse_errors_in_a_row + 1 if output.parse_error else 0
        await self._check_blocked()
        if self.episode.answer is not None:
            self.end("answered")
        elif state is not None and state.get("task_ended") is True:
            self.end("task_ended")
        elif self.parse_errors_in_a_row >= self.limits.max_parse_errors:
            self.end("parse_error", output.parse_error)
        elif len(self.steps) >= self.spec.horizon:
            self.end("max_steps")

    async def finish(self) -> EpisodeResult:
        """Read the final state, close the context and package the result."""
        final_state = self._state
        if self.episode is not None:
            if self.read_state is not None and final_state is None and self.termination != "navigation_failed":
                try:
                    final_state = await self.read_state(self.episode, self.spec.task)
                except Exception as error:  # the browser may be gone after an env error
                    log.debug("final state unavailable: %s", error)
            refused = list(self.episode.violations.refused)
            try:
                await self.episode.__aexit__(None, None, None)
            except Exception as error:  # a crashed browser cannot close its context
                log.debug("closing context: %s", error)
        else:
            refused = []
        return EpisodeResult(
            self.spec, self.policy.name, self.policy.version, self.policy.prompt_version, self.termination or "cut",
            self.episode.answer if self.episode else None, self.steps, final_state, self.error, self.attempt,
            refused, self.started_at, dt.datetime.now(dt.UTC))

    async def restart(self) -> None:
        """Throw the attempt away and start again in a fresh context (environment failures)."""
        if self.episode is not None:
            try:
                await self.episode.__aexit__(None, None, None)
            except Exception as error:  # the context may already be gone
                log.debug("closing failed context: %s", error)
        self.attempt += 1
        self.episode, self.steps, self.history = None, [], []
        self.termination = self.error = None
        self.parse_errors_in_a_row = 0
        self._clock = time.monotonic()
        await self.start()
