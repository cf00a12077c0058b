"""Quality suites: a clean lake passes; each kind of bad row is caught and named."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.conftest import steps_frame, tasks_frame, trajectories_frame
from webgym import quality


def _fill(lake, tasks=None, trajectories=None, steps=None):
    lake.write_table("tasks", tasks_frame() if tasks is None else tasks)
    lake.write_table("trajectories", trajectories_frame() if trajectories is None else trajectories)
    lake.write_table("steps", steps_frame() if steps is None else steps)


def test_clean_lake_passes(lake):
    _fill(lake)
    assert quality.validate(lake) == []


def test_duplicate_task_id_is_named(lake):
    _fill(lake)
    lake.write_table("tasks", tasks_frame().iloc[[2]])
    (violation,) = quality.validate(lake, ["tasks"])
    assert "expect_column_values_to_be_unique(column=task_id)" in violation.check
    assert violation.unexpected == 2 and {"task_id": "t3"} in violation.examples


def test_split_leak_is_named(lake):
    tasks = tasks_frame()
    tasks.loc[2, "website"] = "shop-a.test"  # the test task now shares a website with training tasks
    _fill(lake, tasks=tasks)
    (violation,) = quality.validate(lake, ["tasks"])
    assert "expect_column_values_to_not_be_in_set(column=website" in violation.check
    assert {e["task_id"] for e in violation.examples} == {"t1", "t2"}


def test_an_external_world_is_split_by_task_family_not_by_its_one_host(lake):
    import pandas as pd

    from tests.conftest import NOW
    from webgym.sites import miniwob

    external = pd.DataFrame([miniwob.task_row("click-tab", 0, "Click on Tab #2.", NOW),
                             miniwob.task_row("read-table", 1000, "Enter the value of Color.", NOW)])
    external = external.assign(split=["test", "train"], held_out=["external", None],
                               family=["miniwob/click-tab", "miniwob/read-table"])
    _fill(lake, tasks=pd.concat([tasks_frame(), external], ignore_index=True))
    assert quality.validate(lake, ["tasks"]) == []
    lake.write_table("tasks", external.iloc[[1]].assign(task_id="miniwob/click-tab-2/1000", family="miniwob/click-tab"))
    (violation,) = quality.validate(lake, ["tasks"])
    assert "expect_column_values_to_not_be_in_set(column=family" in violation.check
    assert violation.examples == [{"task_id": "miniwob/click-tab-2/1000", "family": "miniwob/click-tab"}]


def test_decomposed_task_in_another_split_than_its_parent(lake):
    tasks = tasks_frame()
    tasks.loc[1, ["split", "website"]] = ["test", "other.test"]
    _fill(lake, tasks=tasks)
    checks = {v.check: v for v in quality.validate(lake, ["tasks"])}
    (violation,) = [v for c, v in checks.items() if "column_A=split" in c]
    assert violation.examples[0]["task_id"] == "t2"


def test_difficulty_must_equal_number_of_facts(lake):
    tasks = tasks_frame()
    tasks.loc[0, "difficulty"] = 4
    _fill(lake, tasks=tasks)
    (violation,) = quality.validate(lake, ["tasks"])
    assert "column_A=difficulty, column_B=rubric_facts" in violation.check
    assert violation.examples[0]["task_id"] == "t1"


def test_step_without_its_trajectory_is_named(lake):
    steps = steps_frame()
    steps.loc[3, "trajectory_id"] = "ghost"
    _fill(lake, steps=steps)
    (violation,) = quality.validate(lake, ["steps"])
    assert "expect_column_values_to_be_in_set(column=trajectory_id" in violation.check
    assert violation.examples == [{"trajectory_id": "ghost", "t": 1}]


def test_part_written_outside_the_lake_with_a_wrong_type_is_reported(lake):
    _fill(lake)
    bad = pa.table({"task_id": ["t9"], "source": ["x"], "source_id": ["y"], "text": ["z"],
                    "difficulty": ["three"]})
    pq.write_table(bad, lake.url("tasks", "part-bad.parquet"))
    (violation,) = quality.validate(lake, ["tasks"])
    assert violation.check == "part files match the schema"
    assert violation.examples[0]["column"] == "difficulty"
    assert violation.examples[0]["file"].endswith("part-bad.parquet")


def test_out_of_range_and_enum_values(lake):
    trajectories = trajectories_frame()
    trajectories.loc[0, "n_steps"] = -1
    trajectories.loc[1, "termination"] = "gave_up"
    _fill(lake, trajectories=trajectories)
    checks = " ".join(v.check for v in quality.validate(lake, ["trajectories"]))
    assert "expect_column_values_to_be_between(column=n_steps" in checks
    assert "expect_column_values_to_be_in_set(column=termination" in checks


def test_assert_quality_raises_with_every_violation(lake):
    steps = steps_frame()
    steps.loc[0, "trajectory_id"] = "ghost"
    _fill(lake, steps=steps)
    with pytest.raises(quality.QualityError, match="steps: expect_column_values_to_be_in_set"):
        quality.assert_quality(lake)


def test_the_gate_checks_a_table_again_only_when_it_or_a_table_it_references_changed(lake, monkeypatch):
    _fill(lake)
    quality.assert_quality(lake)
    checked: list[list[str]] = []
    full_check = quality.validate

    def recording(lake, tables):
        checked.append(sorted(tables))
        return full_check(lake, tables)

    monkeypatch.setattr(quality, "validate", recording)
    quality.assert_quality(lake)
    assert checked == []  # nothing written since every table passed
    lake.replace_table("trajectories", trajectories_frame().iloc[1:])  # steps of the first trajectory lose it
    with pytest.raises(quality.QualityError, match="steps: expect_column_values_to_be_in_set"):
        quality.assert_quality(lake, ["tasks", "steps"])
    assert checked == [["steps"]]
    with pytest.raises(quality.QualityError):  # a failed table is checked again, never remembered as passed
        quality.assert_quality(lake, ["steps"])
