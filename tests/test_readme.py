"""README's promises: its two commands exist, and CI runs its test command exactly."""

from __future__ import annotations

import re

from webgym import PROJECT_ROOT


def _readme_commands() -> list[str]:
    text = (PROJECT_ROOT / "README.md").read_text()
    block = re.search(r"```(?:bash|sh)?\n(.*?)```", text, re.S).group(1)
    return [line for line in block.splitlines() if line and not line.startswith("#")]


def test_readme_opens_with_the_main_job_and_the_test_command():
    main, tests = _readme_commands()[:2]
    assert main.startswith("bash scripts/setup.sh") and "webgym nightly" in main
    assert tests.startswith("bash scripts/setup.sh") and "pytest" in tests


def test_ci_runs_the_readme_test_command_exactly():
    ci = (PROJECT_ROOT / ".ci" / "run").read_text().strip().splitlines()[-1]
    assert ci == _readme_commands()[1]
