"""`webgym sites ...` as a user types it."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from webgym.cli import app
from tests.webgym.sites.conftest import mini_spec, write

runner = CliRunner()


@pytest.fixture
def profile(tmp_path):
    """A profile whose site specs are the mini spec alone."""
    (tmp_path / "specs").mkdir()
    write(tmp_path / "specs", "mini.yaml", mini_spec())
    return write(tmp_path, "profile.yaml", {"sites": {"specs_dir": str(tmp_path / "specs"), "reports_dir": str(tmp_path / "shots"),
                                                      "cache_dir": str(tmp_path / "cache")}})


@pytest.mark.parametrize("command", [["sites"], ["sites", "serve"], ["sites", "list"], ["sites", "paths"],
                                     ["sites", "verify"], ["sites", "export-tasks"]])
def test_every_sites_command_has_help(command):
    result = runner.invoke(app, [*command, "--help"])
    assert result.exit_code == 0 and "Usage" in result.output


def test_list_prints_one_site_a_line_with_its_goals_by_band(shipped):
    result = runner.invoke(app, ["sites", "list"])
    lines = result.output.splitlines()
    assert result.exit_code == 0 and len(lines) == len(shipped)
    acct = shipped["acct-a"]
    bands = [acct.band(goal.id) for goal in acct.spec.goals]
    assert lines[0].split() == ["acct-a", "acct-a.test", "account", str(len(bands)), "goals:",
                                f"{bands.count('easy')}", "easy,", f"{bands.count('medium')}", "medium,",
                                f"{bands.count('hard')}", "hard"]


def test_paths_prints_each_goal_and_its_steps(profile):
    result = runner.invoke(app, ["--config", str(profile), "sites", "paths", "mini", "--subsets"])
    assert result.exit_code == 0, result.output
    assert "buy-cheap-mug (4 facts, medium, limit 20): 7 steps" in result.output
    assert '   6. checkout(who="Ada")' in result.output and '   7. answer(text="Done.")' in result.output
    assert "buy-cheap-mug groups [0] (3 facts, easy, limit 10)" in result.output  # decomposed goal
    unknown = runner.invoke(app, ["--config", str(profile), "sites", "paths", "nope"])
    assert unknown.exit_code == 2 and "unknown site(s) nope; sites are mini" in unknown.output


def test_invalid_specs_stop_the_command_with_their_location(profile, tmp_path):
    broken = mini_spec()
    broken["nav"] = ["missing"]
    write(tmp_path / "specs", "mini.yaml", broken)
    result = runner.invoke(app, ["--config", str(profile), "sites", "list"])
    assert result.exit_code == 2 and "nav[0]: unknown action 'missing'" in result.output


def test_export_tasks_writes_the_jsonl(profile, tmp_path):
    out = tmp_path / "goals.jsonl"
    result = runner.invoke(app, ["--config", str(profile), "sites", "export-tasks", str(out)])
    assert result.exit_code == 0 and "wrote 2 task(s)" in result.output
    assert [json.loads(line)["goal_id"] for line in out.read_text().splitlines()] == ["buy-cheap-mug", "kettle-price"]


def test_verify_replays_the_sites_of_the_profile_and_searches_only_once(profile):
    result = runner.invoke(app, ["--config", str(profile), "sites", "verify"])
    assert result.exit_code == 0, result.output
    assert "2/2 oracle paths confirmed in Chromium on 1 site(s)" in result.output
    assert "2 of 2 path(s) searched" in result.output
    again = runner.invoke(app, ["--config", str(profile), "sites", "verify"])
    assert again.exit_code == 0 and "0 of 2 path(s) searched, the rest from the cache" in again.output


def test_export_rephrase_without_an_llm_endpoint_names_the_setting(profile, tmp_path):
    result = runner.invoke(app, ["--config", str(profile), "--data-dir", str(tmp_path / "data"), "sites",
                                 "export-tasks", str(tmp_path / "goals.jsonl"), "--rephrase"])
    assert result.exit_code == 1 and "site-tasks" in result.output and "llm.default" in result.output
    assert not (tmp_path / "goals.jsonl").exists()
