"""Token log-probabilities: one definition for the policy's recorded logprob and the trainer's loss.

Both are the model's own distribution (temperature 1, no top-p/top-k warping), so a logprob the
rollout recorded and one the trainer computes for the same tokens are the same quantity.
"""

from __future__ import annotations

import torch


def token_logprobs(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """log p(target) per position: (B, T, V) logits and (B, T) targets -> (B, T).

    Gather minus logsumexp instead of a full log_softmax, so no second (B, T, V) tensor is made.
    """
    logits = logits.float()
    return logits.gather(-1, targets.unsqueeze(-1)).squeeze(-1) - logits.logsumexp(-1)


def response_logits(model: torch.nn.Module, batch: dict[str, torch.Tensor]
                    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The logits that predict the response tokens of a left-padded batch (webgym.models.inputs.collate).

    Returns (B, K, V) logits of each row's last K tokens, K the longest response, those (B, K) tokens and
    the (B, K) mask of those that are response tokens. Only the last K + 1 positions get logits: on a
    real vocabulary (150k) the logits of the whole prompt would not fit in memory.
    """
    mask = batch["loss_mask"]
    keep = int(mask.sum(dim=1).max())
    inputs = {name: value for name, value in batch.items() if name != "loss_mask"}
    logits = model(**inputs, logits_to_keep=keep + 1, use_cache=False).logits  # (B, K + 1, V)
    targets = batch["input_ids"][:, -keep:]  # (B, K): position p's logits predict token p + 1
    return logits[:, :-1], targets, mask[:, -keep:]


def response_logprobs(model: torch.nn.Module, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """(B, K) log-probabilities of the response tokens of a left-padded batch and their (B, K) mask
    (response_logits)."""
    logits, targets, mask = response_logits(model, batch)
    return token_logprobs(logits, targets), mask


@torch.no_grad()
def token_accuracy_and_entropy(logits: torch.Tensor, targets: torch.Tensor, mask: torch.Tensor) -> tuple[float, float]:
    """Over the masked positions: the fraction whose most likely token is the target, and the mean entropy
    (nats) of the model's next-token distribution. (B, T, V) logits, (B, T) targets and mask."""
    logits = logits.float()
    logprobs = logits.log_softmax(-1)  # (B, T, V), freed on return: no gradient is kept
    entropy = -(logprobs.exp() * logprobs).sum(-1)  # (B, T)
    hits = (logits.argmax(-1) == targets).float()  # (B, T)
    mask = mask.float()
    tokens = mask.sum().clamp(min=1)
    return float((hits * mask).sum() / tokens), float((entropy * mask).sum() / tokens)
