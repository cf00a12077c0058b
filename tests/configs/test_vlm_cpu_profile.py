"""configs/vlm-cpu.yaml: every key is one the config classes know, the chat policy's endpoint is the server the
serve flow starts, and a missing base model stops the nightly with the command that writes it."""

from __future__ import annotations

import pytest
import torch

from webgym import PROJECT_ROOT
from webgym.config import Config, ConfigError, load_config
from webgym.train.fit import require_base_model, require_training_device

PROFILE = PROJECT_ROOT / "configs" / "vlm-cpu.yaml"


@pytest.fixture
def vlm_cpu(monkeypatch) -> Config:
    monkeypatch.delenv("WEBGYM_DATA", raising=False)
    return load_config(PROFILE)


def test_vlm_cpu_profile_runs_the_chat_policy_against_the_server_the_serve_flow_starts(vlm_cpu):
    assert vlm_cpu.profile == "vlm-cpu" and vlm_cpu.policy.kind == "chat"
    assert "webgym.cli serve" in vlm_cpu.serve.command
    [endpoint] = vlm_cpu.llm.endpoints["policy"]
    assert endpoint.base_url == f"http://127.0.0.1:{vlm_cpu.serve.port}/v1"
    assert vlm_cpu.env.observation == "coordinates"  # the chat policy answers in pixels
    assert not vlm_cpu.nightly.evaluate_untrained  # nothing is served before the warm start


def test_vlm_cpu_profile_warm_starts_then_trains_grpo_on_groups(vlm_cpu):
    assert vlm_cpu.nightly.warm_start_tasks > 0 and vlm_cpu.nightly.iterations >= 2
    assert vlm_cpu.accept.objective == "grpo"
    assert vlm_cpu.rollout.group_size >= vlm_cpu.accept.grpo_min_group_size
    assert vlm_cpu.train.device == "cpu" and vlm_cpu.train.zero_stage is None
    # GRPO at the warm start's SFT step collapses the small model's token ratios (benchmarks/vlm_path.py)
    assert vlm_cpu.nightly.warm_start_learning_rate >= 10 * vlm_cpu.train.learning_rate
    assert vlm_cpu.lake.data_dir != load_config(PROJECT_ROOT / "configs" / "local.yaml").lake.data_dir


def test_a_missing_base_model_is_named_with_the_command_that_writes_it(vlm_cpu, tmp_path):
    missing = tmp_path / "small-base"
    config = vlm_cpu.model_copy(update={"policy": vlm_cpu.policy.model_copy(update={"checkpoint": str(missing)})})
    with pytest.raises(ConfigError, match=f"policy.checkpoint {missing} .*`webgym models small {missing}`"):
        require_base_model(config)
    missing.mkdir()
    require_base_model(config)  # present: nothing to say


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the behaviour of a machine without a GPU")
def test_a_training_device_this_machine_lacks_stops_the_nightly_before_any_work(vlm_cpu):
    config = vlm_cpu.model_copy(update={"train": vlm_cpu.train.model_copy(update={"device": "cuda"})})
    with pytest.raises(ConfigError, match="train.device is cuda .* set train.device: auto or cpu"):
        require_training_device(config)
    require_training_device(vlm_cpu)  # cpu: nothing to say
