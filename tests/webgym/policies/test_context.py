"""The policy context: screenshots only for the latest turns, reasoning, memory and feedback kept as text."""

from __future__ import annotations

from schemas.steps import Action
from webgym.config import ContextConfig
from webgym.env.observe import Observation
from webgym.policies.base import PolicyInput, TaskSpec, Turn
from webgym.policies.context import build_messages, prompt_version


def _observation(i: int) -> Observation:
    return Observation(url=f"http://shop-a.test/p{i}", title="", tabs=["x"], active_tab=0,
                       screenshot=f"png{i}".encode(), elements=None)


def _turn(i: int) -> Turn:
    executed = [Action(name="click", x=1, y=2, ok=True, feedback=f"clicked {i}")]
    return Turn(_observation(i), f"<think>r{i}</think><memory>m{i}</memory><tool_call>...</tool_call>", f"m{i}", executed)


def _images(message) -> list[bytes]:
    return [part["png"] for part in message["content"] if part["type"] == "image"]


def test_latest_screenshots_only_and_full_text_history():
    observed = PolicyInput(TaskSpec("t", "Buy the red mug", "http://shop-a.test/"), _observation(3),
                           [_turn(0), _turn(1), _turn(2)], step=3, horizon=10)
    messages = build_messages(observed, ContextConfig(screenshots=2))
    assert [m["role"] for m in messages] == ["system"] + ["user", "assistant"] * 3 + ["user"]
    assert "click(x, y)" in messages[0]["content"] and "pixels" in messages[0]["content"]
    assert [_images(m) for m in messages if m["role"] == "user"] == [[], [], [b"png2"], [b"png3"]]
    assert messages[2]["content"].startswith("<think>r0</think>")
    current = messages[-1]["content"][0]["text"]
    assert "Buy the red mug" in current and "Step 4 of at most 10" in current
    assert "Your memory: m2" in current and "clicked 2" in current


def test_first_step_and_prompt_version():
    observed = PolicyInput(TaskSpec("t", "x", "http://a.test/"), _observation(0), [], step=0, horizon=5)
    messages = build_messages(observed, ContextConfig(prompt="agent_qwen", normalized_coordinates=True))
    assert len(messages) == 2 and "0-1000" in messages[0]["content"] and "<memory>" not in messages[0]["content"]
    assert "Your memory: (empty)" in messages[1]["content"][0]["text"]
    assert prompt_version(ContextConfig()) == "agent_memory@1"
