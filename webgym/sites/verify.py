"""The exact verifier: judges an episode on a synthetic site from its recorded final state.

Success is read from the state snapshot the site server returned at the end of the episode (the
`final_state` of a trajectory) and, for question goals, from the agent's answer; never from
pixels. Every fact's check (a JSON condition in the rubric, see tasks.py) is evaluated on its own,
so the verdicts say which fact failed: a wrong answer, a missing filter, an extra item in the cart.
It needs neither the browser, nor the server, nor the spec. An answer fact also obeys the
single-answer rule (webgym/hedging.py): an answer that lists or hedges between candidates fails it
even when one of them is right, since `contains` alone would reward "Monday ... Saturday ... Sunday".
Its eq, contains, number_eq and contains_all checks compare with the type-aware answer matcher
(webgym/answers.py), not as substrings: "not K7-2291", "K7-2290, K7-2291" and "K7-22910" fail a
check for K7-2291, "$1,299.99" passes one for 1299.99. The rubric's other answer values may appear
beside each one (a goal asking for two values is answered "7; 25").
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from schemas.judgments import FactVerdict, GroupVerdict
from schemas.rubric import Rubric
from webgym.answers import match_answer
from webgym.hedging import hedge_reason
from webgym.sites.expr import LEFT_KEYS, Compiler, Env, SpecError, freeze, thaw


@dataclass
class Verdict:
    """The verifier's judgment, with per-group and per-fact verdicts shaped like the judge's."""

    success: bool
    reward: float
    groups: list[GroupVerdict]
    rationale: str


def _environment(snapshot: dict[str, Any], answer: str | None) -> tuple[Compiler, Env]:
    names = sorted(snapshot.get("state") or {})
    values = tuple(freeze(snapshot["state"][name]) for name in names)
    return (Compiler({name: i for i, name in enumerate(names)}, allow_answer=True),
            Env(values, snapshot.get("page"), answer=answer))


MATCHED_OPS = {"eq": None, "contains": None, "number_eq": "number", "contains_all": "list"}
"""Answer operators the matcher decides, with the kind they ask (None: read from the value)."""


def _answer_fact(fact: str, condition: dict[str, Any], answer: str | None, allowed: list[str]) -> FactVerdict:
    """Whether the answer commits to (webgym/hedging.py) and states (webgym/answers.py) the condition's value(s)."""
    value, kind = condition["value"], MATCHED_OPS[condition["op"]]
    expected = f"expected {condition['op']} {json.dumps(value, ensure_ascii=False)}"
    if not answer:
        return FactVerdict(fact=fact, success=False, rationale=f"no answer was given; {expected}")
    reason = hedge_reason(answer, _expected(condition))
    if reason:
        return FactVerdict(fact=fact, success=False, rationale=f"{reason}; {expected}")
    reference = ", ".join(map(str, value)) if isinstance(value, list) else str(value)
    match = match_answer(answer, reference, kind=kind, allowed=allowed)
    return FactVerdict(fact=fact, success=match.ok, rationale=f"{match.reason}; {expected}")


def _fact(compiler: Compiler, env: Env, fact: str, check: str, allowed: list[str]) -> FactVerdict:
    try:
        condition = json.loads(check)
        condition.pop("evidence", None)
        test = compiler.condition(condition, "check")
        side = next(k for k in LEFT_KEYS if k in condition)
        left = compiler.expr(condition["expr"] if side == "expr" else {side: condition[side]}, "check")
    except (json.JSONDecodeError, SpecError, StopIteration) as error:
        return FactVerdict(fact=fact, success=None, rationale=f"not evaluable: {error}")
    if side == "answer" and condition["op"] in MATCHED_OPS and not isinstance(condition.get("value"), dict):
        return _answer_fact(fact, condition, env.answer, allowed)
    held = bool(test.fn(env))
    name = condition[side] if side in ("var", "param") else side
    expected = condition["op"] + (f" {json.dumps(condition['value'], ensure_ascii=False)}" if "value" in condition else "")
    seen = json.dumps(thaw(left.fn(env)), ensure_ascii=False)
    reason = hedge_reason(env.answer, _expected(condition)) if held and side == "answer" and env.answer else None
    if reason:
        return FactVerdict(fact=fact, success=False, rationale=f"{reason}; expected {expected}")
    return FactVerdict(fact=fact, success=held, rationale=f"{name} is {seen}; expected {expected}")


def _expected(condition: dict[str, Any]) -> list[str]:
    """The value(s) an answer condition asks for: all of a contains_all list, else one."""
    value = condition.get("value")
    if isinstance(value, list):
        return [str(v) for v in value] if condition["op"] == "contains_all" else [str(value[0])] if value else []
    return [] if value is None else [str(value)]


def _answer_values(rubric: Rubric) -> list[str]:
    """Every value the rubric's answer checks ask for: an answer may state them all."""
    values = []
    for check in (c for group in rubric.groups for c in group.checks or []):
        try:
            condition = json.loads(check)
        except json.JSONDecodeError:
            continue
        if isinstance(condition, dict) and "answer" in condition and not isinstance(condition.get("value"), dict):
            values += _expected({"op": "contains_all", "value": condition.get("value")})
    return values


def verify(rubric: Rubric | dict[str, Any], final_state: dict[str, Any] | str | None,
           answer: str | None = None) -> Verdict:
    """Judge a final state (snapshot dict or its JSON) and answer against a rubric with checks; an answer
    that is not text (None, or NaN read from the lake) is no answer."""
    rubric = Rubric.model_validate(rubric)
    answer = answer if isinstance(answer, str) else None
    snapshot = json.loads(final_state) if isinstance(final_state, str) else final_state
    allowed = _answer_values(rubric)
    groups: list[GroupVerdict] = []
    for group in rubric.groups:
        if snapshot is None or not group.checks or len(group.checks) != len(group.facts):
            reason = "no final state was recorded" if snapshot is None else "the rubric has no exact checks"
            facts = [FactVerdict(fact=f, success=None, rationale=f"not evaluable: {reason}") for f in group.facts]
        else:
            compiler, env = _environment(snapshot, answer)
            facts = [_fact(compiler, env, fact, check, allowed) for fact, check in zip(group.facts, group.checks)]
        groups.append(GroupVerdict(description=group.description, success=all(f.success is True for f in facts),
                                   facts=facts))
    failed = [f.fact for g in groups for f in g.facts if f.success is not True]
    success = not failed and bool(groups)
    rationale = "every fact holds" if success else "failed: " + "; ".join(failed)
    return Verdict(success=success, reward=1.0 if success else 0.0, groups=groups, rationale=rationale)
