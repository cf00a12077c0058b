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
