"""flows/artifacts.py: which key, label and rows an evaluation publishes under, and where the night's report
link points, with and without `webgym server` serving the reports folder."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from flows.artifacts import EVALUATION_ARTIFACTS, evaluation_rows, report_link
from flows.reports import NightlySummary
from stages.evaluate import evaluation_report
from webgym.report_server import ReportSite


def _report(held_out: list[str | None]) -> object:
    evals = pd.DataFrame({"checkpoint": "c1", "held_out": held_out, "difficulty_band": "easy",
                          "domain": "shop", "success": [True, False, True][:len(held_out)]})
    return evaluation_report(evals, 1, "scorer-3-abc")


def test_each_kind_of_evaluation_publishes_under_its_own_key_and_label():
    keys = [key for key, _ in EVALUATION_ARTIFACTS.values()]
    assert len(set(keys)) == len(keys) == 3
    assert EVALUATION_ARTIFACTS["validation"] == ("validation-success", "Validation success")
    assert "Held-out" not in EVALUATION_ARTIFACTS["validation"][1]
    assert EVALUATION_ARTIFACTS["test"][1] == "Held-out success"
    assert "evaluation-success" not in keys  # the key the kinds once shared


def test_validation_rows_have_no_held_out_kind_and_test_rows_one_per_kind():
    validation = evaluation_rows(_report([None, None, None]), "validation")
    assert [(row["by"], row["group"]) for row in validation] == [("all", "all"), ("difficulty_band", "easy")]
    assert (validation[0]["episodes"], validation[0]["successes"], validation[0]["success_rate"]) == (3, 2, 0.6667)
    test = evaluation_rows(_report(["family", "family", "site"]), "test")
    assert [(row["by"], row["group"], row["episodes"]) for row in test] == [
        ("all", "all", 3), ("held_out", "family", 2), ("held_out", "site", 1), ("difficulty_band", "easy", 3)]


def _summary(report: Path) -> NightlySummary:
    return NightlySummary(str(report.parent.parent / "data"), "w.duckdb", str(report), {}, 0)


def test_the_report_link_is_http_when_webgym_server_serves_its_folder(tmp_path):
    report = tmp_path / "reports" / "night 1" / "report.html"
    link = report_link(_summary(report), ReportSite(tmp_path / "reports", "http://127.0.0.1:4201/"))
    assert link["link"] == "http://127.0.0.1:4201/night%201/report.html"
    assert "Not served" not in link["description"]


@pytest.mark.parametrize("served", [False, True])
def test_a_report_not_served_keeps_its_file_link_and_says_how_to_serve_it(tmp_path, served):
    report = tmp_path / "reports" / "report.html"
    site = ReportSite(tmp_path / "elsewhere", "http://127.0.0.1:4201/") if served else None
    link = report_link(_summary(report), site)
    assert link["link"] == report.as_uri() and link["link_text"] == str(report)
    assert "**Not served over HTTP**" in link["description"]
    assert f"webgym --data-dir {tmp_path / 'data'} server" in link["description"]
    assert ("outside the folder" in link["description"]) is served
