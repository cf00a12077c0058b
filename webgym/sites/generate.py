"""Sites made from a family and a seed: data, starting state, wording, look and goals.

`generate_raw(family, seed)` draws, with one generator seeded by (family, seed) and in a fixed
order: the family's `draw` values, the site's identity, its data tables, the spec fragment (starting
state, typed values), one choice per variant path, one wording per goal, and a look from
render.THEME_CHOICES. Goal templates are then made on the site's data and written out as goals (a
template that finds nothing in this site's data makes none). The result is a whole spec (the graph
merged in, no `extends`, no templates), named `<family>-g<seed>` with host name
`<family>-g<seed>.test`, that records its family and seed: the same family and seed give the same
spec, byte for byte. `generate_spec` parses it like a spec file.
"""

from __future__ import annotations

import itertools
import random
from typing import Any

from webgym.sites.expr import order_rows
from webgym.sites.family import Family, TableRecipe, shared_words
from webgym.sites.goals import NoGoalMade, instantiate
from webgym.sites.render import THEME_CHOICES
from webgym.sites.rules import Drawing
from webgym.sites.spec import SiteSpec
from webgym.sites.specfiles import deep_merge, parse_site

MAX_REDRAWS = 200
"""Draws of one row before a table with `unique` fields gives up."""


def generated_name(family: str, seed: int) -> str:
    return f"{family}-g{seed}"


def describe_instance(family: Family, seed: int) -> str:
    """Where a generated site comes from, for every message about it."""
    return f"{family.where()} seed {seed} ({generated_name(family.family, seed)})"


def _public(row: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in row.items() if not key.startswith("_")}


def draw_table(drawing: Drawing, name: str, recipe: TableRecipe) -> list[dict[str, Any]]:
    """Rows of one table, each field drawn in order; rows that clash on a `unique` field are drawn again."""
    loc = f"data.{name}"
    if recipe.each is not None and recipe.rows is not None:
        raise drawing.fail(loc, "give rows or each, not both")
    if recipe.each is not None:
        scopes = _each(drawing, _elements(drawing, recipe.each, f"{loc}.each"), f"{loc}.each")
    else:
        scopes = [{}] * (drawing.count(recipe.rows, f"{loc}.rows", {}) if recipe.rows is not None else 0)
    rows: list[dict[str, Any]] = [dict(row) for row in recipe.fixed]
    for scope in scopes:
        for _ in range(drawing.count(recipe.per, f"{loc}.per", scope) if recipe.each is not None else 1):
            rows.append(_unique_row(drawing, loc, recipe, rows, {**scope, "n": len(rows) + 1}))
    if recipe.sort:
        rows = order_rows(rows, recipe.sort)
    drawing.tables[name] = rows
    return rows


def _elements(drawing: Drawing, each: Any, loc: str) -> Any:
    """What `each` names: a word list (by name), a rule's list, or for a mapping of names, each
    name's list."""
    if isinstance(each, str):
        return drawing.list_of(each, loc, {})[0]
    if isinstance(each, dict) and not any(str(key).startswith("$") for key in each):
        return {name: _elements(drawing, rule, f"{loc}.{name}") for name, rule in each.items()}
    return drawing.value(each, loc)


def _each(drawing: Drawing, elements: Any, loc: str) -> list[dict[str, Any]]:
    """What each row of an `each` table names: `item` for a list's elements, or one name per list of a
    mapping of lists, for every combination (the first list varies slowest)."""
    if isinstance(elements, list):
        return [{"item": element} for element in elements]
    if not isinstance(elements, dict) or not all(isinstance(v, list) for v in elements.values()):
        raise drawing.fail(loc, f"{elements!r} is neither a list nor a mapping of names to lists")
    return [dict(zip(elements, combination)) for combination in itertools.product(*elements.values())]


def _unique_row(drawing: Drawing, loc: str, recipe: TableRecipe, rows: list[dict[str, Any]],
                scope: dict[str, Any]) -> dict[str, Any]:
    taken = {field: {repr(row.get(field)) for row in rows} for field in recipe.unique}
    for _ in range(MAX_REDRAWS):
        row: dict[str, Any] = {}
        drawing.row = row
        drawing.pending = {field: (rule, f"{loc}.fields.{field}") for field, rule in recipe.fields.items()}
        while drawing.pending:
            field, (rule, where) = next(iter(drawing.pending.items()))
            del drawing.pending[field]
            row[field] = drawing.value(rule, where, {**scope, **row})
        row = {field: row[field] for field in recipe.fields}
        if not any(repr(row.get(field)) in seen for field, seen in taken.items()):
            return row
    raise drawing.fail(loc, f"no row with new {', '.join(recipe.unique)} after {MAX_REDRAWS} draws "
                            f"(row {scope['n']}); lengthen the word lists or draw fewer rows")


def set_path(spec: dict[str, Any], path: str, value: Any, drawing: Drawing) -> None:
    """Set a dotted path of a spec (numbers index lists); every part but the last must exist."""
    parts = path.split(".")
    node: Any = spec
    for depth, part in enumerate(parts[:-1]):
        key: Any = int(part) if isinstance(node, list) and part.isdigit() else part
        try:
            node = node[key]
        except (KeyError, IndexError, TypeError):
            raise drawing.fail(f"variants.{path}", f"the spec has no {'.'.join(parts[:depth + 1])}") from None
    last: Any = int(parts[-1]) if isinstance(node, list) and parts[-1].isdigit() else parts[-1]
    if isinstance(node, list) and not (isinstance(last, int) and last < len(node)):
        raise drawing.fail(f"variants.{path}", f"the spec has no {path}")
    node[last] = value


def generate_raw(family: Family, seed: int) -> dict[str, Any]:
    """The whole spec of the family's site for `seed`, as parsed YAML (see the module docstring)."""
    name = generated_name(family.family, seed)
    drawing = Drawing(random.Random(f"{family.family}:{seed}"), {**shared_words(), **family.words},
                      describe_instance(family, seed))
    for key, rule in family.draw.items():
        drawing.names[key] = drawing.value(rule, f"draw.{key}")
    title = drawing.value(family.site.title, "site.title")
    drawing.names.update(title=title, hostname=f"{name}.test")
    identity = {"name": name, "hostname": f"{name}.test", "title": title,
                "tagline": drawing.value(family.site.tagline, "site.tagline"), "domain": family.site.domain,
                "subdomain": drawing.value(family.site.subdomain, "site.subdomain"), "family": family.family,
                "seed": seed}
    tables = {table: [_public(row) for row in draw_table(drawing, table, recipe)]
              for table, recipe in family.data.items()}
    graph = family.graph_raw()
    spec = deep_merge(graph, {**identity, "data": {**graph.get("data", {}), **tables}})
    spec = deep_merge(spec, drawing.literal(family.spec, "spec"))
    spec.setdefault("graph", family.family)
    for path, choices in family.variants.items():
        if not choices:
            raise drawing.fail(f"variants.{path}", "no choices")
        set_path(spec, path, drawing.rng.choice(choices), drawing)
    worded = [_worded(goal, drawing, i) for i, goal in enumerate(family.goals)]
    spec["theme"] = {key: drawing.rng.choice(choices) for key, choices in THEME_CHOICES.items()}
    spec["goals"] = _expanded(worded, spec["data"], drawing.where)
    return spec


def _expanded(goals: list[dict[str, Any]], data: dict[str, Any], where: str) -> list[dict[str, Any]]:
    """The goals the family's templates make on this site's data, written out (so a generated spec
    file reads without its family); a template whose queries find nothing here makes none."""
    out = []
    for index, goal in enumerate(goals):
        if "vary" not in goal:
            out.append(goal)
            continue
        try:
            made = instantiate(goal, data, where, index)
        except NoGoalMade:
            continue
        out += [made_goal.model_dump(exclude_none=True) for made_goal in made]
    return out


def _worded(goal: dict[str, Any], drawing: Drawing, index: int) -> dict[str, Any]:
    """A goal (or template) with one of its wordings, when it has several."""
    text = goal.get("text")
    if isinstance(text, list):
        if not text:
            raise drawing.fail(f"goals[{index}].text", "no wordings")
        return {**goal, "text": drawing.rng.choice(text)}
    return goal


def generate_spec(family: Family, seed: int) -> SiteSpec:
    """The family's site for `seed`, parsed and checked like a spec file; errors name family and seed."""
    return parse_site(generate_raw(family, seed), describe_instance(family, seed))
