"""Training samples rebuilt from the lake are exactly what the policy saw during a real rollout.

The loss mask over a sample's messages (assistant response only) is tested once, on messages from
the same context builder, in tests/models/test_inputs.py.
"""

from __future__ import annotations

import pandas as pd
import pytest

from schemas.steps import Action, Element, Step
from schemas.trajectories import Trajectory
from tests.conftest import NOW, rows, tasks_frame
from tests.fixture_site import run_in_browser, site, url_of  # noqa: F401 (fixture)
from tests.webgym.models.conftest import png
from webgym.config import ContextConfig, EndpointConfig, EnvConfig, LLMConfig, RolloutConfig, SamplingConfig
from webgym.env.safety import UrlPolicy
from webgym.llm.client import LLM
from webgym.llm.images import image_part
from webgym.llm.scripted_server import Reply, ScriptedServer
from webgym.policies.base import TaskSpec
from webgym.policies.chat import ChatPolicy
from webgym.policies.parse import parse_response
from webgym.rollout.collect import collect, episode_specs
from webgym.train.samples import action_response, training_samples

TYPE = ('<think>the name first</think><memory>on the form</memory>'
        '<tool_call>{"name": "type", "arguments": {"text": "Ann", "x": 60, "y": 145}}</tool_call>')
NEW_TAB = '<memory>name typed</memory><tool_call>{"name": "click", "arguments": {"x": 80, "y": 245}}</tool_call>'
UNPARSEABLE = "I am not sure what to do."


def _as_sent(messages: list[dict]) -> list[dict]:
    """Messages as the chat policy sends them: screenshots as data-URL parts."""
    return [{**m, "content": [image_part(p["png"]) if p["type"] == "image" else p for p in m["content"]]}
            if isinstance(m["content"], list) else m for m in messages]


def test_rebuilt_messages_equal_what_the_endpoint_received_in_a_real_rollout(lake, site, tmp_path):
    context = ContextConfig(screenshots=2)  # the previous screenshot travels too
    task = TaskSpec("t1", "Buy the red mug", url_of(site), "shop-a.test", 2)
    settings = RolloutConfig()
    with ScriptedServer() as server:
        for step, text in [(1, TYPE), (2, NEW_TAB), (3, UNPARSEABLE)]:
            server.add(Reply(text=text), when=lambda r, step=step: f"Step {step} " in r.last_user_text)
        server.add(Reply.tools(("answer", {"text": "bought"})))
        llm_config = LLMConfig(default=[EndpointConfig(base_url=server.base_url, model="policy-model")],
                               cache_dir=str(tmp_path / "cache"))

        async def scenario(browser):
            with LLM(llm_config, lake, run_id="samples-test") as llm:
                policy = ChatPolicy(llm, context, SamplingConfig(temperature=1.0))
                url_policy = UrlPolicy(allowed_hosts=frozenset({f"127.0.0.1:{site.server_address[1]}"}),
                                       allow_public=False)
                await collect(episode_specs([task], 0, settings, "samples"), policy, browser, lake, settings,
                              EnvConfig(), url_policy)

        run_in_browser(scenario)
        received = [r.messages for r in server.requests]
    steps, trajectories = lake.read_table("steps"), lake.read_table("trajectories")
    assert trajectories["termination"].tolist() == ["answered"] and len(steps) == 4
    accepted = steps[["trajectory_id", "t"]].assign(weight=1.0, advantage=0.5).iloc[::-1]
    samples, problems = training_samples(accepted, steps, trajectories, tasks_frame(), lake.get_blob, context)
    assert problems == []
    assert [s.sample_id.rsplit(":", 1)[1] for s in samples] == ["3", "2", "1", "0"]  # the accepted rows' order
    samples = samples[::-1]
    for t, sample in enumerate(samples):
        assert _as_sent(sample.messages) == received[t]  # system, earlier turns, screenshots: every byte
        assert sample.response == steps.loc[steps["t"] == t, "response"].item()
        assert (sample.weight, sample.advantage) == (1.0, 0.5)
        assert sample.old_logprob == pytest.approx(steps.loc[steps["t"] == t, "logprob"].item())
    assert "(tabs: 2)" in samples[2].messages[-1]["content"][0]["text"]  # the link opened a second tab
    assert "could not be parsed" in samples[3].messages[-1]["content"][0]["text"]  # feedback of the bad step
    assert sum(p["type"] == "image" for m in samples[3].messages if isinstance(m["content"], list)
               for p in m["content"]) == 2


def _oracle_world(lake) -> tuple[pd.DataFrame, pd.DataFrame]:
    shots = [lake.put_blob(png(color)) for color in ("red", "green")]
    trajectories = rows([Trajectory(trajectory_id="o1", task_id="t1", iteration=0, policy="oracle",
                                    policy_version="oracle-eps0", horizon=10, n_steps=2, termination="answered",
                                    started_at=NOW, ended_at=NOW)])
    actions = [[Action(name="click", x=40.0, y=35.0, ok=True, feedback="Succeed: clicked 'Next page'.")],
               [Action(name="answer", text="second page", ok=True, feedback="Answered.")]]
    steps = rows([Step(trajectory_id="o1", t=t, screenshot_sha256=shots[t], url=f"http://shop-a.test/{t}",
                       title="Shop", response=f"oracle: step {t}", actions=actions[t], feedback=actions[t][0].feedback,
                       logprob=-1.0) for t in range(2)])
    return trajectories, steps


def test_oracle_steps_are_learned_as_the_tool_calls_they_made(lake):
    trajectories, steps = _oracle_world(lake)
    accepted = pd.DataFrame({"trajectory_id": ["o1"], "t": [1], "weight": [1.0], "advantage": [None]})
    (sample,), problems = training_samples(accepted, steps, trajectories, tasks_frame(), lake.get_blob,
                                           ContextConfig())
    assert problems == []
    assert sample.response == '<tool_call>{"name": "answer", "arguments": {"text": "second page"}}</tool_call>'
    assert sample.messages[2] == {"role": "assistant", "content": action_response([Action(name="click", x=40.0,
                                                                                          y=35.0)])}
    assert "Succeed: clicked 'Next page'." in sample.messages[-1]["content"][0]["text"]
    assert sample.old_logprob is None and sample.advantage == 0.0  # the oracle's logprob is not of this text
    assert [a.model_dump(exclude_none=True) for a in parse_response(sample.response).actions] == [
        {"name": "answer", "text": "second page"}]


def test_on_a_set_of_marks_step_a_call_at_a_point_is_learned_as_the_mark_of_the_element_it_falls_in():
    marks = [Element(mark=1, tag="nav", text="Menu", x=0.0, y=0.0, width=400.0, height=60.0),
             Element(mark=2, tag="button", text="Cafés", x=20.0, y=10.0, width=80.0, height=40.0)]
    calls = [Action(name="click", x=40.0, y=35.0), Action(name="type", x=300.0, y=30.0, text="Ann"),
             Action(name="click", x=600.0, y=300.0), Action(name="drag", x=40.0, y=35.0, to_x=90.0, to_y=90.0),
             Action(name="select_option", x=40.0, y=35.0, text="Oat")]
    assert action_response(calls, marks).splitlines() == [
        '<tool_call>{"name": "click", "arguments": {"mark": 2}}</tool_call>',  # the innermost element
        '<tool_call>{"name": "type", "arguments": {"mark": 1, "text": "Ann"}}</tool_call>',
        '<tool_call>{"name": "click", "arguments": {"x": 600.0, "y": 300.0}}</tool_call>',  # on no element
        '<tool_call>{"name": "drag", "arguments": {"mark": 2, "to_x": 90.0, "to_y": 90.0}}</tool_call>',
        '<tool_call>{"name": "select_option", "arguments": {"mark": 2, "text": "Oat"}}</tool_call>']
    assert action_response(calls[:1]) == '<tool_call>{"name": "click", "arguments": {"x": 40.0, "y": 35.0}}</tool_call>'


def test_steps_that_cannot_be_rebuilt_are_reported_and_the_rest_go_on(lake):
    trajectories, steps = _oracle_world(lake)
    chat = trajectories.assign(trajectory_id="c1", policy="chat", prompt_version="agent_memory@0")
    gap = trajectories.assign(trajectory_id="g1")
    lost = trajectories.assign(trajectory_id="b1")
    steps = pd.concat([steps, steps.assign(trajectory_id="c1"), steps.assign(trajectory_id="g1").iloc[[1]],
                       steps.assign(trajectory_id="b1", screenshot_sha256="0" * 64)], ignore_index=True)
    trajectories = pd.concat([trajectories, chat, gap, lost], ignore_index=True)
    ids = ["o1", "c1", "g1", "b1", "none"]
    accepted = pd.DataFrame({"trajectory_id": ids, "t": [1] * 5, "weight": [1.0] * 5, "advantage": [None] * 5})
    samples, problems = training_samples(accepted, steps, trajectories, tasks_frame(), lake.get_blob,
                                         ContextConfig())
    assert [s.sample_id for s in samples] == ["o1:1"]
    assert len(problems) == 4
    assert any("c1" in p and "agent_memory@0" in p and "policy.context" in p for p in problems)
    assert any("g1" in p and "[1]" in p for p in problems)
    assert any("b1" in p and "no blob" in p for p in problems)
    assert any("none" in p and "no steps" in p for p in problems)
    with pytest.raises(ValueError, match="several rows for step o1:1"):
        training_samples(pd.concat([accepted, accepted]), steps, trajectories, tasks_frame(), lake.get_blob,
                         ContextConfig())
