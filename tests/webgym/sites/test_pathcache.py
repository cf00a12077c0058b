"""Oracle paths kept on disk: a second load (a verify, an export, a rollout's oracle) reads them instead
of searching, a change to the site or the goal makes a new key, and a damaged entry is searched again."""

from __future__ import annotations

import json

import pytest

from webgym.sites.oracle import OraclePolicy, plan, rubric_checks
from webgym.sites.site import Site, search_paths
from webgym.sites.specfiles import parse_site
from tests.webgym.sites.conftest import mini_spec


def cached_site(directory, spec: dict | None = None) -> Site:
    return Site(parse_site(spec or mini_spec(), "mini.yaml"), cache_dir=directory)


@pytest.fixture
def no_search(monkeypatch):
    """From here on the BFS must not run: every path has to come from the cache."""
    def refuse(*args, **kwargs):
        raise AssertionError("searched although the path is on disk")
    monkeypatch.setattr("webgym.sites.oracle.shortest_path", refuse)


def steps(plan_) -> list[str]:
    return [str(step) for step in plan_.steps]


def test_a_second_load_reads_every_path_from_disk(tmp_path, request):
    found = cached_site(tmp_path).validate()
    assert len(list(tmp_path.rglob("*.json"))) == 2
    request.getfixturevalue("no_search")
    again = cached_site(tmp_path)
    paths = again.validate()
    assert {goal: steps(p) for goal, p in paths.items()} == {goal: steps(p) for goal, p in found.items()}
    assert paths["buy-cheap-mug"].explored == found["buy-cheap-mug"].explored
    machine = again.machine  # a rollout's oracle starts from the cached path as well
    policy = OraclePolicy(machine, again.rubric("buy-cheap-mug"), horizon=20)
    assert str(policy.next_step(machine.snapshot(machine.initial()))) == steps(found["buy-cheap-mug"])[0]


def test_the_key_follows_the_site_and_the_goal_but_not_the_other_goals(tmp_path):
    site = cached_site(tmp_path)
    checks = rubric_checks(site.rubric("buy-cheap-mug"))
    key = site.machine.paths.file(checks)
    assert site.machine.paths.file(rubric_checks(site.rubric("kettle-price"))) != key
    cheaper = mini_spec()
    cheaper["data"]["products"][1]["price"] = 15.0
    assert cached_site(tmp_path, cheaper).machine.paths.file(checks) != key
    more = mini_spec()
    more["goals"].append({"id": "extra", "text": "x", "groups": [{"description": "d", "facts": [
        {"var": "qty", "op": "eq", "value": 2}]}]})
    assert cached_site(tmp_path, more).machine.paths.file(checks) == key


@pytest.mark.parametrize("entry", [
    "{not json",
    json.dumps({"explored": 3, "steps": [["add", {}]]}),  # refused in the start state
    json.dumps({"explored": 3, "steps": [["search", {"q": "mug"}]]}),  # does not reach the goal
])
def test_a_damaged_or_stale_entry_is_searched_again_and_replaced(tmp_path, entry):
    first = cached_site(tmp_path).oracle_path("buy-cheap-mug")
    file = next(tmp_path.rglob("*.json"))
    file.write_text(entry)
    again = cached_site(tmp_path).oracle_path("buy-cheap-mug")
    assert steps(again) == steps(first)
    assert json.loads(file.read_text())["steps"] == [[s.action, s.args] for s in first.steps[:-1]]


def test_a_cached_path_longer_than_the_limit_means_none_fits(tmp_path, request):
    site = cached_site(tmp_path)
    machine, checks = site.machine, rubric_checks(site.rubric("buy-cheap-mug"))
    assert plan(machine, machine.initial(), checks, max_depth=20).length == 7
    request.getfixturevalue("no_search")
    assert plan(machine, machine.initial(), checks, max_depth=7).length == 7
    assert plan(machine, machine.initial(), checks, max_depth=6) is None


def test_search_paths_fills_the_cache_from_worker_processes(tmp_path, request):
    sites = [cached_site(tmp_path / "cache")]
    assert search_paths(sites, workers=2) == 2
    assert len(list((tmp_path / "cache").rglob("*.json"))) == 2
    request.getfixturevalue("no_search")
    assert search_paths(sites, workers=2) == 0 and set(sites[0].validate()) == {"buy-cheap-mug", "kettle-price"}
