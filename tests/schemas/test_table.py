"""Schemas: Arrow types derive from the row models, and frames that do not fit are refused clearly."""

from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pytest

from schemas import TABLES, SchemaError, schema_for
from tests.conftest import steps_frame, tasks_frame


def test_every_table_of_the_data_model_has_a_schema():
    assert set(TABLES) == {"seed_tasks", "duplicates", "tasks", "llm_calls", "trajectories", "steps", "judgments",
                           "accepted", "checkpoints", "promotions", "evals", "blocklist", "runs"}


@pytest.mark.parametrize("name", sorted(TABLES))
def test_every_column_is_documented_and_keys_exist(name):
    schema = TABLES[name]
    undocumented = [c for c in schema.columns if not schema.doc(c)]
    assert undocumented == []
    assert set(schema.keys) <= set(schema.columns)
    for column, target in schema.references.items():
        table, target_column = target.split(".")
        assert column in schema.columns and target_column in TABLES[table].columns


def test_nested_columns_are_typed_structs_not_json():
    steps = schema_for("steps").arrow
    actions = steps.field("actions").type
    assert pa.types.is_list(actions) and pa.types.is_struct(actions.value_type)
    assert actions.value_type.field("x").type == pa.float64()
    rubric = schema_for("tasks").arrow.field("rubric").type
    assert rubric.field("groups").type.value_type.field("facts").type == pa.list_(pa.string())
    assert pa.types.is_map(schema_for("checkpoints").arrow.field("metrics").type)
    assert not schema_for("tasks").arrow.field("task_id").nullable


def test_wrong_type_is_refused_naming_column_row_and_key():
    frame = tasks_frame()
    frame["difficulty"] = frame["difficulty"].astype(object)
    frame.loc[1, "difficulty"] = "three"
    with pytest.raises(SchemaError, match=r"tasks, column 'difficulty', row 1 \(task_id='t2'\).*'three'"):
        schema_for("tasks").to_arrow(frame)


def test_missing_key_column_is_refused():
    with pytest.raises(SchemaError, match=r"missing required column\(s\) \['task_id'\]"):
        schema_for("tasks").to_arrow(tasks_frame().drop(columns=["task_id"]))


def test_null_key_is_refused_with_row():
    frame = steps_frame()
    frame.loc[2, "trajectory_id"] = None
    with pytest.raises(SchemaError, match=r"column 'trajectory_id', row 2.*null in a required column"):
        schema_for("steps").to_arrow(frame)


def test_unknown_column_is_refused():
    with pytest.raises(SchemaError, match=r"unknown column\(s\) \['difficuly'\]"):
        schema_for("tasks").to_arrow(tasks_frame().assign(difficuly=1))


def test_missing_optional_columns_become_nulls_and_ints_with_nulls_survive():
    frame = tasks_frame().drop(columns=["domain"])
    frame.loc[0, "difficulty"] = None  # pandas turns the column into floats with NaN
    table = schema_for("tasks").to_arrow(frame)
    assert table.column("domain").null_count == 3
    assert table.column("difficulty").to_pylist() == [None, 2, 7]


def test_unknown_table_lists_the_tables():
    with pytest.raises(SchemaError, match="unknown table 'task'.*tasks"):
        schema_for("task")


def test_empty_frame_has_every_column():
    assert list(schema_for("steps").empty_frame().columns) == schema_for("steps").columns
    assert isinstance(schema_for("steps").empty_frame(), pd.DataFrame)
