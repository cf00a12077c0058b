"""The scorer's scalar features: what a candidate's numbers say about the task."""

from __future__ import annotations

from webgym.policies.scorer.candidates import page_candidates
from webgym.policies.scorer.embeddings import TextEmbeddings
from webgym.policies.scorer.features import Decision, flat_features, words
from webgym.policies.scorer.relations import words_of


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


def test_a_date_in_digits_names_its_day_and_month_not_the_number_of_its_month():
    """MiniWoB++'s "Select 12/26/2016 as the date": the calendar's link "26" is in the task, its link "12" is not."""
    for read in (words, words_of):
        task = read("Select 12/26/2016 as the date and hit submit.")
        assert {"26", "december", "2016"} <= task and "12" not in task and "12/26/2016" not in task
