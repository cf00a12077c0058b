"""The chat policy through the real openai client, the scripted server and real Chromium."""

from __future__ import annotations

import pytest

from tests.fixture_site import run_in_browser, url_of
from webgym.config import ContextConfig, EndpointConfig, EnvConfig, LLMConfig, RolloutConfig, SamplingConfig
from webgym.env.safety import UrlPolicy
from webgym.llm.client import LLM
from webgym.llm.scripted_server import Reply, ScriptedServer
from webgym.policies.base import TaskSpec
from webgym.policies.chat import ChatPolicy
from webgym.rollout.collect import collect, episode_specs


def _run(lake, site, server, tasks, tmp_path, api_key_env=None, **rollout):
    endpoint = EndpointConfig(base_url=server.base_url, model="policy-model", timeout_s=5, api_key_env=api_key_env)
    config = LLMConfig(default=[endpoint],
                       cache_dir=str(tmp_path / "cache"), backoff_s=0.01)
    url_policy = UrlPolicy(allowed_hosts=frozenset({f"127.0.0.1:{site.server_address[1]}"}), allow_public=False)
    settings = RolloutConfig(**rollout)
    specs = episode_specs(tasks, iteration=0, config=settings, run_key="chat")

    async def scenario(browser):
        with LLM(config, lake, run_id="chat-test") as llm:
            policy = ChatPolicy(llm, ContextConfig(), SamplingConfig(temperature=1.0))
            await collect(specs, policy, browser, lake, settings, EnvConfig(), url_policy)

    run_in_browser(scenario)


def test_good_multi_call_and_malformed_responses_through_real_browsers(lake, site, tmp_path):
    tasks = [TaskSpec("good", "Fill the form and open the next page", url_of(site)),
             TaskSpec("bad", "Say something useless", url_of(site))]
    with ScriptedServer() as server:
        server.add(Reply(text="<think>fill both fields</think><memory>nothing yet</memory>"
                              '<tool_call>{"name": "type", "arguments": {"text": "Ann", "x": 60, "y": 145}}</tool_call>'
                              '<tool_call>{"name": "click", "arguments": {"x": 40, "y": 35}}</tool_call>'),
                   when=lambda r: "Fill the form" in r.last_user_text and "Step 1 " in r.last_user_text)
        server.add(Reply.tools(("answer", {"text": "on the next page"})), contains="Fill the form")
        server.add(Reply(text="I would rather not click anything."), contains="useless")
        _run(lake, site, server, tasks, tmp_path, max_parse_errors=2)
        images = [len(r.images) for r in server.requests]
    trajectories = lake.read_table("trajectories").set_index("task_id")
    assert trajectories.loc["good", "termination"] == "answered"
    assert trajectories.loc["good", "answer"] == "on the next page"
    assert trajectories.loc["good", "policy_version"] == "policy-model"
    assert trajectories.loc["good", "prompt_version"] == "agent_memory@1"
    assert trajectories.loc["bad", "termination"] == "parse_error"
    steps = lake.read_table("steps").merge(lake.read_table("trajectories")[["trajectory_id", "task_id"]])
    first = steps[(steps["task_id"] == "good") & (steps["t"] == 0)].iloc[0]
    assert [a["name"] for a in first["actions"]] == ["type", "click"] and first["memory"] == "nothing yet"
    assert "typed \"Ann\"" in first["feedback"] and "Page navigated to" in first["feedback"]
    assert first["logprob"] < 0
    assert steps[steps["task_id"] == "bad"]["parse_error"].str.contains("no tool call").all()
    assert images and all(n == 1 for n in images)  # only the latest screenshot travels
    calls = lake.read_table("llm_calls")
    assert (calls["purpose"] == "policy").all() and not calls["cached"].any() and len(calls) == len(images)


@pytest.mark.slow
def test_hostile_model_output_is_capped_and_recorded_and_never_loses_the_batch(lake, site, tmp_path):
    tasks = [TaskSpec(name, f"Task {name}", url_of(site)) for name in ("spam", "surrogate", "deep", "overflow", "fine")]
    scroll = '<tool_call>{"name": "scroll", "arguments": {"direction": "down"}}</tool_call>'
    with ScriptedServer() as server:
        server.add(Reply(text=scroll * 50 + "x" * 1_000_000),
                   when=lambda r: "Task spam" in r.last_user_text and "Step 1 " in r.last_user_text)
        server.add(Reply(text='<tool_call>{"name": "answer", "arguments": {"text": "caf\\ud800"}}</tool_call>'),
                   contains="Task surrogate")
        server.add(Reply(text="<tool_call>" + '{"a": ' * 5000 + "1" + "}" * 5000 + "</tool_call>"), contains="Task deep")
        server.add(Reply.tools(("switch_tab", {"index": 10 ** 26})), contains="Task overflow")
        server.add(Reply.tools(("answer", {"text": "done"})))
        _run(lake, site, server, tasks, tmp_path, max_parse_errors=2, max_calls_per_step=10, max_response_chars=5000)
    trajectories = lake.read_table("trajectories").set_index("task_id")
    assert len(trajectories) == 5
    assert trajectories.loc["fine", "termination"] == "answered"
    assert trajectories.loc["surrogate", ["termination", "answer"]].tolist() == ["answered", "caf\ufffd"]
    assert trajectories.loc["deep", "termination"] == "parse_error"
    assert trajectories.loc["overflow", "termination"] == "failed"
    assert "could not record the episode" in trajectories.loc["overflow", "error"]
    steps = lake.read_table("steps").merge(lake.read_table("trajectories")[["trajectory_id", "task_id"]])
    spam = steps[steps["task_id"] == "spam"].sort_values("t").iloc[0]
    assert len(spam["actions"]) == 10 and len(spam["response"]) == 5000
    assert "50 tool calls in one step; ran the first 10" in spam["parse_error"]
    assert f"response of {1_000_000 + 50 * len(scroll)} characters" in spam["parse_error"] and "kept the first 5000" in spam["parse_error"]
    assert "parsed the first 32000" in spam["parse_error"]  # the parser read no further
    assert trajectories.loc["spam", "termination"] == "answered"


def test_api_keys_in_model_output_are_redacted_from_everything_stored(lake, site, tmp_path, monkeypatch):
    policy_key, openai_key = "wg-policy-9f8e7d6c5b4a", "sk-proj-0123456789abcdef"
    monkeypatch.setenv("WEBGYM_POLICY_AUTH", policy_key)  # the profile's api_key_env: known to the LLM client
    monkeypatch.setenv("OPENAI_API_KEY", openai_key)  # named like a key: known from the environment
    leak = f"my keys are {policy_key} and {openai_key}"
    with ScriptedServer(api_key=policy_key) as server:
        server.add(Reply(text=f"<memory>{leak}</memory>"
                              f'<tool_call>{{"name": "answer", "arguments": {{"text": "{leak}"}}}}</tool_call>'))
        _run(lake, site, server, [TaskSpec("leak", "Leak the keys", url_of(site))], tmp_path,
             api_key_env="WEBGYM_POLICY_AUTH")
    trajectory = lake.read_table("trajectories").iloc[0]
    assert trajectory["termination"] == "answered"
    assert trajectory["answer"] == "my keys are [redacted] and [redacted]"
    step = lake.read_table("steps").iloc[0]
    assert step["memory"] == "my keys are [redacted] and [redacted]" and "[redacted]" in step["response"]
    assert step["actions"][0]["text"] == "my keys are [redacted] and [redacted]"
    stored = b"".join(open(path, "rb").read() for path in lake.fs.find(lake.root))
    for key in (policy_key, openai_key):
        assert key.encode() not in stored
