"""Tiny randomly initialised Qwen-VL models of the real classes, built in code (no download).

Tests and benchmarks use them where a GPU machine would load a real checkpoint: the model class,
the tokenizer's class and special tokens, the chat template, the image processor and the
checkpoint layout are the real ones; only the sizes are small and the weights random. The
tokenizer's byte-level BPE is trained here on the agent's tool documentation.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from tokenizers import AddedToken, Regex, Tokenizer, models, normalizers, pre_tokenizers, trainers
from transformers import AutoConfig, AutoModelForImageTextToText, GenerationConfig, Qwen2Tokenizer
from transformers.models.qwen2.tokenization_qwen2 import PRETOKENIZE_REGEX
from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

from webgym.env.actions import tool_docs
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

_RESPONSES = [
    '<think>The search box is at the top.</think><memory>Looking for the red mug.</memory>'
    '<tool_call>{"name": "click", "arguments": {"x": 512, "y": 86}}</tool_call>',
    '<tool_call>{"name": "type", "arguments": {"text": "red mug", "submit": true}}</tool_call>',
    '<tool_call>{"name": "answer", "arguments": {"text": "42"}}</tool_call>',
]


def tiny_tokenizer(vocab_size: int = 512) -> Qwen2Tokenizer:
    """Qwen's tokenizer class over a small byte-level BPE trained here (same result every call).

    Same pre-tokenizer, special and added tokens, end-of-turn token and class name (Qwen2Tokenizer
    in tokenizer_config.json) as the real Qwen-VL tokenizers, with a 512-token vocabulary.
    """
    bpe = Tokenizer(models.BPE())
    bpe.normalizer = normalizers.NFC()
    bpe.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(PRETOKENIZE_REGEX), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIAL_TOKENS, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    bpe.train_from_iterator([tool_docs(), *_RESPONSES], trainer)
    trained = json.loads(bpe.to_str())["model"]
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in trained["merges"]]
    tokenizer = Qwen2Tokenizer(vocab=trained["vocab"], merges=merges, eos_token="<|im_end|>",
                               pad_token="<|endoftext|>")
    tokenizer.add_tokens([AddedToken(token, special=True) for token in SPECIAL_TOKENS])
    tokenizer.add_tokens(ADDED_TOKENS)
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def _tiny_config(family: str, tokenizer: Qwen2Tokenizer):
    token = tokenizer.convert_tokens_to_ids
    text = dict(vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096,
                pad_token_id=token("<|endoftext|>"), eos_token_id=token("<|im_end|>"),
                # head_dim 16: the three rotary sections (time, height, width) must sum to 16 / 2.
                rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [4, 2, 2]})
    vision = dict(depth=2, hidden_size=32, intermediate_size=64, num_heads=2, patch_size=PATCH_SIZE[family],
                  spatial_merge_size=2, temporal_patch_size=2)
    if family == "qwen3_vl":
        text.update(head_dim=16)
        text["rope_parameters"]["mrope_interleaved"] = True
        vision.update(out_hidden_size=64, num_position_embeddings=256, deepstack_visual_indexes=[1])
    elif family == "qwen2_5_vl":
        text.update(bos_token_id=None)
        vision.update(out_hidden_size=64, window_size=56, fullatt_block_indexes=[1])
    else:
        text.update(bos_token_id=None)
        vision = dict(depth=2, embed_dim=32, hidden_size=64, mlp_ratio=2, num_heads=2,
                      patch_size=PATCH_SIZE[family], spatial_merge_size=2, temporal_patch_size=2)
    return AutoConfig.for_model(
        family, text_config=text, vision_config=vision, tie_word_embeddings=False,
        image_token_id=token("<|image_pad|>"), video_token_id=token("<|video_pad|>"),
        vision_start_token_id=token("<|vision_start|>"), vision_end_token_id=token("<|vision_end|>"))


def tiny_vlm(family: str = "qwen3_vl", seed: int = 0) -> VLM:
    """A randomly initialised model of the real class (about 0.2 M parameters), with tokenizer and processor."""
    family_of(family, "tiny model")
    tokenizer = tiny_tokenizer()
    config = _tiny_config(family, tokenizer)
    torch.manual_seed(seed)
    model = AutoModelForImageTextToText.from_config(config)
    model.generation_config = GenerationConfig(
        eos_token_id=[tokenizer.convert_tokens_to_ids("<|im_end|>"), tokenizer.convert_tokens_to_ids("<|endoftext|>")],
        pad_token_id=tokenizer.pad_token_id)
    mean_std = {"image_mean": [0.5] * 3, "image_std": [0.5] * 3} if family == "qwen3_vl" else {}
    image_processor = Qwen2VLImageProcessorPil(patch_size=PATCH_SIZE[family], merge_size=2, temporal_patch_size=2,
                                               size={"shortest_edge": 32 * 32, "longest_edge": MAX_PIXELS},
                                               **mean_std)
    return VLM(model.eval(), tokenizer, make_processor(family, image_processor, tokenizer))


def write_tiny_checkpoint(path: str | Path, family: str = "qwen3_vl", seed: int = 0) -> Path:
    """Build a tiny model and save it as a checkpoint directory."""
    return save_vlm(tiny_vlm(family, seed), path)
