"""The lake on object storage: a moto S3 server on 127.0.0.1 stands in for S3 or MinIO, reached the way
a cluster user reaches theirs (AWS_ENDPOINT_URL and the AWS_* credential variables, no code change).
Tables, blobs, compaction, the journal and its recovery, `webgym sql`, and one rollout -> judge round
of the real flows all run against it."""

from __future__ import annotations

import logging
import signal
import subprocess
import sys

import duckdb
import pandas as pd
import pytest

from schemas.tasks import Task
from tests.conftest import NOW, rows, steps_frame, tasks_frame, trajectories_frame
from tests.webgym.test_lake import _wait_for_lines, spawn_stream_writer
from webgym import quality, warehouse
from webgym.lake import Lake
from webgym.sites.site import load_sites
from webgym.sites.tasks import task_record

BUCKET = "webgym-test"


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    """A moto S3 server with one bucket; the environment points boto (hence s3fs, hence the lake and
    DuckDB, in this process and in subprocesses) at it."""
    from moto.server import ThreadedMotoServer
    from s3fs import S3FileSystem

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # one log line per request otherwise
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    with pytest.MonkeyPatch.context() as env:
        env.setenv("AWS_ENDPOINT_URL", f"http://{host}:{port}")
        env.setenv("AWS_ACCESS_KEY_ID", "testing")
        env.setenv("AWS_SECRET_ACCESS_KEY", "testing")
        env.setenv("AWS_DEFAULT_REGION", "us-east-1")
        env.setenv("AWS_CONFIG_FILE", str(tmp_path_factory.mktemp("aws") / "config"))  # no user profile
        env.delenv("AWS_PROFILE", raising=False)
        env.delenv("WEBGYM_DATA", raising=False)
        S3FileSystem.clear_instance_cache()  # an instance made for another endpoint must not be reused
        fs = S3FileSystem()
        fs.mkdir(BUCKET)
        yield fs
        S3FileSystem.clear_instance_cache()
    server.stop()


@pytest.fixture
def s3_lake(s3, request) -> Lake:
    """A fresh lake under its own prefix of the bucket."""
    return Lake(f"s3://{BUCKET}/{request.node.name}/lake")


def _objects(s3, lake: Lake, folder: str) -> list[str]:
    """Object names under a folder of the lake, as the S3 server lists them."""
    return sorted(path.rsplit("/", 1)[1] for path in s3.find(f"{lake.root.removeprefix('s3://')}/{folder}"))


def test_tables_blobs_and_compaction_live_in_the_bucket(s3, s3_lake):
    assert not s3_lake.is_local
    s3_lake.write_table("tasks", tasks_frame().iloc[:2])
    s3_lake.write_table("tasks", tasks_frame().iloc[2:])
    assert len([name for name in _objects(s3, s3_lake, "tasks") if name.startswith("part-")]) == 2
    pd.testing.assert_frame_equal(s3_lake.read_table("tasks").sort_values("task_id", ignore_index=True),
                                  s3_lake.ensure_table("tasks").to_arrow(tasks_frame()).to_pandas(
                                      maps_as_pydicts="strict"))

    sha = s3_lake.put_blob(b"\x89PNG not really")
    assert _objects(s3, s3_lake, "blobs") == [f"{sha}.png"]
    assert s3_lake.get_blob(sha) == b"\x89PNG not really"
    with pytest.raises(FileNotFoundError, match=f"no blob {'0' * 64}.png under s3://{BUCKET}/"):
        s3_lake.get_blob("0" * 64)

    result = s3_lake.compact("tasks")
    assert (result.files_before, result.files_after) == (2, 1)
    assert (result.rows_after, result.checksum_after) == (3, result.checksum_before)
    assert not _objects(s3, s3_lake, "_compaction")


@pytest.mark.slow
def test_killed_stream_writer_is_recovered_into_the_bucket(s3_lake):
    assert s3_lake.count("trajectories") == 0  # listed before the writer's parts exist: no stale listing after
    writer = spawn_stream_writer(s3_lake.root)
    acked = len(_wait_for_lines(writer, 13))
    writer.send_signal(signal.SIGKILL)
    writer.wait()
    assert s3_lake.count("trajectories") % 5 == 0  # whole batches only: each part is one PUT
    assert s3_lake.recover() >= 1
    ids = s3_lake.read_table("trajectories")["trajectory_id"]
    assert ids.is_unique and acked <= len(ids) <= acked + 30
    assert set(ids) == {f"r{i}" for i in range(len(ids))}
    assert not any(s3_lake.journal_dir().iterdir())


def _webgym(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "webgym.cli", *args], capture_output=True, text=True, timeout=120)


def _write_core_tables(lake: Lake) -> None:
    lake.write_table("tasks", tasks_frame())
    lake.write_table("trajectories", trajectories_frame())
    lake.write_table("steps", steps_frame())


@pytest.mark.slow
def test_webgym_sql_in_another_process_sees_what_this_one_wrote(s3_lake):
    _write_core_tables(s3_lake)
    result = _webgym("--data-dir", s3_lake.root, "sql", "--format", "csv",
                     "SELECT (SELECT count(*) FROM tasks WHERE split = 'train') AS train_tasks, "
                     "same_screenshot_rate FROM same_screenshot_rate")
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.splitlines() == ["train_tasks,same_screenshot_rate", "2,0.5"]  # r0 repeats, r1 not


def test_warehouse_file_of_an_s3_lake_has_views_over_the_bucket(s3_lake, tmp_path):
    _write_core_tables(s3_lake)
    path = warehouse.build(s3_lake, tmp_path / "warehouse.duckdb")
    with duckdb.connect(str(path), read_only=True) as con:
        con.register_filesystem(s3_lake.fs)  # what httpfs and an S3 secret do for other DuckDB clients
        assert con.execute("SELECT count(*) FROM steps").fetchall() == [(4,)]
        assert con.execute("SELECT same_screenshot_rate FROM same_screenshot_rate").fetchall() == [(0.5,)]


def _synthetic_tasks(names: list[str]) -> pd.DataFrame:
    tasks = []
    for site in load_sites(names=names).values():
        r = task_record(site, site.spec.goals[0])
        tasks.append(Task(task_id=r["source_id"], source="synthetic", source_id=r["source_id"], text=r["text"],
                          website=r["hostname"], start_url=r["start_url"], difficulty=r["difficulty"],
                          domain=site.spec.domain, split="train", rubric=r["rubric"], created_at=NOW))
    return rows(tasks)


@pytest.mark.slow
def test_rollout_and_judge_round_on_object_storage(prefect_harness, s3, s3_lake, tmp_path):
    from flows.judge import judge
    from flows.rollout import rollout

    s3_lake.write_table("tasks", _synthetic_tasks(["shop-a", "mail-b"]))
    profile = tmp_path / "profile.yaml"
    profile.write_text(f"lake:\n  data_dir: {s3_lake.root}\npolicy:\n  kind: oracle\n"
                       "taskset:\n  sample:\n    ratio: null\nrollout:\n  concurrency: 2\n")

    report = rollout(config_path=str(profile), size=2)
    assert report.episodes == 2 and report.terminations == {"answered": 2}
    summary = judge(iteration=0, config_path=str(profile))
    assert dict(summary.outcomes) == {("exact", "success"): 2}

    assert quality.validate(s3_lake) == []
    steps = s3_lake.read_table("steps")
    shas = set(steps["screenshot_sha256"].dropna())
    assert shas and shas <= {name.removesuffix(".png") for name in _objects(s3, s3_lake, "blobs")}
    assert all(s3_lake.get_blob(sha).startswith(b"\x89PNG") for sha in shas)
    result = _webgym("--config", str(profile), "sql", "--format", "csv",
                     "SELECT (SELECT count(*) FROM trajectories) AS trajectories, (SELECT count(*) FROM steps) "
                     "AS steps, (SELECT count(*) FROM verdicts WHERE judge = 'exact' AND success) AS successes")
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.splitlines() == ["trajectories,steps,successes", f"2,{len(steps)},2"]
