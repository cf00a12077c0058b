"""Chat messages -> model inputs: the loss mask covers exactly the final response, images become vision tokens."""

from __future__ import annotations

import pytest
import torch

from tests.webgym.models.conftest import CLICK, messages, png
from webgym.models.inputs import InputError, collate, encode_sample, prompt_inputs, template_messages
from webgym.models.logprobs import response_logprobs


def test_loss_mask_covers_exactly_the_final_response_and_its_end_token(tiny):
    context = messages(history=2)  # earlier assistant turns hold the very same text as the target
    assert sum(1 for m in context if m["role"] == "assistant" and m["content"] == CLICK) == 2
    sample = encode_sample(tiny, context, CLICK)
    target = tiny.tokenizer(CLICK + "<|im_end|>", add_special_tokens=False)["input_ids"]
    masked = sample.input_ids[sample.loss_mask]
    assert masked.tolist() == target
    assert sample.loss_mask[-len(target):].all() and not sample.loss_mask[:-len(target)].any()
    assert tiny.tokenizer.decode(masked) == CLICK + "<|im_end|>"
    prompt = prompt_inputs(tiny, context)["input_ids"][0]
    assert torch.equal(sample.input_ids[:-len(target)], prompt)  # the prompt exactly as the policy saw it
    assert tiny.tokenizer.decode(prompt).endswith("<|im_start|>assistant\n")


def test_images_become_vision_tokens_in_order(tiny):
    context = messages(history=2, screenshots=2)  # screenshots of the last turn and the current step
    _, images = template_messages(context)
    assert [im.getpixel((0, 0)) for im in images] == [(0, 128, 0), (0, 0, 255)]
    sample = encode_sample(tiny, context, "x")
    assert sample.image_grid_thw.shape == (2, 3)
    image_token = tiny.tokenizer.convert_tokens_to_ids("<|image_pad|>")
    expected = int(sample.image_grid_thw.prod(dim=1).sum()) // 4  # one token per 2x2 merged patch
    assert int((sample.input_ids == image_token).sum()) == expected == int(sample.mm_token_type_ids.sum())


@pytest.mark.parametrize("bad, problem", [
    ([{"role": "user", "content": [{"type": "image", "png": b"not a png"}]}], "message 0 part 0: not a readable image"),
    ([{"role": "user", "content": [{"type": "image_url", "url": "x"}]}], "message 0 part 0: expected"),
    ([{"role": "tool", "content": "x"}], "message 0: role 'tool'"),
    ([{"role": "user", "content": 7}], "message 0: content must be a string or a list"),
    (["hello"], "message 0: expected a dict"),
    ([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "x"}], "message 1: the prompt ends with"),
])
def test_bad_messages_are_named(tiny, bad, problem):
    with pytest.raises(InputError, match=problem):
        encode_sample(tiny, bad, "x")


def test_left_padded_batch_gives_each_sample_its_own_logprobs(tiny):
    samples = [encode_sample(tiny, messages(history=0), CLICK),
               encode_sample(tiny, messages(history=2), 'answer("42")'),
               encode_sample(tiny, [{"role": "user", "content": [{"type": "image", "png": png("black", (300, 500))},
                                                                 {"type": "text", "text": "tall"}]}], "ok")]
    assert len({s.length for s in samples}) == 3
    with torch.no_grad():
        logprobs, mask = response_logprobs(tiny.model, collate(samples, tiny.tokenizer.pad_token_id))
        alone = [response_logprobs(tiny.model, collate([s], tiny.tokenizer.pad_token_id)) for s in samples]
    assert mask.sum(dim=1).tolist() == [int(s.loss_mask.sum()) for s in samples]
    batched = (logprobs * mask).sum(dim=1)
    single = torch.stack([(lp * m).sum() for lp, m in alone])
    assert torch.allclose(batched, single, atol=1e-3), (batched, single)
