"""Flows: every flow imports and is a Prefect flow named like its function; nightly runs and gates on quality."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys

import pytest
from prefect import Flow

import flows
from tests.conftest import steps_frame, tasks_frame, trajectories_frame
from webgym.lake import Lake


def _profile(tmp_path) -> str:
    path = tmp_path / "profile.yaml"
    path.write_text(f"lake:\n  data_dir: {tmp_path / 'data'}\nwarehouse:\n  path: {tmp_path / 'w.duckdb'}\n"
                    "nightly:\n  iterations: 0\n  build_taskset: false\n")
    return str(path)


def test_every_flow_imports_and_is_named_like_its_function():
    found = {}
    for module in pkgutil.iter_modules(flows.__path__):
        loaded = importlib.import_module(f"flows.{module.name}")
        found.update({n: f for n, f in vars(loaded).items() if isinstance(f, Flow)})
    assert "nightly" in found
    for name, flow in found.items():
        assert flow.name == name


@pytest.mark.slow
def test_nightly_recovers_journals_checks_quality_and_builds_the_warehouse(prefect_harness, tmp_path):
    from flows.nightly import nightly

    lake = Lake(tmp_path / "data")
    lake.write_table("tasks", tasks_frame())
    crash = ("import os, sys\nfrom webgym.lake import Lake\nfrom tests.conftest import trajectories_frame\n"
             "w = Lake(sys.argv[1]).stream('crashed', batch_rows=100).__enter__()\n"
             "w.append({'trajectories': trajectories_frame()})\nos._exit(0)\n")
    subprocess.run([sys.executable, "-c", crash, lake.root], check=True)
    assert lake.count("trajectories") == 0  # journaled, not committed
    summary = nightly(config_path=_profile(tmp_path))
    assert summary.recovered_rows == 3
    assert summary.rows["trajectories"] == 3 and summary.rows["tasks"] == 3
    assert (tmp_path / "w.duckdb").exists()


def test_nightly_fails_on_a_quality_violation(prefect_harness, tmp_path):
    from flows.nightly import nightly
    from webgym.quality import QualityError

    lake = Lake(tmp_path / "data")
    lake.write_table("tasks", tasks_frame())
    lake.write_table("trajectories", trajectories_frame())
    lake.write_table("steps", steps_frame().assign(trajectory_id="ghost"))
    with pytest.raises(QualityError, match="ghost"):
        nightly(config_path=_profile(tmp_path))
