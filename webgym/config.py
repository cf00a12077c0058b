"""Typed configuration: one pydantic model per concern, loaded from a YAML profile in configs/.

Precedence, lowest first: field defaults, the profile file, environment variables (WEBGYM_DATA),
command-line options. Every field says what it is for where it is declared.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from webgym import PROJECT_ROOT


class ConfigError(ValueError):
    """A profile is missing, unreadable or has a bad value; the message says how to fix it."""


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LakeConfig(Section):
    data_dir: str = Field(
        default="data",
        description="Root of the Parquet lake: a path (relative to the project) or an fsspec URL "
                    "such as s3://bucket/lake. Env WEBGYM_DATA or --data-dir override it.")
    journal_batch_rows: int = Field(
        default=64, ge=1,
        description="Rows a streaming writer journals before it commits them as one Parquet part.")
    compact_min_files: int = Field(
        default=16, ge=2, description="Compaction merges a table once it has at least this many parts.")


class WarehouseConfig(Section):
    path: str = Field(
        default="warehouse.duckdb",
        description="DuckDB file with views over the lake, for external SQL tools (relative to the project).")


class Config(Section):
    """The whole pipeline's configuration (a profile)."""

    profile: str = Field(default="local", description="Name of the profile, for logs and reports.")
    lake: LakeConfig = Field(default_factory=LakeConfig)
    warehouse: WarehouseConfig = Field(default_factory=WarehouseConfig)

    def data_root(self) -> str:
        """The lake root as an absolute path or a URL."""
        root = os.environ.get("WEBGYM_DATA") or self.lake.data_dir
        return root if "://" in root else str((PROJECT_ROOT / root).resolve())

    def warehouse_path(self) -> Path:
        return (PROJECT_ROOT / self.warehouse.path).resolve()


def load_config(path: str | Path | None = None, overrides: dict[str, Any] | None = None) -> Config:
    """Load a profile (default configs/local.yaml) and apply dotted overrides like {"lake.data_dir": ...}."""
    path = Path(path) if path else PROJECT_ROOT / "configs" / "local.yaml"
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except FileNotFoundError:
        raise ConfigError(f"config file {path} not found; pass --config configs/local.yaml") from None
    except yaml.YAMLError as error:
        raise ConfigError(f"config file {path} is not valid YAML: {error}") from None
    for dotted, value in (overrides or {}).items():
        node = raw
        *parents, leaf = dotted.split(".")
        for key in parents:
            node = node.setdefault(key, {})
        node[leaf] = value
    try:
        return Config.model_validate(raw)
    except ValidationError as error:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in error.errors())
        raise ConfigError(f"config file {path}: {problems}") from None
