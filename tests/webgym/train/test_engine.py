"""train.device and train.precision: the values a profile may hold, and the device check that runs before any
training work (this machine has no GPU: auto is the CPU, cuda is refused with what to set)."""

from __future__ import annotations

import pytest
import torch
from pydantic import ValidationError

from webgym.config import ConfigError, TrainConfig
from webgym.train.engine import TorchEngine, training_device


@pytest.mark.parametrize("device", ["auto", "cpu", "cuda", "cuda:1"])
def test_known_devices_parse(device):
    assert TrainConfig(device=device).device == device


@pytest.mark.parametrize("device", ["gpu", "cuda:x", "CUDA", "mps"])
def test_an_unknown_device_is_refused_with_the_values_that_work(device):
    with pytest.raises(ValidationError, match=f"train.device '{device}' .* set auto, cpu, cuda or cuda:N"):
        TrainConfig(device=device)


def test_precision_is_bf16_or_fp32_and_defaults_to_fp32():
    assert TrainConfig().precision == "fp32" and TrainConfig(precision="bf16").precision == "bf16"
    with pytest.raises(ValidationError, match="precision"):
        TrainConfig(precision="fp16")
    with pytest.raises(ValidationError, match="bf16"):
        TrainConfig(bf16=True)  # the old switch is named, not ignored: precision replaced it


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the behaviour of a machine without a GPU")
def test_auto_is_the_cpu_here_and_cuda_is_a_config_error_saying_what_to_set():
    assert training_device(TrainConfig()) == torch.device("cpu")
    assert training_device(TrainConfig(device="cpu", precision="bf16")) == torch.device("cpu")
    for device in ("cuda", "cuda:0"):
        with pytest.raises(ConfigError, match=f"train.device is {device} but torch .* set train.device: auto or cpu"):
            training_device(TrainConfig(device=device))


def test_bf16_autocasts_on_the_cpu_and_fp32_does_not():
    model = torch.nn.Linear(4, 4)
    x = torch.ones(1, 4)
    for precision, dtype in (("bf16", torch.bfloat16), ("fp32", torch.float32)):
        engine = TorchEngine(model, TrainConfig(precision=precision), 1, torch.device("cpu"))
        with engine.autocast():
            assert model(x).dtype == dtype
