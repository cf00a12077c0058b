"""JSON answers that match a pydantic model: how to ask, how to check, how to ask again.

The schema goes to the endpoint as `response_format` (json_schema mode) or into the system
message (json_object and prompt modes). An answer that is not valid JSON or breaks the schema
is fed back with the error and asked for again, a bounded number of times; after that the
caller gets a `StructuredFailure`, never a made-up value.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ValidationError

from webgym.llm.prompts import load_prompt

Mode = Literal["json_schema", "json_object", "prompt"]
T = TypeVar("T", bound=BaseModel)
_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)


class InvalidAnswer(ValueError):
    """The answer is not JSON, or not JSON of the requested shape."""


@dataclass(frozen=True)
class StructuredFailure:
    """No valid answer after every allowed try: what was asked and why each answer failed."""

    purpose: str
    schema: str
    attempts: int
    errors: list[str]
    last_answer: str | None

    def __str__(self) -> str:
        return (f"{self.purpose}: no valid {self.schema} after {self.attempts} answer(s); "
                f"last error: {self.errors[-1] if self.errors else 'none'}")


def response_format(schema: type[BaseModel], mode: Mode) -> dict[str, Any] | None:
    """The `response_format` request parameter for `mode` (None in prompt mode)."""
    if mode == "json_schema":
        return {"type": "json_schema",
                "json_schema": {"name": schema.__name__, "schema": schema.model_json_schema(), "strict": False}}
    if mode == "json_object":
        return {"type": "json_object"}
    return None


def with_schema_instruction(messages: list[dict[str, Any]], schema: type[BaseModel],
                            mode: Mode) -> list[dict[str, Any]]:
    """`messages` plus the schema in the system message, for modes that do not send it separately."""
    if mode == "json_schema":
        return messages
    instruction = load_prompt("json_schema_instruction").render(
        schema=json.dumps(schema.model_json_schema(), separators=(",", ":")))[0]["content"]
    if messages and messages[0]["role"] == "system" and isinstance(messages[0]["content"], str):
        first = {**messages[0], "content": f"{messages[0]['content']}\n\n{instruction}"}
        return [first, *messages[1:]]
    return [{"role": "system", "content": instruction}, *messages]


def parse_answer(text: str | None, schema: type[T]) -> T:
    """The answer as a `schema` instance; InvalidAnswer says what is wrong, in words the model can act on."""
    if not text or not text.strip():
        raise InvalidAnswer("the answer was empty")
    body = text.strip()
    fenced = _FENCE.match(body)
    try:
        return schema.model_validate_json(fenced.group(1) if fenced else body)
    except ValidationError as error:
        problems = [f"{'.'.join(map(str, e['loc'])) or 'answer'}: {e['msg']}" for e in error.errors()[:5]]
        raise InvalidAnswer("; ".join(problems)) from None


def retry_messages(messages: list[dict[str, Any]], answer: str | None, error: str) -> list[dict[str, Any]]:
    """The conversation so far, the rejected answer, and the error fed back."""
    feedback = load_prompt("structured_retry").render(error=error)
    return [*messages, {"role": "assistant", "content": answer or ""}, *feedback]
