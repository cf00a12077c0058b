"""The train flow on the embedded default: oracle demonstrations rolled out and judged, accepted for
the SFT warm start, the scorer trained, the checkpoint recorded and loadable; a rerun trains nothing."""

from __future__ import annotations

import pytest

from tests.flows.site_lake import lake_with_site_tasks


@pytest.mark.slow
def test_train_flow_accepts_judged_steps_and_records_a_loadable_checkpoint(prefect_harness, tmp_path):
    from flows.judge import judge
    from flows.rollout import rollout
    from flows.train import train
    from webgym.policies.scorer.checkpoint import load_scorer

    lake = lake_with_site_tasks(tmp_path, ["mail-b", "shop-a"], goals=2, test_sites=["mail-b"])
    profile = tmp_path / "profile.yaml"
    profile.write_text(f"lake:\n  data_dir: {tmp_path / 'data'}\nenv:\n  observation: set_of_marks\n"
                       f"policy:\n  kind: scorer\nrollout:\n  concurrency: 2\ntaskset:\n  sample:\n    ratio: null\n")
    rollout(iteration=0, split="train", size=2, policy="oracle", config_path=str(profile))
    judge(iteration=0, config_path=str(profile))
    report = train(iteration=0, objective="sft", epochs=2, config_path=str(profile))

    accepted = lake.read_table("accepted")
    trajectories = lake.read_table("trajectories")
    assert set(accepted["objective"]) == {"sft"} and set(accepted["trajectory_id"]) == set(trajectories["trajectory_id"])
    assert report.accepted_steps == len(accepted) == trajectories["n_steps"].sum()
    (row,) = lake.read_table("checkpoints").itertuples()
    assert row.checkpoint_id == report.checkpoint_id and row.iteration == 0 and row.objective == "sft"
    assert load_scorer(row.path).checkpoint_id == report.checkpoint_id != "scorer-init-s0"
    assert report.metrics["train/samples"] > 0 and not report.problems

    again = train(iteration=0, objective="sft", epochs=2, config_path=str(profile))
    assert again.resumed and again.checkpoint_id == report.checkpoint_id
    assert lake.count("checkpoints") == 1 and lake.count("accepted") == len(accepted)


@pytest.mark.slow
def test_train_flow_trains_a_vision_language_checkpoint_on_oracle_demonstrations(prefect_harness, tmp_path):
    from flows.judge import judge
    from flows.rollout import rollout
    from flows.train import train
    from webgym.models.checkpoint import load_vlm
    from webgym.models.tiny import write_tiny_checkpoint

    lake = lake_with_site_tasks(tmp_path, ["mail-b", "shop-a"], goals=2, test_sites=["mail-b"])
    base = write_tiny_checkpoint(tmp_path / "base")
    profile = tmp_path / "profile.yaml"
    profile.write_text(f"lake:\n  data_dir: {tmp_path / 'data'}\npolicy:\n  kind: local\n  checkpoint: {base}\n"
                       f"train:\n  max_steps: 2\n  learning_rate: 1.0e-3\n  max_length: 4096\n"
                       f"rollout:\n  concurrency: 2\ntaskset:\n  sample:\n    ratio: null\n")
    rollout(iteration=0, split="train", size=1, policy="oracle", config_path=str(profile))
    judge(iteration=0, config_path=str(profile))
    report = train(iteration=0, objective="sft", config_path=str(profile))

    (row,) = lake.read_table("checkpoints").itertuples()
    assert row.checkpoint_id == report.checkpoint_id and row.base == str(base) and row.objective == "sft"
    assert row.path.startswith(str(tmp_path / "data" / "models")) and report.metrics["train/steps"] == 2
    trained, start = load_vlm(row.path, device="cpu"), load_vlm(base, device="cpu")
    before = dict(start.model.named_parameters())
    assert any(not (p == before[n]).all() for n, p in trained.model.named_parameters())  # the weights moved
