"""Table schemas: one module per lake table, each exporting SCHEMA."""

from __future__ import annotations

from schemas import (accepted, blocklist, checkpoints, duplicates, evals, judgments, llm_calls, seed_tasks,
                     steps, tasks, trajectories)
from schemas.table import SchemaError, TableSchema

TABLES: dict[str, TableSchema] = {m.SCHEMA.name: m.SCHEMA for m in (
    seed_tasks, duplicates, tasks, llm_calls, trajectories, steps, judgments, accepted, checkpoints, evals,
    blocklist)}


def schema_for(table: str) -> TableSchema:
    """The schema of a table, with the list of tables when the name is wrong."""
    try:
        return TABLES[table]
    except KeyError:
        raise SchemaError(f"unknown table {table!r}; tables are {sorted(TABLES)}") from None


__all__ = ["TABLES", "SchemaError", "TableSchema", "schema_for"]
