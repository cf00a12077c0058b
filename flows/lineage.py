"""Lineage of flow runs: names that say what a run does, the runs row each run writes when it ends, and the
guard that keeps a nightly run off a lake another profile's nightly runs built.

Every flow is declared with its `*_run_name` and `**RUN_HOOKS`; the rows a run appends carry its id
(flows/__init__.py points webgym/lake/lineage.py at Prefect's runtime), and its runs row (schemas/runs.py)
links that id to its profile, seed, commit, parent run, start, end and outcome.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from typing import Any

import pandas as pd
from prefect import Flow, task
from prefect.cache_policies import NO_CACHE
from prefect.client.schemas.objects import FlowRun
from prefect.runtime import flow_run as current_run
from prefect.states import State

from stages.runs import profile_change, with_run
from webgym.config import Config, ConfigError, load_config, served_name
from webgym.lake import Lake
from webgym.lake.queries import run_of
from webgym.provenance import commit

log = logging.getLogger(__name__)


def _parameter(name: str, default: Any = None) -> Any:
    value = (current_run.parameters or {}).get(name)
    return default if value is None else value


def rollout_run_name() -> str:
    """rollout-it<iteration>-<split>, with -draw<n> for GRPO's extra draws."""
    draw = _parameter("draw", 0)
    return f"rollout-it{_parameter('iteration', 0)}-{_parameter('split', 'train')}" + (f"-draw{draw}" if draw else "")


def evaluate_run_name() -> str:
    """evaluate-it<iteration>-<split>; evaluate-newest-<split> when the iteration is left to the lake."""
    iteration = _parameter("iteration")
    label = "newest" if iteration is None else f"it{iteration}"
    return f"evaluate-{label}-{_parameter('split', 'test')}"


def judge_run_name() -> str:
    return f"judge-it{_parameter('iteration')}"


def train_run_name() -> str:
    return f"train-it{_parameter('iteration')}"


def serve_run_name() -> str:
    """serve-<served model name>: the checkpoint it serves."""
    return f"serve-{_parameter('served_model_name') or served_name(_parameter('checkpoint', ''))}"


def nightly_run_name() -> str:
    """nightly-<profile>-<UTC date>."""
    day = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d")
    try:
        profile = load_config(_parameter("config_path"), _parameter("data_dir")).profile
    except ConfigError:  # the run itself says what is wrong with the profile
        return f"nightly-{day}"
    return f"nightly-{profile}-{day}"


OUTCOMES = {"COMPLETED": "completed", "FAILED": "failed", "CRASHED": "crashed", "CANCELLED": "cancelled",
            "CANCELLING": "cancelled"}
"""The outcome of each final state RUN_HOOKS fire on (cancellation hooks fire on CANCELLING)."""


def run_row(flow_name: str, flow_run: FlowRun, state: State, parent: str | None, config: Config) -> dict:
    """The runs row of a flow run that ended in `state` (schemas/runs.py)."""
    parameters = dict(flow_run.parameters)
    iteration = parameters.get("iteration")
    return {"flow_run_id": str(flow_run.id), "flow_name": flow_name, "run_name": flow_run.name,
            "parent_flow_run_id": parent, "iteration": iteration if isinstance(iteration, int) else None,
            "split": parameters.get("split"), "profile": config.profile, "config": config.model_dump_json(),
            "parameters": json.dumps(parameters, default=str, sort_keys=True), "seed": config.policy.acting_seed,
            "commit": commit(), "started_at": flow_run.start_time or state.timestamp, "ended_at": state.timestamp,
            "outcome": OUTCOMES[state.type.value], "message": state.message}


def write_run(lake: Lake, row: dict) -> None:
    """Append the run's row; a run that ends again under the same id (a retry) replaces its earlier row."""
    if run_of(lake, row["flow_run_id"]).empty:
        lake.write_table("runs", pd.DataFrame([row]), run_id="runs")
    else:
        lake.replace_table("runs", with_run(lake.read_table("runs"), row), run_id="runs")


def record_run(flow: Flow, flow_run: FlowRun, state: State) -> None:
    """Prefect hook on a flow run's final state: its runs row, in the lake of its profile and `data_dir`.
    A run whose profile does not load has no lake to record in: it is logged, its error is the run's own."""
    parameters = flow_run.parameters
    try:
        config = load_config(parameters.get("config_path"), parameters.get("data_dir"))
    except ConfigError as error:
        log.warning("flow run %s: no runs row, its profile does not load: %s", flow_run.name, error)
        return
    write_run(Lake(config.lake.data_dir), run_row(flow.name, flow_run, state, current_run.parent_flow_run_id, config))


RUN_HOOKS: dict[str, list] = {hook: [record_run] for hook in
                              ("on_completion", "on_failure", "on_crashed", "on_cancellation")}
"""A flow's hooks: whatever its end, the run records its runs row (a hook's own error is logged, never the
run's outcome)."""


@task(cache_policy=NO_CACHE)
def require_lake_profile(config: Config) -> None:
    """Stop a nightly run (ConfigError, one line) whose profile differs from the one the lake's earlier nightly
    runs used, unless the profile sets nightly.allow_profile_change (stages/runs.py: profile_change)."""
    if config.nightly.allow_profile_change:
        return
    runs = Lake(config.lake.data_dir).read_table("runs", ["flow_run_id", "flow_name", "parent_flow_run_id",
                                                          "profile", "outcome", "started_at"])
    problem = profile_change(runs, config.profile, config.lake.data_dir)
    if problem:
        raise ConfigError(problem)
