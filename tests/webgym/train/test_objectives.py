"""The objectives against hand-computed values; GRPO's asymmetric clipping stops the gradient where it should."""

from __future__ import annotations

import math

import pytest
import torch

from webgym.config import TrainConfig
from webgym.train.objectives import OBJECTIVES, LossInputs

# Two samples; response tokens are the masked-in ones: sample 0 has log-probs -1, -2; sample 1 has -3, -1.
LOGPROBS = [[-1.0, -2.0, 0.0], [0.0, -3.0, -1.0]]
MASK = [[1.0, 1.0, 0.0], [0.0, 1.0, 1.0]]


def _inputs(weight=(1.0, 0.5), advantage=(1.0, -2.0), old=None, ref=None, logprobs=LOGPROBS) -> LossInputs:
    """The two samples; GRPO's rolled-out steps have weight 0 (accept gives weight only to demonstrations)."""
    tensor = torch.tensor
    return LossInputs(logprobs=tensor(logprobs, requires_grad=True), mask=tensor(MASK), weight=tensor(weight),
                      advantage=tensor(advantage), old_logprobs=None if old is None else tensor(old),
                      ref_logprobs=None if ref is None else tensor(ref))


@pytest.mark.parametrize("name, advantage, expected", [
    ("filtered_bc", (0.0, 0.0), 2.5),   # -(1 * -3 + 0.5 * -4) / 2 samples
    ("sft", (1.0, -2.0), 1.25),          # -(1 * (-1 - 2) + 0.5 * (-3 - 1)) / 4 tokens
    ("reinforce", (1.0, -2.0), -2.5),    # -(1 * -3 + -2 * -4) / 2 samples
])
def test_likelihood_objectives(name, advantage, expected):
    loss, _ = OBJECTIVES[name].loss(_inputs(advantage=advantage), TrainConfig(objective=name))
    assert loss.item() == pytest.approx(expected)
    assert not OBJECTIVES[name].needs_old_logprobs


def test_filtered_bc_learns_away_from_a_failed_ending():
    """A step with a negative advantage (accept's failed ending) counts as log(1 - pi): its gradient lowers pi,
    and the loss stays finite where the policy was certain of it."""
    inputs = _inputs(advantage=(0.0, -1.0))
    loss, metrics = OBJECTIVES["filtered_bc"].loss(inputs, TrainConfig())
    assert loss.item() == pytest.approx(-(-3.0 + 0.5 * math.log(1 - math.exp(-4.0))) / 2)
    assert metrics["train/unlikelihood"] == pytest.approx(-math.log(1 - math.exp(-4.0)), rel=1e-5)
    loss.backward()
    assert (inputs.logprobs.grad[1, 1:] > 0).all()  # descending the loss lowers the failed step's log-probability
    assert (inputs.logprobs.grad[0, :2] < 0).all()  # and raises the successful one's
    certain, _ = OBJECTIVES["filtered_bc"].loss(_inputs(advantage=(0.0, -1.0), logprobs=[[0.0] * 3] * 2),
                                                 TrainConfig())
    assert math.isfinite(certain.item())


def test_grpo_clips_asymmetrically():
    config = TrainConfig(objective="grpo")
    # sample 0 (A = +1): ratio 1.5 on both tokens, clipped at 1.28 -> -1.28 per token
    # sample 1 (A = -1): ratio 0.5, clipped at 0.8; min(-0.5, -0.8) = -0.8 -> +0.8 per token
    old = [[lp - math.log(1.5) for lp in LOGPROBS[0]], [lp - math.log(0.5) for lp in LOGPROBS[1]]]
    inputs = _inputs(weight=(0.0, 0.0), advantage=(1.0, -1.0), old=old)
    loss, metrics = OBJECTIVES["grpo"].loss(inputs, config)
    assert loss.item() == pytest.approx((-1.28 + 0.8) / 2)
    assert metrics["train/clip_fraction"] == pytest.approx(1.0)
    loss.backward()
    assert torch.count_nonzero(inputs.logprobs.grad) == 0  # both are clipped: no gradient
    assert OBJECTIVES["grpo"].needs_old_logprobs


def test_grpo_inside_the_clip_range_is_the_policy_gradient():
    # ratio 1.1 with A = +1 is inside [0.8, 1.28]: d(-r * A)/d logp = -r per token, averaged over 2 tokens
    old = [[lp - math.log(1.1) for lp in row] for row in LOGPROBS]
    inputs = _inputs(weight=(0.0, 0.0), advantage=(1.0, 1.0), old=old)
    loss, metrics = OBJECTIVES["grpo"].loss(inputs, TrainConfig(objective="grpo", clip_high=0.2))
    assert loss.item() == pytest.approx(-1.1) and metrics["train/clip_fraction"] == 0
    loss.backward()
    expected = torch.tensor(MASK) * (-1.1 / 2 / 2)  # / 2 tokens per response / 2 responses
    assert torch.allclose(inputs.logprobs.grad, expected)


def test_grpo_kl_penalty_is_k3_to_the_reference():
    config = TrainConfig(objective="grpo", kl_coef=0.1)
    same, _ = OBJECTIVES["grpo"].loss(_inputs(weight=(0.0, 0.0), advantage=(0.0, 0.0), old=LOGPROBS, ref=LOGPROBS),
                                      config)
    assert same.item() == pytest.approx(0.0)
    ref = [[lp + 0.5 for lp in row] for row in LOGPROBS]  # reference likes every response token more
    loss, metrics = OBJECTIVES["grpo"].loss(_inputs(weight=(0.0, 0.0), advantage=(0.0, 0.0), old=LOGPROBS, ref=ref),
                                            config)
    kl = math.exp(0.5) - 0.5 - 1
    assert metrics["train/kl"] == pytest.approx(kl) and loss.item() == pytest.approx(0.1 * kl)


def test_grpo_learns_weighted_demonstrations_by_likelihood_beside_the_policy_gradient():
    # sample 0 is a demonstration (weight 2, advantage 0): -2 * mean(-1, -2) = 3; sample 1 a rolled-out
    # step at ratio 1 (A = +1): -1 per token; the loss is their mean over the 2 responses
    inputs = _inputs(weight=(2.0, 0.0), advantage=(0.0, 1.0), old=LOGPROBS)
    loss, metrics = OBJECTIVES["grpo"].loss(inputs, TrainConfig(objective="grpo"))
    assert loss.item() == pytest.approx((3.0 - 1.0) / 2) and metrics["train/imitation"] == pytest.approx(3.0 / 2)
    loss.backward()
    demonstration = torch.tensor(MASK[0]) * (-2.0 / 2 / 2)  # weight / 2 tokens / 2 responses, unclipped
    assert torch.allclose(inputs.logprobs.grad[0], demonstration)


def test_config_rejects_kl_outside_grpo():
    with pytest.raises(ValueError, match="kl_coef is only used by objective grpo"):
        TrainConfig(objective="filtered_bc", kl_coef=0.1)
    with pytest.raises(ValueError, match="reference is only used with train.kl_coef > 0"):
        TrainConfig(objective="grpo", reference="/ckpt")
    assert set(OBJECTIVES) == {"filtered_bc", "sft", "reinforce", "grpo", "dagger"}


def test_every_objective_of_the_profile_has_a_loss_and_a_selection_rule():
    from typing import get_args

    from stages.accept import OBJECTIVES as SELECTION_RULES
    from webgym.config import Objective
    from webgym.train.objectives import OBJECTIVES as LOSSES

    assert set(LOSSES) == set(SELECTION_RULES) == set(get_args(Objective))
