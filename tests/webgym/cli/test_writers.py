"""Two writers on one lake: the second real `webgym` process is refused naming the first, the lock goes
with its holder (also after SIGKILL), and `webgym lake repair` removes duplicated keys keeping the first."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from tests.conftest import tasks_frame, trajectories_frame
from webgym import PROJECT_ROOT
from webgym.lake import Lake

HOLDER = """
import sys, time
from webgym.lake import Lake
with Lake(sys.argv[1]).writing("rollout"):
    print("holding", flush=True)
    time.sleep(600)
"""


def _webgym(lake: Lake, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "WEBGYM_DATA": "", "PYTHONPATH": str(PROJECT_ROOT)}
    return subprocess.run([sys.executable, "-m", "webgym.cli", "--data-dir", lake.root, *args], env=env,
                          capture_output=True, text=True, timeout=300)


def _files(lake: Lake) -> dict[str, float]:
    return {path: os.stat(path).st_mtime for path in lake.fs.find(lake.root) if not path.endswith("_writer.lock")}


def test_a_second_writer_is_refused_naming_the_first_and_the_lock_dies_with_its_holder(lake):
    lake.write_table("tasks", tasks_frame())
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, lake.root], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT)}, start_new_session=True)
    try:
        assert holder.stdout.readline().strip() == "holding"
        before = _files(lake)
        second = _webgym(lake, "rollout", "--size", "1")
        assert second.returncode == 75, second.stderr[-2000:]
        message = " ".join(second.stdout.split() + second.stderr.split())
        assert f"being written by pid {holder.pid} (webgym rollout) since" in message
        assert _webgym(lake, "lake", "recover").returncode == 75
        assert _files(lake) == before  # the refused command wrote nothing
        assert _webgym(lake, "sql", "SELECT count(*) FROM tasks").returncode == 0  # readers are never refused
    finally:
        os.killpg(holder.pid, signal.SIGKILL)
        holder.wait()
    deadline = time.monotonic() + 10
    done = _webgym(lake, "lake", "recover")
    while done.returncode == 75 and time.monotonic() < deadline:
        done = _webgym(lake, "lake", "recover")
    assert done.returncode == 0, done.stderr[-2000:]


def test_repair_removes_duplicated_keys_keeping_the_first(lake):
    first = trajectories_frame()
    lake.write_table("trajectories", first)
    lake.write_table("trajectories", first.assign(answer="written twice")[:2])
    lake.write_table("tasks", tasks_frame())
    done = _webgym(lake, "lake", "repair")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "trajectories: 2 duplicated row(s) removed, 3 rows kept" in done.stdout
    assert "tasks: 0 duplicated row(s) removed, 3 rows kept" in done.stdout
    kept = lake.read_table("trajectories").sort_values("trajectory_id")
    assert kept["trajectory_id"].tolist() == ["r0", "r1", "r2"] and set(kept["answer"]) == {"done"}
    assert _webgym(lake, "quality", "trajectories").returncode == 0


def test_help_and_reading_commands_run_beside_a_writer_and_take_no_lock(lake, tmp_path, monkeypatch):
    """The lock is taken when a writing command's body starts: its --help, and the commands that only read the
    lake (`taskset plan`, `taskset stats`, `judge blocklist`), run while another command writes it."""
    from typer.testing import CliRunner

    from webgym.cli import app

    monkeypatch.delenv("WEBGYM_DATA", raising=False)
    lake.write_table("tasks", tasks_frame())
    rubric = tmp_path / "rubric.json"
    rubric.write_text('{"groups": [{"description": "a", "facts": ["x"]}, {"description": "b", "facts": ["y"]}]}')
    runner = CliRunner()
    with lake.writing("rollout"):
        for args in (["rollout", "--help"], ["judge", "run", "--help"], ["lake", "compact", "--help"],
                     ["taskset", "plan", str(rubric)], ["taskset", "stats"], ["judge", "blocklist"]):
            done = runner.invoke(app, ["--data-dir", lake.root, *args])
            assert done.exit_code == 0, (args, done.output)
        refused = runner.invoke(app, ["--data-dir", lake.root, "taskset", "dedup"])
        assert refused.exit_code == 75 and "(webgym rollout)" in refused.output
    fresh = tmp_path / "fresh"
    assert runner.invoke(app, ["--data-dir", str(fresh), "nightly", "--help"]).exit_code == 0
    assert not fresh.exists()  # a --help creates no lake and no lock file


def test_the_holder_is_named_by_its_whole_command(lake, monkeypatch):
    """A writer inside a group is named with its group ("lake compact"), so a refused user knows what runs."""
    from typer.testing import CliRunner

    from webgym.cli import app

    monkeypatch.delenv("WEBGYM_DATA", raising=False)
    lake.write_table("tasks", tasks_frame())
    named, writing = [], Lake.writing
    monkeypatch.setattr(Lake, "writing", lambda self, command: (named.append(command), writing(self, command))[1])
    for args in (["lake", "compact"], ["taskset", "stats"], ["ingest", "--help"]):
        assert CliRunner().invoke(app, ["--data-dir", lake.root, *args]).exit_code == 0
    assert named == ["lake compact"]
