"""Reference-answer judging: the source benchmark's own answer decides when it is authoritative.

WebArena eval blocks: `string_match` with exact_match (the whole answer is the value),
must_include (each item stated, at token boundaries) and fuzzy_match (its "N/A" case means the
task is unachievable and the agent must say so), `url_match` against the final URL, and
`program_html`, which needs the live site and is reported as not evaluable. Every text comparison
is the shared type-aware matcher (webgym/answers.py): a number, date, code, name or list is found
whole, not negated and without a rival candidate beside it.
WebVoyager's "possible" answers are examples, not gold: they defer to the other judges.
An optional `equivalent(question, reference, answer)` (an LLM check) settles fuzzy matches where
text found no value ("forty-two"); never a negation or a second candidate the matcher rejected.

Before any match, the single-answer rule (webgym/hedging.py) fails an answer that enumerates
candidates, hedges between values, refuses, echoes the question or dumps a page where a value is
asked: containment would reward it, and a policy trained on that reward learns to list everything.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, urlsplit

from schemas.judgments import FactVerdict
from webgym.answers import exact_answer, match_answer, order_asked
from webgym.hedging import hedge_reason

Equivalent = Callable[[str, str, str], bool | None]


@dataclass(frozen=True)
class ReferenceVerdict:
    status: str
    """judged, or not_evaluable (never a success)."""
    success: bool
    checks: list[FactVerdict] = field(default_factory=list)
    rationale: str = ""


def _judged(question: str, reference: str, answer: str, equivalent: Equivalent | None,
            allowed: Sequence[str] = ()) -> tuple[bool, str]:
    """Text first; the LLM check only where text found no value and rejected nothing for certain (a
    negation or a second candidate is never asked, so no model can talk the reward into paying it)."""
    match = match_answer(answer, reference, allowed=allowed, ordered=order_asked(question))
    verdict = None if match.ok or match.definite or equivalent is None else equivalent(question, reference, answer)
    return (verdict, "LLM equivalence") if verdict is not None else (match.ok, match.reason)


def _url_matches(final_url: str | None, reference_urls: str) -> tuple[bool, str]:
    if not final_url:
        return False, "no final URL recorded"

    def key(url: str) -> tuple[str, frozenset]:
        parts = urlsplit(re.sub(r"^__[A-Z_]+__", "http://placeholder", url.strip()))
        return parts.path.rstrip("/"), frozenset(parse_qsl(parts.query))

    final_path, final_query = key(final_url)
    for reference in reference_urls.split(" |OR| "):
        path, query = key(reference)
        if final_path == path and query <= final_query:
            return True, f"final URL matches {reference}"
    return False, f"final URL {final_url} is not {reference_urls}"


def _webarena(evaluation: dict, question: str, answer: str, final_url: str | None,
              equivalent: Equivalent | None) -> ReferenceVerdict:
    types = evaluation.get("eval_types") or []
    if "program_html" in types:
        return ReferenceVerdict("not_evaluable", False, rationale="program_html checks need the live site")
    checks: list[FactVerdict] = []
    references = evaluation.get("reference_answers") or {}
    if "string_match" in types:
        fuzzy = references.get("fuzzy_match")
        expected = [str(item) for item in [*(references.get("must_include") or []),
                                           *(fuzzy if isinstance(fuzzy, list) else [])]]
        reason = hedge_reason(answer, expected, question) if expected else None
        if reason:
            checks.append(FactVerdict(fact="answer commits to the asked value(s)", success=False, rationale=reason))
            equivalent = None  # no LLM call for an answer the rule already failed
        if "exact_match" in references:
            match = exact_answer(answer, str(references["exact_match"]))
            checks.append(FactVerdict(fact=f"answer is exactly {references['exact_match']!r}", success=match.ok,
                                      rationale=match.reason))
        ordered = order_asked(question)
        for item in references.get("must_include") or []:
            match = match_answer(answer, str(item), allowed=expected, ordered=ordered)
            checks.append(FactVerdict(fact=f"answer includes {item!r}", success=match.ok, rationale=match.reason))
        if fuzzy == "N/A":
            match = match_answer(answer, "N/A", kind="na")
            checks.append(FactVerdict(fact="answer says the task cannot be done", success=match.ok,
                                      rationale=match.reason))
        elif fuzzy:
            for item in fuzzy:
                ok, why = _judged(question, str(item), answer, equivalent, expected)
                checks.append(FactVerdict(fact=f"answer means {item!r}", success=ok, rationale=why))
    if "url_match" in types:
        ok, why = _url_matches(final_url, str(evaluation.get("reference_url") or ""))
        checks.append(FactVerdict(fact=f"final URL is {evaluation.get('reference_url')}", success=ok, rationale=why))
    if not checks:
        return ReferenceVerdict("not_evaluable", False, rationale=f"no checkable eval type in {types}")
    success = all(c.success for c in checks)
    failed = [c.fact for c in checks if not c.success]
    return ReferenceVerdict("judged", success, checks, "all checks hold" if success else "failed: " + "; ".join(failed))


def reference_verdict(question: str, answer: str | None, final_url: str | None, reference_answer: str | None,
                      evaluation: str | None, equivalent: Equivalent | None = None) -> ReferenceVerdict | None:
    """The verdict of the source's reference, or None when it has none that is authoritative."""
    block = json.loads(evaluation) if evaluation else {}
    answer = answer or ""
    if isinstance(block, dict) and block.get("eval_types"):
        return _webarena(block, question, answer, final_url, equivalent)
    if not reference_answer or (isinstance(block, dict) and block.get("answer_type") == "possible"):
        return None
    reason = hedge_reason(answer, [reference_answer], question)
    if reason:
        ok, why = False, reason
    else:
        ok, why = _judged(question, reference_answer, answer, equivalent)
    check = FactVerdict(fact=f"answer matches {reference_answer!r}", success=ok, rationale=why)
    return ReferenceVerdict("judged", ok, [check], why)
