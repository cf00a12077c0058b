"""The `env` and `rollout` blocks: the browser each episode gets, and how the engine runs episodes."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from schemas.values import HORIZONS, difficulty_band
from webgym.config.base import Section


class EnvConfig(Section):
    """Browser environment settings (the `env` block of a profile)."""

    viewport_width: int = Field(default=1280, ge=200, description="Viewport width in CSS pixels.")
    viewport_height: int = Field(default=720, ge=200, description="Viewport height in CSS pixels.")
    device_scale_factor: float = Field(default=1.0, gt=0, description="Device pixel ratio of screenshots.")
    observation: Literal["coordinates", "set_of_marks"] = Field(
        default="coordinates", description="Plain screenshot, or screenshot with numbered interactive elements.")
    normalized_coordinates: bool = Field(
        default=False, description="Agent coordinates are 0-1000 of the viewport (Qwen3-VL) instead of pixels.")
    navigation_timeout_s: float = Field(default=15.0, gt=0, description="Limit for one page load.")
    action_timeout_s: float = Field(default=10.0, gt=0, description="Limit for one tool call.")
    screenshot_timeout_s: float = Field(default=10.0, gt=0, description="Limit for one screenshot.")
    navigation_retries: int = Field(default=2, ge=0, description="Extra tries of the initial navigation.")
    allow_public_web: bool = Field(
        default=False, description="Let agents reach public hosts besides the synthetic sites (real-web runs).")
    browser_endpoint: str | None = Field(
        default=None, description="ws:// URL of a Playwright browser server (`playwright run-server`) to run "
                                  "episodes on instead of a local Chromium (scale-out); null: launch locally.")
    allowed_hosts: list[str] = Field(
        default_factory=list, description="Hosts (or host:port) allowed even on private addresses, e.g. self-hosted "
                                          "WebArena sites; still vetted request by request.")
    block_after: int = Field(
        default=2, ge=1,
        description="A website is blocklisted (the sampler skips it) after blocked episodes (CAPTCHA, HTTP 403/429, "
                    "the judge's blocking detector) from this many different tasks.")
    unreachable_after: int = Field(
        default=3, ge=1,
        description="A website is blocklisted as unreachable after this many episodes whose start URL never opened.")
    egress_host: str = Field(
        default="127.0.0.1", description="Address each episode's egress proxy listens on. The browser connects to "
                                         "it, so with browser_endpoint set use this machine's address as the "
                                         "browser's machine sees it.")


class RolloutConfig(Section):
    """Rollout engine settings (the `rollout` block of a profile)."""

    engine: Literal["async", "sync"] = Field(default="async", description="async engine, or the synchronous baseline.")
    concurrency: int = Field(default=8, ge=1, description="Episodes in flight (one browser context each).")
    group_size: int = Field(default=1, ge=1, description="Independent episodes per task (GRPO groups).")
    label_evaluations: bool = Field(
        default=False,
        description="The oracle labels every step of held-out evaluation episodes on synthetic sites with its own "
                    "calls from the state the policy reached (steps.expert_actions; an oracle search per step, "
                    "outside the policy's time), so the report can say which kinds of decision each checkpoint "
                    "gets right. The policy acts as without it.")
    horizons: dict[str, int] = Field(
        default_factory=lambda: dict(HORIZONS),
        description="Step limit per difficulty band (default WebGym's shortened horizons 10/20/30).")
    default_horizon: int = Field(default=20, ge=1, description="Step limit of tasks without a difficulty.")
    queues: dict[str, int] = Field(
        default={"navigate": 4, "screenshot": 4, "execute": 4, "policy": 64},
        description="Slots per operation queue (navigate, screenshot, execute, policy).")
    env_retries: int = Field(default=2, ge=0, description="Fresh-context retries of an episode after an environment failure.")
    max_parse_errors: int = Field(default=3, ge=1, description="Consecutive unparseable responses that end an episode.")
    max_calls_per_step: int = Field(
        default=10, ge=1, description="Tool calls of one response that run; the rest are dropped and the step's "
                                      "parse_error says so (it counts towards max_parse_errors).")
    max_response_chars: int = Field(
        default=32_000, ge=100, description="Characters of a response (and its memory) stored and kept in the context; "
                                            "a longer one is cut and the step's parse_error says so. The parser "
                                            "reads at most the first 32,000 whatever this is, so parsing stays fast.")
    episode_timeout_s: float = Field(default=900.0, gt=0, description="Wall-time limit of one episode.")
    straggler_fraction: float = Field(
        default=1.0, gt=0, le=1, description="End the iteration once this fraction of episodes is done; the rest are cut.")
    commit_every: int = Field(default=16, ge=1, description="Trajectories per committed Parquet part (all are journaled at once).")
    shards: int = Field(default=1, ge=1, description="Parts the episodes are split into, one task-runner task each.")
    task_runner: Literal["threads", "dask", "ray"] = Field(
        default="threads", description="Where shards run: threads here, or Dask / Ray workers (scale-out).")
    workers: int = Field(default=1, ge=1, description="Task-runner workers (threads, or local Dask processes).")
    cluster_address: str | None = Field(
        default=None, description="Address of an existing Dask scheduler or Ray cluster; null starts a local one.")

    def horizon(self, difficulty: int | None) -> int:
        """The step limit of a task of this difficulty (its band's horizon)."""
        return self.horizons[difficulty_band(difficulty)] if difficulty else self.default_horizon
