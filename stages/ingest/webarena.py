"""WebArena and WebArena-Lite task configs: a JSON array (or one config per file) of {task_id,
sites, start_url, intent, eval, ...}.

Start URLs keep their placeholder hosts (`__SHOPPING__/...`, several joined by " |AND| "); the
website is the first URL's placeholder. The eval block is kept whole (the judge reads it); the
reference answer is the annotated raw answer, else the exact-match string, else the must-include or
fuzzy-match items.

WebArena-Lite (VisualAgentBench's `test_webarena_lite.raw.json`) re-numbers 165 WebArena tasks
0-164 and revises some texts and eval blocks; each config's `old_task_id` names the WebArena task it
comes from. It is its own source, so its ids never meet WebArena's, and `old_task_id` lands in
`derived_from` as `webarena/<id>`.
"""

from __future__ import annotations

from typing import Any

from schemas.values import website_of
from stages.ingest.adapter import Adapter, RecordError, Where, as_json, id_field, optional_text, text_field


def _items(value: Any) -> str | None:
    """A reference given as text or as a list of texts, as one text ('; ' between items)."""
    if isinstance(value, list):
        return "; ".join(text for item in value if (text := optional_text(item))) or None
    return optional_text(value)


def reference_of(evaluation: dict) -> str | None:
    """The reference answer of a WebArena-style eval block: the raw annotation, else exact_match, else
    the must_include items, else fuzzy_match ('N/A' for tasks that cannot be done)."""
    answers = evaluation.get("reference_answers")
    answers = answers if isinstance(answers, dict) else {}
    return (optional_text(evaluation.get("reference_answer_raw_annotation")) or _items(answers.get("exact_match"))
            or _items(answers.get("must_include")) or _items(answers.get("fuzzy_match")))


def eval_block(record: dict, key: str = "eval") -> dict[str, Any]:
    """The evaluation and reference_answer fields of a record's WebArena-style eval block."""
    evaluation = record.get(key)
    if evaluation is None:
        return {}
    if not isinstance(evaluation, dict):
        raise RecordError(f"field {key!r} must be an object (a WebArena eval block), not {type(evaluation).__name__}")
    return {"evaluation": as_json(evaluation), "reference_answer": reference_of(evaluation)}


def webarena_task(record: dict, where: Where, context: Any) -> dict[str, Any]:
    start_url = optional_text(record.get("start_url"))
    return {"source_id": id_field(record, "task_id", where), "text": text_field(record, "intent"),
            "start_url": start_url,
            "website": website_of(start_url.split(" |AND| ")[0]) if start_url else None, **eval_block(record)}


def webarena_lite_task(record: dict, where: Where, context: Any) -> dict[str, Any]:
    old = optional_text(record.get("old_task_id"))
    return {**webarena_task(record, where, context), "derived_from": f"webarena/{old}" if old else None}


FIELDS = (("task_id", "source_id"), ("intent", "text"), ("start_url", "start_url"), ("start_url", "website"),
          ("eval", "evaluation"), ("eval.reference_answers", "reference_answer"), ("sites", "raw"),
          ("intent_template", "raw"), ("instantiation_dict", "raw"), ("require_login", "raw"),
          ("storage_state", "raw"), ("geolocation", "raw"), ("require_reset", "raw"), ("intent_template_id", "raw"))

WEBARENA = Adapter("webarena", "WebArena task configs (placeholder hosts and eval kept)", webarena_task,
                   required=(("intent", "start_url", "eval"),), fields=FIELDS,
                   recognises=lambda r: {"intent", "start_url", "eval"} <= r.keys() and "old_task_id" not in r)
WEBARENA_LITE = Adapter("webarena-lite", "WebArena-Lite task configs (WebArena's layout; old_task_id kept)",
                        webarena_lite_task, required=(("intent", "start_url", "eval", "old_task_id"),),
                        fields=(*FIELDS, ("old_task_id", "derived_from")))
