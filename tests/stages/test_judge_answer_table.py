"""The reference checker on the shared table of answers (tests/webgym/answer_cases.py): as a plain
reference answer (WebVoyager, GAIA) and as WebArena's must_include / fuzzy_match "N/A" blocks, it
pays no negation, no second candidate, no reference inside a longer value and no other unit."""

from __future__ import annotations

import json

import pytest

from stages.judge.reference import reference_verdict
from tests.webgym.answer_cases import CASES, REJECTED_CLASSES, AnswerCase, error_rates


def plain(case: AnswerCase) -> bool:
    return reference_verdict("q", case.answer, None, case.reference, None).success


def webarena(case: AnswerCase) -> bool:
    references = {"fuzzy_match": "N/A"} if case.reference == "N/A" else {"must_include": [case.reference]}
    block = json.dumps({"eval_types": ["string_match"], "reference_answers": references})
    return reference_verdict("q", case.answer, None, None, block).success


@pytest.mark.parametrize("checker", [plain, webarena])
@pytest.mark.parametrize("case", CASES, ids=[f"{c.kind}: {c.reference} <- {c.answer!r}" for c in CASES])
def test_every_case_of_the_table_gets_its_verdict(case, checker):
    assert checker(case) is case.success


@pytest.mark.parametrize("checker", [plain, webarena])
def test_no_false_accept_on_rejected_classes_and_at_most_3_percent_false_rejects(checker):
    false_accepts, false_rejects = error_rates(checker)
    assert false_accepts == dict.fromkeys(REJECTED_CLASSES, 0)
    assert false_rejects <= 0.03


@pytest.mark.parametrize(("answer", "references", "success"), [
    ("Paris", {"must_include": ["Paris"]}, True),
    ("Parisian", {"must_include": ["Paris"]}, False),
    ("Orders 12 and 15 are pending", {"must_include": ["12", "15"]}, True),
    ("Orders 12, 15 and 18 are pending", {"must_include": ["12", "15"]}, False),
    ("42,000", {"exact_match": "42"}, False),
    ("$1,299.99", {"exact_match": "1299.99"}, True),
    ("It was on 2023-03-03", {"fuzzy_match": ["March 3, 2023"]}, True),
    ("not March 3, 2023", {"fuzzy_match": ["March 3, 2023"]}, False),
    ("The lamp does not exist; it costs $19", {"fuzzy_match": "N/A"}, False),
])
def test_webarena_string_match_reads_values_at_token_boundaries(answer, references, success):
    block = json.dumps({"eval_types": ["string_match"], "reference_answers": references})
    verdict = reference_verdict("q", answer, None, None, block)
    assert verdict.status == "judged" and verdict.success is success, verdict.rationale


def test_list_order_is_required_only_when_the_question_asks_it():
    assert reference_verdict("Which fruits are on sale?", "banana, apple", None, "apple, banana", None).success
    ordered = reference_verdict("List the fruits sorted by price", "banana, apple", None, "apple, banana", None)
    assert not ordered.success and "order" in ordered.rationale
