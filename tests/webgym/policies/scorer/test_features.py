"""The scorer's scalar features: what a candidate's numbers say about the task."""

from __future__ import annotations

from webgym.policies.scorer.candidates import page_candidates
from webgym.policies.scorer.embeddings import TextEmbeddings
from webgym.policies.scorer.features import Decision, flat_features


def test_an_answer_whose_label_the_task_names_scores_its_label_overlap():
    """"121" under "Runtime (minutes)" answers a question about the runtime in minutes; "12A" under "Rated"
    does not, so only the first carries the label's overlap with the task (the last scalar)."""
    film = "Northern Signal\nRuntime (minutes)\n121\nRated\n12A"
    candidates = page_candidates([], film)
    decision = Decision(task="What is the runtime of Northern Signal in minutes?", context="Northern Signal",
                        history=(), candidates=candidates, phrases=[], step=1, horizon=10)
    overlap = dict(zip((c.answer for c in candidates), flat_features(decision, TextEmbeddings(), 2).scalars[:, -1],
                       strict=True))
    assert overlap["121"] == 1.0
    assert overlap["12A"] == 0.0 and overlap["Northern Signal"] == 0.0
