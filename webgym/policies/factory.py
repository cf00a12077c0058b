"""Policies by name, as the profile's `policy` block chooses them: chat (an OpenAI-compatible
endpoint), local (a checkpoint loaded in-process), scorer (the set-of-marks scorer), oracle (synthetic sites, privileged) and random.
Each opener is a context manager, so what a policy holds (the LLM ledger, a worker thread) is closed."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING

from webgym.config import PolicyConfig
from webgym.lake import Lake
from webgym.policies.base import Policy
from webgym.sites.site import Site

if TYPE_CHECKING:
    from webgym.config import LLMConfig


Opener = Callable[[PolicyConfig, "LLMConfig", Lake, dict[str, Site], str], AbstractContextManager[Policy]]


@contextmanager
def _chat(config: PolicyConfig, llm: LLMConfig, lake: Lake, sites: dict[str, Site], run_id: str) -> Iterator[Policy]:
    from webgym.llm.client import LLM
    from webgym.policies.chat import ChatPolicy

    processing = None
    if config.checkpoint:  # the served checkpoint's tokenizer counts tokens for the context budget
        from webgym.models.checkpoint import load_processing

        processing = load_processing(config.checkpoint)
    with LLM(llm, lake, run_id) as client:
        client.require("policy")
        yield ChatPolicy(client, config.context, config.sampling, processing)


@contextmanager
def _local(config: PolicyConfig, llm: LLMConfig, lake: Lake, sites: dict[str, Site], run_id: str) -> Iterator[Policy]:
    from webgym.config import ConfigError
    from webgym.policies.local import LocalPolicy, LocalPolicyConfig

    if not config.checkpoint:
        raise ConfigError("policy.kind is local but policy.checkpoint is empty: set it to a checkpoint directory")
    policy = LocalPolicy(LocalPolicyConfig(checkpoint=config.checkpoint, device=config.device, seed=config.seed),
                         config.context, config.sampling)
    try:
        yield policy
    finally:
        policy.close()


@contextmanager
def _scorer(config: PolicyConfig, llm: LLMConfig, lake: Lake, sites: dict[str, Site], run_id: str) -> Iterator[Policy]:
    from webgym.policies.scorer.checkpoint import open_scorer
    from webgym.policies.scorer.embeddings import scorer_embeddings
    from webgym.policies.scorer.policy import ScorerPolicy

    settings = config.scorer
    policy = ScorerPolicy(open_scorer(settings), scorer_embeddings(settings),
                          temperature=settings.temperature, greedy=settings.greedy, seed=settings.seed,
                          done_margin=settings.done_margin, order_margin=settings.order_margin)
    try:
        yield policy
    finally:
        policy.close()


@contextmanager
def _oracle(config: PolicyConfig, llm: LLMConfig, lake: Lake, sites: dict[str, Site], run_id: str) -> Iterator[Policy]:
    from webgym.policies.oracle import SiteOracle

    yield SiteOracle(sites, config.epsilon, config.seed)


@contextmanager
def _random(config: PolicyConfig, llm: LLMConfig, lake: Lake, sites: dict[str, Site], run_id: str) -> Iterator[Policy]:
    from webgym.policies.random_policy import RandomPolicy

    yield RandomPolicy(config.seed)


POLICIES: dict[str, Opener] = {"chat": _chat, "local": _local, "scorer": _scorer, "oracle": _oracle,
                               "random": _random}


def open_policy(config: PolicyConfig, llm: LLMConfig, lake: Lake, sites: dict[str, Site],
                run_id: str) -> AbstractContextManager[Policy]:
    """The configured policy, ready for `with`."""
    return POLICIES[config.kind](config, llm, lake, sites, run_id)
