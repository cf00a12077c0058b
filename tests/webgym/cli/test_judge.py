"""`webgym judge run`, `agreement`, `blocklist` and `unblock` as a user types them."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import pandas as pd
import pytest
from typer.testing import CliRunner

from flows.judge import judge_iteration, list_blocked_websites
from tests.conftest import tasks_frame, trajectories_frame
from webgym.cli import app
from webgym.config import load_config
from webgym.lake import Lake

runner = CliRunner()


@pytest.mark.parametrize("command", [["judge"], ["judge", "run"], ["judge", "agreement"], ["judge", "blocklist"],
                                     ["judge", "unblock"]])
def test_judge_commands_have_help(command):
    result = runner.invoke(app, [*command, "--help"])
    assert result.exit_code == 0 and "Usage" in result.output


def _profile(tmp_path) -> str:
    path = tmp_path / "profile.yaml"
    path.write_text(f"lake:\n  data_dir: {tmp_path / 'data'}\nllm:\n  cache_dir: {tmp_path / 'cache'}\n")
    return str(path)


def _seed(tmp_path) -> Lake:
    lake = Lake(tmp_path / "data")
    tasks = tasks_frame()
    tasks["reference_answer"] = ["red mug", "red mug", None]
    trajectories = trajectories_frame()
    trajectories["answer"] = ["I bought the red mug", "the blue mug", "done"]
    lake.write_table("tasks", tasks)
    lake.write_table("trajectories", trajectories)
    return lake


@pytest.mark.slow  # a fresh Prefect ephemeral server: 10-25 s on 2 cores
def test_run_judges_an_iteration_through_the_flow_and_reports(tmp_path):
    lake = _seed(tmp_path)
    done = subprocess.run([sys.executable, "-m", "webgym.cli", "--config", _profile(tmp_path), "judge", "run",
                           "--iteration", "0"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "iteration 0: 3 trajectories" in done.stdout
    assert "reference: 1 failure" in done.stdout and "reference: 1 success" in done.stdout
    assert "rubric skipped" in done.stdout and "no LLM endpoint for judge-keypoints" in done.stdout
    assert "passed their data-quality suites" in done.stdout
    judged = lake.read_table("judgments").set_index("trajectory_id")
    assert judged.loc["r0", "success"] and not judged.loc["r1", "success"] and "r2" not in judged.index


def test_run_refuses_a_named_judge_without_endpoint_before_any_work(tmp_path):
    _seed(tmp_path)
    result = runner.invoke(app, ["--config", _profile(tmp_path), "judge", "run", "--iteration", "0",
                                 "--judge", "rubric"])
    assert result.exit_code == 2 and "needs an LLM endpoint" in result.output and "llm.endpoints" in result.output


def test_agreement_prints_every_judge_and_reports_bad_labels(tmp_path):
    lake = _seed(tmp_path)
    judge_iteration.fn(load_config(_profile(tmp_path)), iteration=0)
    labels = tmp_path / "labels.csv"
    labels.write_text("trajectory_id,success\nr0,1\nr1,1\nr2,?\n")
    result = runner.invoke(app, ["--config", _profile(tmp_path), "judge", "agreement", str(labels),
                                 "--format", "csv"])
    assert result.exit_code == 0, result.output
    table = pd.read_csv(io.StringIO(result.stdout[result.stdout.index("judge,"):]))
    assert table["judge"].tolist() == ["reference", "verdicts"]
    assert table.loc[0, ["judged", "tp", "fn", "accuracy", "recall"]].tolist() == [2, 1, 1, 0.5, 0.5]
    assert "labels.csv, line 4: success '?'" in " ".join(result.output.split()) and lake.count("judgments") == 2
    missing = runner.invoke(app, ["--config", _profile(tmp_path), "judge", "agreement", str(tmp_path / "no.csv")])
    assert missing.exit_code == 2 and "not found" in missing.output


def test_blocklist_shows_the_evidence_and_unblock_clears_a_website(tmp_path):
    lake = Lake(tmp_path / "data")
    trajectories = trajectories_frame().assign(termination="blocked", answer=None,
                                               error=["HTTP 403 Forbidden", "a CAPTCHA page", "HTTP 429"])
    lake.write_table("tasks", tasks_frame().assign(source="webvoyager"))
    lake.write_table("trajectories", trajectories)
    config = load_config(_profile(tmp_path))
    assert list_blocked_websites.fn(config) == ["shop-a.test"]  # t1 and t2; mail-b.test only in t3
    shown = runner.invoke(app, ["--config", _profile(tmp_path), "judge", "blocklist", "--format", "json"])
    assert shown.exit_code == 0, shown.output
    (row,) = json.loads(shown.output)
    assert (row["website"], row["reason"], row["tasks"], row["trajectory_ids"]) == ("shop-a.test", "blocked", 2,
                                                                                     ["r0", "r1"])
    assert row["evidence"] == "2 blocked episode(s) from 2 task(s): HTTP 403 Forbidden; a CAPTCHA page"
    cleared = runner.invoke(app, ["--config", _profile(tmp_path), "judge", "unblock", "shop-a.test"])
    assert cleared.exit_code == 0 and "cleared from the blocklist: shop-a.test" in cleared.output
    after = runner.invoke(app, ["--config", _profile(tmp_path), "judge", "blocklist", "--format", "json"])
    assert json.loads(after.output) == []
    everything = runner.invoke(app, ["--config", _profile(tmp_path), "judge", "blocklist", "--all", "--format", "csv"])
    assert "shop-a.test" in everything.output
    assert list_blocked_websites.fn(config) == []  # the evidence it was listed on no longer counts
    unknown = runner.invoke(app, ["--config", _profile(tmp_path), "judge", "unblock", "nowhere.example"])
    assert unknown.exit_code == 2 and "not on the blocklist: nowhere.example" in unknown.output
