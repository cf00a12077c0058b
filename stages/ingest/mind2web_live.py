"""Mind2Web-Live (WebCanvas): a JSON array of {index, task, reference_task_length, evaluation:
[{match_function_name, content: {key, reference_answer, url, netloc?}, method?}]}.

There is no website field: it is the host of the first URL in the evaluation steps. The
evaluation steps are kept as the evaluation block.
"""

from __future__ import annotations

from typing import Any

from schemas.values import website_of
from stages.ingest.adapter import Adapter, Where, as_json, id_field, optional_int, text_field


def _first_host(evaluation: Any) -> str | None:
    for step in evaluation if isinstance(evaluation, list) else []:
        content = step.get("content") if isinstance(step, dict) else None
        if isinstance(content, dict):
            host = website_of(content.get("url")) or website_of(content.get("netloc"))
            if host:
                return host
    return None


def mind2web_live_task(record: dict, where: Where, context: Any) -> dict[str, Any]:
    evaluation = record.get("evaluation")
    return {"source_id": id_field(record, "index", where), "text": text_field(record, "task"),
            "website": _first_host(evaluation), "reference_length": optional_int(record, "reference_task_length"),
            "evaluation": as_json(evaluation) if evaluation is not None else None}


MIND2WEB_LIVE = Adapter("mind2web-live", "Mind2Web-Live / WebCanvas tasks (JSON array with evaluation steps)",
                        mind2web_live_task, required=(("task", "evaluation"),),
                        fields=(("index", "source_id"), ("task", "text"), ("evaluation", "evaluation"),
                                ("evaluation", "website"), ("reference_task_length", "reference_length")))
