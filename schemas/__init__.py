"""Table schemas: one module per lake table, each exporting SCHEMA.

`TABLES`, `schema_for`, `TableSchema` and `SchemaError` load the table modules (and pandas, pyarrow)
on first use, so the configuration, which needs only the shared values of schemas.values, stays cheap
to import.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from schemas.table import SchemaError, TableSchema

TABLE_MODULES = ("seed_tasks", "duplicates", "tasks", "llm_calls", "trajectories", "steps", "judgments", "accepted",
                 "checkpoints", "promotions", "evals", "blocklist", "runs")
"""The lake's tables, in the order they are listed (a module schemas/<name>.py each)."""


def __getattr__(name: str) -> Any:
    if name == "TABLES":
        tables = {m.SCHEMA.name: m.SCHEMA for m in (importlib.import_module(f"schemas.{t}") for t in TABLE_MODULES)}
        globals()["TABLES"] = tables
        return tables
    if name in ("SchemaError", "TableSchema"):
        return getattr(importlib.import_module("schemas.table"), name)
    raise AttributeError(f"module 'schemas' has no attribute {name!r}")


def schema_for(table: str) -> TableSchema:
    """The schema of a table, with the list of tables when the name is wrong."""
    from schemas.table import SchemaError

    tables = __getattr__("TABLES")
    try:
        return tables[table]
    except KeyError:
        raise SchemaError(f"unknown table {table!r}; tables are {sorted(tables)}") from None


__all__ = ["TABLES", "TABLE_MODULES", "SchemaError", "TableSchema", "schema_for"]
