"""The single-answer rule: an answer matches an expected value only when it commits to it.

Under RL a policy learns whatever a text match rewards; listing every candidate, or hedging between
some, contains the right one. So every judge that matches answers by text (reference answers in
stages/judge/reference.py, the exact verifier's answer facts in webgym/sites/verify.py) asks
`hedge_reason` first, and an answer that

1. enumerates: lists three or more distinct values of the expected kind (numbers and codes when the
   expected value has digits, words otherwise), more than the expected answer itself has ("1, 2, 3,
   ..., 100", "Monday, Tuesday, Saturday", "K7-2290 K7-2291 K7-2292"); two values joined by a comma
   or "and" stay allowed ("Paris, France", "March 18, 2024");
2. hedges: joins more values than expected with "or" ("either", "/" between words, "ou", "oder",
   "o", "или", "或"): "Saturday or Sunday", "12 or 13";
3. refuses or doubts: "I could not find ...", "not sure", "unable to" (an expected value quoted
   inside a refusal is no answer);
4. echoes the question: repeats most of its words and adds none;
5. dumps: runs over MAX_WORDS words (a page's text pasted as the answer)

fails, with the reason. Values are items between separators (commas, semicolons, lines, sentence
ends, "and", "or"); an item of more than a few words is a statement, not a value, and breaks a list,
so "It opens on Saturday, from 9 to 5, and closes on Sunday" still commits to one day.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

MAX_WORDS = 100
"""Longer answers are dumps, not answers (WebVoyager and WebArena answers are a sentence or a list)."""

_OR_WORDS = ("or", "either", "ou", "oder", "o", "или", "或", "或者", "oppure")
_AND_WORDS = ("and", "nor", "und", "et", "y", "и", "和")
_SEPARATOR = re.compile(
    r"(\n|;|\||,|、|，|…|\.{3}|\.(?=\s|$)|(?<=[^\W\d_])/(?=[^\W\d_])"
    r"|\s+(?:" + "|".join(_OR_WORDS + _AND_WORDS) + r")\s+|或者|或|和)", re.IGNORECASE)
"""Between values: line breaks, list punctuation, sentence ends, "/" between words, "and"/"or" words."""
_LIST_MARKER = re.compile(r"^\s*(?:[-*•·]|\(?\d{1,2}[.)])\s+", re.MULTILINE)
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_DATE_COMMA = re.compile(r"\b((?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.? \d{1,2}(?:st|nd|rd|th)?),(?= \d{4})")
"""The comma of "March 18, 2024": part of one date, not a separator between two values."""
_WORD = re.compile(r"\w+", re.UNICODE)
_REFUSAL = re.compile(
    r"\b(?:i|we)\s+(?:could\s*n[o']?t|can\s*n[o']?t|can't|couldn't|was\s+(?:not|unable)|am\s+(?:not|unable)|"
    r"did\s*n[o']?t|do\s*n[o']?t)\s+(?:\w+\s+){0,2}?(?:find|locate|determine|confirm|verify|access|know|see|tell)\b|"
    r"\bunable\s+to\b|\bnot\s+(?:sure|certain|able\s+to)\b|\bunsure\b|\bno\s+(?:information|results?|data)\b|"
    r"\b(?:cannot|can't|could\s+not)\s+be\s+(?:found|determined|confirmed|verified)\b|\bsorry\b", re.IGNORECASE)
_STOPWORDS = frozenset("a an the is are was were be of on in at to for from by with and or what which who when "
                       "where how many much does do did it its this that these those there their my me i you "
                       "your please find tell give show list".split())


@dataclass(frozen=True)
class _Item:
    """A piece of the answer between separators, and whether an "or" came before it."""

    text: str
    after_or: bool


def _normalised(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).casefold()
    return _DATE_COMMA.sub(r"\1", _THOUSANDS.sub("", _LIST_MARKER.sub("", text)))


def _items(text: str) -> list[_Item]:
    parts = _SEPARATOR.split(_normalised(text))
    items, after_or = [], False
    for i, part in enumerate(parts):
        if i % 2:  # a separator
            word = part.strip()
            after_or = after_or or word in (*_OR_WORDS, "/")
            continue
        value = part.strip(" \t\"'`()[]{}*:!?")
        if value and value not in ("etc", "and so on"):
            items.append(_Item(value, after_or))
            after_or = False
    return items


def _has_digit(text: str) -> bool:
    return any(ch.isdigit() for ch in text)


def _words(text: str) -> list[str]:
    return _WORD.findall(_normalised(text))


def _runs(items: list[_Item], short: int, digits: bool) -> list[list[_Item]]:
    """Maximal runs of consecutive short items; items of the other kind stay in a run but are not values."""
    runs, run = [], []
    for item in items:
        if len(_words(item.text)) > short:
            runs.append(run)
            run = []
        else:
            run.append(item)
    runs.append(run)
    return [[i for i in r if _has_digit(i.text) == digits] for r in runs]


def _digit_run(text: str) -> int:
    """The longest run of distinct tokens with digits separated only by spaces or list punctuation."""
    best, run = 0, set()
    for token in _normalised(text).split():
        if _has_digit(token):
            run.add(token.strip(",;.:()[]"))
            best = max(best, len(run))
        elif token.strip(",;") not in ("...", "…", "-", "–", *_OR_WORDS, *_AND_WORDS):
            run = set()
    return best


def _echoes(answer: str, question: str) -> bool:
    asked = {w for w in _words(question) if w not in _STOPWORDS}
    said = {w for w in _words(answer) if w not in _STOPWORDS}
    return bool(said) and said <= asked and len(said) >= max(3, 0.6 * len(asked))


def hedge_reason(answer: str, expected: Sequence[str], question: str | None = None) -> str | None:
    """Why `answer` does not commit to the value(s) `expected` asks for (module docstring), or None."""
    words = len(_words(answer))
    if words > MAX_WORDS:
        return f"the answer is a dump of {words} words (more than {MAX_WORDS}), not an answer"
    refusal = _REFUSAL.search(answer)
    if refusal and not any(_REFUSAL.search(value) for value in expected):  # "No results" may be the answer
        return f"the answer refuses or doubts ({refusal.group(0)!r}): it commits to no value"
    if question and _echoes(answer, question):
        return "the answer repeats the question"
    digits = any(_has_digit(value) for value in expected)
    allowed = sum(len([i for i in _items(value) if _has_digit(i.text) == digits]) or 1 for value in expected)
    short = max(3, max((len(_words(value)) for value in expected), default=1) + 2)
    for run in _runs(_items(answer), short, digits):
        values = list(dict.fromkeys(item.text for item in run))
        if len(values) > allowed and any(item.after_or for item in run[1:]):
            return f"the answer hedges between {len(values)} values ({_shown(values)}) where {allowed} is asked"
        if len(values) >= 3 and len(values) > allowed:
            return f"the answer enumerates {len(values)} values ({_shown(values)}) where {allowed} is asked"
    expected_tokens = max((_digit_run(value) for value in expected), default=0)
    tokens = _digit_run(answer)
    if digits and tokens >= 3 and tokens > expected_tokens + 1:
        return f"the answer enumerates {tokens} numbers or codes where {max(expected_tokens, 1)} is asked"
    return None


def _shown(values: list[str]) -> str:
    return ", ".join(values[:4]) + (", ..." if len(values) > 4 else "")
