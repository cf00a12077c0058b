"""`webgym report`: the HTML page a researcher opens after a night, parsed back and checked against what was planted."""

from __future__ import annotations

import base64
import datetime as dt
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from schemas.checkpoints import Checkpoint
from schemas.evals import Eval
from schemas.llm_calls import LlmCall
from schemas.promotions import Promotion
from schemas.tasks import Task
from schemas.trajectories import Trajectory
from tests.conftest import NOW, rows, rubric, steps_frame, tasks_frame, trajectories_frame
from webgym.cli import app
from webgym.stats import wilson_interval

runner = CliRunner()
PLOT_SECTIONS = ["heldout-success", "same-screenshot", "episode-length", "task-set", "llm-calls", "throughput"]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(autouse=True)
def _no_env_lake(monkeypatch):
    monkeypatch.delenv("WEBGYM_DATA", raising=False)


class ReportParser(HTMLParser):
    """Sections by id with their image sources, texts and tables (table id -> rows of cell texts)."""

    def __init__(self) -> None:
        super().__init__()
        self.images: dict[str, list[str]] = {}
        self.text: dict[str, str] = {}
        self.tables: dict[str, list[list[str]]] = {}
        self.scripts = 0
        self._section: str | None = None
        self._table: str | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "section":
            self._section = attrs["id"]
            self.images[self._section], self.text[self._section] = [], ""
        elif tag == "img":
            self.images[self._section].append(attrs["src"])
        elif tag == "script":
            self.scripts += 1
        elif tag == "table":
            self._table = attrs["id"]
            self.tables[self._table] = []
        elif tag == "tr" and self._table:
            self.tables[self._table].append([])
        elif tag in ("td", "th") and self._table:
            self._cell = []

    def handle_endtag(self, tag):
        if tag == "section":
            self._section = None
        elif tag == "table":
            self._table = None
        elif tag in ("td", "th") and self._cell is not None:
            self.tables[self._table][-1].append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)
        if self._section:
            self.text[self._section] += data


def _parse(path: Path) -> ReportParser:
    parser = ReportParser()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


def _records(table: list[list[str]]) -> list[dict[str, str]]:
    header, *body = table
    return [dict(zip(header, row)) for row in body]


def _eval_lake(lake) -> None:
    """The conftest frames (iteration 0 training) plus, per iteration 0, 1 and 2, four held-out evaluation
    episodes (two easy, two hard) over 8 s with 2 steps each, LLM calls and a checkpoint; iteration 2's
    checkpoint was kept back, so iteration 2 evaluated ck1 again."""
    lake.write_table("tasks", pd.concat([tasks_frame(), rows([
        Task(task_id="t4", source="synthetic", source_id="g4", text="Find the forum rules", website="forum-b.test",
             domain="social", difficulty=2, split="test", rubric=rubric(2), created_at=NOW)])]))
    lake.write_table("steps", steps_frame())
    # easy, easy on an unseen site; hard, hard on an unseen family. "init" is the untrained policy (no checkpoint).
    successes = {("init", 0): [False] * 4, ("ck0", 0): [True, False, False, False],
                 ("ck1", 1): [True, True, True, False], ("ck1", 2): [True, True, False, False]}
    episodes, evals = [], []
    for n, ((checkpoint, iteration), outcomes) in enumerate(successes.items()):
        start = NOW + dt.timedelta(hours=n)
        for i, success in enumerate(outcomes):
            task, band, kind = ("t4", "easy", "site") if i < 2 else ("t3", "hard", "family")
            tid = f"e{checkpoint}{iteration}{i}"
            episodes.append(Trajectory(
                trajectory_id=tid, task_id=task, iteration=iteration, policy="scorer", policy_version=checkpoint,
                horizon=10, n_steps=2, termination="answered", started_at=start + dt.timedelta(seconds=2 * i),
                ended_at=start + dt.timedelta(seconds=2 * i + 2)))
            evals.append(Eval(trajectory_id=tid, evaluation="scorer-2-abc", iteration=iteration, checkpoint=checkpoint,
                              split="test", held_out=kind, task_id=task, difficulty_band=band, success=success,
                              evaluated_at=start))
    episodes.append(Trajectory(trajectory_id="other", task_id="t4", iteration=1, policy="scorer", policy_version="ck1",
                               horizon=10, n_steps=1, termination="answered", started_at=NOW, ended_at=NOW))
    evals.append(Eval(trajectory_id="other", evaluation="scorer-1-def", iteration=1, checkpoint="ck1", split="test",
                      held_out="site", task_id="t4", difficulty_band="easy", success=True, evaluated_at=NOW))
    lake.write_table("trajectories", pd.concat([trajectories_frame().assign(purpose="train"), rows(episodes)]))
    lake.write_table("evals", rows(evals))
    lake.write_table("llm_calls", rows([
        LlmCall(call_id=f"c{i}", request_hash=f"h{i}", endpoint="http://127.0.0.1:9/v1", model="gpt-4o-mini",
                purpose=purpose, tokens_in=100, tokens_out=10, cost_usd=0.001, latency_s=0.5, cached=False,
                called_at=NOW)
        for i, purpose in enumerate(["rubric", "rubric", "judge-facts"])]))
    lake.write_table("checkpoints", rows([
        Checkpoint(checkpoint_id=f"ck{i}", iteration=i, path=f"/ckpt/{i}", objective="filtered_bc",
                   metrics={"train/loss": 2.0 - i}, created_at=NOW) for i in (0, 1, 2)]))
    lake.write_table("promotions", rows([
        Promotion(checkpoint_id=f"ck{i}", iteration=i, promoted=i < 2, evaluation="scorer-valid", episodes=4,
                  success_rate=[0.25, 0.5, 0.25][i], served_checkpoint=[None, "ck0", "ck1"][i],
                  served_success_rate=[None, 0.25, 0.5][i], reason="kept back" if i == 2 else "promoted",
                  decided_at=NOW) for i in (0, 1, 2)]))


def test_report_plots_every_section_and_its_tables_hold_the_planted_figures(lake, tmp_path):
    _eval_lake(lake)
    out = tmp_path / "out" / "night.html"
    result = runner.invoke(app, ["--data-dir", lake.root, "report", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == str(out.resolve())
    report = _parse(out)

    assert report.scripts == 0
    for section in PLOT_SECTIONS:
        assert len(report.images[section]) == 1, section
        source = report.images[section][0]
        assert source.startswith("data:image/png;base64,"), section  # embedded, nothing fetched
        assert base64.b64decode(source.split(",", 1)[1]).startswith(PNG_MAGIC), section
    assert not any("no data yet" in text for text in report.text.values())

    heldout = _records(report.tables["heldout-success"])
    assert [(r["point"], r["held_out"], r["episodes"], r["successes"]) for r in heldout] == [
        ("untrained", "all", "4", "0"), ("untrained", "family", "2", "0"), ("untrained", "site", "2", "0"),
        ("it0 warm start", "all", "4", "1"), ("it0 warm start", "family", "2", "0"), ("it0 warm start", "site", "2", "1"),
        ("it1", "all", "4", "3"), ("it1", "family", "2", "1"), ("it1", "site", "2", "2"),
        ("it2 kept it1", "all", "4", "2"), ("it2 kept it1", "family", "2", "0"),
        ("it2 kept it1", "site", "2", "2")]  # "other" is not mixed in
    assert (float(heldout[6]["ci_low"]), float(heldout[6]["ci_high"])) == pytest.approx(wilson_interval(3, 4), abs=1e-3)
    assert [r["evaluation"] for r in _records(report.tables["other-evaluations"])] == ["scorer-1-def"]
    by_band = {(r["point"], r["difficulty_band"]): float(r["success_rate"])
               for r in _records(report.tables["heldout-success-by-band"])}
    assert by_band == {("untrained", "easy"): 0.0, ("untrained", "hard"): 0.0, ("it0 warm start", "easy"): 0.5,
                       ("it0 warm start", "hard"): 0.0, ("it1", "easy"): 1.0, ("it1", "hard"): 0.5,
                       ("it2 kept it1", "easy"): 1.0, ("it2 kept it1", "hard"): 0.0}

    throughput = {(r["iteration"], r["purpose"]): (r["episodes"], r["steps"], r["wall_s"], r["episodes_per_s"],
                                                   r["steps_per_s"])
                  for r in _records(report.tables["rollout-throughput"])}
    assert throughput[("1", "evaluation")][:2] == ("5", "9")  # ck1's 4 episodes (8 steps) and the other one
    assert throughput[("0", "evaluation")] == ("8", "16", "3608", "0.002217", "0.004435")  # untrained and ck0, 1 h apart
    assert throughput[("0", "train")] == ("3", "6", "0", "", "")  # no wall time: no rate, no crash

    assert [(r["iteration"], r["steps"], float(r["same_screenshot_rate"]))
            for r in _records(report.tables["same-screenshot-rate"])] == [("0", "2", 0.5)]
    assert {r["split"]: (r["tasks"], r["websites"]) for r in _records(report.tables["tasks-by-split"])} == {
        "train": ("2", "1"), "test": ("2", "2")}
    assert {r["purpose"]: r["calls"] for r in _records(report.tables["llm-cost-by-purpose"])} == {
        "judge-facts": "1", "rubric": "2"}
    assert [(r["checkpoint_id"], float(r["train/loss"])) for r in _records(report.tables["checkpoints"])] == [
        ("ck0", 2.0), ("ck1", 1.0), ("ck2", 0.0)]
    assert [(r["checkpoint_id"], r["promoted"]) for r in _records(report.tables["promotions"])] == [
        ("ck0", "True"), ("ck1", "True"), ("ck2", "False")]
    assert {r["table_name"]: r["row_count"] for r in _records(report.tables["table-rows"])}["trajectories"] == "20"


def test_empty_lake_gives_no_data_sections_at_the_default_path(lake, tmp_path):
    result = runner.invoke(app, ["--data-dir", lake.root, "report"])
    assert result.exit_code == 0, result.output
    path = tmp_path / "reports" / "report.html"  # beside the lake's folder tmp_path/data
    assert result.output.strip() == str(path.resolve())
    report = _parse(path)
    for section in [*PLOT_SECTIONS, "checkpoints"]:
        assert "no data yet" in report.text[section], section
        assert report.images[section] == [], section
    assert set(_records(report.tables["table-rows"])[0]) == {"table_name", "row_count"}


def test_report_on_a_missing_lake_says_so(tmp_path):
    result = runner.invoke(app, ["--data-dir", str(tmp_path / "nowhere"), "report"])
    assert result.exit_code == 2 and "no lake at" in result.output
    assert not (tmp_path / "reports").exists()
