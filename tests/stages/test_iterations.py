"""The nightly loop's bookkeeping at every point a run can be killed in an iteration: the rerun plans
the same iteration, rolls out the checkpoint of the iteration before it, stays the warm start in
iteration 0, and resumes at evaluate once the iteration's checkpoint exists. An iteration whose rollouts
gave no training signal ends without a checkpoint, finished by the evaluation of the policy it kept."""

from __future__ import annotations

import datetime as dt

import pandas as pd

from stages.iterations import plan_iteration, rolled_out

T0 = dt.datetime(2026, 11, 22, 3, 0, tzinfo=dt.UTC)


def _at(minutes: int) -> dt.datetime:
    return T0 + dt.timedelta(minutes=minutes)


def _checkpoints(*rows: tuple[int, int]) -> pd.DataFrame:
    """(iteration, minute saved) per checkpoint."""
    return pd.DataFrame([{"checkpoint_id": f"it{i}", "iteration": i, "path": f"/ck/it{i}",
                          "objective": "sft" if i == 0 else "filtered_bc", "created_at": _at(m)} for i, m in rows],
                        columns=["checkpoint_id", "iteration", "path", "objective", "created_at"])


def _evals(*rows: tuple[int, int]) -> pd.DataFrame:
    """(iteration, minute evaluated) per evals row of the test split."""
    return pd.DataFrame([{"iteration": i, "split": "test", "evaluated_at": _at(m)} for i, m in rows],
                        columns=["iteration", "split", "evaluated_at"])


def _trajectories(*iterations: int, ended: int = 0, purpose: str = "train") -> pd.DataFrame:
    """Episodes of these iterations, all of one purpose, ended at minute `ended`."""
    return pd.DataFrame({"iteration": pd.Series(iterations, dtype="int64"), "purpose": purpose,
                         "ended_at": _at(ended)})


def test_warm_start_killed_before_its_checkpoint_reruns_the_warm_start():
    for trajectories in (_trajectories(), _trajectories(0, 0)):  # killed in rollout / judge / train
        plan = plan_iteration(_checkpoints(), _evals(), trajectories, warm_start_tasks=6)
        assert (plan.iteration, plan.warm_start, plan.checkpoint, plan.trained) == (0, True, None, None)


def test_warm_start_killed_in_evaluate_resumes_at_evaluate_and_stays_the_warm_start():
    # the untrained baseline was evaluated as iteration 0 before the checkpoint: that is not its evaluation
    plan = plan_iteration(_checkpoints((0, 10)), _evals((0, 1)), _trajectories(0, 0, 0), warm_start_tasks=6)
    assert (plan.iteration, plan.warm_start, plan.checkpoint) == (0, True, None)
    assert plan.trained is not None and plan.trained["checkpoint_id"] == "it0"


def test_rollout_iteration_killed_before_its_checkpoint_rolls_out_the_previous_checkpoint():
    plan = plan_iteration(_checkpoints((0, 10), (1, 30)), _evals((0, 11), (1, 31)), _trajectories(0, 1, 2),
                          warm_start_tasks=6)
    assert (plan.iteration, plan.warm_start, plan.checkpoint, plan.trained) == (2, False, "/ck/it1", None)


def test_rollout_iteration_killed_in_evaluate_resumes_at_evaluate_with_its_own_checkpoint():
    plan = plan_iteration(_checkpoints((0, 10), (1, 30), (2, 50)), _evals((0, 11), (1, 31)), _trajectories(0, 1, 2),
                          warm_start_tasks=6)
    assert (plan.iteration, plan.warm_start, plan.checkpoint) == (2, False, "/ck/it1")
    assert plan.trained["path"] == "/ck/it2"


def test_an_evaluated_iteration_is_finished():
    plan = plan_iteration(_checkpoints((0, 10), (1, 30)), _evals((0, 11), (1, 31)), _trajectories(0, 1),
                          warm_start_tasks=6)
    assert (plan.iteration, plan.checkpoint, plan.trained) == (2, "/ck/it1", None)


def test_rolled_out_leaves_the_evaluation_episodes_out():
    trajectories = pd.DataFrame({"trajectory_id": ["a", "b", "c", "d"], "iteration": [1, 1, 1, 0],
                                 "purpose": ["train", "evaluation", None, "train"]})
    assert rolled_out(trajectories, 1) == ["a", "c"]


def test_an_iteration_without_training_signal_is_finished_by_its_evaluation():
    # iteration 2 rolled out (until minute 45), accept kept nothing, ck1 stayed served and was evaluated at 50
    trajectories = pd.concat([_trajectories(0, 1), _trajectories(2, ended=45)])
    plan = plan_iteration(_checkpoints((0, 10), (1, 30)), _evals((0, 11), (1, 31), (2, 50)), trajectories,
                          warm_start_tasks=6)
    assert (plan.iteration, plan.checkpoint, plan.checkpoint_iteration, plan.trained) == (3, "/ck/it1", 1, None)


def test_an_evaluation_run_by_hand_under_a_later_iteration_does_not_move_the_loop():
    by_hand = _trajectories(5, ended=40, purpose="evaluation")
    plan = plan_iteration(_checkpoints((0, 10), (1, 30)), _evals((0, 11), (1, 31), (5, 41)),
                          pd.concat([_trajectories(0, 1), by_hand]), warm_start_tasks=6)
    assert (plan.iteration, plan.checkpoint) == (2, "/ck/it1")


def test_an_iteration_without_training_signal_killed_before_its_evaluation_runs_again():
    trajectories = pd.concat([_trajectories(0, 1), _trajectories(2, ended=45)])
    plan = plan_iteration(_checkpoints((0, 10), (1, 30)), _evals((0, 11), (1, 31)), trajectories, warm_start_tasks=6)
    assert (plan.iteration, plan.checkpoint, plan.trained) == (2, "/ck/it1", None)


def test_the_untrained_evaluation_does_not_finish_iteration_0_without_a_warm_start():
    untrained = _trajectories(0, ended=1, purpose="evaluation")
    plan = plan_iteration(_checkpoints(), _evals((0, 1)), pd.concat([untrained, _trajectories(0, ended=5)]), 0)
    assert (plan.iteration, plan.untrained) == (0, True)  # rolled out after the untrained evaluation: not finished
    plan = plan_iteration(_checkpoints(), _evals((0, 1), (0, 6)), pd.concat([untrained, _trajectories(0, ended=5)]), 0)
    assert (plan.iteration, plan.checkpoint, plan.untrained) == (1, None, True)  # no signal, evaluated at 6
