"""Export: tasks in other harnesses' layouts, so the task set built here runs elsewhere.

Tasks, as WebGym's task JSONL: {task_id, task_name, website (a URL the episode opens), domain,
subdomain, difficulty, evaluator_reference: [{id, description, facts}], definite_answer,
reference_answer (the name WebGym's loaders read)}. `webgym ingest --source webgym` reads it back.
(Training samples are exported by webgym/train/export.py.)
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd


def evaluator_reference(rubric: dict | None) -> list[dict[str, Any]]:
    """A rubric as WebGym's fact groups, numbered from 1."""
    groups = [] if rubric is None else rubric["groups"]  # lists read from Parquet are arrays: no `or`
    return [{"id": i, "description": g["description"], "facts": [str(f) for f in g["facts"]]}
            for i, g in enumerate(groups, 1)]


def _url(task: dict) -> str | None:
    if task["start_url"]:
        return task["start_url"]
    return f"https://{task['website']}/" if task["website"] else None


def webgym_records(tasks: pd.DataFrame) -> list[dict[str, Any]]:
    """One WebGym task record per row of the tasks table."""
    records = []
    for row in tasks.to_dict("records"):
        task = {k: None if isinstance(v, float) and math.isnan(v) else v for k, v in row.items()}
        records.append({
            "task_id": task["task_id"], "task_name": task["text"], "website": _url(task),
            "domain": task["domain"], "subdomain": task["subdomain"],
            "difficulty": None if task["difficulty"] is None else int(task["difficulty"]),
            "evaluator_reference": evaluator_reference(task["rubric"]),
            "definite_answer": task["reference_answer"], "reference_answer": task["reference_answer"]})
    return records


FORMATS = {"webgym": webgym_records}
"""Export layouts by --format name."""
