"""The type-aware answer matcher: the shared table of cases (answer_cases.py), kinds read from the
reference, whole-answer equality for WebArena's exact_match, list order and the other values a task
may ask beside the reference."""

from __future__ import annotations

import time

import pytest

from tests.webgym.answer_cases import CASES, REJECTED_CLASSES, error_rates
from webgym.answers import MAX_CHARS, answer_kind, dates_in_words, exact_answer, match_answer, order_asked


@pytest.mark.parametrize("case", CASES, ids=[f"{c.kind}: {c.reference} <- {c.answer!r}" for c in CASES])
def test_every_case_of_the_table_gets_its_verdict(case):
    match = match_answer(case.answer, case.reference)
    assert match.ok is case.success, match.reason


def test_the_table_covers_every_class_with_150_cases():
    assert len(CASES) >= 150
    kinds = {c.kind for c in CASES}
    assert set(REJECTED_CLASSES) <= kinds
    assert {"date_form", "number_form", "list_any_order", "last_first", "folded", "in_sentence", "na_said",
            "yes_no", "context"} <= kinds
    assert sum(c.kind == "negation" for c in CASES) >= 20 and sum(c.kind == "two_candidates" for c in CASES) >= 20


def test_no_false_accept_on_rejected_classes_and_no_false_reject():
    false_accepts, false_rejects = error_rates(lambda c: match_answer(c.answer, c.reference).ok)
    assert false_accepts == dict.fromkeys(REJECTED_CLASSES, 0)
    assert false_rejects <= 0.03


@pytest.mark.parametrize(("reference", "kind"), [
    ("N/A", "na"), ("Yes", "yes_no"), ("March 18, 2024", "date"), ("2024-03-18", "date"), ("31 October", "date"),
    ("$1,299.99", "money"), ("42 km", "number"), ("3.5", "number"), ("K7-2291", "code"), ("12:30", "code"),
    ("apple, banana", "list"), ("John Smith", "name"), ("café", "name"),
    ("12 Harbour Street", "text"), ("the repository was archived last year", "text"),
])
def test_the_kind_is_read_from_the_reference(reference, kind):
    assert answer_kind(reference) == kind


@pytest.mark.parametrize(("answer", "reference", "exact"), [
    ("Luma", "luma", True), ('"Luma"', "Luma", True), ("Luma Inc", "Luma", False),
    ("$1,299.99", "1299.99", True), ("2024-03-18", "March 18, 2024", True), ("42 miles", "42 km", False),
    ("The answer is 42", "42", False), ("not 42", "42", False),
])
def test_exact_answer_is_the_whole_answer_in_any_surface_form(answer, reference, exact):
    assert exact_answer(answer, reference).ok is exact


def test_list_order_counts_only_when_asked():
    assert order_asked("List the three newest orders, from the newest") and not order_asked("Which colours?")
    assert match_answer("banana, apple", "apple, banana").ok
    assert not match_answer("banana, apple", "apple, banana", ordered=True).ok
    assert match_answer("apple, then banana", "apple, banana", ordered=True).ok


def test_values_the_task_also_asks_are_no_rival_candidates():
    assert not match_answer("7; 25", "7").ok
    assert match_answer("7; 25", "7", allowed=["7", "25"]).ok
    assert match_answer("Alice and Bob", "Alice", allowed=["Alice", "Bob"]).ok
    assert not match_answer("Alice and Carol", "Alice", allowed=["Alice", "Bob"]).ok


def test_a_rejection_says_why():
    assert "negates" in match_answer("not K7-2291", "K7-2291").reason
    assert "another candidate (k7-2290)" in match_answer("K7-2290, K7-2291", "K7-2291").reason
    assert "another unit (mi)" in match_answer("42 miles", "42 km").reason
    assert "asserts a value" in match_answer("It does not exist; it costs $4", "N/A").reason
    assert "expected 'Paris'" in match_answer("Parisian", "Paris").reason


def test_an_overlong_answer_fails_unread_and_adversarial_answers_stay_cheap():
    assert "longer than 2000" in match_answer("42 " + "a" * MAX_CHARS, "42").reason
    for answer in ("a" * 1990 + " Paris", "42 or " * 330, "not " * 495 + "42", "k7-" * 660):
        started = time.perf_counter()
        match_answer(answer, "Paris" if "Paris" in answer else "42")
        assert time.perf_counter() - started < 0.5, answer[:20]


def test_dates_in_digits_read_as_words_and_other_numbers_stay():
    assert dates_in_words("Select 12/26/2016 as the date.") == "Select December 26, 2016 as the date."
    assert dates_in_words("from 2016-12-26 to 26/12/2016") == "from December 26, 2016 to December 26, 2016"
    assert dates_in_words("Today is 6/12/2023") == "Today is June 12, 2023"  # month first when both could be
    for text in ("ratio 1/2 and 3/4", "the 12/2016 issue", "March 18, 2024", "order 13/14/2016"):
        assert dates_in_words(text) == text
