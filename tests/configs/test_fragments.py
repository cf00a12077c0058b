"""configs/common.yaml and configs/scorer.yaml: the scorer's settings reach the profiles that run the scorer
(local, ci) and no other, so the chat profiles (cluster, vlm-cpu) have nothing of it to undo."""

from __future__ import annotations

import pytest

from webgym import PROJECT_ROOT
from webgym.config import Config, load_config
from webgym.config.policy import PolicyConfig


def _profile(name: str) -> Config:
    return load_config(PROJECT_ROOT / "configs" / f"{name}.yaml")


@pytest.fixture(autouse=True)
def _no_data_override(monkeypatch):
    monkeypatch.delenv("WEBGYM_DATA", raising=False)


@pytest.mark.parametrize("name", ["local", "ci"])
def test_the_scorer_profiles_take_the_scorer_fragment(name):
    config = _profile(name)
    assert config.policy.kind == "scorer" and config.env.observation == "set_of_marks"
    scorer = config.policy.scorer
    assert (scorer.temperature, scorer.done_margin, scorer.order_margin) == (0.7, 2.0, 10.0)
    assert config.policy.scorer.architecture == "relational" and config.rollout.label_evaluations
    train = config.train
    assert (train.learning_rate, train.lr_schedule, train.micro_batch_size) == (1e-3, "constant", 32)


@pytest.mark.parametrize("name", ["cluster", "vlm-cpu"])
def test_the_chat_profiles_share_the_common_fragment_but_not_the_scorer(name):
    config, local = _profile(name), _profile("local")
    assert config.policy.kind == "chat" and config.env.observation == "coordinates"
    assert config.policy.scorer == PolicyConfig().scorer  # nothing of scorer.yaml reached it
    assert not config.rollout.label_evaluations
    assert config.taskset.split.validation_fraction == local.taskset.split.validation_fraction == 0.1
    assert config.llm.prices == local.llm.prices and config.accept.replay_iterations == 4
