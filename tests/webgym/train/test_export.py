"""Training samples exported for LLaMA-Factory (ShareGPT) and Hugging Face datasets, read back."""

from __future__ import annotations

import json

import datasets
import pandas as pd
import pytest
from typer.testing import CliRunner

from schemas.judgments import Judgment
from schemas.steps import Action, Step
from schemas.trajectories import Trajectory
from webgym.train.export import IMAGE, sharegpt_record, write_hf_dataset, write_sharegpt
from tests.conftest import NOW, rows, tasks_frame
from tests.webgym.models.conftest import png
from webgym.cli import app
from webgym.config import ContextConfig
from webgym.policies.context import prompt_version
from webgym.train.samples import TrainingSample

CLICK = '<memory>on the shop</memory><tool_call>{"name": "click", "arguments": {"x": 40, "y": 35}}</tool_call>'
ANSWER = '<tool_call>{"name": "answer", "arguments": {"text": "red mug"}}</tool_call>'


def _sample(sample_id: str, colors: tuple[str, ...] = ("red",), **kwargs) -> TrainingSample:
    """System, one earlier turn, then the current observation with one screenshot per color."""
    images = [{"type": "image", "png": png(c, (64, 48))} for c in colors]
    messages = [{"role": "system", "content": "You browse."},
                {"role": "user", "content": [{"type": "text", "text": "Step 1"}]},
                {"role": "assistant", "content": CLICK},
                {"role": "user", "content": [{"type": "text", "text": "Step 2"}, *images]}]
    return TrainingSample(messages, ANSWER, sample_id=sample_id, **kwargs)


def test_sharegpt_export_reads_back_with_every_image_in_place(tmp_path):
    samples = [_sample("a:1", ("red", "blue")), _sample("b:1", ("red",))]  # the red screenshot is shared
    result = write_sharegpt(samples, tmp_path / "out", "webgym_sft_iter0")
    info = json.loads((tmp_path / "out" / "dataset_info.json").read_text())
    assert info == {"webgym_sft_iter0": {
        "file_name": "webgym_sft_iter0.json", "formatting": "sharegpt",
        "columns": {"messages": "messages", "images": "images"},
        "tags": {"role_tag": "role", "content_tag": "content", "user_tag": "user", "assistant_tag": "assistant",
                 "system_tag": "system"}}}
    records = json.loads((tmp_path / "out" / info["webgym_sft_iter0"]["file_name"]).read_text())
    assert (result.samples, result.images) == (2, 2) and len(records) == 2
    for record, sample in zip(records, samples, strict=True):
        assert [m["role"] for m in record["messages"]] == ["system", "user", "assistant", "user", "assistant"]
        assert sum(m["content"].count(IMAGE) for m in record["messages"]) == len(record["images"])
        assert record["messages"][-1]["content"] == sample.response and record["messages"][2]["content"] == CLICK
        assert record["messages"][3]["content"] == "Step 2" + IMAGE * len(record["images"])
        shown = [p["png"] for p in sample.messages[-1]["content"] if p["type"] == "image"]
        assert [(tmp_path / "out" / path).read_bytes() for path in record["images"]] == shown
        assert (record["sample_id"], record["weight"], record["advantage"]) == (sample.sample_id, 1.0, 0.0)
    as_read = datasets.load_dataset("json", data_files=str(tmp_path / "out" / "webgym_sft_iter0.json"),
                                    split="train", cache_dir=str(tmp_path / "cache"))  # how LLaMA-Factory reads it
    assert as_read["images"] == [r["images"] for r in records] and as_read[0]["messages"] == records[0]["messages"]


def test_sharegpt_refuses_weights_and_skips_text_that_looks_like_a_placeholder(tmp_path):
    with pytest.raises(ValueError, match="--format hf"):
        write_sharegpt([_sample("a:1", advantage=-0.5)], tmp_path / "rl", "x")
    tricky = _sample("b:2")
    tricky.messages[1]["content"][0]["text"] = f"a page that says {IMAGE}"
    with pytest.raises(ValueError, match="placeholder"):
        sharegpt_record(tricky)
    result = write_sharegpt([_sample("a:1"), tricky], tmp_path / "out", "x")
    assert result.samples == 1 and result.skipped[0].startswith("b:2: ")
    assert len(json.loads((tmp_path / "out" / "x.json").read_text())) == 1
    with pytest.raises(FileExistsError, match="not an empty folder"):
        write_sharegpt([_sample("a:1")], tmp_path / "out", "x")


def test_hf_export_loads_back_with_datasets(tmp_path):
    samples = [_sample("a:1", ("red", "blue"), advantage=0.75, old_logprob=-3.5), _sample("b:1", weight=2.0)]
    result = write_hf_dataset(samples, tmp_path / "hf", "webgym_grpo_iter3")
    loaded = datasets.load_from_disk(str(tmp_path / "hf"))
    assert (len(loaded), result.samples, result.images) == (2, 2, 3)
    first = loaded[0]
    assert first["completion"] == [{"role": "assistant", "content": [{"type": "text", "text": ANSWER}]}]
    assert first["prompt"][0] == {"role": "system", "content": [{"type": "text", "text": "You browse."}]}
    assert first["prompt"][3]["content"] == [{"type": "text", "text": "Step 2"}, {"type": "image", "text": None},
                                             {"type": "image", "text": None}]
    assert [im.getpixel((0, 0)) for im in first["images"]] == [(255, 0, 0), (0, 0, 255)]
    assert (first["advantage"], first["old_logprob"], loaded[1]["weight"], loaded[1]["old_logprob"]) == (
        0.75, -3.5, 2.0, None)
    for row in loaded:
        parts = [p for m in row["prompt"] for p in m["content"]]
        assert sum(p["type"] == "image" for p in parts) == len(row["images"])


def _lake_with_episodes(lake) -> None:
    """Iteration 0: a chat success (two steps), a chat failure and an oracle success on t1."""
    version = prompt_version(ContextConfig())
    shots = {c: lake.put_blob(png(c, (64, 48))) for c in ("red", "green", "blue")}
    trajectories, steps, judgments = [], [], []
    for tid, policy, success in [("win", "chat", True), ("lost", "chat", False), ("oracle", "oracle", True)]:
        trajectories.append(Trajectory(trajectory_id=tid, task_id="t1", iteration=0, policy=policy,
                                       policy_version="v", prompt_version=version if policy == "chat" else None,
                                       horizon=10, n_steps=2, termination="answered", started_at=NOW, ended_at=NOW))
        click = Action(name="click", x=40.0, y=35.0, ok=True, feedback="Succeed: clicked.")
        steps += [Step(trajectory_id=tid, t=0, screenshot_sha256=shots["red"], url="http://shop-a.test/",
                       title="Shop", response=CLICK, memory="on the shop", actions=[click], feedback=click.feedback),
                  Step(trajectory_id=tid, t=1, screenshot_sha256=shots["green" if success else "blue"],
                       url="http://shop-a.test/2", title="Shop", response=ANSWER,
                       actions=[Action(name="answer", text="red mug", ok=True)])]
        judgments.append(Judgment(judgment_id=tid, trajectory_id=tid, judge="exact", status="judged",
                                  success=success, reward=float(success), judged_at=NOW))
    for name, frame in [("tasks", tasks_frame()), ("trajectories", rows(trajectories)), ("steps", rows(steps)),
                        ("judgments", rows(judgments))]:
        lake.write_table(name, frame)


def _export(lake, out, *args: str):
    return CliRunner().invoke(app, ["--data-dir", lake.root, "export-samples", "--iteration", "0", *args, str(out)])


def test_cli_exports_the_steps_accept_selects_when_none_are_stored(lake, tmp_path, monkeypatch):
    monkeypatch.delenv("WEBGYM_DATA", raising=False)
    _lake_with_episodes(lake)
    result = _export(lake, tmp_path / "sg", "--format", "sharegpt", "--objective", "filtered_bc")
    assert result.exit_code == 0, result.output
    assert "selected 4 step(s) now" in result.output and "4 sample(s) with 2 image(s)" in result.output
    assert "mask_history: true" in result.output
    records = json.loads((tmp_path / "sg" / "webgym_filtered_bc_iter0.json").read_text())
    assert sorted(r["sample_id"] for r in records) == ["oracle:0", "oracle:1", "win:0", "win:1"]
    oracle = next(r for r in records if r["sample_id"] == "oracle:0")
    assert oracle["messages"][-1]["content"] == '<tool_call>{"name": "click", "arguments": {"x": 40.0, "y": 35.0}}' \
                                                '</tool_call>'
    refused = _export(lake, tmp_path / "rl", "--format", "sharegpt", "--objective", "reinforce")
    assert refused.exit_code == 2 and "--format hf" in refused.output


def test_cli_exports_stored_accepted_rows_with_their_advantages(lake, tmp_path, monkeypatch):
    monkeypatch.delenv("WEBGYM_DATA", raising=False)
    _lake_with_episodes(lake)
    lake.write_table("accepted", pd.DataFrame({
        "trajectory_id": ["lost", "win"], "t": [1, 1], "iteration": [0, 0], "objective": ["grpo", "grpo"],
        "reason": ["group advantage"] * 2, "weight": [1.0, 1.0], "advantage": [-1.0, 1.0]}))
    result = _export(lake, tmp_path / "hf", "--format", "hf", "--objective", "grpo")
    assert result.exit_code == 0, result.output
    assert "selected" not in result.output and "2 sample(s) with 2 image(s)" in result.output
    loaded = datasets.load_from_disk(str(tmp_path / "hf"))
    assert dict(zip(loaded["sample_id"], loaded["advantage"], strict=True)) == {"lost:1": -1.0, "win:1": 1.0}
    assert _export(lake, tmp_path / "none", "--objective", "sft").exit_code == 0  # sft: selected now
    assert _export(lake, tmp_path / "bad", "--format", "csv").exit_code == 2
