"""A policy that acts at random: a floor for success rates and a load generator for benchmarks."""

from __future__ import annotations

import random

from schemas.steps import Action
from webgym.policies.base import PolicyInput, PolicyOutput


class RandomPolicy:
    """Clicks a random interactive element (or point), sometimes scrolls, answers near the horizon."""

    name = "random"
    prompt_version = None
    privileged = False

    def __init__(self, seed: int = 0, answer_probability: float = 0.1) -> None:
        self.version = f"random-{seed}"
        self.answer_probability = answer_probability
        self._random = random.Random(seed)

    async def act(self, observed: PolicyInput) -> PolicyOutput:
        rng = self._random
        if observed.step >= observed.horizon - 1 or rng.random() < self.answer_probability:
            return PolicyOutput([Action(name="answer", text="I could not find it.")])
        elements = observed.observation.elements or []
        if elements and rng.random() < 0.8:
            return PolicyOutput([Action(name="click", mark=rng.choice(elements).mark)])
        if rng.random() < 0.5:
            return PolicyOutput([Action(name="scroll", direction=rng.choice(["up", "down"]))])
        return PolicyOutput([Action(name="click", x=rng.uniform(0, 1280), y=rng.uniform(0, 720))])
