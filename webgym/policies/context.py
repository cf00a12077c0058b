"""The policy's context: the messages a text policy sees at one step.

OpenWebRL's context management: the system prompt, then for every earlier turn its textual
observation (URL, feedback) and the model's full response, with screenshots only for the latest
`screenshots` observations; WebGym's memory prompt carries the model's own memory forward.
Messages are OpenAI-style dicts; an image part is {"type": "image", "png": bytes}, which the chat
backend turns into a data URL and the local model and the trainer read directly. Training builds
its samples with the same function, so the model is trained on exactly what it saw.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from webgym.config import ContextConfig
from webgym.env.actions import tool_docs
from webgym.env.observe import Observation
from webgym.llm.prompts import Prompt, load_prompt
from webgym.policies.base import ContextOverflow, PolicyInput

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


def _first_with_image(observed: PolicyInput, config: ContextConfig) -> int:
    return max(0, len(observed.history) + 1 - config.screenshots)


def droppable(observed: PolicyInput, config: ContextConfig) -> int:
    """How many context items `build_messages` can leave out: earlier screenshots, then earlier turns."""
    turns = len(observed.history)
    return turns - _first_with_image(observed, config) + turns


def build_messages(observed: PolicyInput, config: ContextConfig, dropped: int = 0) -> list[Message]:
    """System prompt, earlier turns (text, latest ones with screenshots) and the current observation.

    `dropped` leaves out that many context items, oldest first: first the earlier turns' screenshots,
    then whole earlier turns. The memory and feedback still carry forward from every turn (WebGym's
    memory is the summary of what was dropped); the current observation is always there.
    """
    prompt = load_prompt(config.prompt)
    system = prompt.system.substitute(tools=tool_docs(), coordinates=_coordinates(config.normalized_coordinates))
    messages: list[Message] = [{"role": "system", "content": system}]
    turns = observed.history
    first_with_image = _first_with_image(observed, config)
    images_dropped = min(dropped, len(turns) - first_with_image)
    first_with_image += images_dropped
    first_turn = dropped - images_dropped
    memory, feedback = None, ""
    for i, turn in enumerate(turns):
        if i >= first_turn:
            messages.append(_user(prompt, observed, turn.observation, i, memory, feedback, i >= first_with_image))
            messages.append({"role": "assistant", "content": turn.response or ""})
        memory, feedback = turn.memory or memory, turn.feedback
    messages.append(_user(prompt, observed, observed.observation, len(turns), memory, feedback, True))
    return messages


def fit_messages(observed: PolicyInput, config: ContextConfig, count_tokens: Callable[[list[Message]], int],
                 budget: int) -> tuple[list[Message], int]:
    """The fullest context whose prompt takes at most `budget` tokens, and how many items it dropped.

    Dropping is oldest first (build_messages); the fewest drops that fit are found by bisection, as
    the prompt only shrinks with every drop. Raises ContextOverflow when even the current
    observation alone (every droppable item dropped) is too long.
    """
    most = droppable(observed, config)
    low, high = 0, most  # invariant: `high` drops fit, or nothing fits
    if count_tokens(messages := build_messages(observed, config)) <= budget:
        return messages, 0
    shortest = count_tokens(build_messages(observed, config, most))
    if shortest > budget:
        raise ContextOverflow(f"step {observed.step + 1}: the latest observation alone takes {shortest} tokens, "
                              f"over the context budget of {budget} (policy.context.max_context_tokens minus "
                              f"max_tokens)")
    while high - low > 1:
        middle = (low + high) // 2
        if count_tokens(build_messages(observed, config, middle)) <= budget:
            high = middle
        else:
            low = middle
    return build_messages(observed, config, high), high


def budgeted_messages(observed: PolicyInput, config: ContextConfig, count_tokens: Callable[[list[Message]], int],
                      model_limit: int, max_tokens: int) -> tuple[list[Message], int]:
    """`fit_messages` within the request budget: policy.context.max_context_tokens (never above the
    model's limit) less the room the response may take."""
    limit = min(config.max_context_tokens or model_limit, model_limit)
    return fit_messages(observed, config, count_tokens, limit - max_tokens)


def prompt_version(config: ContextConfig) -> str:
    """`name@version` of the prompt, recorded on trajectories."""
    return f"{config.prompt}@{load_prompt(config.prompt).version}"
