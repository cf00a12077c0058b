"""Online-Mind2Web: a JSON array of {task_id, confirmed_task, website (start URL),
reference_length, level}; no reference answers."""

from __future__ import annotations

from typing import Any

from schemas.values import website_of
from stages.ingest.adapter import Adapter, Where, id_field, optional_int, optional_text, text_field


def online_mind2web_task(record: dict, where: Where, context: Any) -> dict[str, Any]:
    start_url = optional_text(record.get("website"))
    return {"source_id": id_field(record, "task_id", where), "text": text_field(record, "confirmed_task"),
            "website": website_of(start_url), "start_url": start_url,
            "source_difficulty": optional_text(record.get("level")),
            "reference_length": optional_int(record, "reference_length")}


ONLINE_MIND2WEB = Adapter("online-mind2web", "Online-Mind2Web tasks (task_id, confirmed_task, website, level)",
                          online_mind2web_task, required=(("confirmed_task", "website"),),
                          fields=(("task_id", "source_id"), ("confirmed_task", "text"), ("website", "start_url"),
                                  ("website", "website"), ("reference_length", "reference_length"),
                                  ("level", "source_difficulty")))
