"""Goals as tasks: rubric facts and checks, task text, and the JSONL the synthetic adapter reads."""

from __future__ import annotations

import json

import pytest

from stages.decompose import decomposition_plan
from stages.ingest import seed_tasks_from_files
from webgym.sites.oracle import rubric_checks
from webgym.sites.site import load_sites
from webgym.config import EndpointConfig, LLMConfig
from webgym.llm.client import LLM, NoEndpointError
from webgym.llm.scripted_server import Reply, ScriptedServer
from webgym.sites.tasks import export_tasks, llm_rephraser
from tests.webgym.sites.conftest import mini_spec, write


def test_rubric_facts_read_as_sentences_and_checks_are_self_contained(mini):
    rubric = mini.rubric("buy-cheap-mug")
    assert [g.description for g in rubric.groups] == ["order", "buyer"]
    assert rubric.groups[0].facts == ["The cart includes Blue Mug (qty 2)", "The cart holds exactly 1 item(s)",
                                      "The order is placed"]
    question = mini.rubric("kettle-price")
    check = json.loads(question.groups[0].checks[0])
    assert check["value"] == 30.0  # the data lookup is resolved: the verifier needs no spec
    assert check["evidence"][1] == {"var": "product", "op": "eq", "value": "p3"}
    assert question.groups[0].facts == ["The answer gives 30"]


def test_export_writes_one_line_per_goal_that_the_synthetic_adapter_ingests(tmp_path):
    (tmp_path / "specs").mkdir()
    write(tmp_path / "specs", "mini.yaml", mini_spec())
    sites = list(load_sites(tmp_path / "specs").values())
    out = tmp_path / "tasks" / "synthetic.jsonl"
    assert export_tasks(sites, out) == 2
    records = [json.loads(line) for line in out.read_text().splitlines()]
    first = records[0]
    assert {k: first[k] for k in ("site", "hostname", "goal_id", "source_id", "start_url", "domain", "graph")} == {
        "site": "mini", "hostname": "mini.test", "goal_id": "buy-cheap-mug", "source_id": "mini/buy-cheap-mug",
        "start_url": "http://mini.test/", "domain": "shopping", "graph": "mini"}
    assert (first["difficulty"], first["band"], first["step_limit"], first["oracle_length"]) == (4, "medium", 20, 7)
    assert first["text"] == "On Mini Mart, buy two of the cheaper mug as Ada."
    assert records[1]["reference_answer"] == "30" and first["reference_answer"] is None
    ingested = seed_tasks_from_files("synthetic", [str(out)])
    assert ingested.bad == []
    rows = ingested.rows.to_dict("records")
    assert [r["source_id"] for r in rows] == ["mini/buy-cheap-mug", "mini/kettle-price"]
    assert rows[0]["website"] == "mini.test" and rows[0]["start_url"] == "http://mini.test/"
    assert rows[0]["rubric"]["groups"][0]["checks"] == json.loads(json.dumps(first["rubric"]["groups"][0]["checks"]))


def test_every_decomposed_goal_has_its_own_oracle_path(shipped):
    site = shipped["fly-a"]
    rubric = site.rubric("book-cheapest-direct")
    subsets = decomposition_plan(rubric)
    assert len(subsets) >= 5
    for subset in subsets:
        found = site.oracle_path("book-cheapest-direct", tuple(subset.groups))
        final = site.machine.env(found.states[-1])
        for check in rubric_checks(rubric, subset.groups):
            assert site.machine.compiler.condition(check, "check").fn(final), (subset.groups, check)


def test_export_can_have_an_llm_reword_the_task_texts(tmp_path, lake):
    (tmp_path / "specs").mkdir()
    write(tmp_path / "specs", "mini.yaml", mini_spec())
    sites = list(load_sites(tmp_path / "specs").values())
    with ScriptedServer() as server:
        server.add(Reply(text="Could you get Ada two of whichever mug is cheaper?"), contains="buy two of the cheaper")
        server.add(Reply.http_error(500), contains="Green Kettle")  # a failed call keeps the template text
        config = LLMConfig(default=[EndpointConfig(base_url=server.base_url, model="scripted", timeout_s=2.0)],
                           cache_dir=str(tmp_path / "cache"), max_attempts=1, backoff_s=0.01)
        with LLM(config, lake, run_id="test") as llm:
            export_tasks(sites, tmp_path / "out.jsonl", llm_rephraser(llm))
        prompt = server.requests[0].body["messages"][-1]["content"]
    first, second = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert first["text"] == "Could you get Ada two of whichever mug is cheaper?"
    assert first["template_text"] == "On Mini Mart, buy two of the cheaper mug as Ada."
    assert "- The cart includes Blue Mug (qty 2)" in prompt and "Mini Mart (mini.test)" in prompt
    assert second["text"] == second["template_text"] == "What does the Green Kettle cost on Mini Mart?"


def test_rephrasing_needs_an_endpoint(lake, tmp_path):
    with LLM(LLMConfig(cache_dir=str(tmp_path / "cache")), lake) as llm, pytest.raises(NoEndpointError, match="site-tasks"):
        llm_rephraser(llm)
