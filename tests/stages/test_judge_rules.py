"""Rule gates and reference answers: no LLM involved, every evaluator type of WebArena."""

from __future__ import annotations

import json

import pytest

from stages.judge.gates import gate_judgments
from stages.judge.reference import reference_verdict
from tests.conftest import trajectories_frame


def test_gates_decide_every_unusable_ending_and_skip_real_answers():
    trajectories = trajectories_frame()
    trajectories.loc[1, ["termination", "answer"]] = ["parse_error", None]
    trajectories.loc[2, "answer"] = "   "
    gated = gate_judgments(trajectories, format_error_reward=-0.5)
    assert gated["trajectory_id"].tolist() == ["r1", "r2"]
    assert gated["reward"].tolist() == [-0.5, 0.0] and not gated["success"].any()
    assert gated["rationale"].tolist() == ["ended on repeated unparseable responses", "answered with an empty answer"]
    assert (gated["judge"] == "gate").all() and (gated["status"] == "gated").all()


def _webarena(types, **block) -> str:
    return json.dumps({"eval_types": types, **block})


@pytest.mark.parametrize("answer, references, success", [
    ("Luma", {"exact_match": "luma"}, True),
    ('"Luma"', {"exact_match": "Luma"}, True),
    ("Luma Inc", {"exact_match": "Luma"}, False),
    ("Orders 12 and 15 are pending", {"must_include": ["12", "15"]}, True),
    ("Order 12 is pending", {"must_include": ["12", "15"]}, False),
    ("This cannot be done: no such product exists", {"fuzzy_match": "N/A"}, True),
    ("The product costs $4", {"fuzzy_match": "N/A"}, False),
    ("It was delivered on March 3, 2023", {"fuzzy_match": ["March 3, 2023"]}, True),
])
def test_webarena_string_match(answer, references, success):
    verdict = reference_verdict("q", answer, None, None, _webarena(["string_match"], reference_answers=references))
    assert verdict.status == "judged" and verdict.success is success


def test_webarena_fuzzy_match_uses_the_llm_check_when_given():
    block = _webarena(["string_match"], reference_answers={"fuzzy_match": ["three"]})
    assert reference_verdict("q", "3 items", None, None, block).success is False
    verdict = reference_verdict("q", "3 items", None, None, block, equivalent=lambda q, ref, ans: True)
    assert verdict.success is True and verdict.checks[0].rationale == "LLM equivalence"


def test_webarena_url_match_and_program_html():
    block = _webarena(["url_match"], reference_url="__GITLAB__/a11yproject/-/issues/?label_name=bug |OR| __GITLAB__/x")
    good = reference_verdict("q", "done", "http://gitlab.test/a11yproject/-/issues/?label_name=bug&page=1", None, block)
    bad = reference_verdict("q", "done", "http://gitlab.test/a11yproject/-/issues/", None, block)
    assert good.success is True and bad.success is False and "is not" in bad.checks[0].rationale
    html = reference_verdict("q", "done", None, None, _webarena(["program_html"], program_html=[{}]))
    assert html.status == "not_evaluable" and html.success is False


def test_plain_reference_answers_and_possible_answers():
    assert reference_verdict("q", "The total is $1,234.50.", None, "1234.5", None).success
    assert reference_verdict("q", "It is in Paris, France", None, "paris", None).success
    assert not reference_verdict("q", "Parisian cafes", None, "paris", None).success
    assert reference_verdict("q", "42 kg", None, "42", None).success is True
    assert reference_verdict("q", "43", None, "42", None).success is False
    possible = json.dumps({"answer_type": "possible", "notice": ""})
    assert reference_verdict("q", "anything", None, "one possible answer", possible) is None
    assert reference_verdict("q", "anything", None, None, None) is None
