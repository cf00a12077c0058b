"""The train flow: accept the steps an iteration learns from, then fit the policy on them and record
the checkpoint.

Resumable: accepted rows already written for (iteration, objective) are reused, and an iteration that
already has its checkpoint is not trained again. The policy kind decides the trainer: the set-of-marks
scorer trains in-process in seconds (the embedded default), the vision-language policies (`local`,
`chat` served by vLLM) go through webgym/train/trainer.py from the served checkpoint; both with the
profile's `train` block.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from prefect import flow, task
from prefect.cache_policies import NO_CACHE

from flows.artifacts import publish_tracking
from flows.gates import MissingInputError, quality_gate, recover_lake
from flows.lineage import RUN_HOOKS, train_run_name
from stages.accept import STEP_COLUMNS, Acceptance, accept
from stages.iterations import latest_checkpoint
from stages.promote import rejected_checkpoints
from webgym.config import Config, Objective, checkpoints_dir, load_config, replaced
from webgym.lake import Lake
from webgym.lake.queries import accepted_rows, iteration_checkpoint, iteration_trajectories, judgments_of
from webgym.tracking import current_flow_run, open_tracker
from webgym.train.fit import fit_policy
from webgym.warehouse import query

log = logging.getLogger(__name__)


@dataclass
class TrainReport:
    """What one training iteration selected and produced."""

    iteration: int
    objective: str
    checkpoint_id: str
    path: str
    accepted_steps: int
    metrics: dict[str, float] = field(default_factory=dict)
    groups_missing: int | None = None
    resumed: bool = False
    problems: list[str] = field(default_factory=list)


def acceptance(config: Config, iteration: int) -> Acceptance:
    """What accept selects for `iteration` from the lake as it is now (nothing written): the driver of
    the accept stage that `select_steps`, the nightly's dynamic sampling and `webgym export-samples` share."""
    lake = Lake(config.lake.data_dir)
    verdicts = query(lake, "SELECT * FROM verdicts", config.judge)
    tasks = lake.read_table("tasks", columns=["task_id", "split", "website", "source", "family"])
    return accept(verdicts, lake.read_table("trajectories"), lake.read_table("steps", columns=STEP_COLUMNS), tasks,
                  iteration, config.accept)


def _require_judged(lake: Lake, iteration: int) -> None:
    """MissingInputError naming the command to run first when the iteration has no trajectories or no judgments."""
    ids = iteration_trajectories(lake, iteration, ["trajectory_id"])
    if ids.empty:
        raise MissingInputError(f"no trajectories of iteration {iteration} in the lake at {lake.root}: roll out and "
                                f"judge first (`webgym rollout --iteration {iteration}`, then `webgym judge run "
                                f"--iteration {iteration}`)")
    judged = judgments_of(lake, ids["trajectory_id"], ["trajectory_id"])
    if judged.empty:
        raise MissingInputError(f"none of the {len(ids)} trajectories of iteration {iteration} is judged: run "
                                f"`webgym judge run --iteration {iteration}` first")


@task(cache_policy=NO_CACHE)
def select_steps(config: Config, iteration: int) -> dict:
    """Write the accepted rows of `iteration` (once) and return their count and the selection figures."""
    lake = Lake(config.lake.data_dir)
    objective = config.accept.objective
    present = accepted_rows(lake, iteration, objective)
    if len(present):
        log.info("iteration %d: %d accepted steps (%s) already written", iteration, len(present), objective)
        return {"accepted_steps": len(present), "groups_missing": None, "problems": [], "resumed": True}
    _require_judged(lake, iteration)
    chosen = acceptance(config, iteration)
    if len(chosen.accepted):
        lake.write_table("accepted", chosen.accepted, run_id=f"accept-{iteration}-{objective}")
    log.info("iteration %d: accepted %d steps (%s)", iteration, len(chosen.accepted), objective)
    return {"accepted_steps": len(chosen.accepted), "groups_missing": chosen.groups_missing,
            "problems": chosen.problems, "resumed": False}


@task(cache_policy=NO_CACHE)
def fit(config: Config, iteration: int) -> dict:
    """Train on the accepted rows of `iteration` from the served checkpoint (the newest earlier one not kept
    back by promotion); record the new one (once per iteration and objective). The step scalars are tracked as
    train-it<iteration>, nested under the run at the root of this flow run's tree (the nightly's)."""
    lake = Lake(config.lake.data_dir)
    done = iteration_checkpoint(lake, iteration, config.train.objective)
    if done:
        return {"checkpoint_id": done["checkpoint_id"], "path": done["path"], "metrics": dict(done["metrics"]),
                "problems": [], "resumed": True}
    accepted = accepted_rows(lake, iteration, config.accept.objective)
    if accepted.empty:
        raise ValueError(f"iteration {iteration}: accept kept no step (no successful, unblocked episode under "
                         f"{config.accept.objective}); roll out and judge more before training")
    previous = latest_checkpoint(lake.read_table("checkpoints"), before=iteration,
                                 rejected=rejected_checkpoints(lake.read_table("promotions")))
    with open_tracker(config, current_flow_run(), f"train-it{iteration}") as tracker:
        publish_tracking(tracker.links, "train-tracking", f"training iteration {iteration}")
        fitted = fit_policy(config, lake, accepted, previous["path"] if previous else None, iteration,
                            checkpoints_dir(config), tracker)
    log.info("iteration %d: checkpoint %s from %d accepted steps; metrics %s", iteration, fitted.checkpoint_id,
             len(accepted), fitted.metrics)
    return {"checkpoint_id": fitted.checkpoint_id, "path": fitted.path, "metrics": fitted.metrics,
            "problems": fitted.problems}


def _with_parameters(config: Config, objective: Objective | None, iterations_back: int | None,
                     learning_rate: float | None, epochs: int | None) -> Config:
    """The profile with the flow's parameters set (None keeps the profile's value): one objective
    drives accept and the loss."""
    objective = objective or config.accept.objective
    return config.model_copy(update={
        "accept": replaced(config.accept, objective=objective, replay_iterations=iterations_back),
        "train": replaced(config.train, objective=objective, learning_rate=learning_rate, epochs=epochs)})


@flow(name="train", flow_run_name=train_run_name, **RUN_HOOKS)
def train(iteration: int, objective: Objective | None = None, iterations_back: int | None = None,
          learning_rate: float | None = None, epochs: int | None = None, config_path: str | None = None,
          data_dir: str | None = None) -> TrainReport:
    """Accept the steps of an iteration, train the policy from the served checkpoint, record
    the checkpoint. Unset parameters come from the profile (its accept and train blocks).

    Args:
        iteration: Iteration whose judged episodes to learn from.
        objective: filtered_bc, sft, reinforce, grpo or dagger (accept rule and loss alike).
        iterations_back: filtered_bc and dagger replay buffer: learn from this many latest iterations.
        learning_rate: Learning rate of this training run.
        epochs: Passes over the accepted samples.
        config_path: Profile YAML (default configs/local.yaml).
        data_dir: Lake root, a path or an fsspec URL.
    """
    config = _with_parameters(load_config(config_path, data_dir), objective, iterations_back, learning_rate, epochs)
    recover_lake(config.lake.data_dir)
    selected = select_steps(config, iteration)
    quality_gate(config.lake.data_dir, ["accepted"])
    fitted = fit(config, iteration)
    quality_gate(config.lake.data_dir, ["checkpoints"])
    return TrainReport(iteration, config.accept.objective, fitted["checkpoint_id"], fitted["path"],
                       selected["accepted_steps"], fitted["metrics"], selected["groups_missing"],
                       selected["resumed"] and fitted.get("resumed", False),
                       selected["problems"] + fitted["problems"])
