"""Rules that draw a generated site's data from word lists, so a family is data and not code.

A family (family.py) writes its data tables, its starting state and its identity with rules;
`Drawing` evaluates them against one seeded random generator, in a fixed order, so the same family
and seed always give the same site. A rule is:

    "text {name} more"   a template: {name} is a field of the row being drawn (drawn first if it is
                         not yet), the element of the table's `each`, a site draw, `n` (the row number,
                         from 1), `title` or `hostname`; {name.field} a field of a mapping; {n:02}
                         or {price:.2f} a format; {day:%a %d %b} an ISO date written out. A string
                         that is one placeholder and nothing else gives the value itself (a number
                         stays a number, a list a list).
    {$pick: LIST}        one element of a word list (words/FILE.yaml's LIST as FILE.LIST, or one of
                         the family's own `words` by name), of the list (or list name) a placeholder
                         gives ("{dept.items}"), of the list a rule gives, or of a list written in
                         the rule; only the elements of the last are rules themselves
    {$sample: LIST, n: K}           K distinct elements, in drawn order (K may be [LOW, HIGH])
    {$number: [LOW, HIGH], step: S} a number from LOW to HIGH in steps of S (default 1)
    {$chance: P}         true with probability P
    {$cycle: [A, B, ...]}           A for row 1, B for row 2, ... and round again (no draw)
    {$row: TABLE}        a random row of a table drawn earlier
    {$rows: TABLE}       every row of a table drawn earlier (for `each`)
    {$column: TABLE.FIELD, where: {FIELD: VALUE}, offset: K, limit: N}
                         the distinct values of a column, in row order (of the rows whose fields
                         have the given values)
    {$date: [START, DAYS]}            an ISO date from START to START + DAYS - 1
    {$days: [START, N]}               N consecutive ISO dates from START (no draw)
    {$digits: N}         N random digits, the first not 0 (a sign-in code)
    {$slug: RULE}        lower-case words joined by '-' (ids); of each element of a list
    {$lower: RULE}       lower case; of each element of a list
    {$join: RULE, sep: ", "}         a list written out and joined
    {$fill: RULE}        the text RULE gives, filled as a template once more: a template picked from
                         a word list ("Lunch is at {time}") filled with the row's fields; also the
                         way to fill a template where strings are taken literally (spec overrides)
    [RULE, ...] or {KEY: RULE, ...}  a list or mapping of rules

Rule keys start with `$` so that a spec's own keys (a state variable named `date`) never read as
rules. A rule that cannot be evaluated raises `GenerationError` naming the family, the seed and the
rule's place.
"""

from __future__ import annotations

import copy
import datetime as dt
import random
import re
from collections.abc import Callable
from typing import Any

from webgym.sites.expr import SpecError
from webgym.sites.goals import written

PLACEHOLDER = re.compile(r"\{([A-Za-z_]\w*)(?:\.([A-Za-z_]\w*))?(?::([^{}]+))?\}")
DIGITS = "0123456789"


class GenerationError(SpecError):
    """A family's rules cannot make a site for a seed; the message names family, seed and place."""


def slug(text: Any) -> str:
    return re.sub(r"[^a-z0-9]+", "-", str(text).lower()).strip("-")


def _written(value: Any, spec: str | None, loc: str) -> str:
    """A value inside longer text, formatted by the placeholder's spec when it has one."""
    if spec and "%" in spec:
        return dt.date.fromisoformat(str(value)).strftime(spec)
    if spec:
        return format(value, spec)
    return written(value, loc)


class Drawing:
    """The draws of one site: a seeded generator, the word lists, the names drawn so far and the
    tables drawn so far (`tables` keeps private `_fields` so later tables can read them)."""

    def __init__(self, rng: random.Random, words: dict[str, list[Any]], where: str) -> None:
        self.rng, self.words, self.where = rng, words, where
        self.names: dict[str, Any] = {}
        self.tables: dict[str, list[dict[str, Any]]] = {}
        self.pending: dict[str, tuple[Any, str]] = {}
        """Fields of the row being drawn that are not drawn yet: a template naming one draws it first."""
        self.row: dict[str, Any] = {}
        self._rules: dict[str, Callable[[dict[str, Any], str, dict[str, Any]], Any]] = {
            "$pick": self._pick, "$sample": self._sample, "$number": self._number, "$chance": self._chance, "$cycle": self._cycle,
            "$row": self._row, "$rows": self._rows, "$column": self._column, "$date": self._date, "$days": self._days,
            "$digits": self._digits, "$slug": self._slug, "$lower": self._lower, "$join": self._join,
            "$fill": self._fill}

    def fail(self, loc: str, message: str) -> GenerationError:
        return GenerationError(f"{self.where}: {loc}: {message}")

    # ---- evaluation ------------------------------------------------------------------------

    def value(self, rule: Any, loc: str, scope: dict[str, Any] | None = None) -> Any:
        """A rule's value; strings are templates."""
        return self._eval(rule, loc, scope or {}, templates=True)

    def literal(self, node: Any, loc: str) -> Any:
        """A spec fragment: `$` rules are evaluated, strings are kept as written (their braces are
        the spec's own placeholders)."""
        return self._eval(node, loc, {}, templates=False)

    def _eval(self, node: Any, loc: str, scope: dict[str, Any], templates: bool) -> Any:
        if isinstance(node, str):
            return self.fill(node, loc, scope) if templates else node
        if isinstance(node, list):
            return [self._eval(item, f"{loc}[{i}]", scope, templates) for i, item in enumerate(node)]
        if isinstance(node, dict):
            rules = [key for key in node if str(key).startswith("$")]
            if not rules:
                return {key: self._eval(value, f"{loc}.{key}", scope, templates) for key, value in node.items()}
            if len(rules) > 1 or rules[0] not in self._rules:
                raise self.fail(loc, f"a rule has exactly one of {', '.join(self._rules)}; got {rules}")
            return self._rules[rules[0]](node, loc, scope)
        return node

    def fill(self, text: str, loc: str, scope: dict[str, Any]) -> Any:
        whole = PLACEHOLDER.fullmatch(text)
        if whole and whole.group(3) is None:
            return self._lookup(whole, loc, scope)
        try:
            return PLACEHOLDER.sub(lambda m: _written(self._lookup(m, loc, scope), m.group(3), loc), text)
        except GenerationError:
            raise
        except (ValueError, TypeError) as error:
            raise self.fail(loc, f"{text!r}: {error}") from None

    def _lookup(self, match: re.Match, loc: str, scope: dict[str, Any]) -> Any:
        name, field = match.group(1), match.group(2)
        if name not in scope and name in self.pending:
            rule, where = self.pending.pop(name)
            scope[name] = self.row[name] = self.value(rule, where, scope)
        if name in scope:
            value = scope[name]
        elif name in self.names:
            value = self.names[name]
        else:
            known = sorted({*scope, *self.names})
            raise self.fail(loc, f"{match.group(0)}: unknown name {name!r} (known here: {', '.join(known)})")
        if field is None:
            return value
        if not isinstance(value, dict) or field not in value:
            fields = ", ".join(sorted(value)) if isinstance(value, dict) else f"{name} is not a mapping"
            raise self.fail(loc, f"{match.group(0)}: no field {field!r} ({fields})")
        return value[field]

    def _arg(self, node: dict[str, Any], key: str, loc: str, scope: dict[str, Any]) -> Any:
        return self.value(node[key], f"{loc}.{key}", scope)

    def list_of(self, ref: Any, loc: str, scope: dict[str, Any]) -> tuple[list[Any], bool]:
        """The list a rule draws from, and whether it was written in the rule (its elements are then
        rules too); word lists and lists from placeholders or rules are data, taken as they are."""
        if isinstance(ref, list):
            return ref, True
        if isinstance(ref, dict):
            found = self.value(ref, loc, scope)
            if not isinstance(found, list):
                raise self.fail(loc, f"{found!r} is not a list")
            return found, False
        if not isinstance(ref, str):
            raise self.fail(loc, f"{ref!r} names no list")
        if PLACEHOLDER.fullmatch(ref):
            found = self.fill(ref, loc, scope)
            if isinstance(found, list):
                return found, False
            if not isinstance(found, str):
                raise self.fail(loc, f"{ref} is {found!r}, neither a list nor the name of one")
            ref = found
        if ref not in self.words:
            raise self.fail(loc, f"unknown word list {ref!r} (lists: {', '.join(sorted(self.words))})")
        return self.words[ref], False

    def count(self, rule: Any, loc: str, scope: dict[str, Any]) -> int:
        """N, or a number drawn from [LOW, HIGH]."""
        count = self.value(rule, loc, scope)
        if isinstance(count, list) and len(count) == 2:
            return self.rng.randint(int(count[0]), int(count[1]))
        if not isinstance(count, int):
            raise self.fail(loc, f"{count!r} is not a count or [low, high]")
        return count

    # ---- rules -----------------------------------------------------------------------------

    def _element(self, item: Any, written: bool, loc: str, scope: dict) -> Any:
        return self.value(item, loc, scope) if written else copy.deepcopy(item)

    def _pick(self, node: dict, loc: str, scope: dict) -> Any:
        items, written = self.list_of(node["$pick"], f"{loc}.$pick", scope)
        if not items:
            raise self.fail(loc, "picks from an empty list")
        return self._element(self.rng.choice(items), written, loc, scope)

    def _sample(self, node: dict, loc: str, scope: dict) -> list[Any]:
        items, written = self.list_of(node["$sample"], f"{loc}.$sample", scope)
        k = self.count(node.get("n", 1), f"{loc}.n", scope)
        if k > len(items):
            raise self.fail(loc, f"samples {k} of a list of {len(items)}")
        return [self._element(item, written, loc, scope) for item in self.rng.sample(items, k)]

    def _number(self, node: dict, loc: str, scope: dict) -> int | float:
        bounds, step = self._arg(node, "$number", loc, scope), node.get("step", 1)
        if not (isinstance(bounds, list) and len(bounds) == 2) or step <= 0:
            raise self.fail(loc, "write {$number: [LOW, HIGH], step: S} with S > 0")
        low, high = bounds
        value = low + step * self.rng.randrange(int(round((high - low) / step)) + 1)
        if all(isinstance(v, int) for v in (low, high, step)):
            return int(value)
        decimals = len(f"{step:g}".partition(".")[2])
        return round(value, decimals)

    def _chance(self, node: dict, loc: str, scope: dict) -> bool:
        return self.rng.random() < float(self._arg(node, "$chance", loc, scope))

    def _cycle(self, node: dict, loc: str, scope: dict) -> Any:
        items, written = self.list_of(node["$cycle"], f"{loc}.$cycle", scope)
        if "n" not in scope or not items:
            raise self.fail(loc, "$cycle needs a non-empty list, inside a table's fields")
        return self._element(items[(scope["n"] - 1) % len(items)], written, loc, scope)

    def _table(self, name: Any, loc: str) -> list[dict[str, Any]]:
        if name not in self.tables:
            raise self.fail(loc, f"no table {name!r} drawn before this (tables: {', '.join(self.tables) or 'none'})")
        return self.tables[name]

    def _row(self, node: dict, loc: str, scope: dict) -> dict[str, Any]:
        return dict(self.rng.choice(self._table(node["$row"], f"{loc}.$row")))

    def _rows(self, node: dict, loc: str, scope: dict) -> list[dict[str, Any]]:
        return [dict(row) for row in self._table(node["$rows"], f"{loc}.$rows")]

    def _column(self, node: dict, loc: str, scope: dict) -> list[Any]:
        table, _, field = str(node["$column"]).partition(".")
        where = node.get("where") or {}
        rows = [row for row in self._table(table, f"{loc}.$column") if all(row.get(k) == v for k, v in where.items())]
        values = list(dict.fromkeys(row.get(field) for row in rows))
        start = int(node.get("offset", 0))
        return values[start:start + node["limit"]] if "limit" in node else values[start:]

    def _date(self, node: dict, loc: str, scope: dict) -> str:
        start, days = self._arg(node, "$date", loc, scope)
        return (dt.date.fromisoformat(str(start)) + dt.timedelta(days=self.rng.randrange(int(days)))).isoformat()

    def _days(self, node: dict, loc: str, scope: dict) -> list[str]:
        start, n = self._arg(node, "$days", loc, scope)
        first = dt.date.fromisoformat(str(start))
        return [(first + dt.timedelta(days=i)).isoformat() for i in range(int(n))]

    def _digits(self, node: dict, loc: str, scope: dict) -> str:
        n = int(self._arg(node, "$digits", loc, scope))
        return self.rng.choice(DIGITS[1:]) + "".join(self.rng.choice(DIGITS) for _ in range(n - 1))

    def _slug(self, node: dict, loc: str, scope: dict) -> str | list[str]:
        value = self._arg(node, "$slug", loc, scope)
        return [slug(v) for v in value] if isinstance(value, list) else slug(value)

    def _lower(self, node: dict, loc: str, scope: dict) -> str | list[str]:
        value = self._arg(node, "$lower", loc, scope)
        return [str(v).lower() for v in value] if isinstance(value, list) else str(value).lower()

    def _join(self, node: dict, loc: str, scope: dict) -> str:
        items = self._arg(node, "$join", loc, scope)
        return str(node.get("sep", ", ")).join(written(item, loc) for item in items)

    def _fill(self, node: dict, loc: str, scope: dict) -> Any:
        text = self.value(node["$fill"], f"{loc}.$fill", scope)
        return self.fill(text, f"{loc}.$fill", scope) if isinstance(text, str) else text
