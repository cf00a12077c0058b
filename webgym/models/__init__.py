"""Hugging Face vision-language models of the Qwen2-VL / Qwen2.5-VL / Qwen3-VL classes.

What the local checkpoint policy and the trainer share: loading and saving a checkpoint
directory (`checkpoint`), turning chat messages into model inputs (`inputs`), token log
probabilities (`logprobs`), sampling (`generate`) and tiny randomly initialised models for
tests (`tiny`). Importing this package does not import torch; its modules do.
"""
