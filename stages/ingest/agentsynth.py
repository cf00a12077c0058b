"""AgentSynth (InSTA environment): JSON Lines of {website (bare domain), task, action_sequence,
thoughts_sequence[, webpage_text]}; both the subtask file and the summarized composite file."""

from __future__ import annotations

from typing import Any

from schemas.values import website_of
from stages.ingest.adapter import Adapter, RecordError, Where, text_field


def agentsynth_task(record: dict, where: Where, context: Any) -> dict[str, Any]:
    website = website_of(record.get("website"))
    if website is None:
        raise RecordError(f"field 'website' is not a host name: {record.get('website')!r}")
    return {"source_id": where.fallback_id, "text": text_field(record, "task"), "website": website,
            "start_url": f"https://{str(record['website']).strip().removesuffix('/')}/"}


AGENTSYNTH = Adapter("agentsynth", "AgentSynth task sequences (website, task, action_sequence)", agentsynth_task,
                     required=(("website", "task", "action_sequence"),),
                     fields=(("task", "text"), ("website", "website"), ("website", "start_url"),
                             ("action_sequence", "raw"), ("thoughts_sequence", "raw"), ("webpage_text", "raw")))
