"""The element a task names ('click on the link "sapien"', 'Select 12/30/2016 as the date', 'Select Lithuania
from the list'): what greedy decoding holds back for it.

Word matching cannot tell one lorem-ipsum link from another, nor one day of a calendar from the next (MiniLM puts
"16", "20" and "24" close), and the networks learned to click a link once a section is open, whichever link it
is. A task that names its target by its text, its date, a list option's text, a menu path ("Select
Clarissa>Robbyn") or what it asks all of ("all the shades of green") says exactly which element to click; until it
is clicked, the others that do nothing for the task wait (a day, an option, a path's item or one of all: everything
else waits). Where the page does not show it, the agent opens what the page hides (a collapsed section or tab, a
submenu, a read-only date field's picker) instead of clicking something else, and a calendar that shows other days
steps toward the named one with its Prev or Next control.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from webgym.answers import date_keys
from webgym.policies.scorer.candidates import Candidate
from webgym.policies.scorer.relations import DESCRIBED, ELEMENT_KINDS

KIND_WORDS = r"(?:link|button|item|tab|option)"
NAMED = re.compile(rf'\b(?:{KIND_WORDS}|label(?:l)?ed)\s+"([^"]+)"|"([^"]+)"\s+{KIND_WORDS}\b', re.I)
MENU_PATH = re.compile(r"(?<![^\s\"'])([A-Za-z][^\s>\"']*(?:>[A-Za-z][^\s>\"']*)+)")
"""A menu path written without spaces, "Clarissa>Robbyn": each item in turn ("File > Save As" is left alone:
where its last item ends is unclear)."""
EVERY = re.compile(r"\b(?:all|every|each)\s+(?:of\s+)?(?:the\s+)?(?:[a-z]+\s+of\s+)?([a-z][\w-]*)", re.I)
"""'Select all the shades of green': the word that names every element to click."""
CLICKS = ELEMENT_KINDS - {"fill"}
CLOSE_GLYPHS = frozenset({"x", "×", "✕", "✖"})
"""What a task calls a close button by the cross it shows; the page names it "Close" (jQuery UI's dialog)."""
EDGE = " \t.,;:!?'"
EARLIER = frozenset({"prev", "previous", "previous month", "<", "‹", "«"})
LATER = frozenset({"next", "next month", ">", "›", "»"})
"""What a calendar's controls to show an earlier or a later month say."""

DateKey = tuple[int | None, int, int]


def fold(text: str) -> str:
    return " ".join(text.split()).strip(EDGE).lower()


def day_of(text: str) -> DateKey | None:
    """The date an element's text is and says nothing besides ("December 30, 2016", a calendar's day as
    observe.py names it; "2016-12-30"), or None: a sentence that mentions a date is not that day."""
    keys = date_keys(text)
    return keys[0] if len(keys) == 1 and keys[0][0] is not None and len(text.split()) <= 3 else None


@dataclass(frozen=True)
class Target:
    """An element the task names: by its text (folded), or by a date (a day of a calendar)."""

    text: str
    date: DateKey | None = None
    only: bool = False
    """Shown, it is the only choice: a day, a list's option, a menu path's item or one of all the X the task names
    says all there is to do first."""
    every: int = 0
    """For "all the X": how many elements the page shows named X (two or more); each is clicked once, and one the
    page shows selected is done."""

    def names(self, element_text: str) -> bool:
        if self.date is None:
            text = fold(element_text)
            return text == self.text or (self.text in CLOSE_GLYPHS and text == "close")
        day = day_of(element_text)
        return day is not None and day[1:] == self.date[1:] and self.date[0] in (None, day[0])


def named_targets(task: str, candidates: Sequence[Candidate] = ()) -> list[Target]:
    """The elements the task names: its quoted texts, in its order, then the items of its menu paths, then its
    dates, then the options of lists on the page (`candidates`) whose whole text the task says ("Select Lithuania
    from the list"): one option, or several of lists that keep several choices, in the task's order (none where
    it says several options of a list that keeps one), then what it asks all of ("all the shades of green")
    where the page shows several elements named so."""
    words = fold(task)
    said: dict[str, tuple[int, bool]] = {}
    for c in candidates:
        found = c.option is not None and c.option.strip() and re.search(
            rf"(?<!\w){re.escape(fold(c.option))}(?!\w)", words)
        if found:
            said.setdefault(c.option, (found.start(), c.several))
    options = sorted(said, key=lambda option: said[option][0])
    if len(options) > 1 and not all(several for _, several in said.values()):
        options = []
    named = Counter(fold(c.target) for c in candidates if c.kind in CLICKS)
    return ([Target(fold(a or b)) for a, b in NAMED.findall(task)]
            + [Target(fold(item), only=True) for path in MENU_PATH.findall(task) for item in path.split(">")]
            + [Target(str(key), key, only=True) for key in date_keys(task)]
            + [Target(fold(option), only=True) for option in options]
            + [Target(word, only=True, every=named[word]) for word in map(fold, EVERY.findall(task))
               if named[word] > 1])


def _element_text(description: str) -> str:
    """The clicked element's text from a choice's description ('click button "Menu"' -> "menu")."""
    quoted = DESCRIBED.search(description)
    return fold(quoted.group(1)) if quoted else ""


def _toward(target: Target, candidates: Sequence[Candidate], texts: Sequence[str | None],
            clicked: set[str]) -> np.ndarray:
    """(N,) what may show a target the page does not: where a calendar shows other days, only its control toward
    the target's month (none there: nothing); elsewhere the elements that hide content and were not chosen."""
    days = [day for day in (day_of(t) for t in texts if t) if day is not None]
    if target.date is not None and days:
        wanted = (target.date[0] or days[0][0], *target.date[1:])
        words = EARLIER if wanted < min(days) else LATER if wanted > max(days) else frozenset()
        return np.array([t is not None and t in words for t in texts], dtype=bool)
    return np.array([c.kind in CLICKS and c.hides and t not in clicked
                     for c, t in zip(candidates, texts, strict=True)], dtype=bool)


def held_back(task: str, history: Sequence[str], candidates: Sequence[Candidate], serving: np.ndarray) -> np.ndarray:
    """(N,) what to take off each candidate's score, in units of the order margin (inf: not to be chosen).

    The pending target is the first named one no earlier choice (`history`, their descriptions) clicked (for "all
    the X", while fewer clicks on X were made than the page shows elements named X and one is not selected).
    Shown on the page: a day the task names by its date, a list's option by its text, a menu path's item, or an
    element of "all the X" not yet selected, is the only choice (no scroll, answer or Submit comes before it);
    for a quoted target, "Done." and the clicks that are not it and serve no clause of the task (`serving`,
    relations') wait. Not shown: only what may show it may be chosen (`_toward`); when nothing may, nothing is held
    (what reveals it may be a button like any other: a pie menu's "+"). A task that names no target holds nothing
    back."""
    held = np.zeros(len(candidates), dtype=np.float32)
    clicks = Counter(_element_text(text) for text in history)
    clicked = set(clicks)
    texts = [fold(c.target) if c.kind in CLICKS else None for c in candidates]

    def left(target: Target) -> bool:
        if target.every:
            return clicks[target.text] < target.every and any(
                t == target.text and not c.settled for c, t in zip(candidates, texts, strict=True))
        return not any(target.names(c) for c in clicked)

    pending = next((t for t in named_targets(task, candidates) if left(t)), None)
    if pending is None:
        return held
    shown = [t is not None and pending.names(t) and not (pending.every and c.settled)
             for c, t in zip(candidates, texts, strict=True)]
    if not any(shown):
        way = _toward(pending, candidates, texts, clicked)
        if way.any():
            held[~way] = np.inf
        return held
    if pending.only:
        held[~np.array(shown, dtype=bool)] = np.inf
        return held
    wrong = [(t is not None and not named and not serves) or c.kind == "done"
             for c, t, named, serves in zip(candidates, texts, shown, serving, strict=True)]
    held[np.array(wrong, dtype=bool)] = 1.0
    return held
