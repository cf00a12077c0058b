"""Tiny and small randomly initialised Qwen-VL models of the real classes, built in code (no download).

Tests and benchmarks use them where a GPU machine would load a real checkpoint: the model class,
the tokenizer's class and special tokens, the chat template, the image processor and the
checkpoint layout are the real ones; only the sizes are small and the weights random. The
tokenizer's byte-level BPE is trained here on the agent's tool documentation (tiny) or also on its
prompts and the synthetic sites' task texts (small, so a tool call takes few tokens).

- tiny (~0.26 M parameters): fast enough for every test that only needs the real classes.
- small (~2.4 M parameters): learns on 2 CPU cores; benchmarks/vlm_path.py overfits it through the
  production path (SFT from the lake, `webgym serve`, the chat policy in Chromium).
- medium (~85 M parameters): the GPU device check's model (benchmarks/gpu_check.sh), a real 12-layer
  decoder that one GPU trains in seconds and the CPU only slowly.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import torch
from tokenizers import AddedToken, Regex, Tokenizer, models, normalizers, pre_tokenizers, trainers
from transformers import AutoConfig, AutoModelForImageTextToText, GenerationConfig, Qwen2Tokenizer
from transformers.models.qwen2.tokenization_qwen2 import PRETOKENIZE_REGEX
from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

from webgym.env.actions import tool_docs
from webgym.llm.prompts import load_prompt
from webgym.models.checkpoint import VLM, family_of, make_processor, save_vlm

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>",
                  "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>"]
ADDED_TOKENS = ["<tool_call>", "</tool_call>", "<think>", "</think>"]
"""Plain added tokens, as in Qwen's tokenizer: kept when special tokens are skipped on decode."""

# Qwen's ChatML template for text and image parts (what the real Qwen-VL templates render for
# these messages). Real checkpoints bring their own template; this one is only for tiny models.
CHAT_TEMPLATE = (
    "{%- for message in messages -%}"
    "{{- '<|im_start|>' + message['role'] + '\\n' -}}"
    "{%- if message['content'] is string -%}{{- message['content'] -}}"
    "{%- else -%}{%- for part in message['content'] -%}"
    "{%- if part['type'] == 'image' -%}{{- '<|vision_start|><|image_pad|><|vision_end|>' -}}"
    "{%- elif part['type'] == 'text' -%}{{- part['text'] -}}{%- endif -%}"
    "{%- endfor -%}{%- endif -%}"
    "{{- '<|im_end|>\\n' -}}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}"
)

PATCH_SIZE = {"qwen2_vl": 14, "qwen2_5_vl": 14, "qwen3_vl": 16}
MAX_PIXELS = 128 * 128
"""Screenshots are resized to at most this many pixels: 1280x720 becomes 16 image tokens."""


@dataclass(frozen=True)
class ModelSize:
    """The dimensions of a random model: the text decoder's, the vision tower's and the vocabulary."""

    hidden: int
    intermediate: int
    layers: int
    heads: int
    kv_heads: int
    mrope_section: tuple[int, int, int]
    """Rotary sections (time, height, width): they sum to head_dim / 2 (head_dim = hidden / heads)."""
    vision_hidden: int
    vision_depth: int
    vocab_size: int
    max_pixels: int = MAX_PIXELS


SIZES = {
    "tiny": ModelSize(hidden=64, intermediate=128, layers=2, heads=4, kv_heads=2, mrope_section=(4, 2, 2),
                      vision_hidden=32, vision_depth=2, vocab_size=512),
    # Few layers: on a shared 2-core machine the step time is mostly per-operation overhead.
    "small": ModelSize(hidden=192, intermediate=512, layers=3, heads=3, kv_heads=1, mrope_section=(12, 10, 10),
                       vision_hidden=64, vision_depth=2, vocab_size=2048),
    "medium": ModelSize(hidden=768, intermediate=2048, layers=12, heads=12, kv_heads=4, mrope_section=(12, 10, 10),
                        vision_hidden=256, vision_depth=4, vocab_size=4096),
}

_RESPONSES = [
    '<think>The search box is at the top.</think><memory>Looking for the red mug.</memory>'
    '<tool_call>{"name": "click", "arguments": {"x": 512, "y": 86}}</tool_call>',
    '<tool_call>{"name": "type", "arguments": {"text": "red mug", "submit": true}}</tool_call>',
    '<tool_call>{"name": "answer", "arguments": {"text": "42"}}</tool_call>',
]


def agent_corpus() -> list[str]:
    """What the agent reads and writes: tool docs, its prompts, the synthetic sites' task texts and
    tool-call responses. A BPE trained on it spells a prompt and a tool call in few tokens."""
    from webgym.sites.site import load_sites
    from webgym.sites.tasks import task_text

    prompts = [load_prompt(name) for name in ("agent_memory", "agent_qwen")]
    sites = load_sites(cache_dir=None).values()
    tasks = [task_text(site, goal) for site in sites for goal in site.spec.goals]
    hosts = [f"Current page: http://{site.spec.hostname}/ {site.spec.title}" for site in sites]
    return [tool_docs(), *(p.system.template for p in prompts), *(p.user.template for p in prompts), *tasks, *hosts,
            *_RESPONSES]


def tiny_tokenizer(vocab_size: int = 512, corpus: Iterable[str] | None = None) -> Qwen2Tokenizer:
    """Qwen's tokenizer class over a small byte-level BPE trained here (same result every call).

    Same pre-tokenizer, special and added tokens, end-of-turn token and class name (Qwen2Tokenizer
    in tokenizer_config.json) as the real Qwen-VL tokenizers, with a `vocab_size`-token vocabulary
    learnt from `corpus` (default: the tool docs and a few responses).
    """
    bpe = Tokenizer(models.BPE())
    bpe.normalizer = normalizers.NFC()
    bpe.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(PRETOKENIZE_REGEX), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIAL_TOKENS, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    bpe.train_from_iterator(list(corpus) if corpus is not None else [tool_docs(), *_RESPONSES], trainer)
    trained = json.loads(bpe.to_str())["model"]
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in trained["merges"]]
    tokenizer = Qwen2Tokenizer(vocab=trained["vocab"], merges=merges, eos_token="<|im_end|>",
                               pad_token="<|endoftext|>")
    tokenizer.add_tokens([AddedToken(token, special=True) for token in SPECIAL_TOKENS])
    tokenizer.add_tokens(ADDED_TOKENS)
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def _config(family: str, tokenizer: Qwen2Tokenizer, size: ModelSize):
    token = tokenizer.convert_tokens_to_ids
    head_dim = size.hidden // size.heads
    if sum(size.mrope_section) * 2 != head_dim:
        raise ValueError(f"mrope_section {size.mrope_section} must sum to head_dim / 2 = {head_dim // 2}")
    text = dict(vocab_size=len(tokenizer), hidden_size=size.hidden, intermediate_size=size.intermediate,
                num_hidden_layers=size.layers, num_attention_heads=size.heads, num_key_value_heads=size.kv_heads,
                max_position_embeddings=4096, pad_token_id=token("<|endoftext|>"), eos_token_id=token("<|im_end|>"),
                rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                                 "mrope_section": list(size.mrope_section)})
    vision = dict(depth=size.vision_depth, hidden_size=size.vision_hidden, intermediate_size=2 * size.vision_hidden,
                  num_heads=2, patch_size=PATCH_SIZE[family], spatial_merge_size=2, temporal_patch_size=2)
    if family == "qwen3_vl":
        text.update(head_dim=head_dim)
        text["rope_parameters"]["mrope_interleaved"] = True
        vision.update(out_hidden_size=size.hidden, num_position_embeddings=256,
                      deepstack_visual_indexes=[size.vision_depth - 1])
    elif family == "qwen2_5_vl":
        text.update(bos_token_id=None)
        vision.update(out_hidden_size=size.hidden, window_size=56, fullatt_block_indexes=[size.vision_depth - 1])
    else:
        text.update(bos_token_id=None)
        vision = dict(depth=size.vision_depth, embed_dim=size.vision_hidden, hidden_size=size.hidden, mlp_ratio=2,
                      num_heads=2, patch_size=PATCH_SIZE[family], spatial_merge_size=2, temporal_patch_size=2)
    return AutoConfig.for_model(
        family, text_config=text, vision_config=vision, tie_word_embeddings=False,
        image_token_id=token("<|image_pad|>"), video_token_id=token("<|video_pad|>"),
        vision_start_token_id=token("<|vision_start|>"), vision_end_token_id=token("<|vision_end|>"))


def tiny_vlm(family: str = "qwen3_vl", seed: int = 0, size: str = "tiny") -> VLM:
    """A randomly initialised model of the real class (SIZES[size]: tiny ~0.26 M parameters, small ~2.4 M,
    medium ~85 M), with tokenizer and processor."""
    family_of(family, f"{size} model")
    if size not in SIZES:
        raise ValueError(f"unknown model size {size!r}; sizes are {', '.join(SIZES)}")
    dims = SIZES[size]
    tokenizer = tiny_tokenizer(dims.vocab_size, agent_corpus() if size != "tiny" else None)
    config = _config(family, tokenizer, dims)
    torch.manual_seed(seed)
    model = AutoModelForImageTextToText.from_config(config)
    model.generation_config = GenerationConfig(
        eos_token_id=[tokenizer.convert_tokens_to_ids("<|im_end|>"), tokenizer.convert_tokens_to_ids("<|endoftext|>")],
        pad_token_id=tokenizer.pad_token_id)
    mean_std = {"image_mean": [0.5] * 3, "image_std": [0.5] * 3} if family == "qwen3_vl" else {}
    image_processor = Qwen2VLImageProcessorPil(patch_size=PATCH_SIZE[family], merge_size=2, temporal_patch_size=2,
                                               size={"shortest_edge": 32 * 32, "longest_edge": dims.max_pixels},
                                               **mean_std)
    return VLM(model.eval(), tokenizer, make_processor(family, image_processor, tokenizer))


def write_tiny_checkpoint(path: str | Path, family: str = "qwen3_vl", seed: int = 0, size: str = "tiny") -> Path:
    """Build a tiny (or small) model and save it as a checkpoint directory."""
    return save_vlm(tiny_vlm(family, seed, size), path)
