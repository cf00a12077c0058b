"""What every ingest adapter is: a record -> seed-task fields function, the fields a record of its
format must have, where each field of the source lands, and a shape test for `auto`."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


class RecordError(ValueError):
    """A record that cannot become a seed task; the message names the field and what is wrong."""


@dataclass(frozen=True)
class Where:
    """Where a record was read: the file's path, `file_id` naming the file in ids (its path relative to
    the ingest root and its content hash), `line` and `index` as in read.Record."""

    file: str
    file_id: str
    line: int | None
    index: int | None = None

    @property
    def fallback_id(self) -> str:
        """The id of a record that has none: `<file_id>:<line>`, or `<file_id>#<index>` for elements of
        an array or rows of a Parquet file (several may share a line)."""
        return f"{self.file_id}#{self.index}" if self.index is not None else f"{self.file_id}:{self.line}"


def _no_context(paths: list[str], mapping: dict[str, str], encoding: str | None) -> tuple[list[str], Any]:
    return paths, None


Required = tuple[tuple[str, ...], ...]
"""Alternative sets of top-level fields; a record fits when it has every field of one set."""


def fits(record: Any, required: Required) -> bool:
    """Whether a record has every field of one of the `required` sets."""
    return isinstance(record, dict) and any(all(name in record for name in names) for names in required)


@dataclass(frozen=True)
class Adapter:
    """One source format. `convert` returns seed_tasks fields (source_id and text at least) or raises
    RecordError; `prepare` picks the task files among the paths and builds what `convert` needs
    besides the record (answer files, a column mapping). `required` is what most records of a file
    must have for the file to be of this format; `fields` says, for each field the source defines
    (a dotted path into the record), the seed_tasks column it lands in ("raw" when only the raw
    record keeps it), so an ingest can count what it kept. `recognises` is the (stricter) shape test
    of `--source auto`; by default a record recognises when it has the required fields."""

    name: str
    summary: str
    convert: Callable[[dict, Where, Any], dict[str, Any]]
    required: Required = ()
    fields: tuple[tuple[str, str], ...] = ()
    recognises: Callable[[dict], bool] | None = None
    prepare: Callable[[list[str], dict[str, str], str | None], tuple[list[str], Any]] = field(default=_no_context)

    def shape_matches(self, record: dict) -> bool:
        """The `--source auto` test: `recognises`, or else the required fields."""
        if self.recognises is not None:
            return self.recognises(record)
        return bool(self.required) and fits(record, self.required)

    def describe_required(self) -> str:
        return " or ".join("+".join(names) for names in self.required)


def value_at(record: Any, path: str) -> Any:
    """The value at a dotted path of a record (None when any part is missing)."""
    value = record
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def has_value(value: Any) -> bool:
    """Whether a field holds something: not None, not blank text, not an empty list or object."""
    if value is None:
        return False
    if isinstance(value, str):
        return bool(value.strip())
    if isinstance(value, (list, dict)):
        return bool(value)
    return True


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


def optional_int(record: dict, key: str) -> int | None:
    """A whole number field (an int, or text holding one), None when missing; RecordError when it is
    something else."""
    value = record.get(key)
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    try:
        number = int(value)
    except (TypeError, ValueError):
        number = None
    if number is None or isinstance(value, bool) or (isinstance(value, float) and value != number):
        raise RecordError(f"field {key!r} must be a whole number, not {value!r}")
    return number


def id_field(record: dict, key: str, where: Where) -> str:
    """The record's id as text, the file-based fallback id when the field is missing or blank."""
    return optional_text(record.get(key)) or where.fallback_id


def as_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)
