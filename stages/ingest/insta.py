"""InSTA: the insta-150k releases (Parquet on the hub, or JSON/JSONL exports).

v3 rows are {website, instruction, steps, criteria}; v1/v2 rows are {domain, task}. A website can
carry more than one task, so rows are identified by file and row. The success criteria and planned
steps are kept as the evaluation block; rubrics come from the annotate stage.
"""

from __future__ import annotations

from typing import Any

from schemas.values import website_of
from stages.ingest.adapter import Adapter, RecordError, Where, as_json, text_field


def insta_task(record: dict, where: Where, context: Any) -> dict[str, Any]:
    site = record.get("website") or record.get("domain")
    website = website_of(site)
    if website is None:
        raise RecordError(f"field 'website' (or 'domain') is not a host name: {site!r}")
    evaluation = {k: record[k] for k in ("criteria", "steps") if record.get(k) is not None}
    start_url = site if "://" in str(site) else f"https://{str(site).strip()}/"
    return {"source_id": where.fallback_id, "text": text_field(record, "instruction", "task"),
            "website": website, "start_url": start_url,
            "evaluation": as_json(evaluation) if evaluation else None}


INSTA = Adapter("insta", "InSTA-150k v3 (website, instruction, criteria) or v1/v2 (domain, task)", insta_task,
                required=(("website", "instruction"), ("domain", "task")),
                fields=(("instruction", "text"), ("task", "text"), ("website", "website"), ("domain", "website"),
                        ("criteria", "evaluation"), ("steps", "evaluation")))
