"""WebArena and WebArena-Lite task configs: a JSON array (or one config per file) of {task_id,
sites, start_url, intent, eval, ...}.

Start URLs keep their placeholder hosts (`__SHOPPING__/...`, several joined by " |AND| "); the
website is the first URL's placeholder. The eval block is kept whole; the reference answer is the
annotated raw answer, else the exact-match string.
"""

from __future__ import annotations

from typing import Any

from schemas.values import website_of
from stages.ingest.adapter import Adapter, Where, as_json, id_field, optional_text, text_field


def _reference(evaluation: dict) -> str | None:
    raw = optional_text(evaluation.get("reference_answer_raw_annotation"))
    answers = evaluation.get("reference_answers")
    return raw or (optional_text(answers.get("exact_match")) if isinstance(answers, dict) else None)


def webarena_task(record: dict, where: Where, context: Any) -> dict[str, Any]:
    start_url = optional_text(record.get("start_url"))
    evaluation = record.get("eval")
    return {"source_id": id_field(record, "task_id", where), "text": text_field(record, "intent"),
            "start_url": start_url,
            "website": website_of(start_url.split(" |AND| ")[0]) if start_url else None,
            "reference_answer": _reference(evaluation) if isinstance(evaluation, dict) else None,
            "evaluation": as_json(evaluation) if evaluation is not None else None}


WEBARENA = Adapter("webarena", "WebArena / WebArena-Lite task configs (placeholder hosts and eval kept)",
                   webarena_task, lambda r: {"intent", "start_url", "eval"} <= r.keys())
