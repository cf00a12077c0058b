"""Load and save a vision-language checkpoint directory in Hugging Face layout.

The layout is what `transformers` and vLLM read: config.json, model.safetensors (sharded when
large), generation_config.json, tokenizer.json + tokenizer_config.json + chat_template.jinja,
preprocessor_config.json and video_preprocessor_config.json. `AutoProcessor` is not used: the
stock Qwen-VL processors demand a torchvision video processor, which cannot be installed on the
CPU machines, so the processor is assembled from `AutoTokenizer` and `AutoImageProcessor` with a
subclass that accepts `video_processor=None` (screenshots are images, never video).
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import torch
from transformers import (AutoImageProcessor, AutoModelForImageTextToText, AutoTokenizer, PreTrainedModel,
                          PreTrainedTokenizerBase, ProcessorMixin)
from transformers.models.qwen2_5_vl.processing_qwen2_5_vl import Qwen2_5_VLProcessor
from transformers.models.qwen2_vl.processing_qwen2_vl import Qwen2VLProcessor
from transformers.models.qwen3_vl.processing_qwen3_vl import Qwen3VLProcessor

from webgym.checkpoints import CheckpointError, new_checkpoint_dir

REQUIRED_FILES = ("config.json", "preprocessor_config.json", "tokenizer_config.json")
VIDEO_CONFIG = "video_preprocessor_config.json"
LEGACY_TEMPLATE = "chat_template.json"


class _ImagesOnly:
    """Accept `video_processor=None`: the stock check insists on a (torchvision) video processor."""

    def check_argument_for_proper_class(self, argument_name, argument):
        if argument_name == "video_processor" and argument is None:
            return None
        return super().check_argument_for_proper_class(argument_name, argument)


class Qwen2VLImagesProcessor(_ImagesOnly, Qwen2VLProcessor):
    """Qwen2-VL's processor for images only."""


class Qwen2_5_VLImagesProcessor(_ImagesOnly, Qwen2_5_VLProcessor):
    """Qwen2.5-VL's processor for images only."""


class Qwen3VLImagesProcessor(_ImagesOnly, Qwen3VLProcessor):
    """Qwen3-VL's processor for images only."""


@dataclass(frozen=True)
class Family:
    """What differs between the supported model classes."""

    processor: type[ProcessorMixin]
    processor_class: str
    """The stock processor's name, written into the checkpoint so that vLLM's AutoProcessor finds it."""
    video_processor_type: str


FAMILIES: dict[str, Family] = {
    "qwen2_vl": Family(Qwen2VLImagesProcessor, "Qwen2VLProcessor", "Qwen2VLVideoProcessor"),
    "qwen2_5_vl": Family(Qwen2_5_VLImagesProcessor, "Qwen2_5_VLProcessor", "Qwen2VLVideoProcessor"),
    "qwen3_vl": Family(Qwen3VLImagesProcessor, "Qwen3VLProcessor", "Qwen3VLVideoProcessor"),
}


@dataclass
class VLM:
    """A loaded model with its tokenizer and processor."""

    model: PreTrainedModel
    tokenizer: PreTrainedTokenizerBase
    processor: ProcessorMixin
    source: Path | None = None
    """Directory it was loaded from (its video processor config is carried over on save)."""

    @property
    def family(self) -> str:
        return self.model.config.model_type

    @property
    def context_length(self) -> int:
        """The model's limit on prompt plus response tokens."""
        return context_length(self.model.config)


def family_of(model_type: str, where: str) -> Family:
    if model_type not in FAMILIES:
        raise CheckpointError(f"{where}: model_type {model_type!r} is not supported; supported: {sorted(FAMILIES)}")
    return FAMILIES[model_type]


def make_processor(model_type: str, image_processor, tokenizer: PreTrainedTokenizerBase) -> ProcessorMixin:
    """The images-only processor of the model class, using the tokenizer's chat template."""
    family = family_of(model_type, "processor")
    return family.processor(image_processor=image_processor, tokenizer=tokenizer, video_processor=None,
                            chat_template=tokenizer.chat_template)


def resolve_device(device: str) -> torch.device:
    """`auto` is the GPU when there is one, else the CPU."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def resolve_dtype(dtype: str, device: torch.device) -> torch.dtype:
    """`auto` is bfloat16 on a GPU and float32 on the CPU (where bfloat16 matmuls are slow)."""
    if dtype == "auto":
        return torch.bfloat16 if device.type == "cuda" else torch.float32
    return getattr(torch, dtype)


@dataclass
class Processing:
    """A checkpoint's input side without its weights: what counts a request's tokens."""

    tokenizer: PreTrainedTokenizerBase
    processor: ProcessorMixin
    context_length: int
    """The model's limit on prompt plus response tokens (max_position_embeddings of its text model)."""


def context_length(config) -> int:
    """A Qwen-VL config's context limit: its text model's max_position_embeddings."""
    return int(getattr(config, "text_config", config).max_position_embeddings)


def _checked_dir(path: str | Path) -> tuple[Path, dict]:
    path = Path(path).expanduser().resolve()
    if not path.is_dir():
        raise CheckpointError(f"checkpoint {path} does not exist or is not a directory")
    missing = [name for name in REQUIRED_FILES if not (path / name).is_file()]
    if missing:
        raise CheckpointError(f"checkpoint {path} lacks {', '.join(missing)}: not a Hugging Face model directory")
    config = json.loads((path / "config.json").read_text(encoding="utf-8"))
    family_of(config.get("model_type"), f"checkpoint {path}")
    return path, config


def _tokenizer_and_processor(path: Path, model_type: str) -> tuple[PreTrainedTokenizerBase, ProcessorMixin]:
    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    if tokenizer.chat_template is None and (path / LEGACY_TEMPLATE).is_file():
        # Hub checkpoints saved by older transformers keep the template in the processor's file only.
        tokenizer.chat_template = json.loads((path / LEGACY_TEMPLATE).read_text(encoding="utf-8"))["chat_template"]
    if tokenizer.chat_template is None:
        raise CheckpointError(f"checkpoint {path} has no chat template (chat_template.jinja, "
                              "chat_template.json or in tokenizer_config.json)")
    image_processor = AutoImageProcessor.from_pretrained(path, local_files_only=True)
    return tokenizer, make_processor(model_type, image_processor, tokenizer)


def load_processing(path: str | Path) -> Processing:
    """The tokenizer, processor and context limit of a checkpoint directory, without loading weights."""
    path, config = _checked_dir(path)
    tokenizer, processor = _tokenizer_and_processor(path, config["model_type"])
    text = config.get("text_config", config)
    return Processing(tokenizer, processor, int(text["max_position_embeddings"]))


def load_vlm(path: str | Path, device: str = "auto", dtype: str = "auto") -> VLM:
    """Load a checkpoint directory offline; raises CheckpointError naming what is missing."""
    path, config = _checked_dir(path)
    where = resolve_device(device)
    tokenizer, processor = _tokenizer_and_processor(path, config["model_type"])
    model = AutoModelForImageTextToText.from_pretrained(path, local_files_only=True, dtype=resolve_dtype(dtype, where))
    model.to(where).eval()
    return VLM(model, tokenizer, processor, source=path)


def save_vlm(vlm: VLM, path: str | Path, state_dict: dict[str, torch.Tensor] | None = None) -> Path:
    """Write the checkpoint to a new directory atomically (a temporary sibling, then a rename).

    A half-written checkpoint never appears under `path`, so a crash mid-save cannot hand the
    policy a broken model. An existing directory is refused rather than overwritten.
    `state_dict` replaces the model's own weights (gathered ZeRO-3 shards, a bf16 copy).
    """
    path = Path(path).expanduser().resolve()
    with new_checkpoint_dir(path) as staging:
        vlm.model.save_pretrained(staging, state_dict=state_dict)
        vlm.tokenizer.save_pretrained(staging)
        vlm.processor.image_processor.save_pretrained(staging)
        _write_serving_configs(vlm, staging)
    return path


def _write_serving_configs(vlm: VLM, directory: Path) -> None:
    """What vLLM's AutoProcessor needs besides the image processor: the processor class and a video config."""
    family = family_of(vlm.family, f"checkpoint {directory}")
    image_config_path = directory / "preprocessor_config.json"
    image_config = json.loads(image_config_path.read_text(encoding="utf-8"))
    # The name every transformers version knows; 5.x picks its PIL or torchvision backend from it.
    image_config.update(image_processor_type="Qwen2VLImageProcessor", processor_class=family.processor_class)
    image_config_path.write_text(json.dumps(image_config, indent=2) + "\n", encoding="utf-8")
    if vlm.source is not None and (vlm.source / VIDEO_CONFIG).is_file():
        shutil.copyfile(vlm.source / VIDEO_CONFIG, directory / VIDEO_CONFIG)
        return
    video_config = {key: image_config[key] for key in ("patch_size", "temporal_patch_size", "merge_size",
                                                       "image_mean", "image_std")}
    video_config.update(video_processor_type=family.video_processor_type, processor_class=family.processor_class)
    (directory / VIDEO_CONFIG).write_text(json.dumps(video_config, indent=2) + "\n", encoding="utf-8")
