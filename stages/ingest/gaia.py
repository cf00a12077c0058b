"""GAIA web subset as WebVoyager ships it: {task_id, Level, "Final answer", id, web, ques}.

Its `web` is always a search engine's home page, where the agent starts, not the website the
task is about, so the website is left for the annotate stage to infer.
"""

from __future__ import annotations

from typing import Any

from stages.ingest.adapter import Adapter, Where, id_field, optional_text, text_field


def gaia_task(record: dict, where: Where, context: Any) -> dict[str, Any]:
    return {"source_id": optional_text(record.get("task_id")) or id_field(record, "id", where),
            "text": text_field(record, "ques", "Question"),
            "start_url": optional_text(record.get("web")),
            "reference_answer": optional_text(record.get("Final answer")),
            "source_difficulty": optional_text(record.get("Level"))}


GAIA = Adapter("gaia", "GAIA web subset (WebVoyager's GAIA_web.jsonl or GAIA's own metadata)", gaia_task,
               required=(("Final answer", "ques"), ("Final answer", "Question")),
               fields=(("task_id", "source_id"), ("ques", "text"), ("Question", "text"), ("web", "start_url"),
                       ("Final answer", "reference_answer"), ("Level", "source_difficulty"), ("id", "raw")))
