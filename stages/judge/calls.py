"""One judgment's LLM calls: temperature 0, typed answers, screenshots encoded once, cost metered.

Fail closed: a call error, an answer that stays invalid after its retries (malformed, truncated,
missing its verdict) or a missing screenshot raises `JudgeError`, which the runner records as a
judgment with status `error`, never as a success.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterable
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, Field

from schemas.judgments import Judgment
from webgym.llm.client import LLM, LLMCallError
from webgym.llm.ledger import LedgerTotals
from webgym.llm.prompts import load_prompt
from webgym.llm.structured import StructuredFailure

T = TypeVar("T", bound=BaseModel)


class JudgeError(RuntimeError):
    """A judge got no usable answer; the message says which call and why."""


class Verdict(BaseModel):
    """A binary verdict with its reasoning first, so the model reasons before it decides."""

    reasoning: str = Field(description="The evidence checked, step by step.")
    verdict: Literal["SUCCESS", "NOT SUCCESS"] = Field(description="SUCCESS only when the criterion clearly holds.")

    @property
    def holds(self) -> bool:
        return self.verdict == "SUCCESS"


async def all_of(coroutines: Iterable[Coroutine[Any, Any, T]]) -> list[T]:
    """Run calls concurrently; the first JudgeError cancels the rest and is raised as is."""
    try:
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(c) for c in coroutines]
    except* JudgeError as errors:
        raise errors.exceptions[0] from None
    return [t.result() for t in tasks]


class JudgeCalls:
    """The calls of one judgment, with what the judgments row records about them."""

    def __init__(self, llm: LLM, max_tokens: int) -> None:
        self.llm, self.max_tokens = llm, max_tokens
        self.meter = LedgerTotals()
        self._prompts: dict[str, str] = {}
        self._purposes: list[str] = []
        self._images: dict[str, dict[str, Any]] = {}

    def image(self, sha256: str) -> dict[str, Any]:
        if sha256 not in self._images:
            try:
                self._images[sha256] = self.llm.image(sha256)
            except (FileNotFoundError, ValueError) as error:
                raise JudgeError(f"screenshot {sha256} unusable: {error}") from None
        return self._images[sha256]

    async def ask(self, purpose: str, prompt_name: str, schema: type[T], images: Iterable[str] = (),
                  **values: Any) -> T:
        """One typed answer from `purpose`'s model for the prompt `prompt_name` filled with `values`."""
        prompt = load_prompt(prompt_name)
        self._prompts[prompt.name] = prompt.version
        if purpose not in self._purposes:
            self._purposes.append(purpose)
        messages = prompt.render(images=[self.image(sha) for sha in images] or None, **values)
        try:
            answer = await self.llm.structured(purpose, messages, schema, prompt=prompt, meter=self.meter,
                                               temperature=0, max_tokens=self.max_tokens)
        except LLMCallError as error:
            raise JudgeError(str(error)) from None
        if isinstance(answer, StructuredFailure):
            raise JudgeError(str(answer))
        return answer

    @property
    def model(self) -> str | None:
        models = dict.fromkeys(e.config.model for p in self._purposes for e in self.llm.pool(p).endpoints)
        return ",".join(models) or None

    @property
    def prompt_version(self) -> str | None:
        return "+".join(f"{name}@{version}" for name, version in self._prompts.items()) or None

    def stamp(self, row: Judgment) -> Judgment:
        """`row` with the models, prompt versions and cost of every call made so far."""
        if not self.meter.calls:
            return row
        return row.model_copy(update={"model": self.model, "prompt_version": self.prompt_version,
                                      "cost_usd": self.meter.cost_usd})
