"""What the trainer learns from: one policy step as the policy saw it and what it answered."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


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
    """Filtered BC / SFT: the step's weight (1 for a kept step)."""
    advantage: float = 0.0
    """REINFORCE / GRPO: the step's advantage (reward minus baseline, or group-normalised)."""
    old_logprob: float | None = None
    """Sum of the response's token log-probabilities under the policy that sampled it (steps.logprob), if known."""
    sample_id: str | None = None
    """Where the sample came from (e.g. "trajectory_id:t"), named in error reports."""
