"""llm_calls: one row per LLM request, cache hits and errors included; never an API key."""

from __future__ import annotations

import datetime as dt

from pydantic import Field

from schemas.table import Row, TableSchema, flow_run_field


class LlmCall(Row):
    call_id: str = Field(description="Unique id of this request attempt.")
    request_hash: str = Field(description="Hash of the full request: the cache key.")
    endpoint: str = Field(description="Base URL of the endpoint (no credentials).")
    model: str = Field(description="Model name sent to the endpoint.")
    purpose: str = Field(description="Why it was called: rubric, decompose, judge-facts, policy, ...")
    prompt_name: str | None = Field(default=None, description="Prompt template used (file in webgym/prompts).")
    prompt_version: str | None = Field(default=None, description="Version of the prompt template used.")
    tokens_in: int | None = Field(default=None, ge=0, description="Prompt tokens reported by the endpoint.")
    tokens_out: int | None = Field(default=None, ge=0, description="Completion tokens reported by the endpoint.")
    cost_usd: float | None = Field(default=None, ge=0, description="Estimated cost from the price table.")
    latency_s: float | None = Field(default=None, ge=0, description="Wall time of the request.")
    cached: bool = Field(description="Answered from the cache, no request sent.")
    attempt: int = Field(default=1, ge=1, description="1 for the first try, then retries.")
    error: str | None = Field(default=None, description="Error class and message when the request failed, "
                                                        "or 'InvalidAnswer: ...' when the answer broke its schema.")
    called_at: dt.datetime = Field(description="When the request started (UTC).")
    flow_run_id: str | None = flow_run_field()


SCHEMA = TableSchema(
    name="llm_calls", row=LlmCall, keys=("call_id",),
    description="One row per LLM request, cache hits and errors included.")
