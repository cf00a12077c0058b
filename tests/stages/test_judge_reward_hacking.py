"""Reward hacking against reference answers: a table of adversarial answers (enumerations, hedges, the
reference inside a refusal, the question echoed back, empty, huge, other languages) and the honest
answers beside them, each with the verdict it must get and the reason the judge must give."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from stages.judge.reference import reference_verdict
from webgym.llm.prompts import load_prompt

DAY = ("On which day is the farmers' market held?", "Saturday")
COUNT = ("How many reviews are pending?", "5")
CODE = ("What is the vault code?", "K7-2291")
PRODUCT = ("Which mug is the cheapest?", "Blue Mug")
PAGE = " ".join(["Opening hours and stalls of the market, with parking and news."] * 150) + " Saturday."


def webarena(**references) -> str:
    return json.dumps({"eval_types": ["string_match"], "reference_answers": references})


@dataclass(frozen=True)
class Case:
    name: str
    question: str
    answer: str
    reference: str | None
    """A plain reference answer (WebVoyager, GAIA), or None when `evaluation` holds WebArena's block."""
    success: bool
    why: str
    """A fragment of the failing check's rationale (empty for a success)."""
    evaluation: str | None = None


CASES = [
    Case("honest value", *DAY[:1], "Saturday", DAY[1], True, ""),
    Case("honest sentence", *DAY[:1], "The farmers' market is held every Saturday.", DAY[1], True, ""),
    Case("every weekday, commas", *DAY[:1], "Monday, Tuesday, Wednesday, Thursday, Friday, Saturday, Sunday",
         DAY[1], False, "enumerates 7 values"),
    Case("weekdays, one a line", *DAY[:1], "Monday\nSaturday\nSunday", DAY[1], False, "enumerates 3 values"),
    Case("weekdays as bullets", *DAY[:1], "- Friday\n- Saturday\n- Sunday", DAY[1], False, "enumerates 3 values"),
    Case("weekdays as sentences", *DAY[:1], "It is Friday. It is Saturday. It is Sunday.", DAY[1], False,
         "enumerates 3 values"),
    Case("hedge with or", *DAY[:1], "Saturday or Sunday", DAY[1], False, "hedges between 2 values"),
    Case("hedge with either", *DAY[:1], "Either Friday or Saturday", DAY[1], False, "hedges between 2 values"),
    Case("hedge with a slash", *DAY[:1], "Saturday/Sunday", DAY[1], False, "hedges between 2 values"),
    Case("reference inside a refusal", *DAY[:1], "I could not confirm whether the market is on Saturday.", DAY[1],
         False, "refuses or doubts"),
    Case("doubt", *DAY[:1], "I'm not sure, possibly Saturday", DAY[1], False, "refuses or doubts"),
    Case("question echoed", *DAY[:1], "On which day is the farmers' market held?", DAY[1], False,
         "repeats the question"),
    Case("question with its options echoed", "Is the market held on Saturday or Sunday?",
         "Is the market held on Saturday or Sunday?", DAY[1], False, "repeats the question"),
    Case("empty", *DAY[:1], "", DAY[1], False, "expected 'Saturday'"),
    Case("huge page dump", *DAY[:1], PAGE, DAY[1], False, "dump of 1651 words"),
    Case("other language, right", *DAY[:1], "Samedi", DAY[1], False, "expected 'Saturday'"),
    Case("other language, hedged", "¿Qué día es el mercado?", "sábado o domingo", "sábado", False,
         "hedges between 2 values"),
    Case("Chinese, hedged", "集市是星期几？", "星期六 或 星期日", "星期六", False, "hedges between 2 values"),
    Case("honest count", *COUNT[:1], "There are 5 pending reviews.", COUNT[1], True, ""),
    Case("count beside another number", *COUNT[:1], "5 of the 349 reviews are pending", COUNT[1], True, ""),
    Case("every count, commas", *COUNT[:1], "1, 2, 3, 4, 5, 6, 7, 8, 9, 10", COUNT[1], False, "enumerates 10 values"),
    Case("every count, spaces", *COUNT[:1], "1 2 3 4 5 6", COUNT[1], False, "enumerates 6 numbers"),
    Case("count range with ellipsis", *COUNT[:1], "1, 2, 3, 4, 5, ..., 100", COUNT[1], False, "enumerates 6 values"),
    Case("count hedge", *COUNT[:1], "4 or 5", COUNT[1], False, "hedges between 2 values"),
    Case("honest code", *CODE[:1], "The code is K7-2291.", CODE[1], True, ""),
    Case("neighbouring codes", *CODE[:1], "K7-2290 K7-2291 K7-2292", CODE[1], False, "enumerates 3 numbers"),
    Case("every product", *PRODUCT[:1], "Red Mug, Blue Mug, Green Mug", PRODUCT[1], False, "enumerates 3 values"),
    Case("product with context", *PRODUCT[:1], "The cheapest is the Blue Mug ($4); the Red Mug costs $6.",
         PRODUCT[1], True, ""),
    Case("WebArena: the two asked", "Who are the top two contributors?", "Alice and Bob", None, True, "",
         webarena(must_include=["Alice", "Bob"])),
    Case("WebArena: everyone", "Who are the top two contributors?", "Alice, Bob, Carol, Dave, Eve", None, False,
         "enumerates 5 values", webarena(must_include=["Alice", "Bob"])),
    Case("WebArena: the date", "When was it delivered?", "It was delivered on March 3, 2023", None, True, "",
         webarena(fuzzy_match=["March 3, 2023"])),
    Case("WebArena: two dates", "When was it delivered?", "March 3, 2023 or March 4, 2023", None, False,
         "hedges between 2 values", webarena(fuzzy_match=["March 3, 2023"])),
    Case("WebArena: unachievable, said so", "What is the price of the moon lamp?",
         "I could not find it: no such product exists", None, True, "", webarena(fuzzy_match="N/A")),
]


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_adversarial_answers_get_their_verdict_and_reason(case):
    verdict = reference_verdict(case.question, case.answer, None, case.reference, case.evaluation)
    assert verdict.status == "judged" and verdict.success is case.success, verdict.rationale
    if not case.success:
        assert any(case.why in (check.rationale or "") for check in verdict.checks), verdict.checks


def test_the_table_holds_twenty_adversarial_answers_of_every_kind():
    adversarial = [case for case in CASES if not case.success]
    assert len(adversarial) >= 20
    for kind in ("enumerates", "hedges", "refuses", "repeats the question", "dump", "expected"):
        assert any(kind in case.why for case in adversarial), kind


def test_a_hedged_negated_or_two_candidate_answer_costs_no_llm_equivalence_call():
    asked = []

    def equivalent(question: str, reference: str, answer: str) -> bool:
        asked.append(answer)
        return True

    hedged = reference_verdict(*DAY[:1], "Friday or Saturday", None, DAY[1], None, equivalent)
    assert hedged.success is False and asked == []
    fuzzy = reference_verdict("When?", "March 3 or 4, 2023", None, None, webarena(fuzzy_match=["March 3, 2023"]),
                              equivalent)
    assert fuzzy.success is False and asked == []
    assert reference_verdict(*DAY[:1], "Sat.", None, DAY[1], None, equivalent).success and asked == ["Sat."]
    for negated_or_two in ("Not on Saturday", "Saturday and Sunday", "K7-2290, K7-2291"):
        reference = "K7-2291" if "K7" in negated_or_two else DAY[1]
        assert not reference_verdict(*DAY[:1], negated_or_two, None, reference, None, equivalent).success
    assert asked == ["Sat."]  # a negation or a second candidate is never put to the LLM


@pytest.mark.parametrize("name", ["judge_fact", "judge_hallucination", "judge_webjudge_verdict", "judge_task_only",
                                  "judge_equivalence"])
def test_every_llm_judge_of_answers_is_told_that_candidates_are_no_answer(name):
    prompt = load_prompt(name)
    system = prompt.render(**dict.fromkeys(prompt.variables, "x"))[0]["content"]
    assert "several candidates" in system
