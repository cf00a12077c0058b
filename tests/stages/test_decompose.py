"""WebGym Algorithm 1: the paper's example, the edge cases, the cap, exclusions and `taskset plan`."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from schemas.rubric import FactGroup, Rubric
from schemas.tasks import SCHEMA, Task, task_id_for
from stages.decompose import TextRequest, decomposed_tasks, decomposition_plan, template_text
from flows.build_taskset import decompose_tasks
from tests.conftest import NOW, rubric
from webgym.cli import app
from webgym.config import Config, DecomposeConfig, EndpointConfig, LakeConfig, LLMConfig
from webgym.lake import Lake
from webgym.llm.scripted_server import Reply, ScriptedServer


def plan(*sizes: int, cap: int | None = None) -> list[tuple[tuple[int, ...], int]]:
    return [(s.groups, s.difficulty) for s in decomposition_plan(Rubric.model_validate(rubric(*sizes)), cap)]


def test_the_papers_example_yields_five_subsets_of_difficulty_3_to_7():
    # G1 (2 facts, concert eligibility), G2 (3, pianist), G3 (4, concert details)
    assert plan(2, 3, 4) == [((1,), 3), ((2,), 4), ((0, 1), 5), ((0, 2), 6), ((1, 2), 7)]


@pytest.mark.parametrize(("sizes", "expected"), [
    ((5,), []),                                   # one group: no proper subset worth a task
    ((2, 2, 1), []),                              # no large group
    ((3, 1), [((0,), 3)]),                        # the paper's shopping-cart example: one new task
    ((3, 3), [((0,), 3), ((1,), 3)]),             # all groups large: every proper subset
    ((3, 4, 5), [((0,), 3), ((1,), 4), ((2,), 5), ((0, 1), 7), ((0, 2), 8), ((1, 2), 9)]),
])
def test_edge_cases(sizes, expected):
    assert plan(*sizes) == expected


def test_the_cap_keeps_the_fewest_groups_first():
    assert plan(2, 3, 4, cap=3) == [((1,), 3), ((2,), 4), ((0, 1), 5)]
    assert len(plan(3, 3, 3, 3, 3, 3)) == 62 and len(plan(3, 3, 3, 3, 3, 3, cap=10)) == 10


def parents() -> pd.DataFrame:
    return pd.DataFrame([m.model_dump() for m in [
        Task(task_id="p1", source="webgym", source_id="101", text="Find an upcoming piano concert.",
             website="chopin.pl", domain="Entertainment", difficulty=9, rubric=rubric(2, 3, 4), created_at=NOW),
        Task(task_id="p2", source="pae", source_id="x", text="Excluded source.", difficulty=6,
             rubric=rubric(3, 3), created_at=NOW),
        Task(task_id="p3", source="synthetic", source_id="shop-a/g", text="Buy the red mug", difficulty=4,
             rubric={"groups": [{"description": "cart", "facts": ["a", "b", "c"], "checks": ["1", "2", "3"]},
                                {"description": "paid", "facts": ["d"], "checks": ["4"]}]}, created_at=NOW),
        Task(task_id="p4", source="webgym", source_id="102", text="No rubric yet.", created_at=NOW)]])


def test_decomposed_tasks_inherit_the_parent_and_keep_the_subsets_rubric():
    def writer(requests: list[TextRequest]) -> list[str | None]:
        return [None if r.kept[0].description == "group 2" else f"LLM: {r.parent_text}" for r in requests]

    children = decomposed_tasks(parents(), DecomposeConfig(), writer=writer, now=NOW)
    SCHEMA.to_arrow(children)  # fits the tasks table
    assert children["parent_task_id"].tolist() == ["p1"] * 5 + ["p3"]
    webgym = children[children["parent_task_id"] == "p1"]
    assert webgym["difficulty"].tolist() == [3, 4, 5, 6, 7]
    assert webgym["parent_groups"].tolist() == [[1], [2], [0, 1], [0, 2], [1, 2]]
    assert webgym["text_writer"].tolist() == ["llm", "template", "llm", "llm", "llm"]  # None: the template
    assert webgym["text"].iloc[1] == "Find an upcoming piano concert. Only this part is required: group 2 (fact 2.0, " \
                                     "fact 2.1, fact 2.2, fact 2.3)."
    assert webgym["text"].iloc[0] == "LLM: Find an upcoming piano concert." and (webgym["website"] == "chopin.pl").all()
    assert [len(g["facts"]) for g in webgym.iloc[4]["rubric"]["groups"]] == [3, 4]
    assert webgym.iloc[0]["task_id"] == task_id_for("webgym", "101", (1,))
    synthetic = children[children["parent_task_id"] == "p3"].iloc[0]  # never sent to the writer
    assert synthetic["text"] == "Buy the red mug. Only this part is required: cart (a, b, c)."
    assert synthetic["text_writer"] == "template"
    assert synthetic["rubric"]["groups"] == [{"description": "cart", "facts": ["a", "b", "c"], "checks": ["1", "2", "3"]}]
    included = decomposed_tasks(parents(), DecomposeConfig(exclude_sources=[]), now=NOW)
    assert (included["parent_task_id"] == "p2").sum() == 2


def test_template_text_names_every_kept_fact():
    groups = [FactGroup(description="pianist", facts=["name", "prize"])]
    assert template_text("Find a concert.", groups) == "Find a concert. Only this part is required: pianist (name, prize)."


def test_cli_plan_prints_json_and_reports_a_bad_rubric(tmp_path):
    good = tmp_path / "rubric.json"
    good.write_text(json.dumps(rubric(2, 3, 4)))
    lake = ["--data-dir", str(tmp_path / "data")]  # taskset commands hold the lake's writer lock
    result = CliRunner().invoke(app, [*lake, "taskset", "plan", str(good)])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == [{"groups": [1], "difficulty": 3}, {"groups": [2], "difficulty": 4},
                                         {"groups": [0, 1], "difficulty": 5}, {"groups": [0, 2], "difficulty": 6},
                                         {"groups": [1, 2], "difficulty": 7}]
    capped = CliRunner().invoke(app, [*lake, "taskset", "plan", str(good), "--cap", "2"])
    assert len(json.loads(capped.output)) == 2
    bad = tmp_path / "bad.json"
    bad.write_text('{"groups": [{"description": "x"}]}')
    failed = CliRunner().invoke(app, [*lake, "taskset", "plan", str(bad)])
    output = " ".join(failed.output.split())
    assert failed.exit_code == 2 and "is not a rubric (groups.0.facts: Field required)" in output


def test_cli_decompose_adds_children_once_and_they_pass_the_quality_suite(lake, monkeypatch):
    from webgym.quality import validate

    monkeypatch.delenv("WEBGYM_DATA", raising=False)
    lake.write_table("tasks", parents())
    first = CliRunner().invoke(app, ["--data-dir", lake.root, "taskset", "decompose"])
    assert first.exit_code == 0, first.output
    assert ("6 decomposed task(s) added (0 already there) from 2 parent(s); texts: 6 by the template (no LLM calls)"
            in " ".join(first.output.split()))  # the embedded profile has no endpoint
    second = CliRunner().invoke(app, ["--data-dir", lake.root, "taskset", "decompose"])
    assert "0 decomposed task(s) added (6 already there)" in second.output
    assert lake.count("tasks") == 10 and validate(lake, ["tasks"]) == []


@pytest.fixture
def server():
    with ScriptedServer() as running:
        yield running


def llm_profile(lake, tmp_path, server: ScriptedServer) -> Config:
    endpoint = EndpointConfig(base_url=server.base_url, model="scripted", timeout_s=5.0)
    return Config(lake=LakeConfig(data_dir=lake.root),
                  llm=LLMConfig(default=[endpoint], cache_dir=str(tmp_path / "cache"), max_attempts=1, backoff_s=0.01,
                                structured_attempts=2))


def keeps(*groups: str):
    """Requests for the decomposed task that keeps exactly these groups of p1 (retries included: their last
    user message is the retry prompt)."""
    def match(request) -> bool:
        asked = next(text for text in request.texts if "keeps:" in text)
        kept = asked.split("keeps:")[1].split("Criteria it drops:")[0]
        return sorted(line.split(":")[0].strip(" -") for line in kept.strip().splitlines()) == sorted(groups)
    return match


def test_the_llm_writes_each_decomposed_task_in_one_cached_ledgered_call(lake, tmp_path, server):
    server.add(Reply.json({"task": "Find a Chopin Competition prize winner and their final's YouTube link."}),
               purpose="decompose")
    lake.write_table("tasks", parents())
    report = decompose_tasks.fn(llm_profile(lake, tmp_path, server))
    assert (report.added, report.written, report.problems) == (6, {"llm": 5, "template": 1}, [])
    assert [r.purpose for r in server.requests] == ["decompose"] * 5  # one per task of p1, none for synthetic p3
    asked = server.requests[0]
    assert asked.body["temperature"] == 0 and "Original task: Find an upcoming piano concert." in asked.last_user_text
    children = lake.read_table("tasks").dropna(subset=["parent_task_id"]).set_index("parent_task_id")
    written = "Find a Chopin Competition prize winner and their final's YouTube link."
    assert (children.loc["p1", "text"] == written).all()
    assert (children.loc["p1", "text_writer"] == "llm").all() and children.loc["p3", "text_writer"] == "template"
    calls = lake.read_table("llm_calls")
    assert calls[["purpose", "prompt_name"]].drop_duplicates().values.tolist() == [["decompose", "decompose_task"]]
    again = Lake(tmp_path / "again")  # the same tasks elsewhere: every text comes from the cache
    again.write_table("tasks", parents())
    assert decompose_tasks.fn(llm_profile(again, tmp_path, server)).written == {"llm": 5, "template": 1}
    assert len(server.requests) == 5 and again.read_table("llm_calls")["cached"].all()


def test_bad_answers_are_reported_and_their_tasks_keep_the_template_text(lake, tmp_path, server):
    server.add(Reply(text="a concert, I suppose"), when=keeps("group 1"))  # not JSON, twice
    server.add(Reply.json({"task": "Find a concert. Only this part is required: the pianist."}),
               when=keeps("group 2"))  # the template's shape, refused twice
    server.add(Reply.http_error(400, "context too long"), when=keeps("group 0", "group 1"))
    server.add(Reply.json({"task": "Find the date, city and venue of an upcoming Chopin recital."}),
               purpose="decompose")
    lake.write_table("tasks", parents())
    report = decompose_tasks.fn(llm_profile(lake, tmp_path, server))
    assert report.added == 6 and report.written == {"llm": 2, "template": 4}  # nothing lost
    problems = sorted(report.problems)
    assert len(problems) == 3 and all(p.startswith("decomposed task ") for p in problems)
    assert sum("no valid DecomposedText after 2 answer(s)" in p for p in problems) == 2
    assert any("context too long" in p for p in problems)
    assert any("not as the original task plus a note" in p for p in problems)
    children = lake.read_table("tasks").dropna(subset=["parent_task_id"])
    template = children[children["text_writer"] == "template"]
    assert template["text"].str.contains("Only this part is required").all() and len(template) == 4
