"""Goals of the synthetic sites, as `webgym sites export-tasks` writes them: JSON Lines of {site,
hostname, goal_id, text, start_url, rubric: {groups: [{description, facts, checks}]}, difficulty,
oracle_length, domain, subdomain}. Their rubrics are exact (checks verify facts) and are kept."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from schemas.rubric import Rubric
from schemas.values import website_of
from stages.ingest.adapter import Adapter, RecordError, Where, optional_int, optional_text, text_field


def synthetic_task(record: dict, where: Where, context: Any) -> dict[str, Any]:
    site, goal = optional_text(record.get("site")), optional_text(record.get("goal_id"))
    if site is None or goal is None:
        raise RecordError("missing field 'site' or 'goal_id'")
    try:
        rubric = Rubric.model_validate(record.get("rubric"))
    except ValidationError as error:
        raise RecordError(f"field 'rubric': {error.errors()[0]['msg']} at {error.errors()[0]['loc']}") from None
    return {"source_id": f"{site}/{goal}", "text": text_field(record, "text"),
            "website": website_of(record.get("hostname")), "start_url": optional_text(record.get("start_url")),
            "rubric": rubric.model_dump(), "domain": optional_text(record.get("domain")),
            "subdomain": optional_text(record.get("subdomain")),
            "source_difficulty": optional_text(record.get("difficulty")),
            "reference_length": optional_int(record, "oracle_length")}


SYNTHETIC = Adapter("synthetic", "synthetic-site goals from `webgym sites export-tasks` (exact rubrics)",
                    synthetic_task, required=(("site", "goal_id", "text", "rubric"),),
                    fields=(("text", "text"), ("hostname", "website"), ("start_url", "start_url"), ("rubric", "rubric"),
                            ("domain", "domain"), ("subdomain", "subdomain"), ("difficulty", "source_difficulty"),
                            ("oracle_length", "reference_length")))
