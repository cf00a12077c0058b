"""Generated sites: deterministic from (family, seed), different across seeds, and every family
yields easy, medium and hard goals."""

from __future__ import annotations

import pytest
import yaml

from schemas.values import difficulty_band
from webgym.sites.family import load_families
from webgym.sites.generate import generate_raw, generate_spec
from webgym.sites.site import Site
from webgym.sites.spec import SPECS_DIR
from webgym.sites.specfiles import load_site, spec_files

FAMILIES = sorted(load_families())


def test_there_are_at_least_twenty_families_including_the_six_graphs_of_the_hand_written_sites():
    assert len(FAMILIES) >= 20
    assert {"shop", "travel", "mail", "forum", "recipes", "account"} <= set(FAMILIES)


@pytest.mark.slow
@pytest.mark.parametrize("name", FAMILIES)
def test_same_family_and_seed_give_the_same_spec_and_goals(name):
    first = generate_raw(load_families(names=[name])[name], 3)
    again = generate_raw(load_families(names=[name])[name], 3)
    assert yaml.safe_dump(first) == yaml.safe_dump(again)
    assert generate_spec(load_families(names=[name])[name], 3) == generate_spec(load_families(names=[name])[name], 3)


@pytest.mark.parametrize("name", FAMILIES)
def test_two_seeds_of_a_family_differ_in_data_wording_and_look(name):
    family = load_families(names=[name])[name]
    a, b = generate_raw(family, 0), generate_raw(family, 1)
    assert a["name"] == f"{name}-g0" and b["hostname"] == f"{name}-g1.test" and a["family"] == name
    assert a["data"] != b["data"]
    assert a["theme"] != b["theme"]
    assert [g["text"] for g in a["goals"]] != [g["text"] for g in b["goals"]]


@pytest.mark.parametrize("name", FAMILIES)
def test_every_family_yields_easy_medium_and_hard_goals(name):
    family = load_families(names=[name])[name]
    for seed in (0, 1):
        site = Site(generate_spec(family, seed), cache_dir=None)
        bands = {difficulty_band(site.rubric(goal.id).n_facts) for goal in site.spec.goals}
        assert bands == {"easy", "medium", "hard"}, f"{site.name}: {sorted(bands)}"
        assert len(site.spec.goals) >= 10, site.name


def test_a_generated_spec_records_its_family_and_a_hand_written_one_its_graph():
    site = generate_spec(load_families(names=["mail"])["mail"], 0)
    assert (site.family, site.graph, site.seed) == ("mail", "mail", 0)
    assert load_site(SPECS_DIR / "mail-a.yaml").family == "mail"


def test_five_sites_a_family_and_the_hand_written_ones_make_at_least_100_sites_and_2000_goals():
    generated = [generate_spec(family, seed) for family in load_families().values() for seed in range(5)]
    hand_written = [load_site(path) for path in spec_files(SPECS_DIR)]
    assert len(generated) + len(hand_written) >= 100
    assert sum(len(spec.goals) for spec in generated + hand_written) >= 2000
    assert len({spec.hostname for spec in generated + hand_written}) == len(generated) + len(hand_written)
