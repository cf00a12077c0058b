"""ScorerConfig: the set-of-marks action scorer's model, sampling and training (the `scorer` block).

No torch import here: the profile loader imports this module.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from webgym import PROJECT_ROOT


class ScorerTrainConfig(BaseModel):
    """How `webgym.train.scorer.train_scorer` fits the scorer to accepted steps (seconds on 2 cores)."""

    model_config = ConfigDict(extra="forbid")

    objective: Literal["filtered_bc", "sft", "reinforce", "grpo"] = Field(
        default="filtered_bc", description="Loss from webgym/train/objectives.py; a step's log-probability is the "
                                           "candidate's plus, for a fill, each field's typed phrase.")
    epochs: int = Field(default=8, ge=1, description="Passes over the samples.")
    batch_size: int = Field(default=32, ge=1, description="Steps per optimiser step.")
    learning_rate: float = Field(default=1e-3, gt=0, description="AdamW learning rate (constant).")
    weight_decay: float = Field(default=1e-4, ge=0, description="AdamW decoupled weight decay.")
    max_grad_norm: float | None = Field(default=1.0, gt=0, description="Gradient-norm clip; null: none.")
    seed: int = Field(default=0, description="Seed of the sample order and dropout.")


class ScorerConfig(BaseModel):
    """The small policy that learns on a laptop: an MLP over MiniLM embeddings that scores every
    set-of-marks action candidate of a page (webgym/policies/scorer.py)."""

    model_config = ConfigDict(extra="forbid")

    checkpoint: str | None = Field(
        default=None, description="Scorer checkpoint directory to load (config.json + model.safetensors); null: "
                                  "a fresh, untrained scorer initialised from `seed`.")
    seed: int = Field(default=0, description="Seed of the initial weights and of the rollout sampler.")
    hidden: int = Field(default=256, ge=8, description="Width of the MLP's hidden layers.")
    dropout: float = Field(default=0.1, ge=0, lt=1, description="Dropout in training (off when acting).")
    history: int = Field(default=3, ge=0, description="Earlier actions the scorer reads (their mean embedding).")
    temperature: float = Field(
        default=1.0, gt=0, description="Softmax temperature of the candidates' scores when sampling (rollouts).")
    greedy: bool = Field(
        default=False, description="Take the best-scored candidate instead of sampling (set it for evaluation).")
    embedding_cache: str | None = Field(
        default=".cache/scorer-embeddings",
        description="MiniLM vectors of page and candidate texts kept between runs, keyed by text hash (relative "
                    "to the project): rollouts embed each text once and training reads them back instead of "
                    "embedding the replay pool again every iteration; null: in memory only.")
    train: ScorerTrainConfig = Field(default_factory=ScorerTrainConfig)

    def embedding_cache_path(self) -> Path | None:
        """The cache directory as an absolute path (None: no file cache)."""
        return (PROJECT_ROOT / self.embedding_cache).resolve() if self.embedding_cache else None
