"""The scripted server as tests and the rollout benchmark use it, through the real openai client."""

from __future__ import annotations

import asyncio
import random
import statistics
import time

import openai
import pytest

from webgym.llm.scripted_server import Latency, Reply, ScriptedServer


def _client(server: ScriptedServer, key: str = "k", timeout: float = 5.0) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=server.base_url, api_key=key, max_retries=0, timeout=timeout)


async def _ask(client: openai.AsyncOpenAI, text: str, model: str = "scripted", **extra):
    return await client.chat.completions.create(model=model, messages=[{"role": "user", "content": text}], **extra)


def test_rules_match_by_text_model_purpose_and_predicate_in_order():
    with ScriptedServer(models=("a", "b")) as server:
        server.add(Reply(text="once"), contains="hello", times=1)
        server.add(Reply(text="by model"), model="b")
        server.add(Reply(text="by purpose"), purpose="judge-facts")
        server.add(lambda r: Reply(text=r.last_user_text.upper()), when=lambda r: r.last_user_text.startswith("echo"))

        async def script():
            client = _client(server)
            answers = [(await _ask(client, "hello")).choices[0].message.content,
                        (await _ask(client, "hello", model="b")).choices[0].message.content,
                        (await _ask(client, "x", extra_headers={"X-Webgym-Purpose": "judge-facts"})
                         ).choices[0].message.content,
                        (await _ask(client, "echo me")).choices[0].message.content]
            with pytest.raises(openai.BadRequestError, match="no rule matches"):
                await _ask(client, "nothing for this")
            models = [m.id for m in (await client.models.list()).data]
            await client.close()
            return answers, models

        answers, models = asyncio.run(script())
    assert answers == ["once", "by model", "by purpose", "ECHO ME"]
    assert models == ["a", "b"]
    assert [r.status for r in server.requests] == [200, 200, 200, 200, 400]


def test_log_records_requests_without_the_api_key():
    with ScriptedServer(api_key="sk-test-SECRET-0000") as server:
        server.add(Reply(text="ok"))

        async def script():
            good, bad = _client(server, "sk-test-SECRET-0000"), _client(server, "wrong")
            await _ask(good, "hi")
            with pytest.raises(openai.AuthenticationError):
                await _ask(bad, "hi")
            await good.close()
            await bad.close()

        asyncio.run(script())
    assert [r.status for r in server.requests] == [200, 401]
    assert all(r.headers["authorization"] == "[redacted]" for r in server.requests)
    assert "SECRET" not in repr(server.requests)


def test_lognormal_latency_has_the_requested_median_and_p95():
    latency, rng = Latency.lognormal(0.5), random.Random(1)
    samples = sorted(latency.sample(rng) for _ in range(20_000))
    assert statistics.median(samples) == pytest.approx(0.5, rel=0.05)
    assert samples[int(0.95 * len(samples))] == pytest.approx(2.0, rel=0.07)
    assert Latency.fixed(0.3).sample(rng) == 0.3


def test_bounded_capacity_queues_requests_like_a_busy_gpu_server():
    with ScriptedServer(latency=Latency.fixed(0.1), capacity=2) as server:
        server.add(Reply(text="ok"))

        async def burst():
            client = _client(server)
            await asyncio.gather(*(_ask(client, f"q{i}") for i in range(6)))
            await client.close()

        started = time.monotonic()
        asyncio.run(burst())
        elapsed = time.monotonic() - started
    assert server.peak_in_service == 2
    assert 0.3 <= elapsed < 2.0  # three waves of two
    waits = sorted(r.started_at - r.received_at for r in server.requests)
    assert waits[-1] >= 0.18


def test_hundreds_of_concurrent_requests_are_served():
    with ScriptedServer(latency=Latency.lognormal(0.2)) as server:
        server.add(Reply(text="ok"))

        async def burst():
            client = _client(server, timeout=30)
            replies = await asyncio.gather(*(_ask(client, f"q{i}") for i in range(300)))
            await client.close()
            return replies

        replies = asyncio.run(burst())
    assert len(replies) == 300
    assert server.peak_in_service > 100  # served side by side, not one after another (no wall-clock bound: load varies)


def test_errors_timeouts_and_broken_bodies_reach_the_client():
    with ScriptedServer() as server:
        server.add(Reply.http_error(429, retry_after_s=1.5), contains="limit")
        server.add(Reply.http_error(503), contains="down")
        server.add(Reply.hang(2), contains="hang")
        server.add(Reply.broken(), contains="broken")

        async def script():
            client = _client(server)
            with pytest.raises(openai.RateLimitError) as limited:
                await _ask(client, "limit")
            with pytest.raises(openai.InternalServerError):
                await _ask(client, "down")
            with pytest.raises(openai.APITimeoutError):
                await _ask(client, "hang", timeout=0.2)
            with pytest.raises(ValueError):
                await _ask(client, "broken")
            await client.close()
            return limited.value.response.headers

        headers = asyncio.run(script())
    assert headers["retry-after-ms"] == "1500" and headers["retry-after"] == "2"
