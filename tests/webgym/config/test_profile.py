"""Profiles: `extends` starts from another profile and changes only what it sets; the shipped
profiles load (every key known) and say what they promise."""

from __future__ import annotations

import pytest

from webgym import PROJECT_ROOT
from webgym.config import ConfigError, load_config


def test_extends_overrides_only_what_it_sets(tmp_path):
    (tmp_path / "base.yaml").write_text("profile: base\nrollout:\n  concurrency: 3\n  group_size: 2\n")
    (tmp_path / "child.yaml").write_text("extends: base.yaml\nprofile: child\nrollout:\n  concurrency: 5\n")
    config = load_config(tmp_path / "child.yaml")
    assert (config.profile, config.rollout.concurrency, config.rollout.group_size) == ("child", 5, 2)


def test_extends_lays_a_list_of_fragments_over_each_other_in_order(tmp_path):
    (tmp_path / "common.yaml").write_text("rollout:\n  concurrency: 3\n  group_size: 2\n")
    (tmp_path / "recipe.yaml").write_text("rollout:\n  group_size: 4\ntrain:\n  epochs: 8\n")
    (tmp_path / "child.yaml").write_text("extends: [common.yaml, recipe.yaml]\nprofile: child\ntrain:\n  epochs: 2\n")
    config = load_config(tmp_path / "child.yaml")
    assert (config.rollout.concurrency, config.rollout.group_size, config.train.epochs) == (3, 4, 2)
    (tmp_path / "loop.yaml").write_text("extends: [common.yaml, loop.yaml]\n")
    with pytest.raises(ConfigError, match="loops back"):
        load_config(tmp_path / "loop.yaml")


def test_extends_loop_and_missing_parent_are_named(tmp_path):
    (tmp_path / "a.yaml").write_text("extends: b.yaml\n")
    (tmp_path / "b.yaml").write_text("extends: a.yaml\n")
    with pytest.raises(ConfigError, match="loops back"):
        load_config(tmp_path / "a.yaml")
    (tmp_path / "c.yaml").write_text("extends: nowhere.yaml\n")
    with pytest.raises(ConfigError, match="nowhere.yaml not found"):
        load_config(tmp_path / "c.yaml")


@pytest.mark.parametrize("content", ["", "\n", "# only a comment\n"])
def test_an_empty_profile_is_refused_not_run_on_defaults(tmp_path, content):
    (tmp_path / "empty.yaml").write_text(content)
    with pytest.raises(ConfigError, match="empty.yaml is empty"):
        load_config(tmp_path / "empty.yaml")


def test_a_profile_path_that_is_a_directory_is_named(tmp_path):
    (tmp_path / "profiles").mkdir()
    with pytest.raises(ConfigError, match="profiles is a directory"):
        load_config(tmp_path / "profiles")
    (tmp_path / "child.yaml").write_text("extends: profiles\n")
    with pytest.raises(ConfigError, match="profiles is a directory"):
        load_config(tmp_path / "child.yaml")


def test_ci_profile_is_the_local_default_made_small():
    local, ci = load_config(PROJECT_ROOT / "configs" / "local.yaml"), load_config(PROJECT_ROOT / "configs" / "ci.yaml")
    assert local.policy.kind == ci.policy.kind == "scorer" and ci.env.observation == "set_of_marks"
    assert local.nightly.eval_tasks >= 60 and local.nightly.iterations >= 4 and local.nightly.episodes == 64
    assert ci.nightly.iterations == 2 and ci.nightly.episodes < local.nightly.episodes
    assert ci.judge == local.judge and ci.lake.data_dir != local.lake.data_dir


def test_validation_sites_that_leave_a_family_nothing_to_train_on_are_named(tmp_path):
    (tmp_path / "p.yaml").write_text("sites: {world: {instances: 2}}\n"
                                     "taskset: {split: {held_out_instances: 1, validation_instances: 1}}\n")
    with pytest.raises(ConfigError, match="validation_instances 1 and held_out_instances 1 leave no generated site"):
        load_config(tmp_path / "p.yaml")
    (tmp_path / "p.yaml").write_text("sites: {world: {instances: 3}}\n"
                                     "taskset: {split: {held_out_instances: 1, validation_instances: 1}}\n")
    assert load_config(tmp_path / "p.yaml").taskset.split.validation_instances == 1


def test_dagger_is_refused_for_a_policy_that_is_not_the_scorer(tmp_path):
    (tmp_path / "p.yaml").write_text("accept: {objective: dagger}\npolicy: {kind: chat}\n")
    with pytest.raises(ConfigError, match="accept.objective dagger .* policy.kind is chat"):
        load_config(tmp_path / "p.yaml")
    (tmp_path / "p.yaml").write_text("accept: {objective: dagger}\npolicy: {kind: scorer}\n")
    assert load_config(tmp_path / "p.yaml").accept.objective == "dagger"


@pytest.mark.parametrize("shares", ["{miniwob: 1.5}", "{miniwob: 0.6, webvoyager: 0.6}", "{miniwob: -0.1}"])
def test_source_shares_that_are_not_parts_of_one_batch_are_named(tmp_path, shares):
    (tmp_path / "p.yaml").write_text(f"taskset: {{sample: {{source_shares: {shares}}}}}\n")
    with pytest.raises(ConfigError, match="source_shares.*each share must lie in \\[0, 1\\] and together at most 1"):
        load_config(tmp_path / "p.yaml")
