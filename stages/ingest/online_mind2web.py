"""Online-Mind2Web: a JSON array of {task_id, confirmed_task, website (start URL),
reference_length, level}; no reference answers.

Later releases replace some tasks with `<task_id>_MMDDYY` (e.g. `..._110325`, November 3, 2025): that
is the next revision of `<task_id>`, published on that date, not a task of its own beside the old one.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from schemas.values import website_of
from stages.ingest.adapter import Adapter, Where, id_field, optional_int, optional_text, text_field


_REDATED = re.compile(r"(?P<base>.+)_(?P<month>\d\d)(?P<day>\d\d)(?P<year>\d\d)")


def task_identity(task_id: str) -> tuple[str, dt.datetime | None]:
    """(base id, publication date) of an id: `<id>_MMDDYY` is `<id>` re-dated; any other id is itself."""
    match = _REDATED.fullmatch(task_id)
    if match:
        try:
            return match["base"], dt.datetime(2000 + int(match["year"]), int(match["month"]), int(match["day"]),
                                              tzinfo=dt.UTC)
        except ValueError:
            pass
    return task_id, None


def online_mind2web_task(record: dict, where: Where, context: Any) -> dict[str, Any]:
    start_url = optional_text(record.get("website"))
    source_id, published = task_identity(id_field(record, "task_id", where))
    return {"source_id": source_id, "published": published, "text": text_field(record, "confirmed_task"),
            "website": website_of(start_url), "start_url": start_url,
            "source_difficulty": optional_text(record.get("level")),
            "reference_length": optional_int(record, "reference_length")}


ONLINE_MIND2WEB = Adapter("online-mind2web", "Online-Mind2Web tasks (task_id, confirmed_task, website, level)",
                          online_mind2web_task, required=(("confirmed_task", "website"),),
                          fields=(("task_id", "source_id"), ("confirmed_task", "text"), ("website", "start_url"),
                                  ("website", "website"), ("reference_length", "reference_length"),
                                  ("level", "source_difficulty")))
