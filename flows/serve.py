"""The serve flow: after training, the policy endpoint moves to the new checkpoint.

It stops the server it started last time, starts the profile's `serve.command` for the new
checkpoint and returns once `/v1/models` lists the served name, which the llm `policy` endpoint
then names as its model (so trajectories record the served checkpoint as their policy version).
Idempotent: a rerun while that checkpoint is already served under that name changes nothing.
Without a command (the local profile) there is nothing to serve: policies load checkpoints in-process.
"""

from __future__ import annotations

from dataclasses import dataclass

from prefect import flow, task
from prefect.cache_policies import NO_CACHE

from flows.lineage import RUN_HOOKS, serve_run_name
from webgym.config import ServeConfig, load_config, served_name
from webgym.serve import supervisor


@dataclass
class ServeReport:
    """Which checkpoint the policy endpoint serves after the flow, and what it replaced."""

    name: str
    """Served model name: the llm `policy` endpoint's `model`, recorded as trajectories' policy_version."""
    checkpoint: str
    base_url: str | None
    """API root to put in the llm `policy` endpoint; None when nothing is served."""
    started: bool
    """A new server process was started (False: none is needed, or it was already serving)."""
    pid: int | None = None
    replaced: str | None = None
    """Name the stopped previous server served, if one was running."""
    startup_s: float = 0.0
    log: str | None = None
    note: str = ""


@task(cache_policy=NO_CACHE)
def stop_previous(config: ServeConfig) -> str | None:
    """Stop the server the last serve started, if it still runs; return the name it served."""
    stopped = supervisor.stop(config)
    return stopped.name if stopped else None


@task(cache_policy=NO_CACHE)
def start_and_wait(config: ServeConfig, checkpoint: str, name: str, replaced: str | None) -> ServeReport:
    """Start the command template for the checkpoint and wait until it lists `name` (ServeError with
    the server's last log lines on an early exit or a timeout)."""
    state, popen = supervisor.start(config, checkpoint, name)
    seconds = supervisor.wait_until_served(config, state, popen)
    return ServeReport(name, checkpoint, state.base_url, started=True, pid=state.pid, replaced=replaced,
                       startup_s=round(seconds, 2), log=state.log, note=f"serving {name} at {state.base_url}")


@flow(name="serve", flow_run_name=serve_run_name, **RUN_HOOKS)
def serve(checkpoint: str, served_model_name: str | None = None, config_path: str | None = None,
          data_dir: str | None = None) -> ServeReport:
    """Serve `checkpoint` (a directory, or a hub id vLLM can load) as `served_model_name` (default: the
    checkpoint directory's name) with the profile's serve.command, replacing the server started before.
    `data_dir`: the lake whose runs table records the run (default: the profile's lake.data_dir)."""
    config = load_config(config_path).serve
    name = served_model_name or served_name(checkpoint)
    if config.command is None:
        return ServeReport(name, checkpoint, None, started=False,
                           note="serve.command is null: no server needed, the policy loads the checkpoint in-process")
    current = supervisor.serving(config, checkpoint, name)
    if current is not None:
        return ServeReport(name, checkpoint, current.base_url, started=False, pid=current.pid, log=current.log,
                           note=f"already serving {name} at {current.base_url}")
    replaced = stop_previous(config)
    return start_and_wait(config, checkpoint, name, replaced)
