"""WebGym Algorithm 1: the paper's example, the edge cases, the cap, exclusions and `taskset plan`."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from schemas.rubric import FactGroup, Rubric
from schemas.tasks import SCHEMA, Task, task_id_for
from stages.decompose import decomposed_tasks, decomposition_plan, template_text
from tests.conftest import NOW, rubric
from webgym.cli import app
from webgym.config import DecomposeConfig


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
    children = decomposed_tasks(parents(), DecomposeConfig(), writer=lambda text, groups: "LLM: " + text, now=NOW)
    SCHEMA.to_arrow(children)  # fits the tasks table
    assert children["parent_task_id"].tolist() == ["p1"] * 5 + ["p3"]
    webgym = children[children["parent_task_id"] == "p1"]
    assert webgym["difficulty"].tolist() == [3, 4, 5, 6, 7]
    assert webgym["parent_groups"].tolist() == [[1], [2], [0, 1], [0, 2], [1, 2]]
    assert (webgym["text"].str.startswith("LLM: ")).all() and (webgym["website"] == "chopin.pl").all()
    assert [len(g["facts"]) for g in webgym.iloc[4]["rubric"]["groups"]] == [3, 4]
    assert webgym.iloc[0]["task_id"] == task_id_for("webgym", "101", (1,))
    synthetic = children[children["parent_task_id"] == "p3"].iloc[0]
    assert synthetic["text"] == "Buy the red mug. Only this part is required: cart (a, b, c)."
    assert synthetic["rubric"]["groups"] == [{"description": "cart", "facts": ["a", "b", "c"], "checks": ["1", "2", "3"]}]
    included = decomposed_tasks(parents(), DecomposeConfig(exclude_sources=[]), now=NOW)
    assert (included["parent_task_id"] == "p2").sum() == 2


def test_template_text_names_every_kept_fact():
    groups = [FactGroup(description="pianist", facts=["name", "prize"])]
    assert template_text("Find a concert.", groups) == "Find a concert. Only this part is required: pianist (name, prize)."


def test_cli_plan_prints_json_and_reports_a_bad_rubric(tmp_path):
    good = tmp_path / "rubric.json"
    good.write_text(json.dumps(rubric(2, 3, 4)))
    result = CliRunner().invoke(app, ["taskset", "plan", str(good)])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == [{"groups": [1], "difficulty": 3}, {"groups": [2], "difficulty": 4},
                                         {"groups": [0, 1], "difficulty": 5}, {"groups": [0, 2], "difficulty": 6},
                                         {"groups": [1, 2], "difficulty": 7}]
    capped = CliRunner().invoke(app, ["taskset", "plan", str(good), "--cap", "2"])
    assert len(json.loads(capped.output)) == 2
    bad = tmp_path / "bad.json"
    bad.write_text('{"groups": [{"description": "x"}]}')
    failed = CliRunner().invoke(app, ["taskset", "plan", str(bad)])
    output = " ".join(failed.output.split())
    assert failed.exit_code == 2 and "is not a rubric (groups.0.facts: Field required)" in output


def test_cli_decompose_adds_children_once_and_they_pass_the_quality_suite(lake, monkeypatch):
    from webgym.quality import validate

    monkeypatch.delenv("WEBGYM_DATA", raising=False)
    lake.write_table("tasks", parents())
    first = CliRunner().invoke(app, ["--data-dir", lake.root, "taskset", "decompose"])
    assert first.exit_code == 0, first.output
    assert "6 decomposed task(s) added (0 already there) from 2 parent(s)" in first.output
    second = CliRunner().invoke(app, ["--data-dir", lake.root, "taskset", "decompose"])
    assert "0 decomposed task(s) added (6 already there)" in second.output
    assert lake.count("tasks") == 10 and validate(lake, ["tasks"]) == []
