"""Shared fixtures: a fresh lake per test and three-row frames of the core tables."""

from __future__ import annotations

import datetime as dt
import os

import pandas as pd
import pytest

from schemas.rubric import FactGroup, Rubric
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


def steps_frame() -> pd.DataFrame:
    """r0: screenshots a, a (one repeat); r1: b, c."""
    shots = {("r0", 0): "a", ("r0", 1): "a", ("r1", 0): "b", ("r1", 1): "c"}
    return rows([
        Step(trajectory_id=tid, t=t, screenshot_sha256=sha, url="http://shop-a.test/",
             actions=[Action(name="click", x=10.0, y=20.0, ok=True, feedback="clicked 'Buy'")])
        for (tid, t), sha in shots.items()
    ])


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
