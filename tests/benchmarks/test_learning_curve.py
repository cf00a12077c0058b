"""The learning-curve experiment measures what it claims: at least 60 test tasks, all on held-out
sites, with no website or task family on both sides, and success only for answered episodes the
exact verifier confirms."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from schemas.trajectories import Trajectory
from stages.split import leaks
from tests.benchmarks import load_benchmark
from tests.conftest import NOW, rows
from webgym.sites.site import load_sites

bench = load_benchmark("learning_curve")


@pytest.fixture(scope="module")
def sites():
    return load_sites()


def test_the_test_split_is_60_plus_tasks_of_held_out_sites_without_leaks(sites):
    tasks = bench.site_tasks(sites, bench.HELD_OUT, NOW)
    hosts = {sites[name].spec.hostname for name in bench.HELD_OUT}
    test = tasks[tasks["split"] == "test"]
    assert len(test) >= 60 and set(test["website"]) == hosts
    assert not tasks.loc[tasks["split"] == "train", "website"].isin(hosts).any()
    assert tasks["parent_task_id"].notna().any()  # decomposed tasks are in, with their parents' split
    assert leaks(tasks).empty and tasks["task_id"].is_unique
    demos = bench.demo_tasks(tasks, 4, seed=0)
    assert (demos["split"] == "train").all() and demos.groupby("website").size().max() == 4
    assert set(demos["website"]) == set(tasks.loc[tasks["split"] == "train", "website"])
    assert bench.demo_tasks(tasks, 4, seed=0).equals(demos) and len(bench.demo_tasks(tasks, 0, 0)) == len(
        tasks[tasks["split"] == "train"])
    assert len(bench.specs_of(demos)) == len(demos)


def test_success_needs_an_answer_and_the_verifier(lake, sites):
    tasks = bench.site_tasks({"shop-a": sites["shop-a"]}, [], NOW)
    task = tasks[tasks["reference_answer"].notna()].iloc[0]  # a question: the answer decides
    state = json.dumps({"site": "shop-a", "page": "home", "state": {}, "hash": "x"})

    def episode(name: str, termination: str, answer: str | None) -> Trajectory:
        return Trajectory(trajectory_id=name, task_id=task["task_id"], iteration=1, policy="scorer",
                          policy_version="s", horizon=10, n_steps=3, termination=termination, answer=answer,
                          final_state=state, started_at=NOW, ended_at=NOW)
    lake.write_table("trajectories", rows([episode("right", "answered", task["reference_answer"]),
                                           episode("wrong", "answered", "no idea"),
                                           episode("silent", "max_steps", None)]))
    judged = bench.verdicts(lake, ["right", "wrong", "silent"], tasks).set_index("trajectory_id")["success"]
    assert judged.to_dict() == {"right": True, "wrong": False, "silent": False}
    steps = pd.DataFrame({"trajectory_id": ["right", "right", "wrong"], "t": [0, 1, 0]})
    accepted = bench.accepted_successes(judged.reset_index(), steps)
    assert accepted[["trajectory_id", "t", "weight"]].values.tolist() == [["right", 0, 1.0], ["right", 1, 1.0]]
