"""Typed configuration: one pydantic model per block of a profile (YAML in configs/), each field
documented where it is declared.

A leaf of the import graph: it imports pydantic, yaml and schemas.values only, never Playwright,
torch, Prefect or another runtime module, so every command can read a profile cheaply.
"""

from webgym.config.base import ConfigError, Section, is_url, project_path
from webgym.config.judge import JudgeConfig, JudgeName
from webgym.config.lake import LakeConfig, WarehouseConfig
from webgym.config.llm import EndpointConfig, LLMConfig, ModelPrice
from webgym.config.nightly import NightlyConfig
from webgym.config.policy import ContextConfig, PolicyConfig, PolicyKind, SamplingConfig, ScorerConfig
from webgym.config.profile import (Config, checkpoints_dir, load_config, replaced, tensorboard_dir, warehouse_path,
                                   with_checkpoint)
from webgym.config.rollout import EnvConfig, RolloutConfig
from webgym.config.serve import ServeConfig, served_name
from webgym.config.sites import SitesConfig, WorldConfig
from webgym.config.taskset import (AnnotateConfig, DecomposeConfig, DedupConfig, MiniwobConfig, SampleConfig,
                                   SplitConfig, StaleConfig, TasksetConfig)
from webgym.config.tracking import TrackingConfig
from webgym.config.training import AcceptConfig, Objective, TrainConfig

__all__ = [
    "AcceptConfig", "AnnotateConfig", "Config", "ConfigError", "ContextConfig", "DecomposeConfig",
    "DedupConfig", "EndpointConfig", "EnvConfig", "JudgeConfig", "JudgeName", "LLMConfig", "LakeConfig",
    "MiniwobConfig", "ModelPrice", "NightlyConfig", "Objective", "PolicyConfig", "PolicyKind", "RolloutConfig", "SampleConfig",
    "SamplingConfig", "ScorerConfig", "Section", "ServeConfig", "SitesConfig", "SplitConfig", "StaleConfig",
    "TasksetConfig",
    "TrackingConfig", "TrainConfig", "WarehouseConfig", "WorldConfig", "checkpoints_dir", "is_url", "load_config", "project_path", "replaced", "served_name",
    "tensorboard_dir",
    "warehouse_path", "with_checkpoint",
]
