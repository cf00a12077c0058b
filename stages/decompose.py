"""Decompose: WebGym's Algorithm 1, easier tasks from proper subsets of a task's fact groups.

A task qualifies when its rubric has at least 2 groups and at least one large group (3 or more
facts). It yields one task per proper subset of its groups that contains a large group; the
subset's facts are the new rubric and their count the new difficulty. Only original tasks are
decomposed: a decomposed task's own subsets are subsets of its parent, so they are already there.
The new text comes from a writer (WebGym appendix E.6: the LLM writes each new task as a natural,
self-contained instruction; `llm_text_writer`, which the driver builds when an endpoint serves
taskset.decompose.purpose); without one, for synthetic tasks (whose exact rubrics must match their
words) and where the writer could not, `template_text` over the kept groups. `text_writer` says which.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field

import pandas as pd
from pydantic import BaseModel, Field, model_validator

from schemas.rubric import FactGroup, Rubric
from schemas.tasks import SCHEMA, task_id_for
from webgym.config import DecomposeConfig
from webgym.llm.client import LLM, LLMCallError
from webgym.llm.prompts import load_prompt

LARGE_GROUP_FACTS = 3
"""A fact group is large from this many facts on (WebGym Algorithm 1)."""

TEMPLATE_SOURCES = ("synthetic",)
"""Sources whose decomposed tasks always take the template text: their rubrics are exact checks."""


@dataclass(frozen=True)
class TextRequest:
    """What a writer needs for one decomposed task: the parent task and the groups kept and dropped."""

    parent_text: str
    website: str | None
    kept: list[FactGroup]
    dropped: list[FactGroup]
    key: str
    """The decomposed task's id, for reports."""


TextWriter = Callable[[list[TextRequest]], list[str | None]]
"""Texts of decomposed tasks, one per request in order; None where it could not write one."""


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
    difficulty, text and text_writer (llm where `writer` wrote it, else template); website, start URL,
    domain and source come from the parent. Excluded sources, decomposed tasks and tasks without a
    rubric yield nothing; synthetic tasks always take the template."""
    now = now or dt.datetime.now(dt.UTC)
    rows, requests = [], []
    parents = tasks[tasks["parent_task_id"].isna() & tasks["rubric"].notna()
                    & ~tasks["source"].isin(config.exclude_sources)]
    for parent in parents.to_dict("records"):
        rubric = Rubric.model_validate(parent["rubric"])
        for subset in decomposition_plan(rubric, config.max_subsets_per_task):
            groups = [rubric.groups[i] for i in subset.groups]
            task_id = task_id_for(parent["source"], parent["source_id"], subset.groups, parent.get("revision"))
            rows.append({
                "task_id": task_id, "revision": parent.get("revision"),
                "parent_task_id": parent["task_id"], "parent_groups": list(subset.groups),
                "source": parent["source"], "source_id": parent["source_id"],
                "text": template_text(parent["text"], groups), "text_writer": "template",
                "website": parent["website"], "start_url": parent["start_url"],
                "domain": parent["domain"], "subdomain": parent["subdomain"],
                "difficulty": subset.difficulty, "rubric": Rubric(groups=groups).model_dump(),
                "created_at": now})
            if writer is not None and parent["source"] not in TEMPLATE_SOURCES:
                dropped = [g for i, g in enumerate(rubric.groups) if i not in subset.groups]
                requests.append((len(rows) - 1, TextRequest(parent["text"], parent["website"], groups, dropped,
                                                            task_id)))
    written = writer([request for _, request in requests]) if requests else []
    for (row, _), text in zip(requests, written, strict=True):
        if text is not None:
            rows[row].update(text=text, text_writer="llm")
    return pd.DataFrame(rows, columns=SCHEMA.columns) if rows else SCHEMA.empty_frame()


def new_decomposed_tasks(tasks: pd.DataFrame, config: DecomposeConfig, writer: TextWriter | None = None,
                         now: dt.datetime | None = None) -> pd.DataFrame:
    """The decomposed tasks (tasks table) of the original tasks in `tasks` that have none yet, so a
    rerun plans, and writes texts for, only tasks added since."""
    done = set(tasks["parent_task_id"].dropna())
    return decomposed_tasks(tasks[~tasks["task_id"].isin(done)], config, writer, now)


class DecomposedText(BaseModel):
    """The LLM's answer for one decomposed task."""

    task: str = Field(min_length=10, description="The new task: one natural, self-contained instruction that asks "
                                                 "for exactly the kept criteria.")

    @model_validator(mode="after")
    def _one_instruction(self) -> DecomposedText:
        if "only this part is required" in self.task.casefold():
            raise ValueError("write the task as a natural instruction, not as the original task plus a note")
        return self


@dataclass
class LLMTextWriter:
    """A TextWriter with one structured call per decomposed task (prompt decompose_task, purpose
    taskset.decompose.purpose, temperature 0: cached and ledgered by the LLM layer), all concurrent.
    A failed call, or an answer still invalid after its retries, gives None (the template is used)
    and a line in `problems`."""

    llm: LLM
    config: DecomposeConfig
    problems: list[str] = field(default_factory=list)

    def __call__(self, requests: list[TextRequest]) -> list[str | None]:
        async def ask_all() -> list[str | None]:
            return await asyncio.gather(*(self._ask(request) for request in requests))
        return asyncio.run(ask_all())

    async def _ask(self, request: TextRequest) -> str | None:
        prompt = load_prompt("decompose_task")
        messages = prompt.render(task=request.parent_text, website=request.website or "not named",
                                 kept=_groups_text(request.kept), dropped=_groups_text(request.dropped) or "(none)")
        try:
            answer = await self.llm.structured(self.config.purpose, messages, DecomposedText, prompt=prompt,
                                               temperature=0, max_tokens=self.config.max_tokens)
        except LLMCallError as error:
            answer = error
        if isinstance(answer, DecomposedText):
            return answer.task.strip()
        self.problems.append(f"decomposed task {request.key}: template text kept: {answer}")
        return None


def _groups_text(groups: list[FactGroup]) -> str:
    return "\n".join(f"- {g.description}: {'; '.join(g.facts)}" for g in groups)
