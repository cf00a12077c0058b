"""Decompose: WebGym's Algorithm 1, easier tasks from proper subsets of a task's fact groups.

A task qualifies when its rubric has at least 2 groups and at least one large group (3 or more
facts). It yields one task per proper subset of its groups that contains a large group; the
subset's facts are the new rubric and their count the new difficulty. Only original tasks are
decomposed: a decomposed task's own subsets are subsets of its parent, so they are already there.
The new text comes from a writer: the LLM once the annotate layer plugs in one, else (and always
for synthetic tasks, whose rubrics are exact) `template_text` over the kept groups.
"""

from __future__ import annotations

import datetime as dt
import itertools
from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd

from schemas.rubric import FactGroup, Rubric
from schemas.tasks import SCHEMA, task_id_for
from webgym.config import DecomposeConfig

LARGE_GROUP_FACTS = 3
"""A fact group is large from this many facts on (WebGym Algorithm 1)."""

TextWriter = Callable[[str, list[FactGroup]], str]
"""(parent task text, kept fact groups) -> the decomposed task's text."""


@dataclass(frozen=True)
class Subset:
    """One planned decomposed task: indices of the parent's groups it keeps, and its difficulty."""

    groups: tuple[int, ...]
    difficulty: int

    def as_json(self) -> dict:
        return {"groups": list(self.groups), "difficulty": self.difficulty}


def decomposition_plan(rubric: Rubric, cap: int | None = None) -> list[Subset]:
    """Algorithm 1's subsets of a rubric, fewest groups first, then easiest; at most `cap` of them."""
    sizes = [len(g.facts) for g in rubric.groups]
    large = {i for i, n in enumerate(sizes) if n >= LARGE_GROUP_FACTS}
    if len(sizes) < 2 or not large:
        return []
    plan: list[Subset] = []
    for k in range(1, len(sizes)):  # proper subsets only: never all groups
        if cap is not None and len(plan) >= cap:
            break
        found = [Subset(c, sum(sizes[i] for i in c)) for c in itertools.combinations(range(len(sizes)), k)
                 if large.intersection(c)]
        plan += sorted(found, key=lambda s: (s.difficulty, s.groups))
    return plan[:cap] if cap is not None else plan


def template_text(parent_text: str, groups: list[FactGroup]) -> str:
    """A decomposed task's text without an LLM: the parent task narrowed to the kept criteria."""
    criteria = "; ".join(f"{g.description} ({', '.join(g.facts)})" for g in groups)
    return f"{parent_text.rstrip(' .')}. Only this part is required: {criteria}."


def decomposed_tasks(tasks: pd.DataFrame, config: DecomposeConfig, writer: TextWriter | None = None,
                     now: dt.datetime | None = None) -> pd.DataFrame:
    """One row per decomposed task (tasks table): parent_task_id, parent_groups, the subset's rubric,
    difficulty and text; website, start URL, domain and source come from the parent. Excluded
    sources, decomposed tasks and tasks without a rubric yield nothing. `writer` writes the text
    (synthetic tasks always use `template_text`)."""
    now = now or dt.datetime.now(dt.UTC)
    rows = []
    parents = tasks[tasks["parent_task_id"].isna() & tasks["rubric"].notna()
                    & ~tasks["source"].isin(config.exclude_sources)]
    for parent in parents.to_dict("records"):
        rubric = Rubric.model_validate(parent["rubric"])
        write = template_text if writer is None or parent["source"] == "synthetic" else writer
        for subset in decomposition_plan(rubric, config.max_subsets_per_task):
            groups = [rubric.groups[i] for i in subset.groups]
            rows.append({
                "task_id": task_id_for(parent["source"], parent["source_id"], subset.groups, parent.get("revision")),
                "revision": parent.get("revision"),
                "parent_task_id": parent["task_id"], "parent_groups": list(subset.groups),
                "source": parent["source"], "source_id": parent["source_id"],
                "text": write(parent["text"], groups),
                "website": parent["website"], "start_url": parent["start_url"],
                "domain": parent["domain"], "subdomain": parent["subdomain"],
                "difficulty": subset.difficulty, "rubric": Rubric(groups=groups).model_dump(),
                "created_at": now})
    return pd.DataFrame(rows, columns=SCHEMA.columns) if rows else SCHEMA.empty_frame()


def new_decomposed_tasks(tasks: pd.DataFrame, config: DecomposeConfig, writer: TextWriter | None = None,
                         now: dt.datetime | None = None) -> pd.DataFrame:
    """The decomposed tasks (tasks table) of the original tasks in `tasks` that have none yet, so a
    rerun plans, and writes texts for, only tasks added since."""
    done = set(tasks["parent_task_id"].dropna())
    return decomposed_tasks(tasks[~tasks["task_id"].isin(done)], config, writer, now)
