"""DeepShop: WebVoyager-style JSON Lines with the sub-goals attribute / filter / sort (literal
"None" when absent), a product category and a difficulty label."""

from __future__ import annotations

from typing import Any

from schemas.values import website_of
from stages.ingest.adapter import Adapter, Where, as_json, id_field, optional_text, text_field

SUBGOALS = ("attribute", "filter", "sort")


def deepshop_task(record: dict, where: Where, context: Any) -> dict[str, Any]:
    start_url = optional_text(record.get("web"))
    subgoals = {key: value for key in SUBGOALS
                if (value := optional_text(record.get(key))) and value != "None"}
    return {"source_id": id_field(record, "id", where), "text": text_field(record, "ques"),
            "website": website_of(start_url), "start_url": start_url,
            "evaluation": as_json({"subgoals": subgoals, "category": optional_text(record.get("category"))}),
            "source_difficulty": optional_text(record.get("difficulty"))}


DEEPSHOP = Adapter("deepshop", "DeepShop shopping tasks (JSON Lines with attribute/filter/sort sub-goals)",
                   deepshop_task, required=(("ques", "attribute", "filter", "sort"),),
                   fields=(("id", "source_id"), ("ques", "text"), ("web", "start_url"), ("web", "website"),
                           ("attribute", "evaluation"), ("filter", "evaluation"), ("sort", "evaluation"),
                           ("category", "evaluation"), ("difficulty", "source_difficulty"), ("web_name", "raw")))
