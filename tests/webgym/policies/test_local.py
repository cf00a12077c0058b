"""The local checkpoint policy: generates in a worker thread, records the raw response, its parse and logprob."""

from __future__ import annotations

import asyncio

import pytest

from tests.fixture_site import site  # noqa: F401 (fixture)
from tests.webgym.models.conftest import policy_input
from tests.webgym.rollout.test_collect import _collect, _tasks
from webgym.config import ContextConfig, SamplingConfig
from webgym.models.checkpoint import CheckpointError
from webgym.policies.base import PolicyError
from webgym.policies.local import LocalPolicy, LocalPolicyConfig
from webgym.policies.parse import parse_response


@pytest.fixture(scope="module")
def policy(tiny_checkpoint):
    policy = LocalPolicy(LocalPolicyConfig(checkpoint=str(tiny_checkpoint)), ContextConfig(),
                         SamplingConfig(temperature=1.0, max_tokens=24))
    yield policy
    policy.close()


def test_act_keeps_the_event_loop_free_and_records_everything(policy, tiny_checkpoint):
    async def run():
        ticks = 0
        done = asyncio.Event()

        async def ticker():
            nonlocal ticks
            while not done.is_set():
                ticks += 1
                await asyncio.sleep(0.005)

        tick_task = asyncio.create_task(ticker())
        output = await policy.act(policy_input(history=1))
        done.set()
        await tick_task
        return output, ticks

    output, ticks = asyncio.run(run())
    assert ticks > 3  # other coroutines ran while the model generated
    assert policy.name == "local" and policy.version == str(tiny_checkpoint)
    assert policy.prompt_version == "agent_memory@1"
    parsed = parse_response(output.response)
    assert (output.actions, output.memory, output.parse_error) == (parsed.actions, parsed.memory, parsed.error)
    assert output.parse_error is not None  # random weights write garbage: recorded, not raised
    assert output.logprob is not None and output.logprob < 0
    assert 1 <= output.usage["tokens_out"] <= 24 and output.usage["tokens_in"] > 50


def test_unusable_screenshot_is_a_policy_error(policy):
    with pytest.raises(PolicyError, match="local checkpoint .*: message 1 part 1: not a readable image"):
        asyncio.run(policy.act(policy_input(screenshot=b"\x89PNG broken")))


def test_missing_checkpoint_fails_at_construction(tmp_path):
    with pytest.raises(CheckpointError, match="does not exist"):
        LocalPolicy(LocalPolicyConfig(checkpoint=str(tmp_path / "none")), ContextConfig(), SamplingConfig())


def test_the_tiny_checkpoint_runs_an_episode_in_chromium(lake, site, policy):  # noqa: F811 (fixture)
    summary = _collect(lake, site, policy, _tasks(site, 1), max_parse_errors=2)
    assert summary.episodes == 1 and summary.terminations == {"parse_error": 1}  # random weights: garbage
    trajectory = lake.read_table("trajectories").iloc[0]
    assert (trajectory["policy"], trajectory["policy_version"]) == ("local", policy.version)
    assert trajectory["prompt_version"] == "agent_memory@1"
    steps = lake.read_table("steps")
    assert len(steps) == 2 and steps["response"].notna().all() and (steps["logprob"] < 0).all()
