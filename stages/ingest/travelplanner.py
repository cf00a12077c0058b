"""TravelPlanner: the query files in their published layouts.

- validation/test rows: {idx?, query, level?, ...} (JSON Lines, or the CSV export);
- `example_evaluation.jsonl`: {idx, query, plan} (the plan is an example, kept in raw only);
- `std_travelplanner.jsonl` (fine-tuning): {messages: [system, user, assistant]}; the query is
  the user turn after its last "Query:", the assistant turn is the annotated plan (the answer).
`train_ref_info.jsonl` rows are the reference-information sandboxes behind queries, not tasks:
each one is reported as such.
"""

from __future__ import annotations

from typing import Any

from stages.ingest.adapter import Adapter, RecordError, Where, optional_text, text_field


def _chat_task(record: dict, where: Where) -> dict[str, Any]:
    turns = {m.get("role"): m.get("content") for m in record["messages"] if isinstance(m, dict)}
    user = turns.get("user")
    if not isinstance(user, str) or "Query:" not in user:
        raise RecordError("field 'messages' has no user turn with a 'Query:'")
    query = user.rsplit("Query:", 1)[1].strip()
    if not query:
        raise RecordError("the user turn's 'Query:' is empty")
    return {"source_id": where.fallback_id, "text": query, "reference_answer": optional_text(turns.get("assistant"))}


def travelplanner_task(record: dict, where: Where, context: Any) -> dict[str, Any]:
    if isinstance(record.get("messages"), list):
        return _chat_task(record, where)
    if "query" not in record and any(str(key).startswith(("Flight", "Attractions", "Accommodations"))
                                     for key in record):
        raise RecordError("a TravelPlanner reference-information record (the sandbox data behind a query), "
                          "not a task: it has no query text")
    idx = optional_text(record.get("idx"))
    return {"source_id": idx or where.fallback_id, "text": text_field(record, "query"),
            "source_difficulty": optional_text(record.get("level"))}


def _recognises(record: dict) -> bool:
    return ("query" in record and ({"plan", "idx", "level", "days"} & record.keys() != set())) or (
        isinstance(record.get("messages"), list) and "Query:" in str(record["messages"]))


TRAVELPLANNER = Adapter("travelplanner", "TravelPlanner queries (query rows, example plans, chat fine-tuning rows)",
                        travelplanner_task, required=(("query",), ("messages",)),
                        fields=(("idx", "source_id"), ("query", "text"), ("level", "source_difficulty"),
                                ("plan", "raw"), ("messages", "text"), ("messages", "reference_answer")),
                        recognises=_recognises)
