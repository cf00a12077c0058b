"""The learning-curve benchmark measures what it claims: each seed's profile changes the seeds and the lake
only, the curve's points are the headline test evaluation's (untrained, warm start, iterations) per
held-out kind with the external MiniWoB++ tasks apart, each point is paired task for task with the warm
start, and the targets are computed from the pooled counts and pairs."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys

import pandas as pd

from schemas.checkpoints import Checkpoint
from schemas.evals import Eval
from tests.benchmarks import load_benchmark
from tests.conftest import NOW, rows
from webgym import PROJECT_ROOT
from webgym.config import load_config
from webgym.lake import Lake

bench = load_benchmark("learning_curve")


def test_a_seed_profile_sets_every_seed_and_its_own_lake_and_nothing_else(tmp_path):
    base = load_config(PROJECT_ROOT / "configs" / "local.yaml")
    config = load_config(bench.seed_profile(PROJECT_ROOT / "configs" / "local.yaml", 2, tmp_path, 90, 2))
    assert (config.policy.seed, config.policy.scorer.seed, config.taskset.sample.seed, config.accept.seed,
            config.train.seed) == (2, 2, 2, 2, 2)
    assert config.lake.data_dir == str(tmp_path / "lake") and (config.nightly.eval_tasks, config.nightly.iterations) == (90, 2)
    assert config.taskset.split == base.taskset.split  # the same held-out sites for every seed
    assert config.train.model_copy(update={"seed": 0}) == base.train


def evals(lake, checkpoint: str, iteration: int, successes: dict[str, int], evaluation: str = "e1",
          split: str = "test", at: int = 0, solved: dict[str, set[int]] | None = None) -> None:
    """10 episodes of each held-out kind in `successes`: the first `successes[kind]` tasks solved (or the
    task numbers of `solved[kind]`), the first two hard (the external ones have no band)."""
    def success(kind: str, i: int) -> bool:
        return i in solved[kind] if solved else i < successes[kind]

    lake.write_table("evals", rows([
        Eval(trajectory_id=f"{evaluation}-{checkpoint}-{iteration}-{kind}-{i}", evaluation=evaluation,
             iteration=iteration, checkpoint=checkpoint, split=split, held_out=kind, task_id=f"{kind}{i}",
             difficulty_band=None if kind == "external" else "hard" if i < 2 else "easy", domain="shopping",
             success=success(kind, i), evaluated_at=NOW + dt.timedelta(minutes=at))
        for kind in (solved or successes) for i in range(10)]))


def test_points_are_the_headline_test_evaluation_labelled_and_in_order(lake):
    lake.write_table("checkpoints", rows([
        Checkpoint(checkpoint_id=c, iteration=i, path=f"/{c}", objective="sft", metrics={}, created_at=NOW)
        for c, i in (("warm", 0), ("c1", 1))]))
    evals(lake, "scorer-init", 0, {"site": 0, "family": 0, "external": 4}, at=0)
    evals(lake, "warm", 0, {"site": 3, "family": 1, "external": 5}, at=1)
    evals(lake, "c1", 1, {"site": 6, "family": 2, "external": 7}, at=2)
    evals(lake, "c1", 1, {"site": 10, "family": 10}, evaluation="v", split="validation", at=3)
    evals(lake, "c1", 1, {"site": 10, "family": 10}, evaluation="other-size", at=4)
    points = bench.seed_points(bench.headline_evals(lake))
    assert points.drop_duplicates("point")["point"].tolist() == ["untrained", "warm start", "it1"]
    table = points.set_index(["point", "kind"])[["episodes", "successes"]]
    assert table.loc[("it1", "same family")].tolist() == [10, 6]
    assert table.loc[("it1", "unseen family")].tolist() == [10, 2]
    assert table.loc[("it1", "external")].tolist() == [10, 7]  # its own kind, not in "all"
    assert table.loc[("it1", "all")].tolist() == [20, 8] and table.loc[("it1", "hard band")].tolist() == [4, 4]


def test_each_later_point_is_paired_task_for_task_with_the_warm_start(lake):
    lake.write_table("checkpoints", rows([
        Checkpoint(checkpoint_id=c, iteration=i, path=f"/{c}", objective="sft", metrics={}, created_at=NOW)
        for c, i in (("warm", 0), ("c1", 1), ("c2", 2))]))
    evals(lake, "scorer-init", 0, {"site": 0, "family": 0}, at=0)
    evals(lake, "warm", 0, {}, solved={"site": {0, 1, 2}, "family": {5}, "external": set()}, at=1)
    evals(lake, "c1", 1, {}, solved={"site": {1, 2, 3, 4}, "family": {6, 7}, "external": set(range(10))}, at=2)
    evals(lake, "c2", 2, {}, solved={"site": {0, 1, 2}, "family": {5}, "external": set()}, at=3)
    pairs = bench.seed_pairs(bench.headline_evals(lake)).set_index("point")
    assert pairs.index.tolist() == ["it1", "it2"]
    # it1: gained site 3, 4 and family 6, 7; lost site 0 and family 5; the external tasks are not paired
    assert pairs.loc["it1"].tolist() == [20, 4, 2]
    assert pairs.loc["it2"].tolist() == [20, 0, 0]  # the same tasks as the warm start: nothing either way
    pooled = bench.pool_pairs([pairs.reset_index(), pairs.reset_index()]).set_index("point")
    assert pooled.loc["it1"].tolist() == [40, 8, 4]


def test_an_arm_is_paired_point_by_point_with_the_base_arm_of_the_same_seed(tmp_path):
    lever, base = Lake(str(tmp_path / "lever")), Lake(str(tmp_path / "base"))
    for arm in (lever, base):
        arm.write_table("checkpoints", rows([
            Checkpoint(checkpoint_id=c, iteration=i, path=f"/{c}", objective="sft", metrics={}, created_at=NOW)
            for c, i in (("warm", 0), ("c1", 1))]))
        evals(arm, "scorer-init", 0, {"site": 0, "family": 0}, at=0)
    evals(lever, "warm", 0, {}, solved={"site": {0, 1, 2, 3}, "family": {5}, "external": set(range(10))}, at=1)
    evals(base, "warm", 0, {}, solved={"site": {0, 1}, "family": {5, 6}, "external": set()}, at=1)
    evals(lever, "c1", 1, {"site": 5, "family": 0}, at=2)
    evals(base, "c1", 1, {"site": 5, "family": 0}, at=2)
    pairs = bench.arm_pairs(bench.headline_evals(lever), bench.headline_evals(base)).set_index("point")
    assert pairs.loc["warm start"].tolist() == [20, 2, 1]  # site 2 and 3 gained, family 6 lost; external apart
    assert pairs.loc["it1"].tolist() == [20, 0, 0] and pairs.loc["untrained"].tolist() == [20, 0, 0]


def curve(all_: list[int], unseen: list[int], hard: list[int], n: int = 100) -> pd.DataFrame:
    """A pooled (or one seed's) curve over untrained, warm start, it1, it2: `all_` successes of 2n synthetic
    episodes, `unseen` of n unseen-family ones, `hard` of 50 hard ones."""
    frame = []
    for order, point in enumerate(["untrained", "warm start", "it1", "it2"]):
        frame += [{"point": point, "kind": "unseen family", "episodes": n, "successes": unseen[order], "order": order},
                  {"point": point, "kind": "all", "episodes": 2 * n, "successes": all_[order], "order": order},
                  {"point": point, "kind": "hard band", "episodes": 50, "successes": hard[order], "order": order}]
    return pd.DataFrame(frame)


def pairs(gained: int, lost: int) -> pd.DataFrame:
    return pd.DataFrame([{"point": "it2", "paired": 200, "gained": gained, "lost": lost}])


def test_the_targets_read_the_pooled_curve_each_seed_and_the_pairs():
    met = bench.targets(curve([2, 40, 60, 95], [1, 10, 20, 31], [0, 5, 10, 13]),
                        {0: curve([1, 20, 30, 48], [0, 5, 10, 16], [0, 2, 5, 7], n=50),
                         1: curve([1, 20, 30, 47], [1, 5, 10, 15], [0, 3, 5, 6], n=50)}, pairs(60, 5))
    assert met["all_last"] == 0.475 and met["all_last_met"] and met["unseen_family_last_met"]
    assert met["hard_band_last_met"] is True and met["hard_band_episodes"] == 50  # JSON-ready, not numpy
    assert met["nights_add_points"] == 27.5 and met["nights_add_met"]
    assert met["nights_add_significant"] and met["nights_add_p"] < 1e-10
    assert met["nights_add_per_seed_points"] == {0: 28.0, 1: 27.0} and met["nights_add_every_seed_met"]
    assert met["never_falls_by_more_than_its_interval"]


def test_the_targets_say_what_is_missed():
    missed = bench.targets(curve([2, 60, 30, 70], [1, 10, 20, 29], [0, 5, 10, 12]),
                           {0: curve([1, 30, 15, 36], [0, 5, 10, 16], [0, 2, 5, 7], n=50),
                            1: curve([1, 30, 15, 29], [1, 5, 10, 13], [0, 3, 5, 5], n=50)}, pairs(14, 4))
    assert missed["all_last"] == 0.35 and not missed["all_last_met"] and not missed["unseen_family_last_met"]
    assert not missed["hard_band_last_met"]  # 12 of 50 is under 25%
    assert missed["nights_add_points"] == 5.0 and not missed["nights_add_met"]
    assert not missed["nights_add_significant"]  # 14 against 4: p = 0.03, not under 0.01
    assert missed["nights_add_per_seed_points"] == {0: 6.0, 1: -1.0} and not missed["nights_add_every_seed_met"]
    assert not missed["never_falls_by_more_than_its_interval"]  # 60 -> 30 of 200 is beyond its interval


def test_a_base_that_is_no_folder_is_named_before_any_seed_runs(tmp_path):
    done = subprocess.run([sys.executable, str(PROJECT_ROOT / "benchmarks" / "learning_curve.py"), "--seeds", "1",
                           "--out", str(tmp_path / "out"), "--base", str(tmp_path / "nowhere")],
                          capture_output=True, text=True, cwd=PROJECT_ROOT)
    assert done.returncode == 2 and f"--base {tmp_path / 'nowhere'}: no such folder" in done.stderr
    assert not (tmp_path / "out").exists()  # no seed was started


def test_decisions_are_counted_per_point_and_oracle_kind_from_the_labelled_evaluation_steps(lake):
    from schemas.steps import Action, Element, Step

    page = [Element(mark=1, tag="input", role="checkbox", text="Newsletter", x=10, y=10, width=20, height=20)]
    toggle, done = Action(name="click", mark=1), Action(name="answer", text="Done.")
    made = {"warm": [done, done], "c1": [toggle, done]}  # the warm start answers too early
    lake.write_table("steps", rows([
        Step(trajectory_id=tid, t=t, elements=page, page_text="Settings", actions=[action],
             expert_actions=[[toggle, done][t]]) for tid, actions in made.items() for t, action in enumerate(actions)]))
    evals_ = pd.DataFrame({"trajectory_id": ["warm", "c1", "unlabelled"], "point": ["warm start", "it1", "it1"]})
    counted = bench.seed_decisions(lake, evals_)
    assert counted.values.tolist() == [["it1", "all", 2, 2], ["it1", "done", 1, 1], ["it1", "toggle", 1, 1],
                                       ["warm start", "all", 2, 1], ["warm start", "done", 1, 1],
                                       ["warm start", "toggle", 1, 0]]
