"""WebGym's own task JSONL: {task_name (or task), domain, subdomain, website, difficulty,
evaluator_reference, definite_answer (or reference_answer), task_id}.

Its rubric is kept, not regenerated. `evaluator_reference` comes in three shapes; the rule:
- fact groups `[{id?, description, facts: [...]}, ...]` are kept group for group;
- a list of strings (WebGym's older format, whose judge checks every item on its own) becomes one
  group per string, the string being both the description and the group's only fact;
- a single string becomes one group with that one fact.
A JSON-encoded string holding one of these (as WebGym's loaders write it) is decoded first.
"""

from __future__ import annotations

import json
from typing import Any

from schemas.rubric import FactGroup, Rubric
from schemas.values import website_of
from stages.ingest.adapter import Adapter, RecordError, Where, id_field, optional_text, text_field


def rubric_from_reference(value: Any) -> Rubric | None:
    """A Rubric from an evaluator_reference in any of WebGym's shapes (None when absent)."""
    if isinstance(value, str):
        try:
            decoded = json.loads(value)
        except json.JSONDecodeError:
            decoded = None
        if isinstance(decoded, (list, dict)):
            return rubric_from_reference(decoded)
        return Rubric(groups=[FactGroup(description=value.strip(), facts=[value.strip()])]) if value.strip() else None
    if isinstance(value, dict):
        value = value.get("groups", [value])
    if value is None or value == []:
        return None
    if not isinstance(value, list):
        raise RecordError(f"field 'evaluator_reference' must be text, a list or fact groups, not {type(value).__name__}")
    groups = []
    for i, item in enumerate(value):
        if isinstance(item, str) and item.strip():
            groups.append(FactGroup(description=item.strip(), facts=[item.strip()]))
        elif isinstance(item, dict):
            facts = item.get("facts")
            description = optional_text(item.get("description"))
            if not isinstance(facts, list) or not facts or not all(isinstance(f, str) and f.strip() for f in facts):
                raise RecordError(f"field 'evaluator_reference', group {i}: 'facts' must be a non-empty list of text")
            if description is None:
                raise RecordError(f"field 'evaluator_reference', group {i}: missing 'description'")
            groups.append(FactGroup(description=description, facts=[f.strip() for f in facts]))
        else:
            raise RecordError(f"field 'evaluator_reference', item {i}: expected text or a fact group, got {item!r}")
    return Rubric(groups=groups)


def webgym_task(record: dict, where: Where, context: Any) -> dict[str, Any]:
    site = optional_text(record.get("website"))
    rubric = rubric_from_reference(record.get("evaluator_reference"))
    answer = optional_text(record.get("definite_answer")) or optional_text(record.get("reference_answer"))
    return {"source_id": id_field(record, "task_id", where), "text": text_field(record, "task_name", "task"),
            "website": website_of(site), "start_url": site if site and "://" in site else None,
            "domain": optional_text(record.get("domain")), "subdomain": optional_text(record.get("subdomain")),
            "source_difficulty": optional_text(record.get("difficulty")),
            "rubric": rubric.model_dump() if rubric else None, "reference_answer": answer}


WEBGYM = Adapter("webgym", "WebGym task JSONL (rubric in evaluator_reference is kept)", webgym_task,
                 required=(("evaluator_reference", "task_name"), ("evaluator_reference", "task")),
                 fields=(("task_id", "source_id"), ("task_name", "text"), ("task", "text"), ("website", "website"),
                         ("domain", "domain"), ("subdomain", "subdomain"), ("difficulty", "source_difficulty"),
                         ("evaluator_reference", "rubric"), ("definite_answer", "reference_answer"),
                         ("reference_answer", "reference_answer")))
