"""`webgym sites ...` as a user types it."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from webgym import PROJECT_ROOT
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
                                     ["sites", "verify"], ["sites", "export-tasks"], ["sites", "write"]])
def test_every_sites_command_has_help(command):
    result = runner.invoke(app, [*command, "--help"])
    assert result.exit_code == 0 and "Usage" in result.output


def test_list_prints_family_site_goals_and_status_of_every_site_of_the_world(shipped):
    result = runner.invoke(app, ["--config", str(PROJECT_ROOT / "configs" / "ci.yaml"), "sites", "list"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()  # a cold world's progress lines go to stderr
    rows = {line.split()[1]: line for line in lines[:-1]}
    assert set(shipped) < set(rows) and "cinema-g0" in rows and len(rows) >= 12 + 20  # one generated site a family
    acct = shipped["acct-a"]
    bands = [acct.band(goal.id) for goal in acct.spec.goals]
    assert rows["acct-a"].split() == ["account", "acct-a", "acct-a.test", str(len(bands)), "goals:",
                                      f"{bands.count('easy')}", "easy,", f"{bands.count('medium')}", "medium,",
                                      f"{bands.count('hard')}", "hard", "train"]
    assert rows["cinema-g0"].endswith("held out (family)") and rows["shop-b"].endswith("held out (site)")
    families = {line.split()[0] for line in rows.values()}
    assert len(families) >= 20 and lines[-1].startswith(f"{len(rows)} site(s) of {len(families)} families")
    assert lines[-1].endswith("0 left out")


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
    result = runner.invoke(app, ["--config", str(profile), "sites", "paths", "mini"])
    assert result.exit_code == 2 and "nav[0]: unknown action 'missing'" in result.output
    listed = runner.invoke(app, ["--config", str(profile), "sites", "list"])  # the world leaves it out, named
    assert listed.exit_code == 1 and "left out" in listed.output and "nav[0]: unknown action 'missing'" in listed.output


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


def test_write_saves_the_family_the_llm_repaired_and_reports_the_rejected_answer(server, tmp_path):
    from tests.webgym.sites.conftest import tip_jar
    from tests.webgym.sites.test_writer import BROKEN, fenced
    from webgym.llm.scripted_server import Reply

    server.add(Reply(text=fenced(BROKEN)), times=1)
    server.add(Reply(text=fenced(tip_jar())), contains="could not be used")
    families = tmp_path / "families"
    profile = write(tmp_path, "profile.yaml", {
        "llm": {"default": [{"base_url": server.base_url, "model": "scripted"}], "cache": False},
        "sites": {"cache_dir": str(tmp_path / "cache"), "world": {"families_dir": str(families)}}})
    result = runner.invoke(app, ["--config", str(profile), "--data-dir", str(tmp_path / "data"), "sites", "write",
                                 "a tip jar with a thank-you switch", "--replay-goals", "0"])
    assert result.exit_code == 0, result.output
    assert "answer 1 rejected:" in result.output and "unknown variable 'tipz'" in result.output
    assert f"family tipjar written to {families / 'tipjar.yaml'} (answer 2 of 3" in result.output
    offline = write(tmp_path, "offline.yaml", {"sites": {"world": {"families_dir": str(tmp_path / "none")}}})
    refused = runner.invoke(app, ["--config", str(offline), "--data-dir", str(tmp_path / "data"), "sites", "write",
                                  "a tip jar"])
    assert refused.exit_code == 1 and "llm.endpoints.sites" in refused.output and not (tmp_path / "none").exists()


@pytest.mark.slow
def test_the_embedded_world_has_100_sites_of_20_families_and_2000_goals_with_4_families_held_out():
    result = runner.invoke(app, ["--config", str(PROJECT_ROOT / "configs" / "local.yaml"), "sites", "list"])
    assert result.exit_code == 0, result.output
    rows = [line for line in result.stdout.splitlines() if line.endswith(("train", ")"))]
    summary = next(line for line in result.stdout.splitlines() if " site(s) of " in line)
    families = {row.split()[0] for row in rows}
    whole = {row.split()[0] for row in rows if row.endswith("held out (family)")}
    assert len(rows) >= 100 and len(families) >= 20 and len(whole) >= 4
    assert int(summary.split(" goals")[0].split()[-1]) >= 2000
    assert any(row.endswith("held out (site)") and "-g4" in row for row in rows)  # a site of a training family
