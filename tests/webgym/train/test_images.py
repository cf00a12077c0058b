"""Screenshots reach the loss: the trainer's loss depends on the pixels and trains the vision tower
(unless it is frozen). VLM training that silently ignores pixel values would pass every other test."""

from __future__ import annotations

import torch

from tests.webgym.models.conftest import CLICK, messages, policy_input, png, tiny  # noqa: F401 (fixture)
from webgym.config import ContextConfig
from webgym.models.checkpoint import load_vlm
from webgym.models.inputs import collate, encode_sample
from webgym.models.logprobs import response_logprobs
from webgym.policies.context import build_messages
from webgym.train.trainer import freeze_vision, vision_parameters


def _loss(vlm, context: list[dict]) -> torch.Tensor:
    """The SFT loss of CLICK after `context`, as the trainer computes it (encode, collate, response logprobs)."""
    batch = collate([encode_sample(vlm, context, CLICK)], vlm.tokenizer.pad_token_id)
    logprobs, mask = response_logprobs(vlm.model, batch)
    return -(logprobs * mask).sum() / mask.sum()


def _with_screenshot(color: str) -> list[dict]:
    return build_messages(policy_input(history=1, screenshot=png(color)), ContextConfig())


def test_changing_only_the_screenshot_changes_the_loss(tiny):
    red, blue = _with_screenshot("red"), _with_screenshot("blue")
    assert [m["role"] for m in red] == [m["role"] for m in blue]  # same text, only the pixels differ
    with torch.no_grad():
        assert abs(float(_loss(tiny, red)) - float(_loss(tiny, blue))) > 1e-4
        assert float(_loss(tiny, red)) == float(_loss(tiny, _with_screenshot("red")))


def test_the_vision_tower_gets_gradients_unless_frozen(tiny_checkpoint):
    vlm = load_vlm(tiny_checkpoint)
    vlm.model.train()
    _loss(vlm, messages(history=1)).backward()
    vision = vision_parameters(vlm.model)
    assert vision and all(p.grad is not None for p in vision.values())
    assert sum(float(p.grad.abs().sum()) for p in vision.values()) > 0
    assert sum(int(p.grad.count_nonzero()) for p in vision.values()) > 0.5 * sum(p.numel() for p in vision.values())

    frozen = load_vlm(tiny_checkpoint)
    frozen.model.train()
    freeze_vision(frozen.model)
    _loss(frozen, messages(history=1)).backward()
    assert all(p.grad is None for p in vision_parameters(frozen.model).values())
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in frozen.model.parameters())
