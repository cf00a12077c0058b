"""The VLM trainer on a tiny Qwen3-VL: loss falls, weights change, the checkpoint reloads and acts."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace

import pytest
import torch

from tests.tensorboard_events import scalars
from tests.webgym.models.conftest import CLICK, png, policy_input
from webgym.config import ConfigError, ContextConfig, SamplingConfig, TrainConfig
from webgym.models.checkpoint import load_vlm
from webgym.models.inputs import collate, encode_sample
from webgym.models.logprobs import response_logprobs
from webgym.policies.local import LocalPolicy, LocalPolicyConfig
from webgym.tracking import Tracker
from webgym.train.samples import TrainingSample
from webgym.train.trainer import TrainError, train

ANSWER = '<tool_call>{"name": "answer", "arguments": {"text": "42"}}</tool_call>'
FAST = dict(learning_rate=3e-3, lr_schedule="constant", warmup_ratio=0.0)


def _context(task: str, color: str) -> list[dict]:
    """A short context with a screenshot (the agent's real prompt is 1,000+ tokens: slow for many steps)."""
    return [{"role": "system", "content": "You are a web agent. Answer with one tool call."},
            {"role": "user", "content": [{"type": "text", "text": task}, {"type": "image", "png": png(color)}]}]


def _samples() -> list[TrainingSample]:
    return [TrainingSample(_context("Buy the red mug", "red"), CLICK, advantage=1.0, sample_id="r0:0"),
            TrainingSample(_context("How many mugs?", "blue"), ANSWER, advantage=-1.0, sample_id="r1:1")]


def _sequence_logprobs(path, samples: list[TrainingSample]) -> list[float]:
    vlm = load_vlm(path)
    batch = collate([encode_sample(vlm, s.messages, s.response) for s in samples], vlm.tokenizer.pad_token_id)
    with torch.no_grad():
        logprobs, mask = response_logprobs(vlm.model, batch)
    return (logprobs * mask).sum(dim=1).tolist()


def _assert_trained(result, base, samples) -> None:
    losses = [step["train/loss"] for step in result.history]
    assert losses[-1] < losses[0] * 0.9, losses
    assert all(name.startswith("train/") for name in result.metrics)
    assert result.metrics["train/steps"] == len(result.history) and result.metrics["train/loss"] == losses[-1]
    before, after = load_vlm(base).model.state_dict(), load_vlm(result.path).model.state_dict()
    assert any(not torch.equal(before[name], after[name]) for name in before)
    assert all(a > b for a, b in zip(_sequence_logprobs(result.path, samples), _sequence_logprobs(base, samples)))


@pytest.mark.slow
def test_filtered_bc_learns_and_its_checkpoint_drives_the_local_policy(tiny_checkpoint, tmp_path, caplog):
    samples = _samples()
    config = TrainConfig(objective="filtered_bc", epochs=6, micro_batch_size=2, **FAST)
    with caplog.at_level(logging.INFO, logger="webgym.train"):
        result = train(samples, tiny_checkpoint, tmp_path / "ckpt", config)
    _assert_trained(result, tiny_checkpoint, samples)
    assert result.metrics["train/samples"] == 2 and result.metrics["train/skipped_samples"] == 0
    assert any("train step 6/6: train/loss=" in r.getMessage() for r in caplog.records)
    policy = LocalPolicy(LocalPolicyConfig(checkpoint=str(result.path)), ContextConfig(),
                         SamplingConfig(max_tokens=16))
    try:
        output = asyncio.run(policy.act(policy_input(history=1)))
    finally:
        policy.close()
    assert output.response is not None and output.logprob is not None


def test_grpo_raises_the_positive_advantage_response_and_lowers_the_negative(tiny_checkpoint, tmp_path):
    samples = [replace(s, weight=0.0) for s in _samples()]  # rolled-out steps, as accept gives them to GRPO
    config = TrainConfig(objective="grpo", epochs=4, micro_batch_size=2, kl_coef=0.01, **FAST)
    result = train(samples, tiny_checkpoint, tmp_path / "ckpt", config)
    before, after = _sequence_logprobs(tiny_checkpoint, samples), _sequence_logprobs(result.path, samples)
    assert after[0] > before[0] and after[1] < before[1], (before, after)
    assert result.history[0]["train/clip_fraction"] == 0 and result.history[0]["train/kl"] == pytest.approx(0)
    assert result.history[-1]["train/kl"] > 0


def test_every_optimiser_step_is_tracked_with_token_accuracy_entropy_learning_rate_and_gradient_norm(
        tiny_checkpoint, tmp_path):
    samples = [replace(s, weight=0.0) for s in _samples()]
    config = TrainConfig(objective="grpo", epochs=2, micro_batch_size=1, gradient_accumulation_steps=2, kl_coef=0.01,
                         **FAST)
    with Tracker(tmp_path / "tb") as tracker:
        result = train(samples, tiny_checkpoint, tmp_path / "ckpt", config, tracker)
    tracked = scalars(tmp_path / "tb")
    for name in ("train/loss", "train/accuracy", "train/entropy", "train/lr", "train/grad_norm", "train/kl",
                 "train/clip_fraction"):
        assert tracked[name] == [(step, pytest.approx(h[name], rel=1e-5)) for step, h in enumerate(result.history, 1)]
    assert len(result.history) == 2 and all(0 <= value <= 1 for _, value in tracked["train/accuracy"])
    assert all(value > 0 for _, value in tracked["train/entropy"]) and tracked["train/lr"][0][1] == pytest.approx(3e-3)


def test_gradient_accumulation_matches_one_larger_batch(tiny_checkpoint, tmp_path):
    samples = _samples()
    whole = train(samples, tiny_checkpoint, tmp_path / "whole", TrainConfig(micro_batch_size=2, max_steps=1, **FAST))
    split = train(samples, tiny_checkpoint, tmp_path / "split",
                  TrainConfig(micro_batch_size=1, gradient_accumulation_steps=2, max_steps=1, **FAST))
    # the norm is taken before clipping: a wrongly scaled accumulation shows here (Adam would hide it)
    assert whole.metrics["train/grad_norm"] == pytest.approx(split.metrics["train/grad_norm"], rel=1e-4)
    assert whole.metrics["train/loss"] == pytest.approx(split.metrics["train/loss"], rel=1e-5)
    base = load_vlm(tiny_checkpoint).model.state_dict()
    a, b = load_vlm(whole.path).model.state_dict(), load_vlm(split.path).model.state_dict()
    update_a = torch.cat([(a[name] - base[name]).flatten() for name in base])
    update_b = torch.cat([(b[name] - base[name]).flatten() for name in base])
    # Adam's first step is about lr * sign(gradient): entries with a near-zero gradient may differ by rounding
    assert torch.nn.functional.cosine_similarity(update_a, update_b, dim=0) > 0.999


def test_warmup_then_cosine_decay(tiny_checkpoint, tmp_path):
    text_only = [TrainingSample([{"role": "user", "content": "Say ok."}], "ok")]
    config = TrainConfig(epochs=4, learning_rate=1e-3, warmup_ratio=0.5, lr_schedule="cosine")
    result = train(text_only, tiny_checkpoint, tmp_path / "ckpt", config)
    assert [round(step["train/lr"], 8) for step in result.history] == [0.0, 5e-4, 1e-3, 5e-4]


def test_bad_samples_are_reported_and_the_rest_train(tiny_checkpoint, tmp_path, caplog):
    junk = TrainingSample([{"role": "user", "content": [{"type": "image", "png": b"junk"}]}], "x", sample_id="r9:3")
    long = TrainingSample(_context("Buy the red mug", "red"), CLICK * 20, sample_id="r9:4")
    config = TrainConfig(max_length=300, **FAST)
    with caplog.at_level(logging.WARNING, logger="webgym.train"):
        result = train([junk, _samples()[0], long], tiny_checkpoint, tmp_path / "ckpt", config)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("sample 0 (r9:3) skipped: message 0 part 0: not a readable image" in w for w in warnings)
    assert any("sample 2 (r9:4) skipped" in w and "exceed train.max_length 300" in w for w in warnings)
    assert result.metrics["train/skipped_samples"] == 2 and result.metrics["train/samples"] == 1
    with pytest.raises(TrainError, match="none of the 1 training samples is usable"):
        train([junk], tiny_checkpoint, tmp_path / "none", config)
    assert not (tmp_path / "none").exists()
    with pytest.raises(TrainError, match="ckpt already exists; train into a new one"):
        train(_samples(), tiny_checkpoint, tmp_path / "ckpt", config)  # refused before any training


def test_bf16_checkpointing_and_a_frozen_vision_tower(tiny_checkpoint, tmp_path):
    config = TrainConfig(precision="bf16", gradient_checkpointing=True, freeze_vision=True, micro_batch_size=1,
                         gradient_accumulation_steps=4, **FAST)  # 1 micro-batch wrapped round to 4: one step
    result = train(_samples()[:1], tiny_checkpoint, tmp_path / "ckpt", config)
    assert result.metrics["train/steps"] == 1
    before, after = load_vlm(tiny_checkpoint).model.state_dict(), load_vlm(result.path).model.state_dict()
    changed = {name for name in before if not torch.equal(before[name], after[name])}
    assert changed and not any(".visual." in f".{name}" for name in changed)
    assert any(name.startswith("model.visual.") for name in before)


def test_bf16_on_the_cpu_learns(tiny_checkpoint, tmp_path):
    """train.precision bf16 on the device auto picks here (the CPU): autocast's bfloat16 forward, fp32 weights."""
    samples = _samples()
    config = TrainConfig(objective="filtered_bc", epochs=6, micro_batch_size=2, precision="bf16", device="auto",
                         **FAST)
    result = train(samples, tiny_checkpoint, tmp_path / "ckpt", config)
    _assert_trained(result, tiny_checkpoint, samples)
    assert load_vlm(result.path).model.dtype == torch.float32  # master weights stay fp32


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the behaviour of a machine without a GPU")
def test_a_cuda_device_without_a_gpu_stops_before_any_work(tiny_checkpoint, tmp_path):
    with pytest.raises(ConfigError, match="train.device is cuda but torch .* set train.device: auto or cpu"):
        train(_samples(), tiny_checkpoint, tmp_path / "ckpt", TrainConfig(device="cuda", **FAST))
    assert not (tmp_path / "ckpt").exists()


@pytest.mark.slow
@pytest.mark.parametrize(("stage", "precision"), [(2, "fp32"), (3, "fp32"), (2, "bf16")])
def test_deepspeed_zero_on_cpu(tiny_checkpoint, tmp_path, stage, precision):
    """DeepSpeed with gloo on CPU, both stages and ZeRO-2 in bf16 (the GPU recipe) in one process; the first run
    JIT-compiles ops into .cache/."""
    samples = _samples()
    config = TrainConfig(objective="filtered_bc", epochs=6, micro_batch_size=2, zero_stage=stage,
                         precision=precision, **FAST)
    result = train(samples, tiny_checkpoint, tmp_path / "ckpt", config)
    _assert_trained(result, tiny_checkpoint, samples)
    assert result.metrics["train/engine_init_s"] > 0


@pytest.mark.slow
def test_grpo_under_deepspeed_zero2_in_bf16_on_cpu(tiny_checkpoint, tmp_path):
    """GRPO as the GPU check's round trains it (ZeRO-2, bf16): the old policy's log-probabilities come from the
    engine itself, so the first step's ratios are 1 (nothing clipped), and the advantages move each response."""
    samples = [replace(s, weight=0.0) for s in _samples()]
    config = TrainConfig(objective="grpo", epochs=4, micro_batch_size=2, zero_stage=2, precision="bf16", **FAST)
    result = train(samples, tiny_checkpoint, tmp_path / "ckpt", config)
    before, after = _sequence_logprobs(tiny_checkpoint, samples), _sequence_logprobs(result.path, samples)
    assert after[0] > before[0] and after[1] < before[1], (before, after)
    assert result.history[0]["train/clip_fraction"] == 0
