"""Shared fixtures: a fresh lake per test and three-row frames of the core tables."""

from __future__ import annotations

import datetime as dt
import os

import pandas as pd
import pytest

from schemas.rubric import FactGroup, Rubric
from schemas.runs import Run
from schemas.steps import Action, Step
from schemas.tasks import Task
from schemas.trajectories import Trajectory
from webgym.lake import Lake

# CLI output is asserted as text: a wide, fixed width keeps rich from wrapping it differently on
# every checkout path and terminal (set before webgym.cli creates its consoles).
os.environ["COLUMNS"] = "200"

NOW = dt.datetime(2026, 11, 22, 3, 0, tzinfo=dt.UTC)


@pytest.fixture
def lake(tmp_path) -> Lake:
    lake = Lake(tmp_path / "data")
    lake.init()
    return lake


def rows(models) -> pd.DataFrame:
    return pd.DataFrame([m.model_dump() for m in models])


def rubric(*sizes: int) -> dict:
    groups = [FactGroup(description=f"group {i}", facts=[f"fact {i}.{j}" for j in range(n)])
              for i, n in enumerate(sizes)]
    return Rubric(groups=groups).model_dump()


def tasks_frame() -> pd.DataFrame:
    """Two train tasks on shop-a (one decomposed from the other) and one test task on mail-b."""
    return rows([
        Task(task_id="t1", source="synthetic", source_id="g1", text="Buy the red mug", website="shop-a.test",
             difficulty=3, split="train", rubric=rubric(1, 2), created_at=NOW),
        Task(task_id="t2", parent_task_id="t1", parent_groups=[1], source="synthetic", source_id="g1",
             text="Find the red mug", website="shop-a.test", difficulty=2, split="train", rubric=rubric(2),
             created_at=NOW),
        Task(task_id="t3", source="synthetic", source_id="g2", text="Archive the newsletter",
             website="mail-b.test", difficulty=7, split="test", rubric=rubric(3, 4), created_at=NOW),
    ])


def trajectories_frame() -> pd.DataFrame:
    return rows([
        Trajectory(trajectory_id=f"r{i}", task_id=task, iteration=0, policy="oracle", policy_version="v0",
                   horizon=10, n_steps=2, termination="answered", answer="done", started_at=NOW, ended_at=NOW)
        for i, task in enumerate(["t1", "t2", "t3"])
    ])


NIGHT = [  # (flow_run_id, run name, parent, iteration, split, start s, end s), seconds after NOW
    ("n", "nightly-ci", None, None, None, 0, 1000),
    ("b", "build-taskset", "n", None, None, 0, 50),
    ("e0", "evaluate-it0-test", "n", 0, "test", 50, 80),  # the untrained baseline, with its rollout and judge
    ("e0r", "rollout-it0-test", "e0", 0, "test", 50, 70), ("e0j", "judge-it0", "e0", 0, None, 70, 78),
    ("r0", "rollout-it0-train", "n", 0, "train", 80, 90), ("j0", "judge-it0", "n", 0, None, 90, 92),
    ("t0", "train-it0", "n", 0, None, 92, 122),
    ("v0", "evaluate-it0-validation", "n", 0, "validation", 122, 140),
    ("v0r", "rollout-it0-validation", "v0", 0, "validation", 122, 135),
    ("s0", "serve-ck0", "n", None, None, 140, 142),
    ("e1", "evaluate-it0-test", "n", 0, "test", 142, 172), ("e1r", "rollout-it0-test", "e1", 0, "test", 142, 165),
    ("r1", "rollout-it1-train", "n", 1, "train", 200, 260), ("j1", "judge-it1", "n", 1, None, 260, 265),
    ("r1d", "rollout-it1-train-draw1", "n", 1, "train", 265, 285), ("j1d", "judge-it1", "n", 1, None, 285, 288),
    ("t1", "train-it1", "n", 1, None, 288, 300),
    ("v1", "evaluate-it1-validation", "n", 1, "validation", 300, 320),
    ("v1s", "evaluate-it0-validation", "n", 0, "validation", 320, 330),  # the served checkpoint, validated again
    ("s1", "serve-ck1", "n", None, None, 330, 331), ("e2", "evaluate-newest-test", "n", None, "test", 331, 361),
    ("e2r", "rollout-it1-test", "e2", 1, "test", 331, 355)]
"""A two-iteration night's flow runs: per iteration, rollout 10 and 80 s (GRPO's extra draw included), judge 2 and
8, train 30 and 12, validation 18 and 30, serve 2 and 1, held-out evaluation 60 (the baseline's included) and 30."""


def night_runs(profile: str = "ci", seed: int = 0, commit: str = "abc123") -> pd.DataFrame:
    """The runs rows of NIGHT."""
    flows = {"nightly": "nightly", "build": "build_taskset", "evaluate": "evaluate", "rollout": "rollout",
             "judge": "judge", "train": "train", "serve": "serve"}
    return rows([
        Run(flow_run_id=run_id, flow_name=flows[name.split("-")[0]], run_name=name, parent_flow_run_id=parent,
            iteration=iteration, split=split, profile=profile, parameters="{}", seed=seed, commit=commit,
            started_at=NOW + dt.timedelta(seconds=start), ended_at=NOW + dt.timedelta(seconds=end),
            outcome="completed")
        for run_id, name, parent, iteration, split, start, end in NIGHT])


def steps_frame() -> pd.DataFrame:
    """r0: screenshots a, a (one repeat); r1: b, c."""
    shots = {("r0", 0): "a", ("r0", 1): "a", ("r1", 0): "b", ("r1", 1): "c"}
    return rows([
        Step(trajectory_id=tid, t=t, screenshot_sha256=sha, url="http://shop-a.test/",
             actions=[Action(name="click", x=10.0, y=20.0, ok=True, feedback="clicked 'Buy'")])
        for (tid, t), sha in shots.items()
    ])


@pytest.fixture(autouse=True)
def project_lake_untouched():
    """Fail a test that wrote into the project's own lake (data/): a test's profile that names no lake of its own
    reaches the user's."""
    from webgym import PROJECT_ROOT

    data = PROJECT_ROOT / "data"
    before = set(os.listdir(data)) if data.exists() else set()
    yield
    added = sorted((set(os.listdir(data)) if data.exists() else set()) - before)
    assert not added, f"tests wrote into the project's lake {data}: {added}"


@pytest.fixture(scope="session")
def prefect_harness():
    """One Prefect test server for the whole session (it takes seconds to start), for every flow test."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory):
    """A tiny randomly initialised Qwen3-VL checkpoint directory, built once per session (tests only read it)."""
    from webgym.models.tiny import write_tiny_checkpoint

    return write_tiny_checkpoint(tmp_path_factory.mktemp("models") / "tiny-qwen3-vl")
