"""Goal templates: a goal written once in a spec and made once per combination of values.

A goal with `vary` is a template:

    - id: "price-{p.id}"
      vary:
        p: {from: products, where: [{field: category, op: eq, value: lighting}]}
      text: What does the {p.name} cost on {title}?
      groups:
        - description: answer
          facts:
            - answer: true
              op: number_eq
              value: "{p.price}"
              evidence: [{page: true, op: eq, value: product}, {var: product, op: eq, value: "{p.id}"}]

`vary` binds names, in order; every combination of their values makes one goal:

    NAME: [v1, v2, ...]     literal values: text, numbers or mappings ({name: Ada Lovelace, city: Leeds})
    NAME: {from: TABLE, where: [{field, op, value}], sort: [FIELD, -FIELD], offset: N, limit: N}
                            rows of a data table, filtered and ordered as a view does; filter values and
                            sort keys may name earlier bindings, so {from: products, where: [{field: keywords,
                            op: contains, value: "{q}"}], sort: [price], limit: 1} is the cheapest match
                            of each q. A combination whose query finds no row makes no goal.

In the id, the text and the groups, `{NAME}` or `{NAME.FIELD}` is replaced by the bound value: a string
that is one placeholder and nothing else takes the value itself (a number stays a number), inside
longer text the value is written out. Other braces ({title}, {hostname}) are left as they are. Every
goal made is validated like a hand-written one (its checks compile, its oracle path fits its band's step
limit); its `origin` names the template and the values, and so does every error about it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from pydantic import ValidationError

from webgym.sites.expr import OPS, SpecError, freeze, norm, order_rows, row_matches
from webgym.sites.spec import GoalQuery, GoalSpec, GoalTemplate, format_loc

PLACEHOLDER = re.compile(r"\{([A-Za-z_]\w*)(?:\.([A-Za-z_]\w*))?\}")
RESERVED = frozenset({"title", "hostname"})
"""Placeholders the task text fills in from the site; a template cannot bind them."""


class NoGoalMade(SpecError):
    """A template's queries find no row for any combination: on a generated site that only means
    its data has nothing the template asks for (generate.py leaves the template out)."""


def _short(value: Any) -> str:
    """A bound value in a message: a row by its id, anything else as compact JSON."""
    if isinstance(value, dict) and "id" in value:
        return str(value["id"])
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text if len(text) <= 60 else text[:59] + "…"


def describe(bound: dict[str, Any]) -> str:
    """'p=p08, q=mug': which values made a goal."""
    return ", ".join(f"{name}={_short(value)}" for name, value in bound.items())


def written(value: Any, loc: str) -> str:
    """A bound value inside longer text: lists joined, floats without trailing zeros; a record is an
    error (name one of its fields)."""
    if isinstance(value, dict):
        raise SpecError(f"{loc}: a record cannot be written into text; name one of its fields, "
                        f"e.g. {{NAME.{next(iter(value), 'name')}}}")
    if isinstance(value, list):
        return ", ".join(written(v, loc) for v in value)
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


class _Filler:
    """Replaces the placeholders of one combination of bindings."""

    def __init__(self, bound: dict[str, Any], later: set[str]) -> None:
        self.bound, self.later = bound, later

    def value(self, match: re.Match, loc: str) -> Any:
        name, field = match.group(1), match.group(2)
        if name in self.later:
            raise SpecError(f"{loc}: {match.group(0)} is bound after this; list {name!r} earlier in vary")
        value = self.bound[name]
        if field is None:
            return value
        if not isinstance(value, dict):
            raise SpecError(f"{loc}: {match.group(0)}: {name} is {_short(value)!r}, not a record with fields")
        if field not in value:
            raise SpecError(f"{loc}: {match.group(0)}: {name} has no field {field!r} "
                            f"(fields: {', '.join(sorted(value))})")
        return value[field]

    def known(self, match: re.Match) -> bool:
        return match.group(1) in self.bound or match.group(1) in self.later

    def fill(self, node: Any, loc: str) -> Any:
        if isinstance(node, dict):
            return {key: self.fill(value, f"{loc}.{key}") for key, value in node.items()}
        if isinstance(node, list):
            return [self.fill(item, f"{loc}[{i}]") for i, item in enumerate(node)]
        if not isinstance(node, str):
            return node
        whole = PLACEHOLDER.fullmatch(node)
        if whole and self.known(whole):
            return self.value(whole, loc)
        return PLACEHOLDER.sub(lambda m: written(self.value(m, loc), loc) if self.known(m) else m.group(0), node)


def _rows(query: GoalQuery, data: dict[str, Any], filler: _Filler, loc: str) -> list[dict[str, Any]]:
    """The rows a query picks for the bindings made so far."""
    table = data.get(query.source)
    if not isinstance(table, list):
        raise SpecError(f"{loc}.from: unknown data table {query.source!r} (tables: {', '.join(sorted(data)) or 'none'})")
    fields = {key for row in table if isinstance(row, dict) for key in row}
    active = []
    for j, flt in enumerate(query.where):
        where = f"{loc}.where[{j}]"
        columns = [flt.field] if isinstance(flt.field, str) else flt.field
        missing = [c for c in columns if c not in fields]
        if missing:
            raise SpecError(f"{where}.field: table {query.source!r} has no field {missing[0]!r}")
        if flt.op not in OPS:
            raise SpecError(f"{where}.op: unknown operator {flt.op!r} (operators: {', '.join(OPS)})")
        wanted = freeze(filler.fill(flt.value, f"{where}.value"))
        if wanted is None or wanted == "" or wanted == () or (flt.ignore is not None and norm(wanted) == norm(flt.ignore)):
            continue
        active.append((columns, OPS[flt.op], wanted))
    order = [str(filler.fill(key, f"{loc}.sort[{n}]")) for n, key in enumerate(query.sort)]
    for n, key in enumerate(order):
        if key.lstrip("-") not in fields:
            raise SpecError(f"{loc}.sort[{n}]: table {query.source!r} has no field {key.lstrip('-')!r}")
    rows = [row for row in table if all(row_matches(row, c, test, wanted) for c, test, wanted in active)]
    rows = order_rows(rows, order)[query.offset:]
    return rows if query.limit is None else rows[:query.limit]


def combinations(template: GoalTemplate, data: dict[str, Any], loc: str) -> Iterator[dict[str, Any]]:
    """Every combination of the template's bindings, in order (the first name varies slowest)."""
    names = list(template.vary)

    def extend(bound: dict[str, Any], k: int) -> Iterator[dict[str, Any]]:
        if k == len(names):
            yield bound
            return
        name, choice = names[k], template.vary[names[k]]
        if isinstance(choice, list):
            values = choice
        else:
            values = _rows(choice, data, _Filler(bound, set(names[k:])), f"{loc}: vary.{name}")
        for value in values:
            yield from extend({**bound, name: value}, k + 1)
    yield from extend({}, 0)


def instantiate(raw: dict[str, Any], data: dict[str, Any], source: str, index: int) -> list[GoalSpec]:
    """The goals the template at goals[index] of a spec file makes."""
    try:
        template = GoalTemplate.model_validate(raw)
    except ValidationError as error:
        raise SpecError("\n".join(f"{source}: goals[{index}].{format_loc(e['loc'])}: {e['msg']}"
                                  for e in error.errors())) from None
    where = f"{source}: goals[{index}] (template {template.id!r})"
    for name, values in template.vary.items():
        if name in RESERVED:
            raise SpecError(f"{where}: vary.{name}: {{{name}}} is filled in from the site; choose another name")
        if isinstance(values, list) and not values:
            raise SpecError(f"{where}: vary.{name}: no values")
    goals: list[GoalSpec] = []
    made: dict[str, tuple[str, dict[str, Any]]] = {}
    body = {"id": template.id, "text": template.text, "groups": template.groups}
    for bound in combinations(template, data or {}, where):
        origin = f"goals[{index}] (template {template.id!r} with {describe(bound)})"
        filler = _Filler(bound, set())
        filled = {key: filler.fill(value, f"{where} with {describe(bound)}: {key}") for key, value in body.items()}
        goal_id = str(filled["id"])
        if goal_id in made:
            first, first_goal = made[goal_id]
            if filled == first_goal:  # two rows that lead to the very same goal (two places sharing both filters)
                continue
            raise SpecError(f"{where}: id {goal_id!r} is made by both {first} and {describe(bound)}; "
                            f"name the varying values in the id")
        made[goal_id] = (describe(bound), filled)
        goals.append(_goal({**filled, "id": goal_id, "text": str(filled["text"]), "origin": origin},
                           f"{where} with {describe(bound)}: "))
    if not goals:
        raise NoGoalMade(f"{where}: makes no goal (a query in vary finds no row for any combination)")
    return goals


def _goal(raw: Any, prefix: str) -> GoalSpec:
    try:
        return GoalSpec.model_validate(raw)
    except ValidationError as error:
        raise SpecError("\n".join(f"{prefix}{format_loc(e['loc'])}: {e['msg']}" for e in error.errors())) from None


def expand_goals(goals: list[Any], data: Any, source: str) -> list[GoalSpec]:
    """A spec's goals, each template replaced by the goals it makes; errors name the file and the
    goal's place in it, ids must stay unique."""
    out: list[GoalSpec] = []
    seen: dict[str, str] = {}
    for i, raw in enumerate(goals):
        made = (instantiate(raw, data if isinstance(data, dict) else {}, source, i)
                if isinstance(raw, dict) and "vary" in raw else [_goal(raw, f"{source}: goals[{i}].")])
        for goal in made:
            here = goal.origin or f"goals[{i}]"
            if goal.id in seen:
                raise SpecError(f"{source}: {here}: duplicate goal id {goal.id!r} (also made by {seen[goal.id]})")
            seen[goal.id] = here
        out += made
    return out
