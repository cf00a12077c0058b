"""The action candidates of the set-of-marks scorer: everything it may do on one page, as text.

Per observation: a click per clickable element (its control kind and state in its text; a hover for
a menu item whose submenu is hidden); a `select_option` per option of a select or listbox; for each
form with text fields (or fields grouped with a button by layout) one composite `fill` (type into
every text field, then submit), so a form costs one step as it does for the oracle; an answer per
short line of the page's text (read with the line above it, its label) plus answer("Done.");
scroll up/down; back.
What a fill types is a second choice, per text field, among phrases of the task (quoted text,
e-mail addresses, capitalised names, tokens with digits, single content words) and codes shown
on the page, or keeping the field's current value.

`step_choices` maps recorded tool calls back onto these candidates, so training rebuilds exactly
what the policy chose, and turns oracle steps (clicks at x, y, several calls per step) into the
same choices, adding a typed text or an answer the candidates lack.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from schemas.steps import Action, Element
from webgym.env.observe import element_at

DONE = "Done."
"""The answer that ends a task which asks for no information."""
MAX_LINE = 150
"""Longer page lines are not offered as answers."""
MAX_LINES = 80
"""Page lines offered as answers, from the top of the page."""
MAX_LABEL = 60
"""An answer's label (its line above) is cut to this many characters in the text the scorer reads."""
KINDS = ("link", "button", "option", "toggle", "submit", "fill", "answer", "done", "scroll_down", "scroll_up", "back")
"""Candidate kinds; the scorer sees them one-hot."""
TEXT_ROLES = {None, "", "text", "email", "password", "search", "tel", "url", "number", "textbox"}
STOPWORDS = frozenset("""a an the and or but of to in on at for from by with without into onto your you my me it its
this that these those is are be as then than so only both each all any some no not do does did have has had
what which who whom when where how many much more most less least one two three four five six seven eight nine ten
first second last new also just there their them they he she her his we our us can could should would will shall
may might must if else up down out over under about after before again same other such own very""".split())

QUOTED = re.compile(r"“([^”]+)”|\"([^\"]+)\"|(?<!\w)'([^']+)'(?!\w)")
EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
WORD = re.compile(r"[A-Za-z0-9][\w'&./:@!+-]*")
NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
CODE = re.compile(r"(?<![\d/:.])\d{4,8}(?![\d/:.])")
ITEM_MARKS = re.compile(r"[()\"“”]")


@dataclass(frozen=True)
class Phrase:
    """Text a fill may type, with the words just before it in the task (what the task calls it)."""

    text: str
    context: str
    source: str
    """quoted, email, name, digits, word or page (a code shown on the page)."""


PHRASE_SOURCES = ("keep", "quoted", "email", "name", "digits", "word", "page", "added")


def _context(text: str, start: int, words: int = 4) -> str:
    return " ".join(WORD.findall(text[:start])[-words:])


def phrases(task: str, page_text: str | None = None) -> list[Phrase]:
    """Phrases of the task text (first occurrence order, no duplicates) and codes shown on the page."""
    found: dict[str, Phrase] = {}

    def add(value: str, start: int, source: str, context: str | None = None) -> None:
        value = value.strip() if source == "quoted" else value.strip().rstrip(",.;:")
        if value and value not in found:
            found[value] = Phrase(value, _context(task, start) if context is None else context, source)

    for match in QUOTED.finditer(task):
        add(next(g for g in match.groups() if g is not None), match.start(), "quoted")
    for match in EMAIL.finditer(task):
        add(match.group(0), match.start(), "email")
    words = list(WORD.finditer(task))
    run: list[re.Match] = []
    for match in [*words, None]:  # maximal runs of capitalised words apart only by spaces are names
        capital = match is not None and match.group(0)[0].isupper() and match.group(0).lower() not in STOPWORDS
        if capital and (not run or task[run[-1].end():match.start()].isspace()):
            run.append(match)
            continue
        if run:
            add(task[run[0].start():run[-1].end()], run[0].start(), "name")
        run = [match] if capital else []
    for match in words:
        token = match.group(0).rstrip(",.;:")
        if any(ch.isdigit() for ch in token) and any(not ch.isdigit() for ch in token):
            add(token, match.start(), "digits")
    for match in words:
        token = match.group(0).lower().rstrip(",.;:!")
        if token.isalpha() and len(token) > 2 and token not in STOPWORDS:
            add(token, match.start(), "word")
            if token.endswith("s") and not token.endswith("ss"):
                add(token[:-1], match.start(), "word")
    for line in (page_text or "").splitlines():
        for match in CODE.finditer(line):
            add(match.group(0), 0, "page", context=line[:match.start()][-40:])
    return list(found.values())


@dataclass(frozen=True)
class Candidate:
    """One thing the policy may do now. `text` is what the scorer reads; `key` names it uniquely on
    this page (the recorded response starts with it, so a step rebuilds exactly)."""

    kind: str
    text: str
    key: str
    target: str = ""
    """The words of the page it acts on (element text, answer line, field names): for word overlap."""
    mark: int | None = None
    """The clicked element (a fill's submit button; None when a fill presses Enter; a select's element)."""
    fields: tuple[Element, ...] = ()
    """A fill's text fields, in page order."""
    answer: str | None = None
    label: str = ""
    """An answer's line above it on the page (what the page calls the value)."""
    option: str | None = None
    """The option a select_option candidate chooses."""
    settled: bool = False
    """A click on an element already in the state a click gives it (an open tab, an expanded section): it has
    nothing of the task left to do, so it holds back no other element (relations.out_of_order)."""
    hides: bool = False
    """A click on an element that hides content now (a collapsed section, tab or menu; a read-only field, whose
    picker fills it): where a task's named target is not shown, the agent opens these (named_target.held_back)."""
    several: bool = False
    """An option of a list that keeps several choices (a listbox: a multiple select): choosing one adds it."""
    hover: bool = False
    """The element is hovered, not clicked: a menu item whose submenu is hidden opens it on hover, and a click
    would choose the item itself (jQuery UI's menus)."""

    def actions(self, typed: Sequence[str | None] = ()) -> list[Action]:
        """The tool calls; for a fill, `typed[i]` goes into fields[i] (None keeps its value)."""
        if self.kind == "fill":
            calls = [Action(name="type", text=text, mark=f.mark)
                     for f, text in zip(self.fields, typed) if text is not None]
            if self.mark is not None:
                return [*calls, Action(name="click", mark=self.mark)]
            if not calls:  # nothing to type: submit the last field with Enter
                return [Action(name="type", text=(self.fields[-1].value or "") + "\n", mark=self.fields[-1].mark)]
            return [*calls[:-1], calls[-1].model_copy(update={"text": calls[-1].text + "\n"})]
        if self.option is not None:
            return [Action(name="select_option", mark=self.mark, text=self.option)]
        if self.kind in ("answer", "done"):
            return [Action(name="answer", text=self.answer)]
        if self.kind in ("scroll_down", "scroll_up"):
            return [Action(name="scroll", direction=self.kind.removeprefix("scroll_"))]
        if self.kind == "back":
            return [Action(name="back")]
        return [Action(name="hover" if self.hover else "click", mark=self.mark)]

    def response(self, typed: Sequence[str | None] = ()) -> str:
        """The recorded response: the key, then what the step does in words."""
        if self.kind != "fill":
            return f"{self.key}: {self.text}"
        values = ", ".join(f"{field_name(f)}={'(kept)' if t is None else repr(t)}" for f, t in zip(self.fields, typed))
        return f"{self.key}: {self.text} with {values}"


def field_name(element: Element) -> str:
    return element.label or element.text or f"field {element.mark}"


def is_text_field(element: Element) -> bool:
    """A field the scorer types into; a read-only input (a date picker's) is clicked instead."""
    if element.control == "readonly":
        return False
    if element.tag == "input":
        return (element.role or "") in TEXT_ROLES or element.control == "textbox"
    return element.tag == "textarea" or (element.control == "textbox" and element.tag != "select")


def has_options(element: Element) -> bool:
    """A select or listbox: chosen from by select_option, not clicked."""
    return element.control in ("select", "listbox") and bool(element.options)


def _kind(element: Element) -> str:
    role = (element.role or "").lower()
    if role in ("checkbox", "radio") and element.tag == "input":
        return "toggle"
    if role in ("radio", "option", "tab", "menuitem", "checkbox"):
        return "option"
    if role == "submit" or element.control == "submit":
        return "submit"
    if element.tag == "a" or role == "link":
        return "link"
    return "button"


STATES = (("checked", "checked", "unchecked"), ("selected", "selected", ""), ("expanded", "expanded", "collapsed"))
"""Element state fields and the words the candidate text shows for True and False."""


def state_words(element: Element) -> list[str]:
    """The element's control kind and state as words: ["checkbox", "checked"]."""
    plain = (None, "link", "button", "submit", "textbox")  # the candidate's kind already says these
    out = [] if element.control in plain else [element.control]
    for name, yes, no in STATES:
        value = getattr(element, name)
        word = yes if value else no
        if value is not None and word:
            out.append(word)
    return out


def opens_on_hover(element: Element) -> bool:
    """A menu item whose submenu is hidden: hovered to open it (a click would choose the item)."""
    return element.control == "menuitem" and element.expanded is False


def _pointer(element: Element) -> str:
    """What the element's own candidate does to it: hover or click."""
    return "hover" if opens_on_hover(element) else "click"


def _element_key(element: Element) -> str:
    """The key of the element's own candidate ("click 7", "hover 3"): page_candidates and step_choices agree on it."""
    return f"{_pointer(element)} {element.mark}"


def _described(element: Element, kind: str) -> str:
    """What the scorer reads of an element's own candidate: its text and, in brackets, its label: a toggle's group;
    a button's or link's group, or the item it sits in where other buttons or links read like it (brackets and
    quotes taken out of those)."""
    group = ""
    if element.label and kind in ("option", "toggle"):
        group = f" ({element.label})"
    elif element.label and element.control in ("link", "button", "submit"):
        group = f" ({' '.join(ITEM_MARKS.sub(' ', element.label).split())})"
    state = state_words(element)
    return f'{_pointer(element)} {kind} "{element.text}"{group}' + (f" [{', '.join(state)}]" if state else "")


def answer_lines(page_text: str | None) -> list[tuple[str, str]]:
    """Distinct short lines of the page text, top first, each with the line above it: what an answer may
    quote, and what the page calls it (a value's label sits on the line above: "Runtime (minutes)", "121")."""
    seen: dict[str, str] = {}
    above = ""
    for line in (page_text or "").splitlines():
        line = " ".join(line.split())
        if not line:
            continue
        if len(line) <= MAX_LINE and line not in seen:
            seen[line] = above
        above = line
    return list(seen.items())[:MAX_LINES]


def page_candidates(elements: Sequence[Element] | None, page_text: str | None) -> list[Candidate]:
    """Every candidate of one observation, in a stable order (the keys are unique)."""
    out: list[Candidate] = []
    forms: dict[object, list[Element]] = {}
    for element in elements or []:
        if is_text_field(element):
            forms.setdefault(_form_of(element), []).append(element)
    submits: dict[int, Element] = {}
    for element in elements or []:
        if is_text_field(element):
            continue
        if has_options(element):
            name = element.label or f"list {element.mark}"
            for i, option in enumerate(element.options or []):
                chosen = " [selected]" if option == element.text else ""
                out.append(Candidate("option", f'choose "{option}" in "{name}"{chosen}', f"select {element.mark} {i}",
                                     option, mark=element.mark, label=name, option=option,
                                     several=element.control == "listbox"))
            continue
        kind = _kind(element)
        if kind == "submit" and element.form in forms:
            submits.setdefault(element.form, element)
            if element.role == "submit":  # a form's own: its fill submits it (keeping every field is a fill too)
                continue
            # a button grouped with fields by layout may be a choice of its own (click "Next" or "OK"): kept
        out.append(Candidate(kind, _described(element, kind), _element_key(element), element.text, mark=element.mark,
                             settled=bool(element.selected or element.expanded),
                             hides=element.expanded is False or element.control == "readonly",
                             hover=opens_on_hover(element)))
    for form, fields in forms.items():
        submit = submits.get(form) if isinstance(form, int) else None
        names = ", ".join(f'"{field_name(f)}"' for f in fields)
        then = f' and click "{submit.text}"' if submit else " and press Enter"
        key = f"fill {submit.mark if submit else 'enter ' + str(fields[-1].mark)}"
        out.append(Candidate("fill", f"type into {names}{then}", key, " ".join(field_name(f) for f in fields),
                             mark=submit.mark if submit else None, fields=tuple(fields)))
    out.append(Candidate("done", f'answer "{DONE}"', "done", answer=DONE))
    for i, (line, above) in enumerate(answer_lines(page_text)):
        label = f' under "{above[:MAX_LABEL]}"' if above else ""
        out.append(Candidate("answer", f'answer "{line}"{label}', f"answer {i}", line, answer=line, label=above))
    out += [Candidate("scroll_down", "scroll down", "scroll down"), Candidate("scroll_up", "scroll up", "scroll up"),
            Candidate("back", "go back", "back")]
    return out


# ---- recorded steps back to candidates ---------------------------------------------------------

@dataclass(frozen=True)
class Choice:
    """One candidate chosen at a step, and for a fill what each field got (None: kept)."""

    key: str
    typed: tuple[str | None, ...] = ()


@dataclass
class _Pending:
    """Text typed into one form's fields, not yet submitted."""

    form: object = None
    typed: dict[int, str] = field(default_factory=dict)


def _target(elements: Sequence[Element], action: Action) -> Element | None:
    if action.mark is not None:
        return next((e for e in elements if e.mark == action.mark), None)
    if action.x is not None and action.y is not None:
        return element_at(elements, action.x, action.y, slack=40.0)
    return None


def _form_of(element: Element) -> object:
    return element.form if element.form is not None else f"field {element.mark}"


def step_choices(elements: Sequence[Element] | None, page_text: str | None,
                 actions: Sequence[Action]) -> tuple[list[Choice], list[Candidate], str | None]:
    """The choices a step's tool calls make among this page's candidates, the candidates (with any
    the calls needed added: an answer not on the page), and why the calls do not map, if they do not."""
    elements = list(elements or [])
    candidates = page_candidates(elements, page_text)
    fills = {_form_of(c.fields[0]): c for c in candidates if c.kind == "fill"}
    choices: list[Choice] = []
    pending = _Pending()

    def flush(submitted: bool) -> None:
        """A submitted form is its fill; typing that was never submitted changed nothing the site saw."""
        if pending.form is not None and submitted:
            fill = fills[pending.form]
            choices.append(Choice(fill.key, tuple(
                None if pending.typed.get(f.mark) in (None, f.value or "") else pending.typed[f.mark]
                for f in fill.fields)))
        pending.form, pending.typed = None, {}

    for action in actions:
        if action.name == "type":
            target = _target(elements, action)
            if target is None or not is_text_field(target):
                return choices, candidates, f"type into something that is not a visible text field ({action})"
            if pending.form not in (None, _form_of(target)):
                flush(False)
            pending.form = _form_of(target)
            text = action.text or ""
            pending.typed[target.mark] = text.rstrip("\n")
            if text.endswith("\n"):
                flush(True)
        elif action.name == "click":
            target = _target(elements, action)
            if target is None:
                return choices, candidates, f"click at no visible element ({action})"
            if is_text_field(target):
                continue  # focusing a field before typing
            if _kind(target) == "submit" and target.form in fills:
                if pending.form != target.form:
                    flush(False)
                    pending.form = target.form
                flush(True)
                continue
            # a radio between typing keeps the typing pending; a click on a menu item that opens a submenu is
            # that item's choice, which hovers it
            choices.append(Choice(_element_key(target)))
        elif action.name == "hover":
            target = _target(elements, action)
            if target is None or not opens_on_hover(target):
                return choices, candidates, f"hover over no menu item that opens a submenu ({action})"
            choices.append(Choice(_element_key(target)))
        elif action.name == "select_option":
            target = _target(elements, action)
            option = next((c for c in candidates if c.option is not None and target is not None
                           and c.mark == target.mark and c.option == (action.text or "").strip()), None)
            if option is None:
                return choices, candidates, f"select_option of no offered option ({action})"
            choices.append(Choice(option.key))
        elif action.name == "scroll":
            flush(False)
            choices.append(Choice(f"scroll {'up' if (action.direction or 'down') == 'up' else 'down'}"))
        elif action.name == "back":
            flush(False)
            choices.append(Choice("back"))
        elif action.name == "answer":
            flush(False)
            text = action.text or ""
            known = next((c for c in candidates if c.kind in ("answer", "done") and c.answer == text), None) \
                or quoting_line(candidates, text)
            if known is None:
                known = Candidate("answer", f'answer "{text}"', f"answer {len(candidates)}", text, answer=text)
                candidates.append(known)
            choices.append(Choice(known.key))
        else:
            return choices, candidates, f"no candidate does {action.name}"
    flush(False)
    return choices, candidates, None


def first_number(text: str) -> float | None:
    """The first number in a text ('$61.50' -> 61.5), as the verifier reads answers."""
    match = NUMBER.search(text.replace(",", ""))
    return float(match.group(0)) if match else None


def quoting_line(candidates: Sequence[Candidate], answer: str) -> Candidate | None:
    """The shortest answer line that gives the same answer: it contains the text, or, for a number,
    starts with the same number (an oracle's "45" is the page's "$45.00")."""
    number = first_number(answer) if NUMBER.fullmatch(answer.strip()) else None
    lines = [c for c in candidates if c.kind == "answer" and c.answer and (
        answer in c.answer or (number is not None and first_number(c.answer) == number))]
    return min(lines, key=lambda c: len(c.answer), default=None)


def page_context(url: str | None, title: str | None) -> str:
    """Where the agent is, as the scorer reads it: the page title and the URL's path."""
    path = urlsplit(url or "").path or "/"
    return f"{title or ''} {path}".strip()
