"""Lineage in the lake: every row a flow run appends records the run's id (webgym/lake/lineage.py); rows written
outside a flow run, and rows of lakes written before the column, read back null."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from schemas import TABLES
from tests.conftest import NOW, steps_frame, tasks_frame, trajectories_frame
from webgym import warehouse
from webgym.lake import lineage


@pytest.fixture
def writing_as(monkeypatch):
    """Set the flow run the lake's writes belong to, as a flow run's process does (flows/__init__.py)."""
    return lambda run: monkeypatch.setattr(lineage, "_source", lambda: run)


def test_every_table_a_flow_appends_to_records_the_flow_run_and_only_runs_is_keyed_by_it():
    assert {name for name, schema in TABLES.items() if schema.stamped} == {
        "seed_tasks", "duplicates", "tasks", "llm_calls", "trajectories", "steps", "judgments", "accepted",
        "checkpoints", "promotions", "evals", "blocklist"}
    assert TABLES["runs"].keys == ("flow_run_id",) and not TABLES["runs"].stamped


def test_appends_record_the_writing_flow_run_whatever_the_frame_says(lake, writing_as):
    writing_as("run-a")
    lake.write_table("trajectories", trajectories_frame().assign(flow_run_id="stale"))  # e.g. rows read and rewritten
    with lake.stream("rollout", batch_rows=2) as writer:
        writing_as("run-b")  # an append from another thread (the LLM ledger's) is still the opener's
        writer.append({"steps": steps_frame()})
    assert set(lake.read_table("trajectories")["flow_run_id"]) == {"run-a"}
    assert set(lake.read_table("steps")["flow_run_id"]) == {"run-a"}


def test_rows_written_outside_a_flow_run_record_null(lake, writing_as):
    writing_as(None)
    lake.write_table("tasks", tasks_frame())
    assert lake.read_table("tasks")["flow_run_id"].isna().all()


def test_a_replaced_table_keeps_the_run_that_wrote_each_row(lake, writing_as):
    writing_as("ingest")
    lake.write_table("tasks", tasks_frame())
    writing_as("split")
    lake.replace_table("tasks", lake.read_table("tasks").assign(split="test"))
    assert set(lake.read_table("tasks")["flow_run_id"]) == {"ingest"}


def test_a_rewrite_records_its_flow_run_on_the_rows_it_changes_only(lake, writing_as):
    from schemas.blocklist import SCHEMA
    from stages.blocklist import cleared_blocklist

    listed = SCHEMA.empty_frame().reindex(range(2)).assign(
        website=["a.com", "b.com"], evidence="2 blocked episode(s)", first_seen=NOW, listed_at=NOW)
    writing_as("judge-it1")
    lake.replace_table("blocklist", listed, changed=listed["website"].notna())
    writing_as("unblock")
    cleared = cleared_blocklist(lake.read_table("blocklist"), ["b.com"], NOW)
    lake.replace_table("blocklist", cleared, changed=cleared["website"] == "b.com")
    rows = lake.read_table("blocklist").set_index("website")
    assert rows["flow_run_id"].to_dict() == {"a.com": "judge-it1", "b.com": "unblock"}
    assert rows["cleared_at"].notna().to_dict() == {"a.com": False, "b.com": True}


def test_parts_written_before_the_column_read_back_null_in_tables_and_views(lake):
    lake.write_table("trajectories", trajectories_frame())
    part = next(p for p in (Path(lake.root) / "trajectories").glob("part-*.parquet"))
    old = pq.read_table(part).drop_columns(["flow_run_id"])
    pq.write_table(old, part)
    (Path(lake.root) / "trajectories" / "_schema.parquet").unlink()  # as an older release left it
    assert lake.read_table("trajectories")["flow_run_id"].isna().all()
    found = warehouse.read_only_query(lake, "SELECT count(*), count(flow_run_id) FROM trajectories")
    assert found.rows == [(3, 0)]
