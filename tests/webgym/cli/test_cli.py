"""The webgym command as a user types it."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.conftest import steps_frame, tasks_frame, trajectories_frame
from webgym.cli import app
from webgym.lake import Lake

runner = CliRunner()


@pytest.fixture(autouse=True)
def _no_env_lake(monkeypatch):
    monkeypatch.delenv("WEBGYM_DATA", raising=False)


def _webgym(lake, *args: str):
    return runner.invoke(app, ["--data-dir", lake.root, *args])


@pytest.mark.parametrize("command", [[], ["sql"], ["quality"], ["init"], ["nightly"], ["lake", "compact"],
                                     ["lake", "recover"], ["warehouse", "build"]])
def test_every_subcommand_has_help(command, tmp_path):
    result = runner.invoke(app, ["--data-dir", str(tmp_path), *command, "--help"])
    assert result.exit_code == 0, result.output
    assert "Usage" in result.output


def _modules_loaded_by(*argv: str) -> tuple[str, set[str]]:
    """What a `webgym` command prints and the modules it loads, run in a fresh interpreter as a user runs it."""
    probe = (f"import atexit, runpy, sys; sys.argv = ['webgym', *{list(argv)!r}]\n"
             "atexit.register(lambda: print('MODULES', ' '.join(sorted(sys.modules))))\n"
             "runpy.run_module('webgym.cli', run_name='__main__')")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    printed, modules = done.stdout.split("MODULES", 1)
    return printed, set(modules.split())


def test_help_starts_without_arrow_pandas_or_the_runtime():
    """`webgym --help` is what a new user types first: it loads the commands, not the data libraries."""
    _, loaded = _modules_loaded_by("--help")
    assert not {"pyarrow", "pandas", "numpy", "duckdb", "playwright", "torch", "prefect"} & loaded


def test_sql_on_a_current_lake_runs_without_arrow_or_pandas(lake):
    """`webgym sql` is typed over and over while watching a night: DuckDB alone answers it."""
    lake.write_table("tasks", tasks_frame())
    printed, loaded = _modules_loaded_by("--data-dir", lake.root, "sql", "SELECT count(*) AS tasks FROM tasks",
                                         "--format", "csv")
    assert printed.split() == ["tasks", "3"]
    assert "duckdb" in loaded and not {"pyarrow", "pandas", "playwright", "torch", "prefect"} & loaded


def test_sql_prints_a_table_csv_and_json(lake):
    lake.write_table("tasks", tasks_frame())
    table = _webgym(lake, "sql", "SELECT source, tasks FROM tasks_by_source")
    assert table.exit_code == 0 and "synthetic" in table.output and "(2 rows)" in table.output
    csv = _webgym(lake, "sql", "SELECT task_id FROM tasks ORDER BY 1", "--format", "csv")
    assert csv.output.splitlines() == ["task_id", "t1", "t2", "t3"]
    as_json = _webgym(lake, "sql", "SELECT 1 AS one", "--format", "json")
    assert json.loads(as_json.output) == [{"one": 1}]


def test_sql_error_and_missing_lake_are_clear(lake, tmp_path):
    bad = _webgym(lake, "sql", "SELECT * FROM nowhere")
    assert bad.exit_code == 1 and "SQL error" in bad.output
    missing = runner.invoke(app, ["--data-dir", str(tmp_path / "nope"), "sql", "SELECT 1"])
    assert missing.exit_code == 2 and "no lake at" in missing.output


def test_sql_prints_stored_text_and_column_names_literally(lake):
    """Text from models and pages sits in the lake ("[/INST]"): it is data, not Rich markup."""
    texts = ["[/x]", "[bold]x[/bold] [link=http://a.test/]click[/link]", ":smile: [/INST]"]
    lake.write_table("tasks", tasks_frame().assign(text=texts))
    for output in ("table", "csv", "json"):
        result = _webgym(lake, "sql", 'SELECT text AS "[red]the text[/red]" FROM tasks ORDER BY task_id',
                         "--format", output)
        assert result.exit_code == 0, result.output
        assert "[red]the text[/red]" in result.output, result.output
        assert all(text in result.output for text in texts), result.output
    failed = _webgym(lake, "sql", "SELECT '[/x]'::INT")
    assert failed.exit_code == 1 and "SQL error" in failed.output and "'[/x]'" in failed.output


def test_sql_on_an_empty_data_folder_creates_nothing(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    result = runner.invoke(app, ["--data-dir", str(data), "sql", "SELECT count(*) AS n FROM tasks", "--format", "csv"])
    assert result.exit_code == 0 and result.output.split() == ["n", "0"], result.output
    assert _webgym(Lake(str(data)), "sql", "SELECT * FROM tasks_by_source").exit_code == 0
    assert list(data.iterdir()) == []


def test_sql_on_a_table_without_its_schema_file_reads_its_parts_and_writes_nothing(lake):
    lake.write_table("tasks", tasks_frame())
    (Path(lake.root) / "tasks" / "_schema.parquet").unlink()
    before = sorted(Path(lake.root).rglob("*"))
    result = _webgym(lake, "sql", "SELECT count(*) AS n, count(text) AS texts FROM tasks", "--format", "csv")
    assert result.exit_code == 0 and result.output.split() == ["n,texts", "3,3"], result.output
    assert sorted(Path(lake.root).rglob("*")) == before


def test_an_error_naming_a_path_with_brackets_is_printed_whole(tmp_path):
    result = runner.invoke(app, ["--config", str(tmp_path / "[/x]" / "[bold]p.yaml"), "sql", "SELECT 1"])
    assert result.exit_code == 2 and "[/x]/[bold]p.yaml not found" in result.output, result.output


@pytest.mark.parametrize("make", [lambda path: path.mkdir(), lambda path: path.write_text("")],
                         ids=["directory", "empty file"])
def test_a_directory_or_empty_profile_gets_one_line_naming_it(tmp_path, make):
    make(tmp_path / "profile.yaml")
    result = runner.invoke(app, ["--config", str(tmp_path / "profile.yaml"), "sql", "SELECT 1"])
    assert result.exit_code == 2 and isinstance(result.exception, SystemExit), result.output
    assert len(result.output.strip().splitlines()) == 1 and f"config file {tmp_path / 'profile.yaml'} is" \
        in result.output, result.output


def test_quality_exits_1_and_names_the_row(lake):
    lake.write_table("tasks", tasks_frame())
    lake.write_table("trajectories", trajectories_frame())
    lake.write_table("steps", steps_frame().assign(trajectory_id=["r0", "r0", "r1", "lost"]))
    result = _webgym(lake, "quality")
    assert result.exit_code == 1
    assert "'trajectory_id': 'lost'" in result.output and "1 violation(s)" in result.output
    assert _webgym(lake, "quality", "tasks").exit_code == 0


def test_compact_reports_unchanged_rows(lake):
    for _ in range(3):
        lake.write_table("trajectories", trajectories_frame())
    result = _webgym(lake, "lake", "compact", "trajectories", "--min-files", "2")
    assert result.exit_code == 0 and "trajectories: 3 -> 1 files, 9 rows, checksum unchanged" in result.output


def test_bad_config_value_says_which_field(tmp_path):
    config = tmp_path / "bad.yaml"
    config.write_text("lake:\n  journal_batch_rows: 0\n")
    result = runner.invoke(app, ["--config", str(config), "sql", "SELECT 1"])
    assert result.exit_code == 2 and "lake.journal_batch_rows" in result.output


@pytest.mark.slow
def test_main_job_command_builds_the_task_set_and_reports_where_things_are(tmp_path):
    # Zero iterations: the task set, the quality suites, the warehouse and the report; the iterations
    # themselves run in tests/flows/test_nightly.py on the CI profile.
    config = tmp_path / "profile.yaml"
    config.write_text(f"lake:\n  data_dir: {tmp_path / 'data'}\nwarehouse:\n  path: {tmp_path / 'w.duckdb'}\n"
                      "nightly:\n  iterations: 0\n")
    prefect_home = tmp_path / "prefect"
    done = subprocess.run([sys.executable, "-m", "webgym.cli", "--config", str(config), "nightly"],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PREFECT_HOME": str(prefect_home)})
    assert done.returncode == 0, done.stderr
    out = " ".join(done.stdout.split())
    assert "nightly finished" in out and "all data-quality suites passed" in out
    assert (tmp_path / "w.duckdb").exists() and (tmp_path / "reports" / "report.html").exists()
    assert "FROM eval_success WHERE split = 'test'\"" in out and Lake(tmp_path / "data").count("tasks") > 200
    # The command exits without tearing its heap down, yet as a normal exit does: the flow's last log line reached
    # Prefect's API before its temporary server stopped, and no server process outlives the command.
    with sqlite3.connect(prefect_home / "prefect.db") as db:
        messages = [m for (m,) in db.execute("SELECT l.message FROM log l JOIN flow_run r ON l.flow_run_id = r.id "
                                             "JOIN flow f ON r.flow_id = f.id WHERE f.name = 'nightly'")]
    assert any(m.startswith("Finished in state Completed") for m in messages), messages
    assert not _processes_with_env("PREFECT_HOME", str(prefect_home))


@pytest.mark.slow
def test_a_terminated_main_job_leaves_no_prefect_server_behind(tmp_path):
    # A scheduler or a CI timeout stops a night with SIGTERM: the temporary API server it started stops too.
    config = tmp_path / "profile.yaml"
    config.write_text(f"lake:\n  data_dir: {tmp_path / 'data'}\nnightly:\n  iterations: 0\n")
    prefect_home = str(tmp_path / "prefect")
    night = subprocess.Popen([sys.executable, "-m", "webgym.cli", "--config", str(config), "nightly"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             env={**os.environ, "PREFECT_HOME": prefect_home})
    try:
        deadline = time.monotonic() + 120
        while not _servers(prefect_home) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _servers(prefect_home), "the server never started"
        night.terminate()
        # 143 (128 + SIGTERM), or 1 where the signal's SystemExit lands inside a library that wraps it
        assert night.wait(timeout=60) in (128 + signal.SIGTERM, 1)
    finally:
        night.kill()
    assert not _processes_with_env("PREFECT_HOME", prefect_home)


def test_the_command_exits_with_the_status_of_its_error(tmp_path):
    config = tmp_path / "bad.yaml"
    config.write_text("lake:\n  journal_batch_rows: 0\n")
    bad = subprocess.run([sys.executable, "-m", "webgym.cli", "--config", str(config), "sql", "SELECT 1"],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "lake.journal_batch_rows" in bad.stderr + bad.stdout
    missing = subprocess.run([sys.executable, "-m", "webgym.cli", "--data-dir", str(tmp_path / "nope"), "sql",
                              "SELECT 1"], capture_output=True, text=True, timeout=60)
    assert missing.returncode == 2 and "no lake at" in missing.stderr + missing.stdout


def _processes_with_env(name: str, value: str) -> list[int]:
    """Pids of live processes whose environment sets name=value (Linux /proc)."""
    wanted, found = f"{name}={value}".encode(), []
    for environ in Path("/proc").glob("[0-9]*/environ"):
        try:
            if wanted in environ.read_bytes().split(b"\0"):
                found.append(int(environ.parent.name))
        except OSError:  # gone meanwhile, or not ours to read
            continue
    return found


def _servers(prefect_home: str) -> list[int]:
    """Pids of the uvicorn servers with this PREFECT_HOME."""
    found = []
    for pid in _processes_with_env("PREFECT_HOME", prefect_home):
        try:
            if b"uvicorn" in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(pid)
        except OSError:  # gone meanwhile
            continue
    return found


def _lake_files(lake) -> dict[str, bytes]:
    return {path: open(path, "rb").read() for path in lake.fs.find(lake.root)}


def test_sql_is_read_only_against_the_attacks_that_changed_the_lake(lake, tmp_path):
    lake.write_table("tasks", tasks_frame())
    lake.write_table("trajectories", trajectories_frame())
    lake.init()
    part = lake.parts("trajectories")[0]
    before = _lake_files(lake)
    outside = tmp_path / "outside"
    attacks = {
        f"COPY (SELECT * FROM trajectories LIMIT 1) TO '{part}' (FORMAT parquet)": "COPY",
        f"COPY tasks TO '{lake.root}/tasks' (FORMAT parquet, PARTITION_BY (split), OVERWRITE)": "COPY",
        f"ATTACH '{outside}.db' AS x": "ATTACH",
        "INSTALL httpfs": "LOAD",
        "LOAD httpfs": "LOAD",
        f"EXPORT DATABASE '{outside}'": "EXPORT",
        f"CREATE TABLE x AS SELECT * FROM read_parquet('{part}')": "CREATE",
        "INSERT INTO tasks SELECT * FROM tasks": "INSERT",
        "UPDATE tasks SET text = 'x'": "UPDATE",
        "DELETE FROM tasks": "DELETE",
        "SET enable_external_access = true": "SET",
        "PRAGMA enable_profiling": "PRAGMA",
        "CALL checkpoint()": "CALL",
        "SELECT 1; COPY tasks TO 'x.csv'": "exactly one statement",
    }
    for sql, kind in attacks.items():
        result = _webgym(lake, "sql", sql)
        assert result.exit_code == 2 and "refused" in result.output and kind in result.output, (sql, result.output)
    # a SELECT that reaches outside the lake's folder is stopped by DuckDB itself
    escape = _webgym(lake, "sql", "SELECT * FROM read_csv('/etc/passwd', sep=':')")
    assert escape.exit_code == 1 and "Permission" in escape.output
    copy_in_query = _webgym(lake, "sql", f"SELECT * FROM query('COPY tasks TO ''{outside}.csv''')")
    assert copy_in_query.exit_code != 0
    assert _lake_files(lake) == before and not list(tmp_path.glob("outside*"))
    assert _webgym(lake, "sql", "SELECT count(*) AS n FROM tasks").exit_code == 0
