"""Annotate: websites from records and texts, taxonomy labels, the LLM's answer checked, synthetic
tasks without the LLM, bad answers as reported records, and reruns that ask nothing again."""

from __future__ import annotations

import pandas as pd
import pytest
from pydantic import ValidationError

from flows.build_taskset import annotate_seeds
from schemas.seed_tasks import SeedTask
from schemas.tasks import TAXONOMY, task_id_for
from stages.annotate import (SOURCE_LABELS, Annotation, Site, annotated_tasks, known_site,
                             site_in_text, taxonomy_labels)
from stages.ingest.webgym import rubric_from_reference
from tests.conftest import NOW, rows
from webgym.config import AnnotateConfig, Config, EndpointConfig, LakeConfig, LLMConfig
from webgym.llm.client import LLM, NoEndpointError
from webgym.llm.scripted_server import Reply, ScriptedServer
from webgym.sites.site import load_sites


def seed(source: str, source_id: str, text: str, **fields) -> SeedTask:
    return SeedTask(source=source, source_id=source_id, text=text, raw="{}", ingested_at=NOW, **fields)


def answer(website: str | None = "www.allrecipes.com", domain: str = "Lifestyle & Leisure",
           subdomain: str = "Food & Cooking", groups: list | None = None) -> dict:
    groups = groups or [{"description": "the recipe", "facts": ["vegetarian lasagna", "more than 100 reviews"]}]
    return {"website": website, "domain": domain, "subdomain": subdomain, "groups": groups}


def about(word: str):
    """Requests of one task, retries included (their last user message is the retry prompt)."""
    return lambda request: any(word in text for text in request.texts)


@pytest.fixture
def server():
    with ScriptedServer() as running:
        yield running


def llm_config(tmp_path, server: ScriptedServer | None) -> LLMConfig:
    endpoints = [EndpointConfig(base_url=server.base_url, model="scripted", timeout_s=5.0)] if server else []
    return LLMConfig(default=endpoints, cache=False, cache_dir=str(tmp_path / "cache"), max_attempts=1,
                     backoff_s=0.01, structured_attempts=2)


@pytest.mark.parametrize(("text", "site"), [
    ("Find a recipe on allrecipes.com, e.g. lasagna.", Site("allrecipes.com", "https://allrecipes.com/")),
    ("Open https://www.chopin2025.pl/en/concerts, then list them.",
     Site("chopin2025.pl", "https://www.chopin2025.pl/en/concerts")),
    ("Compare prices on www.Amazon.co.uk", Site("amazon.co.uk", "https://www.amazon.co.uk/")),
    ("Read the Node.js docs, write to ada@example.com, use version 3.5 or v1.2.", None),
    ("What year was the Eiffel Tower completed?", None),
])
def test_a_url_or_a_bare_domain_in_the_text_names_the_website(text, site):
    assert site_in_text(text) == site


def test_the_records_own_website_and_start_url_win_over_the_text():
    record = {"text": "Like on imdb.com", "website": "allrecipes.com", "start_url": None}
    assert known_site(record) == Site("allrecipes.com", "https://allrecipes.com/")
    gaia = {"text": "How many albums?", "website": None, "start_url": "https://www.google.com/"}
    assert known_site(gaia) == Site(None, "https://www.google.com/")  # the LLM is still asked for the website
    webarena = {"text": "Show my orders", "website": "__SHOPPING__", "start_url": None}
    assert known_site(webarena) == Site("__SHOPPING__", None)


def test_source_labels_map_onto_the_taxonomy():
    assert sum(len(s) for s in TAXONOMY.values()) == 24 and len(TAXONOMY) == 6  # Mind2Web-2's
    assert [len(TAXONOMY[d]) for d in ("Lifestyle & Leisure", "Entertainment", "Misc.")] == [7, 5, 5]
    assert taxonomy_labels("travel", "Flights") == ("Travel & Transportation", "Travel & Accommodation")
    assert taxonomy_labels("ENTERTAINMENT", None) == ("Entertainment", None)
    assert taxonomy_labels("Entertainment", "unknown subdomain") == ("Entertainment", None)
    assert taxonomy_labels("Career & Education", "jobs & career") == ("Career & Education", "Jobs & Career")
    assert taxonomy_labels("shopping", None) == ("Lifestyle & Leisure", "Shopping")  # a subdomain's name
    assert taxonomy_labels("cooking", None) == (None, None)
    assert all(d in TAXONOMY and (s is None or s in TAXONOMY[d]) for d, s in SOURCE_LABELS.values())
    for site in load_sites().values():  # every shipped synthetic site lands in the taxonomy
        domain, subdomain = taxonomy_labels(site.spec.domain, site.spec.subdomain)
        assert domain in TAXONOMY and subdomain in TAXONOMY[domain], site.name


def test_an_answer_must_pair_a_subdomain_with_its_domain_and_name_a_host():
    assert Annotation.model_validate(answer()).rubric().n_facts == 2
    with pytest.raises(ValidationError, match="belongs to domain 'Travel & Transportation'"):
        Annotation.model_validate(answer(subdomain="Travel & Accommodation"))
    with pytest.raises(ValidationError, match="subdomain"):
        Annotation.model_validate(answer(subdomain="Food & Dining"))  # the taxonomy's words only
    with pytest.raises(ValidationError, match="not a host name"):
        Annotation.model_validate(answer(website="the recipe site"))
    with pytest.raises(ValidationError, match="facts"):
        Annotation.model_validate(answer(groups=[{"description": "x", "facts": []}]))


def test_one_call_per_task_that_lacks_something_and_the_sources_values_win(tmp_path, lake, server):
    server.add(Reply.json(answer()), contains="vegetarian lasagna")
    server.add(Reply.json(answer(website="www.imdb.com", domain="Entertainment", subdomain="Films & TV Shows",
                                 groups=[{"description": "film", "facts": ["the year"]}])), contains="Eiffel")
    seeds = rows([
        seed("webvoyager", "a", "Provide a recipe for vegetarian lasagna with more than 100 reviews.",
             website="allrecipes.com", start_url="https://www.allrecipes.com/", source_difficulty="easy"),
        seed("webgym", "103", "What year was the Eiffel Tower completed?", reference_answer="1889",
             rubric=rubric_from_reference("answer states 1889")),  # a string rubric: one group, one fact
        seed("webgym", "104", "Book a train", website="rail.example", domain="Travel", subdomain="Ground Transportation",
             rubric=rubric_from_reference(["a train", "booked"])),
        seed("synthetic", "shop-a/g1", "Buy the red mug", website="shop-a.test", start_url="http://shop-a.test/",
             domain="shopping", subdomain="homeware", rubric=rubric_from_reference(["mug in cart"])),
    ])
    with LLM(llm_config(tmp_path, server), lake) as llm:
        result = annotated_tasks(seeds, llm, AnnotateConfig(), NOW)
    assert result.bad == [] and result.asked == 2 and len(server.requests) == 2
    tasks = result.rows.set_index("source_id")
    lasagna = tasks.loc["a"]
    assert (lasagna["website"], lasagna["start_url"]) == ("allrecipes.com", "https://www.allrecipes.com/")
    assert (lasagna["domain"], lasagna["subdomain"], lasagna["difficulty"]) == ("Lifestyle & Leisure", "Food & Cooking", 2)
    assert lasagna["source_difficulty"] == "easy" and lasagna["task_id"] == task_id_for("webvoyager", "a")
    eiffel = tasks.loc["103"]
    assert (eiffel["website"], eiffel["start_url"], eiffel["domain"]) == ("imdb.com", "https://imdb.com/", "Entertainment")
    assert eiffel["rubric"]["groups"] == [{"description": "answer states 1889", "facts": ["answer states 1889"],
                                           "checks": None}]  # the source's rubric, not the answer's
    assert eiffel["difficulty"] == 1 and eiffel["reference_answer"] == "1889"
    assert tasks.loc["104", "difficulty"] == 2
    assert (tasks.loc["104", "domain"], tasks.loc["104", "subdomain"]) == ("Travel & Transportation",
                                                                          "Travel & Accommodation")
    assert (tasks.loc["shop-a/g1", "domain"], tasks.loc["shop-a/g1", "subdomain"]) == ("Lifestyle & Leisure", "Shopping")
    request = next(r for r in server.requests if "lasagna" in r.last_user_text)  # the calls are concurrent
    assert request.purpose == "rubric" and request.body["temperature"] == 0
    assert ("- Travel & Transportation: Outdoor & Recreation; Ticketed Activities; Travel & Accommodation"
            in "\n".join(request.texts))
    assert "Website given by the task's source: allrecipes.com" in request.last_user_text
    assert not any("red mug" in text for r in server.requests for text in r.texts)


def test_an_answer_that_stays_invalid_or_a_failed_call_is_a_bad_record_and_the_rest_land(tmp_path, lake, server):
    server.add(Reply.json(answer(subdomain="Ticketed Activities")), when=about("lasagna"))  # a wrong pair, asked twice
    server.add(Reply(text="not json at all"), when=about("cookie"))
    server.add(Reply.http_error(400, "context too long"), contains="brownie")
    server.add(Reply.json(answer()), contains="pie")
    seeds = rows([seed("webvoyager", str(i), f"Find a {dish} recipe", website="allrecipes.com")
                  for i, dish in enumerate(["lasagna", "cookie", "brownie", "pie"])])
    with LLM(llm_config(tmp_path, server), lake) as llm:
        result = annotated_tasks(seeds, llm, AnnotateConfig(), NOW)
    assert result.rows["source_id"].tolist() == ["3"]
    reasons = {b.source_id: b.reason for b in result.bad}
    assert set(reasons) == {"0", "1", "2"}
    assert "no valid Annotation after 2 answer(s)" in reasons["0"] and "belongs to domain 'Travel & Transportation'" in reasons["0"]
    assert "no valid Annotation" in reasons["1"] and "context too long" in reasons["2"]
    assert str(result.bad[0]).startswith("webvoyager/0: ")


def test_annotating_the_lake_is_resumable_and_needs_an_endpoint_only_for_what_lacks_annotations(tmp_path, lake, server):
    server.add(Reply.json(answer()), contains="lasagna")
    lake.write_table("seed_tasks", rows([
        seed("webvoyager", "a", "Find a vegetarian lasagna recipe"),
        seed("webvoyager", "b", "Find a vegetarian lasagna recipe!"),
        seed("synthetic", "shop-a/g1", "Buy the red mug", website="shop-a.test", domain="shopping",
             rubric=rubric_from_reference(["mug in cart"]))]))
    lake.write_table("duplicates", pd.DataFrame([{
        "source": "webvoyager", "source_id": "b", "duplicate_of_source": "webvoyager", "duplicate_of_source_id": "a",
        "kind": "exact", "similarity": 1.0, "threshold": 0.9, "detected_at": NOW}]))
    offline = Config(lake=LakeConfig(data_dir=lake.root), llm=llm_config(tmp_path, None))
    with pytest.raises(NoEndpointError, match="purpose 'rubric'"):
        annotate_seeds.fn(offline)
    assert lake.count("tasks") == 0  # it failed before any work
    config = offline.model_copy(update={"llm": llm_config(tmp_path, server)})
    first = annotate_seeds.fn(config)
    assert (first.pending, first.annotated, first.asked_llm, first.bad) == (2, 2, 1, [])
    assert sorted(lake.read_table("tasks")["source_id"]) == ["a", "shop-a/g1"]  # the duplicate never becomes a task
    again = annotate_seeds.fn(config)  # the LLM cache is off: only the lake can stop a second request
    assert (again.pending, again.annotated) == (0, 0) and len(server.requests) == 1
    calls = lake.read_table("llm_calls")
    assert calls[["purpose", "prompt_name"]].values.tolist() == [["rubric", "annotate_task"]]  # ledgered


def test_cli_annotate_reports_what_it_did(lake, monkeypatch):
    from typer.testing import CliRunner

    from webgym.cli import app

    monkeypatch.delenv("WEBGYM_DATA", raising=False)
    lake.write_table("seed_tasks", rows([seed("synthetic", "shop-a/g1", "Buy the red mug", website="shop-a.test",
                                              domain="shopping", rubric=rubric_from_reference(["mug in cart"]))]))
    result = CliRunner().invoke(app, ["--data-dir", lake.root, "taskset", "annotate"])
    assert result.exit_code == 0, result.output
    assert "1 of 1 pending seed task(s) annotated, 0 with the LLM (no LLM calls); 0 bad" in result.output
    assert lake.read_table("tasks")["domain"].tolist() == ["Lifestyle & Leisure"]
