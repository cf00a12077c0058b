"""The rubric shape shared by seed_tasks and tasks: WebGym's fact groups."""

from __future__ import annotations

from pydantic import Field

from schemas.table import Row


class FactGroup(Row):
    """One criterion of a rubric: a description and the facts that must all hold."""

    description: str = Field(description="What this group checks, e.g. 'the cheapest flight'.")
    facts: list[str] = Field(description="Atomic facts; each one is judged true or false.")
    checks: list[str] | None = Field(
        default=None,
        description="Exact predicates (JSON) for synthetic sites, checks[i] verifies facts[i]; "
                    "null for rubrics judged by an LLM.")


class Rubric(Row):
    """A task's rubric; difficulty is the total number of facts."""

    groups: list[FactGroup] = Field(description="Fact groups, in the order the rubric lists them.")

    @property
    def n_facts(self) -> int:
        return sum(len(g.facts) for g in self.groups)
