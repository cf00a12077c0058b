"""The optimiser side of training: plain torch, or DeepSpeed ZeRO-2/3 (the `train` extra).

Both engines take one micro-batch loss at a time and step the optimiser every
`gradient_accumulation_steps` micro-batches, with AdamW, warmup and decay, and gradient clipping.
DeepSpeed runs on CPU with gloo and on GPUs with NCCL; its first start JIT-compiles ops
(25-64 s on 2 cores), cached under .cache/torch_extensions.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Iterator

import torch
from transformers import get_scheduler

from webgym.config import TrainConfig, project_path
from webgym.ports import free_port

log = logging.getLogger(__name__)


def _optimizer(params, config: TrainConfig) -> torch.optim.Optimizer:
    return torch.optim.AdamW(params, lr=config.learning_rate, weight_decay=config.weight_decay)


def _scheduler(optimizer: torch.optim.Optimizer, config: TrainConfig, total_steps: int):
    name = "constant_with_warmup" if config.lr_schedule == "constant" else config.lr_schedule
    return get_scheduler(name, optimizer, num_warmup_steps=round(config.warmup_ratio * total_steps),
                         num_training_steps=total_steps)


class TorchEngine:
    """Single-process training with torch: AdamW, LambdaLR schedule, clipping, optional bf16 autocast."""

    def __init__(self, model: torch.nn.Module, config: TrainConfig, total_steps: int, device: torch.device) -> None:
        self.module = model
        self.config = config
        self.device = device
        self.rank = 0
        self.optimizer = _optimizer([p for p in model.parameters() if p.requires_grad], config)
        self.scheduler = _scheduler(self.optimizer, config, total_steps)
        self._micro = 0
        self.init_seconds = 0.0

    def autocast(self) -> contextlib.AbstractContextManager:
        if not self.config.bf16:
            return contextlib.nullcontext()
        return torch.autocast(self.device.type, dtype=torch.bfloat16)

    def forward_model(self) -> torch.nn.Module:
        return self.module

    def micro_step(self, loss: torch.Tensor) -> float | None:
        """Backward one micro-batch; at an accumulation boundary step and return the gradient norm."""
        (loss / self.config.gradient_accumulation_steps).backward()
        self._micro += 1
        if self._micro % self.config.gradient_accumulation_steps:
            return None
        params = [p for p in self.module.parameters() if p.grad is not None]
        max_norm = self.config.max_grad_norm or float("inf")
        grad_norm = float(torch.nn.utils.clip_grad_norm_(params, max_norm))
        self.optimizer.step()
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        return grad_norm

    def lr(self) -> float:
        return self.scheduler.get_last_lr()[0]

    def state_dict_for_save(self) -> dict[str, torch.Tensor] | None:
        """None: the module's own weights are complete."""
        return None

    def close(self) -> None:
        """Nothing to release."""


def _single_process_rendezvous() -> None:
    """A lone process plays rank 0 of 1 (torchrun and the deepspeed launcher set these for real jobs)."""
    if "RANK" in os.environ:
        return
    port = free_port()
    os.environ.update(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    log.info("deepspeed: single process, rendezvous on 127.0.0.1:%d", port)


class DeepSpeedEngine:
    """DeepSpeed ZeRO-2/3 over the same optimiser and schedule; data parallel across ranks."""

    def __init__(self, model: torch.nn.Module, config: TrainConfig, total_steps: int) -> None:
        os.environ.setdefault("TORCH_EXTENSIONS_DIR", str(project_path(".cache/torch_extensions")))
        _single_process_rendezvous()
        import deepspeed  # the `train` extra; imported late so plain torch runs never pay for it

        started = time.perf_counter()
        cuda = torch.cuda.is_available()
        deepspeed.init_distributed(dist_backend="nccl" if cuda else "gloo")
        self.rank = torch.distributed.get_rank()
        self.device = torch.device(f"cuda:{os.environ.get('LOCAL_RANK', '0')}" if cuda else "cpu")
        self.config = config
        zero: dict = {"stage": config.zero_stage}
        if config.offload_optimizer:
            zero["offload_optimizer"] = {"device": "cpu"}
        if config.zero_stage == 3:
            zero["stage3_gather_16bit_weights_on_model_save"] = True
        ds_config = {
            "train_micro_batch_size_per_gpu": config.micro_batch_size,
            "gradient_accumulation_steps": config.gradient_accumulation_steps,
            "gradient_clipping": config.max_grad_norm or 0.0,
            "zero_optimization": zero,
            "bf16": {"enabled": config.bf16},
            "zero_allow_untested_optimizer": True,
            "steps_per_print": 10**9,
            "wall_clock_breakdown": False,
        }
        self.engine, self.optimizer, _, self.scheduler = deepspeed.initialize(
            model=model.to(self.device), model_parameters=[p for p in model.parameters() if p.requires_grad],
            optimizer=lambda params: _optimizer(params, config),
            lr_scheduler=lambda optimizer: _scheduler(optimizer, config, total_steps),
            config=ds_config)
        self.module = self.engine.module
        self.init_seconds = time.perf_counter() - started
        log.info("deepspeed: ZeRO-%d initialised in %.1f s on %s", config.zero_stage, self.init_seconds, self.device)

    def autocast(self) -> contextlib.AbstractContextManager:
        return contextlib.nullcontext()  # DeepSpeed's bf16 mode holds bf16 weights itself

    def forward_model(self) -> torch.nn.Module:
        return self.engine

    def micro_step(self, loss: torch.Tensor) -> float | None:
        boundary = self.engine.is_gradient_accumulation_boundary()
        self.engine.backward(loss)  # scales by 1 / gradient_accumulation_steps itself
        self.engine.step()
        if not boundary:
            return None
        norm = self.engine.get_global_grad_norm()
        return float(norm) if norm is not None else float("nan")

    def lr(self) -> float:
        return self.scheduler.get_last_lr()[0]

    def state_dict_for_save(self) -> dict[str, torch.Tensor] | None:
        """ZeRO-3 shards parameters across ranks: gather a full 16-bit copy for the checkpoint."""
        if self.config.zero_stage == 3:
            return self.engine._zero3_consolidated_16bit_state_dict()
        return None

    def close(self) -> None:
        """Release the engine; the process group stays for the next run (DeepSpeed caches its groups)."""
        self.engine.destroy()


Engine = TorchEngine | DeepSpeedEngine


@contextlib.contextmanager
def make_engine(model: torch.nn.Module, config: TrainConfig, total_steps: int,
                device: torch.device) -> Iterator[Engine]:
    """DeepSpeed when a ZeRO stage is configured, plain torch otherwise; released on exit."""
    engine: Engine = (DeepSpeedEngine(model, config, total_steps) if config.zero_stage
                      else TorchEngine(model, config, total_steps, device))
    try:
        yield engine
    finally:
        engine.close()
