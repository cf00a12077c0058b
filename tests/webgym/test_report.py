"""`webgym report`: the HTML page a researcher opens after a night, parsed back and checked against what was planted."""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import re
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from schemas.accepted import AcceptedStep
from schemas.checkpoints import Checkpoint
from schemas.evals import Eval
from schemas.judgments import Judgment
from schemas.llm_calls import LlmCall
from schemas.promotions import Promotion
from schemas.steps import Action, Element, Step
from schemas.tasks import Task
from schemas.trajectories import Trajectory
from tests.conftest import NIGHT, NOW, night_runs, rows, rubric, steps_frame, tasks_frame, trajectories_frame
from webgym.cli import app
from webgym.stats import wilson_interval

runner = CliRunner()
PLOT_SECTIONS = ["heldout-success", "against-warm-start", "decisions-by-kind", "training-success", "training", "wall-time", "same-screenshot", "episode-length",
                 "task-set", "llm-calls", "throughput"]
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
        self.ids: list[str] = []
        self.provenance = ""
        self._provenance = False
        self._section: str | None = None
        self._table: str | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if "id" in attrs:
            self.ids.append(attrs["id"])
        if tag == "section":
            self._section = attrs["id"]
            self.images[self._section], self.text[self._section] = [], ""
        elif tag == "img":
            self.images[self._section].append(attrs["src"])
        elif tag == "script":
            self.scripts += 1
        elif tag == "p" and attrs.get("id") == "provenance":
            self._provenance = True
        elif tag == "table":
            self._table = attrs["id"]
            self.tables[self._table] = []
        elif tag == "tr" and self._table:
            self.tables[self._table].append([])
        elif tag in ("td", "th") and self._table:
            self._cell = []

    def handle_endtag(self, tag):
        if tag == "p":
            self._provenance = False
        if tag == "section":
            self._section = None
        elif tag == "table":
            self._table = None
        elif tag in ("td", "th") and self._cell is not None:
            self.tables[self._table][-1].append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data):
        if self._provenance:
            self.provenance += data
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


def labelled_steps() -> pd.DataFrame:
    """Two steps the oracle labelled in the first held-out episode of the warm start (ck0) and of ck1: a toggle
    (ck0 clicks the link instead), then "Done." (both answer it)."""
    page = [Element(mark=1, tag="input", role="checkbox", text="Newsletter", x=10, y=10, width=20, height=20),
            Element(mark=2, tag="a", role="link", text="Settings", x=10, y=50, width=80, height=20)]
    toggle, link, done = (Action(name="click", mark=1), Action(name="click", mark=2),
                          Action(name="answer", text="Done."))
    made = {"eck000": [link, done], "eck110": [toggle, done]}
    return rows([Step(trajectory_id=tid, t=t, elements=page, page_text="Settings", actions=[action],
                      expert_actions=[[toggle, done][t]])
                 for tid, actions in made.items() for t, action in enumerate(actions)])


def _eval_lake(lake) -> None:
    """The conftest frames (iteration 0 training) plus, per iteration 0, 1 and 2, four held-out evaluation
    episodes (two easy, two hard) over 8 s with 2 steps each, LLM calls and a checkpoint; iteration 2's
    checkpoint was kept back, so iteration 2 evaluated ck1 again."""
    lake.write_table("tasks", pd.concat([tasks_frame(), rows([
        Task(task_id="t4", source="synthetic", source_id="g4", text="Find the forum rules", website="forum-b.test",
             domain="social", difficulty=2, split="test", rubric=rubric(2), created_at=NOW)])]))
    lake.write_table("steps", pd.concat([steps_frame(), labelled_steps()]))
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
                   metrics={"train/loss": 2.0 - i, "train/accuracy": 0.5 + i / 4, "train/seconds": 30.0 + i},
                   created_at=NOW) for i in (0, 1, 2)]))
    lake.write_table("promotions", rows([
        Promotion(checkpoint_id=f"ck{i}", iteration=i, promoted=i < 2, evaluation="scorer-valid", episodes=4,
                  success_rate=[0.25, 0.5, 0.25][i], served_checkpoint=[None, "ck0", "ck1"][i],
                  served_success_rate=[None, 0.25, 0.5][i], reason="kept back" if i == 2 else "promoted",
                  decided_at=NOW) for i in (0, 1, 2)]))
    # The training episodes r0-r2 of iteration 0: r0 and r2 succeed, judged a minute apart; r0's two steps kept.
    lake.write_table("judgments", rows([
        Judgment(judgment_id=f"j{i}", trajectory_id=f"r{i}", judge="exact", status="judged", success=i != 1,
                 reward=float(i != 1), judged_at=NOW + dt.timedelta(minutes=i)) for i in range(3)]))
    lake.write_table("accepted", rows([AcceptedStep(trajectory_id="r0", t=t, iteration=0, objective="filtered_bc",
                                                    reason="success", weight=1.0) for t in (0, 1)]))
    lake.write_table("runs", night_runs(profile="ci", seed=3, commit="abc123"))  # the night's flow runs


def test_report_plots_every_section_and_its_tables_hold_the_planted_figures(lake, tmp_path):
    _eval_lake(lake)
    out = tmp_path / "out" / "night.html"
    result = runner.invoke(app, ["--data-dir", lake.root, "report", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == str(out.resolve())
    report = _parse(out)

    assert report.scripts == 0
    assert len(report.ids) == len(set(report.ids))  # every anchor and table id names one element
    for section in PLOT_SECTIONS:
        assert len(report.images[section]) == 1, section
        source = report.images[section][0]
        assert source.startswith("data:image/png;base64,"), section  # embedded, nothing fetched
        assert base64.b64decode(source.split(",", 1)[1]).startswith(PNG_MAGIC), section
    assert not any("no data yet" in text for text in report.text.values())

    heldout = _records(report.tables["heldout-success-by-kind"])
    assert [(r["point"], r["held_out"], r["episodes"], r["successes"]) for r in heldout] == [
        ("untrained", "all", "4", "0"), ("untrained", "family", "2", "0"), ("untrained", "site", "2", "0"),
        ("it0 warm start", "all", "4", "1"), ("it0 warm start", "family", "2", "0"), ("it0 warm start", "site", "2", "1"),
        ("it1", "all", "4", "3"), ("it1", "family", "2", "1"), ("it1", "site", "2", "2"),
        ("it2 kept it1", "all", "4", "2"), ("it2 kept it1", "family", "2", "0"),
        ("it2 kept it1", "site", "2", "2")]  # "other" is not mixed in
    assert (float(heldout[6]["ci_low"]), float(heldout[6]["ci_high"])) == pytest.approx(wilson_interval(3, 4), abs=1e-3)
    assert [r["evaluation"] for r in _records(report.tables["other-evaluations"])] == ["scorer-1-def"]
    # the warm start solved t4's first episode; it1 also t4's second and t3's first, it2 t4's second only
    paired = {(r["point"], r["held_out"]): (r["paired"], r["warm_start_successes"], r["successes"], r["gained"],
                                            r["lost"]) for r in _records(report.tables["against-warm-start-by-kind"])}
    assert paired == {("it1", "all"): ("4", "1", "3", "2", "0"), ("it1", "family"): ("2", "0", "1", "1", "0"),
                      ("it1", "site"): ("2", "1", "2", "1", "0"), ("it2 kept it1", "all"): ("4", "1", "2", "1", "0"),
                      ("it2 kept it1", "family"): ("2", "0", "0", "0", "0"),
                      ("it2 kept it1", "site"): ("2", "1", "2", "1", "0")}
    decisions = {(r["point"], r["kind"]): (r["decisions"], r["matched"])
                 for r in _records(report.tables["decisions-by-kind-table"])}
    assert decisions == {("it0 warm start", "all"): ("2", "1"), ("it0 warm start", "done"): ("1", "1"),
                         ("it0 warm start", "toggle"): ("1", "0"), ("it1", "all"): ("2", "2"),
                         ("it1", "done"): ("1", "1"), ("it1", "toggle"): ("1", "1")}
    by_band = {(r["point"], r["difficulty_band"]): float(r["success_rate"])
               for r in _records(report.tables["heldout-success-by-band"])}
    assert by_band == {("untrained", "easy"): 0.0, ("untrained", "hard"): 0.0, ("it0 warm start", "easy"): 0.5,
                       ("it0 warm start", "hard"): 0.0, ("it1", "easy"): 1.0, ("it1", "hard"): 0.5,
                       ("it2 kept it1", "easy"): 1.0, ("it2 kept it1", "hard"): 0.0}

    throughput = {(r["iteration"], r["purpose"], r["policy_version"]): (
        r["episodes"], r["steps"], r["wall_s"], r["episodes_per_s"], r["steps_per_s"])
        for r in _records(report.tables["rollout-throughput"])}
    assert throughput[("1", "evaluation", "ck1")][:2] == ("5", "9")  # ck1's 4 episodes (8 steps) and the other one
    # the untrained policy and ck0, evaluated 1 h apart: each over its own 8 s, not both over the hour between
    assert throughput[("0", "evaluation", "init")] == ("4", "8", "8", "0.5", "1")
    assert throughput[("0", "evaluation", "ck0")] == ("4", "8", "8", "0.5", "1")
    assert throughput[("0", "train", "v0")] == ("3", "6", "0", "", "")  # no wall time: no rate, no crash

    assert [(r["iteration"], r["steps"], float(r["same_screenshot_rate"]))
            for r in _records(report.tables["same-screenshot-rate"])] == [("0", "2", 0.5)]
    assert {r["split"]: (r["tasks"], r["websites"]) for r in _records(report.tables["tasks-by-split"])} == {
        "train": ("2", "1"), "test": ("2", "2")}
    assert {r["purpose"]: r["calls"] for r in _records(report.tables["llm-cost-by-purpose"])} == {
        "judge-facts": "1", "rubric": "2"}
    assert [(r["checkpoint_id"], float(r["train/loss"])) for r in _records(report.tables["checkpoints-table"])] == [
        ("ck0", 2.0), ("ck1", 1.0), ("ck2", 0.0)]
    assert [(r["checkpoint_id"], r["promoted"]) for r in _records(report.tables["promotions-table"])] == [
        ("ck0", "True"), ("ck1", "True"), ("ck2", "False")]
    assert {r["table_name"]: r["row_count"] for r in _records(report.tables["table-rows"])}["trajectories"] == "20"

    training = _records(report.tables["rollout-success"])
    assert [(r["iteration"], r["purpose"], r["trajectories"], r["successes"]) for r in training] == [
        ("0", "train", "3", "2")]  # the evaluation episodes are not mixed in
    assert (float(training[0]["ci_low"]), float(training[0]["ci_high"])) == pytest.approx(wilson_interval(2, 3),
                                                                                            abs=1e-3)
    assert [(r["checkpoint_id"], float(r["loss"]), float(r["accuracy"]))
            for r in _records(report.tables["training-metrics"])] == [("ck0", 2.0, 0.5), ("ck1", 1.0, 0.75),
                                                                   ("ck2", 0.0, 1.0)]
    assert [(r["iteration"], r["objective"], r["steps"], r["trajectories"])
            for r in _records(report.tables["accepted-steps"])] == [("0", "filtered_bc", "2", "1")]
    wall = {r["iteration"]: (r["rollout_s"], r["judge_s"], r["train_s"], r["validation_s"], r["serve_s"],
                             r["evaluation_s"]) for r in _records(report.tables["stage-wall-time"])}
    assert wall == {"0": ("10", "2", "30", "18", "2", "60"), "1": ("80", "8", "12", "30", "1", "30")}
    assert {r["stage"]: (r["calls"], r["cost_usd"]) for r in _records(report.tables["llm-cost-by-stage"])} == {
        "judge": ("1", "0.001"), "task set": ("2", "0.002")}
    # the provenance is the runs' own, not the report command's (its profile is local, its checkout another)
    assert re.fullmatch(rf"profile ci · seed 3 · commit abc123 \({len(NIGHT)} flow runs\) · lake {re.escape(lake.root)} · "
                        r"generated \d{4}-\d\d-\d\d \d\d:\d\d UTC", report.provenance)
    assert [(r["run_name"], r["flow_run_id"], r["profile"], r["seed"], r["commit"], r["outcome"])
            for r in _records(report.tables["runs-table"])] == [("nightly-ci", "n", "ci", "3", "abc123", "completed")]


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


@pytest.mark.slow
def test_tables_fit_the_page_in_a_browser(lake, tmp_path):
    from playwright.async_api import async_playwright

    from webgym.browser import launch_browser

    _eval_lake(lake)
    lake.replace_table("checkpoints", lake.read_table("checkpoints").assign(path="/shared/" + "x" * 400))
    out = tmp_path / "report.html"
    assert runner.invoke(app, ["--data-dir", lake.root, "report", "--out", str(out)]).exit_code == 0

    async def widths() -> tuple[int, int]:
        async with async_playwright() as playwright:
            browser = await launch_browser(playwright)
            page = await browser.new_page(viewport={"width": 1200, "height": 800})
            await page.set_content(out.read_text(encoding="utf-8"))
            measured = await page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
            await browser.close()
            return tuple(measured)

    scroll_width, viewport = asyncio.run(widths())
    assert scroll_width <= viewport


@pytest.mark.slow
def test_a_night_without_training_signal_is_its_own_point_named_by_the_policy_it_kept(lake, tmp_path):
    _eval_lake(lake)
    start = NOW + dt.timedelta(hours=5)  # iteration 3 trained no checkpoint: ck1 stayed served and was evaluated
    lake.write_table("trajectories", rows([Trajectory(
        trajectory_id=f"n{i}", task_id="t4", iteration=3, purpose="evaluation", policy="scorer", policy_version="ck1",
        horizon=10, n_steps=1, termination="answered", started_at=start, ended_at=start) for i in range(2)]))
    lake.write_table("evals", rows([Eval(
        trajectory_id=f"n{i}", evaluation="scorer-2-abc", iteration=3, checkpoint="ck1", split="test", held_out="site",
        task_id="t4", difficulty_band="easy", success=i == 0, evaluated_at=start) for i in range(2)]))
    out = tmp_path / "night.html"
    assert runner.invoke(app, ["--data-dir", lake.root, "report", "--out", str(out)]).exit_code == 0
    heldout = _records(_parse(out).tables["heldout-success-by-kind"])
    assert [(r["point"], r["episodes"]) for r in heldout if r["held_out"] == "all"] == [
        ("untrained", "4"), ("it0 warm start", "4"), ("it1", "4"), ("it2 kept it1", "4"), ("it3 no signal, it1", "2")]
