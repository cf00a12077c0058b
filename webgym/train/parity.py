"""Log-probability parity: the trainer's recomputation of a response against what the policy recorded.

If prompt building, chat template, image processing or tokenisation differ between the policy that
sampled a step (a vLLM or `webgym serve` endpoint, or the local model) and the trainer, the trainer
learns from contexts the policy never saw and GRPO's ratio pi / pi_old does not start at 1. The
per-token difference shows it: on the same weights it is rounding (< 1e-3) when both sides agree.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch


@dataclass(frozen=True)
class Parity:
    """Per-token |recorded - recomputed| over the samples that carried recorded token log-probabilities."""

    max_abs_diff: float
    """inf when a sample's token counts differ (its response tokenises differently on the two sides)."""
    mean_abs_diff: float
    tokens: int
    samples: int
    mismatched: list[str] = field(default_factory=list)
    """Samples whose recorded and recomputed token counts differ, by name."""

    def metrics(self) -> dict[str, float]:
        return {"train/logprob_max_abs_diff": self.max_abs_diff, "train/logprob_mean_abs_diff": self.mean_abs_diff,
                "train/logprob_parity_tokens": float(self.tokens)}


def compare(recorded: dict[str, Sequence[float]], recomputed: dict[str, torch.Tensor]) -> Parity | None:
    """Parity of the named samples present in both; None when no sample recorded token log-probabilities."""
    names = [name for name in recorded if name in recomputed]
    if not names:
        return None
    diffs, mismatched = [], []
    for name in names:
        ours = recomputed[name].detach().double().cpu()
        theirs = torch.tensor(list(recorded[name]), dtype=torch.float64)
        if ours.shape != theirs.shape:
            mismatched.append(f"{name}: {theirs.numel()} recorded tokens, {ours.numel()} recomputed")
            continue
        diffs.append((ours - theirs).abs())
    every = torch.cat(diffs) if diffs else torch.zeros(0, dtype=torch.float64)
    largest = math.inf if mismatched else (float(every.max()) if every.numel() else 0.0)
    mean = float(every.mean()) if every.numel() else math.inf
    return Parity(largest, mean, int(every.numel()), len(names), mismatched)
