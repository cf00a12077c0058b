"""`webgym ingest` and `webgym taskset build` as a user types them: per-file reports with the fields kept,
exit codes (0 all good, 1 some records bad, 2 nothing ingested), a wrong --source refused with the
right one named, --encoding, paths relative to the current directory, and a missing setting that
stops with one clear line naming the profile in use."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from tests.stages.ingest import FIXTURES
from webgym import PROJECT_ROOT
from webgym.lake import Lake

runner = CliRunner()
WEBVOYAGER = str(FIXTURES / "webvoyager" / "WebVoyager_data.jsonl")


@pytest.fixture(autouse=True)
def _no_env_lake(monkeypatch):
    monkeypatch.delenv("WEBGYM_DATA", raising=False)


def webgym(tmp_path, *args: str):
    from webgym.cli import app

    result = runner.invoke(app, ["--data-dir", str(tmp_path / "data"), *args])
    return result, " ".join(result.output.split())


def test_ingest_reports_per_file_with_the_fields_kept_and_does_not_duplicate(tmp_path):
    first, output = webgym(tmp_path, "ingest", WEBVOYAGER, str(FIXTURES / "webarena_test.raw.json"))
    assert first.exit_code == 1, output  # one broken WebVoyager line
    assert "source webvoyager (detected); PAE's proposed tasks share this layout" in output
    assert "source webarena (detected)" in output
    assert "(webvoyager): 3 read, 2 ingested, 0 already present, 1 bad" in output
    assert "fields kept: id 2/2, ques 2/2, web 2/2" in output
    assert f"bad {WEBVOYAGER}: line 3: invalid JSON" in output
    second, output = webgym(tmp_path, "ingest", str(FIXTURES / "webarena_test.raw.json"))
    assert second.exit_code == 0 and "2 read, 0 ingested, 2 already present, 0 bad" in output
    assert "seed_tasks now holds 4 rows" in output


def test_a_revised_file_adds_only_its_new_revisions(tmp_path):
    webgym(tmp_path, "ingest", WEBVOYAGER)
    result, output = webgym(tmp_path, "ingest", str(FIXTURES / "webvoyager_revised" / "WebVoyager_data_08312025.jsonl"))
    assert result.exit_code == 0, output
    assert "2 read, 1 ingested (1 new revision(s) of known ids), 1 already present, 0 bad" in output


def test_a_wrong_source_is_refused_naming_the_sources_that_fit_and_nothing_is_written(tmp_path):
    result, output = webgym(tmp_path, "ingest", "--source", "deepshop", WEBVOYAGER)
    assert result.exit_code == 2
    assert "only 0 of 2 records have the fields deepshop needs (ques+attribute+filter+sort)" in output
    assert "its records fit pae, webvoyager: pass --source webvoyager" in output
    assert Lake(tmp_path / "data").count("seed_tasks") == 0
    unknown, output = webgym(tmp_path, "ingest", str(FIXTURES / "generic_utf16.jsonl"))
    assert unknown.exit_code == 2 and "pass --source" in output


def test_nothing_ingested_exits_2(tmp_path):
    result, output = webgym(tmp_path, "ingest", "--source", "generic", "--map", "text=nope",
                            str(FIXTURES / "generic_utf16.jsonl"))
    assert result.exit_code == 2 and "2 read, 0 ingested, 0 already present, 2 bad" in output
    assert "nothing was ingested" in output


def test_encoding_names_a_legacy_files_encoding(tmp_path):
    args = ["ingest", "--source", "generic", "--map", "text=question", "--map", "website=site",
            str(FIXTURES / "generic_legacy.csv")]
    as_utf8, output = webgym(tmp_path, *args)
    assert as_utf8.exit_code == 1 and "line 2: not valid UTF-8 (byte 0xe9 at byte offset 34, line 2)" in output
    legacy, output = webgym(tmp_path, "ingest", "--encoding", "cp1252", *args[1:])
    assert legacy.exit_code == 1 and "3 read, 1 ingested, 1 already present, 1 bad" in output  # line 2 is new now
    texts = set(Lake(tmp_path / "data").read_table("seed_tasks")["text"])
    assert "Find the caf\u00e9 menu\u2019s cheapest item" in texts


def test_relative_paths_resolve_against_the_current_directory(tmp_path, monkeypatch):
    from webgym.cli import app

    (tmp_path / "tasks").mkdir()
    (tmp_path / "tasks" / "om2w.json").write_bytes((FIXTURES / "Online_Mind2Web.json").read_bytes())
    (tmp_path / "profile.yaml").write_text("profile: mine\n")
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["--config", "profile.yaml", "--data-dir", "lake", "ingest", "tasks/om2w.json"])
    assert result.exit_code == 0, result.output
    rows = Lake(tmp_path / "lake").read_table("seed_tasks")
    assert len(rows) == 2 and set(rows["source_file"]) == {str(tmp_path / "tasks" / "om2w.json")}
    assert not (PROJECT_ROOT / "lake").exists()


@pytest.mark.slow  # two runs of the command in fresh processes (Prefect starts in each)
def test_a_missing_setting_stops_with_one_line_naming_the_profile_and_no_traceback(tmp_path):
    (tmp_path / "mine.yaml").write_text(f"extends: {PROJECT_ROOT / 'configs' / 'local.yaml'}\n")
    command = [sys.executable, "-m", "webgym.cli", "--config", "mine.yaml", "--data-dir", "data", "taskset", "build",
               str(FIXTURES / "GAIA_web.jsonl")]
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT)}
    env.pop("WEBGYM_DATA", None)
    quiet = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert quiet.returncode == 2
    assert quiet.stderr.strip() == ("no LLM endpoint for purpose 'rubric': set llm.endpoints.rubric or llm.default "
                                    "in the profile (profile in use: mine.yaml)")
    assert (tmp_path / "data" / "seed_tasks").is_dir()  # the lake is where the command ran
    loud = subprocess.run([*command[:3], "-v", *command[3:]], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert loud.returncode == 2 and "Traceback" in loud.stderr and "NoEndpointError" in loud.stderr


@pytest.mark.slow  # a fresh process, under a 4 GB address-space limit
def test_an_endless_binary_stream_is_refused_in_one_line_with_no_traceback(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT)}
    env.pop("WEBGYM_DATA", None)
    done = subprocess.run(["bash", "-c", f"ulimit -v 4000000; exec {sys.executable} -m webgym.cli --data-dir data "
                                         "ingest /dev/zero"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == "/dev/zero: binary data (byte 0x00 at byte offset 0), not a task file\n"


def test_published_dates_a_file_and_decides_which_revision_is_current(tmp_path):
    revised = str(FIXTURES / "webvoyager_revised" / "WebVoyager_data_08312025.jsonl")
    assert webgym(tmp_path, "ingest", revised)[0].exit_code == 0
    result, output = webgym(tmp_path, "ingest", "--published", "2023-11-01", WEBVOYAGER)
    assert result.exit_code == 1, output  # the broken line of the fixture
    rows = Lake(tmp_path / "data").read_table("seed_tasks").sort_values("published")
    assert rows["published"].dt.year.tolist() == [2023, 2025, 2025]
    refused, output = webgym(tmp_path, "ingest", "--published", "31/08/2025", WEBVOYAGER)
    assert refused.exit_code == 2 and output == "--published takes a date as YYYY-MM-DD, not '31/08/2025'"
