"""`webgym models tiny|check`: a checkpoint made, checked, and a broken one refused."""

from __future__ import annotations

from typer.testing import CliRunner

from webgym.cli import app


def _text(result) -> str:
    """The output with rich's line wrapping undone."""
    return " ".join(result.output.split())


def test_tiny_then_check(tmp_path):
    runner = CliRunner()
    made = runner.invoke(app, ["models", "tiny", str(tmp_path / "ckpt"), "--family", "qwen2_5_vl"])
    assert made.exit_code == 0, made.output
    checked = runner.invoke(app, ["models", "check", str(tmp_path / "ckpt")])
    assert checked.exit_code == 0, checked.output
    assert "Qwen2_5_VLForConditionalGeneration" in _text(checked) and "layout vLLM serves" in _text(checked)
    (tmp_path / "ckpt" / "video_preprocessor_config.json").unlink()
    broken = runner.invoke(app, ["models", "check", str(tmp_path / "ckpt")])
    assert broken.exit_code == 1 and "missing video_preprocessor_config.json" in _text(broken)
    again = runner.invoke(app, ["models", "tiny", str(tmp_path / "ckpt")])
    assert again.exit_code == 2 and "already exists" in _text(again)


def test_small_then_check(tmp_path):
    runner = CliRunner()
    made = runner.invoke(app, ["models", "small", str(tmp_path / "small")])
    assert made.exit_code == 0, made.output
    checked = runner.invoke(app, ["models", "check", str(tmp_path / "small")])
    assert checked.exit_code == 0, checked.output
    text = _text(checked)
    assert "Qwen3VLForConditionalGeneration" in text and "layout vLLM serves" in text
    millions = float(text.split(" M parameters")[0].rsplit(" ", 1)[-1])
    assert 2.0 <= millions <= 3.0, text  # the size the docs state (~2.4 M)


def test_the_small_tokenizer_writes_the_agents_text_in_few_tokens():
    from webgym.models.tiny import tiny_vlm

    response = '<tool_call>{"name": "click", "arguments": {"x": 512, "y": 86}}</tool_call>'
    task = "On Lumen Bank, when does the card on file expire?"  # a shipped site's task: 10 words
    small, tiny = tiny_vlm(size="small").tokenizer, tiny_vlm().tokenizer
    assert len(small(response)["input_ids"]) <= 30
    assert len(small(task)["input_ids"]) <= 13 < 2 * 13 < len(tiny(task)["input_ids"])  # about a token a word
