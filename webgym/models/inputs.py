"""Chat messages -> model inputs, for generation (the policy) and for training (with a loss mask).

Messages are the policy context's OpenAI-style dicts (webgym/policies/context.py): content is a
string or a list of parts {"type": "text", "text": ...} / {"type": "image", "png": bytes}. Image
parts become `{"type": "image"}` for the checkpoint's own chat template, which places the vision
tokens; the processor expands them to one token per merged patch.

A training sample is the prompt exactly as the policy saw it (template with the generation
prompt) followed by the response's tokens and the end-of-turn token, tokenised separately as at
generation time; only those last tokens are in the loss mask.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any

import torch
from PIL import Image, UnidentifiedImageError
from transformers import BatchFeature

from webgym.models.checkpoint import VLM, Processing

Message = dict[str, Any]


class InputError(ValueError):
    """A message cannot be turned into model inputs; the message says which message and part."""


def template_messages(messages: list[Message]) -> tuple[list[Message], list[Image.Image]]:
    """Messages as chat templates read them, and their images in order."""
    if not messages:
        raise InputError("no messages")
    converted: list[Message] = []
    images: list[Image.Image] = []
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            raise InputError(f"message {i}: expected a dict with role and content, got {type(message).__name__}")
        role, content = message.get("role"), message.get("content")
        if role not in ("system", "user", "assistant"):
            raise InputError(f"message {i}: role {role!r} is not system, user or assistant")
        if isinstance(content, str):
            converted.append({"role": role, "content": content})
            continue
        if not isinstance(content, list):
            raise InputError(f"message {i}: content must be a string or a list of parts, got {type(content).__name__}")
        parts = []
        for j, part in enumerate(content):
            kind = part.get("type") if isinstance(part, dict) else None
            if kind == "text" and isinstance(part.get("text"), str):
                parts.append({"type": "text", "text": part["text"]})
            elif kind == "image":
                images.append(_image(part.get("png"), f"message {i} part {j}"))
                parts.append({"type": "image"})
            else:
                raise InputError(f"message {i} part {j}: expected {{'type': 'text', 'text': str}} or "
                                 f"{{'type': 'image', 'png': bytes}}, got {str(part)[:80]}")
        converted.append({"role": role, "content": parts})
    return converted, images


def _image(png: Any, where: str) -> Image.Image:
    if not isinstance(png, bytes | bytearray):
        raise InputError(f"{where}: image part needs 'png' bytes, got {type(png).__name__}")
    try:
        return Image.open(io.BytesIO(png)).convert("RGB")
    except (UnidentifiedImageError, OSError) as error:
        raise InputError(f"{where}: not a readable image ({error})") from None


def prompt_inputs(vlm: VLM | Processing, messages: list[Message]) -> BatchFeature:
    """Tensors (batch of one) that make the model write the next assistant turn."""
    converted, images = template_messages(messages)
    if converted[-1]["role"] == "assistant":
        raise InputError(f"message {len(messages) - 1}: the prompt ends with an assistant turn; "
                         "pass the target separately as the response")
    text = vlm.tokenizer.apply_chat_template(converted, tokenize=False, add_generation_prompt=True)
    return vlm.processor(text=[text], images=images or None, return_tensors="pt")


def prompt_length(side: VLM | Processing, messages: list[Message]) -> int:
    """Tokens of the prompt the model would read for `messages`, images expanded to their vision tokens."""
    return int(prompt_inputs(side, messages)["input_ids"].shape[1])


@dataclass(frozen=True)
class Encoded:
    """One training sample as token ids, with the mask of the tokens the loss sees."""

    input_ids: torch.Tensor  # (T,)
    loss_mask: torch.Tensor  # (T,) bool: the response and its end-of-turn token
    mm_token_type_ids: torch.Tensor | None  # (T,) 0 text, 1 image
    pixel_values: torch.Tensor | None  # (patches, channels * temporal * patch * patch)
    image_grid_thw: torch.Tensor | None  # (images, 3)

    @property
    def length(self) -> int:
        return int(self.input_ids.shape[0])


def encode_sample(vlm: VLM, messages: list[Message], response: str,
                  response_ids: tuple[int, ...] | None = None) -> Encoded:
    """The prompt as the policy saw it, then the response (masked in): the tokens the model sampled
    when they were recorded, else the response's text tokenised plus the end-of-turn token.

    Re-tokenising a sampled response can split it differently (or drop special tokens the decode
    skipped), and a response cut by max_tokens has no end token: the recorded ids avoid both.
    """
    prompt = prompt_inputs(vlm, messages)
    if response_ids:
        target = torch.tensor(response_ids, dtype=prompt["input_ids"].dtype)
    else:
        end = vlm.tokenizer.eos_token
        target = vlm.tokenizer(response + end, add_special_tokens=False, return_tensors="pt")["input_ids"][0]
    prompt_ids = prompt["input_ids"][0]
    input_ids = torch.cat([prompt_ids, target])
    loss_mask = torch.cat([torch.zeros_like(prompt_ids, dtype=torch.bool), torch.ones_like(target, dtype=torch.bool)])
    mm = prompt.get("mm_token_type_ids")
    mm = torch.cat([mm[0], torch.zeros_like(target, dtype=mm.dtype)]) if mm is not None else None
    return Encoded(input_ids, loss_mask, mm, prompt.get("pixel_values"), prompt.get("image_grid_thw"))


def collate(samples: list[Encoded], pad_token_id: int) -> dict[str, torch.Tensor]:
    """A left-padded batch: every row ends with its response, so the responses are the last columns."""
    width = max(s.length for s in samples)
    batch = len(samples)
    input_ids = torch.full((batch, width), pad_token_id, dtype=samples[0].input_ids.dtype)  # (B, T)
    attention_mask = torch.zeros((batch, width), dtype=torch.long)
    loss_mask = torch.zeros((batch, width), dtype=torch.bool)
    with_mm = samples[0].mm_token_type_ids is not None
    mm = torch.zeros((batch, width), dtype=samples[0].mm_token_type_ids.dtype) if with_mm else None
    for row, sample in enumerate(samples):
        start = width - sample.length
        input_ids[row, start:] = sample.input_ids
        attention_mask[row, start:] = 1
        loss_mask[row, start:] = sample.loss_mask
        if mm is not None:
            mm[row, start:] = sample.mm_token_type_ids
    out = {"input_ids": input_ids, "attention_mask": attention_mask, "loss_mask": loss_mask}
    if mm is not None:
        out["mm_token_type_ids"] = mm
    pixels = [s.pixel_values for s in samples if s.pixel_values is not None]
    if pixels:
        out["pixel_values"] = torch.cat(pixels)
        out["image_grid_thw"] = torch.cat([s.image_grid_thw for s in samples if s.image_grid_thw is not None])
    return out
