"""Train a vision-language policy on training samples and write a checkpoint in Hugging Face layout.

Reads top to bottom: config -> seed -> model -> data -> loss -> loop -> checkpoint. The
checkpoint is what the local policy loads and what vLLM serves (webgym/models/checkpoint.py).
Metrics are namespaced (train/loss, train/grad_norm, ...) and go through logging.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch

from webgym.config import TrainConfig
from webgym.models.checkpoint import VLM, load_vlm, save_vlm
from webgym.models.inputs import InputError, collate, encode_sample
from webgym.models.logprobs import response_logits, response_logprobs, token_accuracy_and_entropy, token_logprobs
from webgym.tracking import NO_TRACKING, Tracker
from webgym.train.engine import make_engine, training_device
from webgym.train.objectives import OBJECTIVES, LossInputs
from webgym.train.parity import Parity, compare
from webgym.train.samples import TrainingSample

log = logging.getLogger(__name__)

PARITY_TOLERANCE = 1e-3
"""Largest per-token |recorded - recomputed| log-probability that is rounding, not a mismatch, in fp32."""

BF16_PARITY_TOLERANCE = 0.1
"""The same where either side computes in bfloat16 (train.precision bf16; a GPU server's default dtype).
bfloat16 keeps 8 significant bits (relative rounding 2**-8 = 0.4%), so a logit near 10 already moves by about
0.04 on rounding alone, and the server's cached one-token steps and the trainer's whole-sequence pass round
differently at every layer. 0.1 stays well inside GRPO's clip range (a ratio of exp(0.1) = 1.105 against
1 - 0.2 and 1 + 0.28): rounding never clips a token, while a real mismatch (another prompt, image or
tokenisation) moves log-probabilities by whole nats (the random base model's tokens sit near -log(vocabulary))."""


class TrainError(ValueError):
    """Training cannot start: no usable sample, or a bad base checkpoint; the message says why."""


@dataclass
class TrainResult:
    path: Path | None
    """The checkpoint directory (None on data-parallel ranks other than 0, which do not write)."""
    metrics: dict[str, float]
    """Final metrics, e.g. train/loss, train/grad_norm, train/steps: the checkpoints table's `metrics`."""
    history: list[dict[str, float]] = field(default_factory=list)
    """The metrics of every optimiser step, in order."""


# ---- data helpers -------------------------------------------------------------------------------

def _name(sample: TrainingSample, index: int) -> str:
    return f"sample {index}" + (f" ({sample.sample_id})" if sample.sample_id else "")


def _usable(vlm: VLM, samples: list[TrainingSample], config: TrainConfig) -> list[int]:
    """Indices of samples that encode and fit max_length; every other one is reported and skipped."""
    kept = []
    for i, sample in enumerate(samples):
        try:
            if not isinstance(sample.response, str) or not isinstance(sample.messages, list):
                raise InputError("response must be a string and messages a list of chat messages")
            length = encode_sample(vlm, sample.messages, sample.response, sample.response_ids).length
        except InputError as error:
            log.warning("train: %s skipped: %s", _name(sample, i), error)
            continue
        if length > config.max_length:
            log.warning("train: %s skipped: %d tokens exceed train.max_length %d", _name(sample, i), length,
                        config.max_length)
            continue
        kept.append(i)
    return kept


def _micro_batches(indices: list[int], config: TrainConfig, ranks: int) -> list[list[int]]:
    """Shuffled micro-batches for every epoch, wrapped round to fill the last optimiser step on every rank."""
    order = torch.Generator().manual_seed(config.seed)
    flat = [indices[j] for _ in range(config.epochs) for j in torch.randperm(len(indices), generator=order).tolist()]
    size = config.micro_batch_size
    batches = [flat[i:i + size] for i in range(0, len(flat), size)]
    batches[-1] += flat[:size - len(batches[-1])]
    group = config.gradient_accumulation_steps * ranks
    batches += [batches[i % len(batches)] for i in range(-len(batches) % group)]
    if config.max_steps is not None:
        batches = batches[:config.max_steps * group]
    return batches


def _tensors(vlm: VLM, samples: list[TrainingSample], batch: list[int], device: torch.device) -> dict:
    encoded = [encode_sample(vlm, samples[i].messages, samples[i].response, samples[i].response_ids) for i in batch]
    return {name: value.to(device) for name, value in collate(encoded, vlm.tokenizer.pad_token_id).items()}


def _right_aligned(rows: list[torch.Tensor], width: int) -> torch.Tensor:
    """Per-sample response values laid out like response_logprobs' (B, K) output (responses end each row)."""
    out = torch.zeros((len(rows), width), device=rows[0].device)
    for r, row in enumerate(rows):
        out[r, width - row.shape[0]:] = row[-width:]
    return out


@torch.no_grad()
def _frozen_logprobs(model: torch.nn.Module, vlm: VLM, samples: list[TrainingSample], indices: list[int],
                     micro_batch_size: int, device: torch.device,
                     autocast: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext
                     ) -> dict[int, torch.Tensor]:
    """Each sample's response-token log-probabilities under `model` as it is now (no gradient)."""
    out: dict[int, torch.Tensor] = {}
    for start in range(0, len(indices), micro_batch_size):
        batch = indices[start:start + micro_batch_size]
        with autocast():
            logprobs, mask = response_logprobs(model, _tensors(vlm, samples, batch, device))
        for row, i in enumerate(batch):
            out[i] = logprobs[row][mask[row]].float()
    return out


def _parity(samples: list[TrainingSample], computed: dict[int, torch.Tensor]) -> Parity | None:
    recorded = {_name(samples[i], i): samples[i].old_token_logprobs for i in computed
                if samples[i].old_token_logprobs is not None}
    return compare(recorded, {_name(samples[i], i): lp for i, lp in computed.items()})


def logprob_parity(vlm: VLM, samples: list[TrainingSample], micro_batch_size: int = 1) -> Parity | None:
    """The trainer's recomputation of the samples' response tokens under `vlm` against the token
    log-probabilities the policy recorded (None when none did). Run it on the weights that sampled them."""
    computed = _frozen_logprobs(vlm.model.eval(), vlm, samples, list(range(len(samples))), micro_batch_size,
                                vlm.model.device)
    return _parity(samples, computed)


def vision_parameters(model: torch.nn.Module) -> dict[str, torch.nn.Parameter]:
    """The vision tower's parameters (Qwen-VL names them model.visual.*)."""
    return {name: parameter for name, parameter in model.named_parameters() if ".visual." in f".{name}"}


def freeze_vision(model: torch.nn.Module) -> None:
    """Keep the vision tower as it is: its parameters get no gradient and no update."""
    for parameter in vision_parameters(model).values():
        parameter.requires_grad_(False)


# ---- training -----------------------------------------------------------------------------------

def train(samples: list[TrainingSample], base: str | Path, output_dir: str | Path, config: TrainConfig,
          tracker: Tracker = NO_TRACKING) -> TrainResult:
    """Train from the checkpoint `base` on `samples`; write the result to the new directory `output_dir`.
    Every optimiser step's metrics (loss, token accuracy and entropy, learning rate, gradient norm, ...) go to
    `tracker` from rank 0."""
    # config
    objective = OBJECTIVES[config.objective]
    device = training_device(config)  # a device this machine lacks stops here, before any work
    ranks = int(os.environ.get("WORLD_SIZE", "1")) if config.zero_stage else 1
    rank = int(os.environ.get("RANK", "0")) if config.zero_stage else 0
    if Path(output_dir).exists():
        raise TrainError(f"checkpoint directory {output_dir} already exists; train into a new one")
    started = time.perf_counter()

    # seed
    torch.manual_seed(config.seed)

    # model: fp32 master weights; bf16 comes from autocast or DeepSpeed's bf16 mode (which moves the model itself)
    vlm = load_vlm(base, device="cpu" if config.zero_stage else str(device), dtype="float32")
    if config.freeze_vision:
        freeze_vision(vlm.model)
    if config.gradient_checkpointing:
        vlm.model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    vlm.model.train()

    # data
    usable = _usable(vlm, samples, config)
    if not usable:
        raise TrainError(f"none of the {len(samples)} training samples is usable (see the warnings above)")
    batches = _micro_batches(usable, config, ranks)[rank::ranks]
    total_steps = len(batches) // config.gradient_accumulation_steps
    log.info("train: %s on %d of %d samples, %d optimiser steps, from %s", config.objective, len(usable),
             len(samples), total_steps, base)

    with make_engine(vlm.model, config, total_steps, device) as engine:
        model = engine.forward_model()
        mine = sorted({i for batch in batches for i in batch})

        # loss inputs fixed before the first update: the old policy (GRPO's ratio) and the KL reference
        old = _frozen_logprobs(model, vlm, samples, mine, config.micro_batch_size, engine.device, engine.autocast) \
            if objective.needs_old_logprobs else None
        ref = old if config.kl_coef > 0 else None
        if config.reference is not None:
            reference = load_vlm(config.reference, device=str(engine.device), dtype="float32").model
            ref = _frozen_logprobs(reference, vlm, samples, mine, config.micro_batch_size, engine.device,
                                   engine.autocast)
            del reference

        # loss
        def loss_of(batch: list[int]) -> tuple[torch.Tensor, dict[str, float], int]:
            tensors = _tensors(vlm, samples, batch, engine.device)
            with engine.autocast():
                logits, targets, mask = response_logits(model, tensors)  # (B, K, V), (B, K), (B, K)
                logprobs = token_logprobs(logits, targets)  # (B, K)
            accuracy, entropy = token_accuracy_and_entropy(logits, targets, mask)
            width = logprobs.shape[1]
            inputs = LossInputs(
                logprobs=logprobs, mask=mask.float(),
                weight=torch.tensor([samples[i].weight for i in batch], device=engine.device),
                advantage=torch.tensor([samples[i].advantage for i in batch], device=engine.device),
                old_logprobs=_right_aligned([old[i] for i in batch], width) if old is not None else None,
                ref_logprobs=_right_aligned([ref[i] for i in batch], width) if ref is not None else None)
            loss, metrics = objective.loss(inputs, config)
            return loss, {"train/accuracy": accuracy, "train/entropy": entropy, **metrics}, int(mask.sum())

        # loop
        history: list[dict[str, float]] = []
        step_losses: list[float] = []
        step_metrics: dict[str, list[float]] = {}
        tokens = 0
        step_started = time.perf_counter()
        for batch in batches:
            loss, metrics, batch_tokens = loss_of(batch)
            step_losses.append(float(loss.detach()))
            for name, value in metrics.items():
                step_metrics.setdefault(name, []).append(value)
            tokens += batch_tokens
            lr = engine.lr()  # the rate this step applies; the scheduler moves on inside micro_step
            grad_norm = engine.micro_step(loss)
            if grad_norm is None:
                continue
            record = {"train/loss": sum(step_losses) / len(step_losses), "train/grad_norm": grad_norm,
                      "train/lr": lr, "train/response_tokens": float(tokens),
                      "train/step_time_s": time.perf_counter() - step_started,
                      **{name: sum(values) / len(values) for name, values in step_metrics.items()}}
            history.append(record)
            if rank == 0:
                tracker.scalars(record, step=len(history))
            log.info("train step %d/%d: %s", len(history), total_steps,
                     ", ".join(f"{k}={v:.4g}" for k, v in record.items()))
            step_losses, step_metrics, tokens = [], {}, 0
            step_started = time.perf_counter()

        # checkpoint
        state_dict = engine.state_dict_for_save()  # collective under ZeRO-3: every rank takes part
        path = save_vlm(VLM(engine.module, vlm.tokenizer, vlm.processor, source=vlm.source), output_dir,
                        state_dict) if rank == 0 else None
        engine_init_s = engine.init_seconds

    metrics = {**history[-1], "train/loss_initial": history[0]["train/loss"], "train/steps": float(len(history)),
               "train/samples": float(len(usable)), "train/skipped_samples": float(len(samples) - len(usable)),
               "train/step_time_s": sum(h["train/step_time_s"] for h in history) / len(history),
               "train/engine_init_s": engine_init_s, "train/time_s": time.perf_counter() - started}
    parity = _parity(samples, old) if old is not None else None
    if parity is not None:  # before any update: a gap beyond rounding is a train/serve mismatch
        metrics.update(parity.metrics())
        if parity.max_abs_diff > (BF16_PARITY_TOLERANCE if config.precision == "bf16" else PARITY_TOLERANCE):
            log.warning("train: recorded and recomputed token log-probabilities differ by up to %.3g (mean %.3g) "
                        "over %d tokens%s: the policy saw other inputs than the trainer rebuilds, or other weights",
                        parity.max_abs_diff, parity.mean_abs_diff, parity.tokens,
                        "; " + "; ".join(parity.mismatched[:3]) if parity.mismatched else "")
    log.info("train: done in %.1f s, checkpoint %s", metrics["train/time_s"], path)
    return TrainResult(path, metrics, history)
