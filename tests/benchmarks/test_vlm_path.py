"""Item 5's task family in benchmarks/vlm_path.py: a directory site's filter tasks, whose held-out half asks
only for combinations of the clicks that the GRPO half makes, on the same site."""

from __future__ import annotations

import pytest

from tests.benchmarks import load_benchmark
from webgym import PROJECT_ROOT
from webgym.config import load_config
from webgym.sites.world import load_world

bench = load_benchmark("vlm_path")


@pytest.fixture(scope="module")
def directory_site():
    sites = load_config(PROJECT_ROOT / "configs" / "ci.yaml").sites
    world = sites.world.model_copy(update={"families": ["directory"], "instances": 1, "hand_written": False})
    return load_world(sites.model_copy(update={"world": world})).sites["directory-g0"]


def test_the_grid_is_every_filter_task_of_the_site_each_a_click_per_filter_then_the_answer(directory_site):
    cells = bench.filter_grid(directory_site)
    categories = [c["name"] for c in directory_site.spec.data["categories"] if c["id"] != "all"]
    districts = [d["name"] for d in directory_site.spec.data["districts"] if d["id"] != "all"]
    assert len(cells) == 15  # (3 + 1) x (3 + 1) filters, less the starting one
    for i, j, record in cells:
        category = "Everything" if i is None else categories[i]
        district = "All districts" if j is None else districts[j]
        assert record["text"] == f"On {directory_site.spec.title}, show {category} in {district}."
        assert record["oracle_length"] == (i is not None) + (j is not None) + 1
        assert record["hostname"] == directory_site.spec.hostname and record["reference_answer"] is None


def test_a_held_out_task_combines_clicks_that_grpo_tasks_make_but_never_together(directory_site):
    cells = [(i, j) for i, j, _ in bench.filter_grid(directory_site)]
    held_out = [cell for cell in cells if bench.held_out_cell(*cell)]
    trained = [cell for cell in cells if not bench.held_out_cell(*cell)]
    assert len(held_out) == 3 and len(trained) == 12
    assert sorted(i for i, _ in held_out) == [0, 1, 2] and sorted(j for _, j in held_out) == [0, 1, 2]
    for i, j in held_out:
        assert (i, None) in trained and (None, j) in trained
        assert len([1 for a, b in trained if a == i and b is not None]) == 2
        assert len([1 for a, b in trained if b == j and a is not None]) == 2
