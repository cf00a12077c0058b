"""Training Hugging Face vision-language policies on accepted steps: filtered BC, SFT, REINFORCE, GRPO.

`samples` defines what the trainer eats, `config` how it trains, `objectives` the losses,
`engine` the optimiser (plain torch or DeepSpeed ZeRO) and `trainer` the loop that writes a
checkpoint the local policy and vLLM load. Importing this package does not import torch.
"""
