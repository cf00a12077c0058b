"""The learning-curve benchmark measures what it claims: each seed's profile changes the seeds and the lake
only, the curve's points are the headline test evaluation's (untrained, warm start, iterations) per
held-out kind, and the targets are computed from the pooled counts."""

from __future__ import annotations

import datetime as dt

import pandas as pd

from schemas.checkpoints import Checkpoint
from schemas.evals import Eval
from tests.benchmarks import load_benchmark
from tests.conftest import NOW, rows
from webgym import PROJECT_ROOT
from webgym.config import load_config

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
          split: str = "test", at: int = 0) -> None:
    """10 episodes of each held-out kind, `successes[kind]` of them successful, the first two hard."""
    lake.write_table("evals", rows([
        Eval(trajectory_id=f"{evaluation}-{checkpoint}-{iteration}-{kind}-{i}", evaluation=evaluation,
             iteration=iteration, checkpoint=checkpoint, split=split, held_out=kind, task_id=f"{kind}{i}",
             difficulty_band="hard" if i < 2 else "easy", domain="shopping", success=i < successes[kind],
             evaluated_at=NOW + dt.timedelta(minutes=at))
        for kind in ("site", "family") for i in range(10)]))


def test_points_are_the_headline_test_evaluation_labelled_and_in_order(lake):
    lake.write_table("checkpoints", rows([
        Checkpoint(checkpoint_id=c, iteration=i, path=f"/{c}", objective="sft", metrics={}, created_at=NOW)
        for c, i in (("warm", 0), ("c1", 1))]))
    evals(lake, "scorer-init", 0, {"site": 0, "family": 0}, at=0)
    evals(lake, "warm", 0, {"site": 3, "family": 1}, at=1)
    evals(lake, "c1", 1, {"site": 6, "family": 2}, at=2)
    evals(lake, "c1", 1, {"site": 10, "family": 10}, evaluation="v", split="validation", at=3)
    evals(lake, "c1", 1, {"site": 10, "family": 10}, evaluation="other-size", at=4)
    points = bench.seed_points(lake)
    assert points.drop_duplicates("point")["point"].tolist() == ["untrained", "warm start", "it1"]
    table = points.set_index(["point", "kind"])[["episodes", "successes"]]
    assert table.loc[("it1", "same family")].tolist() == [10, 6]
    assert table.loc[("it1", "unseen family")].tolist() == [10, 2]
    assert table.loc[("it1", "all")].tolist() == [20, 8] and table.loc[("it1", "hard band")].tolist() == [4, 4]


def curve(same: list[int], unseen: list[int], hard: list[int], n: int = 100) -> pd.DataFrame:
    points = ["untrained", "warm start", "it1", "it2"]
    frame = []
    for order, point in enumerate(points):
        frame += [{"point": point, "kind": "same family", "episodes": n, "successes": same[order], "order": order},
                  {"point": point, "kind": "unseen family", "episodes": n, "successes": unseen[order], "order": order},
                  {"point": point, "kind": "all", "episodes": 2 * n, "successes": same[order] + unseen[order],
                   "order": order},
                  {"point": point, "kind": "hard band", "episodes": n // 4, "successes": hard[order], "order": order}]
    return pd.DataFrame(frame)


def test_the_targets_read_the_pooled_curve():
    met = bench.targets(curve([2, 20, 30, 35], [1, 5, 8, 9], [0, 0, 1, 2]))
    assert met["same_family_gain_points"] == 33.0 and met["same_family_gain_met"]
    assert met["never_falls_by_more_than_its_interval"] and met["hard_band_above_zero"]
    assert met["unseen_family_above_untrained"]
    missed = bench.targets(curve([2, 30, 10, 20], [1, 5, 8, 1], [0, 0, 1, 0]))
    assert missed["same_family_gain_points"] == 18.0 and not missed["same_family_gain_met"]
    assert not missed["never_falls_by_more_than_its_interval"]  # 35 -> 18 of 200 is beyond its interval
    assert not missed["hard_band_above_zero"] and not missed["unseen_family_above_untrained"]
