"""Helpers for model tests: screenshots and the policy context the agent really sends."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from schemas.steps import Action
from webgym.config import ContextConfig
from webgym.env.observe import Observation
from webgym.models.checkpoint import VLM, load_vlm
from webgym.policies.base import PolicyInput, TaskSpec, Turn
from webgym.policies.context import build_messages

CLICK = '<memory>On the shop page.</memory><tool_call>{"name": "click", "arguments": {"x": 640, "y": 80}}</tool_call>'


def png(color: str = "white", size: tuple[int, int] = (1280, 720)) -> bytes:
    """A plain PNG the size of a screenshot."""
    buffer = io.BytesIO()
    Image.new("RGB", size, color).save(buffer, format="PNG")
    return buffer.getvalue()


def observation(i: int, screenshot: bytes | None = None) -> Observation:
    return Observation(url=f"http://shop-a.test/p{i}", title="Shop", tabs=["t"], active_tab=0,
                       screenshot=screenshot if screenshot is not None else png(["red", "green", "blue"][i % 3]),
                       elements=None)


def policy_input(history: int = 0, screenshot: bytes | None = None) -> PolicyInput:
    """Step `history` of an episode whose earlier steps each answered CLICK."""
    turns = [Turn(observation(i), CLICK, "On the shop page.",
                  [Action(name="click", x=640, y=80, ok=True, feedback="clicked 'Search'")]) for i in range(history)]
    return PolicyInput(TaskSpec("t1", "Buy the red mug", "http://shop-a.test/"), observation(history, screenshot),
                       turns, step=history, horizon=10)


def messages(history: int = 0, screenshots: int = 1) -> list[dict]:
    """The messages the policy sees at that step (system, earlier turns, current observation)."""
    return build_messages(policy_input(history), ContextConfig(screenshots=screenshots))


@pytest.fixture(scope="session")
def tiny(tiny_checkpoint) -> VLM:
    """The tiny checkpoint, loaded once (tests must not train it in place)."""
    return load_vlm(tiny_checkpoint)
