"""Checkpoint directories: the Hugging Face layout vLLM and the local policy load, offline, atomically written."""

from __future__ import annotations

import json

import pytest
import torch

from tests.webgym.models.conftest import messages
from webgym.models.checkpoint import CheckpointError, load_vlm, save_vlm
from webgym.models.inputs import prompt_inputs
from webgym.models.tiny import tiny_vlm, write_tiny_checkpoint

LAYOUT = {"config.json", "generation_config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
          "chat_template.jinja", "preprocessor_config.json", "video_preprocessor_config.json"}


def test_tiny_checkpoint_has_the_serving_layout_and_reloads_the_same_weights(tiny_checkpoint, tiny):
    assert LAYOUT <= {p.name for p in tiny_checkpoint.iterdir()}
    config = json.loads((tiny_checkpoint / "config.json").read_text())
    assert config["architectures"] == ["Qwen3VLForConditionalGeneration"] and config["model_type"] == "qwen3_vl"
    image = json.loads((tiny_checkpoint / "preprocessor_config.json").read_text())
    video = json.loads((tiny_checkpoint / "video_preprocessor_config.json").read_text())
    assert image["processor_class"] == video["processor_class"] == "Qwen3VLProcessor"
    assert video["video_processor_type"] == "Qwen3VLVideoProcessor" and video["patch_size"] == image["patch_size"] == 16
    assert type(tiny.model).__name__ == "Qwen3VLForConditionalGeneration"
    assert json.loads((tiny_checkpoint / "tokenizer_config.json").read_text())["tokenizer_class"] == "Qwen2Tokenizer"
    assert tiny.tokenizer.eos_token == "<|im_end|>" and "<|image_pad|>" in tiny.tokenizer.chat_template
    built = tiny_vlm(seed=0).model.state_dict()
    loaded = tiny.model.state_dict()
    assert built.keys() == loaded.keys()
    assert all(torch.equal(built[name], loaded[name]) for name in built)


@pytest.mark.parametrize("family, architecture", [("qwen2_5_vl", "Qwen2_5_VLForConditionalGeneration"),
                                                  ("qwen2_vl", "Qwen2VLForConditionalGeneration")])
def test_other_qwen_vl_classes_build_save_load_and_see_images(tmp_path, family, architecture):
    vlm = load_vlm(write_tiny_checkpoint(tmp_path / family, family))
    assert type(vlm.model).__name__ == architecture
    inputs = prompt_inputs(vlm, messages())
    assert inputs["image_grid_thw"].shape == (1, 3)
    with torch.no_grad():
        logits = vlm.model(**inputs).logits
    assert logits.shape == (1, inputs["input_ids"].shape[1], len(vlm.tokenizer))


def test_load_names_what_is_wrong(tmp_path, tiny_checkpoint):
    with pytest.raises(CheckpointError, match="does not exist"):
        load_vlm(tmp_path / "nowhere")
    (tmp_path / "half").mkdir()
    (tmp_path / "half" / "config.json").write_text(json.dumps({"model_type": "qwen3_vl"}))
    with pytest.raises(CheckpointError, match="lacks preprocessor_config.json, tokenizer_config.json"):
        load_vlm(tmp_path / "half")
    other = tmp_path / "llama"
    other.mkdir()
    for name in ("config.json", "preprocessor_config.json", "tokenizer_config.json"):
        (other / name).write_bytes((tiny_checkpoint / name).read_bytes())
    (other / "config.json").write_text(json.dumps({"model_type": "llama"}))
    with pytest.raises(CheckpointError, match=r"model_type 'llama' is not supported; supported: \['qwen2_5_vl'"):
        load_vlm(other)


def test_chat_template_from_the_legacy_processor_file(tmp_path, tiny_checkpoint):
    copy = tmp_path / "legacy"
    copy.mkdir()
    for source in tiny_checkpoint.iterdir():
        (copy / source.name).write_bytes(source.read_bytes())
    template = (copy / "chat_template.jinja").read_text()
    (copy / "chat_template.jinja").unlink()
    (copy / "chat_template.json").write_text(json.dumps({"chat_template": template}))
    assert load_vlm(copy).tokenizer.chat_template == template
    (copy / "chat_template.json").unlink()
    with pytest.raises(CheckpointError, match="has no chat template"):
        load_vlm(copy)


def test_save_is_atomic_and_never_overwrites(tmp_path, tiny, monkeypatch):
    with pytest.raises(CheckpointError, match="already exists"):
        save_vlm(tiny, tmp_path)

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(tiny.tokenizer, "save_pretrained", broken)
    with pytest.raises(OSError, match="disk full"):
        save_vlm(tiny, tmp_path / "ckpt")
    assert list(tmp_path.iterdir()) == []  # neither the checkpoint nor its staging directory
