"""OOD split by website with zero leakage, sampling by difficulty ratio, WebGym export round trip."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from schemas.tasks import Task
from stages.export import webgym_records
from stages.ingest import seed_tasks_from_files
from stages.sample import evaluation_batch, split_task_ids, training_batch
from stages.split import (LeakageError, assigned_splits, held_out_sites, leaks, needs_site_table, split_tasks,
                          validation_sites)
from tests.conftest import NOW, rubric, tasks_frame
from webgym.cli import app
from webgym.config import SplitConfig


def task(task_id: str, website: str | None, source: str = "insta", parent: str | None = None,
         difficulty: int = 3) -> Task:
    return Task(task_id=task_id, parent_task_id=parent, source=source, source_id=task_id, text=f"task {task_id}",
                website=website, difficulty=difficulty, rubric=rubric(difficulty), created_at=NOW)


def frame(tasks: list[Task]) -> pd.DataFrame:
    return pd.DataFrame([t.model_dump() for t in tasks])


def universe() -> pd.DataFrame:
    """20 websites with 3 originals each (each with one decomposed child), 2 synthetic sites, 2 site-less tasks."""
    tasks = []
    for w in range(20):
        for k in range(3):
            tasks.append(task(f"w{w}-{k}", f"site{w}.com"))
            tasks.append(task(f"w{w}-{k}-c", f"site{w}.com", parent=f"w{w}-{k}", difficulty=1))
    for s in range(2):
        tasks += [task(f"syn{s}-{k}", f"shop-{s}.test", source="synthetic") for k in range(4)]
    tasks += [task("free-1", None), task("free-2", None)]
    return frame(tasks)


def test_test_tasks_come_one_per_distinct_website_and_nothing_leaks():
    tasks = universe()
    result = split_tasks(tasks, SplitConfig(test_websites=5, tasks_per_test_website=1, held_out_websites=None, seed=3))
    test = result[result["split"] == "test"]
    originals = test[test["parent_task_id"].isna()]
    synthetic_sites = set(originals.loc[originals["source"] == "synthetic", "website"])
    real = originals[originals["source"] != "synthetic"]
    assert real["website"].is_unique and len(real) + len(synthetic_sites) == 5
    assert all((originals["website"] == s).sum() == 4 for s in synthetic_sites)  # whole synthetic site
    assert set(test["parent_task_id"].dropna()) <= set(originals["task_id"])    # children follow parents
    train = result[result["split"] == "train"]
    assert not set(train["website"].dropna()) & set(test["website"])
    assert {"free-1", "free-2"} <= set(train["task_id"])
    removed = set(tasks["task_id"]) - set(result["task_id"])
    assert all(tasks.set_index("task_id").loc[t, "website"] in set(test["website"]) for t in removed)
    assert leaks(result).empty


def test_named_held_out_sites_are_the_whole_site_test_set_and_the_draw_takes_other_websites():
    config = SplitConfig(test_websites=2, held_out_websites=["shop-1.test", "elsewhere.test"], seed=3)
    result = assigned_splits(universe(), config)
    test = result[result["split"] == "test"]
    assert set(test.loc[test["source"] == "synthetic", "website"]) == {"shop-1.test"}
    assert (result.loc[result["website"] == "shop-0.test", "split"] == "train").all()  # never drawn
    assert test.loc[test["source"] != "synthetic", "website"].nunique() == 2
    assert len(result) == len(universe()) and result["task_id"].is_unique  # removed tasks are kept ...
    removed = result[result["split"].isna()]
    assert len(removed) and set(removed["website"]) <= set(test["website"])  # ... with a null split
    assert leaks(result).empty


def test_the_split_is_reproducible_by_seed():
    one = split_tasks(universe(), SplitConfig(test_websites=5, seed=1))
    assert one.equals(split_tasks(universe(), SplitConfig(test_websites=5, seed=1)))
    other = split_tasks(universe(), SplitConfig(test_websites=5, seed=2))
    assert set(one.loc[one["split"] == "test", "task_id"]) != set(other.loc[other["split"] == "test", "task_id"])


def test_the_leakage_check_finds_websites_and_families_on_both_sides():
    bad = tasks_frame()  # t1 train on shop-a, t2 its child
    bad.loc[bad["task_id"] == "t2", "split"] = "test"
    found = leaks(bad)
    assert set(map(tuple, found.to_numpy())) == {("website", "shop-a.test"), ("lineage", "t1")}
    assert leaks(tasks_frame()).empty


def test_split_raises_instead_of_returning_a_leaking_set(monkeypatch):
    import stages.split as split_module

    monkeypatch.setattr(split_module, "leaks", lambda tasks: pd.DataFrame([{"kind": "website", "value": "x"}]))
    with pytest.raises(LeakageError, match="leaks 1"):
        split_tasks(universe(), SplitConfig(test_websites=2))


def world() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Three site families of three generated sites each plus a hand-written site of the shop family, each
    site with two synthetic tasks (one decomposed from the other), and the world's site table."""
    sites, tasks = [], []
    for family in ("shop", "mail", "clinic"):
        for seed in range(3):
            website = f"{family}-g{seed}.test"
            sites.append({"website": website, "site": f"{family}-g{seed}", "family": family, "seed": seed})
            tasks += [task(f"{family}{seed}", website, source="synthetic"),
                      task(f"{family}{seed}-c", website, source="synthetic", parent=f"{family}{seed}", difficulty=1)]
    sites.append({"website": "shop-b.test", "site": "shop-b", "family": "shop", "seed": None})
    tasks += [task("shopb", "shop-b.test", source="synthetic")]
    return frame(tasks), pd.DataFrame(sites)


def test_families_held_out_whole_and_the_last_sites_of_the_others_form_the_test_split():
    tasks, sites = world()
    config = SplitConfig(held_out_families=["clinic"], held_out_instances=1, held_out_websites=["shop-b.test"],
                         test_websites=0)
    assert held_out_sites(sites, config) == {"clinic-g0.test": "family", "clinic-g1.test": "family",
                                             "clinic-g2.test": "family", "shop-g2.test": "site",
                                             "mail-g2.test": "site", "shop-b.test": "site"}
    result = split_tasks(tasks, config, sites)
    test = result[result["split"] == "test"]
    assert set(test["website"]) == {"clinic-g0.test", "clinic-g1.test", "clinic-g2.test", "shop-g2.test",
                                    "mail-g2.test", "shop-b.test"}
    assert set(test.loc[test["family"] == "clinic", "held_out"]) == {"family"}
    assert set(test.loc[test["family"] != "clinic", "held_out"]) == {"site"}
    train = result[result["split"] == "train"]
    assert "clinic" not in set(train["family"]) and train["held_out"].isna().all()  # zero family leakage
    assert set(train["family"]) == {"shop", "mail"} and leaks(result).empty
    with pytest.raises(ValueError, match="unknown site family dentist"):
        split_tasks(tasks, config.model_copy(update={"held_out_families": ["dentist"]}), sites)


def test_a_family_held_out_whole_in_training_is_a_leak():
    tasks, sites = world()
    result = split_tasks(tasks, SplitConfig(held_out_families=["clinic"], test_websites=0), sites)
    result.loc[result["task_id"] == "clinic0-c", ["split", "held_out"]] = ["train", None]
    assert ("family", "clinic") in set(map(tuple, leaks(result).to_numpy()))


def test_evaluations_draw_the_same_number_of_tasks_of_each_held_out_kind():
    tasks, sites = world()
    split = split_tasks(tasks, SplitConfig(held_out_families=["clinic"], held_out_instances=1, test_websites=0),
                        sites)
    batch = evaluation_batch(split, size=3, seed=0)
    assert batch["held_out"].value_counts().to_dict() == {"family": 3, "site": 3}
    assert batch.equals(evaluation_batch(split, size=3, seed=0))
    assert len(evaluation_batch(split)) == (split["split"] == "test").sum()


def banded() -> pd.DataFrame:
    tasks = [task(f"e{i}", f"e{i}.com", difficulty=2) for i in range(30)]
    tasks += [task(f"m{i}", f"m{i}.com", difficulty=5) for i in range(30)]
    tasks += [task(f"h{i}", f"h{i}.com", difficulty=8) for i in range(3)]
    return frame(tasks).assign(split="train")


def bands(batch: pd.DataFrame) -> dict[str, int]:
    return batch["task_id"].str[0].value_counts().to_dict()


def test_batches_follow_the_difficulty_ratio_and_are_reproducible():
    tasks = banded()
    batch = training_batch(tasks, 10, {"easy": 2, "medium": 5, "hard": 3}, seed=7)
    assert bands(batch) == {"e": 2, "m": 5, "h": 3} and batch["task_id"].is_unique
    assert batch.equals(training_batch(tasks, 10, {"easy": 2, "medium": 5, "hard": 3}, seed=7))
    assert not batch.equals(training_batch(tasks, 10, {"easy": 2, "medium": 5, "hard": 3}, seed=8))
    short = training_batch(tasks, 20, {"easy": 2, "medium": 5, "hard": 3}, seed=7)  # 3 hard only: shortfall moves
    assert len(short) == 20 and bands(short)["h"] == 3 and bands(short)["m"] > bands(short)["e"]
    assert len(training_batch(tasks, 10, None, seed=1)) == 10


def test_source_shares_fix_a_sources_part_of_the_batch_whatever_its_count():
    tasks = pd.concat([banded(), frame([task(f"x{i}", "x.test", source="miniwob") for i in range(7)])
                       .assign(split="train")], ignore_index=True)
    batch = training_batch(tasks, 20, None, seed=3, source_shares={"miniwob": 0.25})
    assert (batch["source"] == "miniwob").sum() == 5 and len(batch) == 20 and batch["task_id"].is_unique
    assert batch.equals(training_batch(tasks, 20, None, seed=3, source_shares={"miniwob": 0.25}))
    plain = [training_batch(tasks, 20, None, seed=s) for s in range(100)]  # 7 of 70 tasks: a tenth by their count
    assert sum((b["source"] == "miniwob").sum() for b in plain) / (20 * len(plain)) < 0.12
    assert plain[3].equals(training_batch(tasks, 20, None, seed=3, source_shares={}))
    more = training_batch(tasks, 40, None, seed=0, source_shares={"miniwob": 0.5})  # 7 there: the rest draw 33
    assert (more["source"] == "miniwob").sum() == 7 and len(more) == 40
    none = training_batch(tasks, 70, None, seed=0, source_shares={"miniwob": 0.0})
    assert len(none) == 63 and not none["source"].eq("miniwob").any()
    alone = training_batch(tasks, 70, None, seed=0, source_shares={"miniwob": 1.0})
    assert alone["source"].eq("miniwob").all() and len(alone) == 7


def test_blocklisted_websites_and_test_tasks_are_never_drawn():
    tasks = banded()
    tasks.loc[tasks["task_id"] == "m0", "split"] = "test"
    blocked = [f"e{i}.com" for i in range(25)]
    batch = training_batch(tasks, 63, None, seed=0, blocklist=blocked)
    assert len(batch) == 63 - 25 - 1 and not set(batch["website"]) & set(blocked) and "m0" not in set(batch["task_id"])
    with pytest.raises(ValueError, match="unknown difficulty band"):
        training_batch(tasks, 5, {"trivial": 1})


def test_webgym_export_reads_back_through_the_webgym_adapter(tmp_path, lake, monkeypatch):
    monkeypatch.delenv("WEBGYM_DATA", raising=False)
    tasks = tasks_frame().assign(reference_answer=["mug #3", None, None], domain=["Lifestyle & Leisure", None, None],
                                 parent_groups=[None, [0, 1], None])
    lake.write_table("tasks", tasks)
    out = tmp_path / "export" / "train.jsonl"
    result = CliRunner().invoke(app, ["--data-dir", lake.root, "taskset", "export", "--format", "webgym",
                                      "--out", str(out), "--split", "train"])
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["task_id"] for r in records] == ["t1", "t2"]
    assert records[0]["evaluator_reference"] == [{"id": 1, "description": "group 0", "facts": ["fact 0.0"]},
                                                 {"id": 2, "description": "group 1", "facts": ["fact 1.0", "fact 1.1"]}]
    assert (records[0]["website"], records[0]["difficulty"], records[0]["definite_answer"]) == (
        "https://shop-a.test/", 3, "mug #3")
    back = seed_tasks_from_files("webgym", [str(out)]).rows.set_index("source_id")
    assert back.at["t1", "text"] == "Buy the red mug" and back.at["t1", "website"] == "shop-a.test"
    assert back.at["t1", "rubric"] == {"groups": [{**g, "checks": None} for g in tasks.at[0, "rubric"]["groups"]]}
    assert back.at["t1", "reference_answer"] == "mug #3" and back.at["t1", "source_difficulty"] == "3"
    assert webgym_records(tasks)[2]["evaluator_reference"][1]["facts"] == ["fact 1.0", "fact 1.1", "fact 1.2",
                                                                            "fact 1.3"]


def test_cli_stats_prints_every_breakdown(lake, monkeypatch):
    monkeypatch.delenv("WEBGYM_DATA", raising=False)
    lake.write_table("tasks", tasks_frame())
    result = CliRunner().invoke(app, ["--data-dir", lake.root, "taskset", "stats"])
    assert result.exit_code == 0, result.output
    for title in ("by source", "by difficulty band", "by domain", "by split"):
        assert f"tasks {title}" in result.output
    assert "synthetic" in result.output and "hard" in result.output and "easy" in result.output


def test_a_share_of_training_lineages_becomes_the_validation_split_and_validation_never_meets_test():
    tasks, sites = world()
    config = SplitConfig(held_out_families=["clinic"], held_out_instances=1, held_out_websites=["shop-b.test"],
                         test_websites=0, validation_fraction=0.5)
    result = split_tasks(tasks, config, sites)
    validation = result[result["split"] == "validation"]
    train = result[result["split"] == "train"]
    assert len(validation[validation["parent_task_id"].isna()]) == 2  # half of the 4 training lineages
    assert set(validation["parent_task_id"].dropna()) <= set(validation["task_id"])  # children follow parents
    assert set(validation["family"]) <= {"shop", "mail"} and validation["held_out"].isna().all()
    assert not set(validation["website"]) & set(result.loc[result["split"] == "test", "website"])
    assert leaks(result).empty and len(train) + len(validation) == 8
    without = split_tasks(tasks, config.model_copy(update={"validation_fraction": 0.0}), sites)
    assert "validation" not in set(without["split"])
    assert set(without.loc[without["split"] == "test", "task_id"]) == set(result.loc[result["split"] == "test",
                                                                                       "task_id"])


def test_a_lineage_split_between_train_and_validation_is_a_leak():
    tasks, sites = world()
    result = split_tasks(tasks, SplitConfig(held_out_families=["clinic"], test_websites=0, validation_fraction=0.5),
                         sites)
    child = result[(result["split"] == "validation") & result["parent_task_id"].notna()].iloc[0]
    result.loc[result["task_id"] == child["task_id"], "split"] = "train"
    assert ("lineage", child["parent_task_id"]) in set(map(tuple, leaks(result).to_numpy()))


def test_validation_batches_come_from_the_validation_split_only():
    tasks, sites = world()
    result = split_tasks(tasks, SplitConfig(held_out_families=["clinic"], test_websites=0, validation_fraction=0.5),
                         sites)
    batch = evaluation_batch(result, 3, seed=1, split="validation")
    assert len(batch) == 3 and set(batch["split"]) == {"validation"}
    assert batch["task_id"].tolist() == evaluation_batch(result, 3, seed=1, split="validation")["task_id"].tolist()
    assert not set(training_batch(result, 100)["task_id"]) & set(result.loc[result["split"] == "validation",
                                                                             "task_id"])


def test_validation_sites_are_the_last_training_sites_of_each_family_before_the_held_out_ones():
    tasks, sites = world()
    config = SplitConfig(held_out_families=["clinic"], held_out_instances=1, held_out_websites=["shop-b.test"],
                         test_websites=0, validation_instances=1)
    assert validation_sites(sites, config) == {"shop-g1.test", "mail-g1.test"}
    result = split_tasks(tasks, config, sites)
    validation = result[result["split"] == "validation"]
    assert set(validation["website"]) == {"shop-g1.test", "mail-g1.test"} and len(validation) == 4
    assert set(result.loc[result["split"] == "train", "website"]) == {"shop-g0.test", "mail-g0.test"}
    assert set(result.loc[result["split"] == "test", "website"]) == set(held_out_sites(sites, config))
    assert leaks(result).empty


def test_split_task_ids_are_the_tasks_of_one_split():
    tasks = tasks_frame()
    assert (split_task_ids(tasks, "train"), split_task_ids(tasks, "test")) == ({"t1", "t2"}, {"t3"})
    assert split_task_ids(tasks, "validation") == set()


def test_only_tasks_of_whole_site_sources_need_the_site_table():
    tasks, config = tasks_frame(), SplitConfig()
    assert needs_site_table(tasks.assign(source=config.whole_site_sources[0]), config)
    assert not needs_site_table(tasks.assign(source="mind2web"), config)
