"""Type-aware answer matching: does a free-text answer state the expected value, and only that value?

Both checkers that pay answers use it: the reference checker (stages/judge/reference.py) and the
exact verifier's answer facts (webgym/sites/verify.py). A text match that looks only for the
reference inside the answer pays "not 42", "41, 42", "42,000" and "Parisian"; under RL a policy
learns to write them. So the expected value's kind is read from the reference, and the answer is
scanned for values of that kind, in the spirit of WebArena-Verified's typed evaluators:

- kinds: `na` (the task cannot be done), `yes_no`, `date`, `money`, `number` (with its unit),
  `code` (identifiers and times: "K7-2291", "KX4821", "12:30"), `list`, `name` (a few words),
  `text` (anything longer);
- a value counts only whole: numbers are parsed with sign, thousands separators, decimals and
  scale ("42 million" is not 42, "3.5 stars" not 3, "-42" not 42), codes and words only at token
  boundaries ("K7-22910", "XK7-2291", "Parisian" hold no reference);
- the answer fails when it negates the value ("not 42", "K7-2291 is wrong"), when another value
  of the asked kind stands beside it as an alternative ("41, 42", "41 and 42", "42 or 24", "yes
  and no"; any other code of the same shape), when its unit is another known unit ("42 miles" for
  42 km, "€42" for $42), and, for `na`, when it asserts a value besides saying "does not exist";
- other surface forms pass: "2024-03-18", "18 March 2024", "March 18, 2024", "18/03/2024" (an
  ambiguous d/m/y reads month first, as on the US sites of WebArena); "$1,299.99", "1299.99";
  list items in any order unless order was asked; "Smith, John" for "John Smith"; case and
  accents folded; the value inside a sentence ("The price is $1,299.99.").

Values are compared, never guessed at: the hedging rule (webgym/hedging.py) still runs first for
enumerations, refusals and dumps, and the reference judge may ask an LLM when text does not match.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

KINDS = ("na", "yes_no", "date", "money", "number", "code", "list", "name", "text")
"""The kinds of expected value."""
MAX_CHARS = 2000
"""Longer answers fail unread: no benchmark answer is this long (the hedging rule allows 100 words),
and it bounds the scanners' work on adversarial text."""
_WINDOW = 200
"""How far around a value the join patterns look."""
_NEAR = 80
"""How far around a value the negation patterns look: a negation word and at most two words between
("not exactly the 42"); the shorter window keeps an answer of many values cheap."""

UNACHIEVABLE = re.compile(
    r"\b(?:n/?a|not applicable|not available|unachievable|impossible|cannot be (?:done|found|completed)|"
    r"does not exist|doesn't exist|no such|not possible)\b", re.I)
"""How an answer says the task cannot be done (WebArena's "N/A" reference)."""

_NA_REFERENCES = frozenset({"n/a", "na", "not applicable", "unachievable", "none"})
_YES = frozenset({"yes", "yeah", "yep", "true", "correct"})
_NO = frozenset({"no", "nope", "false", "incorrect"})
_MONTHS = {name: i + 1 for i, names in enumerate((
    "january jan", "february feb", "march mar", "april apr", "may", "june jun", "july jul",
    "august aug", "september sep sept", "october oct", "november nov", "december dec")) for name in names.split()}
_MONTH = r"(?P<{}>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<{}>\d{{1,2}})(?:st|nd|rd|th)?"
_DATES = [re.compile(p, re.I) for p in (
    r"(?<![\w.,/-])(?P<y>\d{4})[-/.](?P<m>\d{1,2})[-/.](?P<d>\d{1,2})(?![\w/-]|[.,]\d)",
    r"(?<![\w.,/-])(?P<a>\d{1,2})[/.](?P<b>\d{1,2})[/.](?P<y>\d{4})(?![\w/-]|[.,]\d)",
    r"(?<![\w-])" + _DAY.format("d") + r"\s+(?:of\s+)?" + _MONTH.format("mn") + r"(?:,?\s+(?P<y>\d{4}))?(?![\w-])",
    r"(?<![\w-])" + _MONTH.format("mn") + r"\s+" + _DAY.format("d") + r"(?:,?\s+(?P<y>\d{4}))?(?![\w-])",
)]
_CODE = re.compile(r"(?<![\w-])[a-z0-9]+(?:[-_/:#.][a-z0-9]+)*(?![\w]|[-_/:#]\w)")
_NUMBER_WITH_UNIT = re.compile(r"\d+(?:\.\d+)?(?:[a-z]+|%)")
_CURRENCY = {"$": "usd", "usd": "usd", "us$": "usd", "dollar": "usd", "dollars": "usd", "€": "eur", "eur": "eur",
             "euro": "eur", "euros": "eur", "£": "gbp", "gbp": "gbp", "¥": "jpy", "jpy": "jpy", "yen": "jpy"}
_NUMBER = re.compile(
    r"(?<![\w.,])(?P<sign>[-−](?=[$€£¥]?\d))?(?P<cur>[$€£¥]|us\$)?\s?"
    r"(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)(?![\d]|[.,]\d)"
    r"(?:\s?(?P<scale>thousand|million|billion|trillion|bn|k)\b)?"
    r"(?:\s?(?P<unit>%|[a-z°]+(?:\s(?:per|an|a)\s[a-z]+)?))?", re.I)
_SCALES = {"thousand": 1e3, "k": 1e3, "million": 1e6, "billion": 1e9, "bn": 1e9, "trillion": 1e12}
_UNITS = {alias: group for group, aliases in {
    "km": "km kms kilometer kilometers kilometre kilometres", "mi": "mi mile miles",
    "m": "m meter meters metre metres", "cm": "cm centimeter centimeters centimetre centimetres",
    "mm": "mm millimeter millimeters millimetre millimetres", "ft": "ft foot feet", "inch": "inch inches",
    "kg": "kg kgs kilogram kilograms kilo kilos", "g": "g gram grams", "lb": "lb lbs pound pounds",
    "l": "l liter liters litre litres", "ml": "ml milliliter milliliters millilitre millilitres",
    "s": "s sec secs second seconds", "min": "min mins minute minutes", "h": "h hr hrs hour hours",
    "day": "day days", "week": "week weeks", "month": "month months", "year": "year years yr yrs",
    "%": "% percent per cent", "star": "star stars", "kcal": "kcal cal calorie calories",
    "usd": "usd dollar dollars", "eur": "eur euro euros", "gbp": "gbp", "jpy": "jpy yen",
    "mph": "mph", "kmh": "kmh kph", "gb": "gb gigabyte gigabytes", "mb": "mb megabyte megabytes",
}.items() for alias in aliases.split()}
"""Known units by alias; a number followed by another known unit is another quantity."""
_NEGATION_BEFORE = re.compile(
    r"(?:\bnot|\bcannot|n't|\bnever|\bneither|\bnor|\bno longer|\bother than|\brather than|\binstead of|\bexcept|"
    r"\bexcluding|\bfar from|\bbesides|\bwrong|\bincorrect)\W*(?:\w+\W+){0,2}$", re.I)
_NEGATION_AFTER = re.compile(
    r"^\W*(?:\w+\W+){0,2}?(?:is|was|are|would be|seems)?\s*(?:wrong|incorrect|false|a mistake|mistaken|"
    r"(?:not |n't )(?:right|correct|it|the|true|valid)|(?:does|did)(?: not|n't) (?:match|fit|count|apply)|"
    r"ruled out|excluded|unlikely|doubtful)\b|^\s*[✗✘❌]", re.I)
_REFUTED_AFTER = re.compile(
    r"^\s*(?:\?+|[(:,–—-])\s*(?:(?:no|nope)(?=\s*(?:$|[.,;!)]))|wrong\b|incorrect\b|false\b)", re.I)
"""The value refuted right after it, across the punctuation that ends a clause ("42? No.", "42 (wrong)",
"42: incorrect", "42 - nope"); a "no" that begins a phrase ("42 (no tax)") refutes nothing."""
_ALL_BUT_BEFORE = re.compile(r"\b(?:anything|everything|all)\s+but\s*$", re.I)
""""Anything but 42": the clause split at "but" would leave nothing before the value."""
_CLAUSE_END = re.compile(r"[,;.!?\n:()]|\bbut\b|\bhowever\b", re.I)
_GAP_WORDS = frozenset("and or either nor maybe perhaps possibly probably likely it is it's its could be might also "
                       "then vs versus to the answer one between from else no actually rather wait i mean sorry "
                       "alternatively alternative option otherwise another".split())
"""Words that may stand between two alternatives ("41 or maybe 42", "from 41 to 42", "41, no wait, 42")."""
_JOINED_AFTER = r"^\s*(?:and|or|&|/|\n)\s*(?:(?:the|a|an)\s+)?(?P<other>\w+(?:[ -]\w+){{0,{}}})\s*(?:$|[,.;!?\n])"
_JOINED_BEFORE = (r"(?:^|[,.;:!?\n]|\b(?:is|are|was|were|on|in|at)\b)\s*(?:(?:the|a|an)\s+)?"
                  r"(?P<other>\w+(?:[ -]\w+){{0,{}}})\s*(?:and|or|&|/)\s*$")
"""Another short name joined to the reference by "and", "or", "&" or "/" ("Paris and Lyon"); a comma
alone is no join ("Paris, France")."""
_NOT_A_NAME = re.compile(r"(?:its|it|their|his|her|my|our|your|this|that|other|more|all|many|some|so|then|also|"
                         r"nearby|surroundings?|suburbs?|around)\b")
"""Words that open a phrase, not a rival name ("Paris and its suburbs", "Saturday and then ...")."""
_ORDER = re.compile(r"\b(?:in (?:\w+ )?order|ordered|sorted|rank(?:ed|ing)?|chronological|ascending|descending|"
                    r"from (?:the )?(?:first|oldest|newest|highest|lowest|earliest|latest|most|least))\b", re.I)


_PLAIN = str.maketrans({"–": "-", "—": "-", "−": "-", "‐": "-", "’": "'", "‘": "'", "“": '"', "”": '"',
                        "\u00a0": " "})


@dataclass(frozen=True)
class Match:
    """Whether the answer states the expected value (and only it), with the reason in words."""

    ok: bool
    reason: str
    at: int = -1
    """Where in the answer the value was found (list order), -1 when it was not."""
    definite: bool = False
    """A rejection no rewording can lift (a negation, a rival candidate, another unit): an LLM
    equivalence check is not asked. A value merely not found ("forty-two") is not definite."""


_OVERLONG = Match(False, f"the answer is longer than {MAX_CHARS} characters: no answer", definite=True)


@dataclass(frozen=True)
class _Value:
    """A value found in a text: its kind family, comparable key, span and unit."""

    family: str
    key: object
    start: int
    end: int
    unit: str | None = None
    shape: str = ""
    """A code's pattern of letters and digits ("K7-2291" -> "A9-9"): codes of one shape are rivals."""
    embedded: bool = False
    """A number read from inside a date (its day or year): it may match but never competes."""


def fold(text: str) -> str:
    """Case and accents folded, dashes, quotes and spaces made plain: the text every scanner reads
    (positions in a Match are positions in it)."""
    text = unicodedata.normalize("NFKC", text)
    text = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
    return text.translate(_PLAIN).casefold()


def order_asked(question: str | None) -> bool:
    """Whether a question asks for its items in order ("sorted", "from the newest", "ranked")."""
    return bool(question and _ORDER.search(question))


def _dates(text: str) -> list[_Value]:
    """Dates in ISO, d/m/y or m/d/y, "18 March 2024" and "March 18, 2024" forms, the year optional in
    the last two."""
    found: list[_Value] = []
    taken: list[tuple[int, int]] = []
    for pattern in _DATES:
        for m in pattern.finditer(text):
            if any(m.start() < e and s < m.end() for s, e in taken):
                continue
            groups = m.groupdict()
            year = int(groups["y"]) if groups.get("y") else None
            if groups.get("mn"):
                month, day = _MONTHS[groups["mn"].lower()], int(groups["d"])
            elif groups.get("a"):
                a, b = int(groups["a"]), int(groups["b"])
                month, day = (b, a) if a > 12 else (a, b)  # month first when both could be months
            else:
                month, day = int(groups["m"]), int(groups["d"])
            if 1 <= month <= 12 and 1 <= day <= 31:
                taken.append((m.start(), m.end()))
                found.append(_Value("date", (year, month, day), m.start(), m.end()))
    return sorted(found, key=lambda v: v.start)


def date_keys(text: str) -> list[tuple[int | None, int, int]]:
    """The dates `text` names, as (year or None, month, day), in its order: "12/30/2016" and "December 30, 2016"
    give the same key, so a task's date can be found on a page that writes it otherwise."""
    return [value.key for value in _dates(fold(text))]


_MONTH_NAMES = ("January February March April May June July August September October November December").split()


def dates_in_words(text: str) -> str:
    """`text` with each date written in digits ("12/26/2016", "2016-12-26") written in words ("December 26,
    2016"), as a page's calendar and most prose show it: the month by its name, the day and year as numbers. So a
    text's words can match a month's title and a day's link, and "12/26/2016" is not the number 12."""
    for value in reversed(_dates(text)):
        if not any(c.isalpha() for c in text[value.start:value.end]):
            year, month, day = value.key
            text = f"{text[:value.start]}{_MONTH_NAMES[month - 1]} {day}, {year}{text[value.end:]}"
    return text


def _masked(text: str, values: Sequence[_Value]) -> str:
    for v in values:
        text = text[:v.start] + " " * (v.end - v.start) + text[v.end:]
    return text


def _shape(token: str) -> str:
    return re.sub(r"[a-z]+", "A", re.sub(r"\d+", "9", token))


def _codes(text: str) -> list[_Value]:
    """Tokens mixing letters and digits, or digits joined by - / : # (not plain numbers, not 42km)."""
    found = []
    for m in _CODE.finditer(text):
        token = m.group(0).rstrip(".")
        if (not re.search(r"\d", token) or not re.search(r"[a-z]|[-_/:#]", token)
                or _NUMBER_WITH_UNIT.fullmatch(token)):
            continue
        found.append(_Value("code", token, m.start(), m.start() + len(token), shape=_shape(token)))
    return found


def _unit(word: str | None) -> str | None:
    return _UNITS.get(word.split()[0]) if word else None


def _numbers(text: str) -> list[_Value]:
    """Numbers with sign, currency, scale and a known unit; an unknown word after one is no unit."""
    found = []
    for m in _NUMBER.finditer(text):
        value = float(m.group("num").replace(",", "")) * _SCALES.get((m.group("scale") or "").lower(), 1)
        if m.group("sign"):
            value = -value
        unit = m.group("unit")
        currency = _CURRENCY.get((m.group("cur") or "").lower()) or (_CURRENCY.get(unit.lower()) if unit else None)
        end = (m.end() if unit and (currency or _unit(unit.lower()))
               else m.end("scale") if m.group("scale") else m.end("num"))
        known = currency or _unit(unit.lower() if unit else None)
        start = m.start() if m.group("sign") or m.group("cur") else m.start("num")
        found.append(_Value("money" if currency else "number", value, start, end, unit=known))
    return found


def _polarities(text: str) -> list[_Value]:
    return [_Value("yes_no", m.group(0) in _YES, m.start(), m.end())
            for m in re.finditer(r"\b(?:" + "|".join(_YES | _NO) + r")\b", text)]


def _values(text: str) -> dict[str, list[_Value]]:
    """Every value of every scalar family in a folded text: dates first, then codes, then numbers
    (each scanner reads what the earlier ones left)."""
    dates = _dates(text)
    rest = _masked(text, dates)
    codes = _codes(rest)
    numbers = _numbers(_masked(rest, codes))
    embedded = [_Value("number", float(part), d.start, d.end, embedded=True)
                for d in dates for part in (d.key[0], d.key[2]) if part is not None]
    return {"date": dates, "code": codes, "number": numbers + embedded, "yes_no": _polarities(text)}


def _sole(text: str) -> _Value | None:
    """The one value a short text consists of (punctuation and its unit aside), or None."""
    values = _values(text)
    for family in ("date", "number", "code"):
        own = [v for v in values[family] if not v.embedded]
        if len(own) == 1 and not re.search(r"\w", _masked(text, own)):
            return own[0]
    return None


def answer_kind(reference: str) -> str:
    """The kind of value a reference answer is (one of KINDS)."""
    text = fold(reference).strip(" \"'`.!?")
    if text in _NA_REFERENCES:
        return "na"
    if text in _YES | _NO:
        return "yes_no"
    sole = _sole(text)
    if sole is not None:
        return sole.family
    if len(_items(text)) > 1:
        return "list"
    words = re.findall(r"\w+", text)
    return "name" if len(words) <= 4 and not re.search(r"\d", text) else "text"


def _items(text: str) -> list[str]:
    return [item.strip(" \"'`.") for item in re.split(r"\s*(?:[,;\n|]|\band\b)\s*", text) if item.strip(" \"'`.")]


def _negated(text: str, start: int, end: int) -> bool:
    preceding, following = text[max(0, start - _NEAR):start], text[end:end + _NEAR]
    before, after = _CLAUSE_END.split(preceding)[-1], _CLAUSE_END.split(following)[0]
    return bool(_NEGATION_BEFORE.search(before) or _NEGATION_AFTER.search(after)
                or _REFUTED_AFTER.search(following) or _ALL_BUT_BEFORE.search(preceding))


def _alternative(text: str, a: _Value, b: _Value) -> bool:
    """Whether two values stand side by side as alternatives: only separators and hedge words between."""
    first, second = (a, b) if a.start < b.start else (b, a)
    gap = text[first.end:second.start]
    words = re.findall(r"[^\W\d_]+'?[a-z]*", gap)
    return not re.search(r"\d", gap) and len(words) <= 5 and all(w in _GAP_WORDS for w in words)


def _equal(family: str, found: object, expected: object) -> bool:
    if family == "date":
        (y1, m1, d1), (y2, m2, d2) = found, expected  # type: ignore[misc]
        return (m1, d1) == (m2, d2) and (y1 is None or y2 is None or y1 == y2)
    if family in ("number", "money"):
        return abs(float(found) - float(expected)) <= 1e-9 * max(1.0, abs(float(expected)))  # type: ignore[arg-type]
    return found == expected


def _scalar(answer: str, expected: _Value, allowed: Sequence[_Value], reference: str) -> Match:
    family = "number" if expected.family == "money" else expected.family
    found = _values(answer)[family]
    hits = [v for v in found if _equal(family, v.key, expected.key)]
    shown = _show(expected)
    if not hits:
        return Match(False, f"the answer does not state {shown}: expected {reference!r}")
    if any(_negated(answer, v.start, v.end) for v in hits):
        return Match(False, f"the answer negates {shown}", definite=True)
    if expected.unit and all(v.unit and v.unit != expected.unit for v in hits):
        return Match(False, f"the answer gives {shown} in another unit ({hits[0].unit})", definite=True)
    others = [v for v in found if not v.embedded and not any(_equal(family, v.key, a.key) for a in allowed)
              and not _negated(answer, v.start, v.end)]
    for other in others:
        rival = (family == "code" and other.shape == expected.shape) or any(
            _alternative(answer, hit, other) and (other.unit == hit.unit or not other.unit or not hit.unit)
            for hit in hits)
        if rival:
            named = answer[other.start:other.end]
            return Match(False, f"the answer names another candidate ({named}) besides {shown}", definite=True)
    return Match(True, f"the answer states {shown}", hits[0].start)


def _show(value: _Value) -> str:
    if value.family == "date":
        year, month, day = value.key  # type: ignore[misc]
        return f"{year or '????'}-{month:02d}-{day:02d}"
    if value.family in ("number", "money"):
        return f"{value.key:g}" + (f" {value.unit}" if value.unit else "")
    return str(value.key)


def _words(answer: str, folded: str, kind: str, reference: str, allowed: Sequence[str]) -> Match:
    """A name or text at word boundaries; a name of several words also as "Last, First"."""
    words = re.findall(r"\w+", folded)
    if not words:
        return Match(False, "the reference has no words")
    forms = [r"\W+".join(map(re.escape, words))]
    if kind == "name" and len(words) >= 2:
        forms.append(re.escape(words[-1]) + r"\s*,\s*" + r"\W+".join(map(re.escape, words[:-1])))
    hits = [m for form in forms for m in re.finditer(rf"(?<!\w){form}(?!\w)", answer)]
    if not hits:
        return Match(False, f"the answer does not state it: expected {reference!r}")
    if any(_negated(answer, m.start(), m.end()) for m in hits):
        return Match(False, f"the answer negates {reference!r}", definite=True)
    if kind == "name":
        accepted = {" ".join(re.findall(r"\w+", fold(item))) for item in allowed} | {" ".join(words)}
        for m in hits:
            after, before = answer[m.end():m.end() + _WINDOW], answer[max(0, m.start() - _WINDOW):m.start()]
            for joined in (re.search(_JOINED_AFTER.format(len(words)), after),
                           re.search(_JOINED_BEFORE.format(len(words)), before)):
                other = joined and " ".join(re.findall(r"\w+", joined.group("other")))
                if other and other not in accepted and not re.search(r"\d", other) and not _NOT_A_NAME.match(other):
                    why = f"the answer names another candidate ({other}) besides {reference!r}"
                    return Match(False, why, definite=True)
    return Match(True, f"the answer states {reference!r}", min(m.start() for m in hits))


def _yes_no(answer: str, reference: str) -> Match:
    said = _polarities(answer)
    wanted = fold(reference).strip(" \"'`.!?") in _YES
    if not said:
        return Match(False, f"the answer says neither yes nor no (expected {reference!r})")
    if _negated(answer, said[0].start, said[0].end):
        return Match(False, f"the answer negates {answer[said[0].start:said[0].end]!r}", definite=True)
    if said[0].key != wanted:
        return Match(False, f"the answer says {answer[said[0].start:said[0].end]!r}, not {reference!r}", definite=True)
    if any(v.key != wanted and _alternative(answer, said[0], v) for v in said[1:]):
        return Match(False, "the answer says both yes and no", definite=True)
    return Match(True, f"the answer says {reference!r}", said[0].start)


def _unachievable(answer: str) -> Match:
    if not UNACHIEVABLE.search(answer):
        return Match(False, "the answer does not say the task cannot be done")
    values = _values(answer)
    asserted = [v for v in values["number"] if v.family == "money" or v.unit] + values["date"]
    if asserted or re.search(r"\b(?:is|are|was|were|costs?|equals?)\s+[$€£]?\d", answer):
        return Match(False, "the answer says the task cannot be done but also asserts a value", definite=True)
    return Match(True, "the answer says the task cannot be done", 0)


def match_answer(answer: str, reference: str, *, kind: str | None = None, allowed: Sequence[str] = (),
                 ordered: bool = False) -> Match:
    """Whether `answer` states `reference` (module docstring). `kind` overrides the inferred kind
    (`number` for the verifier's number_eq); `allowed` names the other values the answer may also
    state without them counting as rival candidates (the other items a task asks for); `ordered`
    asks list items in the reference's order."""
    if len(answer) > MAX_CHARS:
        return _OVERLONG
    a, r = fold(answer), fold(reference).strip(" \"'`.!?")
    kind = kind or answer_kind(reference)
    if kind not in KINDS:
        raise ValueError(f"unknown answer kind {kind!r} (kinds: {', '.join(KINDS)})")
    if kind == "na":
        return _unachievable(a)
    if kind == "yes_no":
        return _yes_no(a, reference)
    if kind == "list":
        items = _items(r)
        others = [*items, *allowed]
        matches = [match_answer(answer, item, allowed=others) for item in items]
        failed = [m for m in matches if not m.ok]
        if failed:
            return failed[0]
        if ordered and [m.at for m in matches] != sorted(m.at for m in matches):
            return Match(False, f"the answer does not list {reference!r} in the asked order")
        return Match(True, f"the answer states every item of {reference!r}", min(m.at for m in matches))
    if kind in ("date", "number", "money", "code"):
        expected = _sole(r)
        if expected is not None and (kind == expected.family or {kind, expected.family} <= {"number", "money"}):
            alternatives = [v for v in map(_sole, (fold(x) for x in allowed)) if v is not None]
            return _scalar(a, expected, [expected, *alternatives], reference)
        if kind == "number":
            return Match(False, f"the reference {reference!r} is not a number")
    return _words(a, r, kind, reference, allowed)


def exact_answer(answer: str, reference: str) -> Match:
    """Whether the whole answer is the reference: equal once folded, or one value equal to it."""
    if len(answer) > MAX_CHARS:
        return _OVERLONG
    a, r = (fold(x).strip(" \"'`.!?") for x in (answer, reference))
    if " ".join(a.split()) == " ".join(r.split()):
        return Match(True, "the answer is exactly the reference", 0)
    said, expected = _sole(a), _sole(r)
    if said is None or expected is None:
        return Match(False, f"the answer is not exactly {reference!r}")
    same_family = said.family == expected.family or {said.family, expected.family} == {"number", "money"}
    if same_family and _equal(expected.family, said.key, expected.key) \
            and (not said.unit or not expected.unit or said.unit == expected.unit):
        return Match(True, f"the answer is exactly {_show(expected)}", 0)
    return Match(False, f"the answer is not exactly {reference!r}")

