"""Accept: which steps each objective learns from, against hand-computed values."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from schemas import schema_for
from schemas.accepted import SCHEMA as ACCEPTED
from schemas.judgments import Judgment
from schemas.steps import Action, Step
from schemas.tasks import Task
from schemas.trajectories import Trajectory
from stages.accept import (Acceptance, accept, dagger_steps, filtered_bc_steps, grpo_steps, judged_episodes,
                           reinforce_steps, repeated_steps, replay_sample, sft_steps)
from tests.conftest import NOW, rows, tasks_frame
from webgym import warehouse
from webgym.config import AcceptConfig


def _tasks() -> pd.DataFrame:
    """conftest's t1, t2 (train, shop-a), t3 (test, mail-b), plus t4 (train, shop-a), t5 (unsplit,
    new-c), t6 (train, but on the test website mail-b) and t7 (validation, shop-v); and MiniWoB++ tasks, all
    on one website: m1 (train, family click-tab), m2 (test, family choose-date) and m3 (train, but of m2's
    family)."""
    extra = rows([Task(task_id=task, source="synthetic", source_id=task, text=f"task {task}", website=site,
                       difficulty=1, split=split, created_at=NOW)
                  for task, site, split in [("t4", "shop-a.test", "train"), ("t5", "new-c.test", None),
                                            ("t6", "mail-b.test", "train"), ("t7", "shop-v.test", "validation")]])
    miniwob = rows([Task(task_id=task, source="miniwob", source_id=task, text=f"task {task}", website="miniwob.local",
                         split=split, held_out="external" if split == "test" else None, family=f"miniwob/{family}",
                         created_at=NOW)
                    for task, family, split in [("m1", "click-tab", "train"), ("m2", "choose-date", "test"),
                                                ("m3", "choose-date", "train")]])
    return pd.concat([tasks_frame(), extra, miniwob], ignore_index=True)


def _world(*episodes: dict) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(verdicts, trajectories, steps) of episodes given as dicts: id, task, iteration, reward (success
    when 1), shots (one screenshot hash per step), and optionally policy, group, blocked, status,
    responses, parse_errors (steps with a parse error), labels (steps the oracle labelled), termination,
    verdict (False: not judged)."""
    verdicts, trajectories, steps = [], [], []
    for e in episodes:
        shots = e.get("shots", "ab")
        reward = e.get("reward", 1.0)
        trajectories.append(Trajectory(
            trajectory_id=e["id"], task_id=e.get("task", "t1"), iteration=e.get("iteration", 0),
            group_id=e.get("group"), policy=e.get("policy", "chat"), policy_version="v", horizon=10,
            n_steps=len(shots), termination=e.get("termination", "answered"), started_at=NOW, ended_at=NOW))
        responses = e.get("responses", ["r"] * len(shots))
        steps += [Step(trajectory_id=e["id"], t=t, screenshot_sha256=sha, response=responses[t],
                       parse_error="bad" if t in e.get("parse_errors", ()) else None,
                       expert_actions=[Action(name="click", mark=1)] if t in e.get("labels", ()) else None)
                  for t, sha in enumerate(shots)]
        if e.get("verdict", True):
            verdicts.append({"trajectory_id": e["id"], "success": reward == 1.0, "reward": reward,
                             "status": e.get("status", "judged"), "blocked": e.get("blocked", False)})
    return pd.DataFrame(verdicts), rows(trajectories), rows(steps)


def _run(function, *episodes: dict, iteration: int = 0, **config) -> Acceptance:
    verdicts, trajectories, steps = _world(*episodes)
    judged, _ = judged_episodes(verdicts, trajectories, _tasks(), steps)
    return function(judged, steps, iteration, AcceptConfig(**config))


def _kept(result: Acceptance) -> list[tuple[str, int]]:
    return list(result.accepted[["trajectory_id", "t"]].itertuples(index=False, name=None))


def test_repetition_marks_the_step_before_an_unchanged_screenshot_and_never_the_final_step():
    _, _, steps = _world({"id": "a", "shots": "abbb"}, {"id": "b", "shots": "cc"})
    gap = steps[(steps["trajectory_id"] == "a") & (steps["t"] != 1)]  # t 0, 2, 3: 0 -> 2 is not "next"
    assert repeated_steps(steps).tolist() == [False, True, True, False, True, False]
    assert repeated_steps(gap).tolist() == [False, True, False]


def test_filtered_bc_keeps_successes_only_without_repeated_steps_but_with_the_final_answer():
    result = _run(filtered_bc_steps,
                  {"id": "win", "shots": "abbc"},          # t1 -> t2 unchanged: t1 dropped
                  {"id": "answer", "shots": "dee"},        # answer on an unchanged page: t1 dropped, final t2 kept
                  {"id": "lost", "reward": 0.0},
                  {"id": "blocked", "blocked": True},
                  {"id": "unjudged", "reward": 0.0, "status": "error"},
                  {"id": "test", "task": "t3"},
                  {"id": "test-site", "task": "t6"},
                  {"id": "malformed", "shots": "fgh", "parse_errors": [1]})
    assert _kept(result) == [("answer", 0), ("answer", 2), ("malformed", 0), ("malformed", 2),
                             ("win", 0), ("win", 2), ("win", 3)]
    assert set(result.accepted["weight"]) == {1.0} and result.accepted["advantage"].isna().all()
    assert set(result.accepted["reason"]) == {"success"} and set(result.accepted["objective"]) == {"filtered_bc"}
    assert result.counts["steps_repeated"] == 2 and result.counts["steps_parse_error"] == 1
    assert result.counts["trajectories_blocked"] == 1 and result.counts["trajectories_unjudged"] == 1
    assert result.counts["trajectories_test_site"] == 2 and result.counts["trajectories_kept"] == 3
    kept_all = _run(filtered_bc_steps, {"id": "win", "shots": "abbc"}, repetition_penalty=False,
                    keep_parse_errors=True)
    assert _kept(kept_all) == [("win", 0), ("win", 1), ("win", 2), ("win", 3)]


def test_filtered_bc_learns_away_from_the_last_action_of_failures_the_policy_ended():
    episodes = [{"id": "win", "shots": "ab"},
                {"id": "early-done", "reward": 0.0, "shots": "cde"},                    # answered, refused
                {"id": "page-ended", "reward": -1.0, "shots": "fg", "termination": "task_ended"},
                {"id": "step-limit", "reward": 0.0, "shots": "jk", "termination": "max_steps"},
                {"id": "timeout", "reward": 0.0, "shots": "l", "termination": "timeout"},
                {"id": "blocked", "reward": 0.0, "blocked": True},
                {"id": "validation", "reward": 0.0, "task": "t7"},
                {"id": "test", "reward": 0.0, "task": "t3"}]
    episodes = [{**e, "iteration": 2} for e in episodes] + [
        {"id": "old", "reward": 0.0, "iteration": 1, "shots": "hi"},
        {"id": "too-old", "reward": 0.0, "iteration": 0, "shots": "mn"}]
    result = _run(filtered_bc_steps, *episodes, iteration=2, replay_iterations=2, failed_endings=0.5)
    assert _kept(result) == [("early-done", 2), ("old", 1), ("page-ended", 1), ("win", 0), ("win", 1)]
    endings = result.accepted[result.accepted["advantage"] < 0]
    assert set(endings["trajectory_id"]) == {"early-done", "old", "page-ended"}
    assert set(endings["weight"]) == {0.5} and set(endings["advantage"]) == {-1.0}
    assert sorted(endings["reason"]) == ["failed ending, age 0", "failed ending, age 0", "failed ending, age 1"]
    assert result.counts["steps_failed_endings"] == 3 and result.counts["steps_kept"] == 2
    assert _kept(_run(filtered_bc_steps, *episodes, iteration=2, replay_iterations=2)) == [("win", 0), ("win", 1)]


def test_an_external_world_is_held_out_by_family_not_by_its_shared_website():
    """MiniWoB++ serves every family from one website: its train tasks are learned from although held-out
    tasks share that website; a task of a held-out family never is (the split's leak check, by family)."""
    result = _run(filtered_bc_steps, {"id": "train-family", "task": "m1"}, {"id": "held-out", "task": "m2"},
                  {"id": "held-out-family", "task": "m3"}, {"id": "own-test-site", "task": "t6"})
    assert _kept(result) == [("train-family", 0), ("train-family", 1)]
    assert result.counts["trajectories_test_site"] == 3


def test_replay_buffer_covers_the_last_k_iterations_with_their_age():
    episodes = [{"id": f"i{i}", "iteration": i, "shots": "a"} for i in range(5)]
    validated = {"id": "validated", "task": "t7", "iteration": 2, "shots": "a"}  # an earlier night's validation
    result = _run(filtered_bc_steps, *episodes, validated, iteration=3, replay_iterations=2)
    assert _kept(result) == [("i2", 0), ("i3", 0)]  # not older than 2 iterations, never from the future
    assert result.counts["trajectories_validation"] == 1  # never learned from: promotion is judged on it
    assert result.accepted["reason"].tolist() == ["replay, age 1", "success"]
    assert set(result.accepted["iteration"]) == {3}


@pytest.mark.parametrize(("power", "expected"), [(0.0, 1 / 2), (1.0, 2 / 3), (2.0, 4 / 5)])
def test_replay_draw_favours_recent_steps_by_the_power_law(power, expected):
    candidates = pd.DataFrame({"age": [0] * 50 + [1] * 50})
    draws = 4000
    newest = sum(int(replay_sample(candidates, 1, power, seed)["age"].iloc[0] == 0) for seed in range(draws))
    assert newest / draws == pytest.approx(expected, abs=0.025)  # 3 standard errors at most


def test_replay_draw_takes_a_fixed_number_per_iteration_reproducibly():
    episodes = [{"id": f"i{i}", "iteration": i, "shots": "abcd"} for i in range(3)]  # 12 distinct steps
    first = _run(filtered_bc_steps, *episodes, iteration=2, replay_iterations=3, samples_per_iteration=5)
    again = _run(filtered_bc_steps, *episodes, iteration=2, replay_iterations=3, samples_per_iteration=5)
    other = _run(filtered_bc_steps, *episodes, iteration=2, replay_iterations=3, samples_per_iteration=5, seed=1)
    assert len(first.accepted) == 5 and not first.accepted.duplicated(["trajectory_id", "t"]).any()
    pd.testing.assert_frame_equal(first.accepted, again.accepted)
    assert _kept(first) != _kept(other)
    few = _run(filtered_bc_steps, *episodes, iteration=2, replay_iterations=3, samples_per_iteration=50)
    assert len(few.accepted) == 12


def test_reinforce_advantage_is_reward_minus_the_task_mean():
    result = _run(reinforce_steps,
                  {"id": "w", "task": "t1", "reward": 1.0, "shots": "abbc"},
                  {"id": "l1", "task": "t1", "reward": 0.0, "shots": "dd"},
                  {"id": "l2", "task": "t1", "reward": 0.0, "shots": "e"},
                  {"id": "alone", "task": "t2", "reward": 1.0},
                  {"id": "old", "task": "t1", "reward": 1.0, "iteration": 1},
                  {"id": "blocked", "task": "t1", "reward": 0.0, "blocked": True})
    by_step = result.accepted.set_index(["trajectory_id", "t"])
    # baseline 1/3: the success gets +2/3 (its repeated step t1 dropped), each failure -1/3 (repeats kept)
    assert list(by_step.index) == [("l1", 0), ("l1", 1), ("l2", 0), ("w", 0), ("w", 2), ("w", 3)]
    assert by_step.loc[("w", 0), "advantage"] == pytest.approx(2 / 3)
    assert by_step.loc[("l1", 1), "advantage"] == pytest.approx(-1 / 3)
    assert by_step.loc[("w", 0), "reason"] == "above task mean" and by_step.loc[("l2", 0), "reason"] == "below task mean"
    assert result.counts["trajectories_at_baseline"] == 1  # "alone" is its task's only episode: nothing to learn


def test_grpo_normalises_within_groups_and_reports_missing_groups():
    result = _run(grpo_steps,
                  {"id": "a1", "task": "t1", "group": "g1", "reward": 1.0},
                  {"id": "a2", "task": "t1", "group": "g1", "reward": 0.0},
                  {"id": "a3", "task": "t1", "group": "g1", "reward": 0.0},
                  {"id": "b1", "task": "t2", "group": "g2", "reward": 1.0},   # all succeed: no signal
                  {"id": "b2", "task": "t2", "group": "g2", "reward": 1.0},
                  {"id": "c1", "task": "t4", "group": "g3", "reward": 1.0},   # its partner was blocked
                  {"id": "c2", "task": "t4", "group": "g3", "reward": 0.0, "blocked": True},
                  {"id": "z1", "task": "t1", "group": "g1", "iteration": 1, "reward": 0.0},
                  grpo_target_groups=4)
    # rewards 1, 0, 0: mean 1/3, population std sqrt(2)/3, so (r - mean) / std = sqrt(2) and -1/sqrt(2)
    advantage = result.accepted.groupby("trajectory_id")["advantage"].first()
    assert advantage.to_dict() == pytest.approx({"a1": math.sqrt(2), "a2": -1 / math.sqrt(2), "a3": -1 / math.sqrt(2)},
                                                rel=1e-5)
    assert len(result.accepted) == 6 and set(result.accepted["reason"]) == {"group advantage"}
    assert (result.groups_total, result.groups_effective, result.groups_missing) == (3, 1, 3)
    assert result.counts["groups_zero_variance"] == 1 and result.counts["groups_too_small"] == 1
    enough = _run(grpo_steps, {"id": "a1", "group": "g", "reward": 1.0}, {"id": "a2", "group": "g", "reward": 0.0},
                  grpo_target_groups=1)
    assert enough.groups_missing == 0
    assert enough.accepted.groupby("trajectory_id")["advantage"].first().tolist() == pytest.approx([1, -1], rel=1e-5)


def test_grpo_mixes_in_the_train_tasks_demonstrations_with_their_weight_when_a_group_trains():
    demonstrations = [{"id": "o1", "task": "t1", "policy": "oracle", "shots": "ab"},
                      {"id": "o4", "task": "t4", "policy": "oracle", "shots": "c"},
                      {"id": "o3", "task": "t3", "policy": "oracle"},                  # test split
                      {"id": "late", "task": "t2", "policy": "oracle", "iteration": 2},  # after this iteration
                      {"id": "o2", "task": "t2", "policy": "oracle", "reward": 0.0}]   # failed
    group = [{"id": "a1", "task": "t2", "group": "g", "reward": 1.0, "iteration": 1},
             {"id": "a2", "task": "t2", "group": "g", "reward": 0.0, "iteration": 1}]
    result = _run(grpo_steps, *demonstrations, *group, iteration=1, grpo_demonstration_weight=0.5)
    rows = result.accepted.set_index("trajectory_id")
    assert sorted(set(rows.index)) == ["a1", "a2", "o1", "o4"] and result.counts["steps_demonstration"] == 3
    assert set(rows.loc[["o1", "o4"], "reason"]) == {"oracle demonstration"}
    assert set(rows.loc[["o1", "o4"], "weight"]) == {0.5} and set(rows.loc[["o1", "o4"], "advantage"]) == {0.0}
    assert set(rows.loc[["a1", "a2"], "weight"]) == {0.0}  # rolled-out steps learn by their advantage only
    assert set(result.accepted["objective"]) == {"grpo"} and list(result.accepted.columns) == list(ACCEPTED.columns)
    alone = _run(grpo_steps, *group, iteration=1)
    assert set(alone.accepted["trajectory_id"]) == {"a1", "a2"}  # weight 0 (the default): GRPO alone
    flat = _run(grpo_steps, *demonstrations, *group[:1], iteration=1, grpo_demonstration_weight=0.5)
    assert flat.accepted.empty  # no effective group, no update: the demonstrations wait for one


def test_grpo_groups_by_task_when_episodes_have_no_group_id():
    result = _run(grpo_steps, {"id": "a", "task": "t1", "reward": 1.0}, {"id": "b", "task": "t1", "reward": 0.0},
                  {"id": "c", "task": "t2", "reward": 1.0}, {"id": "d", "task": "t2", "reward": 0.0})
    assert (result.groups_total, result.groups_effective) == (2, 2)


def test_sft_takes_the_shortest_success_per_task_breaking_ties_by_response_length():
    result = _run(sft_steps,
                  {"id": "long", "task": "t1", "shots": "abc"},
                  {"id": "b-wordy", "task": "t1", "shots": "ab", "responses": ["a long answer", "x"]},
                  {"id": "c-terse", "task": "t1", "shots": "ab", "responses": ["short", "x"]},
                  {"id": "failed", "task": "t1", "reward": 0.0, "shots": "a"},
                  {"id": "later", "task": "t1", "shots": "a", "iteration": 1},
                  iteration=0)
    assert _kept(result) == [("c-terse", 0), ("c-terse", 1)]
    assert set(result.accepted["reason"]) == {"shortest success"} and set(result.accepted["objective"]) == {"sft"}


def test_sft_caps_tasks_per_website_and_takes_oracle_demonstrations_only_from_train_sites():
    result = _run(sft_steps,
                  {"id": "o1", "task": "t1", "policy": "oracle"},
                  {"id": "o2", "task": "t2", "policy": "oracle"},
                  {"id": "o4", "task": "t4", "policy": "oracle"},      # third shop-a task: over the cap of 2
                  {"id": "o3", "task": "t3", "policy": "oracle"},      # test split
                  {"id": "o6", "task": "t6", "policy": "oracle"},      # train task on a test website
                  {"id": "o5", "task": "t5", "policy": "oracle"},      # site not split yet: not a demonstration
                  {"id": "c5", "task": "t5", "policy": "chat"},        # the model's own success there is
                  sft_max_per_website=2)
    assert sorted(set(result.accepted["trajectory_id"])) == ["c5", "o1", "o2"]
    reasons = result.accepted.groupby("trajectory_id")["reason"].first()
    assert reasons.to_dict() == {"c5": "shortest success", "o1": "oracle demonstration", "o2": "oracle demonstration"}
    assert result.counts["trajectories_test_site"] == 2 and result.counts["trajectories_oracle_refused"] == 1
    no_oracle = _run(sft_steps, {"id": "o1", "task": "t1", "policy": "oracle"}, sft_oracle=False)
    assert no_oracle.accepted.empty


def test_accept_dispatches_on_the_objective_and_reports_bad_records():
    verdicts, trajectories, steps = _world({"id": "w", "reward": 1.0}, {"id": "l", "reward": 0.0})
    verdicts = pd.concat([verdicts, pd.DataFrame([{"trajectory_id": "ghost", "success": True, "reward": 1.0,
                                                   "status": "judged", "blocked": False}])], ignore_index=True)
    orphan = trajectories.iloc[[0]].assign(trajectory_id="orphan", task_id="nope")
    stepless = trajectories.iloc[[0]].assign(trajectory_id="stepless")
    verdicts = pd.concat([verdicts, verdicts.iloc[[0]].assign(trajectory_id="orphan"),
                          verdicts.iloc[[0]].assign(trajectory_id="stepless")], ignore_index=True)
    trajectories = pd.concat([trajectories, orphan, stepless], ignore_index=True)
    for objective, kept in [("filtered_bc", {"w"}), ("reinforce", {"w", "l"}), ("sft", {"w"})]:
        result = accept(verdicts, trajectories, steps, _tasks(), 0, AcceptConfig(objective=objective))
        assert set(result.accepted["trajectory_id"]) == kept and set(result.accepted["objective"]) == {objective}
        assert ACCEPTED.to_arrow(result.accepted).num_rows == len(result.accepted)
        assert any("ghost" in p for p in result.problems) and any("orphan" in p and "nope" in p
                                                                   for p in result.problems)
    assert any("stepless" in p and "no steps" in p for p in result.problems)
    grpo = accept(verdicts, trajectories, steps, _tasks(), 0, AcceptConfig(objective="grpo"))
    assert (grpo.groups_total, grpo.groups_effective) == (1, 1)


def test_accept_reads_the_warehouse_verdicts_and_writes_the_accepted_table(lake):
    verdicts, trajectories, steps = _world({"id": "w", "shots": "aab"}, {"id": "l", "reward": 0.0})
    judgments = [Judgment(judgment_id=f"{v.trajectory_id}-{judge}", trajectory_id=v.trajectory_id, judge=judge,
                          status="judged", success=v.success if judge == "exact" else not v.success,
                          reward=v.reward if judge == "exact" else 1 - v.reward, judged_at=NOW)
                 for v in verdicts.itertuples() for judge in ("exact", "rubric")]  # exact outranks rubric
    for name, frame in [("tasks", _tasks()), ("trajectories", trajectories), ("steps", steps),
                        ("judgments", rows(judgments))]:
        lake.write_table(name, frame)
    result = accept(warehouse.query(lake, "SELECT * FROM verdicts"), lake.read_table("trajectories"),
                    lake.read_table("steps"), lake.read_table("tasks"), 0, AcceptConfig())
    assert _kept(result) == [("w", 1), ("w", 2)]
    lake.write_table("accepted", result.accepted)
    written = lake.read_table("accepted")  # flow_run_id: the lake's (null outside a flow run), not the stage's
    pd.testing.assert_frame_equal(written.drop(columns="flow_run_id"), result.accepted.drop(columns="flow_run_id"))
    assert written["flow_run_id"].isna().all()


def test_empty_inputs_accept_nothing():
    verdicts = pd.DataFrame(columns=["trajectory_id", "success", "reward", "status", "blocked"])
    trajectories, steps = schema_for("trajectories").empty_frame(), schema_for("steps").empty_frame()
    for objective in ("filtered_bc", "reinforce", "grpo", "sft", "dagger"):
        result = accept(verdicts, trajectories, steps, _tasks(), 0, AcceptConfig(objective=objective))
        assert result.accepted.empty and list(result.accepted.columns) == ACCEPTED.columns


def test_dagger_learns_every_labelled_state_whatever_the_outcome_and_the_oracles_successes():
    episodes = [{**e, "iteration": e.get("iteration", 1)} for e in [
                {"id": "lost", "reward": 0.0, "shots": "abbc", "labels": (0, 1, 2)},  # t3 unlabelled (no plan)
                {"id": "won", "shots": "de", "labels": (0, 1)},
                {"id": "demo", "policy": "oracle", "shots": "fgg"},  # t1 repeats its screenshot: dropped
                {"id": "demo-lost", "policy": "oracle", "reward": 0.0},
                {"id": "old", "iteration": 0, "reward": 0.0, "labels": (0,)},
                {"id": "test", "task": "t3", "labels": (0, 1)},
                {"id": "blocked", "blocked": True, "labels": (0, 1)},
                {"id": "unjudged", "status": "error", "labels": (0, 1)}]]
    newest = _run(dagger_steps, *episodes, iteration=1, replay_iterations=1)
    assert _kept(newest) == [("demo", 0), ("demo", 2), ("lost", 0), ("lost", 1), ("lost", 2), ("won", 0), ("won", 1)]
    assert newest.accepted.set_index(["trajectory_id", "t"])["reason"].to_dict() == {
        ("demo", 0): "oracle demonstration", ("demo", 2): "oracle demonstration", ("lost", 0): "oracle label",
        ("lost", 1): "oracle label", ("lost", 2): "oracle label", ("won", 0): "oracle label",
        ("won", 1): "oracle label"}
    assert set(newest.accepted["objective"]) == {"dagger"} and set(newest.accepted["weight"]) == {1.0}
    assert newest.counts["steps_unlabelled"] == 1 and newest.counts["steps_repeated"] == 1
    replayed = _run(dagger_steps, *episodes, iteration=1, replay_iterations=2)
    assert replayed.accepted.set_index(["trajectory_id", "t"]).at[("old", 0), "reason"] == "oracle label, age 1"
    assert len(replayed.accepted) == 8
