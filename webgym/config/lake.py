"""The `lake` and `warehouse` blocks: where the Parquet lake and the DuckDB warehouse file live."""

from __future__ import annotations

from pydantic import Field

from webgym.config.base import Location, ProjectPath, Section


class LakeConfig(Section):
    """Where the Parquet lake lives and how its writers batch and merge parts (the webgym/lake package)."""

    data_dir: Location = Field(
        default="data",
        description="Root of the Parquet lake: a path (relative to the project) or an fsspec URL "
                    "such as s3://bucket/lake. Env WEBGYM_DATA or --data-dir override it.")
    journal_batch_rows: int = Field(
        default=64, ge=1,
        description="Rows a streaming writer journals before it commits them as one Parquet part.")
    compact_min_files: int = Field(
        default=16, ge=2, description="Compaction merges a table once it has at least this many parts.")


class WarehouseConfig(Section):
    """The DuckDB file of views over the lake that external SQL tools open (webgym/warehouse.py)."""

    path: ProjectPath | None = Field(
        default=None,
        description="DuckDB file with views over the lake, for external SQL tools (relative to the project). "
                    "Unset: warehouse.duckdb inside a local lake, so each lake has its own; a lake at a URL "
                    "needs it set.")
