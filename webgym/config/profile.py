"""The whole configuration (a profile) and how it is loaded and changed.

Precedence, lowest first: field defaults, the profile file (and the profiles it `extends`), the
environment (WEBGYM_DATA), then typed changes a command or a flow makes with `replaced` and
`with_checkpoint`, which validate like the profile does.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, Field, ValidationError, model_validator

from webgym.config.base import ConfigError, Section, is_url, project_path
from webgym.config.judge import JudgeConfig
from webgym.config.lake import LakeConfig, WarehouseConfig
from webgym.config.llm import LLMConfig
from webgym.config.nightly import NightlyConfig
from webgym.config.policy import PolicyConfig
from webgym.config.rollout import EnvConfig, RolloutConfig
from webgym.config.serve import ServeConfig, served_name
from webgym.config.sites import SitesConfig
from webgym.config.taskset import TasksetConfig
from webgym.config.tracking import TrackingConfig
from webgym.config.training import AcceptConfig, TrainConfig

DEFAULT_PROFILE = "configs/local.yaml"


class Config(Section):
    """The whole pipeline's configuration (a profile)."""

    profile: str = Field(default="local", description="Name of the profile, for logs and reports.")
    lake: LakeConfig = Field(default_factory=LakeConfig)
    warehouse: WarehouseConfig = Field(default_factory=WarehouseConfig)
    taskset: TasksetConfig = Field(default_factory=TasksetConfig)
    llm: LLMConfig = Field(default_factory=LLMConfig)
    serve: ServeConfig = Field(default_factory=ServeConfig)
    judge: JudgeConfig = Field(default_factory=JudgeConfig)
    sites: SitesConfig = Field(default_factory=SitesConfig)
    accept: AcceptConfig = Field(default_factory=AcceptConfig)
    train: TrainConfig = Field(default_factory=TrainConfig)
    env: EnvConfig = Field(default_factory=EnvConfig)
    rollout: RolloutConfig = Field(default_factory=RolloutConfig)
    policy: PolicyConfig = Field(default_factory=PolicyConfig)
    nightly: NightlyConfig = Field(default_factory=NightlyConfig)
    tracking: TrackingConfig = Field(default_factory=TrackingConfig)

    @model_validator(mode="after")
    def _validation_split_exists(self) -> Config:
        """Promotion checks need validation tasks to check on, and validation sites must leave every
        training family a generated site to train on."""
        split, instances = self.taskset.split, self.sites.world.instances
        if split.validation_instances and instances <= split.held_out_instances + split.validation_instances:
            raise ValueError(f"taskset.split.validation_instances {split.validation_instances} and held_out_instances "
                             f"{split.held_out_instances} leave no generated site of a training family to train on "
                             f"(sites.world.instances {instances}): lower them or generate more sites")
        if self.nightly.validation_tasks and not (split.validation_fraction or split.validation_instances):
            raise ValueError("nightly.validation_tasks needs a validation split: set "
                             "taskset.split.validation_fraction or validation_instances above 0 "
                             "(or validation_tasks to 0)")
        return self

    @model_validator(mode="after")
    def _dagger_is_the_scorers(self) -> Config:
        """The oracle's labels are tool calls the scorer's candidates express; a text policy would need them
        written as responses in its prompt format, which nothing here does."""
        if self.accept.objective == "dagger" and self.policy.kind != "scorer":
            raise ValueError(f"accept.objective dagger trains the set-of-marks scorer on the oracle's labels; "
                             f"policy.kind is {self.policy.kind}: set policy.kind scorer or another objective")
        return self


def _merged(base: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """`base` with `changes` laid over it, section by section (a non-mapping value replaces)."""
    merged = dict(base)
    for key, value in changes.items():
        merged[key] = _merged(merged[key], value) if isinstance(value, dict) and isinstance(merged.get(key), dict) \
            else value
    return merged


def _read_profile(path: Path, seen: tuple[Path, ...]) -> dict[str, Any]:
    """A profile's YAML; `extends: other.yaml` (beside it) starts from that profile and changes only what
    this one sets. A list, `extends: [common.yaml, scorer.yaml]`, lays the fragments over each other in
    order first, so a profile takes a fragment (the scorer's recipe) that a sibling profile leaves out."""
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"config file {path} not found; pass --config {DEFAULT_PROFILE}") from None
    except IsADirectoryError:
        raise ConfigError(f"config file {path} is a directory; pass a profile file, e.g. --config "
                          f"{DEFAULT_PROFILE}") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"config file {path} cannot be read: {error}") from None
    except yaml.YAMLError as error:
        raise ConfigError(f"config file {path} is not valid YAML: {error}") from None
    if raw is None:  # a run on every default by mistake would look like a run on this profile
        raise ConfigError(f"config file {path} is empty; a profile sets at least `profile: <name>` "
                          f"(see {DEFAULT_PROFILE})")
    if not isinstance(raw, dict):
        raise ConfigError(f"config file {path}: a profile is a mapping of sections, not {type(raw).__name__}")
    parents = raw.pop("extends", None)
    merged: dict[str, Any] = {}
    for parent in [parents] if isinstance(parents, str) else parents or []:
        base = (path.parent / str(parent)).resolve()
        if base in seen or base == path.resolve():
            raise ConfigError(f"config file {path}: `extends: {parent}` loops back to a profile already read")
        merged = _merged(merged, _read_profile(base, (*seen, path.resolve())))
    return _merged(merged, raw)


def _problems(error: ValidationError) -> str:
    """Each problem as `section.setting: message` (a check across sections names its settings itself)."""
    return "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" if e["loc"] else e["msg"].removeprefix("Value error, ")
                     for e in error.errors())


def load_config(path: str | Path | None = None, data_dir: str | None = None) -> Config:
    """Load a profile (default configs/local.yaml); `data_dir` (else env WEBGYM_DATA) replaces lake.data_dir."""
    path = Path(path) if path else project_path(DEFAULT_PROFILE)
    raw = _read_profile(path, ())
    data_dir = data_dir or os.environ.get("WEBGYM_DATA")
    if data_dir:
        raw = _merged(raw, {"lake": {"data_dir": data_dir}})
    try:
        return Config.model_validate(raw)
    except ValidationError as error:
        raise ConfigError(f"config file {path}: {_problems(error)}") from None


Model = TypeVar("Model", bound=BaseModel)


def replaced(block: Model, /, **fields: Any) -> Model:
    """A copy of a config block with `fields` set, validated as the profile is; a None value keeps the
    block's own setting (so optional command-line options and flow parameters pass straight through)."""
    changes = {name: value for name, value in fields.items() if value is not None}
    if not changes:
        return block
    unknown = sorted(set(changes) - set(type(block).model_fields))
    if unknown:
        raise ConfigError(f"{type(block).__name__} has no setting(s) {unknown}")
    try:
        return type(block).model_validate({**block.model_dump(), **changes})
    except ValidationError as error:
        raise ConfigError(f"{type(block).__name__}: {_problems(error)}") from None


def with_checkpoint(config: Config, checkpoint: str | None, greedy: bool = False) -> Config:
    """The profile with its policy pointed at `checkpoint` and, for evaluation, made greedy.

    The scorer loads the checkpoint into its own block; a local policy loads it in-process; a chat
    policy asks its endpoints (the llm `policy` list) for the checkpoint's served name, the name the
    serve flow registers, so its trajectories record that checkpoint and no cached answer of an older
    checkpoint is reused. Greedy: the scorer takes its best candidate, text policies decode at 0."""
    policy, llm = config.policy, config.llm
    if policy.kind == "scorer":
        policy = replaced(policy, scorer=replaced(policy.scorer, checkpoint=checkpoint, greedy=greedy or None))
    else:
        policy = replaced(policy, checkpoint=checkpoint,
                          sampling=replaced(policy.sampling, temperature=0.0) if greedy else None)
    if policy.kind == "chat" and checkpoint:
        name = served_name(checkpoint)
        endpoints = [replaced(endpoint, model=name) for endpoint in llm.endpoints.get("policy", [])]
        llm = replaced(llm, endpoints={**llm.endpoints, "policy": endpoints})
    return config.model_copy(update={"policy": policy, "llm": llm})


def checkpoints_dir(config: Config) -> Path:
    """Where the train flow writes checkpoint directories: train.checkpoints_dir, else models/ inside a
    local lake (a lake in object storage needs the setting: vLLM loads a path, not a URL)."""
    if config.train.checkpoints_dir:
        return Path(config.train.checkpoints_dir)
    if is_url(config.lake.data_dir):
        raise ConfigError(f"the lake is at {config.lake.data_dir}: set train.checkpoints_dir to a directory the "
                          f"training and serving machines share")
    return Path(config.lake.data_dir) / "models"


def warehouse_path(config: Config) -> Path:
    """Where warehouse.duckdb goes: warehouse.path, else inside a local lake (a command on another lake,
    `--data-dir OTHER`, writes OTHER's file, never this one's); a lake at a URL needs the setting."""
    if config.warehouse.path:
        return Path(config.warehouse.path)
    if is_url(config.lake.data_dir):
        raise ConfigError(f"the lake is at {config.lake.data_dir}: set warehouse.path to the local file "
                          "warehouse.duckdb should be written to")
    return Path(config.lake.data_dir) / "warehouse.duckdb"


def tensorboard_dir(config: Config) -> Path:
    """Where TensorBoard event files go: tracking.tensorboard_dir, else tensorboard/ inside a local lake; a lake at
    a URL keeps them under the project (TensorBoard's writer appends to local files)."""
    if config.tracking.tensorboard_dir:
        return Path(config.tracking.tensorboard_dir)
    return project_path("tensorboard") if is_url(config.lake.data_dir) else Path(config.lake.data_dir) / "tensorboard"
