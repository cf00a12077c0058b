"""TrainConfig: how the vision-language trainer trains (the `train` block of a profile).

No torch import here: the profile loader imports this module.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class TrainConfig(BaseModel):
    """Objective, optimiser, schedule, precision and parallelism of one training run."""

    model_config = ConfigDict(extra="forbid")

    objective: Literal["filtered_bc", "sft", "reinforce", "grpo"] = Field(
        default="filtered_bc",
        description="Loss (webgym/train/objectives.py): filtered_bc (WebGym eq. 1, weighted log-likelihood of kept "
                    "steps), sft (token-mean cross-entropy, the warm start), reinforce (advantage-weighted "
                    "log-likelihood), grpo (clipped multi-turn GRPO with optional KL).")
    seed: int = Field(default=0, description="Seed of weight-free randomness: sample order each epoch.")
    epochs: int = Field(default=1, ge=1, description="Passes over the samples.")
    micro_batch_size: int = Field(default=1, ge=1, description="Samples per forward/backward pass.")
    gradient_accumulation_steps: int = Field(
        default=1, ge=1, description="Micro-batches per optimiser step (effective batch = micro_batch_size x this "
                                     "x data-parallel ranks).")
    max_steps: int | None = Field(default=None, ge=1, description="Stop after this many optimiser steps; null: "
                                                                  "run every epoch.")
    learning_rate: float = Field(default=1e-5, gt=0, description="Peak learning rate (WebAgent-R1: 5e-5 SFT, "
                                                                 "1e-6 RL, for full fine-tuning).")
    lr_schedule: Literal["cosine", "linear", "constant"] = Field(
        default="cosine", description="Decay after warmup: cosine or linear to 0, or constant.")
    warmup_ratio: float = Field(default=0.05, ge=0, lt=1, description="Fraction of the optimiser steps spent "
                                                                      "warming the learning rate up from 0.")
    weight_decay: float = Field(default=0.0, ge=0, description="AdamW decoupled weight decay.")
    max_grad_norm: float | None = Field(default=1.0, gt=0, description="Clip the global gradient norm to this; "
                                                                       "null: no clipping.")
    max_length: int = Field(default=16384, ge=16, description="Samples longer than this many tokens (prompt, image "
                                                              "tokens and response) are reported and skipped.")
    bf16: bool = Field(default=False, description="bfloat16 mixed precision (autocast; with DeepSpeed its bf16 "
                                                  "mode with fp32 master weights). Fast on GPUs, slow on most CPUs.")
    gradient_checkpointing: bool = Field(default=False, description="Recompute activations in the backward pass: "
                                                                    "less memory for long multi-image contexts.")
    freeze_vision: bool = Field(default=False, description="Train the language model only; the vision encoder "
                                                           "and its merger keep their weights.")
    clip_low: float = Field(default=0.2, ge=0, lt=1, description="GRPO: the ratio is clipped below at 1 - clip_low.")
    clip_high: float = Field(default=0.28, ge=0, description="GRPO: the ratio is clipped above at 1 + clip_high "
                                                             "(DAPO's clip-higher; OpenWebRL uses 0.2 / 0.28).")
    kl_coef: float = Field(default=0.0, ge=0, description="GRPO: weight of the KL penalty to the reference "
                                                          "model (WebAgent-R1: 0.001; OpenWebRL: 0).")
    reference: str | None = Field(default=None, description="GRPO with kl_coef > 0: checkpoint of the KL reference; "
                                                            "null: the checkpoint training starts from.")
    zero_stage: Literal[2, 3] | None = Field(
        default=None, description="DeepSpeed ZeRO stage (needs the `train` extra); null: plain torch. Launch "
                                  "several ranks with torchrun or the deepspeed launcher; a single process "
                                  "sets the rendezvous variables itself.")
    offload_optimizer: bool = Field(default=False, description="DeepSpeed: keep optimiser states in CPU memory.")
    device: str = Field(default="auto", description="Plain torch: auto (cuda when present, else cpu), cpu, cuda:0. "
                                                    "DeepSpeed uses cuda:LOCAL_RANK when there is a GPU.")
    checkpoints_dir: str | None = Field(
        default=None, description="Where the train flow writes checkpoint directories (one per checkpoint id); "
                                  "null: `models/` inside a local lake (an object-storage lake needs a path "
                                  "here that the training and serving machines share).")

    @model_validator(mode="after")
    def _kl_is_grpo_only(self) -> TrainConfig:
        if self.kl_coef > 0 and self.objective != "grpo":
            raise ValueError(f"train.kl_coef is only used by objective grpo, not {self.objective}; set it to 0")
        if self.reference is not None and self.kl_coef == 0:
            raise ValueError("train.reference is only used with train.kl_coef > 0; set kl_coef or remove reference")
        return self
