"""benchmarks/external.py measures pages of families its profile never trains on: it refuses the others
before it builds anything."""

from __future__ import annotations

import subprocess
import sys

from webgym import PROJECT_ROOT


def test_a_task_of_a_family_the_profile_trains_on_is_refused(tmp_path):
    profile = tmp_path / "p.yaml"
    profile.write_text(f"extends: {PROJECT_ROOT / 'configs' / 'local.yaml'}\n"
                       "taskset: {miniwob: {tasks: [], train_tasks: [click-tab-2-hard]}}\n")
    script = PROJECT_ROOT / "benchmarks" / "external.py"
    result = subprocess.run([sys.executable, str(script), "--profile", str(profile),
                             "--task", "click-button", "--task", "click-tab", "--out", str(tmp_path / "out")],
                            capture_output=True, text=True, cwd=PROJECT_ROOT)
    assert result.returncode == 2
    assert "['click-tab'] are of families" in result.stderr and "trains on" in result.stderr
    assert not (tmp_path / "out").exists()
