"""README's promises: a short user's manual whose two commands exist, whose `webgym` commands and options
exist, whose links resolve, and whose test command is the one CI runs."""

from __future__ import annotations

import re
import shlex

import pytest
from typer.testing import CliRunner

from webgym import PROJECT_ROOT
from webgym.cli import app

README = (PROJECT_ROOT / "README.md").read_text()
GLOBAL_OPTIONS = {"--config", "--data-dir"}
"""Options of `webgym` itself, which take a value and come before the command."""


def _code_blocks() -> list[str]:
    return re.findall(r"```[a-z]*\n(.*?)```", README, re.S)


def _readme_commands() -> list[str]:
    """The lines of README's first block of setup commands: the main job, then the test command."""
    block = next(block for block in _code_blocks() if block.startswith("bash scripts/setup.sh"))
    return [line for line in block.splitlines() if line and not line.startswith("#")]


def _webgym_lines() -> list[list[str]]:
    """Every `webgym` command line of README's code blocks, as words, comments and environment cut off."""
    found = []
    for block in _code_blocks():
        for line in block.splitlines():
            words = shlex.split(line.split("  #")[0])
            for i, word in enumerate(words):
                if word.endswith("bin/webgym") or word == "webgym":
                    found.append(words[i + 1:])
                    break
    return found


def _command_and_options(words: list[str]) -> tuple[list[str], list[str]]:
    """(the command path, e.g. ["judge", "run"]; the --options the line passes to it)."""
    rest = list(words)
    while rest and rest[0] in GLOBAL_OPTIONS:
        rest = rest[2:]
    path = []
    while rest and re.fullmatch(r"[a-z][a-z-]*", rest[0]):
        path.append(rest.pop(0))
    return path, [word.split("=")[0] for word in rest if word.startswith("--")]


def test_readme_opens_with_the_main_job_and_the_test_command():
    main, tests = _readme_commands()[:2]
    assert main.startswith("bash scripts/setup.sh") and "webgym nightly" in main
    assert tests.startswith("bash scripts/setup.sh") and "pytest" in tests


def test_ci_runs_the_readme_test_command_then_the_slow_tier():
    ci = (PROJECT_ROOT / ".ci" / "run").read_text()
    readme_tests = _readme_commands()[1]
    assert readme_tests in ci
    assert ".venv/bin/python -m pytest -m slow" in ci.split(readme_tests, 1)[1]


def test_readme_is_a_manual_not_a_lab_notebook():
    assert len(README.splitlines()) <= 250
    hashes = [word for word in re.findall(r"\b[0-9a-f]{7,40}\b", README) if re.search(r"[a-f]", word)
              and re.search(r"\d", word)]
    assert hashes == [], "README cites commits; figures and their commits belong in benchmarks/RESULTS.md"
    assert not re.search(r"\bissue \d+|#\d+\b", README)


def test_readme_links_resolve():
    links = re.findall(r"\]\(([^)#]+)\)", README)
    assert links
    missing = [link for link in links if not link.startswith("http") and not (PROJECT_ROOT / link).exists()]
    assert missing == []


@pytest.mark.parametrize("words", _webgym_lines(), ids=lambda words: " ".join(words)[:60])
def test_readme_webgym_commands_and_their_options_exist(words, tmp_path):
    path, options = _command_and_options(words)
    lake = ["--data-dir", str(tmp_path)]  # under CliRunner sys.argv lacks --help: a writing command takes the lock
    result = CliRunner().invoke(app, [*lake, *path, "--help"], env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    assert [option for option in options if option not in result.output] == []
