"""Figures for the LLM layer against the scripted server on this machine (no network, no model).

    .venv/bin/python benchmarks/llm_layer.py

Prints: the scripted server's throughput with hundreds of concurrent requests, the LLM layer's
own cost per call (cache miss and cache hit), and how a policy-like load (lognormal latency,
bounded server capacity) is served compared with the ideal.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from pathlib import Path

import openai

from webgym.config import EndpointConfig, LLMConfig
from webgym.lake import Lake
from webgym.llm.client import LLM
from webgym.llm.scripted_server import Latency, Reply, ScriptedServer


def _llm(root: Path, base_url: str, concurrency: int) -> LLM:
    lake = Lake(root / "data")
    lake.init()
    endpoint = EndpointConfig(base_url=base_url, model="scripted", max_concurrency=concurrency, timeout_s=60)
    return LLM(LLMConfig(default=[endpoint], cache_dir=str(root / "cache"), ledger_flush_rows=1000), lake, "bench")


def _messages(i: int) -> list[dict]:
    return [{"role": "user", "content": f"Step {i}: what next?"}]


async def _raw_burst(base_url: str, n: int) -> float:
    client = openai.AsyncOpenAI(base_url=base_url, api_key="none", max_retries=0, timeout=60)
    started = time.perf_counter()
    await asyncio.gather(*(client.chat.completions.create(model="scripted", messages=_messages(i)) for i in range(n)))
    await client.close()
    return time.perf_counter() - started


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp, ScriptedServer() as fast:
        fast.add(Reply(text="click(3)"))
        n = 500
        raw = asyncio.run(_raw_burst(fast.base_url, n))
        print(f"scripted server, {n} concurrent requests, raw openai client: {n / raw:,.0f} req/s")

        llm = _llm(Path(tmp), fast.base_url, concurrency=n)

        async def burst() -> float:
            started = time.perf_counter()
            await asyncio.gather(*(llm.chat("policy", _messages(i), cache=False) for i in range(n)))
            return time.perf_counter() - started

        layered = asyncio.run(burst())
        print(f"same through LLM.chat (limits, ledger):                 {n / layered:,.0f} req/s")

        misses = []
        for i in range(200):
            started = time.perf_counter()
            llm.chat_sync("rubric", _messages(i))
            misses.append(time.perf_counter() - started)
        hits = []
        for i in range(200):
            started = time.perf_counter()
            llm.chat_sync("rubric", _messages(i))
            hits.append(time.perf_counter() - started)
        print(f"sequential chat_sync, median: miss {statistics.median(misses) * 1e3:.2f} ms "
              f"(server answers at once), cache hit {statistics.median(hits) * 1e3:.2f} ms")
        llm.close()

    median, capacity, n = 0.5, 64, 640
    with tempfile.TemporaryDirectory() as tmp, ScriptedServer(latency=Latency.lognormal(median),
                                                              capacity=capacity) as gpu:
        gpu.add(Reply(text="click(3)"))
        llm = _llm(Path(tmp), gpu.base_url, concurrency=256)

        async def policy_load() -> float:
            started = time.perf_counter()
            await asyncio.gather(*(llm.chat("policy", _messages(i), cache=False) for i in range(n)))
            return time.perf_counter() - started

        wall = asyncio.run(policy_load())
        print(f"policy stand-in: {n} calls, lognormal median {median} s / p95 {4 * median} s, capacity {capacity}: "
              f"{wall:.2f} s wall, peak in service {gpu.peak_in_service}, server busy "
              f"{_utilisation(gpu, capacity):.1%} of its capacity while requests were waiting")
        llm.close()


def _utilisation(server: ScriptedServer, capacity: int) -> float:
    """Busy slot-seconds / available slot-seconds from the first start until the last request entered
    service: 100% means the client never let the server idle while it had work (the tail is excluded)."""
    requests = server.requests
    start = min(r.started_at for r in requests)
    end = max(r.started_at for r in requests)
    busy = sum(max(0.0, min(r.finished_at, end) - r.started_at) for r in requests)
    return busy / (capacity * (end - start))


if __name__ == "__main__":
    main()
