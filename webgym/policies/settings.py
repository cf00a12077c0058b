"""Settings of the policies (the profile's `policy` block), kept apart from their implementations
so the configuration loads without importing models, browsers or the LLM client."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from webgym.policies.scorer_config import ScorerConfig


class ContextConfig(BaseModel):
    """How a text policy's context is built (the `policy.context` block of a profile)."""

    prompt: str = Field(default="agent_memory", description="Prompt file under webgym/prompts/ (agent_memory or agent_qwen).")
    screenshots: int = Field(default=1, ge=1, description="Latest screenshots kept in context (OpenWebRL keeps 1).")
    normalized_coordinates: bool = Field(default=False, description="Tell the model coordinates are 0-1000 (Qwen3-VL).")


class SamplingConfig(BaseModel):
    """Decoding settings of text policies (WebGym Table 6 defaults)."""

    temperature: float = Field(default=1.0, ge=0, description="Sampling temperature; 0 is greedy (and cacheable).")
    top_p: float = Field(default=0.99, gt=0, le=1, description="Nucleus sampling.")
    top_k: int | None = Field(default=None, ge=1, description="Top-k sampling (vLLM and local models only).")
    max_tokens: int = Field(default=1024, ge=1, description="Longest response.")
    logprobs: bool = Field(default=True, description="Ask for token logprobs (recorded on steps for RL).")


class PolicyConfig(BaseModel):
    """Which policy acts in rollouts (the `policy` block of a profile)."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["chat", "local", "scorer", "oracle", "random"] = Field(
        default="oracle", description="chat: the llm `policy` endpoints; local: `checkpoint` in-process; "
                                      "scorer: the set-of-marks scorer of the `scorer` block (learns on CPU); "
                                      "oracle: shortest paths on the synthetic sites; random: a floor.")
    checkpoint: str | None = Field(default=None, description="Checkpoint directory for `local` (Hugging Face layout).")
    device: str = Field(default="auto", description="torch device for `local`: auto, cpu, cuda:0.")
    epsilon: float = Field(default=0.0, ge=0, le=1, description="Oracle: probability of a random valid action instead.")
    seed: int = Field(default=0, description="Seed of the oracle's noise, the random policy and local sampling.")
    context: ContextConfig = Field(default_factory=ContextConfig, description="Prompt and context of text policies.")
    sampling: SamplingConfig = Field(default_factory=SamplingConfig, description="Decoding of text policies.")
    scorer: ScorerConfig = Field(default_factory=ScorerConfig, description="The set-of-marks scorer (kind scorer).")


def policy_overrides(kind: str, checkpoint: str | None = None, greedy: bool = False,
                     policy_endpoints: Sequence[BaseModel] = ()) -> dict[str, object]:
    """Dotted profile overrides that point a policy of `kind` at `checkpoint` and, for evaluation, make
    it greedy: the scorer keeps its own block, text policies decode at temperature 0. A chat policy asks
    its endpoints (`policy_endpoints`, the llm `policy` list) for the checkpoint's served name, the name
    the serve flow registers, so its trajectories record that checkpoint and no cached answer of an
    older checkpoint is reused."""
    from webgym.serve.supervisor import served_name

    dotted: dict[str, object] = {}
    if checkpoint:
        dotted["policy.scorer.checkpoint" if kind == "scorer" else "policy.checkpoint"] = checkpoint
        if kind == "chat":
            name = served_name(checkpoint)
            dotted["llm.endpoints.policy"] = [{**e.model_dump(), "model": name} for e in policy_endpoints]
    if greedy:
        dotted.update({"policy.scorer.greedy": True} if kind == "scorer" else {"policy.sampling.temperature": 0.0})
    return dotted
