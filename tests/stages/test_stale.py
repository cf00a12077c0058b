"""Stale tasks: past dates of planned things found in texts, flags at ingest on the real benchmark files,
and what a build does with them (keep flagged, drop, or the LLM's rewrite to a future date)."""

from __future__ import annotations

import datetime as dt
import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from flows.build_taskset import annotate_seeds, ingest_inputs
from schemas.seed_tasks import SeedTask
from stages.ingest.webgym import rubric_from_reference
from stages.stale import (answers_current, any_to_rewrite, flagged_stale, held_back_by_source, seeds_to_annotate,
                          stale_phrase)
from tests.conftest import NOW, rows
from tests.stages.ingest import BENCHMARKS
from tests.stages.ingest.test_real_files import REAL_FILES
from webgym import PROJECT_ROOT
from webgym.cli import app
from webgym.config import (
    Config,
    EndpointConfig,
    LakeConfig,
    LLMConfig,
    StaleConfig,
    TasksetConfig,
)
from webgym.llm.client import NoEndpointError
from webgym.llm.scripted_server import Reply, ScriptedServer

AS_OF = dt.date(2026, 11, 24)


@pytest.mark.parametrize(("text", "phrase"), [
    ("Reserve a hotel in Chicago for a stay from March 20-27, 2024.", "March 20-27, 2024"),
    ("Find a hotel in Rome from February 28 to March 2, 2024, for two adults.", "February 28 to March 2, 2024"),
    ("Book one way business class from Hong Kong on 8 March 2024.", "8 March 2024"),
    ("Show average wait times for flights landing on 2025-03-12.", "2025-03-12"),
    ("Get the hotel with the best score in Chennai for 20/12/2023 - 21/12/2023.", "20/12/2023"),
    ("Find courses scheduled on Tuesdays in the Fall 2023 semester.", "Fall 2023"),
    ("Browse the class schedule of chemistry courses in the winter of 2023.", "winter of 2023"),
    ("Buy tickets for the upcoming 2025 season opener.", "upcoming 2025"),
    ("Show me the list of one-way flights today (February 17, 2024) from Chicago to Paris.", "February 17, 2024"),
    ("Find flights departing on January 25, 2027.", None),  # in the future
    ("Find a Mexico hotel with deals for December 25-26.", None),  # no year: the next one
    ("Find a flight from Dublin to anywhere under $100 tomorrow.", None),  # moves with the clock
    ("Find the closing stock price for Tesla on March 17, 2023.", None),  # a look-up of records: still valid
    ("How many papers were announced on ArXiv in December 2023?", None),
    ("What time was the train on May 27, 2019 scheduled to arrive?", None),  # the past tense tells, not plans
    ("Find the book's page. Use the page as it was on July 3, 2023.", None),  # the plan is in another sentence
    ("Check in to a hotel on 11/12/2026.", None),  # 11 December is still ahead: not certainly past
    ("Check in to a hotel on 05/06/2026.", "05/06/2026"),  # both readings have passed
])
def test_a_past_date_of_something_planned_is_found(text, phrase):
    assert stale_phrase(text, AS_OF) == phrase


def test_flags_carry_the_phrase_and_the_as_of_date():
    seeds = pd.DataFrame({"source": ["webvoyager", "webvoyager"], "text": [
        "Book a flight departing on March 5, 2024.", "Find a vegan cookie recipe."]})
    flagged = flagged_stale(seeds, AS_OF)
    assert flagged["stale_phrase"][0] == "March 5, 2024" and pd.isna(flagged["stale_phrase"][1])
    assert (flagged["stale_as_of"] == pd.Timestamp("2026-11-24", tz="UTC")).all()


@pytest.mark.skipif(not BENCHMARKS.is_dir(), reason=f"{BENCHMARKS} is absent (a clone has no ../shared)")
def test_the_real_files_keep_every_record_and_carry_their_flags(lake):
    config = Config(lake=LakeConfig(data_dir=lake.root), taskset=TasksetConfig(stale=StaleConfig(as_of=AS_OF)))
    for name, (source, records, _) in REAL_FILES.items():
        answers = [str(BENCHMARKS / "webvoyager" / "reference_answer.json")] if source == "webvoyager" else []
        (report,) = ingest_inputs.fn(config, [str(BENCHMARKS / name), *answers], source)
        assert report.read == records and report.ingested + report.present == records, name
    seeds = lake.read_table("seed_tasks").set_index("source_id")
    assert seeds["stale_as_of"].eq(pd.Timestamp(AS_OF, tz="UTC")).all()  # every record was checked
    assert seeds.at["Booking--11", "stale_phrase"] == "March 20-27, 2024"
    assert seeds.at["Google Flights--41", "stale_phrase"] == "8 March 2024"
    assert pd.isna(seeds.at["Wolfram Alpha--37", "stale_phrase"])  # "days between February 12, 2024 and ..."
    flagged = seeds[seeds["stale_phrase"].notna()]
    assert {"online-mind2web", "webvoyager"} <= set(flagged["source"])
    assert all(phrase in text for phrase, text in zip(flagged["stale_phrase"], flagged["text"], strict=True))


def seed(source_id: str, text: str) -> SeedTask:
    return SeedTask(source="webgym", source_id=source_id, text=text, website="booking.com", domain="Travel",
                    subdomain="Lodging", rubric=rubric_from_reference(["a hotel", "the dates"]), raw="{}",
                    ingested_at=NOW)


STALE = "Reserve a hotel in Chicago for a stay from March 20-27, 2024."
FRESH = "Find a hotel in Paris with free Wi-Fi."


@pytest.fixture
def server():
    with ScriptedServer() as running:
        yield running


def profile(lake, tmp_path, handle: str, server: ScriptedServer | None = None) -> Config:
    endpoints = [EndpointConfig(base_url=server.base_url, model="scripted", timeout_s=5.0)] if server else []
    return Config(lake=LakeConfig(data_dir=lake.root),
                  llm=LLMConfig(default=endpoints, cache_dir=str(tmp_path / "cache"), max_attempts=1, backoff_s=0.01,
                                structured_attempts=2),
                  taskset=TasksetConfig(stale=StaleConfig(as_of=AS_OF, handle=handle)))


def test_keep_flags_the_task_and_drop_leaves_it_out_of_the_tasks(lake, tmp_path):
    lake.write_table("seed_tasks", rows([seed("1", STALE), seed("2", FRESH)]))
    dropped = annotate_seeds.fn(profile(lake, tmp_path, "drop"))
    assert dropped.stale == {"webgym": {"flagged": 1, "dropped": 1}} and dropped.stale_as_of == "2026-11-24, drop"
    assert lake.read_table("tasks")["source_id"].tolist() == ["2"]
    kept = annotate_seeds.fn(profile(lake, tmp_path, "keep"))  # the dropped seed is still pending
    assert kept.stale == {"webgym": {"flagged": 1}} and kept.annotated == 1
    task = lake.read_table("tasks").set_index("source_id").loc["1"]
    assert (task["text"], task["stale_phrase"], task["text_writer"]) == (STALE, "March 20-27, 2024", "source")
    assert task["stale_as_of"] == pd.Timestamp("2026-11-24", tz="UTC") and pd.isna(task["original_text"])


def test_rewrite_moves_the_date_keeps_the_source_text_and_is_ledgered(lake, tmp_path, server):
    server.add(Reply.json({"task": "Reserve a hotel in Chicago for a stay from March 20-27, 2025."}), times=1,
               purpose="refresh")  # still past: refused, asked again
    server.add(Reply.json({"task": "Reserve a hotel in Chicago for a stay from March 20-27, 2027."}), purpose="refresh")
    lake.write_table("seed_tasks", rows([seed("1", STALE), seed("2", FRESH)]))
    with pytest.raises(NoEndpointError, match="purpose 'refresh'"):
        annotate_seeds.fn(profile(lake, tmp_path, "rewrite"))  # no endpoint: fails before any work
    report = annotate_seeds.fn(profile(lake, tmp_path, "rewrite", server))
    assert report.stale == {"webgym": {"flagged": 1, "rewritten": 1}} and report.bad == []
    assert len(server.requests) == 2 and "'March 20-27, 2025' is still before 2026-11-24" in json.dumps(
        server.requests[1].body)
    task = lake.read_table("tasks").set_index("source_id").loc["1"]
    assert task["text"] == "Reserve a hotel in Chicago for a stay from March 20-27, 2027."
    assert (task["original_text"], task["text_writer"], task["stale_phrase"]) == (STALE, "llm", "March 20-27, 2024")
    calls = lake.read_table("llm_calls")
    assert calls[["purpose", "prompt_name"]].drop_duplicates().values.tolist() == [["refresh", "refresh_task"]]


def test_a_rewrite_that_fails_is_a_bad_record_retried_by_the_next_build(lake, tmp_path, server):
    server.add(Reply.json({"task": STALE}), purpose="refresh", times=2)  # unchanged, twice
    lake.write_table("seed_tasks", rows([seed("1", STALE), seed("2", FRESH)]))
    config = profile(lake, tmp_path, "rewrite", server).model_copy(update={"llm": LLMConfig(
        default=[EndpointConfig(base_url=server.base_url, model="scripted", timeout_s=5.0)], cache=False,
        max_attempts=1, backoff_s=0.01, structured_attempts=2)})
    first = annotate_seeds.fn(config)
    (bad,) = first.bad
    assert str(bad).startswith("webgym/1: stale date not rewritten") and "is still before 2026-11-24" in bad.reason
    assert lake.read_table("tasks")["source_id"].tolist() == ["2"]  # nothing lost: the seed stays pending
    server.add(Reply.json({"task": "Reserve a hotel in Chicago for a stay from March 20-27, 2027."}), purpose="refresh")
    assert annotate_seeds.fn(config).stale["webgym"] == {"flagged": 1, "rewritten": 1}
    assert sorted(lake.read_table("tasks")["source_id"]) == ["1", "2"]


def test_cli_build_prints_the_stale_counts_per_source(tmp_path, lake, prefect_harness, monkeypatch):
    monkeypatch.delenv("WEBGYM_DATA", raising=False)
    tasks = tmp_path / "webgym.jsonl"
    tasks.write_text("".join(json.dumps({"task_name": text, "website": "booking.com", "domain": "Travel",
                                         "subdomain": "Lodging", "evaluator_reference": ["a hotel"]}) + "\n"
                             for text in (STALE, FRESH)))
    ci = ["--config", str(PROJECT_ROOT / "configs" / "ci.yaml")]  # 4 MiniWoB++ pages to read, not the main job's 350
    result = CliRunner().invoke(app, [*ci, "--data-dir", lake.root, "taskset", "build", str(tasks), "--stale", "drop",
                                      "--as-of", "2026-11-24", "--test-websites", "0"])
    assert result.exit_code == 0, result.output
    assert "stale tasks (as of 2026-11-24, drop): webgym 1 flagged, 1 dropped" in result.output
    wrong = CliRunner().invoke(app, ["--data-dir", lake.root, "taskset", "build", str(tasks), "--stale", "purge"])
    assert wrong.exit_code == 2 and "handle" in wrong.output


def test_drop_leaves_the_stale_seeds_out_and_only_rewrite_with_a_stale_seed_rewrites():
    seeds = pd.DataFrame({"task": ["a", "b", "c"], "stale_phrase": [None, "by March 2020", None]})
    assert list(seeds_to_annotate(seeds, "drop")["task"]) == ["a", "c"]
    assert seeds_to_annotate(seeds, "keep").equals(seeds) and seeds_to_annotate(seeds, "rewrite").equals(seeds)
    assert any_to_rewrite(seeds, "rewrite") and not any_to_rewrite(seeds, "keep")
    assert not any_to_rewrite(seeds.iloc[[0, 2]], "rewrite")


def test_a_reworded_revision_with_its_old_answer_is_held_back_until_its_answer_is_refreshed(lake, tmp_path):
    """FARA re-worded 'released in 2024' as 'released in 2025' and kept the 2024 answer: no task (no reward)
    is made of it until a revision with its own answer comes, whatever order the files came in."""
    old, new = "Find the top fiction book of 2024 on booking.com.", "Find the top fiction book of 2025 on booking.com."
    published = dt.datetime(2025, 8, 31, tzinfo=dt.UTC)
    revised = seed("1", new).model_copy(update={"reference_answer": "Book 2024", "revision": 1, "published": published})
    original = seed("1", old).model_copy(update={"reference_answer": "Book 2024", "revision": 2})
    lake.write_table("seed_tasks", rows([revised, original]))  # the newer file was ingested first
    report = annotate_seeds.fn(profile(lake, tmp_path, "keep"))
    assert report.stale == {"webgym": {"held back (reference answer older than the text)": 1}}
    assert lake.read_table("tasks").empty
    refreshed = revised.model_copy(update={"reference_answer": "Book 2025", "revision": 3})
    lake.write_table("seed_tasks", rows([refreshed]))
    assert annotate_seeds.fn(profile(lake, tmp_path, "keep")).annotated == 1
    task = lake.read_table("tasks").iloc[0]
    assert (task["text"], task["reference_answer"], task["revision"]) == (new, "Book 2025", 3)
    assert task["published"] == pd.Timestamp(published)


def test_seeds_whose_answer_predates_their_text_are_held_back_and_counted_per_source():
    seeds = pd.DataFrame({"source": ["fara", "fara", "gaia"], "task": ["a", "b", "c"],
                          "answer_stale": [None, "reference answer of revision 1, given for another wording", None]})
    assert answers_current(seeds).to_dict("list") == {"source": ["fara", "gaia"], "task": ["a", "c"]}
    assert held_back_by_source(seeds) == {"fara": 1}
