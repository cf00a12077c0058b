"""Training samples in other stacks' layouts, for users who train with their own stack.

- sharegpt: LLaMA-Factory's multimodal ShareGPT layout: NAME.json, a list of {"messages": [{"role",
  "content"}], "images": [paths]} with one "<image>" where each screenshot was, the screenshots as
  images/<sha256>.png next to it, and the dataset_info.json entry LLaMA-Factory reads. Each record
  is one step: earlier turns are context, so train with `mask_history: true` (loss on the last
  assistant turn only, as here).
- hf: a Hugging Face `datasets` folder (save_to_disk) in TRL's conversational prompt-completion
  layout: prompt (messages, content as typed parts), completion (the response), images (PNG), and
  weight, advantage, old_logprob for weighted or policy-gradient objectives.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from webgym.train.samples import TrainingSample


IMAGE = "<image>"
"""LLaMA-Factory's image placeholder: one per entry of a record's images, in order."""

SHAREGPT_TAGS = {"role_tag": "role", "content_tag": "content", "user_tag": "user",
                 "assistant_tag": "assistant", "system_tag": "system"}


@dataclass(frozen=True)
class SampleExport:
    """What an export wrote."""

    path: Path
    samples: int
    images: int
    skipped: list[str] = field(default_factory=list)
    """Samples that cannot be expressed in the layout, named with why."""


def _parts(content: str | list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else content


def _sha(png: bytes) -> str:
    return hashlib.sha256(png).hexdigest()


def sharegpt_record(sample: TrainingSample) -> dict[str, Any]:
    """One ShareGPT record: each message's parts joined, an image part as "<image>"; the response as the
    last assistant turn; images as images/<sha256>.png in placeholder order; sample_id, weight, advantage."""
    messages, images = [], []
    for message in [*sample.messages, {"role": "assistant", "content": sample.response}]:
        text = []
        for part in _parts(message["content"]):
            if part["type"] == "image":
                images.append(f"images/{_sha(part['png'])}.png")
                text.append(IMAGE)
            elif IMAGE in part["text"]:
                raise ValueError(f"its text contains {IMAGE!r}, which LLaMA-Factory reads as an image placeholder")
            else:
                text.append(part["text"])
        messages.append({"role": message["role"], "content": "".join(text)})
    return {"messages": messages, "images": images, "sample_id": sample.sample_id, "weight": sample.weight,
            "advantage": sample.advantage}


def _hf_row(sample: TrainingSample) -> dict[str, Any]:
    prompt = [{"role": m["role"], "content": [{"type": p["type"], "text": p.get("text")} for p in _parts(m["content"])]}
              for m in sample.messages]
    images = [{"bytes": p["png"], "path": None} for m in sample.messages for p in _parts(m["content"])
              if p["type"] == "image"]
    return {"sample_id": sample.sample_id, "prompt": prompt,
            "completion": [{"role": "assistant", "content": [{"type": "text", "text": sample.response}]}],
            "images": images, "weight": sample.weight, "advantage": sample.advantage,
            "old_logprob": sample.old_logprob}


def _into(out: Path, write: Callable[[Path], None]) -> None:
    """Build the export in a hidden sibling folder, then move it to `out` whole (refusing a non-empty one)."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise FileExistsError(f"{out} exists and is not an empty folder; choose a new output folder")
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        write(tmp)
        if out.exists():
            out.rmdir()
        os.replace(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def write_sharegpt(samples: list[TrainingSample], out: Path, name: str) -> SampleExport:
    """out/NAME.json, out/images/*.png and out/dataset_info.json for LLaMA-Factory (dataset_dir: out).

    LLaMA-Factory's SFT has no per-sample weight or advantage, so samples with either (reinforce,
    grpo) are refused: export those as hf."""
    weighted = [s.sample_id for s in samples if s.weight != 1.0 or s.advantage != 0.0]
    if weighted:
        raise ValueError(f"{len(weighted)} sample(s) carry a weight or an advantage (e.g. {weighted[0]}), which "
                         f"LLaMA-Factory's SFT ignores; export them with --format hf")
    records, skipped, pngs = [], [], {}
    for sample in samples:
        try:
            records.append(sharegpt_record(sample))
        except ValueError as error:
            skipped.append(f"{sample.sample_id}: {error}")
            continue
        pngs.update({_sha(p["png"]): p["png"] for m in sample.messages for p in _parts(m["content"])
                     if p["type"] == "image"})
    info = {name: {"file_name": f"{name}.json", "formatting": "sharegpt",
                   "columns": {"messages": "messages", "images": "images"}, "tags": SHAREGPT_TAGS}}

    def write(folder: Path) -> None:
        (folder / "images").mkdir()
        for sha, png in pngs.items():
            (folder / "images" / f"{sha}.png").write_bytes(png)
        (folder / f"{name}.json").write_text(json.dumps(records, ensure_ascii=False), encoding="utf-8")
        (folder / "dataset_info.json").write_text(json.dumps(info, indent=2), encoding="utf-8")

    _into(out, write)
    return SampleExport(out, len(records), len(pngs), skipped)


def write_hf_dataset(samples: list[TrainingSample], out: Path, name: str) -> SampleExport:
    """A `datasets` folder at out (datasets.load_from_disk reads it), one row per sample."""
    from datasets import Dataset, Features, Image, List, Value

    part = {"type": Value("string"), "text": Value("string")}
    message = {"role": Value("string"), "content": List(part)}
    features = Features({"sample_id": Value("string"), "prompt": List(message), "completion": List(message),
                         "images": List(Image()), "weight": Value("float64"), "advantage": Value("float64"),
                         "old_logprob": Value("float64")})
    rows = [_hf_row(s) for s in samples]
    dataset = Dataset.from_list(rows, features=features)
    dataset.info.description = f"WebGym training samples {name}"
    _into(out, lambda folder: dataset.save_to_disk(str(folder)))
    return SampleExport(out, len(rows), sum(len(r["images"]) for r in rows))


SAMPLE_FORMATS: dict[str, Callable[[list[TrainingSample], Path, str], SampleExport]] = {
    "sharegpt": write_sharegpt, "hf": write_hf_dataset}
"""Sample export layouts by --format name."""
