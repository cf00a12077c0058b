"""The local checkpoint policy: a Hugging Face vision-language model generating in-process.

It loads a checkpoint directory (the base model, or one the trainer wrote) and samples each step
in a worker thread, so the rollout engine's event loop keeps serving the other episodes. One
thread: generation mutates per-call state on the model (Qwen's rotary offsets), and on a CPU
several at once would only compete for the same cores. The same code serves a real checkpoint
on a GPU machine; for throughput there, serve the checkpoint with vLLM and use the chat backend.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Literal

import torch
from pydantic import BaseModel, ConfigDict, Field

from webgym.config import ContextConfig, SamplingConfig
from webgym.models.checkpoint import load_vlm
from webgym.models.generate import Generation, generate
from webgym.models.inputs import InputError, prompt_length
from webgym.policies.base import PolicyError, PolicyInput, PolicyOutput
from webgym.policies.context import budgeted_messages, prompt_version
from webgym.policies.parse import parse_response


class LocalPolicyConfig(BaseModel):
    """Which checkpoint to load and where (decoding settings are the text policies' SamplingConfig)."""

    model_config = ConfigDict(extra="forbid")

    checkpoint: str = Field(description="Checkpoint directory in Hugging Face layout (config.json, safetensors, "
                                        "tokenizer, preprocessor_config.json), e.g. a trainer output.")
    device: str = Field(default="auto", description="torch device: auto (cuda when present, else cpu), cpu, cuda:0.")
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = Field(
        default="auto", description="Weights' dtype: auto is bfloat16 on a GPU and float32 on the CPU.")
    seed: int = Field(default=0, description="Seed of torch's sampler, set once when the policy loads.")


class LocalPolicy:
    """Policy backend over a local checkpoint (name `local`, version = the checkpoint's path)."""

    name = "local"
    privileged = False

    def __init__(self, config: LocalPolicyConfig, context: ContextConfig, sampling: SamplingConfig) -> None:
        self.config, self.context, self.sampling = config, context, sampling
        self.vlm = load_vlm(config.checkpoint, config.device, config.dtype)
        self.version = str(self.vlm.source)
        self.prompt_version = prompt_version(context)
        torch.manual_seed(config.seed)
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="local-policy")

    def _generate(self, observed: PolicyInput) -> tuple[Generation, int]:
        s = self.sampling
        messages, dropped = budgeted_messages(observed, self.context, partial(prompt_length, self.vlm),
                                              self.vlm.context_length, s.max_tokens)
        return generate(self.vlm, messages, s.temperature, s.top_p, s.top_k, s.max_tokens), dropped

    async def act(self, observed: PolicyInput) -> PolicyOutput:
        loop = asyncio.get_running_loop()
        try:
            generation, dropped = await loop.run_in_executor(self._worker, self._generate, observed)
        except (InputError, RuntimeError) as error:  # unreadable screenshot, out of memory, device failure
            raise PolicyError(f"local checkpoint {self.version}: {error}") from error
        parsed = parse_response(generation.text)
        return PolicyOutput(actions=parsed.actions, response=generation.text, memory=parsed.memory,
                            parse_error=parsed.error, logprob=generation.logprob if self.sampling.logprobs else None,
                            context_dropped=dropped,
                            token_ids=tuple(generation.token_ids),
                            token_logprobs=generation.token_logprobs if self.sampling.logprobs else None,
                            usage={"tokens_in": generation.prompt_tokens, "tokens_out": len(generation.token_ids)})

    def close(self) -> None:
        """Stop the worker thread (after the episodes using the policy have finished)."""
        self._worker.shutdown(wait=True)
