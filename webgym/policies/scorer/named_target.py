"""The element a task names in quotes ('click on the link "sapien"'): what greedy decoding holds back for it.

Word matching cannot tell one lorem-ipsum link from another, and the networks learned to click a link once a
section is open, whichever link it is. A task that names its target by its text says exactly which element to
click; until it is clicked, the others that do nothing for the task wait, and where the page does not show it,
the agent opens what the page hides (a collapsed section or tab) instead of clicking something else.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from webgym.policies.scorer.candidates import Candidate
from webgym.policies.scorer.relations import DESCRIBED, ELEMENT_KINDS

KIND_WORDS = r"(?:link|button|item|tab|option)"
NAMED = re.compile(rf'\b(?:{KIND_WORDS}|label(?:l)?ed)\s+"([^"]+)"|"([^"]+)"\s+{KIND_WORDS}\b', re.I)
CLICKS = ELEMENT_KINDS - {"fill"}
EDGE = " \t.,;:!?'"


def named_targets(task: str) -> list[str]:
    """The texts the task names as elements to click, in its order, folded (case, edge punctuation)."""
    return [fold(a or b) for a, b in NAMED.findall(task)]


def fold(text: str) -> str:
    return " ".join(text.split()).strip(EDGE).lower()


def _element_text(description: str) -> str:
    """The clicked element's text from a choice's description ('click button "Menu"' -> "menu")."""
    quoted = DESCRIBED.search(description)
    return fold(quoted.group(1)) if quoted else ""


def held_back(task: str, history: Sequence[str], candidates: Sequence[Candidate], serving: np.ndarray) -> np.ndarray:
    """(N,) what to take off each candidate's score, in units of the order margin (inf: not to be chosen).

    The pending target is the first named one no earlier choice (`history`, their descriptions) clicked. Shown
    on the page: the clicks that are not it and serve no clause of the task (`serving`, relations'), and "Done.",
    wait. Not shown: only elements that hide content and were not chosen before may be chosen; when there are
    none, nothing is held (what reveals it may be a button like any other: a pie menu's "+"). A task that names
    no target holds nothing back."""
    held = np.zeros(len(candidates), dtype=np.float32)
    clicked = {_element_text(text) for text in history}
    pending = next((t for t in named_targets(task) if t not in clicked), None)
    if pending is None:
        return held
    texts = [fold(c.target) if c.kind in CLICKS else None for c in candidates]
    if pending not in texts:
        unopened = np.array([c.kind in CLICKS and c.hides and t not in clicked
                             for c, t in zip(candidates, texts, strict=True)], dtype=bool)
        if unopened.any():
            held[~unopened] = np.inf
        return held
    wrong = [(t is not None and t != pending and not s) or c.kind == "done"
             for c, t, s in zip(candidates, texts, serving, strict=True)]
    held[np.array(wrong, dtype=bool)] = 1.0
    return held
