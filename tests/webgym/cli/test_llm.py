"""`webgym llm cache stats|clear` on a cache filled by real calls."""

from __future__ import annotations

from typer.testing import CliRunner

from tests.webgym.llm.conftest import user
from webgym.cli import app
from webgym.llm.scripted_server import Reply

runner = CliRunner()


def test_cache_stats_and_clear(llm, server, tmp_path):
    server.add(Reply(text="ok"))
    llm.chat_sync("rubric", user("a"))
    llm.chat_sync("rubric", user("b"))
    llm.chat_sync("rubric", user("a"))
    llm.chat_sync("judge-facts", user("c"))
    profile = tmp_path / "profile.yaml"
    profile.write_text(f"llm:\n  cache_dir: {tmp_path / 'cache'}\n")

    stats = runner.invoke(app, ["--config", str(profile), "llm", "cache", "stats"])
    assert stats.exit_code == 0, stats.output
    assert "3 entries, 1 hits" in stats.output and "judge-facts" in stats.output

    cleared = runner.invoke(app, ["--config", str(profile), "llm", "cache", "clear", "--purpose", "rubric"])
    assert "removed 2 cached answer(s) for purpose 'rubric'" in cleared.output
    assert not llm.chat_sync("rubric", user("a")).cached
    assert llm.chat_sync("judge-facts", user("c")).cached
    assert "removed 2 cached answer(s)" in runner.invoke(app, ["--config", str(profile), "llm", "cache",
                                                                 "clear"]).output


def test_stats_of_a_missing_cache_creates_nothing(tmp_path):
    profile = tmp_path / "profile.yaml"
    profile.write_text(f"llm:\n  cache_dir: {tmp_path / 'none'}\n")
    result = runner.invoke(app, ["--config", str(profile), "llm", "cache", "stats"])
    assert result.exit_code == 0 and "0 entries" in result.output and not (tmp_path / "none").exists()
