"""The frontier curriculum: which training tasks a batch re-draws and how the rest is weighted."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from stages.sample import curriculum_batch, frontier_weights, task_outcomes, training_batch


def world() -> pd.DataFrame:
    """Two families of 3 sites x 4 goals (difficulty 2) on training sites, plus one test task."""
    tasks = [{"task_id": f"{family}-{site}-{goal}", "source_id": f"{family}-{site}/g{goal}", "family": family,
              "website": f"{family}-{site}.test", "difficulty": 2, "split": "train"}
             for family in ("shop", "mail") for site in "abc" for goal in range(4)]
    tasks.append({"task_id": "held", "source_id": "mail-z/g0", "family": "mail", "website": "mail-z.test",
                  "difficulty": 2, "split": "test"})
    return pd.DataFrame(tasks)


def outcomes(*rows: tuple[str, int, int]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["task_id", "tries", "successes"])


def test_outcomes_count_the_policys_judged_training_rollouts_of_earlier_iterations_only():
    trajectories = pd.DataFrame({
        "trajectory_id": ["a", "b", "c", "d", "e", "f"],
        "task_id": ["t1", "t1", "t2", "t2", "t3", "t1"],
        "iteration": [1, 2, 1, 0, 1, 3],
        "purpose": ["train", "train", "train", "demonstration", "evaluation", "train"]})
    verdicts = pd.DataFrame({"trajectory_id": ["a", "b", "d", "e", "f"], "success": [True, False, True, True, True]})
    counted = task_outcomes(trajectories, verdicts, before=3).set_index("task_id")
    assert counted.to_dict("index") == {"t1": {"tries": 2, "successes": 1}}  # c unjudged, d/e not training, f later
    assert task_outcomes(trajectories, verdicts, before=0).empty


def test_goals_on_the_frontier_weigh_more_than_goals_always_or_never_solved():
    tasks = world()
    tried = outcomes(*[(f"shop-{s}-0", 4, 4) for s in "ab"], *[(f"shop-{s}-1", 4, 0) for s in "ab"],
                     *[(f"shop-{s}-2", 4, 2) for s in "ab"])
    weight = frontier_weights(tasks, tried).set_axis(tasks["task_id"])
    assert weight["shop-c-2"] > weight["shop-c-0"] and weight["shop-c-2"] > weight["shop-c-1"]
    assert weight["mail-a-0"] == pytest.approx(0.25)  # an untried family: the most
    family_rate = (12 + 1) / (24 + 2)  # shop: 12 of 24
    assert weight["shop-c-3"] == pytest.approx(family_rate * (1 - family_rate))  # untried goal: its family's rate
    assert (weight > 0).all()


def test_weights_steer_the_draw_within_each_band_and_the_draw_stays_reproducible():
    tasks = world()
    favoured = tasks["task_id"].str.startswith("mail")
    weights = pd.Series(np.where(favoured, 1.0, 1e-9), index=tasks.index)
    batch = training_batch(tasks, 12, {"easy": 1}, seed=3, weights=weights)
    assert set(batch["task_id"]) == set(tasks.loc[favoured & (tasks["split"] == "train"), "task_id"])
    assert batch.equals(training_batch(tasks, 12, {"easy": 1}, seed=3, weights=weights))
    assert training_batch(tasks, 5, None, seed=3, weights=weights)["task_id"].str.startswith("mail").all()


def test_a_batch_retries_half_solved_then_failed_tasks_up_to_its_share_and_never_a_test_or_solved_one():
    tasks = world()
    tried = outcomes(("shop-a-0", 2, 1), ("shop-b-0", 2, 1), *[(f"mail-{s}-{g}", 1, 0) for s in "ab" for g in "01"],
                     ("shop-c-3", 3, 3), ("held", 1, 0))
    batch = curriculum_batch(tasks, tried, 8, {"easy": 1}, seed=5, retry_share=0.5)
    ids = set(batch["task_id"])
    assert len(batch) == 8 and batch["task_id"].is_unique and "held" not in ids
    assert {"shop-a-0", "shop-b-0"} <= ids  # half-solved come first
    assert len(ids & {f"mail-{s}-{g}" for s in "ab" for g in "01"}) >= 2  # then failed ones fill the share
    assert batch.equals(curriculum_batch(tasks, tried, 8, {"easy": 1}, seed=5, retry_share=0.5))
    none_retried = curriculum_batch(tasks, tried, 8, {"easy": 1}, seed=5, retry_share=0.0)
    assert len(none_retried) == 8 and "held" not in set(none_retried["task_id"])


def test_blocklisted_websites_are_not_retried():
    tasks = world()
    tried = outcomes(("shop-a-0", 2, 1), ("shop-b-1", 2, 0))
    batch = curriculum_batch(tasks, tried, 6, None, seed=1, blocklist=["shop-a.test"], retry_share=1.0)
    assert "shop-b-1" in set(batch["task_id"]) and not (batch["website"] == "shop-a.test").any()


def test_before_anything_is_tried_the_batch_is_the_plain_draw():
    tasks = world()
    none = outcomes()
    assert curriculum_batch(tasks, none, 8, {"easy": 1}, seed=4).equals(training_batch(tasks, 8, {"easy": 1}, seed=4))
