"""The nightly iteration: build the task set, then per iteration sample -> rollout -> judge -> accept
(GRPO: roll out more until enough effective groups) -> train -> validate and promote -> serve ->
evaluate on the OOD split, then the warehouse and the report.

With nightly.validation_tasks, a new checkpoint is evaluated greedily on the validation split (training
families, never trained on) and becomes the served policy only when it does at least as well there as
the served one (stages/promote.py); otherwise the served policy stays, the next night rolls it out and
trains from it, and the night's held-out evaluation is of the policy actually served.

Every stage is idempotent, so a run killed anywhere and started again finishes the iteration it was
in without redoing or duplicating finished work: rollouts skip finished episodes, the judge skips
judged ones, accept and train reuse what an iteration already wrote, evaluate writes an evals row
once, and an iteration whose checkpoint exists resumes at validate -> serve -> evaluate. Iteration
numbers advance by themselves: an iteration is finished once its served policy has been evaluated on
the test split, and the next run continues from the served checkpoint (stages/iterations.py). A failing
stage retries (its task retries), then stops the run with the stage named; everything finished stays
in the lake.

Every stage goes through `stage`, which runs it in this process or, with nightly.dispatch: deployments
(the cluster profile), as its deployment on the work pool that fits it.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import replace
from typing import Any, Literal

import pandas as pd
from prefect import Flow, flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE

from flows.artifacts import publish_night, publish_tracking
from flows.build_taskset import build_taskset
from flows.evaluate import evaluate
from flows.gates import build_warehouse, quality_gate, recover_lake
from flows.judge import judge
from flows.lineage import RUN_HOOKS, nightly_run_name, require_lake_profile
from flows.reports import IterationSummary, NightlySummary, RolloutReport
from flows.rollout import rollout
from flows.serve import serve
from flows.train import TrainReport, acceptance, train
from stages.evaluate import EvaluateReport
from stages.iterations import (
    TRAJECTORY_COLUMNS,
    IterationPlan,
    dynamic_sampling,
    plan_iteration,
    rolled_out,
    rollout_success,
)
from stages.promote import promotion, rejected_checkpoints
from webgym.config import Config, load_config, warehouse_path
from webgym.lake import Lake
from webgym.lake.queries import accepted_rows, iteration_trajectories, promotion_of
from webgym.tracking import Tracker, current_flow_run, open_tracker
from webgym.train.fit import VLM_POLICIES, require_base_model, require_training_device
from webgym.warehouse import query


class StageFailed(RuntimeError):
    """A stage's deployment run ended without completing; the message names the stage and its flow run."""


_stage_seconds: ContextVar[dict[str, float] | None] = ContextVar("stage_seconds", default=None)


@contextmanager
def stage_clock() -> Iterator[dict[str, float]]:
    """Wall seconds per stage of the `stage` calls made inside (flow name, `_<split>` added where the call names
    one), summed over calls: the night's own measure of where its time goes."""
    seconds: dict[str, float] = {}
    token = _stage_seconds.set(seconds)
    try:
        yield seconds
    finally:
        _stage_seconds.reset(token)


def stage(dispatch: Literal["local", "deployments"], flow_fn: Flow, **parameters: Any) -> Any:
    """Run one stage's flow and return what it returns.

    local: the flow runs here as a subflow. deployments: its deployment `<flow>/<flow>` (prefect.yaml)
    runs on its work pool and this run waits for it, linked as a subflow; one that fails, crashes or is
    cancelled stops the nightly run with StageFailed. The return value comes back as Prefect's persisted
    flow result: the deployed runs persist flow results (PREFECT_RESULTS_PERSIST_BY_DEFAULT, set by
    prefect.yaml's pools and `webgym server`) under PREFECT_LOCAL_STORAGE_PATH, and a result record
    names its file by absolute path, so that path must be on a filesystem the workers and this process
    share. The stages' data never travels this way (it is in the lake): only their small reports, e.g.
    a rollout's trajectory ids, which the lake alone could not tell apart from an earlier draw's without
    repeating the flow's task selection here.
    """
    started = time.perf_counter()
    try:
        return _run_stage(dispatch, flow_fn, parameters)
    finally:
        seconds = _stage_seconds.get()
        if seconds is not None:
            name = flow_fn.name + (f"_{parameters['split']}" if "split" in parameters else "")
            seconds[name] = seconds.get(name, 0.0) + time.perf_counter() - started


def _run_stage(dispatch: Literal["local", "deployments"], flow_fn: Flow, parameters: dict[str, Any]) -> Any:
    if dispatch == "local":
        return flow_fn(**parameters)
    from prefect.deployments import run_deployment

    run = run_deployment(f"{flow_fn.name}/{flow_fn.name}", parameters=parameters, timeout=None)
    if not run.state.is_completed():
        raise StageFailed(f"stage {flow_fn.name}: deployment run {run.name} ({run.id}) ended "
                          f"{run.state.type.value}: {run.state.message or 'no message'}")
    return run.state.result()


@task(cache_policy=NO_CACHE)
def next_plan(config: Config) -> IterationPlan:
    """The next iteration as the lake stands (stages/iterations.py)."""
    lake = Lake(config.lake.data_dir)
    evals = lake.read_table("evals", columns=["iteration", "split", "evaluated_at"])
    return plan_iteration(lake.read_table("checkpoints"), evals,
                          lake.read_table("trajectories", columns=TRAJECTORY_COLUMNS),
                          config.nightly.warm_start_tasks, rejected_checkpoints(lake.read_table("promotions")))


@task(cache_policy=NO_CACHE)
def record_promotion(config: Config, plan: IterationPlan, checkpoint_id: str, validated: EvaluateReport | None,
                     served_validated: EvaluateReport | None) -> dict:
    """The promotion decision of a new checkpoint (stages/promote.py), written to the promotions table."""
    lake = Lake(config.lake.data_dir)
    evals = lake.read_table("evals", columns=["evaluation", "checkpoint", "task_id", "success"])
    row = promotion(plan.iteration, checkpoint_id, validated, plan.checkpoint_id, served_validated, evals,
                    config.nightly.promotion_tolerance, config.nightly.promotion_min_gain, dt.datetime.now(dt.UTC))
    lake.write_table("promotions", pd.DataFrame([row]), run_id=f"promote-{plan.iteration}")
    get_run_logger().info("iteration %d: %s %s", plan.iteration, checkpoint_id, row["reason"])
    return row


@task(cache_policy=NO_CACHE)
def episodes_success(config: Config, trajectory_ids: list[str]) -> float | None:
    """Success rate of these episodes by their verdicts (None when none is judged)."""
    verdicts = query(Lake(config.lake.data_dir), "SELECT trajectory_id, success FROM verdicts", config.judge)
    return rollout_success(verdicts, trajectory_ids)


@task(cache_policy=NO_CACHE)
def trained_iteration(config: Config, plan: IterationPlan) -> tuple[list[str], int]:
    """(episode ids, accepted steps) of an iteration trained before the run stopped, as the lake holds them."""
    lake, objective = Lake(config.lake.data_dir), plan.trained["objective"]
    trajectories = iteration_trajectories(lake, plan.iteration, ["trajectory_id", "iteration", "purpose"])
    accepted = accepted_rows(lake, plan.iteration, objective, ["t"])
    return rolled_out(trajectories, plan.iteration), len(accepted)


@task(cache_policy=NO_CACHE)
def write_report(config: Config) -> str:
    """The HTML report of everything in the lake; its path."""
    from webgym.report import default_path
    from webgym.report import write_report as render

    lake = Lake(config.lake.data_dir)
    return str(render(lake, default_path(lake)).resolve())


@task(cache_policy=NO_CACHE)
def training_signal(config: Config, iteration: int) -> int:
    """How many steps accept would keep of the iteration's judged rollouts (0: nothing to learn from, e.g.
    every GRPO group had one reward, or no episode succeeded under filtered BC)."""
    steps = len(acceptance(config, iteration).accepted)
    if not steps:
        get_run_logger().warning("iteration %d: no training signal: accept (%s) kept no step of its rollouts; no "
                                 "checkpoint is trained, the served policy stays and is evaluated", iteration,
                                 config.accept.objective)
    return steps


def learn(config: Config, plan: IterationPlan, config_path: str | None
          ) -> tuple[list[RolloutReport], TrainReport | None]:
    """(warm start or rollout) -> judge -> [dynamic sampling] -> train: the rollouts' reports and the training
    (None when the rollouts gave accept nothing to keep: the iteration ends without a checkpoint, where
    training would fail and a rerun would only repeat the same draws)."""
    settings, root, iteration, warm = config.nightly, config.lake.data_dir, plan.iteration, plan.warm_start
    checkpoint = None if warm else plan.checkpoint
    if warm:
        rolled = stage(settings.dispatch, rollout, iteration=iteration, split="train", size=settings.warm_start_tasks,
                       policy="oracle", group_size=1, config_path=config_path, data_dir=root)
    else:
        rolled = stage(settings.dispatch, rollout, iteration=iteration, split="train", size=settings.episodes,
                       checkpoint=checkpoint, config_path=config_path, data_dir=root)
    stage(settings.dispatch, judge, iteration=iteration, config_path=config_path, data_dir=root)
    reports = [rolled]
    if not warm and config.accept.objective == "grpo":
        for draw, missing in dynamic_sampling(settings.grpo_max_rounds,
                                              lambda: acceptance(config, iteration).groups_missing):
            get_run_logger().info("iteration %d: %d effective GRPO group(s) missing; rolling out %d more tasks",
                                  iteration, missing, missing)
            more = stage(settings.dispatch, rollout, iteration=iteration, split="train", size=missing,
                         checkpoint=checkpoint, draw=draw, config_path=config_path, data_dir=root)
            stage(settings.dispatch, judge, iteration=iteration, config_path=config_path, data_dir=root)
            reports.append(more)
    if not warm and not training_signal(config, iteration):
        return reports, None
    trained = stage(settings.dispatch, train, iteration=iteration, objective="sft" if warm else None,
                    epochs=settings.warm_start_epochs if warm else None,
                    learning_rate=settings.warm_start_learning_rate if warm else None, config_path=config_path,
                    data_dir=root)
    return reports, trained


def validate_and_promote(config: Config, plan: IterationPlan, checkpoint_id: str, path: str,
                         config_path: str | None) -> dict:
    """The new checkpoint and the served one on the same validation tasks (nightly.validation_tasks; the
    served one's episodes are those of its own iteration, so it is not rolled out again), then the
    promotion decision. With a serve.command the new checkpoint is served for its validation; one kept
    back is replaced by the served one again in run_iteration. A checkpoint decided before keeps its
    decision: a resumed night's, or an earlier night's whose very weights this night trained again."""
    settings, root = config.nightly, config.lake.data_dir
    decided = promotion_of(Lake(root), checkpoint_id)
    if decided:
        return decided
    validated = served_validated = None
    if settings.validation_tasks:
        if config.serve.command:  # a served policy answers through its server: serve the new checkpoint first
            stage(settings.dispatch, serve, checkpoint=path, served_model_name=checkpoint_id, config_path=config_path,
                  data_dir=root)
        validated = stage(settings.dispatch, evaluate, checkpoint=path, iteration=plan.iteration, split="validation",
                          size=settings.validation_tasks, config_path=config_path, data_dir=root)
        if plan.checkpoint:
            served_validated = stage(settings.dispatch, evaluate, checkpoint=plan.checkpoint, split="validation",
                                     iteration=plan.checkpoint_iteration, size=settings.validation_tasks,
                                     config_path=config_path, data_dir=root)
    return record_promotion(config, plan, checkpoint_id, validated, served_validated)


def run_iteration(config: Config, plan: IterationPlan, config_path: str | None) -> IterationSummary:
    """One iteration (_run_iteration) with its wall time and each stage's (stage_clock)."""
    started = time.perf_counter()
    with stage_clock() as seconds:
        done = _run_iteration(config, plan, config_path)
    return replace(done, stage_s=seconds, wall_s=time.perf_counter() - started)


def _run_iteration(config: Config, plan: IterationPlan, config_path: str | None) -> IterationSummary:
    """One iteration: learn (unless a stopped run already trained it) -> validate and promote -> serve the
    served policy -> evaluate it. An iteration without training signal skips to serve -> evaluate."""
    settings, root, iteration = config.nightly, config.lake.data_dir, plan.iteration
    rolled: list[RolloutReport] = []
    if plan.trained is None:
        rolled, trained = learn(config, plan, config_path)
        ids = [i for report in rolled for i in report.trajectory_ids]
        checkpoint_id, path, accepted = (trained.checkpoint_id, trained.path, trained.accepted_steps) if trained \
            else (None, None, 0)
    else:
        ids, accepted = trained_iteration(config, plan)
        checkpoint_id, path = plan.trained["checkpoint_id"], plan.trained["path"]
    promoted = validate_and_promote(config, plan, checkpoint_id, path, config_path) if checkpoint_id else None
    kind = "warm start" if plan.warm_start else "rollout" if checkpoint_id else "no training signal"
    served, served_id = (path, checkpoint_id) if promoted and promoted["promoted"] \
        else (plan.checkpoint, plan.checkpoint_id)
    # A configured server (vLLM on a cluster) moves to the served checkpoint; the scorer and local
    # policies load it in-process, and serve says there is nothing to serve.
    stage(settings.dispatch, serve, checkpoint=served, served_model_name=served_id, config_path=config_path,
          data_dir=root)
    evaluated = stage(settings.dispatch, evaluate, checkpoint=served, iteration=iteration,
                      size=settings.eval_tasks, config_path=config_path, data_dir=root)
    rollout_s = sum(report.wall_s for report in rolled)
    return IterationSummary(iteration, kind, len(ids), episodes_success(config, ids), accepted, checkpoint_id,
                            promoted, evaluated, sum(r.steps for r in rolled) / rollout_s if rollout_s else None)


def prepare(config: Config, rounds: int, config_path: str | None, tracker: Tracker) -> EvaluateReport | None:
    """Before the iterations: build the task set (nightly.build_taskset) and evaluate the untrained policy
    (nightly.evaluate_untrained, on a fresh lake); the untrained policy's held-out evaluation, if run. Their
    wall times and the untrained success are tracked at the step of the night's first iteration."""
    settings, root = config.nightly, config.lake.data_dir
    baseline = None
    with stage_clock() as seconds:
        if settings.build_taskset:
            stage(settings.dispatch, build_taskset, config_path=config_path, data_dir=root)
        if rounds and settings.evaluate_untrained and next_plan(config).untrained:
            baseline = stage(settings.dispatch, evaluate, iteration=0, size=settings.eval_tasks,
                             config_path=config_path, data_dir=root)
    if seconds:
        tracker.scalars({"night/baseline_success": baseline.success_rate if baseline else None,
                         **{f"stage_s/{name}": spent for name, spent in seconds.items()}},
                        step=next_plan(config).iteration)
    return baseline


@flow(name="nightly", flow_run_name=nightly_run_name, **RUN_HOOKS)
def nightly(iterations: int | None = None, config_path: str | None = None, data_dir: str | None = None) -> NightlySummary:
    """Run iterations on the profile, continuing from the last finished one.

    Args:
        iterations: Iterations this run (default: the profile's nightly.iterations; 0 only checks,
            rebuilds the warehouse and writes the report).
        config_path: Profile YAML (default configs/local.yaml).
        data_dir: Lake root, a path or an fsspec URL (default: the profile's lake.data_dir).
    """
    config = load_config(config_path, data_dir)
    settings, root = config.nightly, config.lake.data_dir
    recovered = recover_lake(root)
    quality_gate(root)  # a broken lake stops the run before any work
    require_lake_profile(config)  # so does a profile other than the one that built the lake
    require_training_device(config)  # so does a training device this machine lacks, not the first training
    if config.policy.kind in VLM_POLICIES and next_plan(config).untrained:
        require_base_model(config)  # a missing base model stops it too, not the first training
    rounds = settings.iterations if iterations is None else iterations
    with open_tracker(config, current_flow_run()) as tracker:  # per-iteration scalars, step = iteration
        publish_tracking(tracker.links, "nightly-tracking", "the night")
        baseline = prepare(config, rounds, config_path, tracker)
        done = []
        for _ in range(rounds):
            done.append(run_iteration(config, next_plan(config), config_path))
            tracker.scalars(done[-1].scalars(), step=done[-1].iteration)
            tracker.flush()
    quality_gate(root)
    warehouse = build_warehouse(root, str(warehouse_path(config)), config.judge)
    summary = NightlySummary(root, warehouse, write_report(config), Lake(root).counts(), recovered, done, baseline)
    publish_night(summary)
    return summary
