"""Generation: the recorded logprob is the model's own, the quantity the trainer recomputes."""

from __future__ import annotations

import torch

from tests.webgym.models.conftest import messages
from webgym.models.generate import generate
from webgym.models.inputs import Encoded, collate, prompt_inputs
from webgym.models.logprobs import response_logprobs


def test_generation_logprob_equals_the_trainers_forward_pass(tiny):
    context = messages(history=1)
    torch.manual_seed(3)
    generation = generate(tiny, context, temperature=0.7, top_p=0.9, max_new_tokens=12)
    assert 1 <= len(generation.token_ids) <= 12 and generation.logprob < 0
    prompt = prompt_inputs(tiny, context)
    new = torch.tensor(generation.token_ids)
    ids = torch.cat([prompt["input_ids"][0], new])
    sample = Encoded(ids, torch.arange(len(ids)) >= len(ids) - len(new),
                     torch.cat([prompt["mm_token_type_ids"][0], torch.zeros_like(new)]),
                     prompt["pixel_values"], prompt["image_grid_thw"])
    with torch.no_grad():
        logprobs, mask = response_logprobs(tiny.model, collate([sample], tiny.tokenizer.pad_token_id))
    # temperature and top-p shape the sampling only: the logprob is of the untempered model
    assert abs(float((logprobs * mask).sum()) - generation.logprob) < 1e-3
    assert torch.allclose(torch.tensor(generation.token_logprobs), logprobs[mask], atol=1e-4)


def test_greedy_decoding_is_repeatable(tiny):
    first = generate(tiny, messages(), temperature=0, max_new_tokens=8)
    second = generate(tiny, messages(), temperature=0, max_new_tokens=8)
    assert first.token_ids == second.token_ids and first.text == second.text
    assert first.prompt_tokens == prompt_inputs(tiny, messages())["input_ids"].shape[1]
