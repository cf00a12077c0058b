"""Any JSON / JSON Lines / CSV / Parquet task list, with a column mapping FIELD=COLUMN.

Fields: text (required), id, website, start_url, reference_answer, domain, subdomain, difficulty,
evaluation. A field not mapped reads the column of its own name. Columns may be dotted paths into
nested records (`info.url`). Records without an id are identified by file and line.
"""

from __future__ import annotations

from typing import Any

from schemas.values import website_of
from stages.ingest.adapter import Adapter, RecordError, Where, as_json, optional_text, value_at

FIELDS = ("id", "text", "website", "start_url", "reference_answer", "domain", "subdomain", "difficulty",
          "evaluation")


def _prepare(paths: list[str], mapping: dict[str, str], encoding: str | None) -> tuple[list[str], dict[str, str]]:
    unknown = sorted(set(mapping) - set(FIELDS))
    if unknown:
        raise ValueError(f"unknown field(s) in --map: {', '.join(unknown)}; fields are {', '.join(FIELDS)}")
    return paths, {field: mapping.get(field, field) for field in FIELDS}


def generic_task(record: dict, where: Where, mapping: dict[str, str]) -> dict[str, Any]:
    text = optional_text(value_at(record, mapping["text"]))
    if text is None:
        raise RecordError(f"column {mapping['text']!r} (the task text) is missing or empty")
    value = {field: value_at(record, column) for field, column in mapping.items()}
    site = optional_text(value["website"]) or optional_text(value["start_url"])
    evaluation = value["evaluation"]
    return {"source_id": optional_text(value["id"]) or where.fallback_id, "text": text,
            "website": website_of(site), "start_url": optional_text(value["start_url"]),
            "reference_answer": optional_text(value["reference_answer"]),
            "domain": optional_text(value["domain"]), "subdomain": optional_text(value["subdomain"]),
            "source_difficulty": optional_text(value["difficulty"]),
            "evaluation": None if evaluation is None else
            evaluation if isinstance(evaluation, str) else as_json(evaluation)}


GENERIC = Adapter("generic", "any JSON/JSONL/CSV/Parquet task list, columns mapped with --map FIELD=COLUMN",
                  generic_task, prepare=_prepare)
