"""Promotion: a checkpoint that validates worse than the served one is kept back, and the loop then rolls
out and trains from the served one; the iteration is finished only by its test evaluation."""

from __future__ import annotations

import datetime as dt

import pandas as pd
import pytest

from stages.evaluate import EvaluateReport
from stages.iterations import finished, latest_checkpoint, plan_iteration
from stages.promote import promotion, rejected_checkpoints

NOW = dt.datetime(2026, 11, 27, tzinfo=dt.UTC)


def report(successes: int, episodes: int, checkpoint: str, evaluation: str = "scorer-validation-20"
           ) -> EvaluateReport:
    return EvaluateReport(1, evaluation, [checkpoint], episodes, successes / episodes)


def episodes(checkpoint: str, solved: str, evaluation: str = "scorer-validation-20") -> pd.DataFrame:
    """The evals rows of one checkpoint on tasks t0, t1, ...: solved[i] is '1' where it solved task ti."""
    return pd.DataFrame({"evaluation": evaluation, "checkpoint": checkpoint,
                         "task_id": [f"t{i}" for i in range(len(solved))], "success": [c == "1" for c in solved]})


def decide(new: str, old: str, tolerance: float = 0.0, min_gain: int = 0) -> dict:
    """The promotion of it2 against the served it1, which solved the tasks `new` and `old` mark."""
    evals = pd.concat([episodes("it2", new), episodes("it1", old)])
    return promotion(2, "it2", report(new.count("1"), len(new), "it2"), "it1", report(old.count("1"), len(old), "it1"),
                     evals, tolerance, min_gain, NOW)


def test_a_checkpoint_that_validates_worse_is_kept_back_and_says_why_task_by_task():
    row = decide("11110000000000000001", "11111111100000000000")
    assert row["promoted"] is False and row["served_checkpoint"] == "it1"
    assert (row["success_rate"], row["served_success_rate"]) == (0.25, 0.45)
    assert "25.0% vs the served 45.0%" in row["reason"] and "it1 stays served" in row["reason"]
    assert "on the same 20 tasks 1 gained, 5 lost (exact McNemar p = 0.22" in row["reason"]


def test_equal_or_better_validation_is_promoted_and_the_tolerance_allows_a_small_drop():
    assert decide("11111111100000000000", "11111111100000000000")["promoted"] is True
    assert decide("01111111100000000000", "11111111100000000000", 0.05)["promoted"] is True
    assert decide("00111111100000000000", "11111111100000000000", 0.05)["promoted"] is False


def test_a_minimum_gain_keeps_the_served_checkpoint_on_a_tie():
    """Two tasks gained and two lost: promoted by default, kept back when a strict gain is required."""
    tie = ("11000000000000000011", "00110000000000000011")
    assert decide(*tie)["promoted"] is True
    row = decide(*tie, min_gain=1)
    assert row["promoted"] is False and "2 gained, 2 lost" in row["reason"]
    assert "at least 1 more gained than lost" in row["reason"] and "it1 stays served" in row["reason"]
    assert decide("11100000000000000011", "00110000000000000011", min_gain=1)["promoted"] is True


def test_only_tasks_both_checkpoints_were_evaluated_on_are_compared():
    """An episode missing on one side (a task added later, a crashed episode) is left out of the pairs."""
    evals = pd.concat([episodes("it2", "0111"), episodes("it1", "111")])
    row = promotion(2, "it2", report(3, 4, "it2"), "it1", report(3, 3, "it1"), evals, 0.0, 0, NOW)
    assert row["promoted"] is False and "on the same 3 tasks 0 gained, 1 lost" in row["reason"]
    with pytest.raises(ValueError, match="no validation task"):
        promotion(2, "it2", report(3, 4, "it2"), "it1", report(3, 3, "it1"), episodes("it2", "0111"), 0.0, 0, NOW)


def test_the_first_checkpoint_and_a_loop_without_validation_promote():
    assert promotion(0, "it0", report(1, 20, "it0"), None, None, episodes("it0", "1"), 0.0, 0, NOW)["promoted"] is True
    unchecked = promotion(1, "it1", None, "it0", None, episodes("it0", "1"), 0.0, 0, NOW)
    assert unchecked["promoted"] is True and unchecked["episodes"] == 0 and "no validation" in unchecked["reason"]


def test_checkpoints_measured_on_different_validation_tasks_are_not_compared():
    with pytest.raises(ValueError, match="no validation on evaluation"):
        promotion(2, "it2", report(9, 20, "it2"), "it1", report(9, 20, "it1", "scorer-validation-other"),
                  episodes("it2", "1" * 9 + "0" * 11), 0.0, 0, NOW)


def checkpoints() -> pd.DataFrame:
    return pd.DataFrame({"checkpoint_id": ["c0", "c1", "c2"], "iteration": [0, 1, 2], "path": ["/c0", "/c1", "/c2"],
                         "created_at": [NOW, NOW + dt.timedelta(hours=1), NOW + dt.timedelta(hours=2)]})


def trajectories(*iterations: int) -> pd.DataFrame:
    """Training episodes of these iterations, ended when their iteration began."""
    return pd.DataFrame({"iteration": iterations, "purpose": "train",
                         "ended_at": [NOW + dt.timedelta(hours=i) for i in iterations]})


def test_the_served_checkpoint_skips_those_kept_back():
    promotions = pd.DataFrame({"checkpoint_id": ["c0", "c1", "c2"], "promoted": [True, True, False]})
    rejected = rejected_checkpoints(promotions)
    assert rejected == {"c2"}
    assert latest_checkpoint(checkpoints(), rejected=rejected)["checkpoint_id"] == "c1"
    assert latest_checkpoint(checkpoints(), before=2)["checkpoint_id"] == "c1"
    assert latest_checkpoint(checkpoints(), rejected={"c1", "c2"})["checkpoint_id"] == "c0"
    assert rejected_checkpoints(promotions.iloc[:0]) == set()


def test_the_next_iteration_rolls_out_the_served_checkpoint_after_one_was_kept_back():
    evals = pd.DataFrame({"iteration": [0, 1, 2], "split": ["test"] * 3,
                          "evaluated_at": [NOW + dt.timedelta(hours=h, minutes=5) for h in range(3)]})
    plan = plan_iteration(checkpoints(), evals, trajectories(0, 1, 2), 6, rejected={"c2"})
    assert (plan.iteration, plan.checkpoint, plan.checkpoint_id, plan.checkpoint_iteration) == (3, "/c1", "c1", 1)
    assert not plan.warm_start


def test_an_iteration_is_finished_by_its_test_evaluation_not_its_validation():
    validation_only = pd.DataFrame({"iteration": [1], "split": ["validation"],
                                    "evaluated_at": [NOW + dt.timedelta(hours=2)]})
    assert not finished(1, checkpoints(), validation_only, trajectories(0, 1))
    assert finished(1, checkpoints(), validation_only.assign(split="test"), trajectories(0, 1))
    plan = plan_iteration(checkpoints().iloc[:2], validation_only, trajectories(0, 1), 6)
    assert (plan.iteration, plan.checkpoint_id) == (1, "c0")  # resumes iteration 1 from the checkpoint before it
