"""The training objectives: small named loss functions in one table.

Every loss sees the response tokens only: (B, K) log-probabilities of each sample's last K
tokens and a mask that is 1 on its response (and end-of-turn) tokens. A sample is one policy
step; its trajectory's reward arrives through `weight` (filtered BC, SFT) or `advantage`
(REINFORCE, GRPO), computed by the accept stage.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from webgym.config import Objective, TrainConfig


@dataclass(frozen=True)
class LossInputs:
    logprobs: torch.Tensor  # (B, K) current policy
    mask: torch.Tensor  # (B, K) 1.0 on response tokens
    weight: torch.Tensor  # (B,)
    advantage: torch.Tensor  # (B,)
    old_logprobs: torch.Tensor | None = None  # (B, K) the policy before this run's updates
    ref_logprobs: torch.Tensor | None = None  # (B, K) the KL reference


Metrics = dict[str, float]
LossFn = Callable[[LossInputs, TrainConfig], tuple[torch.Tensor, Metrics]]


def _sequence_sum(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return (values * mask).sum(dim=-1)  # (B,)


def _token_mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return (values * mask).sum(dim=-1) / mask.sum(dim=-1).clamp(min=1)  # (B,)


def filtered_bc(x: LossInputs, config: TrainConfig) -> tuple[torch.Tensor, Metrics]:
    """WebGym eq. 1: maximise weight * log pi(response | context), summed over the response, mean over steps.

    With weight 1 on kept steps of successful trajectories this is REINFORCE with binary
    rewards and no negative gradient (online filtered behaviour cloning). A step accept marks with a
    negative advantage (the action that ended a failed episode, accept.failed_endings) is learned away
    from instead, by unlikelihood (Welleck et al. 2019): weight * log(1 - pi), bounded where -log pi is not.
    """
    sequence = _sequence_sum(x.logprobs, x.mask)  # (B,) log pi of each step's response
    negative = x.advantage < 0
    unlikely = torch.log(-torch.expm1(sequence.clamp(max=-1e-6)))  # log(1 - pi), finite as pi -> 1
    metrics = {"train/unlikelihood": float(-unlikely[negative].detach().mean())} if bool(negative.any()) else {}
    return -(x.weight * torch.where(negative, unlikely, sequence)).mean(), metrics


def sft(x: LossInputs, config: TrainConfig) -> tuple[torch.Tensor, Metrics]:
    """Supervised warm start: weighted cross-entropy averaged over every response token in the batch.

    Unlike filtered_bc, a long response counts per token rather than per step, as in SFT stacks.
    """
    weighted = x.mask * x.weight[:, None]
    return -(x.logprobs * weighted).sum() / x.mask.sum().clamp(min=1), {}


def reinforce(x: LossInputs, config: TrainConfig) -> tuple[torch.Tensor, Metrics]:
    """REINFORCE: -advantage * log pi(response | context), mean over steps (the baseline is in the advantage)."""
    return -(x.advantage * _sequence_sum(x.logprobs, x.mask)).mean(), {}


def grpo(x: LossInputs, config: TrainConfig) -> tuple[torch.Tensor, Metrics]:
    """Multi-turn GRPO (WebAgent-R1's M-GRPO, OpenWebRL's clipping): per token,

        min(r * A, clip(r, 1 - clip_low, 1 + clip_high) * A) - kl_coef * KL + weight * log pi,   r = pi / pi_old,

    maximised, averaged over each response's tokens, then over responses. KL is the k3 estimator
    exp(ref - logp) - (ref - logp) - 1 to the reference model (always >= 0). The weight term is
    supervised learning on the demonstrations accept mixes in (accept.grpo_demonstration_weight; rolled-out
    steps have weight 0).
    """
    assert x.old_logprobs is not None, "grpo needs the old policy's log-probabilities"
    ratio = torch.exp(x.logprobs - x.old_logprobs)  # (B, K)
    advantage = x.advantage[:, None]  # (B, 1)
    clipped = ratio.clamp(1 - config.clip_low, 1 + config.clip_high)
    per_token = -torch.minimum(ratio * advantage, clipped * advantage)
    metrics = {"train/clip_fraction": float(_token_mean((ratio != clipped).float(), x.mask).mean()),
               "train/ratio": float(_token_mean(ratio.detach(), x.mask).mean())}
    if config.kl_coef > 0:
        assert x.ref_logprobs is not None, "grpo with kl_coef > 0 needs the reference's log-probabilities"
        delta = x.ref_logprobs - x.logprobs
        kl = torch.exp(delta) - delta - 1
        per_token = per_token + config.kl_coef * kl
        metrics["train/kl"] = float(_token_mean(kl.detach(), x.mask).mean())
    imitation = -x.weight * _token_mean(x.logprobs, x.mask)  # (B,)
    if bool((x.weight != 0).any()):
        metrics["train/imitation"] = float(imitation.detach().mean())
    return (_token_mean(per_token, x.mask) + imitation).mean(), metrics


@dataclass(frozen=True)
class ObjectiveLoss:
    loss: LossFn
    needs_old_logprobs: bool = False
    """The loss compares with the policy before the update (computed once, before the first step)."""


OBJECTIVES: dict[Objective, ObjectiveLoss] = {
    "filtered_bc": ObjectiveLoss(filtered_bc),
    "sft": ObjectiveLoss(sft),
    "reinforce": ObjectiveLoss(reinforce),
    "grpo": ObjectiveLoss(grpo, needs_old_logprobs=True),
    "dagger": ObjectiveLoss(filtered_bc),  # the oracle's label of each step, weight 1
}
