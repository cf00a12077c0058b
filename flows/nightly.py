"""The nightly iteration: build the task set, then per iteration sample -> rollout -> judge -> accept
(GRPO: roll out more until enough effective groups) -> train -> serve -> evaluate on the OOD split,
then the warehouse and the report.

Every stage is idempotent, so a run killed anywhere and started again finishes the iteration it was
in without redoing or duplicating finished work: rollouts skip finished episodes, the judge skips
judged ones, accept and train reuse what an iteration already wrote, evaluate writes an evals row
once. Iteration numbers advance by themselves: an iteration is finished once its checkpoint has been
evaluated, and the next run continues from the newest checkpoint. A failing stage retries (its task
retries), then stops the run with the stage named; everything finished stays in the lake.

Every stage goes through `stage`, which runs it in this process or, with nightly.dispatch: deployments
(the cluster profile), as its deployment on the work pool that fits it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from prefect import Flow, flow, get_run_logger

from flows.build_taskset import build_taskset
from flows.evaluate import evaluate
from flows.gates import build_warehouse, quality_gate, recover_lake
from flows.judge import judge
from flows.rollout import rollout
from flows.serve import serve
from flows.train import acceptance, latest_checkpoint, train, train_config
from webgym.config import Config, load_config
from webgym.lake import Lake


@dataclass
class IterationSummary:
    """One iteration's figures, as the CLI prints them."""

    iteration: int
    kind: str
    """warm start (oracle demonstrations + SFT) or rollout."""
    episodes: int
    rollout_success: float | None
    accepted_steps: int
    checkpoint_id: str
    eval_episodes: int
    eval_success: float


@dataclass
class NightlySummary:
    data_root: str
    warehouse: str
    report: str
    rows: dict[str, int]
    recovered_rows: int
    iterations: list[IterationSummary] = field(default_factory=list)
    baseline_success: float | None = None
    """Held-out success of the untrained starting policy, when this run evaluated it."""


class StageFailed(RuntimeError):
    """A stage's deployment run ended without completing; the message names the stage and its flow run."""


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
    if dispatch == "local":
        return flow_fn(**parameters)
    from prefect.deployments import run_deployment

    run = run_deployment(f"{flow_fn.name}/{flow_fn.name}", parameters=parameters, timeout=None)
    if not run.state.is_completed():
        raise StageFailed(f"stage {flow_fn.name}: deployment run {run.name} ({run.id}) ended "
                          f"{run.state.type.value}: {run.state.message or 'no message'}")
    return run.state.result()


def _finished(lake: Lake, iteration: int) -> bool:
    """An iteration is finished when a checkpoint of it exists and was evaluated afterwards."""
    checkpoints = lake.read_table("checkpoints")
    mine = checkpoints[checkpoints["iteration"] == iteration]
    evals = lake.read_table("evals", columns=["iteration", "evaluated_at"])
    later = evals[evals["iteration"] == iteration]["evaluated_at"]
    return bool(len(mine)) and bool(len(later)) and later.max() >= mine["created_at"].max()


def next_iteration(data_root: str) -> int:
    """The iteration to run: the newest checkpoint's if it was not evaluated yet, else the one after."""
    lake = Lake(data_root)
    checkpoints = lake.read_table("checkpoints", columns=["iteration"])["iteration"]
    if checkpoints.empty:
        trajectories = lake.read_table("trajectories", columns=["iteration"])["iteration"]
        return int(trajectories.max()) if len(trajectories) else 0
    newest = int(checkpoints.max())
    return newest if not _finished(lake, newest) else newest + 1


def _rollout_success(data_root: str, trajectory_ids: list[str], config: Config) -> float | None:
    from webgym.warehouse import query

    verdicts = query(Lake(data_root), "SELECT trajectory_id, success FROM verdicts", tuple(config.judge.priority))
    mine = verdicts[verdicts["trajectory_id"].isin(trajectory_ids)]
    return float(mine["success"].mean()) if len(mine) else None


def _iteration(config: Config, iteration: int, config_path: str | None, root: str) -> IterationSummary:
    """One iteration: (warm start or rollout) -> judge -> accept -> train -> serve -> evaluate."""
    settings = config.nightly
    dispatch = settings.dispatch
    lake = Lake(root)
    warm = iteration == 0 and settings.warm_start_tasks > 0 and lake.count("checkpoints") == 0
    checkpoint = None
    if warm:
        rolled = stage(dispatch, rollout, iteration=0, split="train", size=settings.warm_start_tasks,
                       policy="oracle", group_size=1, config_path=config_path, data_dir=root)
    else:
        newest = latest_checkpoint(root)
        checkpoint = newest["path"] if newest else None
        rolled = stage(dispatch, rollout, iteration=iteration, split="train", size=settings.episodes,
                       checkpoint=checkpoint, config_path=config_path, data_dir=root)
    stage(dispatch, judge, iteration=iteration, config_path=config_path, data_dir=root)
    ids = list(rolled.trajectory_ids)
    objective = "sft" if warm else None
    if not warm and config.accept.objective == "grpo":
        for draw in range(1, settings.grpo_max_rounds + 1):
            missing = acceptance(train_config(config_path, root, None, None, None, None), iteration).groups_missing
            if not missing:
                break
            get_run_logger().info("iteration %d: %d effective GRPO group(s) missing; rolling out %d more tasks",
                                  iteration, missing, missing)
            more = stage(dispatch, rollout, iteration=iteration, split="train", size=missing, checkpoint=checkpoint,
                         draw=draw, config_path=config_path, data_dir=root)
            stage(dispatch, judge, iteration=iteration, config_path=config_path, data_dir=root)
            ids += more.trajectory_ids
    trained = stage(dispatch, train, iteration=iteration, objective=objective,
                    epochs=settings.warm_start_epochs if warm else None, config_path=config_path, data_dir=root)
    # A configured server (vLLM on a cluster) moves to the new checkpoint; the scorer and local
    # policies load it in-process, and serve says there is nothing to serve.
    stage(dispatch, serve, checkpoint=trained.path, served_model_name=trained.checkpoint_id, config_path=config_path)
    evaluated = stage(dispatch, evaluate, checkpoint=trained.path, iteration=iteration, size=settings.eval_tasks,
                      config_path=config_path, data_dir=root)
    return IterationSummary(iteration, "warm start" if warm else "rollout", len(ids),
                            _rollout_success(root, ids, config), trained.accepted_steps, trained.checkpoint_id,
                            evaluated.episodes, evaluated.success_rate)


@flow(name="nightly")
def nightly(iterations: int | None = None, config_path: str | None = None, data_dir: str | None = None) -> NightlySummary:
    """Run iterations on the profile, continuing from the last finished one.

    Args:
        iterations: Iterations this run (default: the profile's nightly.iterations; 0 only checks,
            rebuilds the warehouse and writes the report).
        config_path: Profile YAML (default configs/local.yaml).
        data_dir: Lake root, a path or an fsspec URL (default: the profile's lake.data_dir).
    """
    config = load_config(config_path, {"lake.data_dir": data_dir} if data_dir else None)
    root = config.data_root()
    recovered = recover_lake(root)
    quality_gate(root)  # a broken lake stops the run before any work
    dispatch = config.nightly.dispatch
    if config.nightly.build_taskset:
        stage(dispatch, build_taskset, config_path=config_path, data_dir=root)
    summary = NightlySummary(root, "", "", {}, recovered)
    lake = Lake(root)
    rounds = config.nightly.iterations if iterations is None else iterations
    if rounds and config.nightly.evaluate_untrained and lake.count("checkpoints") == 0:
        summary.baseline_success = stage(dispatch, evaluate, iteration=0, size=config.nightly.eval_tasks,
                                         config_path=config_path, data_dir=root).success_rate
    first = next_iteration(root)
    for iteration in range(first, first + rounds):
        summary.iterations.append(_iteration(config, iteration, config_path, root))
    quality_gate(root)
    summary.warehouse = build_warehouse(root, str(config.warehouse_path()), config.judge.priority)
    summary.report = write_report(root, config.profile)
    summary.rows = Lake(root).counts()
    return summary


def write_report(root: str, profile: str) -> str:
    """The HTML report of everything in the lake; its path."""
    from webgym.report import default_path
    from webgym.report import write_report as render

    lake = Lake(root)
    return str(render(lake, default_path(lake), profile).resolve())
