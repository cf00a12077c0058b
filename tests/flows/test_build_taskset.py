"""The build_taskset flow against the scripted OpenAI-compatible server: benchmark records annotated by
the LLM, synthetic goals without it, a bad answer reported while the rest land, a rerun that asks
nothing again, the quality suites after every stage, and the no-input build of the shipped sites."""

from __future__ import annotations

import json
import tracemalloc

import pandas as pd
import pytest
from typer.testing import CliRunner

from stages.split import held_out_sites, leaks
from webgym import PROJECT_ROOT, quality
from webgym.config import Config, LakeConfig, TasksetConfig, load_config
from webgym.config.taskset import IngestConfig
from webgym.lake import Lake
from webgym.llm.scripted_server import Reply, ScriptedServer
from webgym.sites.site import load_sites
from webgym.sites.tasks import export_tasks
from webgym.sites.world import world_of

FIXTURES = PROJECT_ROOT / "tests" / "fixtures" / "ingest"
HOURS, SOSA = "e1fc63a2-da7a-432f-be78-7c4a95598703", "8e867cd7-cff9-4e6c-867a-ff5ddc2550be"  # GAIA task ids
BENCHMARKS = [FIXTURES / "webvoyager" / "WebVoyager_data.jsonl", FIXTURES / "webvoyager" / "reference_answer.json",
              FIXTURES / "GAIA_web.jsonl", FIXTURES / "mind2web2_tasks.jsonl"]


def annotation(website: str | None, domain: str, subdomain: str, *groups: tuple[str, list[str]]) -> Reply:
    return Reply.json({"website": website, "domain": domain, "subdomain": subdomain,
                       "groups": [{"description": d, "facts": facts} for d, facts in groups]})


ANSWERS = {  # a distinctive word of each benchmark task -> the scripted annotation
    "lasagna": annotation("www.allrecipes.com", "Lifestyle & Leisure", "Food & Cooking",
                          ("the recipe", ["vegetarian", "a lasagna", "more than 100 reviews"]),
                          ("the answer", ["names the recipe"])),
    "zeitgeist": annotation("dictionary.cambridge.org", "Career & Education", "Education & Learning",
                            ("pronunciation", ["of 'zeitgeist'"])),
    "thousand hours": annotation("en.wikipedia.org", "Science & Research", "Technology & Science",
                                 ("the answer", ["rounded to the nearest 1000 hours"])),
    "Mercedes Sosa": annotation("www.discogs.com", "Entertainment", "Music",
                                ("albums", ["studio albums only", "2000 to 2009"]), ("count", ["the number"])),
    "Yu family": annotation(None, "Science & Research", "Research & Academia", ("lineage", ["the crest's lineage"])),
}


def about(word: str):
    """Requests of one task, retries included (their last user message is the retry prompt)."""
    return lambda request: any(word in text for text in request.texts)


DECOMPOSED = "Find a vegetarian lasagna recipe with more than 100 reviews on Allrecipes."


def script(server: ScriptedServer) -> None:
    server.add(Reply.json({"task": DECOMPOSED}), purpose="decompose")
    for word, reply in ANSWERS.items():
        server.add(reply, when=about(word))


@pytest.fixture
def server():
    with ScriptedServer() as running:
        yield running


def _profile(tmp_path, server: ScriptedServer) -> str:
    """The scripted server for every purpose, no LLM cache (so only the lake can spare a request),
    shop-b held out by name and one more test website drawn among the benchmark websites."""
    path = tmp_path / "profile.yaml"
    path.write_text(f"""
lake: {{data_dir: {tmp_path / 'data'}}}
llm:
  default: [{{base_url: "{server.base_url}", model: scripted, timeout_s: 10}}]
  cache: false
  max_attempts: 1
  backoff_s: 0.01
  structured_attempts: 2
taskset:
  split: {{test_websites: 1, held_out_websites: [shop-b.test]}}
""")
    return str(path)


def _synthetic_export(tmp_path) -> str:
    path = tmp_path / "synthetic.jsonl"
    export_tasks(list(load_sites(names=["shop-a", "shop-b"]).values()), path)
    return str(path)


@pytest.mark.slow
def test_benchmark_records_get_llm_annotations_synthetic_goals_none_and_a_rerun_asks_nothing(
        prefect_harness, tmp_path, server):
    from flows.build_taskset import build_taskset

    script(server)
    profile, inputs = _profile(tmp_path, server), [*map(str, BENCHMARKS), _synthetic_export(tmp_path)]
    report = build_taskset(inputs=inputs, config_path=profile)
    lake = Lake(tmp_path / "data")
    tasks = lake.read_table("tasks")
    originals = tasks[tasks["parent_task_id"].isna()].set_index("source_id")

    # 2 WebVoyager, 2 GAIA and 1 Mind2Web-2 task: one structured call each (a broken WebVoyager line and
    # an empty Mind2Web-2 record are bad records of the ingest)
    assert report.asked_llm == 5 and report.llm.startswith("5 LLM call(s)")
    assert len(server.requests) == 6 and report.decompose_llm.startswith("1 LLM call(s)")  # + the decomposed text
    assert sorted(r.split(":")[0].rsplit("/", 1)[1] for r in report.bad_records) == [
        "WebVoyager_data.jsonl", "mind2web2_tasks.jsonl"]
    lasagna = originals.loc["Allrecipes--0"]
    assert (lasagna["website"], lasagna["domain"], lasagna["subdomain"]) == ("allrecipes.com", "Lifestyle & Leisure",
                                                                             "Food & Cooking")
    assert lasagna["difficulty"] == 4 and [list(g["facts"]) for g in lasagna["rubric"]["groups"]] == [
        ["vegetarian", "a lasagna", "more than 100 reviews"], ["names the recipe"]]
    assert lasagna["reference_answer"] == "'Vegetarian Four Cheese Lasagna', 4.6-star, 181 reviews"
    gaia = originals.loc[SOSA]  # website from the LLM, start page kept from the record
    assert (gaia["website"], gaia["start_url"], gaia["domain"]) == ("discogs.com", "https://www.google.com/",
                                                                    "Entertainment")
    assert pd.isna(originals.loc["yu_lineage", "website"]) and originals.loc["yu_lineage", "difficulty"] == 1

    synthetic = tasks[tasks["source"] == "synthetic"]
    goals = sum(len(site.spec.goals) for site in load_sites(names=["shop-a", "shop-b"]).values())
    assert (synthetic["parent_task_id"].isna()).sum() == goals
    asked = " ".join(text for r in server.requests for text in r.texts)
    assert not any(text in asked for text in synthetic["text"])
    assert set(synthetic["subdomain"]) == {"Shopping"} and all(  # the exact rubrics are kept
        g["checks"] is not None and len(g["checks"]) == len(g["facts"]) for r in synthetic["rubric"] for g in r["groups"])

    children = tasks[tasks["parent_task_id"] == lasagna["task_id"]]
    assert children["difficulty"].tolist() == [3] and children["text"].tolist() == [DECOMPOSED]
    assert children["text_writer"].tolist() == ["llm"] and originals["text_writer"].eq("source").all()
    synthetic_children = tasks[tasks["parent_task_id"].notna() & (tasks["source"] == "synthetic")]
    assert report.decomposed_written == {"llm": 1, "template": len(synthetic_children)} and not report.decompose_problems
    test = tasks[tasks["split"] == "test"]
    assert set(tasks.loc[tasks["website"] == "shop-b.test", "split"]) == {"test"}
    assert report.test_websites == test["website"].nunique() == 2
    assert report.splits == {**tasks["split"].fillna("removed").value_counts().to_dict(),
                             **{f"test held out by {k}": v for k, v in tasks["held_out"].value_counts().items()}}
    assert leaks(tasks).empty and quality.validate(lake) == []

    parts = {table: lake.parts(table) for table in ("seed_tasks", "duplicates", "tasks")}
    again = build_taskset(inputs=inputs, config_path=profile)
    assert len(server.requests) == 6  # nothing was sent to the LLM again
    assert {table: lake.parts(table) for table in parts} == parts  # and nothing rewritten
    assert (again.ingested, again.annotated, again.asked_llm, again.decomposed, again.duplicates) == (0, 0, 0, 0, 0)
    rebuilt = lake.read_table("tasks").set_index("task_id")["split"]
    assert rebuilt.equals(tasks.set_index("task_id")["split"].loc[rebuilt.index])  # the same split again


def test_a_malformed_answer_is_a_reported_bad_record_the_rest_land_and_the_next_build_retries_it(
        prefect_harness, tmp_path, server):
    from flows.build_taskset import build_taskset

    server.add(Reply(text='{"website": "www.discogs.com", "domain": "Music"'), when=about("Mercedes Sosa"), times=2)
    script(server)
    profile = _profile(tmp_path, server)
    report = build_taskset(inputs=[str(FIXTURES / "GAIA_web.jsonl")], config_path=profile)
    (bad,) = report.bad_records
    assert bad.startswith(f"gaia/{SOSA}: rubric: no valid Annotation after 2 answer(s)")
    lake = Lake(tmp_path / "data")
    assert lake.read_table("tasks")["source_id"].tolist() == [HOURS] and report.annotated == 1
    asked = len(server.requests)
    retried = build_taskset(inputs=[str(FIXTURES / "GAIA_web.jsonl")], config_path=profile)
    assert retried.bad_records == [] and retried.annotated == 1 and len(server.requests) == asked + 1
    assert set(lake.read_table("tasks")["source_id"]) == {HOURS, SOSA}


@pytest.mark.slow
def test_without_inputs_the_profile_builds_its_world_split_by_families_and_sites(prefect_harness, tmp_path,
                                                                                 monkeypatch):
    from webgym.cli import app

    monkeypatch.delenv("WEBGYM_DATA", raising=False)
    profile = PROJECT_ROOT / "configs" / "ci.yaml"
    result = CliRunner().invoke(app, ["--config", str(profile), "--data-dir", str(tmp_path / "data"), "taskset",
                                      "build"])
    assert result.exit_code == 0, result.output
    config = load_config(profile)
    world = world_of(config.sites)
    assert f"{world.goals} seed task(s) ingested" in result.output and "0 with the LLM" in result.output
    everything = Lake(tmp_path / "data").read_table("tasks")
    miniwob_rows = everything[everything["source"] == "miniwob"]
    external = miniwob_rows[miniwob_rows["split"] == "test"]
    assert len(external) == len(config.taskset.miniwob.tasks) == 2  # the external world's tasks, held out whole
    assert set(external["held_out"]) == {"external"}
    assert "test held out by external 2" in result.output
    trained = miniwob_rows[miniwob_rows["split"] != "test"]  # the profile's train task, of another family
    assert trained["task_id"].tolist() == ["miniwob/form-sequence/1000", "miniwob/form-sequence/1001"]
    assert set(trained["split"]) == {"train"} and set(trained["family"]) == {"miniwob/form-sequence"}
    tasks = everything[everything["source"] != "miniwob"]
    held_out = held_out_sites(world.table(), config.taskset.split)
    assert set(tasks.loc[tasks["split"] == "test", "website"]) == set(held_out)
    assert set(tasks.loc[tasks["split"] == "train", "website"]).isdisjoint(held_out)
    whole = set(config.taskset.split.held_out_families)
    assert len(whole) == 4 and whole == set(tasks.loc[tasks["held_out"] == "family", "family"])
    assert whole.isdisjoint(tasks.loc[tasks["split"] == "train", "family"])  # no held-out family trains
    assert set(tasks.loc[tasks["held_out"] == "site", "website"]) == set(config.taskset.split.held_out_websites)
    assert tasks["split"].notna().all() and (tasks["parent_task_id"].isna()).sum() == world.goals
    assert f"test held out by family {(tasks['held_out'] == 'family').sum()}" in result.output


def _webgym_file(path, texts: dict[int, str]) -> str:
    """WebGym-layout tasks that need no LLM (rubric, taxonomy labels and website given)."""
    path.write_text("".join(json.dumps({
        "task_id": task_id, "task_name": text, "website": f"https://site{task_id}.example.com/",
        "domain": "Shopping", "subdomain": "General Merchandise",
        "evaluator_reference": [{"description": "item", "facts": ["the item", "its price"]}]}) + "\n"
        for task_id, text in texts.items()))
    return str(path)


@pytest.mark.slow
@pytest.mark.parametrize("which", ["newest", "first"])
def test_the_task_set_uses_the_chosen_revision_of_a_reworded_task(prefect_harness, tmp_path, which):
    from flows.build_taskset import build_taskset

    profile = tmp_path / "profile.yaml"
    profile.write_text(f"lake: {{data_dir: {tmp_path / 'data'}}}\ntaskset:\n  revisions: {which}\n"
                       "  split: {test_websites: 0, held_out_websites: null}\n"
                       f"  dedup: {{cache_dir: {tmp_path / 'cache'}}}\n")
    texts = {1: "Find the price of the blue kettle", 2: "Find the price of the red toaster"}
    build_taskset(inputs=[_webgym_file(tmp_path / "v1.jsonl", texts)], config_path=str(profile))
    report = build_taskset(inputs=[_webgym_file(tmp_path / "v2.jsonl", {**texts, 2: "Find the price of the red "
                                                                         "two-slice toaster"})],
                           config_path=str(profile))
    assert (report.ingested, report.already_ingested, report.duplicates) == (1, 1, 0)
    tasks = Lake(tmp_path / "data").read_table("tasks")
    in_use = tasks[tasks["split"].notna() & tasks["parent_task_id"].isna()].set_index("source_id")
    expected = "Find the price of the red two-slice toaster" if which == "newest" else texts[2]
    assert in_use.loc["2", "text"] == expected and in_use.loc["1", "text"] == texts[1]
    assert len(tasks[tasks["parent_task_id"].isna()]) == (3 if which == "newest" else 2)  # both revisions annotated
    assert quality.validate(Lake(tmp_path / "data")) == []


def _task_file(path, count: int) -> str:
    """`count` distinct WebVoyager-layout tasks, ids Shop--0 .. Shop--<count - 1>, each with 2 kB that only
    the raw record keeps (so that holding rows shows)."""
    path.write_text("".join(json.dumps({"web_name": "Shop", "id": f"Shop--{i}", "ques": f"Find item {i} on the shop.",
                                        "web": "https://shop.test/", "note": "n" * 2000}) + "\n" for i in range(count)))
    return str(path)


def _ingest_config(root, batch_rows: int) -> Config:
    return Config(lake=LakeConfig(data_dir=str(root)), taskset=TasksetConfig(ingest=IngestConfig(batch_rows=batch_rows)))


def test_ingest_memory_does_not_grow_with_the_file(tmp_path, monkeypatch):
    """An ingest holds one batch of new rows (taskset.ingest.batch_rows), not the file: the Python heap's
    peak over 2,000 new tasks is about that over 500 (an ingest that held every row peaks 3x higher),
    no part holds more than a batch, every record lands once, and a rerun adds nothing."""
    import stages.ingest
    from flows.build_taskset import ingest_inputs

    monkeypatch.setattr(stages.ingest, "FIT_SAMPLE", 20)  # the format check's sample is held: a constant
    write, parts = Lake.write_table, []

    def counted(self, name, frame, run_id="run"):
        parts.append(len(frame))
        return write(self, name, frame, run_id)

    monkeypatch.setattr(Lake, "write_table", counted)
    ingest_inputs.fn(_ingest_config(tmp_path / "warm", 100), [_task_file(tmp_path / "warm.jsonl", 10)])  # imports
    peaks = {}
    for count in (500, 2000):
        config = _ingest_config(tmp_path / f"lake{count}", 100)
        path = _task_file(tmp_path / f"tasks{count}.jsonl", count)
        tracemalloc.start()
        (report,) = ingest_inputs.fn(config, [path])
        peaks[count] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert (report.read, report.ingested, report.present, report.bad) == (count, count, 0, [])
    assert peaks[2000] < 1.5 * peaks[500], peaks
    assert max(parts) == 100 and sum(parts) == 10 + 500 + 2000
    (again,) = ingest_inputs.fn(config, [path])
    assert (again.read, again.ingested, again.present) == (2000, 0, 2000)
    seeds = Lake(tmp_path / "lake2000").read_table("seed_tasks", columns=["source_id", "revision"])
    assert sorted(seeds["source_id"]) == sorted(f"Shop--{i}" for i in range(2000))
    assert seeds["revision"].eq(1).all()


def test_an_interrupted_ingest_keeps_its_parts_and_a_rerun_adds_the_rest(tmp_path, monkeypatch):
    """Killed at its third part, an ingest leaves the two parts written whole; the rerun finds them
    present and adds the rest, each record once."""
    from flows.build_taskset import ingest_inputs

    config = _ingest_config(tmp_path / "data", 250)
    path = _task_file(tmp_path / "tasks.jsonl", 1000)
    write, calls = Lake.write_table, []

    def killed_at_the_third(self, name, frame, run_id="run"):
        calls.append(name)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return write(self, name, frame, run_id)

    monkeypatch.setattr(Lake, "write_table", killed_at_the_third)
    with pytest.raises(KeyboardInterrupt):
        ingest_inputs.fn(config, [path])
    monkeypatch.undo()
    lake = Lake(tmp_path / "data")
    assert lake.count("seed_tasks") == 500
    (report,) = ingest_inputs.fn(config, [path])
    assert (report.read, report.present, report.ingested) == (1000, 500, 500)
    seeds = lake.read_table("seed_tasks", columns=["source_id", "revision"])
    assert sorted(seeds["source_id"]) == sorted(f"Shop--{i}" for i in range(1000))
    assert seeds["revision"].eq(1).all()
