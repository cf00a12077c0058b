"""The `accept` and `train` blocks: which steps an iteration learns from, and how every policy that
learns is trained (one block for the set-of-marks scorer and the vision-language trainer alike)."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from webgym.config.base import ProjectPath, Section

Objective = Literal["filtered_bc", "sft", "reinforce", "grpo", "dagger"]
"""The training objectives: accept's selection rule and the trainer's loss, named alike
(stages/accept.py and webgym/train/objectives.py each hold one entry per name)."""


class AcceptConfig(Section):
    """Which recorded steps a training iteration learns from (stages/accept.py; WebGym 5 and appendix F,
    OpenWebRL 4.2-4.4, WebAgent-R1 2)."""

    objective: Objective = Field(
        default="filtered_bc",
        description="Selection rule, matching the loss the trainer uses (train.objective): filtered_bc (successful "
                    "trajectories, WebGym eq. 1), reinforce (every judged trajectory, reward minus the task's mean), "
                    "grpo (groups of one task, group-normalised advantages), sft (shortest success per task), dagger "
                    "(the set-of-marks scorer on the synthetic sites: every step of the training rollouts, labelled "
                    "with the oracle's calls from the state the policy reached, plus the oracle demonstrations; "
                    "Ross et al. 2011).")
    replay_iterations: int = Field(
        default=1, ge=1,
        description="filtered_bc: the replay buffer holds the successful trajectories of the last k rollout iterations "
                    "(WebGym: 4 or 8); 1 learns from the newest iteration only. dagger: the labelled steps and "
                    "demonstrations of the last k iterations. reinforce and grpo are on-policy: newest iteration only.")
    recency_power: float = Field(
        default=1.0, ge=0,
        description="filtered_bc draw: a step of age a iterations is drawn with probability proportional to "
                    "(a + 1) ** -power (WebGym's recency bias power: 1 or 2); 0 draws uniformly.")
    samples_per_iteration: int | None = Field(
        default=None, ge=1,
        description="filtered_bc and dagger: steps drawn from the replay buffer per iteration, without replacement "
                    "(WebGym: 1200 or 1800); null keeps every kept step of the buffer (no draw).")
    failed_endings: float = Field(
        default=0.0, ge=0,
        description="filtered_bc: also learn, with this weight, away from the action that ended each failed episode "
                    "of the replay buffer by the policy's own choice: an answer the judge refused (an early \"Done.\" "
                    "most often) or a click after which a MiniWoB++ page ended the task unrewarded. Unlikelihood, "
                    "log(1 - pi), so the loss stays bounded; the episode's earlier steps are not learned from. 0: "
                    "successes only (WebGym eq. 1).")
    seed: int = Field(default=0, description="Seed of the replay draw (combined with the iteration: reproducible, "
                                             "different every iteration).")
    repetition_penalty: bool = Field(
        default=True,
        description="WebGym's repetition penalty: a step whose next step shows the same screenshot (same blob hash) "
                    "is not learned from, even in a successful trajectory (it still gets a negative advantage).")
    keep_parse_errors: bool = Field(
        default=False,
        description="Learn from steps whose response could not be parsed when they are reinforced (weight or "
                    "positive advantage); false drops them, so a success never teaches a malformed answer.")
    grpo_min_group_size: int = Field(
        default=2, ge=2,
        description="grpo: a group needs at least this many judged, unblocked trajectories to count (blocked and "
                    "unjudged episodes leave a group).")
    grpo_target_groups: int = Field(
        default=8, ge=1,
        description="grpo: effective groups (reward variance > 0) one update wants; DAPO's dynamic sampling rolls "
                    "out more tasks until it is met, so accept reports groups_missing.")
    grpo_demonstration_weight: float = Field(
        default=0.0, ge=0,
        description="grpo: weight of a supervised term on the oracle demonstrations of train-split tasks (the "
                    "warm start's), mixed into every update that has an effective group, so RL on a few tasks does "
                    "not unlearn the rest; 0: GRPO alone.")
    sft_max_per_website: int | None = Field(
        default=6, ge=1,
        description="sft: at most this many tasks per website (OpenWebRL 4.2: 412 trajectories over 70 websites, "
                    "about 6); null: no cap.")
    sft_oracle: bool = Field(
        default=True,
        description="sft: oracle trajectories (policy oracle) of train-split sites may serve as demonstrations "
                    "(AutoWebWorld); those of test-split sites never do.")


class TrainConfig(Section):
    """Objective, optimiser, schedule, precision and parallelism of one training run, for every policy
    that learns: the set-of-marks scorer trains in-process (webgym/train/scorer.py), where a sample is
    one step's decisions; the vision-language policies go through webgym/train/trainer.py, where a
    sample is one step's tokens. Fields marked VLM apply to the latter only."""

    objective: Objective = Field(
        default="filtered_bc",
        description="Loss (webgym/train/objectives.py): filtered_bc (WebGym eq. 1, weighted log-likelihood of kept "
                    "steps), sft (token-mean cross-entropy, the warm start), reinforce (advantage-weighted "
                    "log-likelihood), grpo (clipped multi-turn GRPO with optional KL), dagger (filtered_bc's loss on "
                    "the oracle's labels).")
    seed: int = Field(default=0, description="Seed of the sample order each epoch (the scorer: also of dropout).")
    epochs: int = Field(default=1, ge=1, description="Passes over the samples.")
    micro_batch_size: int = Field(default=1, ge=1, description="Samples per forward/backward pass (the scorer: steps).")
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
    max_length: int = Field(default=16384, ge=16, description="VLM: samples longer than this many tokens (prompt, image "
                                                              "tokens and response) are reported and skipped.")
    precision: Literal["bf16", "fp32"] = Field(
        default="fp32", description="VLM: bf16 trains in bfloat16 mixed precision with fp32 master weights (autocast; "
                                    "with DeepSpeed its bf16 mode); fp32 trains in float32. bf16 is the GPU setting "
                                    "(half the activation memory, tensor cores); the CPU runs it too, slowly.")
    gradient_checkpointing: bool = Field(default=False, description="VLM: recompute activations in the backward pass: "
                                                                    "less memory for long multi-image contexts.")
    freeze_vision: bool = Field(default=False, description="VLM: train the language model only; the vision encoder "
                                                           "and its merger keep their weights.")
    clip_low: float = Field(default=0.2, ge=0, lt=1, description="GRPO: the ratio is clipped below at 1 - clip_low.")
    clip_high: float = Field(default=0.28, ge=0, description="GRPO: the ratio is clipped above at 1 + clip_high "
                                                             "(DAPO's clip-higher; OpenWebRL uses 0.2 / 0.28).")
    kl_coef: float = Field(default=0.0, ge=0, description="GRPO: weight of the KL penalty to the reference "
                                                          "model (WebAgent-R1: 0.001; OpenWebRL: 0).")
    reference: str | None = Field(default=None, description="GRPO with kl_coef > 0: checkpoint of the KL reference; "
                                                            "null: the checkpoint training starts from.")
    zero_stage: Literal[2, 3] | None = Field(
        default=None, description="VLM: DeepSpeed ZeRO stage (needs the `train` extra); null: plain torch. Launch "
                                  "several ranks with torchrun or the deepspeed launcher; a single process "
                                  "sets the rendezvous variables itself.")
    offload_optimizer: bool = Field(default=False, description="VLM with DeepSpeed: keep optimiser states in CPU memory.")
    device: str = Field(
        default="auto", description="VLM: auto (cuda when torch sees a GPU, else cpu), cpu, cuda or cuda:N. The "
                                    "trainer checks it before any work (a cuda device on a machine without one is "
                                    "a ConfigError, not a crash mid-run). DeepSpeed on cuda uses cuda:LOCAL_RANK.")
    checkpoints_dir: ProjectPath | None = Field(
        default=None, description="Where the train flow writes checkpoint directories (one per checkpoint id); "
                                  "null: `models/` inside a local lake (an object-storage lake needs a path "
                                  "here that the training and serving machines share).")

    @field_validator("device")
    @classmethod
    def _known_device(cls, device: str) -> str:
        if not re.fullmatch(r"auto|cpu|cuda(:\d+)?", device):
            raise ValueError(f"train.device {device!r} is not a device the trainer knows; set auto, cpu, cuda or "
                             "cuda:N (e.g. cuda:0)")
        return device

    @model_validator(mode="after")
    def _kl_is_grpo_only(self) -> TrainConfig:
        if self.kl_coef > 0 and self.objective != "grpo":
            raise ValueError(f"train.kl_coef is only used by objective grpo, not {self.objective}; set it to 0")
        if self.reference is not None and self.kl_coef == 0:
            raise ValueError("train.reference is only used with train.kl_coef > 0; set kl_coef or remove reference")
        return self
