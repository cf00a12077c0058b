"""The optimiser side of training: plain torch, or DeepSpeed ZeRO-2/3 (the `train` extra).

Both engines take one micro-batch loss at a time and step the optimiser every
`gradient_accumulation_steps` micro-batches, with AdamW, warmup and decay, and gradient clipping,
on the device train.device names (training_device checks it first) in train.precision.
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

from webgym.config import ConfigError, TrainConfig, project_path
from webgym.models.checkpoint import resolve_device
from webgym.ports import free_port

log = logging.getLogger(__name__)


def training_device(config: TrainConfig) -> torch.device:
    """The device train.device names on this machine (auto: the GPU when torch sees one). A GPU this machine
    lacks, or bf16 on a GPU without it, is a ConfigError saying what to set, raised before any work."""
    device = resolve_device(config.device)
    if device.type != "cuda":
        return device
    if not torch.cuda.is_available():
        built = f"torch {torch.__version__} " + ("has CUDA but sees no GPU" if torch.version.cuda
                                                 else "is a CPU-only build")
        raise ConfigError(f"train.device is {config.device} but {built}; set train.device: auto or cpu, or run on "
                          "a GPU machine with a CUDA build of torch")
    if device.index is not None and device.index >= torch.cuda.device_count():
        raise ConfigError(f"train.device is {config.device} but this machine has {torch.cuda.device_count()} "
                          f"GPU(s); set train.device: cuda or cuda:0..{torch.cuda.device_count() - 1}")
    if config.precision == "bf16" and not torch.cuda.is_bf16_supported():
        raise ConfigError(f"train.precision is bf16 but {torch.cuda.get_device_name(device)} has no bfloat16; "
                          "set train.precision: fp32")
    return device


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
        if self.config.precision != "bf16":
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
    """DeepSpeed ZeRO-2/3 over the same optimiser and schedule; data parallel across ranks. On a GPU each rank
    trains on cuda:LOCAL_RANK with NCCL; on the CPU with gloo (DeepSpeed's CPU accelerator)."""

    def __init__(self, model: torch.nn.Module, config: TrainConfig, total_steps: int, device: torch.device) -> None:
        os.environ.setdefault("TORCH_EXTENSIONS_DIR", str(project_path(".cache/torch_extensions")))
        cuda = device.type == "cuda"
        if not cuda:  # DeepSpeed picks its accelerator once, from this variable or the hardware it finds
            os.environ.setdefault("DS_ACCELERATOR", "cpu")
        _single_process_rendezvous()
        import deepspeed  # the `train` extra; imported late so plain torch runs never pay for it

        started = time.perf_counter()
        deepspeed.init_distributed(dist_backend="nccl" if cuda else "gloo")
        self.rank = torch.distributed.get_rank()
        self.device = torch.device(f"cuda:{os.environ.get('LOCAL_RANK', '0')}" if cuda else "cpu")
        if cuda:
            torch.cuda.set_device(self.device)
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
            "bf16": {"enabled": config.precision == "bf16"},
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
        log.info("deepspeed: ZeRO-%d %s initialised in %.1f s on %s", config.zero_stage, config.precision,
                 self.init_seconds, self.device)

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
    engine: Engine = (DeepSpeedEngine(model, config, total_steps, device) if config.zero_stage
                      else TorchEngine(model, config, total_steps, device))
    try:
        yield engine
    finally:
        engine.close()
