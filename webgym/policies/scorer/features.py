"""What the scorer reads at a step: the decision (task, page, earlier choices, candidates, phrases)
and its features, MiniLM embeddings and a few scalar features per candidate and per fill field."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from schemas.steps import Action, Element
from webgym.answers import dates_in_words
from webgym.embeddings import DIM
from webgym.policies.scorer.candidates import (KINDS, PHRASE_SOURCES, STOPWORDS, WORD, Candidate, Phrase, field_name,
                                               step_choices)
from webgym.policies.scorer.embeddings import TextEmbeddings
from webgym.policies.scorer.relations import RELATION_SCALARS, relation_scalars

FLAT_SCALARS = len(KINDS) + 14
ARCHITECTURES = ("mlp", "relational")
"""mlp: the candidate MLP over embeddings and FLAT_SCALARS; relational: the same MLP that also reads how each
candidate relates to the task's clauses (relations.py, RELATION_SCALARS more scalars)."""
FIELD_SCALARS = len(PHRASE_SOURCES) + 7
QUESTION = re.compile(r"\?|^\W*(what|how|which|when|who|where)\b|\baccording to\b", re.I)
NUMBER_WORDS = {w: str(i) for i, w in enumerate("zero one two three four five six seven eight nine ten".split())}
CLAUSE = re.compile(r"[,;:.?!]|\band\b|\bthen\b", re.I)


def words(text: str) -> set[str]:
    """Content words, lower-cased, number words as digits, dates in digits as words (answers.dates_in_words): what
    word-overlap features compare."""
    out = set()
    for token in WORD.findall(dates_in_words(text).lower()):
        token = token.strip(",.;:!?'\"")
        if token and token not in STOPWORDS:
            out.add(token)
        if token in NUMBER_WORDS:
            out.add(NUMBER_WORDS[token])
    return out



def clauses(task: str) -> list[str]:
    """The task cut at punctuation and 'and'/'then': each asks for about one thing."""
    parts = [p.strip() for p in CLAUSE.split(task) if len(p.strip()) > 2]
    return parts or [task]



@dataclass(frozen=True)
class Chosen:
    """A candidate taken at an earlier step of the episode, and what its fill typed."""

    text: str
    typed: tuple[str | None, ...] = ()



@dataclass(frozen=True)
class Decision:
    """Everything the scorer reads at one step."""

    task: str
    context: str
    history: tuple[Chosen, ...]
    """Earlier choices of the episode, oldest first."""
    candidates: list[Candidate]
    phrases: list[Phrase]
    step: int
    horizon: int



def chosen_at(elements: Sequence[Element] | None, page_text: str | None, actions: Sequence[Action]) -> list[Chosen]:
    """What an executed step chose, as the history keeps it (calls that map to no candidate are left out)."""
    choices, candidates, _ = step_choices(elements, page_text, actions)
    by_key = {c.key: c for c in candidates}
    return [Chosen(by_key[c.key].text, c.typed) for c in choices]



@dataclass
class FlatFeatures:
    """One step's candidates as the scorer's first MLP reads them."""

    task: np.ndarray  # (D,)
    page: np.ndarray  # (D,)
    history: np.ndarray  # (D,) mean of the last actions' vectors, zeros at the first step
    candidates: np.ndarray  # (N, D)
    scalars: np.ndarray  # (N, FLAT_SCALARS), then RELATION_SCALARS more for the relational architecture



@dataclass
class FieldFeatures:
    """One text field of a fill and its options (keep, then the phrases) for the second MLP."""

    label: np.ndarray  # (D,)
    options: np.ndarray  # (M, D)
    contexts: np.ndarray  # (M, D) the task's words before each phrase
    scalars: np.ndarray  # (M, FIELD_SCALARS)



def _one_hot(index: int, size: int) -> list[float]:
    return [1.0 if i == index else 0.0 for i in range(size)]



def scalar_count(architecture: str) -> int:
    """Scalars per candidate an architecture's network reads."""
    return FLAT_SCALARS + (RELATION_SCALARS if architecture == "relational" else 0)



def flat_features(decision: Decision, embed: TextEmbeddings, history: int, architecture: str = "mlp") -> FlatFeatures:
    """Embeddings and scalar features of every candidate of a decision (scalar_count(architecture) each)."""
    recent = [c.text for c in decision.history[-history:]] if history else []
    parts = clauses(decision.task)
    vectors = embed([decision.task, decision.context, *recent, *parts, *(c.text for c in decision.candidates)])
    task, page = vectors[0], vectors[1]
    hist = vectors[2:2 + len(recent)].mean(axis=0) if recent else np.zeros(DIM, np.float32)
    clause_vectors = vectors[2 + len(recent):2 + len(recent) + len(parts)]
    cand = vectors[2 + len(recent) + len(parts):]
    task_words = words(decision.task)
    task_lower = decision.task.lower()
    done_before = [c.text for c in decision.history]
    question = 1.0 if QUESTION.search(decision.task) else 0.0
    rows = []
    for i, candidate in enumerate(decision.candidates):
        target = words(candidate.target)
        numbers = {w for w in target if w.replace(".", "").isdigit()}
        label = words(candidate.label)
        rows.append([
            *_one_hot(KINDS.index(candidate.kind), len(KINDS)),
            float(task @ cand[i]), float(page @ cand[i]), float(hist @ cand[i]),
            float((clause_vectors @ cand[i]).max()),
            len(target & task_words) / max(len(target), 1),
            1.0 if len(candidate.target) >= 3 and candidate.target.lower() in task_lower else 0.0,
            1.0 if numbers & task_words else 0.0,
            1.0 if numbers else 0.0,
            min(done_before.count(candidate.text), 3) / 3,
            1.0 if done_before and done_before[-1] == candidate.text else 0.0,
            decision.step / max(decision.horizon, 1),
            question,
            min(len(target), 10) / 10,
            len(label & task_words) / max(len(label), 1),
        ])
    scalars = np.asarray(rows, dtype=np.float32).reshape(-1, FLAT_SCALARS)
    if architecture == "relational":
        relations = relation_scalars(decision.task, parts, decision.context,
                                     [(c.text, c.typed) for c in decision.history], decision.candidates, embed)
        scalars = np.concatenate([scalars, relations], axis=1)
    return FlatFeatures(task, page, hist, cand, scalars)



def field_features(decision: Decision, candidate: Candidate, embed: TextEmbeddings) -> list[FieldFeatures]:
    """Per text field of a fill: its options, None (keep its value) first, then the decision's phrases."""
    typed_before = {t for c in decision.history for t in c.typed if t}
    out = []
    for element in candidate.fields:
        label = field_name(element)
        value = element.value or ""
        texts = [value or "(keep)", *(p.text for p in decision.phrases)]
        contexts = ["", *(p.context for p in decision.phrases)]
        vectors = embed([label, *texts, *contexts])
        label_vector, options = vectors[0], vectors[1:1 + len(texts)]
        context_vectors = vectors[1 + len(texts):]
        label_words = words(label)
        rows = []
        for j, phrase in enumerate([None, *decision.phrases]):
            text = value if phrase is None else phrase.text
            rows.append([
                *_one_hot(PHRASE_SOURCES.index("keep" if phrase is None else phrase.source), len(PHRASE_SOURCES)),
                float(label_vector @ options[j]), float(label_vector @ context_vectors[j]),
                1.0 if phrase is not None and label_words & words(phrase.context) else 0.0,
                1.0 if (phrase is None and value) or (phrase is not None and phrase.text == value) else 0.0,
                0.0 if value else 1.0,
                1.0 if text and text in typed_before else 0.0,
                min(len(text), 80) / 40,
            ])
        out.append(FieldFeatures(label_vector, options, context_vectors,
                                 np.asarray(rows, dtype=np.float32).reshape(-1, FIELD_SCALARS)))
    return out
