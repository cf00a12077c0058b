"""A site spec compiled into a deterministic state machine: states, views, preconditions, effects.

A state is the page id plus one frozen value per state variable (see expr.freeze). Taking an action
checks that the page offers it, that its parameters are in their domains and that its precondition
holds; then its effects run in order, each seeing the previous ones, and the page switches to the
action's `to`. A refused action leaves the state as it was (AutoWebWorld's no-op rule) and says why.

Effects: {op: set|inc|dec|clear|append|remove|toggle, var: NAME, value: EXPR}
    set      var := value                     inc/dec  int += value (default 1), within min..max
    clear    var := its default               append   add to a set, or a record to a list (a record
    remove   take a member/record out              with the same `key` is replaced); refused when full
             (a list's records by key)        toggle   add/remove a set member, or flip a bool
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from webgym.sites.expr import (OPS, Compiled, Compiler, Env, Record, SpecError, freeze, norm, order_rows, row_matches,
                               thaw)
from webgym.sites.spec import ActionSpec, SiteSpec, VarSpec, ViewSpec

if TYPE_CHECKING:
    from webgym.sites.pathcache import PathCache

ANSWER = "answer"
"""The agent's final action: not an FSM edge; every oracle path ends with it."""

RELATIVE_OPS = frozenset({"inc", "dec", "append", "remove", "toggle"})
EFFECT_OPS = frozenset({"set", "clear"}) | RELATIVE_OPS
EFFECT_TYPES: dict[str, set[str]] = {
    "inc": {"int"}, "dec": {"int"}, "append": {"set", "list"}, "remove": {"set", "list"},
    "toggle": {"set", "bool"}}
MAX_TEXT = 200
VIEW_CACHE_LIMIT = 200_000


class Rejected(Exception):
    """An action that cannot be taken in this state; the message says why, for the agent."""


@dataclass(frozen=True, slots=True)
class State:
    page: str
    values: tuple


@dataclass(frozen=True)
class Step:
    """One FSM action with its parameters (or the final `answer`, params {'text': ...})."""

    action: str
    params: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def of(cls, action: str, params: dict[str, Any] | None = None) -> Step:
        return cls(action, tuple(sorted((k, freeze(v)) for k, v in (params or {}).items())))

    @property
    def args(self) -> dict[str, Any]:
        return {k: thaw(v) for k, v in self.params}

    def __str__(self) -> str:
        args = ", ".join(f"{k}={json.dumps(v)}" for k, v in self.args.items())
        return f"{self.action}({args})"


@dataclass
class ViewResult:
    rows: list[dict[str, Any]]
    total: int
    page: int
    pages: int


@dataclass
class Var:
    name: str
    spec: VarSpec
    index: int
    default: Any
    domain: tuple | None


@dataclass
class Effect:
    op: str
    var: str
    run: Callable[[list, Env], None]
    parts: list[Compiled]


@dataclass
class Param:
    name: str
    candidates: Compiled
    free: bool


@dataclass
class Action:
    id: str
    pages: frozenset[str]
    params: list[Param]
    pre: list[Compiled]
    effects: list[Effect]
    to: str | None


def _default(spec: VarSpec) -> Any:
    if spec.default is not None:
        return freeze(spec.default)
    return {"int": spec.min if spec.min is not None else 0, "bool": False, "set": (), "list": ()}.get(spec.type)


class Machine:
    """Compiled spec: answers what is enabled, applies actions, computes views and snapshots."""

    def __init__(self, spec: SiteSpec) -> None:
        self.spec = spec
        where = spec.where()
        self.tables: dict[str, dict[str, dict[str, Any]]] = {}
        for table, rows in spec.data.items():
            by_id: dict[str, dict[str, Any]] = {}
            for i, row in enumerate(rows):
                if not isinstance(row, dict) or "id" not in row:
                    raise SpecError(f"{where}: data.{table}[{i}]: every row needs an 'id'")
                if row["id"] in by_id:
                    raise SpecError(f"{where}: data.{table}[{i}]: duplicate id {row['id']!r}")
                by_id[row["id"]] = row
            self.tables[table] = by_id
        self.vars: dict[str, Var] = {}
        for i, (name, var) in enumerate(spec.state.items()):
            self.vars[name] = Var(name, var, i, _default(var), self._domain(name, var, f"{where}: state.{name}"))
        self.index = {name: v.index for name, v in self.vars.items()}
        if spec.start_page not in spec.pages:
            raise SpecError(f"{where}: start_page: unknown page {spec.start_page!r} (pages: {', '.join(spec.pages)})")
        self._view_cache: dict[tuple, ViewResult] = {}
        self.views: dict[str, tuple[Callable[[Env], ViewResult], frozenset[str]]] = {}
        base = Compiler(self.index, self.tables, frozenset(spec.views))
        for name, view in spec.views.items():
            self.views[name] = self._compile_view(name, view, base, f"{where}: views.{name}")
            base.view_reads[name] = self.views[name][1]
        self.compiler = base
        self.actions: dict[str, Action] = {}
        for action_id, action in spec.actions.items():
            self.actions[action_id] = self._compile_action(action_id, action, f"{where}: actions.{action_id}")
        self.by_page: dict[str, list[Action]] = {
            page: [a for a in self.actions.values() if page in a.pages] for page in spec.pages}
        actions = list(self.actions.values())
        self.value_reads: frozenset[str] = frozenset().union(
            *(p.candidates.reads for a in actions for p in a.params),
            *(part.reads for a in actions for e in a.effects for part in e.parts))
        """Variables whose exact value the dynamics read: parameter domains and effect values, with
        the variables of the views they use (views only rendered on pages do not count)."""
        self.relative_writes = frozenset(e.var for a in actions for e in a.effects if e.op in RELATIVE_OPS)
        """Variables changed relative to their old value (inc, append, toggle...)."""
        self.paths: PathCache | None = None
        """Oracle paths from the start state on disk (pathcache.py), when the site was given a directory."""
        self.preconditions: list[Compiled] = [c for a in actions for c in a.pre]
        self._reads = {a.id: frozenset().union(
            *(c.reads for c in a.pre), *(p.candidates.reads for p in a.params),
            *(part.reads for e in a.effects for part in e.parts),
            {e.var for e in a.effects if e.op in RELATIVE_OPS}) for a in actions}
        """Variables each action reads: precondition, parameter domains, effect values, and the
        variables it changes relative to their value (append also checks how full a list is)."""
        self._writes = {a.id: frozenset(e.var for e in a.effects) for a in actions}
        self._kills = {a.id: frozenset(e.var for e in a.effects if e.op in ("set", "clear")) for a in actions}

    def relevant_vars(self, always: frozenset[str]) -> frozenset[str]:
        """The variables that can influence `always` (what a goal reads) or the page: those, and
        whatever an action reads when it writes a relevant variable or moves to a page, to a fixed
        point. An action that only writes other variables (a form whose results the goal never
        looks at) cannot change anything the goal sees, however the search takes it."""
        relevant = set(always)
        changed = True
        while changed:
            changed = False
            for action in self.actions.values():
                if action.to is not None or self._writes[action.id] & relevant:
                    new = self._reads[action.id] - relevant
                    if new:
                        relevant |= new
                        changed = True
        return frozenset(relevant)

    def live_vars(self, always: frozenset[str]) -> dict[str, frozenset[str]]:
        """Per page, the variables that some sequence of actions from that page may read before it
        overwrites them (`set` or `clear`), plus `always` (what a goal reads in every state). The
        others cannot change what happens next: a search can forget them on that page."""
        live = {page: set(always).union(*(self._reads[a.id] for a in actions))
                for page, actions in self.by_page.items()}
        changed = True
        while changed:
            changed = False
            for page, actions in self.by_page.items():
                for action in actions:
                    carried = live[action.to or page] - self._kills[action.id] - live[page]
                    if carried:
                        live[page] |= carried
                        changed = True
        return {page: frozenset(names) for page, names in live.items()}

    # ---- compile -------------------------------------------------------------------------

    def _domain(self, name: str, var: VarSpec, loc: str) -> tuple | None:
        if var.values_from:
            table, _, column = var.values_from.partition(".")
            if table not in self.tables or not column:
                raise SpecError(f"{loc}.values_from: {var.values_from!r} must be TABLE.FIELD of a data table "
                                f"(tables: {', '.join(self.tables) or 'none'})")
            domain = tuple(dict.fromkeys(freeze(row.get(column)) for row in self.tables[table].values()))
        elif var.values is not None:
            domain = tuple(freeze(v) for v in var.values)
        else:
            domain = None
        if var.type == "enum" and not domain:
            raise SpecError(f"{loc}: an enum needs values or values_from")
        if var.type == "list" and not var.fields:
            raise SpecError(f"{loc}: a list needs the fields of its records")
        if var.type == "int" and var.min is not None and var.max is not None and var.min > var.max:
            raise SpecError(f"{loc}: min {var.min} is above max {var.max}")
        if var.labels and var.labels not in self.tables:
            raise SpecError(f"{loc}.labels: unknown data table {var.labels!r}")
        if var.overlay and var.overlay.table not in self.tables:
            raise SpecError(f"{loc}.overlay.table: unknown data table {var.overlay.table!r}")
        if var.overlay and var.type != "set":
            raise SpecError(f"{loc}.overlay: only a set can overlay a table")
        default = _default(var)
        if default is not None and var.type in ("enum",) and default not in domain:
            raise SpecError(f"{loc}.default: {var.default!r} is not one of {list(domain)}")
        return domain

    def _compile_view(self, name: str, view: ViewSpec, compiler: Compiler,
                      loc: str) -> tuple[Callable[[Env], ViewResult], frozenset[str]]:
        reads: set[str] = set()
        if view.source in self.tables:
            overlays = [(v.index, v.spec.overlay.field) for v in self.vars.values()
                        if v.spec.overlay and v.spec.overlay.table == view.source]
            reads |= {v.name for v in self.vars.values() if v.spec.overlay and v.spec.overlay.table == view.source}
            rows = list(self.tables[view.source].values())

            def source(env: Env) -> list[dict[str, Any]]:
                if not overlays:
                    return rows
                out = []
                for row in rows:
                    row = dict(row)
                    for i, column in overlays:
                        row[column] = row["id"] in env.values[i]
                    out.append(row)
                return out
        elif view.source in self.vars and self.vars[view.source].spec.type == "list":
            i = self.vars[view.source].index
            reads.add(view.source)

            def source(env: Env) -> list[dict[str, Any]]:
                return [{**thaw(item), "id": item.get("id", str(n))} for n, item in enumerate(env.values[i])]
        else:
            raise SpecError(f"{loc}.from: {view.source!r} is neither a data table nor a list variable")
        filters = []
        for j, flt in enumerate(view.where):
            if flt.op not in OPS:
                raise SpecError(f"{loc}.where[{j}].op: unknown operator {flt.op!r} (operators: {', '.join(OPS)})")
            value = compiler.expr(flt.value, f"{loc}.where[{j}].value")
            if value.params:
                raise SpecError(f"{loc}.where[{j}].value: views cannot read action parameters")
            reads |= value.reads
            columns = [flt.field] if isinstance(flt.field, str) else flt.field
            filters.append((columns, OPS[flt.op], value.fn, freeze(flt.ignore)))
        sort_by = None
        if view.sort:
            by = compiler.expr(view.sort.by, f"{loc}.sort.by")
            reads |= by.reads
            sort_by = (by.fn, view.sort.options)
        page_index = size = None
        if view.page:
            if view.page.var not in self.vars or self.vars[view.page.var].spec.type != "int":
                raise SpecError(f"{loc}.page.var: {view.page.var!r} is not an int variable")
            page_index, size = self.vars[view.page.var].index, view.page.size
            reads.add(view.page.var)

        def compute(env: Env) -> ViewResult:
            selected = []
            active = []
            for columns, test, get, ignore in filters:
                wanted = get(env)
                if wanted is None or wanted == "" or wanted == () or (ignore is not None and norm(wanted) == norm(ignore)):
                    continue
                active.append((columns, test, wanted))
            for row in source(env):
                if all(row_matches(row, columns, test, wanted) for columns, test, wanted in active):
                    selected.append(row)
            if sort_by:
                selected = order_rows(selected, sort_by[1].get(sort_by[0](env)) or [])
            total = len(selected)
            if size is None:
                return ViewResult(selected, total, 1, 1)
            pages = max(1, math.ceil(total / size))
            page = min(max(1, env.values[page_index] or 1), pages)
            return ViewResult(selected[(page - 1) * size: page * size], total, page, pages)
        deps = tuple(sorted(self.index[r] for r in reads))
        return self._cached(name, compute, deps), frozenset(reads)

    def _cached(self, name: str, compute: Callable[[Env], ViewResult],
                deps: tuple[int, ...]) -> Callable[[Env], ViewResult]:
        cache = self._view_cache

        def view(env: Env) -> ViewResult:
            key = (name, *(env.values[i] for i in deps))
            hit = cache.get(key)
            if hit is None:
                if len(cache) > VIEW_CACHE_LIMIT:
                    cache.clear()
                hit = cache[key] = compute(env)
            return hit
        return view

    def _compile_action(self, action_id: str, action: ActionSpec, loc: str) -> Action:
        spec = self.spec
        pages = frozenset(spec.pages) if action.pages == "*" else frozenset(action.pages)
        for page in pages - set(spec.pages):
            raise SpecError(f"{loc}.pages: unknown page {page!r} (pages: {', '.join(spec.pages)})")
        if action.to is not None and action.to not in spec.pages:
            raise SpecError(f"{loc}.to: unknown page {action.to!r} (pages: {', '.join(spec.pages)})")
        compiler = Compiler(self.index, self.tables, frozenset(spec.views), params=frozenset(action.params),
                            view_reads=self.compiler.view_reads)
        params = []
        for name, param in action.params.items():
            if param.values is None and param.source is None:
                raise SpecError(f"{loc}.params.{name}: give candidate values or 'from'")
            if param.values is not None and param.source is not None:
                raise SpecError(f"{loc}.params.{name}: give either values or 'from', not both")
            node = param.values if param.values is not None else param.source
            candidates = compiler.expr(node, f"{loc}.params.{name}.{'values' if param.values is not None else 'from'}")
            if candidates.params:
                raise SpecError(f"{loc}.params.{name}: candidates cannot depend on other parameters")
            if param.labels and param.labels not in self.tables:
                raise SpecError(f"{loc}.params.{name}.labels: unknown data table {param.labels!r}")
            if param.bind and param.bind not in self.vars:
                raise SpecError(f"{loc}.params.{name}.bind: unknown variable {param.bind!r}")
            params.append(Param(name, candidates, param.free))
        pre = compiler.conditions(action.pre, f"{loc}.pre")
        effects = [self._compile_effect(e, f"{loc}.effects[{i}]", compiler) for i, e in enumerate(action.effects)]
        if action.element.bind and action.element.bind not in self.vars:
            raise SpecError(f"{loc}.element.bind: unknown variable {action.element.bind!r}")
        return Action(action_id, pages, params, pre, effects, action.to)

    def _compile_effect(self, node: Any, loc: str, compiler: Compiler) -> Effect:
        if not isinstance(node, dict):
            raise SpecError(f"{loc}: an effect must be an object like {{op: set, var: x, value: 1}}")
        op, name = node.get("op"), node.get("var")
        if op not in EFFECT_OPS:
            raise SpecError(f"{loc}.op: unknown effect {op!r} (effects: {', '.join(sorted(EFFECT_OPS))})")
        if name not in self.vars:
            raise SpecError(f"{loc}.var: unknown variable {name!r} (variables: {', '.join(sorted(self.vars))})")
        unknown = set(node) - {"op", "var", "value"}
        if unknown:
            raise SpecError(f"{loc}: unknown key(s) {sorted(unknown)} in an effect")
        var = self.vars[name]
        kind = var.spec.type
        if op in EFFECT_TYPES and kind not in EFFECT_TYPES[op]:
            raise SpecError(f"{loc}: {op!r} does not apply to {name!r}, a {kind} "
                            f"(it applies to {', '.join(sorted(EFFECT_TYPES[op]))})")
        needs_value = op in ("set", "append", "remove") or (op == "toggle" and kind == "set")
        if needs_value and "value" not in node:
            raise SpecError(f"{loc}: effect {op!r} needs a value")
        value = compiler.expr(node.get("value", 1 if op in ("inc", "dec") else None), f"{loc}.value")
        i, get = var.index, value.fn
        coerce = self._coercer(var)

        if op == "set":
            def run(vals: list, env: Env) -> None:
                vals[i] = coerce(get(env))
        elif op == "clear":
            default = var.default

            def run(vals: list, env: Env) -> None:
                vals[i] = default
        elif op in ("inc", "dec"):
            sign = 1 if op == "inc" else -1

            def run(vals: list, env: Env) -> None:
                vals[i] = coerce((vals[i] or 0) + sign * int(get(env)))
        elif op == "append":
            def run(vals: list, env: Env) -> None:
                vals[i] = self._append(var, vals[i], get(env))
        elif op == "remove":
            def run(vals: list, env: Env) -> None:
                vals[i] = self._remove(var, vals[i], get(env))
        elif op == "toggle" and kind == "bool":
            def run(vals: list, env: Env) -> None:
                vals[i] = not vals[i]
        else:
            def run(vals: list, env: Env) -> None:
                item = get(env)
                vals[i] = (self._remove(var, vals[i], item) if item in vals[i] else self._append(var, vals[i], item))
        return Effect(op, name, run, [value])

    def _coercer(self, var: Var) -> Callable[[Any], Any]:
        spec, domain, name = var.spec, var.domain, var.name

        def coerce(value: Any) -> Any:
            if value is None:
                return var.default if spec.type in ("int", "bool", "set", "list") else None
            if spec.type == "text":
                text = str(value).strip()
                if len(text) > MAX_TEXT:
                    raise Rejected(f"{name}: text longer than {MAX_TEXT} characters")
                return text or None
            if spec.type == "enum":
                for option in domain:
                    if norm(option) == norm(value):
                        return option
                raise Rejected(f"{value!r} is not a valid {spec.description}")
            if spec.type == "int":
                try:
                    number = int(value)
                except (TypeError, ValueError):
                    raise Rejected(f"{value!r} is not a number") from None
                if spec.min is not None:
                    number = max(spec.min, number)
                if spec.max is not None:
                    number = min(spec.max, number)
                return number
            if spec.type == "bool":
                return bool(value)
            if spec.type == "set":
                return tuple(sorted(set(value if isinstance(value, tuple) else (value,)), key=repr))
            return value
        return coerce

    def _append(self, var: Var, current: tuple, item: Any) -> tuple:
        spec = var.spec
        if spec.type == "set":
            if item is None or item in current:
                return current
            if var.domain is not None and item not in var.domain:
                raise Rejected(f"{item!r} is not a valid {spec.description}")
            if spec.max_items and len(current) >= spec.max_items:
                raise Rejected(f"{spec.description} is full ({spec.max_items} at most)")
            return tuple(sorted(current + (item,), key=repr))
        if not isinstance(item, Record):
            raise Rejected(f"{spec.description}: only records can be added")
        if spec.key:
            kept = tuple(r for r in current if r.get(spec.key) != item.get(spec.key))
            if len(kept) < len(current):
                return tuple(item if r.get(spec.key) == item.get(spec.key) else r for r in current)
        if spec.max_items and len(current) >= spec.max_items:
            raise Rejected(f"{spec.description} is full ({spec.max_items} at most)")
        return current + (item,)

    def _remove(self, var: Var, current: tuple, item: Any) -> tuple:
        if var.spec.type == "set" or isinstance(item, Record):
            return tuple(v for v in current if v != item)
        key = var.spec.key or "id"
        return tuple(r for r in current if r.get(key) != item)

    # ---- run -----------------------------------------------------------------------------

    def initial(self) -> State:
        return State(self.spec.start_page, tuple(v.default for v in self.vars.values()))

    def env(self, state: State, params: dict[str, Any] | None = None, answer: str | None = None) -> Env:
        return Env(state.values, state.page, params, answer, self._view)

    def _view(self, name: str, env: Env) -> ViewResult:
        return self.views[name][0](env)

    def view(self, state: State, name: str) -> ViewResult:
        return self._view(name, self.env(state))

    def candidates(self, state: State, action: Action) -> dict[str, tuple]:
        env = self.env(state)
        out = {}
        for param in action.params:
            values = param.candidates.fn(env)
            out[param.name] = tuple(values) if isinstance(values, tuple) else (values,)
        return out

    def _run(self, state: State, action: Action, params: dict[str, Any], env: Env | None = None) -> State:
        env = env or self.env(state)
        env.params = params
        env.values = state.values
        for condition in action.pre:
            if not condition.fn(env):
                raise Rejected("not possible right now")
        vals = list(state.values)
        for effect in action.effects:
            effect.run(vals, env)
            env.values = tuple(vals)
        values = env.values
        env.values = state.values
        return State(action.to or state.page, values)

    def successors(self, state: State) -> Iterator[tuple[Step, State]]:
        """Every enabled (action, parameters) and the state it leads to, in spec order."""
        env = self.env(state)
        for action in self.by_page.get(state.page, ()):
            domains = self.candidates(state, action)
            for values in itertools.product(*domains.values()):
                params = dict(zip(domains, values))
                try:
                    nxt = self._run(state, action, params, env)
                except Rejected:
                    continue
                if nxt != state:
                    yield Step(action.id, tuple(sorted(params.items()))), nxt

    def available(self, state: State, action_id: str) -> bool:
        """Whether the page offers the action and the parts of its precondition that read no
        parameter hold (what a page can show before the user fills a form)."""
        action = self.actions[action_id]
        env = self.env(state)
        return state.page in action.pages and all(c.fn(env) for c in action.pre if not c.params)

    def enabled(self, state: State, action_id: str, params: dict[str, Any] | None = None) -> bool:
        try:
            self.apply(state, Step.of(action_id, params))
        except Rejected:
            return False
        return True

    def apply(self, state: State, step: Step) -> State:
        """The state after a step; raises Rejected (with the reason) when it cannot be taken."""
        action = self.actions.get(step.action)
        if action is None:
            raise Rejected(f"unknown action {step.action!r}")
        if state.page not in action.pages:
            raise Rejected(f"'{step.action}' is not offered on this page")
        return self._run(state, action, self.coerce_params(state, action, dict(step.params)))

    def coerce_params(self, state: State, action: Action, raw: dict[str, Any]) -> dict[str, Any]:
        """Parameters as given by a browser: matched to candidates, or accepted as free text."""
        unknown = set(raw) - {p.name for p in action.params}
        if unknown:
            raise Rejected(f"unexpected parameter(s) {sorted(unknown)}")
        domains = self.candidates(state, action) if action.params else {}
        out = {}
        for param in action.params:
            if param.name not in raw:
                raise Rejected(f"missing {param.name}")
            value = freeze(raw[param.name])
            match = next((c for c in domains[param.name] if norm(c) == norm(value)
                          or (not isinstance(c, str) and str(c) == str(value))), None)
            if match is not None:
                out[param.name] = match
            elif param.free and isinstance(value, str):
                if len(value) > MAX_TEXT:
                    raise Rejected(f"{param.name}: text longer than {MAX_TEXT} characters")
                out[param.name] = value.strip()
            else:
                raise Rejected(f"{value!r} is not an option for {param.name}")
        return out

    # ---- snapshots -----------------------------------------------------------------------

    def snapshot(self, state: State) -> dict[str, Any]:
        """The state as JSON: what the state endpoint serves and trajectories record."""
        return {"site": self.spec.name, "page": state.page,
                "state": {name: thaw(state.values[v.index]) for name, v in self.vars.items()}}

    def from_snapshot(self, snapshot: dict[str, Any]) -> State:
        if snapshot.get("site") not in (None, self.spec.name):
            raise ValueError(f"snapshot is of site {snapshot.get('site')!r}, not {self.spec.name!r}")
        page = snapshot.get("page")
        if page not in self.spec.pages:
            raise ValueError(f"snapshot page {page!r} is not a page of {self.spec.name}")
        given = snapshot.get("state") or {}
        unknown = set(given) - set(self.vars)
        if unknown:
            raise ValueError(f"snapshot has unknown variable(s) {sorted(unknown)}")
        values = []
        for name, var in self.vars.items():
            value = freeze(given.get(name, thaw(var.default)))
            if var.spec.type == "set":
                value = tuple(sorted(value, key=repr))
            values.append(value)
        return State(page, tuple(values))

    def state_hash(self, state: State) -> str:
        return snapshot_hash(self.snapshot(state))

    def label(self, var_or_table: str | None, value: Any) -> str:
        """Human label of a value: the `name` of the data row it identifies, else the value itself."""
        table = var_or_table
        if var_or_table in self.vars:
            table = self.vars[var_or_table].spec.labels
        row = self.tables.get(table or "", {}).get(value) if isinstance(value, (str, int)) else None
        if row is not None and "name" in row:
            return str(row["name"])
        return "" if value is None else str(value)


def snapshot_hash(snapshot: dict[str, Any]) -> str:
    """Stable hash of a snapshot (sorted keys, compact JSON): equal states, equal hashes."""
    body = json.dumps({"site": snapshot.get("site"), "page": snapshot.get("page"), "state": snapshot.get("state")},
                      sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(body.encode()).hexdigest()

