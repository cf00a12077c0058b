"""MiniWoB++ as an external world: its tasks enter once, are test tasks held out as `external` (never
validation) unless the profile trains on them, train tasks never share a family with a held-out one, the
held-out kind is drawn as a kind of its own by evaluations, and episodes are judged by the page's own reward,
with no gate for not answering."""

from __future__ import annotations

import datetime as dt
import json

import pandas as pd
import pytest

from stages.external import miniwob_tasks, miniwob_train_ids, missing_miniwob_pairs
from stages.judge.episode import Episode
from stages.judge.exact import exact_judgment
from stages.judge.gates import gate_judgments
from stages.sample import evaluation_batch, training_batch
from stages.split import LeakageError, assigned_splits, leaks
from tests.conftest import trajectories_frame
from tests.stages.test_split_sample_export import universe
from webgym.config import ConfigError, MiniwobConfig, SplitConfig
from webgym.sites import miniwob

NOW = dt.datetime(2026, 12, 4, tzinfo=dt.UTC)


def _said(pairs):
    return {(task, seed): f"Do {task} with seed {seed}" for task, seed in pairs}


def test_listed_tasks_enter_once_per_seed_with_the_utterance_read():
    config = MiniwobConfig(tasks=["click-button", "enter-text", "click-button"], seeds=2)
    rows = miniwob_tasks(config, pd.DataFrame({"task_id": []}), _said)
    assert rows["task_id"].tolist() == ["miniwob/click-button/0", "miniwob/click-button/1",
                                        "miniwob/enter-text/0", "miniwob/enter-text/1"]
    assert rows["text"].tolist()[1] == "Do click-button with seed 1" and set(rows["source"]) == {"miniwob"}
    again = miniwob_tasks(config, rows[["task_id"]].iloc[:3], _said)
    assert again["task_id"].tolist() == ["miniwob/enter-text/1"]
    assert miniwob_tasks(MiniwobConfig(), rows, _said).empty
    later = miniwob_tasks(MiniwobConfig(tasks=["enter-text"], seeds=2, first_seed=100), rows, _said)
    assert later["task_id"].tolist() == ["miniwob/enter-text/100", "miniwob/enter-text/101"]


def test_a_task_the_agent_cannot_do_or_a_misspelt_one_is_named():
    with pytest.raises(ConfigError, match=r"\['drag-box', 'click-buton'\]"):
        missing_miniwob_pairs(MiniwobConfig(tasks=["click-button", "drag-box", "click-buton"]), set())


def test_train_tasks_enter_with_their_own_seeds_and_none_may_share_a_held_out_family():
    config = MiniwobConfig(tasks=["click-tab"], train_tasks=["read-table", "form-sequence-2"], train_seeds=2)
    rows = miniwob_tasks(config, pd.DataFrame({"task_id": []}), _said)
    assert rows["task_id"].tolist() == ["miniwob/click-tab/0", "miniwob/read-table/1000", "miniwob/read-table/1001",
                                        "miniwob/form-sequence-2/1000", "miniwob/form-sequence-2/1001"]
    assert miniwob_train_ids(config) == set(rows["task_id"][1:])
    with pytest.raises(ConfigError, match=r"train_tasks: \['click-tab-2-hard'\] share a family"):
        miniwob_train_ids(MiniwobConfig(tasks=["click-tab"], train_tasks=["read-table", "click-tab-2-hard"]))
    with pytest.raises(ConfigError, match=r"\['drag-box'\]"):
        miniwob_train_ids(MiniwobConfig(train_tasks=["drag-box"]))


def test_the_main_jobs_train_tasks_share_no_family_with_any_task_it_or_the_external_benchmark_holds_out():
    from webgym import PROJECT_ROOT
    from webgym.config import load_config

    config = load_config(PROJECT_ROOT / "configs" / "local.yaml").taskset.miniwob
    assert len(miniwob_train_ids(config)) == len(config.train_tasks) * config.train_seeds > 0
    benchmark = miniwob.task_names()[:40]  # benchmarks/external.py --tasks 40, issue 49's measure
    held_out = {miniwob.family_of(task) for task in [*config.tasks, *benchmark]}
    assert not held_out & {miniwob.family_of(task) for task in config.train_tasks}


def _with_external(seeds: int = 2, train: tuple[str, ...] = ()) -> pd.DataFrame:
    said = _said([(t, s) for t in ("click-button", "login-user", *train) for s in range(seeds)])
    external = pd.DataFrame([miniwob.task_row(t, s, text, NOW) for (t, s), text in said.items()])
    return pd.concat([universe(), external], ignore_index=True)


def test_external_tasks_are_always_test_tasks_held_out_as_external_and_never_trained_on():
    tasks = _with_external()
    for seed in range(5):
        result = assigned_splits(tasks, SplitConfig(test_websites=3, validation_fraction=0.2, seed=seed))
        external = result[result["source"] == "miniwob"]
        assert len(external) == 4 and set(external["split"]) == {"test"} and set(external["held_out"]) == {"external"}
        assert leaks(result).empty
        train = result[result["split"] == "train"].assign(difficulty=3)
        assert not training_batch(train, len(train), None, seed=seed)["source"].eq("miniwob").any()
    assert miniwob.HOST not in set(result.loc[result["split"] != "test", "website"].dropna())


def test_listed_train_tasks_are_trained_on_and_split_from_the_held_out_ones_by_family():
    tasks = _with_external(train=("read-table", "read-table-2"))
    train_ids = {miniwob.task_id(t, s) for t in ("read-table", "read-table-2") for s in range(2)}
    result = assigned_splits(tasks, SplitConfig(test_websites=3, seed=0), external_train=train_ids)
    external = result[result["source"] == "miniwob"].set_index("task_id")
    assert set(external.loc[sorted(train_ids), "split"]) == {"train"}
    assert external.loc[sorted(train_ids), "held_out"].isna().all()
    assert external.loc["miniwob/login-user/1", ["split", "held_out", "family"]].tolist() == [
        "test", "external", "miniwob/login-user"]
    assert set(external.loc[sorted(train_ids), "family"]) == {"miniwob/read-table"}
    assert leaks(result).empty  # one host on both sides, as the external world's pages are
    with pytest.raises(LeakageError, match="miniwob/click-button"):
        assigned_splits(tasks, SplitConfig(test_websites=3, seed=0), external_train={"miniwob/click-button/0"})


def test_evaluations_draw_the_external_kind_beside_the_others():
    result = assigned_splits(_with_external(seeds=5), SplitConfig(test_websites=3, seed=0))
    batch = evaluation_batch(result, size=4, seed=0)
    assert batch["held_out"].fillna("site").value_counts()["external"] == 4
    assert batch.equals(evaluation_batch(result, size=4, seed=0))


def _episode(state: dict | None) -> Episode:
    return Episode(trajectory_id="r", task_id="miniwob/click-button/0", task="Click on the \"ok\" button.",
                   website=miniwob.HOST, rubric=None, reference_answer=None,
                   evaluation=json.dumps({"kind": "miniwob", "task": "click-button", "seed": 0}), answer=None,
                   final_url=miniwob.page_url("click-button"),
                   final_state=None if state is None else json.dumps(state), screenshots=(), history=())


@pytest.mark.parametrize("state, status, success, rationale", [
    ({"raw_reward": 1, "reward": 0.9, "task_ended": True}, "judged", True, "MiniWoB++ raw reward 1 (the task ended)"),
    ({"raw_reward": 0.5, "reward": 0.4, "task_ended": True}, "judged", True,
     "MiniWoB++ raw reward 0.5 (the task ended)"),
    ({"raw_reward": -1, "reward": -1, "task_ended": True}, "judged", False, "MiniWoB++ raw reward -1 (the task ended)"),
    ({"raw_reward": 0, "reward": 0, "task_ended": False}, "judged", False,
     "MiniWoB++ raw reward 0 (the task had not ended)"),
    (None, "not_evaluable", False, "no MiniWoB++ reward was recorded (the page never opened)"),
])
def test_the_exact_judge_pays_the_pages_own_reward_and_keeps_the_credit(state, status, success, rationale):
    verdict = exact_judgment(_episode(state))
    assert (verdict.status, verdict.success, verdict.reward, verdict.rationale) == (
        status, success, 1.0 if success else 0.0, rationale)


def test_an_episode_whose_page_ended_the_task_is_not_gated_for_not_answering():
    trajectories = trajectories_frame()
    trajectories.loc[0, ["termination", "answer"]] = ["task_ended", None]
    trajectories.loc[1, ["termination", "answer"]] = ["max_steps", None]
    assert gate_judgments(trajectories)["trajectory_id"].tolist() == ["r1"]
