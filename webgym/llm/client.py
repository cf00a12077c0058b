"""The one way the pipeline calls a model: `LLM.chat` and `LLM.structured`.

Per purpose (rubric, judge-facts, policy, ...) the config names a pool of OpenAI-compatible
endpoints. A call is looked up in the cache first; on a miss it goes to the least-busy live
endpoint of the pool, inside that endpoint's concurrency, request-rate and token-rate limits,
and is retried with exponential backoff and jitter on 429, 5xx, timeouts and connection errors
(an unreachable endpoint is skipped for a while). Every attempt and every cache hit becomes an
llm_calls row. All network work runs on one private event loop, so the same `LLM` serves async
code (any loop) and plain functions (`chat_sync`, `structured_sync`) alike.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import datetime as dt
import itertools
import json
import logging
import os
import random
import threading
import time
import uuid
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import httpx2
import openai
from pydantic import BaseModel

from schemas.llm_calls import LlmCall
from webgym.config import ConfigError, EndpointConfig, LLMConfig
from webgym.lake import Lake
from webgym.llm.cache import ResponseCache, request_key
from webgym.llm.images import image_part
from webgym.llm.ledger import Ledger, LedgerTotals
from webgym.llm.limits import TokenBucket
from webgym.llm.prompts import Prompt
from webgym.llm.secrets import redact, register_secret
from webgym.llm.structured import (InvalidAnswer, StructuredFailure, parse_answer, response_format,
                                   retry_messages, with_schema_instruction)

log = logging.getLogger(__name__)

T = TypeVar("T", bound=BaseModel)
PURPOSE_HEADER = "X-Webgym-Purpose"
_RETRY_STATUS = {408, 409, 429}
_COMPLETION_ESTIMATE = 512
"""Completion tokens assumed by the token limiter when a call sets no max_tokens."""


class NoEndpointError(ConfigError):
    """A purpose has no endpoint configured, or its API key variable is unset; says what to set."""


class LLMCallError(RuntimeError):
    """A request failed for good (non-retryable error, or every attempt used); never holds a key."""


class MalformedResponse(RuntimeError):
    """The endpoint answered 2xx with a body that is not a chat completion."""


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: str
    """JSON text exactly as the model wrote it (may be malformed: parse defensively)."""


@dataclass
class ChatResult:
    """One answer, from the endpoint or the cache."""

    text: str | None
    tool_calls: list[ToolCall]
    finish_reason: str | None
    logprobs: list[float] | None
    """Log-probability of each generated token, when the request asked for logprobs."""
    tokens_in: int | None
    tokens_out: int | None
    cost_usd: float | None
    latency_s: float
    cached: bool
    model: str
    endpoint: str
    call_id: str
    completion: dict[str, Any]
    """The raw chat completion as JSON."""
    parsed: Any = None
    invalid: str | None = None
    """Why the answer failed the caller's check (structured calls), else None."""


def public_url(url: str) -> str:
    """`url` without user info, query or fragment: what the ledger and logs may show."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    return urlunsplit((parts.scheme, host if parts.port is None else f"{host}:{parts.port}", parts.path, "", ""))


def _result(data: dict[str, Any], *, cached: bool, endpoint: str, call_id: str, latency_s: float,
            cost_usd: float | None) -> ChatResult:
    try:
        choice = data["choices"][0]
        message = choice["message"]
        tool_calls = [ToolCall(c["id"], c["function"]["name"], c["function"]["arguments"])
                      for c in message.get("tool_calls") or []]
    except (KeyError, IndexError, TypeError) as error:
        raise MalformedResponse(f"not a chat completion (missing {error})") from None
    tokens = (choice.get("logprobs") or {}).get("content") or []
    usage = data.get("usage") or {}
    return ChatResult(
        text=message.get("content"), tool_calls=tool_calls, finish_reason=choice.get("finish_reason"),
        logprobs=[t["logprob"] for t in tokens] or None,
        tokens_in=None if cached else usage.get("prompt_tokens"),
        tokens_out=None if cached else usage.get("completion_tokens"),
        cost_usd=cost_usd, latency_s=latency_s, cached=cached, model=data.get("model") or "",
        endpoint=endpoint, call_id=call_id, completion=data)


def _estimate_tokens(messages: list[dict[str, Any]], params: dict[str, Any]) -> int:
    """Rough prompt + completion size for the token limiter (4 characters a token, 85 an image)."""
    chars = images = 0
    for message in messages:
        content = message.get("content")
        parts = content if isinstance(content, list) else [{"type": "text", "text": content or ""}]
        for part in parts:
            if part.get("type") == "text":
                chars += len(part.get("text") or "")
            else:
                images += 1
    completion = params.get("max_completion_tokens") or params.get("max_tokens") or _COMPLETION_ESTIMATE
    return chars // 4 + 85 * images + int(completion)


class Endpoint:
    """One configured server: its client, concurrency slots, rate limiters and health."""

    def __init__(self, config: EndpointConfig, where: str) -> None:
        self.config, self.where = config, where
        key = None
        if config.api_key_env:
            key = os.environ.get(config.api_key_env)
            if not key:
                raise NoEndpointError(f"environment variable {config.api_key_env} is not set "
                                      f"({where}.api_key_env names it); export the API key there")
            register_secret(key)
        self.url = public_url(config.base_url)
        # keep-alive for every slot: above openai's default of 100, busy endpoints would reconnect per request
        connections = httpx2.Limits(max_connections=config.max_concurrency,
                                    max_keepalive_connections=config.max_concurrency)
        self.client = openai.AsyncOpenAI(base_url=config.base_url, api_key=key or "none", max_retries=0,
                                         timeout=config.timeout_s,
                                         http_client=openai.DefaultAsyncHttpxClient(limits=connections))
        self.slots = asyncio.Semaphore(config.max_concurrency)
        self.requests = TokenBucket(config.rpm) if config.rpm else None
        self.tokens = TokenBucket(config.tpm) if config.tpm else None
        self.in_flight = 0
        self.dead_until = 0.0

    @property
    def load(self) -> float:
        return self.in_flight / self.config.max_concurrency

    async def send(self, messages: list[dict[str, Any]], params: dict[str, Any], purpose: str,
                   timeout_s: float | None) -> dict[str, Any]:
        """One request inside this endpoint's limits; the completion as JSON."""
        self.in_flight += 1
        try:
            async with self.slots:
                estimate = _estimate_tokens(messages, params)
                if self.requests:
                    await self.requests.take(1)
                if self.tokens:
                    await self.tokens.take(estimate)
                completion = await self.client.chat.completions.create(
                    model=self.config.model, messages=messages, timeout=timeout_s or self.config.timeout_s,
                    extra_headers={PURPOSE_HEADER: purpose}, **params)
        except json.JSONDecodeError as error:
            raise MalformedResponse(f"the response body is not JSON ({error})") from None
        finally:
            self.in_flight -= 1
        data = completion.model_dump(mode="json", exclude_unset=True)
        if self.tokens and data.get("usage"):
            actual = (data["usage"].get("prompt_tokens") or 0) + (data["usage"].get("completion_tokens") or 0)
            self.tokens.adjust(actual - estimate)
        return data


class EndpointPool:
    """The endpoints serving one purpose; picks the least-busy live one."""

    def __init__(self, purpose: str, endpoints: list[Endpoint]) -> None:
        self.purpose, self.endpoints = purpose, endpoints
        self._turn = itertools.count()
        modes = {e.config.structured for e in endpoints}
        if len(modes) > 1:
            raise ConfigError(f"llm endpoints for {purpose!r} mix structured modes {sorted(modes)}; "
                              "use one mode per purpose")
        self.structured = modes.pop()

    def pick(self) -> Endpoint:
        now = time.monotonic()
        live = [e for e in self.endpoints if e.dead_until <= now]
        if not live:
            return min(self.endpoints, key=lambda e: e.dead_until)
        turn = next(self._turn)
        return min(live, key=lambda e: (e.load, (self.endpoints.index(e) - turn) % len(self.endpoints)))

    def has_live_other_than(self, endpoint: Endpoint) -> bool:
        now = time.monotonic()
        return any(e is not endpoint and e.dead_until <= now for e in self.endpoints)


class _LoopThread:
    """A private event loop in a daemon thread: the home of every client, semaphore and limiter."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="webgym-llm", daemon=True)
        self.thread.start()

    def submit(self, coro: Coroutine[Any, Any, Any]) -> concurrent.futures.Future:
        if threading.current_thread() is self.thread:
            coro.close()
            raise RuntimeError("a *_sync LLM method was called from async code: await the async one instead")
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()
        self.loop.close()


class LLM:
    """Chat and structured calls for every purpose, with cache, limits, retries and the ledger.

        with LLM(config.llm, lake, run_id="annotate") as llm:
            rubric = llm.structured_sync("rubric", prompt.render(task=text), Rubric, prompt=prompt)
    """

    def __init__(self, config: LLMConfig, lake: Lake, run_id: str = "llm") -> None:
        self.config, self.lake = config, lake
        self.cache = ResponseCache(Path(config.cache_dir))
        self.ledger = Ledger(lake, run_id, config.ledger_flush_rows)
        self._pools: dict[str, EndpointPool] = {}
        self._pools_lock = threading.Lock()
        self._loop = _LoopThread()

    # -- configuration ---------------------------------------------------------------------
    def pool(self, purpose: str) -> EndpointPool:
        """The endpoints for `purpose`; NoEndpointError (naming the setting) when there are none."""
        with self._pools_lock:
            if purpose not in self._pools:
                configs = self.config.endpoints.get(purpose) or self.config.default
                if not configs:
                    raise NoEndpointError(f"no LLM endpoint for purpose {purpose!r}: set llm.endpoints.{purpose} "
                                          "or llm.default in the profile")
                setting = f"llm.endpoints.{purpose}" if self.config.endpoints.get(purpose) else "llm.default"
                self._pools[purpose] = EndpointPool(
                    purpose, [Endpoint(c, f"{setting}[{i}]") for i, c in enumerate(configs)])
            return self._pools[purpose]

    def require(self, *purposes: str) -> None:
        """Fail now, before any work, if a purpose a stage needs has no usable endpoint."""
        for purpose in purposes:
            self.pool(purpose)

    def image(self, screenshot: bytes | str) -> dict[str, Any]:
        """A message part for a screenshot (PNG bytes, or its hash in the lake's blob store),
        downscaled to llm.image_max_side."""
        png = self.lake.get_blob(screenshot) if isinstance(screenshot, str) else screenshot
        return image_part(png, self.config.image_max_side)

    # -- calls -----------------------------------------------------------------------------
    async def chat(self, purpose: str, messages: list[dict[str, Any]], *, prompt: Prompt | None = None,
                   cache: bool = True, timeout_s: float | None = None, meter: LedgerTotals | None = None,
                   **params: Any) -> ChatResult:
        """One chat completion. `params` go to the endpoint (temperature, max_tokens, tools,
        logprobs, ...) and into the cache key; `cache=False` opts out (e.g. sampled policy calls).
        `meter` also counts this call's attempts and cost (e.g. what one judgment spent)."""
        return await self._on_loop(self._call(purpose, messages, prompt, cache, timeout_s, params, None, meter))

    async def structured(self, purpose: str, messages: list[dict[str, Any]], schema: type[T], *,
                         prompt: Prompt | None = None, cache: bool = True, timeout_s: float | None = None,
                         meter: LedgerTotals | None = None, **params: Any) -> T | StructuredFailure:
        """An answer validated against `schema`, asked again with the error fed back on an invalid one,
        up to llm.structured_attempts times; then a StructuredFailure. `meter` as in `chat`."""
        return await self._on_loop(self._structured(purpose, messages, schema, prompt, cache, timeout_s, params,
                                                    meter))

    def chat_sync(self, purpose: str, messages: list[dict[str, Any]], **kwargs: Any) -> ChatResult:
        """`chat` for plain (non-async) code."""
        return self._loop.submit(self.chat(purpose, messages, **kwargs)).result()

    def structured_sync(self, purpose: str, messages: list[dict[str, Any]], schema: type[T],
                        **kwargs: Any) -> T | StructuredFailure:
        """`structured` for plain (non-async) code."""
        return self._loop.submit(self.structured(purpose, messages, schema, **kwargs)).result()

    async def _on_loop(self, coro: Coroutine[Any, Any, Any]) -> Any:
        """Run `coro` on the private loop, awaiting it from whichever loop the caller is on."""
        if asyncio.get_running_loop() is self._loop.loop:
            return await coro
        return await asyncio.wrap_future(self._loop.submit(coro))

    async def _structured(self, purpose: str, messages: list[dict[str, Any]], schema: type[T],
                          prompt: Prompt | None, cache: bool, timeout_s: float | None,
                          params: dict[str, Any], meter: LedgerTotals | None) -> T | StructuredFailure:
        mode = self.pool(purpose).structured
        conversation = with_schema_instruction(messages, schema, mode)
        fmt = response_format(schema, mode)
        params = {**params, "response_format": fmt} if fmt else params
        errors: list[str] = []
        answer: str | None = None
        for _ in range(self.config.structured_attempts):
            result = await self._call(purpose, conversation, prompt, cache, timeout_s, params,
                                      lambda r: parse_answer(r.text, schema), meter)
            if result.invalid is None:
                return result.parsed
            errors.append(result.invalid)
            answer = result.text
            conversation = retry_messages(conversation, answer, result.invalid)
        failure = StructuredFailure(purpose, schema.__name__, len(errors), errors, answer)
        log.warning("%s", redact(str(failure)))
        return failure

    async def _call(self, purpose: str, messages: list[dict[str, Any]], prompt: Prompt | None, use_cache: bool,
                    timeout_s: float | None, params: dict[str, Any],
                    check: Callable[[ChatResult], Any] | None, meter: LedgerTotals | None) -> ChatResult:
        pool = self.pool(purpose)
        prompt_id = (prompt.name, prompt.version) if prompt else None
        keys = {(e.config.family, e.config.model): request_key(e.config.family, e.config.model, messages,
                                                               params, prompt_id) for e in pool.endpoints}
        use_cache = use_cache and self.config.cache
        if use_cache:
            hit = self._cached(pool, keys, check, purpose, prompt, meter)
            if hit is not None:
                return hit
        attempt = 0
        while True:
            attempt += 1
            endpoint = pool.pick()
            key = keys[(endpoint.config.family, endpoint.config.model)]
            started, called_at, call_id = time.monotonic(), dt.datetime.now(dt.UTC), uuid.uuid4().hex
            try:
                data = await endpoint.send(messages, params, purpose, timeout_s)
                result = _result(data, cached=False, endpoint=endpoint.url, call_id=call_id,
                                 latency_s=time.monotonic() - started, cost_usd=None)
            except (openai.APIError, MalformedResponse) as error:
                message = redact(f"{type(error).__name__}: {error}")
                self._record(call_id, key, endpoint, purpose, prompt, called_at, time.monotonic() - started,
                             attempt, error=message, meter=meter)
                if not _retryable(error):
                    raise LLMCallError(f"{purpose} call to {endpoint.url} ({endpoint.config.model}) failed: "
                                       f"{message}") from None
                if isinstance(error, openai.APIConnectionError) and not isinstance(error, openai.APITimeoutError):
                    endpoint.dead_until = time.monotonic() + self.config.dead_cooldown_s
                if attempt == self.config.max_attempts:
                    raise LLMCallError(f"{purpose} call failed after {attempt} attempt(s); last, at "
                                       f"{endpoint.url}: {message}") from None
                delay = 0.0 if pool.has_live_other_than(endpoint) and endpoint.dead_until > time.monotonic() \
                    else self._delay(error, attempt)
                log.warning("%s call to %s failed (%s); retry %d/%d in %.2f s", purpose, endpoint.url, message,
                            attempt + 1, self.config.max_attempts, delay)
                await asyncio.sleep(delay)
                continue
            result.cost_usd = self._cost(endpoint.config.model, result)
            if use_cache:
                self.cache.put(key, purpose, endpoint.config.model, data)
            return self._finish(result, check, purpose, prompt, key, endpoint, called_at, attempt, meter)

    def _cached(self, pool: EndpointPool, keys: dict[tuple[str, str], str],
                check: Callable[[ChatResult], Any] | None, purpose: str, prompt: Prompt | None,
                meter: LedgerTotals | None) -> ChatResult | None:
        """The cached answer for any (family, model) of the pool, recorded as a hit; None on a miss."""
        first: dict[str, Endpoint] = {}
        for endpoint in pool.endpoints:
            first.setdefault(keys[(endpoint.config.family, endpoint.config.model)], endpoint)
        for key, endpoint in first.items():
            started, called_at = time.monotonic(), dt.datetime.now(dt.UTC)
            hit = self.cache.get(key)
            if hit is not None:
                result = _result(hit, cached=True, endpoint=endpoint.url, call_id=uuid.uuid4().hex,
                                 latency_s=time.monotonic() - started, cost_usd=0.0)
                return self._finish(result, check, purpose, prompt, key, endpoint, called_at, 1, meter)
        return None

    def _finish(self, result: ChatResult, check: Callable[[ChatResult], Any] | None, purpose: str,
                prompt: Prompt | None, key: str, endpoint: Endpoint, called_at: dt.datetime,
                attempt: int, meter: LedgerTotals | None) -> ChatResult:
        if check is not None:
            try:
                result.parsed = check(result)
            except InvalidAnswer as error:
                result.invalid = str(error)
        self._record(result.call_id, key, endpoint, purpose, prompt, called_at, result.latency_s, attempt,
                     result=result, error=redact(f"InvalidAnswer: {result.invalid}") if result.invalid else None,
                     meter=meter)
        return result

    def _record(self, call_id: str, key: str, endpoint: Endpoint, purpose: str, prompt: Prompt | None,
                called_at: dt.datetime, latency_s: float, attempt: int, *, result: ChatResult | None = None,
                error: str | None = None, meter: LedgerTotals | None = None) -> None:
        call = LlmCall(
            call_id=call_id, request_hash=key, endpoint=endpoint.url, model=endpoint.config.model,
            purpose=purpose, prompt_name=prompt.name if prompt else None,
            prompt_version=prompt.version if prompt else None,
            tokens_in=result.tokens_in if result else None, tokens_out=result.tokens_out if result else None,
            cost_usd=result.cost_usd if result else None, latency_s=latency_s,
            cached=bool(result and result.cached), attempt=attempt, error=error, called_at=called_at)
        self.ledger.record(call)
        if meter is not None:
            meter.add(call)

    def _cost(self, model: str, result: ChatResult) -> float | None:
        price = self.config.prices.get(model)
        if price is None or result.tokens_in is None or result.tokens_out is None:
            return None
        return (result.tokens_in * price.input_per_mtok + result.tokens_out * price.output_per_mtok) / 1e6

    def _delay(self, error: Exception, attempt: int) -> float:
        """Retry-After when the server sent one, else exponential backoff with jitter."""
        response = getattr(error, "response", None)
        if response is not None:
            for header, scale in (("retry-after-ms", 1e-3), ("retry-after", 1.0)):
                try:
                    return min(float(response.headers[header]) * scale, self.config.backoff_max_s)
                except (KeyError, ValueError):
                    continue
        backoff = min(self.config.backoff_s * 2 ** (attempt - 1), self.config.backoff_max_s)
        return backoff * random.uniform(0.5, 1.0)

    # -- lifecycle -------------------------------------------------------------------------
    def close(self) -> None:
        """Write the ledger's last rows, close connections and the cache, stop the loop (idempotent)."""
        self.ledger.close()
        if self._loop.loop.is_closed():
            return
        for pool in self._pools.values():
            for endpoint in pool.endpoints:
                self._loop.submit(endpoint.client.close()).result()
        self._loop.stop()
        self.cache.close()
        if self.ledger.totals.calls:
            log.info("%s", self.ledger.totals)

    def __enter__(self) -> LLM:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _retryable(error: Exception) -> bool:
    if isinstance(error, (openai.APIConnectionError, MalformedResponse, openai.APIResponseValidationError)):
        return True
    status = getattr(error, "status_code", None)
    return status is not None and (status in _RETRY_STATUS or status >= 500)
