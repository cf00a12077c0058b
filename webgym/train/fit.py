"""Fit the configured policy on accepted rows and record the checkpoint: the scorer in-process, the
vision-language policies through the trainer. The train flow calls `fit_policy`; both paths read the
same accepted rows and write one checkpoints row."""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import pyarrow.dataset as ds

from schemas.checkpoints import Checkpoint
from webgym.config import Config, ConfigError
from webgym.lake import Lake
from webgym.lake.queries import checkpoint_of
from webgym.tracking import NO_TRACKING, Tracker

log = logging.getLogger(__name__)

VLM_POLICIES = ("local", "chat")
"""Policy kinds the VLM trainer fits, from policy.checkpoint on their first training."""


@dataclass
class Fitted:
    """A new checkpoint and what its training measured."""

    checkpoint_id: str
    path: str
    metrics: dict[str, float]
    problems: list[str] = field(default_factory=list)
    """Accepted steps that could not be rebuilt into samples (skipped, named)."""


def episode_rows(lake: Lake, accepted: pd.DataFrame, table: str) -> pd.DataFrame:
    """The rows of `table` (steps, trajectories) of the episodes whose steps were accepted."""
    return lake.read_table(table, filter=ds.field("trajectory_id").isin(sorted(set(accepted["trajectory_id"]))))


def fit_scorer(config: Config, lake: Lake, accepted: pd.DataFrame, base: str | None, iteration: int,
               out_dir: Path, tracker: Tracker = NO_TRACKING) -> Fitted:
    """Train the set-of-marks scorer (from `base`, else the profile's) on the accepted steps."""
    from webgym.policies.scorer.checkpoint import load_scorer, open_scorer, save_scorer
    from webgym.policies.scorer.embeddings import scorer_embeddings
    from webgym.train.scorer import record_checkpoint, scorer_samples, train_scorer

    scorer = load_scorer(base) if base else open_scorer(config.policy.scorer)
    embed = scorer_embeddings(config.policy.scorer)
    samples, problems = scorer_samples(episode_rows(lake, accepted, "steps"),
                                       episode_rows(lake, accepted, "trajectories"),
                                       lake.read_table("tasks"), accepted, embed, scorer.history,
                                       relabel=config.train.objective == "dagger", architecture=scorer.architecture)
    embed.flush()
    reference = load_scorer(config.train.reference) if config.train.reference else None
    result = train_scorer(scorer, samples, config.train, reference, tracker)
    checkpoint_id, path = result.scorer.checkpoint_id, out_dir / result.scorer.checkpoint_id
    earlier = checkpoint_of(lake, checkpoint_id)
    if earlier:  # the id hashes the weights: a night after a refused one can train the very same weights
        log.warning("iteration %d trained the weights of checkpoint %s (iteration %d) again: it stays that "
                    "checkpoint, with its promotion decision", iteration, checkpoint_id, earlier["iteration"])
        return Fitted(checkpoint_id, str(earlier["path"]), result.metrics, problems)
    if not path.is_dir():  # else a run stopped between saving these weights and recording them
        save_scorer(result.scorer, path)
    record_checkpoint(lake, result.scorer, str(path), iteration, config.train.objective, result.metrics,
                      run_id=f"train-{iteration}")
    return Fitted(checkpoint_id, str(path), result.metrics, problems)


def fit_vlm(config: Config, lake: Lake, accepted: pd.DataFrame, base: str | None, iteration: int,
            out_dir: Path, tracker: Tracker = NO_TRACKING) -> Fitted:
    """Train the vision-language policy (Hugging Face layout, from `base`) on the accepted steps."""
    from webgym.train.samples import samples_from_lake
    from webgym.train.trainer import train

    if not base:
        raise ConfigError("no checkpoint to train from: set policy.checkpoint to the base model's directory")
    if base == config.policy.checkpoint:
        require_base_model(config)
    samples, problems = samples_from_lake(lake, accepted, config.policy.context)
    if not samples:
        raise ValueError(f"iteration {iteration}: none of {len(accepted)} accepted steps could be rebuilt: "
                         + "; ".join(problems[:5]))
    checkpoint_id = f"it{iteration}-{config.train.objective}-{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%S}"
    result = train(samples, base, out_dir / checkpoint_id, config.train, tracker)
    row = Checkpoint(checkpoint_id=checkpoint_id, iteration=iteration, path=str(result.path), base=str(base),
                     objective=config.train.objective, metrics=result.metrics, created_at=dt.datetime.now(dt.UTC))
    lake.write_table("checkpoints", pd.DataFrame([row.model_dump()]), run_id=f"train-{iteration}")
    return Fitted(checkpoint_id, str(result.path), result.metrics, problems)


def require_base_model(config: Config) -> None:
    """ConfigError naming policy.checkpoint and the command that writes a model there, when a vision-language
    policy's first training would start from a directory that does not exist (the nightly checks before
    any rollout, so a missing model does not cost the warm start's demonstrations first)."""
    if config.policy.kind not in VLM_POLICIES or not config.policy.checkpoint:
        return
    path = Path(config.policy.checkpoint).expanduser()
    if not path.is_dir():
        raise ConfigError(f"policy.checkpoint {path} is not a directory: the {config.policy.kind} policy trains from "
                          f"it; write the small CPU model there with `webgym models small {path}`, or point it at a "
                          "Hugging Face model directory")


def require_training_device(config: Config) -> None:
    """ConfigError saying what to set, when a vision-language policy would train on a device this machine lacks
    (train.device cuda without a GPU, bf16 on a GPU without it): the nightly checks before any rollout."""
    if config.policy.kind not in VLM_POLICIES:
        return
    from webgym.train.engine import training_device

    training_device(config.train)


def fit_policy(config: Config, lake: Lake, accepted: pd.DataFrame, base: str | None, iteration: int,
               out_dir: Path, tracker: Tracker = NO_TRACKING) -> Fitted:
    """The trainer the policy kind needs: the scorer's own, or the VLM trainer (local and chat); its step
    scalars go to `tracker`."""
    if config.policy.kind == "scorer":
        return fit_scorer(config, lake, accepted, base, iteration, out_dir, tracker)
    if config.policy.kind in VLM_POLICIES:
        if config.train.objective == "dagger":
            raise ConfigError("objective dagger trains the set-of-marks scorer on the oracle's labels; the "
                              f"{config.policy.kind} policy learns text responses: use another objective")
        return fit_vlm(config, lake, accepted, base or config.policy.checkpoint, iteration, out_dir, tracker)
    raise ConfigError(f"policy.kind {config.policy.kind} does not learn; train a scorer, local or chat policy")
