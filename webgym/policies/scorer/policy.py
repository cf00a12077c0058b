"""The scorer as a policy: each step it scores every candidate of the page and samples one (or takes
the best, greedy), and for a fill picks a phrase per text field; the step's log-probability is the
candidate's plus its fields', which is what training maximises (webgym/train/scorer.py)."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

import torch

from webgym.policies.base import PolicyError, PolicyInput, PolicyOutput
from webgym.policies.scorer.candidates import page_candidates, page_context, phrases
from webgym.policies.scorer.checkpoint import Scorer
from webgym.policies.scorer.embeddings import TextEmbeddings
from webgym.policies.scorer.features import Decision, chosen_at, field_features, flat_features
from webgym.policies.scorer.network import candidate_logits, hold_back_done, option_logits


class ScorerPolicy:
    """Implements the Policy protocol with a scorer (name `scorer`, version = its checkpoint id)."""

    name = "scorer"
    prompt_version = None
    privileged = False

    def __init__(self, scorer: Scorer, embed: TextEmbeddings | None = None, temperature: float = 1.0,
                 greedy: bool = False, seed: int = 0, done_margin: float = 0.0) -> None:
        self.scorer, self.temperature, self.greedy, self.done_margin = scorer, temperature, greedy, done_margin
        self.version = scorer.checkpoint_id
        self.embed = embed or TextEmbeddings()
        self._generator = torch.Generator().manual_seed(seed)
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="scorer-policy")

    def _pick(self, logits: torch.Tensor, done: torch.Tensor | None = None) -> tuple[int, float]:
        """The chosen index and its log-probability under the network (temperature 1, no margin: what
        training recomputes); `done` marks the "Done." candidates the greedy margin holds back."""
        logprobs = torch.log_softmax(logits, dim=-1)
        if self.greedy:
            index = int(torch.argmax(logits if done is None else hold_back_done(logits, done, self.done_margin)))
        else:
            probs = torch.softmax(logits / self.temperature, dim=-1)
            index = int(torch.multinomial(probs, 1, generator=self._generator))
        return index, float(logprobs[index])

    def decide(self, observed: PolicyInput) -> PolicyOutput:
        """One decision, computed in the calling thread."""
        observation = observed.observation
        if observation.elements is None:
            raise PolicyError("the scorer needs set-of-marks observations: set env.observation to set_of_marks")
        history = tuple(chosen for turn in observed.history for chosen in chosen_at(
            turn.observation.elements, turn.observation.page_text, turn.executed))
        decision = Decision(observed.task.text, page_context(observation.url, observation.title), history,
                            page_candidates(observation.elements, observation.page_text),
                            phrases(observed.task.text, observation.page_text), observed.step, observed.horizon)
        net = self.scorer.net.eval()
        with torch.no_grad():
            done = torch.tensor([c.kind == "done" for c in decision.candidates])
            index, logprob = self._pick(candidate_logits(net, flat_features(decision, self.embed, self.scorer.history,
                                                                                self.scorer.architecture)),
                                        done)
            candidate = decision.candidates[index]
            typed: list[str | None] = []
            if candidate.kind == "fill":
                options = [None, *(p.text for p in decision.phrases)]
                for field in field_features(decision, candidate, self.embed):
                    option, option_logprob = self._pick(option_logits(net, field))
                    typed.append(options[option])
                    logprob += option_logprob
        return PolicyOutput(candidate.actions(typed), response=candidate.response(typed), logprob=logprob)

    async def act(self, observed: PolicyInput) -> PolicyOutput:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._worker, self.decide, observed)

    def close(self) -> None:
        """Stop the worker thread (after the episodes using the policy have finished) and keep the
        vectors it embedded for training."""
        self._worker.shutdown(wait=True)
        self.embed.flush()
