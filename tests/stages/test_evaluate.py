"""stages/evaluate.py: which evals rows a resumed evaluation still writes."""

from __future__ import annotations

import pandas as pd

from stages.evaluate import unrecorded


def test_unrecorded_rows_are_those_whose_trajectory_has_no_evals_row_yet():
    rows = pd.DataFrame({"trajectory_id": ["r0", "r1", "r2"], "success": [True, False, True]})
    new = unrecorded(rows, pd.DataFrame({"trajectory_id": ["r1", "elsewhere"]}))
    pd.testing.assert_frame_equal(new, rows.iloc[[0, 2]])
    assert unrecorded(rows, pd.DataFrame({"trajectory_id": pd.Series([], dtype=object)})).equals(rows)


def test_evaluation_rows_fit_the_evals_table_and_leave_unjudged_episodes_out():
    from schemas import schema_for
    from stages.evaluate import evaluation_rows
    from tests.conftest import NOW, tasks_frame, trajectories_frame

    verdicts = pd.DataFrame({"trajectory_id": ["r0", "r2"], "success": [True, False]})
    rows = evaluation_rows(trajectories_frame(), verdicts, tasks_frame(), "scorer-2-abc", NOW)
    assert rows.columns.tolist() == schema_for("evals").columns
    assert rows[["trajectory_id", "split", "difficulty_band", "success"]].values.tolist() == [
        ["r0", "train", "easy", True], ["r2", "test", "hard", False]]
    assert schema_for("evals").to_arrow(rows).num_rows == 2  # the lake accepts them as they are


def test_the_kind_of_an_evaluation_follows_its_split_and_whether_a_checkpoint_was_given():
    from stages.evaluate import evaluation_kind

    assert evaluation_kind("validation", "/ckpt/it1") == "validation"
    assert evaluation_kind("validation", None) == "validation"
    assert evaluation_kind("test", "/ckpt/it1") == "test"
    assert evaluation_kind("test", None) == "baseline"
