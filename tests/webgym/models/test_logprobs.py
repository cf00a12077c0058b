"""Token accuracy and entropy over response tokens: the trainer's tracked train/accuracy and train/entropy."""

from __future__ import annotations

import math

import pytest
import torch

from webgym.models.logprobs import token_accuracy_and_entropy


def test_accuracy_and_entropy_count_the_masked_tokens_only():
    logits = torch.tensor([[[0.0, 0.0, 0.0, 0.0], [0.0, 50.0, 0.0, 0.0], [50.0, 0.0, 0.0, 0.0]]])  # (1, 3, 4)
    targets = torch.tensor([[2, 1, 3]])  # a uniform guess (a tie goes to token 0: a miss), a sure hit, a sure miss
    accuracy, entropy = token_accuracy_and_entropy(logits, targets, torch.tensor([[0, 1, 1]]))
    assert accuracy == 0.5 and entropy == pytest.approx(0.0, abs=1e-6)
    accuracy, entropy = token_accuracy_and_entropy(logits, targets, torch.tensor([[1, 1, 0]]))
    assert accuracy == 0.5 and entropy == pytest.approx(math.log(4) / 2)
