"""An OpenAI-compatible HTTP server around one local checkpoint (`webgym serve`).

It speaks the part of vLLM's API the pipeline uses: `GET /v1/models` lists the served name (with
the checkpoint directory as `root`, as vLLM does), `POST /v1/chat/completions` takes chat messages
with image parts as data URLs, temperature / top_p / top_k / max_tokens / seed / logprobs, and
answers with the message, the finish reason, usage and per-token logprobs of the untempered model
(what the local policy and the trainer compute). So a chat-policy rollout, or any `openai` client,
talks to a checkpoint on a CPU machine the way it talks to vLLM on a GPU one.

Generation is serialised: one model, one lock. Requests wait their turn on the event loop and the
holder of the lock generates in a worker thread, so `/v1/models` keeps answering meanwhile. Qwen's
generate keeps per-call state on the model, and on a CPU concurrent calls would only share the
same cores. It is the local stand-in, not a throughput server: on GPUs serve with vLLM.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import socket
import time
import uuid
from typing import Any

import torch
import uvicorn
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from webgym.models.checkpoint import VLM
from webgym.models.generate import Generation, generate
from webgym.models.inputs import InputError, Message

DEFAULT_MAX_TOKENS = 1024
"""Longest answer when a request names no max_tokens (the policy's own default)."""


class RequestError(ValueError):
    """A request the server cannot answer; the message names the field (HTTP 400)."""


class ChatRequest(BaseModel):
    """The fields of an OpenAI chat completion request this server reads; others are ignored."""

    model_config = ConfigDict(extra="ignore")

    model: str
    messages: list[Any] = Field(min_length=1)
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, gt=0, le=1)
    top_k: int | None = None
    """vLLM's extension (the openai client sends it through extra_body); -1 or 0 disables it."""
    max_tokens: int | None = Field(default=None, ge=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    seed: int | None = None
    logprobs: bool | None = None
    return_tokens_as_token_ids: bool | None = None
    """vLLM's extension: logprob tokens as `token_id:N`, so the client can keep the exact sampled tokens."""
    top_logprobs: int | None = None
    n: int | None = None
    stream: bool | None = None
    tools: list[Any] | None = None
    response_format: dict[str, Any] | None = None

    def unsupported(self) -> str | None:
        """Why this server cannot answer the request as asked (failing loudly beats ignoring a field)."""
        if self.stream:
            return "stream: answers come whole; send stream=false"
        if self.n not in (None, 1):
            return "n: one choice per request"
        if self.top_logprobs:
            return "top_logprobs: alternatives are not computed; ask for logprobs=true alone"
        if self.tools:
            return "tools: not supported; describe the tools in the prompt (the policy's prompts do)"
        if self.response_format and self.response_format.get("type") != "text":
            return "response_format: constrained JSON is not supported; use structured: prompt on the endpoint"
        return None


def model_messages(messages: list[Any]) -> list[Message]:
    """OpenAI messages as the model reads them: image_url parts (data URLs) become image bytes.

    Everything else passes through; webgym.models.inputs checks roles and parts and names the bad one.
    """
    converted: list[Message] = []
    for i, message in enumerate(messages):
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):
            content = [_image_part(part, f"messages[{i}].content[{j}]") for j, part in enumerate(content)]
            message = {**message, "content": content}
        converted.append(message)
    return converted


def _image_part(part: Any, where: str) -> Any:
    if not (isinstance(part, dict) and part.get("type") == "image_url"):
        return part
    image = part.get("image_url")
    url = image.get("url") if isinstance(image, dict) else image
    if not isinstance(url, str) or not url.startswith("data:") or ";base64," not in url:
        raise RequestError(f"{where}: image_url must be a base64 data URL (data:image/png;base64,...); "
                           "this server is offline and fetches no URLs")
    try:
        return {"type": "image", "png": base64.b64decode(url.split(";base64,", 1)[1], validate=True)}
    except binascii.Error as error:
        raise RequestError(f"{where}: the data URL is not valid base64 ({error})") from None


def _error(status: int, kind: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": kind, "code": status}}, status_code=status)


def _finish_reason(vlm: VLM, generation: Generation) -> str:
    """`stop` when the model ended its turn, `length` when max_tokens cut it."""
    eos = vlm.model.generation_config.eos_token_id
    ends = set(eos) if isinstance(eos, list) else {eos}
    return "stop" if generation.token_ids and generation.token_ids[-1] in ends else "length"


def completion(vlm: VLM, name: str, generation: Generation, with_logprobs: bool,
               token_ids: bool = False) -> dict[str, Any]:
    """The chat completion object of one generation, as OpenAI and vLLM shape it."""
    logprobs = None
    if with_logprobs:
        tokens = [f"token_id:{token}" if token_ids else vlm.tokenizer.decode([token])
                  for token in generation.token_ids]
        logprobs = {"content": [{"token": token, "logprob": value, "bytes": list(token.encode()), "top_logprobs": []}
                                for token, value in zip(tokens, generation.token_logprobs, strict=True)]}
    completion_tokens = len(generation.token_ids)
    return {"id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion", "created": int(time.time()),
            "model": name,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": generation.text},
                         "logprobs": logprobs, "finish_reason": _finish_reason(vlm, generation)}],
            "usage": {"prompt_tokens": generation.prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": generation.prompt_tokens + completion_tokens}}


def build_app(vlm: VLM, name: str) -> Starlette:
    """The ASGI app serving `vlm` under the model name `name`."""
    lock = asyncio.Lock()  # one model, one generation at a time
    created = int(time.time())

    async def models(_: Request) -> Response:
        return JSONResponse({"object": "list", "data": [{"id": name, "object": "model", "created": created,
                                                         "owned_by": "webgym", "root": str(vlm.source)}]})

    async def chat(request: Request) -> Response:
        try:
            raw = await request.json()
        except ValueError as error:
            return _error(400, "BadRequestError", f"the body is not JSON ({error})")
        try:
            body = ChatRequest.model_validate(raw)
        except ValidationError as error:
            return _error(400, "BadRequestError",
                          "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in error.errors()))
        if body.model != name:
            return _error(404, "NotFoundError", f"The model `{body.model}` does not exist; this server serves `{name}`.")
        problem = body.unsupported()
        if problem:
            return _error(400, "BadRequestError", problem)
        try:
            messages = model_messages(body.messages)
        except RequestError as error:
            return _error(400, "BadRequestError", str(error))
        temperature = 1.0 if body.temperature is None else body.temperature
        top_k = body.top_k if body.top_k and body.top_k > 0 else None
        max_tokens = body.max_completion_tokens or body.max_tokens or DEFAULT_MAX_TOKENS

        def run() -> Generation:
            if body.seed is not None:
                torch.manual_seed(body.seed)
            return generate(vlm, messages, temperature, body.top_p or 1.0, top_k, max_tokens)

        async with lock:
            try:
                generation = await asyncio.to_thread(run)
            except InputError as error:
                return _error(400, "BadRequestError", str(error))
        return JSONResponse(completion(vlm, name, generation, bool(body.logprobs),
                                       bool(body.return_tokens_as_token_ids)))

    return Starlette(routes=[Route("/v1/models", models, methods=["GET"]),
                             Route("/v1/chat/completions", chat, methods=["POST"])])


def bind(host: str, port: int) -> socket.socket:
    """A listening socket (port 0: a free one), bound before serving so the caller knows the port."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    return sock


def http_server(app: Starlette) -> uvicorn.Server:
    """uvicorn as the scripted server runs it; `run(sockets=[bind(...)])` stops cleanly on SIGTERM."""
    return uvicorn.Server(uvicorn.Config(app, log_level="info", access_log=False, lifespan="off", loop="asyncio",
                                         http="h11", timeout_keep_alive=60))
