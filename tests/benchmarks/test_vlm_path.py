"""Item 5's task family in benchmarks/vlm_path.py: the filter tasks of a chain of city guides, sites that
share one filter bar; part of them demonstrated, the rest combinations of demonstrated clicks."""

from __future__ import annotations

import pytest

from tests.benchmarks import load_benchmark
from webgym import PROJECT_ROOT
from webgym.config import load_config
from webgym.lake import Lake
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


def test_every_filter_is_demonstrated_alone_and_with_one_partner_and_the_rest_combine_them(directory_site):
    cells = [(i, j) for i, j, _ in bench.filter_grid(directory_site)]
    shown = [cell for cell in cells if bench.demonstrated_cell(*cell)]
    never = [cell for cell in cells if not bench.demonstrated_cell(*cell)]
    assert len(shown) == 9 and len(never) == 6
    pairs = [(i, j) for i, j in shown if i is not None and j is not None]
    assert sorted(i for i, _ in pairs) == [0, 1, 2] and sorted(j for _, j in pairs) == [0, 1, 2]
    for i, j in never:
        assert i is not None and j is not None and (i, None) in shown and (None, j) in shown


def test_each_never_demonstrated_combination_is_held_out_on_some_sites_and_rolled_out_on_others(directory_site):
    cells = [(i, j) for i, j, _ in bench.filter_grid(directory_site)]
    never = {cell for cell in cells if not bench.demonstrated_cell(*cell)}
    held = {site: {cell for cell in cells if bench.held_out_cell(site, *cell)} for site in range(3)}
    for site in range(3):
        assert len(held[site]) == 3 and held[site] < never
        assert sorted(i for i, _ in held[site]) == [0, 1, 2]
    assert held[0] == held[2] and held[0] | held[1] == never and not held[0] & held[1]


def test_the_chain_sites_share_one_filter_bar_and_differ_in_the_rest(tmp_path):
    sites = load_config(PROJECT_ROOT / "configs" / "ci.yaml").sites
    world = sites.world.model_copy(update={"families": ["guide"], "instances": 3, "hand_written": False,
                                           "families_dir": str(bench.write_chain_family(tmp_path))})
    chain = load_world(sites.model_copy(update={"world": world})).sites
    assert sorted(chain) == ["guide-g0", "guide-g1", "guide-g2"]
    for site in chain.values():
        assert [c["name"] for c in site.spec.data["categories"]] == ["Everything", "Parks", "Cafés", "Libraries"]
        assert [d["name"] for d in site.spec.data["districts"]] == ["All districts", "Market District", "Lakeside",
                                                                    "Southbank"]
        assert len(bench.filter_grid(site)) == 15
    assert len({site.spec.hostname for site in chain.values()}) == 3
    assert len({tuple(p["name"] for p in site.spec.data["places"]) for site in chain.values()}) == 3


def test_a_rerun_on_the_same_out_writes_each_task_once(directory_site, tmp_path):
    profile = tmp_path / "profile.yaml"
    profile.write_text(f"lake:\n  data_dir: {tmp_path / 'lake'}\n")
    records = [record for _, _, record in bench.filter_grid(directory_site)]
    first = bench.write_tasks(profile, records[:10], "train")
    again = bench.write_tasks(profile, records, "train")  # the first 10 are there: only the other 5 are new
    assert again[:10] == first and len(set(again)) == 15
    tasks = Lake(tmp_path / "lake").read_table("tasks")
    assert sorted(tasks["task_id"]) == sorted(again)
