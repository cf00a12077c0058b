"""What a task text asks for beyond what sentence embeddings see, so that dedup keeps apart tasks that
read alike but are different: "the last 5 pending orders" and "the last 5 completed orders", "the
nearest Wendy's" and "the nearest McDonald's", "March 2023" and "mid-January 2023", "the colleges in
Pittsburgh" and "those other than Pittsburgh", "a white desk" and "a white computer desk".

A text's constraints are its numbers (digits, number words and ordinals, as values), the kinds of
constraint words it uses (most / least / more / less / not, so "over 100" and "more than 100" agree
but "cheapest" and "most expensive" do not) and its content words: what is left after function
words, request verbs ("find", "look up", "show me"), filler nouns that re-wordings add or drop
("information", "page", "option"; WebArena-Verified's "title", "sorted", "route", "total",
"settings", "date", "in the current repository"), constraint and number words, and any of these
with one letter too many ("Telll me", "durning"), stemmed. Two tasks agree when their numbers and
kinds are equal and every content word of one is in the other, up to a one- or two-letter typo
("millage" / "mileage") or an acronym ("HD" / "hard drive"), leaving out the words of either task's
website ("on kbb", "on Fox Sports" for foxsports.com).

`task_core` is the part of a text that says what to do: answer-format instructions appended by
re-worded releases ("Return the value as a number (e.g., 10.99) only, ...", "(Use the OSRM direction
service.)", "in DD format", "Please round to the nearest whole number", WebArena-Verified) are left
out, and numeric dates read as words ("6/12/2023" as "June 12, 2023"), so a re-wording that only
pins the answer's format is the same task.
"""

from __future__ import annotations

import re
import unicodedata
import urllib.parse
from dataclasses import dataclass
from functools import lru_cache

from webgym.answers import dates_in_words

_TOKEN = re.compile(r"\d+(?:[.,]\d+)*\+?|[^\W\d_]+")
_PHRASES = (("at least", "more"), ("at most", "less"), ("no more than", "less"), ("no less than", "more"),
            ("no fewer than", "more"), ("a minimum of", "more"), ("minimum of", "more"), ("a maximum of", "less"),
            ("maximum of", "less"), ("or more", "more"), ("or higher", "more"), ("or above", "more"),
            ("or less", "less"), ("or fewer", "less"), ("or lower", "less"), ("or below", "less"), ("up to", "less"),
            ("other than", "not"), ("except for", "not"), ("look up", "find"), ("look for", "find"),
            ("search for", "find"), ("show me", "find"), ("find out", "find"), ("check out", "find"),
            ("go to", "find"), ("make sure", "ensure"), ("model years", "years"), ("model year", "year"),
            ("marked as", ""))
_PHRASE = re.compile(r"\b(" + "|".join(re.escape(p) for p, _ in _PHRASES) + r")\b")
_PHRASE_OF = dict(_PHRASES)

_CONSTRAINT_WORDS = {
    "max": "most highest largest biggest longest latest newest best maximum max top greatest fastest heaviest",
    "min": "cheapest lowest least fewest smallest shortest earliest oldest worst minimum min slowest lightest",
    "more": "over more above greater exceeding higher larger bigger longer later after newer faster heavier",
    "less": "under less below fewer lower smaller shorter earlier before older cheaper slower lighter within",
    "not": "not no without never except excluding exclude non",
}
_KIND_OF = {word: kind for kind, words in _CONSTRAINT_WORDS.items() for word in words.split()}
_DIMENSIONS = {
    "price": "cheapest cheaper", "time": "earliest latest newest oldest earlier later newer older",
    "length": "shortest longest shorter longer", "size": "largest biggest smallest larger bigger smaller",
    "speed": "fastest slowest faster slower", "weight": "heaviest lightest heavier lighter",
}
_DIMENSION_OF = {word: dimension for dimension, words in _DIMENSIONS.items() for word in words.split()}
"""What a constraint word measures, where it says: 'the cheapest' and 'the earliest' are both a minimum,
of different things ('the lowest' and 'the most' say nothing of what)."""

_NUMBER_WORDS = {word: str(value) for value, words in enumerate((
    "zero", "first", "two second", "three third", "four fourth", "five fifth", "six sixth", "seven seventh",
    "eight eighth", "nine ninth", "ten tenth", "eleven eleventh", "twelve twelfth", "thirteen", "fourteen", "fifteen",
    "sixteen", "seventeen", "eighteen", "nineteen", "twenty twentieth")) for word in words.split()}
_NUMBER_WORDS.update({"thirty": "30", "forty": "40", "fifty": "50", "sixty": "60", "seventy": "70", "eighty": "80",
                      "ninety": "90", "hundred": "100", "thousand": "1000"})
_ORDINAL_SUFFIXES = frozenset("st nd rd th".split())

_MONTHS = {"jan": "january", "feb": "february", "mar": "march", "apr": "april", "jun": "june", "jul": "july",
           "aug": "august", "sep": "september", "sept": "september", "oct": "october", "nov": "november",
           "dec": "december"}

_FUNCTION_WORDS = frozenset("""
a an the of to in on for with by at from and or nor but is are be was were been being am it its this that these
those which what who whom whose where when how why i me my mine we us our ours you your yours he him his she her
they them their theirs there here as if then than so such also do does did doing done have has had having will
would should could can may might must shall into onto about up out off just only any some all each every both
either neither another same own very too via per s t re ll ve d m o y please thanks thank kindly while also
additionally further furthermore moreover finally then next once again ensure ensuring sure whether one ones
among between through inclusive
""".split())
_REQUEST_WORDS = frozenset("""
find finding search searching look looking locate locating identify identifying discover discovering explore
exploring browse browsing get getting check checking see seeing view viewing show showing display displaying list
listing tell give provide providing report go going navigate navigating visit visiting open access obtain retrieve
determine figure know want need like help let use using note select choose pick return generate preview pull
present presents checkout compare
""".split())
_FILLER_WORDS = frozenset("""
information info detail details page pages option options result results website websites site sites web webpage
online item items listing listings price prices priced cost color colour pair feature features budget specific
specifically available availability currently relevant respective thing things way current discussion called
status exist project repository repo product products variant appropriate configuration keyword name names during
date dates title titles titled sort sorted sorting route routes map maps total setting settings attribute attributes
source com org net www username usernames nickname nicknames
""".split())
_CANONICAL = {"reserve": "book", "purchase": "buy", "bookmark": "save", "contrast": "compare", "mark": "set",
              "change": "set", "make": "set", "subreddit": "forum", "reddit": "forum", "repo": "repository",
              "fulfill": "complete", "fulfil": "complete", "full": "complete", "around": "near", "far": "distance",
              "walkway": "walk"}
_ANSWER_FORMAT = re.compile(
    r"\s*\((?:use|you can)\b[^)]*\)|\s*\bin [a-z]{1,4}(?::[a-z]+)? format\b"
    r"|[.?,]?\s*\bplease round to the nearest whole number\b"
    r"|(?:[.?]\s*|\s+)\b(?:Return (?:the value|the date|the url|the list|a list|an object|a boolean|a number|true)\b"
    r"|Use \"\w+\" for\b).*$", re.I | re.S)
"""Answer-format instructions: asides on tools or permissions or on the answer's format ('in DD format',
'please round ...'), and a closing 'Return the value as ...' or 'Use "hotel" for the name ...' sentence
(what to do comes before them; a text that starts with 'Return the date ...' asks for it)."""


def task_core(text: str) -> str:
    """What a task text asks to do, without its answer-format instructions and with numeric dates as
    words (module docstring)."""
    return dates_in_words(_ANSWER_FORMAT.sub("", text).strip() or text)


_SKIP = _FUNCTION_WORDS | _REQUEST_WORDS | _FILLER_WORDS | frozenset(_KIND_OF) | frozenset(_NUMBER_WORDS)


def _misspelt_skip(token: str) -> bool:
    """Whether a token is a word of _SKIP with one letter too many: a doubled letter ('telll') or, from six
    letters, any letter ('durning'); shorter words keep their meaning ('intro' is not 'into')."""
    if len(token) < 5:
        return False
    for i in range(len(token)):
        doubled = token[i] in token[max(0, i - 1):i] + token[i + 1:i + 2]
        if (doubled or len(token) >= 6) and token[:i] + token[i + 1:] in _SKIP:
            return True
    return False


@dataclass(frozen=True)
class Constraints:
    """A text's numbers (sorted values), constraint kinds, what its constraint words measure (price, time,
    ...) and content words (in text order and as a set)."""

    numbers: tuple[str, ...]
    kinds: frozenset[str]
    dimensions: frozenset[str]
    words: tuple[str, ...]

    @property
    def word_set(self) -> frozenset[str]:
        return frozenset(self.words)


def _number(token: str) -> str:
    """A number's value as text: '1,400' -> '1400', '4.0' -> '4', '03' -> '3'."""
    digits = token.rstrip("+")
    if "," in digits and re.fullmatch(r"\d{1,3}(,\d{3})+", digits):
        digits = digits.replace(",", "")
    digits = digits.replace(",", ".")
    if re.fullmatch(r"\d+(\.\d+)?", digits):
        value = float(digits)
        return str(int(value)) if value == int(value) else str(value)
    return digits


def _suffix_stem(word: str) -> str:
    """Plurals, -ed and -ing and a final -e cut off: 'deliveries' -> 'delivery', 'fulfilled' -> 'fulfill'."""
    if len(word) > 4 and word.endswith("ies"):
        word = word[:-3] + "y"
    elif len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    for suffix in ("ing", "ed"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            word = word[: -len(suffix)]
            break
    return word[:-1] if len(word) > 3 and word.endswith("e") else word


_CANONICAL_STEMS = {_suffix_stem(word): _suffix_stem(canonical) for word, canonical in _CANONICAL.items()}
"""The action synonyms by stem, so that every inflection is merged: 'fulfilled' and 'completed' orders,
'reserving' and 'booking'."""


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A light English stem: plurals, -ed and -ing, a final -e, month abbreviations; action synonyms merged
    in any inflection."""
    stemmed = _suffix_stem(_MONTHS.get(word, word))
    return _CANONICAL_STEMS.get(stemmed, stemmed)


def constraints_of(text: str) -> Constraints:
    """The numbers, constraint kinds, measures and content words of a task text."""
    lowered = unicodedata.normalize("NFKC", task_core(text)).casefold().replace("\u2019", "'")
    lowered = _PHRASE.sub(lambda m: f" {_PHRASE_OF[m.group(1)]} ", lowered)
    numbers, kinds, dimensions, words = [], set(), set(), []
    previous = ""
    for token in _TOKEN.findall(lowered):
        if token[0].isdigit():
            numbers.append(_number(token))
            if token.endswith("+"):
                kinds.add("more")
        elif token in _KIND_OF:
            kinds.add(_KIND_OF[token])
            if token in _DIMENSION_OF:
                dimensions.add(_DIMENSION_OF[token])
        elif token in _NUMBER_WORDS:
            numbers.append(_NUMBER_WORDS[token])
        elif (len(token) > 1 and token not in _SKIP and not _misspelt_skip(token)
              and not (token in _ORDINAL_SUFFIXES and previous[:1].isdigit())):
            words.append(stem(token))
        previous = token
    return Constraints(tuple(sorted(numbers)), frozenset(kinds), frozenset(dimensions), tuple(words))


def site_words(website: str | None, start_url: str | None) -> frozenset[str]:
    """The labels of a task's website and start URL host ('www', 'com' and the like included), which a
    text may mention in any spelling ('on kbb', 'on Fox Sports')."""
    hosts = [website or ""]
    for url in (start_url or "").split(" |AND| "):
        hosts.append(urllib.parse.urlsplit(url if "//" in url else f"//{url}").hostname or "")
    return frozenset(label for host in hosts for label in re.split(r"[.\-_]", host.casefold()) if label)


def _on_site(word: str, labels: frozenset[str]) -> bool:
    return word in labels or (len(word) >= 3 and any(word in label for label in labels))


def _typo(a: str, b: str) -> bool:
    """Whether two words differ by a typo: edit distance 1 from five letters, 2 from eight."""
    if min(len(a), len(b)) < 5 or abs(len(a) - len(b)) > 2:
        return False
    limit = 2 if min(len(a), len(b)) >= 8 else 1
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        if min(current) > limit:
            return False
        previous = current
    return previous[-1] <= limit


def _spelled_out(initials: str, words: tuple[str, ...]) -> set[str]:
    """The words of every run of consecutive `words` whose initials are `initials` (2-4 letters):
    'hard drive' for 'hd', 'western australia' for 'wa'."""
    n = len(initials)
    if not 2 <= n <= 4:
        return set()
    return {w for i in range(len(words) - n + 1) if "".join(w[0] for w in words[i:i + n]) == initials
            for w in words[i:i + n]}


def _unmatched(a: Constraints, b: Constraints, sites: frozenset[str]) -> tuple[set[str], set[str]]:
    """The content words of each text that the other lacks, leaving out site words (and the words that
    spell out a site label), acronyms with the words they stand for, and typo pairs."""
    only_a, only_b = set(a.word_set - b.word_set), set(b.word_set - a.word_set)
    for label in sites:
        only_a -= _spelled_out(label, a.words)
        only_b -= _spelled_out(label, b.words)
    only_a = {w for w in only_a if not _on_site(w, sites)}
    only_b = {w for w in only_b if not _on_site(w, sites)}
    for mine, theirs, their_words in ((only_a, only_b, b.words), (only_b, only_a, a.words)):
        for word in list(mine):
            spelled = _spelled_out(word, their_words)
            if spelled:
                mine.discard(word)
                theirs.difference_update(spelled)
    for word in list(only_a):
        match = next((w for w in only_b if _typo(word, w)), None)
        if match is not None:
            only_a.discard(word)
            only_b.discard(match)
    return only_a, only_b


def agree(a: Constraints, b: Constraints, sites: frozenset[str] = frozenset()) -> bool:
    """Whether two tasks ask for the same: equal numbers and constraint kinds, the same measures where both
    name one ('cheapest' is not 'earliest'; 'lowest priced' is either), and no content word of one missing
    from the other (typos, acronyms and the words of `sites` aside)."""
    if a.numbers != b.numbers or a.kinds != b.kinds:
        return False
    if a.dimensions and b.dimensions and a.dimensions != b.dimensions:
        return False
    if a.word_set == b.word_set:
        return True
    only_a, only_b = _unmatched(a, b, sites)
    return not only_a and not only_b


def start_key(start_url: str | None) -> str | None:
    """Where an episode starts, as far as it matters for telling tasks apart: host (without 'www.') and
    path (without a final '/') of each URL, query and fragment left out; None when unknown."""
    if not start_url or not start_url.strip():
        return None
    keys = []
    for url in start_url.split(" |AND| "):
        parts = urllib.parse.urlsplit(url.strip() if "//" in url else f"//{url.strip()}")
        host = (parts.hostname or "").removeprefix("www.")
        keys.append(f"{host}{parts.path.rstrip('/')}")
    return " ".join(sorted(keys))
