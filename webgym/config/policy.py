"""The `policy` block: which policy acts in rollouts, its prompt and decoding, and the scorer's model."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from webgym.config.base import EmbeddingPrecision, ProjectPath, Section

PolicyKind = Literal["chat", "local", "scorer", "oracle", "random"]


class ContextConfig(Section):
    """How a text policy's context is built (the `policy.context` block of a profile)."""

    prompt: str = Field(default="agent_memory", description="Prompt file under webgym/prompts/ (agent_memory or agent_qwen).")
    screenshots: int = Field(default=1, ge=1, description="Latest screenshots kept in context (OpenWebRL keeps 1).")
    normalized_coordinates: bool = Field(default=False, description="Tell the model coordinates are 0-1000 (Qwen3-VL).")
    max_context_tokens: int | None = Field(
        default=None, ge=1, description="Most tokens one request may hold, prompt and max_tokens together; older "
                                        "screenshots, then older turns are dropped to fit (the memory carries them). "
                                        "null: the model's own limit (its config.json). The chat policy counts "
                                        "with policy.checkpoint's tokenizer; without one it sends the full context.")


class SamplingConfig(Section):
    """Decoding settings of text policies (WebGym Table 6 defaults)."""

    temperature: float = Field(default=1.0, ge=0, description="Sampling temperature; 0 is greedy (and cacheable).")
    top_p: float = Field(default=0.99, gt=0, le=1, description="Nucleus sampling.")
    top_k: int | None = Field(default=None, ge=1, description="Top-k sampling (vLLM and local models only).")
    max_tokens: int = Field(default=1024, ge=1, description="Longest response.")
    logprobs: bool = Field(default=True, description="Ask for token logprobs (recorded on steps for RL).")
    token_ids: bool = Field(
        default=True, description="Chat: with logprobs, ask for the sampled token ids too (vLLM's and webgym "
                                  "serve's return_tokens_as_token_ids), so the trainer learns those exact tokens; "
                                  "turn off for APIs that reject unknown fields (OpenAI's).")


class ScorerConfig(Section):
    """The small policy that learns on a laptop: an MLP over MiniLM embeddings that scores every
    set-of-marks action candidate of a page (webgym/policies/scorer/). It trains with the profile's
    `train` block, like every policy that learns."""

    checkpoint: str | None = Field(
        default=None, description="Scorer checkpoint directory to load (config.json + model.safetensors); null: "
                                  "a fresh, untrained scorer initialised from `seed`.")
    seed: int = Field(default=0, description="Seed of the initial weights and of the rollout sampler.")
    hidden: int = Field(default=256, ge=8, description="Width of the MLP's hidden layers.")
    dropout: float = Field(default=0.1, ge=0, lt=1, description="Dropout in training (off when acting).")
    embedding_dropout: float = Field(
        default=0.0, ge=0, lt=1, description="A fresh scorer's dropout on its MiniLM inputs only (texts and their "
                                             "products; not the relational scalars), in training; a checkpoint keeps "
                                             "its own. It leans the network on how candidates relate to the task, "
                                             "which carries to unseen sites, over the texts of the sites it trained on.")
    history: int = Field(default=3, ge=0, description="Earlier actions the scorer reads (their mean embedding).")
    architecture: Literal["mlp", "relational"] = Field(
        default="mlp", description="The network of a fresh scorer (a checkpoint keeps its own): mlp reads the task as "
                                   "one vector; relational also reads how each candidate relates to the task's "
                                   "clauses (word-level MaxSim over MiniLM vectors: which clause it answers, whether "
                                   "that clause was acted on, which answer line's label fits the question).")
    temperature: float = Field(
        default=1.0, gt=0, description="Softmax temperature of the candidates' scores when sampling (rollouts).")
    greedy: bool = Field(
        default=False, description="Take the best-scored candidate instead of sampling (set it for evaluation).")
    done_margin: float = Field(
        default=0.0, ge=0, description="Greedy decisions (evaluation, validation) answer \"Done.\" only when it scores "
                                       "this much (log-probability) above the best other candidate; sampled rollouts "
                                       "are unchanged. Evaluations with another margin are other evaluations.")
    order_margin: float = Field(
        default=0.0, ge=0, description="Greedy decisions lower by this much (log-probability) an element whose first "
                                        "served clause of the task comes after clauses not yet acted on (by the "
                                        "episode's choices; by the page's title and path only when they name all of "
                                        "it) that have an element of their own on the page, not one already open or "
                                        "expanded (relations.out_of_order: \"Expand the section below and click "
                                        "submit\" expands first); an element of the task's last clause once per "
                                        "such clause, and \"Done.\" once per such clause left. Where the task "
                                        "names an element in quotes (the link \"sapien\"), the others that serve "
                                        "no clause wait while it is shown, and while it is not, only collapsed "
                                        "sections and tabs not yet opened may be chosen (named_target). A date "
                                        "the task names (12/30/2016) names the calendar day of that date: until "
                                        "it is shown only a read-only field (a date picker's) may be chosen, and "
                                        "a calendar of another month only steps toward it (Prev, Next); shown, "
                                        "it is the only choice, as is the one option of a list whose whole text "
                                        "the task says (\"Select Lithuania from the list\"; each in turn where "
                                        "the list keeps several), each item of a menu path (\"Select "
                                        "Clarissa>Robbyn\": a hidden submenu's item is hovered open), and each "
                                        "element of what the task asks all of (\"all the shades of green\") "
                                        "until selected. A quoted \"x\" names the button named Close. Sampled "
                                        "rollouts are unchanged.")
    embedding_cache: ProjectPath | None = Field(
        default=".cache/scorer-embeddings",
        description="MiniLM vectors of page and candidate texts kept between runs, keyed by text hash (relative "
                    "to the project): rollouts embed each text once and training reads them back instead of "
                    "embedding the replay pool again every iteration; null: in memory only.")
    embedding_precision: EmbeddingPrecision = Field(
        default="auto",
        description="MiniLM arithmetic of the scorer's text vectors: auto takes bfloat16 where the CPU computes it "
                    "natively (2.3x the texts per second here, cosine 0.99997 to float32), float32 elsewhere; each "
                    "precision has its own cache.")


class PolicyConfig(Section):
    """Which policy acts in rollouts (the `policy` block of a profile)."""

    kind: PolicyKind = Field(
        default="oracle", description="chat: the llm `policy` endpoints; local: `checkpoint` in-process; "
                                      "scorer: the set-of-marks scorer of the `scorer` block (learns on CPU); "
                                      "oracle: shortest paths on the synthetic sites; random: a floor.")
    checkpoint: str | None = Field(default=None, description="Checkpoint directory for `local` (Hugging Face layout); for "
                                                                "`chat`, the served one: its tokenizer counts tokens "
                                                                "for the context budget.")
    device: str = Field(default="auto", description="torch device for `local`: auto, cpu, cuda:0.")
    epsilon: float = Field(default=0.0, ge=0, le=1, description="Oracle: probability of a random valid action instead.")
    seed: int = Field(default=0, description="Seed of the oracle's noise, the random policy and local sampling "
                                             "(the scorer has its own: scorer.seed).")
    context: ContextConfig = Field(default_factory=ContextConfig, description="Prompt and context of text policies.")
    sampling: SamplingConfig = Field(default_factory=SamplingConfig, description="Decoding of text policies.")
    scorer: ScorerConfig = Field(default_factory=ScorerConfig, description="The set-of-marks scorer (kind scorer).")

    @property
    def acting_seed(self) -> int:
        """The seed that makes this policy's decisions, the one a run is known by: the scorer's own (its initial
        weights and sampler), else `seed` (a profile that changed only `seed` ran the same scorer)."""
        return self.scorer.seed if self.kind == "scorer" else self.seed

    def label(self, greedy: bool) -> str:
        """How rollout keys and evaluation ids name this policy: its kind and, for the scorer's greedy decisions
        with margins, the margins (`scorer-done2`, `scorer-done2-order1`): they change what it decides, so such
        episodes are neither reused nor compared as plain argmax ones."""
        if self.kind != "scorer" or not greedy:
            return self.kind
        margins = [f"{name}{value:g}" for name, value in (("done", self.scorer.done_margin),
                                                          ("order", self.scorer.order_margin)) if value]
        return "-".join([self.kind, *margins])
