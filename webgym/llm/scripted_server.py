"""A scripted OpenAI-compatible server on 127.0.0.1, the offline stand-in for every model endpoint.

Tests start it, script it with rules and read what it received; the rollout benchmark uses it as
the policy server (lognormal latency, bounded capacity like a GPU server). It speaks
`POST /v1/chat/completions` and `GET /v1/models`.

    with ScriptedServer(latency=Latency.lognormal(0.02)) as server:
        server.add(Reply.error(429, retry_after_s=0.01), contains="capital", times=1)
        server.add(Reply.json({"city": "Paris"}), contains="capital")
        ...  # point an endpoint at server.base_url
        assert len(server.requests) == 2

Rules are tried in order; the first whose conditions all hold (substring of the last user
message, model, purpose header, predicate) and that has uses left answers. A request no rule
matches gets HTTP 400 naming it, so a test with a missing rule fails loudly.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import math
import random
import re
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from webgym.llm.client import PURPOSE_HEADER

_WORDS = re.compile(r"\s*\S+")


@dataclass(frozen=True)
class Reply:
    """What the server answers: a message (text and/or tool calls), an HTTP error, or a broken body."""

    text: str | None = None
    tool_calls: tuple[tuple[str, str], ...] = ()
    """(function name, JSON arguments) pairs."""
    status: int = 200
    error: str | None = None
    retry_after_s: float | None = None
    delay_s: float = 0.0
    """Extra wait before answering (past the client's timeout to script a timeout)."""
    body: str | None = None
    """Raw response body sent instead of a completion (malformed or truncated JSON)."""
    finish_reason: str | None = None
    logprob: float = -0.1
    """Log-probability reported for every generated token when the request asks for logprobs."""

    @classmethod
    def json(cls, value: Any) -> Reply:
        return cls(text=json.dumps(value))

    @classmethod
    def tools(cls, *calls: tuple[str, dict[str, Any] | str]) -> Reply:
        return cls(tool_calls=tuple((name, args if isinstance(args, str) else json.dumps(args))
                                    for name, args in calls))

    @classmethod
    def http_error(cls, status: int, message: str = "scripted error", retry_after_s: float | None = None) -> Reply:
        return cls(status=status, error=message, retry_after_s=retry_after_s)

    @classmethod
    def hang(cls, seconds: float) -> Reply:
        return cls(text="too late", delay_s=seconds)

    @classmethod
    def broken(cls, body: str = '{"id": "chatcmpl-1", "choices": [{"mess') -> Reply:
        return cls(body=body)


@dataclass(frozen=True)
class Latency:
    """Service time per request: fixed, or lognormal with a median and a 95th percentile."""

    median_s: float
    p95_s: float | None = None

    @classmethod
    def fixed(cls, seconds: float) -> Latency:
        return cls(seconds)

    @classmethod
    def lognormal(cls, median_s: float, p95_s: float | None = None) -> Latency:
        """Lognormal with the given median; p95 defaults to 4x the median (a loaded GPU server)."""
        return cls(median_s, p95_s if p95_s is not None else 4 * median_s)

    def sample(self, rng: random.Random) -> float:
        if self.p95_s is None or self.median_s <= 0:
            return self.median_s
        sigma = math.log(self.p95_s / self.median_s) / 1.6448536269514722  # z of the 95th percentile
        return rng.lognormvariate(math.log(self.median_s), sigma)


@dataclass
class ReceivedRequest:
    """One request as the server saw it (the Authorization header is redacted)."""

    body: dict[str, Any]
    headers: dict[str, str]
    received_at: float
    started_at: float | None = None
    """When it entered service (after waiting for capacity)."""
    finished_at: float | None = None
    status: int | None = None

    @property
    def model(self) -> str:
        return str(self.body.get("model", ""))

    @property
    def purpose(self) -> str | None:
        return self.headers.get(PURPOSE_HEADER.lower())

    @property
    def messages(self) -> list[dict[str, Any]]:
        return self.body.get("messages") or []

    @property
    def last_user_text(self) -> str:
        for message in reversed(self.messages):
            if message.get("role") == "user":
                content = message.get("content")
                if isinstance(content, list):
                    return "\n".join(p.get("text", "") for p in content if p.get("type") == "text")
                return content or ""
        return ""

    @property
    def texts(self) -> list[str]:
        """Every text in the request's messages, system and assistant turns included."""
        texts: list[str] = []
        for message in self.messages:
            content = message.get("content") or ""
            if isinstance(content, str):
                texts.append(content)
            else:
                texts += [part.get("text", "") for part in content if part.get("type") == "text"]
        return texts

    @property
    def images(self) -> list[str]:
        """URLs of every image part in the request."""
        return [p["image_url"]["url"] for m in self.messages if isinstance(m.get("content"), list)
                for p in m["content"] if p.get("type") == "image_url"]


@dataclass
class Rule:
    """When to answer and with what; `reply` may be a function of the request."""

    reply: Reply | Callable[[ReceivedRequest], Reply]
    contains: str | None = None
    model: str | None = None
    purpose: str | None = None
    when: Callable[[ReceivedRequest], bool] | None = None
    times: int | None = None
    """How many requests it answers; None: unlimited."""
    used: int = field(default=0, init=False)

    def matches(self, request: ReceivedRequest) -> bool:
        return ((self.times is None or self.used < self.times)
                and (self.contains is None or self.contains in request.last_user_text)
                and (self.model is None or self.model == request.model)
                and (self.purpose is None or self.purpose == request.purpose)
                and (self.when is None or self.when(request)))


def _tokens(text: str) -> int:
    return max(1, len(text) // 4)


class ScriptedServer:
    """The server, run by uvicorn in a background thread on a free port; a context manager."""

    def __init__(self, rules: list[Rule] | None = None, *, latency: Latency | None = None,
                 capacity: int | None = None, models: tuple[str, ...] = ("scripted",),
                 api_key: str | None = None, seed: int = 0) -> None:
        self.latency, self.capacity, self.models, self.api_key = latency, capacity, models, api_key
        self._rules = list(rules or [])
        self._log: list[ReceivedRequest] = []
        self._lock = threading.Lock()
        self._rng = random.Random(seed)
        self._ids = itertools.count(1)
        self._in_service = 0
        self.peak_in_service = 0
        """Most requests in service at once (never above `capacity`)."""
        self._socket: socket.socket | None = None
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    # -- scripting -------------------------------------------------------------------------
    def add(self, reply: Reply | Callable[[ReceivedRequest], Reply], *, contains: str | None = None,
            model: str | None = None, purpose: str | None = None,
            when: Callable[[ReceivedRequest], bool] | None = None, times: int | None = None) -> Rule:
        """Append a rule (tried after the earlier ones)."""
        rule = Rule(reply, contains, model, purpose, when, times)
        with self._lock:
            self._rules.append(rule)
        return rule

    @property
    def requests(self) -> list[ReceivedRequest]:
        """Every chat request received so far, in arrival order."""
        with self._lock:
            return list(self._log)

    @property
    def base_url(self) -> str:
        if self._socket is None:
            raise RuntimeError("the scripted server is not running: use `with ScriptedServer() as server:`")
        return f"http://127.0.0.1:{self._socket.getsockname()[1]}/v1"

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> ScriptedServer:
        # proto=IPPROTO_TCP makes asyncio set TCP_NODELAY on accepted connections; without it every
        # keep-alive response waits ~40 ms for a delayed ACK (Nagle), which would swamp the scripted latency.
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind(("127.0.0.1", 0))
        app = Starlette(routes=[Route("/v1/chat/completions", self._chat, methods=["POST"]),
                                Route("/v1/models", self._models, methods=["GET"])])
        config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off", loop="asyncio",
                                http="h11", backlog=4096, timeout_keep_alive=60)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=asyncio.run, args=(self._serve(),), name="scripted-llm", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the scripted LLM server did not start")
            time.sleep(0.005)
        return self

    async def _serve(self) -> None:
        assert self._server is not None and self._socket is not None
        self._slots = asyncio.Semaphore(self.capacity) if self.capacity else None
        await self._server.serve(sockets=[self._socket])

    def stop(self) -> None:
        """Stop at once; requests still sleeping are dropped."""
        if self._server is not None and self._thread is not None:
            self._server.should_exit = self._server.force_exit = True
            self._thread.join(timeout=10)
        if self._socket is not None:
            self._socket.close()

    def __enter__(self) -> ScriptedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- HTTP ------------------------------------------------------------------------------
    async def _models(self, _: Request) -> Response:
        return JSONResponse({"object": "list", "data": [{"id": m, "object": "model", "created": 0,
                                                         "owned_by": "scripted"} for m in self.models]})

    async def _chat(self, request: Request) -> Response:
        headers = {k: ("[redacted]" if k == "authorization" else v) for k, v in request.headers.items()}
        try:
            body = await request.json()
        except ValueError:
            return _error(400, "request body is not JSON")
        entry = ReceivedRequest(body=body, headers=headers, received_at=time.monotonic())
        with self._lock:
            self._log.append(entry)
        response = await self._respond(entry, request.headers.get("authorization"))
        entry.status, entry.finished_at = response.status_code, time.monotonic()
        return response

    async def _respond(self, entry: ReceivedRequest, authorization: str | None) -> Response:
        if self.api_key is not None and authorization != f"Bearer {self.api_key}":
            return _error(401, "invalid API key")
        with self._lock:
            rule = next((r for r in self._rules if r.matches(entry)), None)
            if rule is not None:
                rule.used += 1
        if rule is None:
            return _error(400, f"scripted server: no rule matches model={entry.model!r} purpose={entry.purpose!r} "
                               f"last user message={entry.last_user_text[:200]!r}")
        reply = rule.reply(entry) if callable(rule.reply) else rule.reply
        if reply.delay_s:
            await asyncio.sleep(reply.delay_s)
        if reply.status != 200:
            headers = {}
            if reply.retry_after_s is not None:
                headers = {"retry-after-ms": str(int(reply.retry_after_s * 1000)),
                           "retry-after": str(math.ceil(reply.retry_after_s))}
            return _error(reply.status, reply.error or "scripted error", headers)
        await self._serve_one(entry)
        if reply.body is not None:
            return Response(reply.body, media_type="application/json")
        return JSONResponse(self._completion(entry, reply))

    async def _serve_one(self, entry: ReceivedRequest) -> None:
        """Hold a capacity slot for one sampled service time."""
        if self._slots is None:
            await self._busy(entry)
            return
        async with self._slots:
            await self._busy(entry)

    async def _busy(self, entry: ReceivedRequest) -> None:
        entry.started_at = time.monotonic()
        self._in_service += 1
        self.peak_in_service = max(self.peak_in_service, self._in_service)
        try:
            if self.latency is not None:
                with self._lock:
                    seconds = self.latency.sample(self._rng)
                await asyncio.sleep(seconds)
        finally:
            self._in_service -= 1

    def _completion(self, entry: ReceivedRequest, reply: Reply) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": reply.text}
        if reply.tool_calls:
            message["tool_calls"] = [{"id": f"call_{i}", "type": "function",
                                      "function": {"name": name, "arguments": args}}
                                     for i, (name, args) in enumerate(reply.tool_calls)]
        generated = (reply.text or "") + "".join(args for _, args in reply.tool_calls)
        finish = reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")
        choice: dict[str, Any] = {"index": 0, "message": message, "logprobs": None, "finish_reason": finish}
        if entry.body.get("logprobs"):
            choice["logprobs"] = {"content": [{"token": t, "logprob": reply.logprob, "bytes": list(t.encode()),
                                               "top_logprobs": []} for t in _WORDS.findall(generated)]}
        prompt_tokens = sum(_tokens(text) for text in entry.texts) + 85 * len(entry.images)
        completion_tokens = _tokens(generated)
        return {"id": f"chatcmpl-{next(self._ids)}", "object": "chat.completion", "created": int(time.time()),
                "model": entry.model, "choices": [choice],
                "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                          "total_tokens": prompt_tokens + completion_tokens}}


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> Response:
    kind = {400: "invalid_request_error", 401: "authentication_error", 429: "rate_limit_error"}.get(status,
                                                                                                   "server_error")
    return JSONResponse({"error": {"message": message, "type": kind, "code": status}}, status_code=status,
                        headers=headers)
