"""The policy's context: the messages a text policy sees at one step.

OpenWebRL's context management: the system prompt, then for every earlier turn its textual
observation (URL, feedback) and the model's full response, with screenshots only for the latest
`screenshots` observations; WebGym's memory prompt carries the model's own memory forward.
Messages are OpenAI-style dicts; an image part is {"type": "image", "png": bytes}, which the chat
backend turns into a data URL and the local model and the trainer read directly. Training builds
its samples with the same function, so the model is trained on exactly what it saw.
"""

from __future__ import annotations

from typing import Any

from webgym.config import ContextConfig
from webgym.env.actions import tool_docs
from webgym.env.observe import Observation
from webgym.llm.prompts import Prompt, load_prompt
from webgym.policies.base import PolicyInput

Message = dict[str, Any]


def _coordinates(normalized: bool) -> str:
    if normalized:
        return "Coordinates are x, y in 0-1000 of the screenshot's width and height."
    return "Coordinates are x, y in pixels of the screenshot, origin at the top left."


def _user(prompt: Prompt, observed: PolicyInput, observation: Observation, step: int, memory: str | None,
          feedback: str, with_image: bool) -> Message:
    text = prompt.user.substitute(
        task=observed.task.text, step=step + 1, horizon=observed.horizon, url=observation.url,
        tabs=len(observation.tabs), memory=memory or "(empty)", feedback=feedback or "(none)")
    content: list[dict[str, Any]] = [{"type": "text", "text": text}]
    if with_image:
        content.append({"type": "image", "png": observation.screenshot})
    return {"role": "user", "content": content}


def build_messages(observed: PolicyInput, config: ContextConfig) -> list[Message]:
    """System prompt, earlier turns (text, latest ones with screenshots) and the current observation."""
    prompt = load_prompt(config.prompt)
    system = prompt.system.substitute(tools=tool_docs(), coordinates=_coordinates(config.normalized_coordinates))
    messages: list[Message] = [{"role": "system", "content": system}]
    turns = observed.history
    first_with_image = len(turns) + 1 - config.screenshots
    memory, feedback = None, ""
    for i, turn in enumerate(turns):
        messages.append(_user(prompt, observed, turn.observation, i, memory, feedback, i >= first_with_image))
        messages.append({"role": "assistant", "content": turn.response or ""})
        memory, feedback = turn.memory or memory, turn.feedback
    messages.append(_user(prompt, observed, observed.observation, len(turns), memory, feedback, True))
    return messages


def prompt_version(config: ContextConfig) -> str:
    """`name@version` of the prompt, recorded on trajectories."""
    return f"{config.prompt}@{load_prompt(config.prompt).version}"
