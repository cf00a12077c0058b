"""The `tracking` block: where training and nightly scalars go besides the logs (webgym/tracking.py)."""

from __future__ import annotations

from pydantic import Field

from webgym.config.base import ProjectPath, Section


class TrackingConfig(Section):
    """Run tracking: per training step and per night, scalars to TensorBoard event files and, when a tracking
    URI is set, to MLflow; each run tagged with its Prefect flow-run id, profile, seed and commit."""

    tensorboard: bool = Field(
        default=True,
        description="Write TensorBoard event files (offline; `tensorboard --logdir <folder>` shows them).")
    tensorboard_dir: ProjectPath | None = Field(
        default=None,
        description="Folder of the event files, one subfolder per tracked run (relative to the project). Unset: "
                    "tensorboard/ inside a local lake; for a lake at a URL (s3://...), whose folder TensorBoard's "
                    "writer cannot append to, tensorboard/ under the project on the machine that writes: set a "
                    "folder every machine shares there.")
    mlflow_uri: str | None = Field(
        default=None,
        description="MLflow tracking URI, e.g. sqlite:////abs/path/mlflow.db (offline, needs the `mlflow` extra) or "
                    "http://mlflow:5000; null: no MLflow. MLflow 3 refuses a plain folder (file:) store unless "
                    "MLFLOW_ALLOW_FILE_STORE=true is set.")
    mlflow_experiment: str = Field(
        default="webgym", min_length=1, description="MLflow experiment the runs go to (created when missing).")
