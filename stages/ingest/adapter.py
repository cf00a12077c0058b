"""What every ingest adapter is: a record -> seed-task fields function plus a shape test for `auto`."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class RecordError(ValueError):
    """A record that cannot become a seed task; the message names the field and what is wrong."""


@dataclass(frozen=True)
class Where:
    """Where a record was read, for ids of records that have none (`file:line`)."""

    file: str
    line: int

    @property
    def fallback_id(self) -> str:
        return f"{Path(self.file).name}:{self.line}"


def _no_context(paths: list[str], mapping: dict[str, str]) -> tuple[list[str], Any]:
    return paths, None


@dataclass(frozen=True)
class Adapter:
    """One source format. `convert` returns seed_tasks fields (source_id and text at least) or raises
    RecordError; `prepare` picks the task files among the paths and builds what `convert` needs
    besides the record (answer files, a column mapping)."""

    name: str
    summary: str
    convert: Callable[[dict, Where, Any], dict[str, Any]]
    recognises: Callable[[dict], bool] = field(default=lambda record: False)
    prepare: Callable[[list[str], dict[str, str]], tuple[list[str], Any]] = field(default=_no_context)




def text_field(record: dict, *keys: str) -> str:
    """The first non-empty string among `keys`, stripped; RecordError naming the keys when none."""
    for key in keys:
        value = record.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    found = [k for k in keys if k in record]
    problem = f"field {found[0]!r} is empty or not text" if found else "missing field " + " or ".join(map(repr, keys))
    raise RecordError(problem)


def optional_text(value: Any) -> str | None:
    """A scalar as text, None for missing or blank values."""
    if value is None or isinstance(value, (dict, list)):
        return None
    text = str(value).strip()
    return text or None


def id_field(record: dict, key: str, where: Where) -> str:
    """The record's id as text, `file:line` when the field is missing or blank."""
    return optional_text(record.get(key)) or where.fallback_id


def as_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)
