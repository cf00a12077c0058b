"""The evaluate flow: held-out episodes rolled out greedily, judged by the exact verifier, one evals
row each; a checkpoint directory selects the policy; a rerun adds nothing."""

from __future__ import annotations

import pytest

from tests.flows.site_lake import lake_with_site_tasks


def _profile(tmp_path, policy: str) -> str:
    path = tmp_path / "profile.yaml"
    path.write_text(f"lake:\n  data_dir: {tmp_path / 'data'}\nenv:\n  observation: set_of_marks\n"
                    f"policy:\n  kind: {policy}\nrollout:\n  concurrency: 2\n")
    return str(path)


@pytest.mark.slow
def test_evaluate_records_one_row_per_held_out_episode_with_its_verdict(prefect_harness, tmp_path):
    from flows.evaluate import evaluate

    lake = lake_with_site_tasks(tmp_path, ["mail-b", "shop-a"], goals=2, test_sites=["mail-b"])
    report = evaluate(config_path=_profile(tmp_path, "oracle"))
    evals = lake.read_table("evals")
    assert len(evals) == report.episodes == 2  # only the test split's two mail-b tasks
    assert set(evals["split"]) == {"test"} and set(evals["domain"]) == {"email"}
    assert evals["success"].all() and report.success_rate == 1.0  # the oracle solves what it is given
    assert {r["difficulty_band"] for r in report.by_band} == set(evals["difficulty_band"]) | {"all"}
    evaluate(config_path=_profile(tmp_path, "oracle"))
    assert lake.count("evals") == 2 and lake.count("trajectories") == 2  # a rerun redoes nothing


@pytest.mark.slow
def test_evaluate_a_scorer_checkpoint_records_its_version(prefect_harness, tmp_path):
    from flows.evaluate import evaluate
    from webgym.policies.scorer.checkpoint import init_scorer, save_scorer
    from webgym.config import ScorerConfig

    lake = lake_with_site_tasks(tmp_path, ["mail-b", "shop-a"], goals=2, test_sites=["mail-b"])
    scorer = init_scorer(ScorerConfig(seed=3))
    path = save_scorer(scorer, tmp_path / "ckpt")
    report = evaluate(checkpoint=str(path), iteration=4, config_path=_profile(tmp_path, "scorer"))
    evals = lake.read_table("evals")
    assert report.policy_versions == [scorer.checkpoint_id] and set(evals["checkpoint"]) == {scorer.checkpoint_id}
    assert set(evals["iteration"]) == {4} and len(evals) == 2
    trajectories = lake.read_table("trajectories")
    assert set(trajectories["policy"]) == {"scorer"}

    margin = tmp_path / "margin.yaml"
    margin.write_text(f"extends: {_profile(tmp_path, 'scorer')}\npolicy:\n  scorer:\n    done_margin: 2.0\n")
    held_back = evaluate(checkpoint=str(path), iteration=4, config_path=str(margin))
    assert held_back.evaluation.startswith("scorer-done2-") and held_back.evaluation != report.evaluation
    assert held_back.episodes == 2 and lake.count("trajectories") == 4  # its own episodes, not argmax's reused
    evaluate(checkpoint=str(path), iteration=4, config_path=str(margin))
    assert lake.count("evals") == 4 and lake.count("trajectories") == 4


@pytest.mark.slow
def test_a_validation_run_is_its_own_evaluation_on_validation_tasks_only(prefect_harness, tmp_path):
    from flows.evaluate import evaluate

    lake = lake_with_site_tasks(tmp_path, ["mail-b", "shop-a", "fly-a"], goals=2, test_sites=["mail-b"],
                                validation_sites=["fly-a"])
    tested = evaluate(config_path=_profile(tmp_path, "oracle"))
    validated = evaluate(split="validation", config_path=_profile(tmp_path, "oracle"))
    evals = lake.read_table("evals").merge(lake.read_table("tasks")[["task_id", "website"]], on="task_id")
    assert validated.evaluation != tested.evaluation and validated.episodes == tested.episodes == 2
    assert evals.groupby("split")["website"].agg(set).to_dict() == {"test": {"mail-b.test"},
                                                                    "validation": {"fly-a.test"}}
    purposes = lake.read_table("trajectories").merge(evals, on="trajectory_id").groupby("split")["purpose"].agg(set)
    assert purposes.to_dict() == {"test": {"evaluation"}, "validation": {"validation"}}
