"""What the flows return: the reports of a rollout and of a night, in a module of their own so that
flows/artifacts.py can read them without importing the flows that make them (no import circle)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from stages.evaluate import EvaluateReport


@dataclass
class RolloutReport:
    """What the flow did, summed over shards."""

    run_key: str = ""
    trajectory_ids: list[str] = field(default_factory=list)
    """Every episode of this rollout, run now or by an earlier try."""
    episodes: int = 0
    skipped: int = 0
    steps: int = 0
    wall_s: float = 0.0
    terminations: dict[str, int] = field(default_factory=dict)

    def add(self, shard: dict[str, Any]) -> None:
        self.episodes += shard["episodes"]
        self.skipped += shard["skipped"]
        self.steps += shard["steps"]
        self.wall_s = max(self.wall_s, shard["wall_s"])
        for name, count in shard["terminations"].items():
            self.terminations[name] = self.terminations.get(name, 0) + count


@dataclass
class IterationSummary:
    """One iteration's figures, as the CLI prints them."""

    iteration: int
    kind: str
    """warm start (oracle demonstrations + SFT), rollout, or no training signal (accept kept no step of
    the rollouts: no checkpoint, the served policy stays)."""
    episodes: int
    rollout_success: float | None
    accepted_steps: int
    checkpoint_id: str | None
    """The new checkpoint (None: no training signal)."""
    promotion: dict | None
    """The promotions row of the new checkpoint: promoted or kept back, with its validation figures."""
    evaluation: EvaluateReport
    """The held-out evaluation of the policy served after the iteration (success with intervals, by held-out
    kind): the new checkpoint when promoted, else the one served before."""
    rollout_steps_per_s: float | None = None
    """Training rollout steps per second of this run's rollouts (None: none ran, e.g. a resumed iteration)."""
    stage_s: dict[str, float] = field(default_factory=dict)
    """Wall seconds per stage of the iteration (flow name, with its split where it has one), summed over calls."""
    wall_s: float = 0.0

    def scalars(self) -> dict[str, float | None]:
        """The iteration's tracked scalars (webgym/tracking.py; None: not measured this iteration)."""
        promotion = self.promotion or {}
        return {"night/episodes": float(self.episodes), "night/rollout_success": self.rollout_success,
                "night/accepted_steps": float(self.accepted_steps),
                "night/heldout_success": self.evaluation.success_rate,
                "night/validation_success": promotion.get("success_rate"),
                "night/promoted": float(promotion["promoted"]) if promotion else None,
                "night/rollout_steps_per_s": self.rollout_steps_per_s, "night/iteration_s": self.wall_s,
                **{f"stage_s/{name}": seconds for name, seconds in self.stage_s.items()}}


@dataclass
class NightlySummary:
    """What a night did: where its lake, warehouse and report are, the rows per table, and each iteration."""

    data_root: str
    warehouse: str
    report: str
    rows: dict[str, int]
    recovered_rows: int
    iterations: list[IterationSummary] = field(default_factory=list)
    baseline: EvaluateReport | None = None
    """Held-out evaluation of the untrained starting policy, when this run evaluated it."""
