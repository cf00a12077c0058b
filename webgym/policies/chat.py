"""The chat policy: an OpenAI-compatible endpoint (vLLM, OpenAI, ...) through the LLM layer.

Screenshots travel as data URLs; answers given as native tool calls are turned into the same
<tool_call> text the parser reads, so both styles of server work. Sampled calls (temperature > 0)
bypass the cache, otherwise every episode of a GRPO group would get the same answer.
"""

from __future__ import annotations

import asyncio
import json
from functools import partial
from typing import TYPE_CHECKING, Any

from webgym.config import ContextConfig, SamplingConfig
from webgym.llm.client import LLM, ChatResult, LLMCallError
from webgym.llm.prompts import load_prompt
from webgym.policies.base import PolicyError, PolicyInput, PolicyOutput
from webgym.policies.context import budgeted_messages, build_messages, prompt_version
from webgym.policies.parse import parse_response

if TYPE_CHECKING:
    from webgym.models.checkpoint import Processing


def _openai_messages(llm: LLM, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Image parts with PNG bytes become data-URL parts the endpoint understands."""
    converted = []
    for message in messages:
        content = message["content"]
        if isinstance(content, list):
            content = [llm.image(part["png"]) if part["type"] == "image" else part for part in content]
        converted.append({**message, "content": content})
    return converted


def sampled_token_ids(result: ChatResult) -> tuple[int, ...] | None:
    """The answer's token ids, when the server wrote its logprob tokens as `token_id:N` (vLLM's
    return_tokens_as_token_ids, which `webgym serve` honours too); None for servers that do not."""
    choices = result.completion.get("choices") or [{}]
    tokens = ((choices[0].get("logprobs") or {}).get("content")) or []
    ids = []
    for token in tokens:
        text = token.get("token") if isinstance(token, dict) else None
        if not isinstance(text, str) or not text.startswith("token_id:") or not text[9:].isdigit():
            return None
        ids.append(int(text[9:]))
    return tuple(ids) or None


def response_text(result: ChatResult) -> str:
    """The answer's text, with native tool calls appended in <tool_call> form."""
    calls = [f'<tool_call>{{"name": {json.dumps(c.name)}, "arguments": {c.arguments or "{}"}}}</tool_call>'
             for c in result.tool_calls]
    return "\n".join(filter(None, [result.text or "", *calls]))


class ChatPolicy:
    """Implements the Policy protocol over the `policy` purpose of the LLM layer."""

    name = "chat"
    privileged = False

    def __init__(self, llm: LLM, context: ContextConfig, sampling: SamplingConfig,
                 processing: Processing | None = None) -> None:
        """`processing` (the served checkpoint's tokenizer and processor) counts each request's tokens to
        keep it within the context budget; without it the full context is sent."""
        self.llm, self.context, self.sampling, self.processing = llm, context, sampling, processing
        self.version = "+".join(sorted({e.config.model for e in llm.pool("policy").endpoints}))
        self.prompt_version = prompt_version(context)

    async def _context(self, observed: PolicyInput) -> tuple[list[dict[str, Any]], int]:
        if self.processing is None:
            return build_messages(observed, self.context), 0
        from webgym.models.inputs import prompt_length  # torch and transformers: only when counting

        return await asyncio.to_thread(budgeted_messages, observed, self.context,
                                       partial(prompt_length, self.processing), self.processing.context_length,
                                       self.sampling.max_tokens)

    async def act(self, observed: PolicyInput) -> PolicyOutput:
        context, dropped = await self._context(observed)
        messages = _openai_messages(self.llm, context)
        params: dict[str, Any] = {"temperature": self.sampling.temperature, "top_p": self.sampling.top_p,
                                  "max_tokens": self.sampling.max_tokens}
        extra: dict[str, Any] = {}
        if self.sampling.logprobs:
            params["logprobs"] = True
            if self.sampling.token_ids:
                extra["return_tokens_as_token_ids"] = True  # the trainer learns the sampled tokens themselves
        if self.sampling.top_k is not None:
            extra["top_k"] = self.sampling.top_k
        if extra:
            params["extra_body"] = extra
        try:
            result = await self.llm.chat("policy", messages, prompt=load_prompt(self.context.prompt),
                                         cache=self.sampling.temperature == 0, **params)
        except LLMCallError as error:
            raise PolicyError(str(error)) from None
        text = response_text(result)
        parsed = parse_response(text)
        return PolicyOutput(parsed.actions, response=text, memory=parsed.memory, parse_error=parsed.error,
                            context_dropped=dropped,
                            logprob=sum(result.logprobs) if result.logprobs else None,
                            token_ids=sampled_token_ids(result) if not result.tool_calls else None,
                            token_logprobs=tuple(result.logprobs) if result.logprobs else None,
                            usage={"tokens_in": result.tokens_in or 0, "tokens_out": result.tokens_out or 0})
