"""A scripted server per test and an LLM client pointed at it, with fast retries and a private cache."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pandas as pd
import pytest

from webgym.config import EndpointConfig, LLMConfig
from webgym.lake import Lake
from webgym.llm.client import LLM
from webgym.llm.scripted_server import Latency, ScriptedServer


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer(latency=Latency.fixed(0.01)) as running:
        yield running


def endpoint(base_url: str, **overrides) -> EndpointConfig:
    return EndpointConfig(**{"base_url": base_url, "model": "scripted", "timeout_s": 2.0, **overrides})


@pytest.fixture
def make_llm(tmp_path, lake: Lake) -> Iterator[Callable[..., LLM]]:
    """Build an LLM over given endpoints (all purposes), closed at the end of the test."""
    made: list[LLM] = []

    def make(*endpoints: EndpointConfig, **overrides) -> LLM:
        settings = {"default": list(endpoints), "cache_dir": str(tmp_path / "cache"), "backoff_s": 0.01,
                    "max_attempts": 3, **overrides}
        made.append(LLM(LLMConfig(**settings), lake, run_id="test"))
        return made[-1]

    yield make
    for llm in made:
        llm.close()


@pytest.fixture
def llm(make_llm, server) -> LLM:
    return make_llm(endpoint(server.base_url))


def ledger(llm: LLM) -> pd.DataFrame:
    """The llm_calls rows written so far, oldest first."""
    llm.ledger.flush()
    return llm.lake.read_table("llm_calls").sort_values("called_at", ignore_index=True)


def user(text: str) -> list[dict]:
    return [{"role": "user", "content": text}]
