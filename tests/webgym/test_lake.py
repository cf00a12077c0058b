"""The lake: atomic parts, appends, journaled streaming writes, compaction and blobs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from tests.conftest import steps_frame, tasks_frame, trajectories_frame
from webgym.lake import Lake, files
from webgym.lake.journal import Journal
from webgym.lake.parts import MERGE_FANOUT


def test_round_trip_keeps_nested_values(lake):
    lake.write_table("steps", steps_frame())
    back = lake.read_table("steps").sort_values(["trajectory_id", "t"]).reset_index(drop=True)
    assert back["actions"][0][0]["feedback"] == "clicked 'Buy'"
    assert back["actions"][0][0]["x"] == 10.0
    assert list(back["screenshot_sha256"]) == ["a", "a", "b", "c"]


def test_appends_add_parts_and_never_rewrite_earlier_ones(lake):
    first = lake.write_table("tasks", tasks_frame().iloc[:2], run_id="run-1")
    before = os.stat(first).st_mtime_ns
    second = lake.write_table("tasks", tasks_frame().iloc[2:], run_id="run-2")
    assert lake.parts("tasks") == sorted([first, second])
    assert "run-1" in os.path.basename(first)
    assert os.stat(first).st_mtime_ns == before
    assert sorted(lake.read_table("tasks")["task_id"]) == ["t1", "t2", "t3"]


def test_empty_frame_writes_nothing(lake):
    assert lake.write_table("tasks", tasks_frame().iloc[:0]) is None
    assert lake.parts("tasks") == []
    assert list(lake.read_table("tasks").columns) == list(tasks_frame().columns)


def test_old_parts_without_a_new_column_read_as_null(lake):
    old = pa.table({"website": ["a.test"], "evidence": ["403"],
                    "first_seen": pa.array([pd.Timestamp("2026-01-01", tz="UTC")], pa.timestamp("us", "UTC"))})
    pq.write_table(old, lake.url("blocklist", "part-0-old.parquet"))
    frame = lake.read_table("blocklist")
    assert frame["website"].tolist() == ["a.test"] and frame["trajectory_id"].isna().all()


def test_init_gives_views_every_table_and_column_of_an_older_lake(lake):
    """A lake an older release made lacks this release's tables and columns: init adds them, so every view
    of `webgym sql` binds with every column of the data model."""
    old = pa.schema([f for f in lake.ensure_table("blocklist").arrow if f.name != "trajectory_id"])
    pq.write_table(old.empty_table(), lake.url("blocklist", "_schema.parquet"))
    os.remove(lake.url("evals", "_schema.parquet"))
    lake.init()
    with lake.connect_duckdb() as con:
        for table in ("blocklist", "evals"):
            columns = [row[0] for row in con.execute(
                f"DESCRIBE SELECT * FROM read_parquet('{lake.url(table)}/*.parquet', union_by_name=true)").fetchall()]
            assert columns == lake.ensure_table(table).columns


def test_blobs_are_written_once_by_hash(lake):
    sha = lake.put_blob(b"\x89PNG fake")
    path = lake.url("blobs", f"{sha}.png")
    mtime = os.stat(path).st_mtime_ns
    assert lake.put_blob(b"\x89PNG fake") == sha
    assert os.stat(path).st_mtime_ns == mtime
    assert lake.get_blob(sha) == b"\x89PNG fake"
    with pytest.raises(FileNotFoundError, match="no blob 00"):
        lake.get_blob("00" * 32)


def test_compaction_keeps_every_row(lake):
    for i in range(5):
        lake.write_table("steps", steps_frame().assign(trajectory_id=lambda f, i=i: f["trajectory_id"] + f"-{i}"))
    result = lake.compact("steps", min_files=2)
    assert (result.files_before, result.files_after) == (5, 1)
    assert result.rows_before == result.rows_after == 20
    assert result.checksum_before == result.checksum_after != 0
    assert lake.count("steps") == 20


def test_compaction_streams_row_groups_and_keeps_rows_and_checksum(lake, monkeypatch):
    monkeypatch.setattr(files, "ROW_GROUP_ROWS", 6)  # several groups from a small table
    for i in range(5):
        lake.write_table("steps", steps_frame().assign(trajectory_id=lambda f, i=i: f["trajectory_id"] + f"-{i}"))
    before = lake.checksum("steps")
    result = lake.compact("steps", min_files=2)
    assert (result.rows_before, result.checksum_before) == (result.rows_after, result.checksum_after) == before
    (output,) = lake.parts("steps")
    metadata = pq.ParquetFile(output).metadata
    groups = [metadata.row_group(g).num_rows for g in range(metadata.num_row_groups)]
    assert len(groups) > 1 and max(groups) <= 6 and sum(groups) == 20


def _steps_of_run(i: int) -> pd.DataFrame:
    return steps_frame().assign(trajectory_id=lambda f: f["trajectory_id"] + f"-{i}")


@pytest.mark.slow
def test_appends_keep_the_parts_of_a_table_few_and_every_row(lake, tmp_path):
    for i in range(200):
        lake.write_table("steps", _steps_of_run(i))
    assert len(lake.parts("steps")) <= 2 * MERGE_FANOUT
    reference = Lake(tmp_path / "reference")
    reference.write_table("steps", pd.concat([_steps_of_run(i) for i in range(200)]))
    assert lake.checksum("steps") == reference.checksum("steps")


@pytest.mark.slow
def test_a_streaming_writer_keeps_the_parts_few(lake):
    with lake.stream("rollout", batch_rows=1) as writer:
        for i in range(100):
            one = trajectories_frame().iloc[[0]].assign(trajectory_id=f"r{i}")
            writer.append({"trajectories": one, "steps": _steps_of_run(i).assign(trajectory_id=f"r{i}")})
    assert len(lake.parts("trajectories")) <= 2 * MERGE_FANOUT and len(lake.parts("steps")) <= 2 * MERGE_FANOUT
    assert sorted(lake.read_table("trajectories")["trajectory_id"]) == sorted(f"r{i}" for i in range(100))
    assert lake.count("steps") == 400


def test_read_batches_yields_every_row_in_small_frames_and_holds_off_merges(lake, monkeypatch):
    """For tables too big to hold: frames of ROW_GROUP_ROWS rows at most, the filter applied, and no merge
    removes a part while the frames are being read."""
    from webgym.lake import tables

    monkeypatch.setattr(tables, "ROW_GROUP_ROWS", 3)
    with monkeypatch.context() as unmerged:
        unmerged.setattr(Lake, "merge", lambda self, name: 0)
        for i in range(MERGE_FANOUT):
            lake.write_table("steps", _steps_of_run(i))
    frames = lake.read_batches("steps", columns=["trajectory_id", "t"], filter=ds.field("t") == 0)
    taken = [next(frames)]
    assert lake.merge("steps") == 0  # a full tier, but the reader holds the table
    taken += frames
    assert lake.merge("steps") == MERGE_FANOUT - 1  # once it is done
    rows = pd.concat(taken)
    assert max(len(frame) for frame in taken) <= 3
    assert sorted(rows["trajectory_id"]) == sorted(f"r{r}-{i}" for r in (0, 1) for i in range(MERGE_FANOUT))
    assert rows["t"].eq(0).all() and list(rows.columns) == ["trajectory_id", "t"]


def test_compaction_below_threshold_does_nothing(lake):
    lake.write_table("tasks", tasks_frame())
    assert lake.compact("tasks", min_files=2).files_after == 1


def test_interrupted_compaction_is_finished_without_duplicates(lake):
    parts = [lake.write_table("tasks", tasks_frame().iloc[[i]]) for i in range(3)]
    rows, checksum = lake.checksum("tasks")
    merged = pa.concat_tables([pq.read_table(p) for p in parts])
    output = lake.url("tasks", "part-9-compacted.parquet")
    pq.write_table(merged, output)  # as if killed after writing the output, before removing inputs
    os.makedirs(lake.url("_compaction"), exist_ok=True)
    with open(lake.url("_compaction", "tasks.json"), "w") as handle:
        json.dump({"output": output, "inputs": parts}, handle)
    lake.recover("tasks")
    assert lake.parts("tasks") == [output]
    assert lake.checksum("tasks") == (rows, checksum)


def test_stream_writer_commits_in_batches_and_on_exit(lake):
    with lake.stream("rollout", batch_rows=2) as writer:
        for i in range(3):
            one = trajectories_frame().iloc[[i]]
            steps = steps_frame().iloc[:1].assign(trajectory_id=one["trajectory_id"].iloc[0])
            writer.append({"trajectories": one, "steps": steps})
        assert lake.count("trajectories") == 2  # first batch committed, third row still journaled
    assert lake.count("trajectories") == 3 and lake.count("steps") == 3
    assert not any(lake.journal_dir().iterdir())


def test_a_journal_left_by_an_older_release_is_committed_with_its_new_columns_null(lake):
    """A writer of the previous release killed mid-rollout left steps without the columns this release
    added; recovery commits them instead of failing every later rollout on the lake."""
    old = lake.to_arrow("steps", steps_frame()).drop_columns(["token_ids", "token_logprobs"])
    writer_dir = lake.journal_dir() / "old-release-writer"
    writer_dir.mkdir(parents=True)
    Journal(lake, writer_dir).add(0, {"steps": old})
    assert lake.recover() == len(old)
    back = lake.read_table("steps")
    assert len(back) == len(old) and back["token_ids"].isna().all()
    assert sorted(back["screenshot_sha256"]) == sorted(old["screenshot_sha256"].to_pylist())


def test_rows_without_a_required_column_are_refused_naming_the_table_and_column(lake):
    rows = lake.to_arrow("steps", steps_frame()).drop_columns(["trajectory_id"])
    with pytest.raises(ValueError, match="table steps lack its required column.s. trajectory_id"):
        lake.write_arrow("steps", rows)
    assert lake.count("steps") == 0


def _spawn(code: str, data: str) -> subprocess.Popen:
    script = textwrap.dedent(code)
    return subprocess.Popen([sys.executable, "-c", script, data], stdout=subprocess.PIPE, text=True)


def spawn_stream_writer(root: str) -> subprocess.Popen:
    """A process streaming one trajectory row at a time into the lake at `root` in parts of 5 rows,
    printing each row's index once append returned (until it is killed)."""
    return _spawn("""
        import sys
        from webgym.lake import Lake
        from tests.conftest import trajectories_frame
        lake = Lake(sys.argv[1])
        with lake.stream("rollout", batch_rows=5) as w:
            for i in range(10_000):
                w.append({"trajectories": trajectories_frame().iloc[[0]].assign(trajectory_id=f"r{i}")})
                print(i, flush=True)
        """, root)


def _wait_for_lines(process: subprocess.Popen, count: int) -> list[str]:
    lines = []
    while len(lines) < count:
        line = process.stdout.readline()
        assert line, "writer exited early"
        lines.append(line)
    return lines


def test_killed_stream_writer_loses_no_acknowledged_row(lake):
    writer = spawn_stream_writer(lake.root)
    acked = len(_wait_for_lines(writer, 13))
    writer.send_signal(signal.SIGKILL)
    writer.wait()
    committed_before_recovery = lake.count("trajectories")
    assert committed_before_recovery % 5 == 0
    lake.recover()
    ids = lake.read_table("trajectories")["trajectory_id"]
    assert ids.is_unique
    assert acked <= len(ids) <= acked + 30  # the pipe may hold acks the test has not read yet
    assert set(ids) == {f"r{i}" for i in range(len(ids))}


def test_writer_killed_mid_write_leaves_earlier_data_complete(lake):
    writer = _spawn("""
        import sys
        import pandas as pd
        from webgym.lake import Lake
        from tests.conftest import steps_frame
        lake = Lake(sys.argv[1])
        big = pd.concat([steps_frame()] * 5000, ignore_index=True)
        for i in range(1000):
            lake.write_table("steps", big.assign(t=range(len(big)), trajectory_id=f"run{i}"))
            print(i, flush=True)
        """, lake.root)
    _wait_for_lines(writer, 2)
    time.sleep(0.15)
    writer.send_signal(signal.SIGKILL)
    writer.wait()
    frame = lake.read_table("steps", columns=["trajectory_id", "t"])
    per_part = frame.groupby("trajectory_id").size()
    assert len(per_part) >= 2
    assert (per_part == 20_000).all()
    assert lake.checksum("steps")[0] == len(frame)
    lake.recover(stale_after_s=0)
    assert not [p for p in os.listdir(lake.url("steps")) if p.endswith(".tmp")]


def test_a_reader_sees_each_row_once_while_a_merge_has_put_its_output_but_kept_its_inputs(lake, monkeypatch):
    lake.write_table("tasks", tasks_frame().iloc[:2])
    lake.write_table("tasks", tasks_frame().iloc[2:])
    monkeypatch.setattr(Lake, "_finish_compaction", lambda self, intent: None)  # stopped before removing inputs
    lake.compact("tasks")
    assert len(lake.parts("tasks")) == 3
    assert sorted(lake.read_table("tasks")["task_id"]) == ["t1", "t2", "t3"] and lake.count("tasks") == 3


def test_a_reader_whose_listing_a_merge_made_stale_reads_every_row_once(lake, monkeypatch):
    """Readers take no lock: a writer's merge can remove the parts a reader listed before it opens them
    (a nightly merging while `webgym sql` or a progress check reads)."""
    lake.write_table("tasks", tasks_frame().iloc[:2])
    lake.write_table("tasks", tasks_frame().iloc[2:])
    stale = lake.parts("tasks")
    lake.compact("tasks")
    listed = Lake.parts
    stale_listings = []
    monkeypatch.setattr(Lake, "parts",
                        lambda self, name: stale_listings.pop() if stale_listings else listed(self, name))
    stale_listings[:] = [stale, stale]
    assert sorted(lake.read_table("tasks")["task_id"]) == ["t1", "t2", "t3"]
    stale_listings[:] = [stale]
    assert lake.count("tasks") == 3 and not stale_listings


def test_replace_table_swaps_the_whole_table_and_a_killed_swap_keeps_the_old_rows(lake):
    lake.write_table("tasks", tasks_frame().iloc[:2])
    lake.write_table("tasks", tasks_frame().iloc[2:])
    old_parts = lake.parts("tasks")
    lake.replace_table("tasks", tasks_frame().iloc[[1]].assign(text="rewritten"), run_id="split")
    assert len(lake.parts("tasks")) == 1 and lake.read_table("tasks")[["task_id", "text"]].values.tolist() == [
        ["t2", "rewritten"]]
    # killed after announcing a swap whose output never appeared: recovery keeps what was there
    lake.fs.pipe_file(lake.url("_compaction", "tasks.json"),
                      json.dumps({"output": lake.url("tasks", "part-9-never.parquet"), "inputs": lake.parts("tasks")}).encode())
    assert lake.recover("tasks") == 0 and lake.read_table("tasks")["task_id"].tolist() == ["t2"]
    assert not set(old_parts) & set(lake.parts("tasks"))
