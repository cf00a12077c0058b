"""Run tracking: the scalars of every training step and of every night, in TensorBoard event files (offline;
`tensorboard --logdir <folder>` shows them) and, when tracking.mlflow_uri is set, in an MLflow run.

The trainers receive a Tracker and call `scalars(values, step)`; they know nothing of TensorBoard, MLflow or
Prefect. A tracked run belongs to the Prefect flow run at the root of its flow-run tree: a night's scalars go
to the nightly's run, each training's step scalars to a run nested under it, named for what it is:

    <tracking.tensorboard_dir>/20261204-021003-nightly-run-name/            per-iteration scalars
    <tracking.tensorboard_dir>/20261204-021003-nightly-run-name/train-it3/  iteration 3's training steps

and in MLflow a run tagged `scope: root`, with the trainings as its nested runs. Every run is tagged with
its flow-run id (and its root's), the profile, the seed and the checkout's commit.
"""

from __future__ import annotations

import datetime as dt
import os
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from webgym.config import Config, ConfigError, TrackingConfig, tensorboard_dir
from webgym.provenance import commit

MLFLOW_BATCH = 1000
"""Metrics MLflow takes in one log_batch call (its limit): a training's steps are sent in batches of this many."""


@dataclass(frozen=True)
class FlowRunIds:
    """The Prefect flow run a tracked run belongs to (None outside a flow), and the run at the root of its tree
    (the nightly that started a train stage; a run started on its own is its own root)."""

    flow_run_id: str | None
    root_flow_run_id: str | None
    root_name: str
    """The root run's folder name: its start time (UTC) and flow-run name, which sort by time in TensorBoard."""


def current_flow_run() -> FlowRunIds:
    """The flow run this code runs in, from Prefect's runtime (imported here: the trainers never import Prefect)."""
    from prefect.client.orchestration import get_client
    from prefect.runtime import flow_run

    run_id = flow_run.id
    if run_id is None:
        return FlowRunIds(None, None, f"{dt.datetime.now(dt.UTC):%Y%m%d-%H%M%S}-outside-prefect")
    root_id = str(flow_run.root_flow_run_id)
    with get_client(sync_client=True) as client:
        root = client.read_flow_run(uuid.UUID(root_id))
    started = root.start_time or root.expected_start_time or dt.datetime.now(dt.UTC)
    name = root.name.replace("/", "-")  # a run name is free text; the folder is one level
    return FlowRunIds(str(run_id), root_id, f"{started.astimezone(dt.UTC):%Y%m%d-%H%M%S}-{name}")


def run_tags(config: Config, run: FlowRunIds) -> dict[str, str]:
    """What identifies a tracked run: flow-run ids, profile, the policy's acting seed (train_seed when training
    uses another) and the checkout's commit (as the runs table records it)."""
    seed = config.policy.acting_seed
    tags = {"flow_run_id": str(run.flow_run_id), "root_flow_run_id": str(run.root_flow_run_id),
            "profile": config.profile, "seed": str(seed), "commit": commit()}
    if config.train.seed != seed:
        tags["train_seed"] = str(config.train.seed)
    return tags


@dataclass(frozen=True)
class TrackingLinks:
    """Where a tracked run's scalars can be looked at (what the Prefect artifact shows)."""

    logdir: Path | None
    """The run's TensorBoard folder (None: TensorBoard off)."""
    tensorboard_root: Path | None
    """The folder holding every run's folder: what `tensorboard --logdir` is given to compare runs."""
    mlflow_uri: str | None = None
    mlflow_experiment_id: str | None = None
    mlflow_run_id: str | None = None


class _Mlflow:
    """A client on tracking.mlflow_uri (MlflowClient: no global active run) and the experiment runs go to."""

    def __init__(self, settings: TrackingConfig) -> None:
        try:
            from mlflow.tracking import MlflowClient
        except ImportError:
            raise ConfigError("tracking.mlflow_uri is set but MLflow is not installed: pip install -e '.[mlflow]' "
                              "(mlflow-skinny), or set tracking.mlflow_uri: null") from None
        from mlflow.exceptions import MlflowException

        self.uri = str(settings.mlflow_uri)
        try:
            self.client = MlflowClient(tracking_uri=self.uri)
            found = self.client.get_experiment_by_name(settings.mlflow_experiment)
        except MlflowException as refused:  # MLflow 3 refuses a folder store unless MLFLOW_ALLOW_FILE_STORE
            first = str(refused).split(". ")[0]
            raise ConfigError(f"tracking.mlflow_uri {self.uri!r}: MLflow refuses this store ({first}). Use "
                              "sqlite:////abs/path/mlflow.db (a local file, offline), a tracking server's http:// "
                              "URL, or set MLFLOW_ALLOW_FILE_STORE=true for a folder store") from None
        self.experiment_id = found.experiment_id if found else self.client.create_experiment(settings.mlflow_experiment)

    def start(self, run_name: str, tags: dict[str, str], scope: str, parent: str | None = None) -> _MlflowRun:
        """A new run; `scope` is `root` for a flow-run tree's own run, else the nested run's name."""
        tags = {**tags, "scope": scope, "mlflow.source.git.commit": tags["commit"]}
        if parent:
            tags["mlflow.parentRunId"] = parent
        return _MlflowRun(self, self.client.create_run(self.experiment_id, run_name=run_name, tags=tags).info.run_id)

    def root(self, run: FlowRunIds, tags: dict[str, str]) -> tuple[_MlflowRun, bool]:
        """The root run of `run`'s flow-run tree, found by its flow-run id (a train stage of a nightly finds the
        nightly's), else started here; and whether it was started here."""
        if run.root_flow_run_id is not None:
            found = self.client.search_runs([self.experiment_id], max_results=1, filter_string=(
                f"tags.flow_run_id = '{run.root_flow_run_id}' and tags.scope = 'root'"))
            if found:
                return _MlflowRun(self, found[0].info.run_id), False
        return self.start(run.root_name, tags, "root"), True


class _MlflowRun:
    """One MLflow run; its metrics are sent in batches (a training's steps in a few calls, not one per step)."""

    def __init__(self, server: _Mlflow, run_id: str) -> None:
        self.server = server
        self.run_id = run_id
        self._pending: list[Any] = []

    def log(self, values: Mapping[str, float], step: int) -> None:
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        self._pending += [Metric(name, value, now, step) for name, value in values.items()]
        if len(self._pending) >= MLFLOW_BATCH:
            self.flush()

    def flush(self) -> None:
        for start in range(0, len(self._pending), MLFLOW_BATCH):
            self.server.client.log_batch(self.run_id, metrics=self._pending[start:start + MLFLOW_BATCH])
        self._pending = []

    def finish(self, failed: bool) -> None:
        self.flush()
        self.server.client.set_terminated(self.run_id, "FAILED" if failed else "FINISHED")


class Tracker:
    """The scalars of one tracked run, to its TensorBoard folder and its MLflow run (each when configured).
    A tracker with neither (NO_TRACKING) takes scalars and writes nothing."""

    def __init__(self, logdir: Path | None = None, tensorboard_root: Path | None = None,
                 mlflow: _MlflowRun | None = None, owned: tuple[_MlflowRun, ...] = (),
                 tags: Mapping[str, str] | None = None) -> None:
        self._writer = None
        if logdir is not None:
            from torch.utils.tensorboard import SummaryWriter

            self._writer = SummaryWriter(str(logdir))
            if tags:
                self._writer.add_text("tags", "| tag | value |\n|---|---|\n"
                                      + "\n".join(f"| {name} | {value} |" for name, value in tags.items()), 0)
        self._mlflow = mlflow
        self._owned = owned
        self.links = TrackingLinks(logdir, tensorboard_root, mlflow.server.uri if mlflow else None,
                                   mlflow.server.experiment_id if mlflow else None, mlflow.run_id if mlflow else None)

    def scalars(self, values: Mapping[str, float | None], step: int) -> None:
        """Record `values` at `step` (an optimiser step, an epoch or an iteration); None values are left out."""
        kept = {name: float(value) for name, value in values.items() if value is not None}
        if self._writer is not None:
            for name, value in kept.items():
                self._writer.add_scalar(name, value, step)
        if self._mlflow is not None:
            self._mlflow.log(kept, step)

    def flush(self) -> None:
        """Write what is buffered now (a night flushes after each iteration, so a long run shows as it goes)."""
        if self._writer is not None:
            self._writer.flush()
        if self._mlflow is not None:
            self._mlflow.flush()

    def close(self, failed: bool = False) -> None:
        """Flush and close the event file; end the MLflow run (and a root run made for it) FINISHED or FAILED."""
        if self._writer is not None:
            self._writer.close()
        for run in (self._mlflow, *self._owned) if self._mlflow else ():
            run.finish(failed)
        self._writer, self._mlflow, self._owned = None, None, ()

    def __enter__(self) -> Tracker:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.close(failed=kind is not None)


NO_TRACKING = Tracker()
"""The trainers' default: scalars go nowhere (a trainer called without a flow, as in its unit tests)."""


def open_tracker(config: Config, run: FlowRunIds, name: str | None = None) -> Tracker:
    """The tracker of `run`'s root run or, with `name` (e.g. train-it3), of a run of that name nested under it:
    a TensorBoard folder <tracking.tensorboard_dir>/<root run>[/<name>] and an MLflow run, as the profile's
    `tracking` block configures, both tagged with run_tags. A rank other than 0 of a multi-process training
    (RANK, set by torchrun and the deepspeed launcher) tracks nothing: rank 0 writes for all."""
    if int(os.environ.get("RANK", "0")):
        return Tracker()
    settings, tags = config.tracking, run_tags(config, run)
    root_dir = tensorboard_dir(config) if settings.tensorboard else None
    logdir = root_dir / run.root_name / (name or "") if root_dir else None
    mlflow, owned = None, ()
    if settings.mlflow_uri:
        server = _Mlflow(settings)
        root, made = server.root(run, tags)
        if name is None:
            mlflow = root
        else:
            mlflow, owned = server.start(name, tags, name, parent=root.run_id), (root,) if made else ()
    return Tracker(logdir, root_dir, mlflow, owned, tags)
