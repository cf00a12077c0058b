"""Sample one assistant turn from a loaded model, with the log-probability of what was sampled."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from webgym.models.checkpoint import VLM
from webgym.models.inputs import Message, prompt_inputs
from webgym.models.logprobs import token_logprobs


@dataclass(frozen=True)
class Generation:
    text: str
    """The response with special tokens removed (Qwen's <tool_call> tags are plain added tokens and stay)."""
    token_ids: list[int]
    """Sampled tokens, the end-of-turn token included when the model stopped by itself."""
    logprob: float
    """Sum over `token_ids` of the model's log-probabilities (temperature 1: what the trainer computes)."""
    prompt_tokens: int
    token_logprobs: tuple[float, ...]
    """Per-token terms of `logprob` (what an OpenAI-compatible server reports as logprobs)."""


VISION_TOKENS = ("image_token_id", "video_token_id", "vision_start_token_id", "vision_end_token_id")


def vision_token_ids(vlm: VLM) -> list[int]:
    """Tokens that only the processor may place: in a response, the model's forward pass would read an
    image placeholder as the slot of an image it does not have, so no training step could recompute it."""
    return [token for name in VISION_TOKENS if (token := getattr(vlm.model.config, name, None)) is not None]


def generate(vlm: VLM, messages: list[Message], temperature: float = 1.0, top_p: float = 1.0,
             top_k: int | None = None, max_new_tokens: int = 512) -> Generation:
    """Sample (or decode greedily when temperature is 0) the next assistant turn.

    Vision placeholder tokens are never sampled (`vision_token_ids`); the reported log-probabilities
    are still the untouched model's. Temperature, top-p and top-k are always passed (top_k None as 0,
    which disables it), so the checkpoint's generation_config.json defaults for them (Qwen ships its
    own) do not apply.
    """
    inputs = prompt_inputs(vlm, messages).to(vlm.model.device)
    prompt_length = inputs["input_ids"].shape[1]
    sampling = {"do_sample": True, "temperature": temperature, "top_p": top_p, "top_k": top_k or 0} \
        if temperature > 0 else {"do_sample": False, "temperature": None, "top_p": None, "top_k": None}
    with torch.inference_mode():
        out = vlm.model.generate(**inputs, **sampling, max_new_tokens=max_new_tokens,
                                 suppress_tokens=vision_token_ids(vlm),
                                 return_dict_in_generate=True, output_logits=True)
    new = out.sequences[:, prompt_length:]  # (1, N): a batch of one stops at its end token, no padding
    logits = torch.stack(out.logits, dim=1)  # (1, N, V) raw logits, before temperature and top-p
    per_token = token_logprobs(logits, new)[0]  # (N,)
    text = vlm.tokenizer.decode(new[0], skip_special_tokens=True)
    return Generation(text, new[0].tolist(), float(per_token.sum()), prompt_length, tuple(per_token.tolist()))
