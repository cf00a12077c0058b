"""LLM.chat against the scripted server with the real openai client: routing, retries, limits, cache, ledger."""

from __future__ import annotations

import asyncio
import base64
import io
import time

import pandas as pd
import pytest
from PIL import Image

from tests.webgym.llm.conftest import endpoint, ledger, user
from webgym.config import ModelPrice
from webgym.llm.client import LLMCallError, NoEndpointError, public_url
from webgym.llm.prompts import load_prompt
from webgym.llm.scripted_server import Latency, Reply, ScriptedServer


def _free_dead_url() -> str:
    """A base URL where nothing listens (a server started and stopped)."""
    with ScriptedServer() as gone:
        url = gone.base_url
    return url


def test_answer_fills_tokens_cost_and_one_ledger_row(make_llm, server):
    server.add(Reply(text="Paris"), contains="capital")
    llm = make_llm(endpoint(server.base_url), prices={"scripted": ModelPrice(input_per_mtok=1e6,
                                                                             output_per_mtok=2e6)})
    result = llm.chat_sync("rubric", user("What is the capital of France?"), temperature=0)
    assert result.text == "Paris" and not result.cached and result.finish_reason == "stop"
    assert result.tokens_in > 0 and result.tokens_out > 0
    assert result.cost_usd == pytest.approx(result.tokens_in * 1.0 + result.tokens_out * 2.0)
    (request,) = server.requests
    assert request.purpose == "rubric" and request.body["temperature"] == 0
    (row,) = ledger(llm).to_dict("records")
    assert (row["purpose"], row["model"], row["cached"], row["attempt"]) == ("rubric", "scripted", False, 1)
    assert row["endpoint"] == server.base_url and pd.isna(row["error"])
    assert row["tokens_in"] == result.tokens_in and row["cost_usd"] == pytest.approx(result.cost_usd)


def test_rate_limited_call_waits_retry_after_then_succeeds(llm, server):
    server.add(Reply.http_error(429, "slow down", retry_after_s=0.3), contains="hello", times=1)
    server.add(Reply(text="hi"), contains="hello")
    started = time.monotonic()
    assert llm.chat_sync("judge-facts", user("hello")).text == "hi"
    assert time.monotonic() - started >= 0.3
    assert [r.status for r in server.requests] == [429, 200]
    rows = ledger(llm)
    assert rows["attempt"].tolist() == [1, 2]
    assert rows["error"][0].startswith("RateLimitError") and rows["error"].isna().tolist() == [False, True]


def test_server_errors_back_off_exponentially(make_llm, server):
    server.add(Reply.http_error(500), contains="flaky", times=2)
    server.add(Reply(text="ok"), contains="flaky")
    llm = make_llm(endpoint(server.base_url), backoff_s=0.2)
    started = time.monotonic()
    assert llm.chat_sync("rubric", user("flaky")).text == "ok"
    # delays 0.2 * 2**(n-1) * jitter in [0.5, 1]: at least 0.1 + 0.2
    assert time.monotonic() - started >= 0.3
    assert ledger(llm)["error"].notna().tolist() == [True, True, False]


def test_timeouts_are_retried_and_then_fail_with_a_clear_error(make_llm, server):
    server.add(Reply.hang(5), contains="slow")
    llm = make_llm(endpoint(server.base_url, timeout_s=0.2), max_attempts=2)
    started = time.monotonic()
    with pytest.raises(LLMCallError, match="rubric call failed after 2 attempt.*APITimeoutError"):
        llm.chat_sync("rubric", user("slow"))
    assert time.monotonic() - started < 3  # two 0.2 s timeouts, not two 5 s hangs
    assert len(server.requests) == 2
    assert ledger(llm)["error"].str.startswith("APITimeoutError").all()


def test_client_errors_fail_at_once(llm, server):
    server.add(Reply.http_error(400, "context too long"), contains="huge")
    with pytest.raises(LLMCallError, match="context too long"):
        llm.chat_sync("rubric", user("huge"))
    assert len(server.requests) == 1


def test_malformed_response_body_is_retried_then_reported(llm, server):
    server.add(Reply.broken(), contains="broken")
    with pytest.raises(LLMCallError, match="MalformedResponse"):
        llm.chat_sync("rubric", user("broken"))
    assert len(server.requests) == 3


def test_second_identical_call_is_a_cache_hit_and_sends_nothing(make_llm, server):
    server.add(Reply(text="cached answer"))
    llm = make_llm(endpoint(server.base_url))
    first = llm.chat_sync("rubric", user("same question"), temperature=0)
    second = llm.chat_sync("rubric", user("same question"), temperature=0)
    assert second.cached and second.text == first.text and len(server.requests) == 1
    rows = ledger(llm)
    assert rows["cached"].tolist() == [False, True]
    assert rows["request_hash"][0] == rows["request_hash"][1]
    assert rows["tokens_in"].isna().tolist() == [False, True] and rows["cost_usd"][1] == 0
    # a new client (a rerun of the stage) finds the answer on disk
    rerun = make_llm(endpoint(server.base_url))
    assert rerun.chat_sync("rubric", user("same question"), temperature=0).cached
    assert len(server.requests) == 1


def test_cache_key_covers_parameters_prompt_version_and_opt_out(make_llm, server, tmp_path):
    server.add(Reply(text="x"))
    llm = make_llm(endpoint(server.base_url))
    prompt_dir = tmp_path / "prompts"
    prompt_dir.mkdir()
    (prompt_dir / "ask.yaml").write_text("version: 1\nuser: Say ${word}\n")
    v1 = load_prompt("ask", prompt_dir)
    llm.chat_sync("rubric", v1.render(word="a"), prompt=v1)
    llm.chat_sync("rubric", v1.render(word="a"), prompt=v1, temperature=0.7)
    llm.chat_sync("rubric", v1.render(word="a"), prompt=v1, temperature=0.7, cache=False)
    (prompt_dir / "v2").mkdir()
    (prompt_dir / "v2" / "ask.yaml").write_text("version: 2\nuser: Say ${word}\n")
    v2 = load_prompt("ask", prompt_dir / "v2")
    llm.chat_sync("rubric", v2.render(word="a"), prompt=v2)
    assert len(server.requests) == 4
    rows = ledger(llm)
    assert rows["prompt_version"].tolist() == ["1", "1", "1", "2"]
    assert set(rows["prompt_name"]) == {"ask"} and not rows["cached"].any()


def _png(width: int, height: int, color: str) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), color).save(buffer, format="PNG")
    return buffer.getvalue()


def test_image_message_reaches_the_server_downscaled_from_the_blob_store(make_llm, server, lake):
    server.add(Reply(text="a red page"))
    llm = make_llm(endpoint(server.base_url), image_max_side=320)
    sha = lake.put_blob(_png(1280, 720, "red"))
    messages = [{"role": "user", "content": [{"type": "text", "text": "What do you see?"}, llm.image(sha)]}]
    assert llm.chat_sync("judge-keypoints", messages).text == "a red page"
    (url,) = server.requests[0].images
    header, payload = url.split(",", 1)
    assert header == "data:image/png;base64"
    with Image.open(io.BytesIO(base64.b64decode(payload))) as sent:
        assert sent.size == (320, 180) and sent.getpixel((5, 5)) == (255, 0, 0)
    # the same screenshot again is a hit; another screenshot is a miss
    assert llm.chat_sync("judge-keypoints", messages).cached
    other = [{"role": "user", "content": [{"type": "text", "text": "What do you see?"},
                                          llm.image(_png(1280, 720, "blue"))]}]
    assert not llm.chat_sync("judge-keypoints", other).cached


def test_dead_endpoint_is_skipped_and_calls_succeed(make_llm, server):
    server.add(Reply(text="alive"))
    dead = _free_dead_url()
    llm = make_llm(endpoint(dead), endpoint(server.base_url))
    results = [llm.chat_sync("policy", user(f"step {i}"), cache=False) for i in range(6)]
    assert [r.text for r in results] == ["alive"] * 6
    assert len(server.requests) == 6
    rows = ledger(llm)
    errors = rows[rows["error"].notna()]
    assert len(errors) == 1 and errors["endpoint"].tolist() == [public_url(dead)]
    assert errors["error"].str.startswith("APIConnectionError").all()


def test_live_endpoints_share_the_load(make_llm):
    with ScriptedServer(latency=Latency.fixed(0.05)) as a, ScriptedServer(latency=Latency.fixed(0.05)) as b:
        for s in (a, b):
            s.add(Reply(text="ok"))
        llm = make_llm(endpoint(a.base_url), endpoint(b.base_url))

        async def burst():
            await asyncio.gather(*(llm.chat("policy", user(f"q{i}"), cache=False) for i in range(20)))

        asyncio.run(burst())
        assert len(a.requests) + len(b.requests) == 20
        assert min(len(a.requests), len(b.requests)) >= 5


def test_concurrency_per_endpoint_is_bounded(make_llm):
    with ScriptedServer(latency=Latency.fixed(0.05)) as busy:
        busy.add(Reply(text="ok"))
        llm = make_llm(endpoint(busy.base_url, max_concurrency=3))

        async def burst():
            return await asyncio.gather(*(llm.chat("judge-facts", user(f"q{i}")) for i in range(12)))

        assert len(asyncio.run(burst())) == 12
        assert busy.peak_in_service == 3


def test_requests_per_minute_are_paced(make_llm, server):
    server.add(Reply(text="ok"))
    llm = make_llm(endpoint(server.base_url, rpm=1200))  # 20 a second, at most 20 at once

    async def burst():
        await asyncio.gather(*(llm.chat("rubric", user(f"q{i}")) for i in range(30)))

    started = time.monotonic()
    asyncio.run(burst())
    assert time.monotonic() - started >= 0.45  # the 10 beyond the first second's budget wait 0.5 s


def test_tokens_per_minute_are_paced(make_llm, server):
    server.add(Reply(text="word " * 400))  # 500 completion tokens, as max_tokens lets the limiter expect
    llm = make_llm(endpoint(server.base_url, tpm=60_000))  # 1000 tokens a second, at most 1000 at once

    async def burst():
        return await asyncio.gather(*(llm.chat("rubric", user(f"q{i}"), max_tokens=500) for i in range(4)))

    started = time.monotonic()
    results = asyncio.run(burst())
    assert sum(r.tokens_in + r.tokens_out for r in results) > 2000
    assert time.monotonic() - started >= 0.95  # the 1000 tokens beyond the first second's budget wait 1 s


def test_tool_calls_and_logprobs_come_back(llm, server):
    server.add(Reply.tools(("click", {"element": 3}), ("type", {"text": "mug"})))
    result = llm.chat_sync("policy", user("act"), logprobs=True, cache=False)
    assert [(c.name, c.arguments) for c in result.tool_calls] == [("click", '{"element": 3}'),
                                                                   ("type", '{"text": "mug"}')]
    assert result.finish_reason == "tool_calls"
    assert result.logprobs and all(lp == pytest.approx(-0.1) for lp in result.logprobs)


def test_no_endpoint_fails_at_once_naming_the_setting(make_llm):
    llm = make_llm()
    started = time.monotonic()
    with pytest.raises(NoEndpointError, match=r"set llm\.endpoints\.rubric or llm\.default"):
        llm.require("rubric")
    with pytest.raises(NoEndpointError, match=r"llm\.endpoints\.judge-facts"):
        llm.chat_sync("judge-facts", user("anything"))
    assert time.monotonic() - started < 1


def test_per_purpose_endpoint_overrides_the_default(make_llm, server):
    with ScriptedServer() as judge:
        judge.add(Reply(text="from the judge"))
        server.add(Reply(text="from the default"))
        llm = make_llm(endpoint(server.base_url),
                       endpoints={"judge-facts": [endpoint(judge.base_url, model="judge")]})
        assert llm.chat_sync("judge-facts", user("q")).text == "from the judge"
        assert llm.chat_sync("rubric", user("q")).text == "from the default"


def test_missing_key_variable_is_named(make_llm, server, monkeypatch):
    monkeypatch.delenv("WEBGYM_TEST_MISSING_KEY", raising=False)
    llm = make_llm(endpoint(server.base_url, api_key_env="WEBGYM_TEST_MISSING_KEY"))
    with pytest.raises(NoEndpointError, match=r"WEBGYM_TEST_MISSING_KEY is not set \(llm\.default\[0\]"):
        llm.require("rubric")


def test_calls_from_several_event_loops_and_from_plain_code(llm, server):
    server.add(Reply(text="ok"))

    async def one(i: int):
        return (await llm.chat("rubric", user(f"loop {i}"))).text

    assert asyncio.run(one(1)) == "ok" and asyncio.run(one(2)) == "ok"
    assert llm.chat_sync("rubric", user("sync")).text == "ok"
