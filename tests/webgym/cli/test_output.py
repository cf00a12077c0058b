"""Output that survives files and pipes: log lines and `webgym sql` values whole at a narrow COLUMNS."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.conftest import tasks_frame
from tests.flows.site_lake import lake_with_site_tasks


def _webgym(*args: str, tmp_path, **kwargs) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "40", "PREFECT_HOME": str(tmp_path / "prefect"), "WEBGYM_DATA": ""}
    return subprocess.run([sys.executable, "-m", "webgym.cli", *args], env=env, text=True, timeout=600, **kwargs)


def test_sql_piped_prints_whole_values_at_40_columns(lake, tmp_path):
    lake.write_table("tasks", tasks_frame().assign(text="Archive every newsletter from the last week of the month"))
    done = _webgym("--data-dir", lake.root, "sql", "SELECT text, difficulty AS difficulty_band_of_the_task FROM tasks",
                   tmp_path=tmp_path, capture_output=True)
    assert done.returncode == 0, done.stderr
    assert "difficulty_band_of_the_task" in done.stdout
    assert done.stdout.count("Archive every newsletter from the last week of the month") == 3
    assert "…" not in done.stdout


@pytest.mark.slow
def test_rollout_log_written_to_a_file_has_every_progress_line_whole(tmp_path):
    lake_with_site_tasks(tmp_path, ["shop-a", "mail-b"], goals=1)
    profile = tmp_path / "profile.yaml"
    profile.write_text(f"lake:\n  data_dir: {tmp_path / 'data'}\npolicy:\n  kind: oracle\ntaskset:\n  sample:\n"
                       "    ratio: null\nrollout:\n  concurrency: 1\n")
    log = tmp_path / "rollout.log"
    with log.open("w") as stderr:
        done = _webgym("--config", str(profile), "rollout", "--size", "2", tmp_path=tmp_path, stderr=stderr,
                       stdout=subprocess.PIPE)
    text = log.read_text()
    assert done.returncode == 0, text[-3000:]
    progress = re.compile(r"^\d\d:\d\d:\d\d INFO    webgym\.rollout\.runner: rollout it0-train-oracle\S* shard 0: "
                          r"\d+/2 episodes, \d+ steps, [\d.]+ steps/s, success so far \d+/\d+$")
    lines = [line for line in text.splitlines() if "episodes," in line and "shard 0" in line]
    assert lines and all(progress.match(line) for line in lines), text[-3000:]
    assert any(" 2/2 episodes" in line for line in lines)
    assert "faiss" not in text and "sentence_transformers" not in text and "HTTP Request" not in text
