"""Agreement of judges with human labels: the metrics, the latest judgment per pair, fail-closed
errors, and a labels file with bad rows."""

from __future__ import annotations

import pandas as pd
import pytest

from schemas.judgments import Judgment
from stages.judge.agreement import LabelError, agreement, read_labels
from tests.conftest import NOW


def row(trajectory_id: str, judge: str, success: bool, status: str = "judged", minutes: int = 0) -> dict:
    return Judgment(judgment_id=f"{trajectory_id}-{judge}-{minutes}", trajectory_id=trajectory_id, judge=judge,
                    status=status, success=success, reward=float(success), rationale="",
                    judged_at=NOW + pd.Timedelta(minutes=minutes)).model_dump()


def test_every_judge_is_scored_side_by_side_on_its_latest_judgments():
    labels = pd.DataFrame({"trajectory_id": ["a", "b", "c", "d", "e"], "success": [True, True, False, False, True]})
    judgments = pd.DataFrame([
        row("a", "rubric", True), row("b", "rubric", False), row("c", "rubric", False), row("d", "rubric", False),
        row("b", "rubric", True, minutes=5),  # a rejudge: the latest row counts
        row("a", "task_only", True), row("b", "task_only", True), row("c", "task_only", True),
        row("d", "task_only", False, status="error"), row("e", "task_only", False),
        row("z", "task_only", True),  # not labelled: ignored
    ])
    verdicts = pd.DataFrame([row("a", "rubric", True), row("c", "gate", False, status="gated")])
    table = agreement(labels, judgments, verdicts).set_index("judge")
    assert table.index.tolist() == ["rubric", "task_only", "verdicts"]
    rubric, task_only = table.loc["rubric"], table.loc["task_only"]
    assert (rubric["judged"], rubric["tp"], rubric["fp"], rubric["fn"], rubric["tn"]) == (4, 2, 0, 0, 2)
    assert rubric["accuracy"] == 1.0 and rubric["precision"] == 1.0 and rubric["recall"] == 1.0
    assert (task_only["judged"], task_only["errors"], task_only["tp"], task_only["fp"], task_only["fn"],
            task_only["tn"]) == (5, 1, 2, 1, 1, 1)
    assert task_only["accuracy"] == pytest.approx(3 / 5) and task_only["precision"] == pytest.approx(2 / 3)
    assert task_only["recall"] == pytest.approx(2 / 3) and task_only["f1"] == pytest.approx(2 / 3)
    assert table.loc["verdicts", "judged"] == 2 and table.loc["verdicts", "labelled"] == 5


def test_undefined_scores_stay_empty():
    labels = pd.DataFrame({"trajectory_id": ["a"], "success": [False]})
    table = agreement(labels, pd.DataFrame([row("a", "rubric", False)]), pd.DataFrame([row("a", "rubric", False)]))
    assert table.loc[0, "accuracy"] == 1.0
    assert pd.isna(table.loc[0, "precision"]) and pd.isna(table.loc[0, "recall"]) and pd.isna(table.loc[0, "f1"])


def test_labels_file_bad_rows_are_reported_with_their_line(tmp_path):
    path = tmp_path / "labels.csv"
    path.write_text("trajectory_id,success,note\nr0,yes,\nr1,maybe,\n,true,\nr0,false,again\nr2,NOT SUCCESS,\n")
    labels = read_labels(path)
    assert labels.frame.to_dict("list") == {"trajectory_id": ["r0", "r2"], "success": [True, False]}
    assert [bad.split(": ", 1)[0] for bad in labels.bad] == [f"{path}, line {n}" for n in (3, 4, 5)]
    assert "'maybe'" in labels.bad[0] and "already labelled on line 2" in labels.bad[2]
    (tmp_path / "wrong.csv").write_text("id,label\nr0,1\n")
    with pytest.raises(LabelError, match=r"missing column\(s\) \['success', 'trajectory_id'\]"):
        read_labels(tmp_path / "wrong.csv")
    with pytest.raises(LabelError, match="not found"):
        read_labels(tmp_path / "nope.csv")
