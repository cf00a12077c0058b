"""The context budget: requests stay within the model's context, older screenshots and then older turns
go first, the trainer rebuilds exactly what was sent, and an episode whose latest observation alone
does not fit ends as context_overflow instead of a server error."""

from __future__ import annotations

import pytest

from tests.conftest import tasks_frame
from tests.fixture_site import run_in_browser, site, url_of  # noqa: F401 (fixture)
from tests.webgym.models.conftest import policy_input
from tests.webgym.train.test_samples import NEW_TAB, TYPE, _as_sent
from webgym.config import ContextConfig, EndpointConfig, EnvConfig, LLMConfig, RolloutConfig, SamplingConfig
from webgym.env.safety import UrlPolicy
from webgym.llm.client import LLM
from webgym.llm.scripted_server import Reply, ScriptedServer
from webgym.models.checkpoint import load_processing
from webgym.models.inputs import prompt_length
from webgym.policies.base import ContextOverflow, TaskSpec
from webgym.policies.chat import ChatPolicy
from webgym.policies.context import budgeted_messages, build_messages, droppable, fit_messages
from webgym.rollout.collect import collect, episode_specs
from webgym.train.samples import training_samples


def _images(messages: list[dict]) -> list[int]:
    """Indices of the messages that carry a screenshot."""
    return [i for i, m in enumerate(messages) if isinstance(m["content"], list)
            and any(p["type"] == "image" for p in m["content"])]


def _steps_shown(messages: list[dict]) -> list[int]:
    return [int(m["content"][0]["text"].split("Step ", 1)[1].split(" ", 1)[0]) for m in messages if m["role"] == "user"]


@pytest.fixture(scope="module")
def processing(tiny_checkpoint):
    return load_processing(tiny_checkpoint)


def test_drops_screenshots_then_turns_oldest_first_to_fit(processing):
    observed, config = policy_input(history=3), ContextConfig(screenshots=3)
    count = lambda messages: prompt_length(processing, messages)  # noqa: E731
    full = build_messages(observed, config)
    assert droppable(observed, config) == 2 + 3 and _images(full) == [3, 5, 7]
    messages, dropped = fit_messages(observed, config, count, count(full))
    assert (messages, dropped) == (full, 0)
    messages, dropped = fit_messages(observed, config, count, count(full) - 1)
    assert dropped == 1 and _images(messages) == [5, 7] and _steps_shown(messages) == [1, 2, 3, 4]
    messages, dropped = fit_messages(observed, config, count, count(build_messages(observed, config, 2)) - 1)
    assert dropped == 3 and _images(messages) == [5] and _steps_shown(messages) == [2, 3, 4]
    assert "On the shop page." in messages[-1]["content"][0]["text"]  # the memory still carries forward
    alone = build_messages(observed, config, 5)
    assert _steps_shown(alone) == [4] and count(alone) < count(full)
    assert fit_messages(observed, config, count, count(alone))[1] == 5
    with pytest.raises(ContextOverflow, match=f"step 4: the latest observation alone takes {count(alone)} tokens"):
        fit_messages(observed, config, count, count(alone) - 1)


def test_the_budget_is_the_profile_setting_or_the_models_limit(processing):
    observed, config = policy_input(history=2), ContextConfig(screenshots=2)
    count = lambda messages: prompt_length(processing, messages)  # noqa: E731
    assert processing.context_length == 4096
    assert budgeted_messages(observed, config, count, processing.context_length, 16)[1] == 0
    one_image = count(build_messages(observed, config, 1))
    tight = ContextConfig(screenshots=2, max_context_tokens=one_image + 16)
    assert budgeted_messages(observed, tight, count, processing.context_length, 16)[1] == 1
    assert budgeted_messages(observed, tight, count, one_image + 15, 16)[1] > 1  # never above the model's limit


def _roll_out(lake, site, tmp_path, context, processing, replies):  # noqa: F811 (fixture)
    task = TaskSpec("t1", "Buy the red mug", url_of(site), "shop-a.test", 2)
    settings = RolloutConfig()
    with ScriptedServer() as server:
        for step, text in replies:
            server.add(Reply(text=text), when=lambda r, step=step: f"Step {step} " in r.last_user_text)
        server.add(Reply.tools(("answer", {"text": "bought"})))
        llm_config = LLMConfig(default=[EndpointConfig(base_url=server.base_url, model="policy-model")],
                               cache_dir=str(tmp_path / "cache"))

        async def scenario(browser):
            with LLM(llm_config, lake, run_id="budget-test") as llm:
                policy = ChatPolicy(llm, context, SamplingConfig(temperature=1.0, max_tokens=64), processing)
                url_policy = UrlPolicy(allowed_hosts=frozenset({f"127.0.0.1:{site.server_address[1]}"}),
                                       allow_public=False)
                await collect(episode_specs([task], 0, settings, "budget"), policy, browser, lake, settings,
                              EnvConfig(), url_policy)

        run_in_browser(scenario)
        return [r.messages for r in server.requests]


def test_the_chat_policy_keeps_requests_in_budget_and_training_rebuilds_them(lake, site, tmp_path,  # noqa: F811
                                                                             processing):
    observed = policy_input(history=1)
    budget = prompt_length(processing, build_messages(observed, ContextConfig(screenshots=3), 1)) + 64 + 40
    context = ContextConfig(screenshots=3, max_context_tokens=budget)
    received = _roll_out(lake, site, tmp_path, context, processing, [(1, TYPE), (2, NEW_TAB)])
    steps, trajectories = lake.read_table("steps"), lake.read_table("trajectories")
    assert trajectories["termination"].tolist() == ["answered"] and len(steps) == len(received) == 3
    assert steps["context_dropped"].tolist()[0] == 0 and steps["context_dropped"].iloc[-1] > 0
    accepted = steps[["trajectory_id", "t"]].assign(weight=1.0, advantage=0.0)
    samples, problems = training_samples(accepted, steps, trajectories, tasks_frame(), lake.get_blob, context)
    assert problems == []
    for t, sample in enumerate(samples):
        assert _as_sent(sample.messages) == received[t]
        assert prompt_length(processing, sample.messages) <= budget - 64


def test_an_observation_that_cannot_fit_ends_the_episode_as_context_overflow(lake, site, tmp_path,  # noqa: F811
                                                                              processing):
    context = ContextConfig(max_context_tokens=64 + 50)  # the system prompt alone is longer
    received = _roll_out(lake, site, tmp_path, context, processing, [])
    trajectory = lake.read_table("trajectories").iloc[0]
    assert received == [] and trajectory["termination"] == "context_overflow"
    assert "the latest observation alone takes" in trajectory["error"]
