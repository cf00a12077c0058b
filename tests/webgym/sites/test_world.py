"""The world loader: hand-written and generated sites, checked, with failing sites reported and left
out, a site table for the split, and replays remembered."""

from __future__ import annotations

import shutil

import pytest

from tests.webgym.sites.conftest import save_family, tip_jar
from webgym.config import SitesConfig, WorldConfig
from webgym.sites import replay
from webgym.sites.site import load_sites
from webgym.sites.spec import SPECS_DIR
from webgym.sites.world import load_world

UNREACHABLE = {"id": "too-many", "text": "Tip nine times on {title}.",
               "groups": [{"description": "tips", "facts": [{"var": "tips", "op": "eq", "value": 9}]}]}


def settings(families_dir, cache_dir=None, specs_dir=None, **changes) -> SitesConfig:
    world = WorldConfig(**{"families_dir": str(families_dir), "instances": 2, "hand_written": False,
                           "replay_goals": 0, "generated_dir": None, **changes})
    return SitesConfig(world=world, cache_dir=None if cache_dir is None else str(cache_dir), search_workers=1,
                       **({"specs_dir": str(specs_dir)} if specs_dir else {}))


def test_a_failing_site_is_reported_with_family_seed_goal_and_reason_and_left_out(families_dir, tmp_path):
    save_family(families_dir, tip_jar())
    save_family(families_dir, tip_jar(family="greedyjar", goals=[*tip_jar()["goals"], UNREACHABLE]))
    save_family(families_dir, tip_jar(family="typojar", draw={"brand": {"$pick": "brands.frist"}}))
    world = load_world(settings(families_dir, tmp_path / "cache"))
    assert sorted(world.sites) == ["tipjar-g0", "tipjar-g1"]
    assert world.families() == {"tipjar": ["tipjar-g0", "tipjar-g1"]}
    assert world.goals == 6
    greedy = [p for p in world.problems if p.family == "greedyjar"]
    assert [(p.seed, p.site, p.goal) for p in greedy] == [(0, "greedyjar-g0", "too-many"), (1, "greedyjar-g1", "too-many")]
    assert all("unreachable" in p.reason for p in greedy)
    typo = [p for p in world.problems if p.family == "typojar"]
    assert [(p.seed, p.goal) for p in typo] == [(0, None), (1, None)]
    assert "unknown word list 'brands.frist'" in typo[0].reason
    assert str(typo[0]).startswith("typojar-g0 (family typojar, seed 0): ")


def test_the_site_table_names_every_site_with_its_family_and_seed(families_dir, tmp_path):
    save_family(families_dir, tip_jar())
    save_family(families_dir, tip_jar(family="coinjar"))
    table = load_world(settings(families_dir)).table().sort_values("site")
    assert table[["website", "family", "seed"]].values.tolist() == [
        ["coinjar-g0.test", "coinjar", 0], ["coinjar-g1.test", "coinjar", 1],
        ["tipjar-g0.test", "tipjar", 0], ["tipjar-g1.test", "tipjar", 1]]


def test_generated_specs_written_out_load_as_the_same_sites(families_dir, tmp_path):
    save_family(families_dir, tip_jar())
    out = tmp_path / "generated"
    world = load_world(settings(families_dir, generated_dir=str(out)))
    again = load_sites(out, cache_dir=None)
    assert sorted(again) == sorted(world.sites)
    assert again["tipjar-g1"].spec.goals == world.sites["tipjar-g1"].spec.goals
    assert again["tipjar-g1"].spec.family == "tipjar"


def test_hand_written_sites_join_the_generated_ones(families_dir, tmp_path):
    save_family(families_dir, tip_jar())
    specs = tmp_path / "specs"
    specs.mkdir()
    shutil.copy(SPECS_DIR / "mail-b.yaml", specs)
    world = load_world(settings(families_dir, specs_dir=specs, hand_written=True, instances=1))
    assert sorted(world.sites) == ["mail-b", "tipjar-g0"]
    assert world.family("mail-b") == "mail" and world.family("tipjar-g0") == "tipjar"


def test_a_replayed_goal_is_remembered_so_a_second_check_skips_the_browser(families_dir, tmp_path, monkeypatch):
    save_family(families_dir, tip_jar())
    cache = tmp_path / "cache"
    world = load_world(settings(families_dir, cache, instances=1, replay_goals=1))
    assert list(world.sites) == ["tipjar-g0"] and not world.problems
    assert len(list((cache / "replays").rglob("*"))) >= 1

    def no_browser(*args, **kwargs):
        raise AssertionError("the replay ran again")
    monkeypatch.setattr(replay, "verify_sites", no_browser)
    assert list(load_world(settings(families_dir, cache, instances=1, replay_goals=1)).sites) == ["tipjar-g0"]


@pytest.mark.slow
def test_every_shipped_family_passes_its_checks(tmp_path):
    world = load_world(SitesConfig(world=WorldConfig(instances=1, hand_written=False, replay_goals=0, generated_dir=None),
                                   cache_dir=str(tmp_path / "cache")))
    assert not world.problems, "\n".join(map(str, world.problems))
    assert len(world.families()) >= 20


def test_an_unchanged_generated_spec_is_not_written_again(families_dir, tmp_path):
    save_family(families_dir, tip_jar())
    out = tmp_path / "generated"
    load_world(settings(families_dir, generated_dir=str(out), instances=1))
    spec = out / "tipjar-g0.yaml"
    spec.write_text(spec.read_text().replace("\n", "\n# a reader's note\n", 1))  # after the stamp line
    load_world(settings(families_dir, generated_dir=str(out), instances=1))
    assert "a reader's note" in spec.read_text()
    site = {"domain": "Shopping", "subdomain": "General Merchandise", "title": "{brand} Deluxe Tips"}
    save_family(families_dir, tip_jar(site=site))  # what the spec is generated from changed
    load_world(settings(families_dir, generated_dir=str(out), instances=1))
    assert "a reader's note" not in spec.read_text() and "Deluxe Tips" in spec.read_text()
    assert load_sites(out, cache_dir=None)["tipjar-g0"].spec.title.endswith("Deluxe Tips")
