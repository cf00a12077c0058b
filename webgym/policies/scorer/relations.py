"""How each candidate relates to the task, clause by clause: the `relational` scorer's extra scalars.

The MLP scorer sees one vector for the whole task, so it cannot tell which part of the task a toggle
answers, whether that part was already done, or which page line a question asks for. These features
compare words instead (late interaction, MaxSim): every content word of the task and of a candidate
is a MiniLM vector (memoised per word, so a step embeds only words it has never seen), a candidate
matches a clause as well as its words match that clause's words, and a clause counts as acted on as
far as the words of earlier choices (and the text they typed) match it. From these come, per
candidate: its best clause and how far that clause is done, how it ranks against the page's other
candidates, and for an answer line how its label matches the question; per decision: how much of the
task is still undone (what "Done." must wait for) and whether anything on the page matches at all
(when to scroll), and where a candidate stands in the order of the task's clauses and of the
page (the first element that matches a clause and was not chosen yet). `out_of_order` reads the same
matches to say which elements would act on a clause before an earlier one, and when "Done." would come before
a clause left (the greedy order margin).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from webgym.answers import dates_in_words
from webgym.embeddings import DIM
from webgym.policies.scorer.candidates import Candidate

TOKEN = re.compile(r"[a-z0-9]+(?:[.'][a-z0-9]+)*")
FILLER = frozenset("a an the and or of to in on at for from by with your you is are be it its this that as".split())
"""Words too common to say which clause a text belongs to. Fewer than the other features' stopwords: a value
such as "Only me" or "No preference" is made of words those drop."""
NUMBER_WORDS = {w: str(i) for i, w in enumerate("zero one two three four five six seven eight nine ten".split())}
from webgym.policies.scorer.embeddings import TextEmbeddings

RELATION_SCALARS = 19
DESCRIBED = re.compile(r'"([^"]*)"')
GROUP = re.compile(r"\(([^()\"]*)\)\s*$")
NEGATION = re.compile(r"\b(no|not|nothing|none|without|never|except|don't|doesn't|off|remove|untick|uncheck)\b", re.I)
AMOUNT = re.compile(r"\b(how (much|many|long|old)|price|costs?|number|total|year|rating|score|minutes|votes)\b", re.I)
DIGIT = re.compile(r"\d")
ELEMENT_KINDS = frozenset({"link", "button", "option", "toggle", "submit", "fill"})
DONE_AT = 0.8
"""A clause word counts as acted on when an earlier choice (or the page's title) has a word at least this similar."""
SERVES = 0.5
"""A candidate serves a clause when it covers at least this much of it; a clause is acted on when at least this
share of its words is."""


def words_of(text: str) -> set[str]:
    """The words of a text that can tie it to a clause: lower-cased, number words as digits, dates in digits as words
    ("12/26/2016": december, 26, 2016), fillers left out."""
    return {NUMBER_WORDS.get(t, t) for t in TOKEN.findall(dates_in_words(text).lower()) if t not in FILLER}


def described_words(text: str) -> list[str]:
    """The content words of a candidate's or an earlier choice's description: its quoted parts (element
    text, field names, answer line and label) and an option's group, not the template around them."""
    parts = DESCRIBED.findall(text)
    group = GROUP.search(text)
    if group:
        parts.append(group.group(1))
    return sorted(words_of(" ".join(parts)))


def _word_vectors(embed: TextEmbeddings, groups: Sequence[Sequence[str]]) -> list[np.ndarray]:
    """Unit vectors of each group's words, (len(group), D), embedded in one call."""
    flat = [w for group in groups for w in group]
    vectors = embed(flat) if flat else np.zeros((0, DIM), np.float32)
    out, start = [], 0
    for group in groups:
        out.append(vectors[start:start + len(group)])
        start += len(group)
    return out


def _recall(query: np.ndarray, keys: np.ndarray) -> float:
    """MaxSim: the mean over query words of their best similarity to a key word (0 when either is empty)."""
    if not len(query) or not len(keys):
        return 0.0
    return float(np.clip(query @ keys.T, 0.0, 1.0).max(axis=1).mean())


@dataclass(frozen=True)
class _Match:
    """A decision's words as vectors and how its candidates match the task's clauses."""

    task: np.ndarray  # (T, D) the task's words
    clauses: list[np.ndarray]  # K x (W, D)
    candidates: list[np.ndarray]  # N x (C, D)
    labels: list[np.ndarray]  # N x (L, D) an answer line's label words, none for the rest
    acted: np.ndarray  # (K,) share of each clause's words acted on
    ordered: np.ndarray  # (K,) the same as the order margin reads it: by the episode's choices, or 1 where the page's
    # title and path name every word of the clause ("On Lumen Bank"); a page titled "Click Scroll List Task" does not
    # do half of "Select Angelina from the scroll list"
    recalls: np.ndarray  # (N, K) how much of each clause each candidate covers
    chosen: np.ndarray  # (N,) bool: an earlier choice of the episode


def _match(task: str, clauses: Sequence[str], context: str, history: Sequence[tuple[str, Sequence[str | None]]],
           candidates: Sequence[Candidate], embed: TextEmbeddings) -> _Match:
    clause_words = [sorted(words_of(c)) for c in clauses]
    task_words = sorted(words_of(task))
    place_words = words_of(context)
    choice_words = {w for text, typed in history for w in [
        *described_words(text), *(x for t in typed if t for x in words_of(t))]}
    candidate_words = [described_words(c.text) for c in candidates]
    label_words = [sorted(words_of(c.label)) if c.kind == "answer" else [] for c in candidates]
    vectors = _word_vectors(embed, [task_words, sorted(place_words), sorted(choice_words), *clause_words,
                                    *candidate_words, *label_words])
    place_v, choice_v = vectors[1], vectors[2]
    done_v = np.concatenate([place_v, choice_v])  # a word in both counts once: every use takes the best match
    clause_v = vectors[3:3 + len(clauses)]
    cand_v = vectors[3 + len(clauses):3 + len(clauses) + len(candidates)]
    chosen = np.array([bool(history) and _recall(v, done_v) > 0.99 for v in cand_v], dtype=bool)
    ordered = [max(_acted(c, choice_v), float(_acted(c, place_v) == 1.0)) for c in clause_v]
    return _Match(vectors[0], clause_v, cand_v, vectors[3 + len(clauses) + len(candidates):],
                  np.array([_acted(c, done_v) for c in clause_v]), np.array(ordered),
                  _clause_recalls(clause_v, cand_v), chosen)


def relation_scalars(task: str, clauses: Sequence[str], context: str,
                     history: Sequence[tuple[str, Sequence[str | None]]], candidates: Sequence[Candidate],
                     embed: TextEmbeddings) -> np.ndarray:
    """(N, RELATION_SCALARS) per candidate: see the module's docstring. `context` is where the agent is (page
    title and path: being on the site a clause names is that clause done), `history` each earlier choice's
    description and what it typed."""
    match = _match(task, clauses, context, history, candidates, embed)
    task_v, clause_v, cand_v, label_v = match.task, match.clauses, match.candidates, match.labels
    acted, recalls = match.acted, match.recalls
    n_clauses = len(clauses)
    bests = recalls.argmax(axis=1) if n_clauses else np.zeros(len(candidates), dtype=np.int64)
    amount = 1.0 if AMOUNT.search(task) else 0.0
    rows = np.zeros((len(candidates), RELATION_SCALARS), dtype=np.float32)
    for i, candidate in enumerate(candidates):
        best = int(bests[i])
        line_digits = 1.0 if candidate.kind == "answer" and DIGIT.search(candidate.answer or "") else 0.0
        rows[i, :11] = [
            _recall(cand_v[i], task_v),  # how much of the candidate the task speaks of
            recalls[i, best] if n_clauses else 0.0,  # how much of its best clause the candidate covers
            _recall(cand_v[i], clause_v[best]) if n_clauses else 0.0,
            best / max(n_clauses - 1, 1),
            acted[best] if n_clauses else 0.0,  # its clause is already done: do something else
            1.0 if n_clauses and NEGATION.search(clauses[best]) else 0.0,
            _recall(label_v[i], task_v),  # an answer line's label names what the question asks
            _recall(task_v, label_v[i]) if len(label_v[i]) else 0.0,
            line_digits * amount,
            line_digits,
            1.0 if match.chosen[i] else 0.0,
        ]
    elements = [i for i, c in enumerate(candidates) if c.kind in ELEMENT_KINDS]
    answers = [i for i, c in enumerate(candidates) if c.kind == "answer"]
    best_element = float(rows[elements, 1].max()) if elements else 0.0
    best_label = float(rows[answers, 6].max()) if answers else 0.0
    rows[:, 11] = float((1.0 - acted).mean()) if n_clauses else 0.0
    rows[:, 12] = float(acted.min()) if n_clauses else 1.0
    rows[:, 13] = best_element
    rows[:, 14] = rows[:, 1] - best_element  # 0 for the page's best match to a clause, below 0 for the rest
    rows[answers, 15] = rows[answers, 6] - best_label  # the pointer: 0 for the line whose label fits best
    # the next clause to act on here: the first one not yet acted on that something on this page serves
    served = recalls[elements].max(axis=0) >= SERVES if elements and n_clauses else np.zeros(n_clauses, dtype=bool)
    following = next((k for k in range(n_clauses) if acted[k] < SERVES and served[k]), None)
    rows[:, 16] = (bests == following) & (rows[:, 1] >= SERVES) if following is not None else 0.0
    # page order: the oracle works through a form top to bottom
    rows[elements, 17] = np.arange(len(elements)) / max(len(elements) - 1, 1)
    first = next((i for i in elements if rows[i, 1] >= SERVES and not rows[i, 10]), None)
    if first is not None:
        rows[first, 18] = 1.0
    return rows


def out_of_order(task: str, clauses: Sequence[str], context: str,
                 history: Sequence[tuple[str, Sequence[str | None]]], candidates: Sequence[Candidate],
                 embed: TextEmbeddings) -> np.ndarray:
    """(N,) int: how many margins the order margin holds each element back by: for an element of the task's last
    clause (what finishes it: Submit) and for "Done.", one per earlier clause left, so Submit after one of twelve
    listed checkboxes waits by eleven; for an element of a middle clause, one when it would skip any (a form's
    fields need not follow the task's wording, and a step out of order there can be made good). An
    element is out of order when the first clause it serves (matches by at least half) comes after one not yet
    acted on which another element of this page, not chosen before, serves: in "Expand the section below and
    click submit", Submit waits while the section's header is there to click. The first clause, not the best
    one: tasks that end by restating what is required ("Only this part is required: search and filters ...")
    serve the same element twice. Earlier choices and settled elements (an open tab) are left out of what serves
    a clause, so that a clause an element served once, or the page already shows done, holds nothing back. A
    clause is acted on by the episode's choices; the page's title and path do it only when they name all of it
    (`_Match.ordered`). "Done." comes after every clause: it waits while any clause not yet acted on has such an
    element ("Select Luxembourg, Kyrgyzstan from the scroll list" after Luxembourg alone). A task of one clause
    holds nothing back."""
    elements = np.array([c.kind in ELEMENT_KINDS for c in candidates], dtype=bool)
    if len(clauses) < 2 or not elements.any():
        return np.zeros(len(candidates), dtype=np.int64)
    match = _match(task, clauses, context, history, candidates, embed)
    serves = (match.recalls >= SERVES) & elements[:, None]  # (N, K)
    settled = np.array([c.settled for c in candidates], dtype=bool)
    open_clauses = serves & ~(match.chosen | settled)[:, None] & (match.ordered < SERVES)[None, :]
    served_elsewhere = open_clauses.sum(axis=0)[None, :] - open_clauses  # (N, K): by the page's other elements
    first = np.argmax(serves, axis=1)
    before_first = np.arange(len(clauses))[None, :] < first[:, None]
    skipped = (serves.any(axis=1)[:, None] & (served_elsewhere > 0) & before_first).sum(axis=1)
    finishing = first == len(clauses) - 1
    done = np.array([c.kind == "done" for c in candidates], dtype=bool)
    return np.where(done, open_clauses.any(axis=0).sum(), np.where(finishing, skipped, np.minimum(skipped, 1)))


def serving(task: str, clauses: Sequence[str], context: str, history: Sequence[tuple[str, Sequence[str | None]]],
            candidates: Sequence[Candidate], embed: TextEmbeddings) -> np.ndarray:
    """(N,) bool: the candidates that serve some clause of the task (cover at least half of it)."""
    if not clauses:
        return np.zeros(len(candidates), dtype=bool)
    return (_match(task, clauses, context, history, candidates, embed).recalls >= SERVES).any(axis=1)


def _clause_recalls(clauses: Sequence[np.ndarray], candidates: Sequence[np.ndarray]) -> np.ndarray:
    """(N, K) MaxSim of each clause's words against each candidate's words, one product per candidate."""
    out = np.zeros((len(candidates), len(clauses)), dtype=np.float32)
    sizes = [len(c) for c in clauses]
    if not sum(sizes):
        return out
    stacked, ends = np.concatenate(clauses), np.cumsum(sizes)
    for i, words in enumerate(candidates):
        if len(words):
            best = np.clip(stacked @ words.T, 0.0, 1.0).max(axis=1)  # each clause word's best match
            out[i] = [best[end - size:end].mean() if size else 0.0 for end, size in zip(ends, sizes, strict=True)]
    return out


def _acted(clause: np.ndarray, done: np.ndarray) -> float:
    """The share of a clause's words that some earlier choice's word matches (similarity >= DONE_AT)."""
    if not len(clause):
        return 1.0
    if not len(done):
        return 0.0
    return float(((clause @ done.T).max(axis=1) >= DONE_AT).mean())
