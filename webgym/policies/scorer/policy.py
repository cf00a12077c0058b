"""The scorer as a policy: each step it scores every candidate of the page and samples one (or takes
the best, greedy), and for a fill picks a phrase per text field; the step's log-probability is the
candidate's plus its fields', which is what training maximises (webgym/train/scorer.py)."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch

from webgym.policies.base import PolicyError, PolicyInput, PolicyOutput
from webgym.policies.scorer.candidates import page_candidates, page_context, phrases
from webgym.policies.scorer.checkpoint import Scorer
from webgym.policies.scorer.embeddings import TextEmbeddings
from webgym.policies.scorer.features import Decision, chosen_at, clauses, field_features, flat_features
from webgym.policies.scorer.network import candidate_logits, option_logits
from webgym.policies.scorer.named_target import held_back, named_targets
from webgym.policies.scorer.relations import out_of_order, serving


class ScorerPolicy:
    """Implements the Policy protocol with a scorer (name `scorer`, version = its checkpoint id)."""

    name = "scorer"
    prompt_version = None
    privileged = False

    def __init__(self, scorer: Scorer, embed: TextEmbeddings | None = None, temperature: float = 1.0,
                 greedy: bool = False, seed: int = 0, done_margin: float = 0.0, order_margin: float = 0.0) -> None:
        self.scorer, self.temperature, self.greedy = scorer, temperature, greedy
        self.done_margin, self.order_margin = done_margin, order_margin
        self.version = scorer.checkpoint_id
        self.embed = embed or TextEmbeddings()
        self._generator = torch.Generator().manual_seed(seed)
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="scorer-policy")

    def _pick(self, logits: torch.Tensor, held_back: torch.Tensor | None = None) -> tuple[int, float]:
        """The chosen index and its log-probability under the network (temperature 1, no margins: what
        training recomputes); `held_back` is what the greedy margins take off each candidate's score."""
        logprobs = torch.log_softmax(logits, dim=-1)
        if self.greedy:
            index = int(torch.argmax(logits if held_back is None else logits - held_back))
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
            index, logprob = self._pick(candidate_logits(net, flat_features(decision, self.embed, self.scorer.history,
                                                                                self.scorer.architecture)),
                                        self._held_back(decision))
            candidate = decision.candidates[index]
            typed: list[str | None] = []
            if candidate.kind == "fill":
                options = [None, *(p.text for p in decision.phrases)]
                for field in field_features(decision, candidate, self.embed):
                    option, option_logprob = self._pick(option_logits(net, field))
                    typed.append(options[option])
                    logprob += option_logprob
        return PolicyOutput(candidate.actions(typed), response=candidate.response(typed), logprob=logprob)

    def _held_back(self, decision: Decision) -> torch.Tensor | None:
        """What the greedy margins take off each candidate's score: the "Done." margin off "Done.", the order
        margin off the elements that would act on a clause before an earlier one (those of the task's last clause,
        and "Done.", once per clause left: relations.out_of_order), and off those that are not the element the task
        names (named_target.held_back)."""
        if not self.greedy or not (self.done_margin or self.order_margin):
            return None
        held = self.done_margin * torch.tensor([c.kind == "done" for c in decision.candidates], dtype=torch.float32)
        if self.order_margin:
            task, history = decision.task, [(c.text, c.typed) for c in decision.history]
            waits = out_of_order(task, clauses(task), decision.context, history, decision.candidates,
                                 self.embed).astype(np.float32)
            if named_targets(task, decision.candidates):
                serves = serving(task, clauses(task), decision.context, history, decision.candidates, self.embed)
                waits = np.maximum(waits, held_back(task, [text for text, _ in history], decision.candidates, serves))
            held = held + self.order_margin * torch.from_numpy(waits)
        return held

    async def act(self, observed: PolicyInput) -> PolicyOutput:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._worker, self.decide, observed)

    def close(self) -> None:
        """Stop the worker thread (after the episodes using the policy have finished) and keep the
        vectors it embedded for training."""
        self._worker.shutdown(wait=True)
        self.embed.flush()
