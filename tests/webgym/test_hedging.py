"""The single-answer rule on its own: what it allows (values that read as lists but are one value, the
expected answer's own lists) and what it refuses."""

from __future__ import annotations

import pytest

from webgym.hedging import MAX_WORDS, hedge_reason


@pytest.mark.parametrize(("answer", "expected"), [
    ("Paris, France", ["Paris"]),
    ("It was released on March 18, 2024", ["2024"]),
    ("The date is 12/03/2024", ["2024"]),
    ("Call +1 555 123 4567", ["555 123 4567"]),
    ("It opens on Saturday, from 9 to 5, and closes on Sunday", ["Saturday"]),
    ("Rebase or merge for feature branches?", ["Rebase or merge for feature branches?"]),  # the value has an "or"
    ("Monday, Wednesday and Friday", ["Monday, Wednesday, Friday"]),  # a list asked for, given
    ("Alice and Bob", ["Alice", "Bob"]),
    ("Saturday, Saturday, Saturday", ["Saturday"]),  # repeated, still one value
    ("Tokyo", ["Tokyo"]),
    ("No results found", ["No results"]),  # a refusal that is the asked value
])
def test_one_value_that_reads_like_a_list_is_allowed(answer, expected):
    assert hedge_reason(answer, expected, "Which is cheaper, Tokyo or Hokkaido?") is None


@pytest.mark.parametrize(("answer", "expected", "why"), [
    ("Monday, Wednesday, Friday, Sunday", ["Monday, Wednesday, Friday"], "enumerates 4 values"),
    ("Alice, Bob, Carol", ["Alice", "Bob"], "enumerates 3 values (alice, bob, carol) where 2 is asked"),
    ("Tokyo or Hokkaido", ["Tokyo"], "hedges between 2 values"),
    ("Which is cheaper, Tokyo or Hokkaido?", ["Tokyo"], "repeats the question"),
    ("We were unable to determine it; Tokyo", ["Tokyo"], "refuses or doubts"),
    ("x " * (MAX_WORDS + 1), ["x"], f"dump of {MAX_WORDS + 1} words"),
])
def test_more_values_than_asked_hedges_refusals_echoes_and_dumps_are_refused(answer, expected, why):
    assert why in (hedge_reason(answer, expected, "Which is cheaper, Tokyo or Hokkaido?") or "")
