"""The `llm` block: OpenAI-compatible endpoints per purpose, retries, the answer cache, prices."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator

from webgym.config.base import ProjectPath, Section


class EndpointConfig(Section):
    """One OpenAI-compatible server (OpenAI, Azure OpenAI v1, vLLM, SGLang, Ollama, llama.cpp)."""

    base_url: str = Field(description="API root, e.g. https://api.openai.com/v1 or http://gpu-1:8000/v1.")
    model: str = Field(description="Model name sent with every request (the served name on vLLM/SGLang).")
    api_key_env: str | None = Field(
        default=None,
        description="Name of the environment variable that holds the API key (never the key itself); "
                    "null for local servers that need none.")
    family: str = Field(
        default="default",
        description="Cache family: endpoints with the same family and model share cached answers "
                    "(replicas of one server). Change it when one model name serves different weights.")
    max_concurrency: int = Field(default=16, ge=1, description="Requests in flight at once on this endpoint.")
    rpm: int | None = Field(default=None, ge=1, description="Requests per minute allowed; null: unlimited.")
    tpm: int | None = Field(default=None, ge=1, description="Tokens per minute allowed (prompt + completion); "
                                                             "null: unlimited.")
    timeout_s: float = Field(default=120.0, gt=0, description="Per-request timeout in seconds.")
    structured: Literal["json_schema", "json_object", "prompt"] = Field(
        default="json_schema",
        description="How JSON answers are requested: json_schema (OpenAI, vLLM, SGLang, Ollama), "
                    "json_object (JSON mode plus the schema in the prompt), prompt (schema in the prompt only).")

    @field_validator("base_url")
    @classmethod
    def _no_credentials_in_url(cls, value: str) -> str:
        if "@" in value.split("//", 1)[-1].split("/", 1)[0] or "?" in value:
            raise ValueError("must not hold credentials or a query string (HTTP logs print URLs); "
                             "put the key in an environment variable named by api_key_env")
        return value

    @field_validator("api_key_env")
    @classmethod
    def _names_a_variable(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", value):
            raise ValueError("must be the NAME of an environment variable (e.g. OPENAI_API_KEY), "
                             "not the key itself")
        return value


class ModelPrice(Section):
    """What one model costs, for the ledger's cost_usd (`llm.prices.<model name>`)."""

    input_per_mtok: float = Field(ge=0, description="USD per million prompt tokens.")
    output_per_mtok: float = Field(ge=0, description="USD per million completion tokens.")


class LLMConfig(Section):
    """Every model call: endpoints per purpose, retries, cache, price table."""

    default: list[EndpointConfig] = Field(
        default_factory=list,
        description="Endpoints for purposes without their own entry; several are load-balanced.")
    endpoints: dict[str, list[EndpointConfig]] = Field(
        default_factory=dict,
        description="Per-purpose endpoints (rubric, decompose, judge-keypoints, judge-facts, "
                    "judge-hallucination, blocking, policy, or any other name); override llm.default.")
    max_attempts: int = Field(default=5, ge=1, description="Tries per request on 429, 5xx, timeouts "
                                                           "and connection errors.")
    backoff_s: float = Field(default=1.0, gt=0, description="First retry delay; doubles per try, with jitter.")
    backoff_max_s: float = Field(default=60.0, gt=0, description="Longest retry delay.")
    dead_cooldown_s: float = Field(default=30.0, gt=0, description="How long an unreachable endpoint is "
                                                                   "skipped before it is tried again.")
    structured_attempts: int = Field(default=3, ge=1, description="Answers asked for before a structured "
                                                                  "call returns a failure.")
    cache: bool = Field(default=True, description="Answer repeated requests from the persistent cache.")
    cache_dir: ProjectPath = Field(default=".cache/llm", description="Cache directory (relative to the project).")
    image_max_side: int | None = Field(default=None, ge=16, description="Downscale screenshots so their "
                                                                        "longer side is at most this; null: as is.")
    ledger_flush_rows: int = Field(default=256, ge=1, description="llm_calls rows journaled before they are "
                                                                  "written as a lake part.")
    prices: dict[str, ModelPrice] = Field(default_factory=dict,
                                          description="Price per model name, for cost_usd in llm_calls.")

    def served(self, purpose: str) -> bool:
        """Whether some endpoint answers `purpose` (its own entry, or llm.default)."""
        return bool(self.endpoints.get(purpose) or self.default)
