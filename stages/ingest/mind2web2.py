"""Mind2Web 2: {task_id, task_description} (the dev-set task list; the hub release adds fields).
Tasks are open-web searches: no website is given."""

from __future__ import annotations

from typing import Any

from stages.ingest.adapter import Adapter, Where, id_field, text_field


def mind2web2_task(record: dict, where: Where, context: Any) -> dict[str, Any]:
    return {"source_id": id_field(record, "task_id", where), "text": text_field(record, "task_description")}


MIND2WEB2 = Adapter("mind2web2", "Mind2Web 2 tasks (task_id, task_description)", mind2web2_task,
                    required=(("task_id", "task_description"),),
                    fields=(("task_id", "source_id"), ("task_description", "text"), ("source_file", "raw")))
