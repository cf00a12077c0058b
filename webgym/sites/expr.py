"""The expression and condition language of site specs, compiled to small Python closures.

Values inside the machine are frozen (hashable) so states can be deduplicated: a JSON list is a
tuple, a JSON object a `Record` (a tuple of sorted (key, value) pairs). `freeze` and `thaw` convert
at the boundary (snapshots, HTTP, rubric checks), without needing the spec.

Expressions (a literal, or an object with one operator key):

    {var: NAME}                          a state variable
    {param: NAME}                        an action parameter
    {page: true}                         the current page id
    {answer: true}                       the agent's final answer (goal facts only)
    {lookup: TABLE, id: EXPR, field: F}  a field of a data row
    {column: TABLE.FIELD}                that field of every row of a data table, in order
    {count: EXPR}                        number of items of a collection (null counts 0)
    {sum: EXPR, field: F, table: T, times: G}  sum of F over records (joined to table T by id), x G
    {pluck: EXPR, field: F}              the distinct values of F over records, sorted
    {record: {KEY: EXPR, ...}}           a record
    {view: NAME, field: F}               F of each row on the view's current page
    {view: NAME, total: true}            how many rows the view matches in all
    {view: NAME, pages: true}            the view's page numbers, 1..n

Conditions: one left side (var, param, page, answer or expr), an op and usually a value.
Text compares without case or repeated spaces; collections compare as multisets. The exact verifier
decides eq, contains, number_eq and contains_all on the answer with the type-aware matcher of
webgym/answers.py instead, so "K7-22910" does not contain K7-2291 there.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any


class SpecError(ValueError):
    """A spec is invalid; the message names the file and the exact location of each problem."""


class Record(tuple):
    """A frozen JSON object: sorted (key, value) pairs."""

    __slots__ = ()

    @classmethod
    def of(cls, mapping: dict[str, Any]) -> Record:
        return cls(sorted(mapping.items()))

    def get(self, key: str, default: Any = None) -> Any:
        for k, v in self:
            if k == key:
                return v
        return default


def freeze(value: Any) -> Any:
    """JSON value -> hashable machine value."""
    if isinstance(value, dict):
        return Record.of({k: freeze(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    return value


def thaw(value: Any) -> Any:
    """Machine value -> JSON value."""
    if isinstance(value, Record):
        return {k: thaw(v) for k, v in value}
    if isinstance(value, tuple):
        return [thaw(v) for v in value]
    return value


@functools.lru_cache(maxsize=1 << 16)
def norm(value: Any) -> Any:
    """Comparison form: text without case or repeated spaces, collections as sorted multisets.
    Cached: the same few values are compared again and again during a search."""
    if isinstance(value, str):
        return " ".join(value.casefold().split())
    if isinstance(value, Record):
        return tuple((k, norm(v)) for k, v in value)
    if isinstance(value, tuple):
        return tuple(sorted((norm(v) for v in value), key=repr))
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _empty(value: Any) -> bool:
    return value is None or value == "" or value == ()


def _member(item: Any, collection: Any) -> bool:
    if collection is None:
        return False
    if isinstance(collection, str):
        return isinstance(item, str) and norm(item) in norm(collection)
    wanted = norm(item)
    return any(norm(v) == wanted for v in collection)


def _order(test: Callable[[Any, Any], bool]) -> Callable[[Any, Any], bool]:
    def compare(a: Any, b: Any) -> bool:
        try:
            return a is not None and b is not None and test(a, b)
        except TypeError:
            return False
    return compare


def _length(value: Any) -> int:
    return 0 if value is None else len(value) if isinstance(value, (tuple, str)) else 1


OPS: dict[str, Callable[[Any, Any], bool]] = {
    "eq": lambda a, b: norm(a) == norm(b),
    "neq": lambda a, b: norm(a) != norm(b),
    "gt": _order(lambda a, b: a > b),
    "gte": _order(lambda a, b: a >= b),
    "lt": _order(lambda a, b: a < b),
    "lte": _order(lambda a, b: a <= b),
    "exists": lambda a, _: not _empty(a),
    "not_null": lambda a, _: a is not None,
    "in": lambda a, b: _member(a, b),
    "not_in": lambda a, b: not _member(a, b),
    "oneof": lambda a, b: _member(a, b),
    "contains": lambda a, b: _member(b, a),
    "contains_all": lambda a, b: all(_member(item, a) for item in (b if isinstance(b, tuple) else (b,))),
    "lacks": lambda a, b: not _member(b, a),
    "length_gt": lambda a, b: _length(a) > b,
    "length_eq": lambda a, b: _length(a) == b,
    "number_eq": lambda a, b: _number(a) is not None and abs(_number(a) - float(b)) < 0.005,
}
"""Condition operators: (left value, right value) -> bool. `exists`/`not_null` ignore the right."""

UNARY_OPS = frozenset({"exists", "not_null"})
LEFT_KEYS = ("var", "param", "page", "answer", "expr")


def row_matches(row: dict[str, Any], columns: list[str], test: Callable[[Any, Any], bool], wanted: Any) -> bool:
    """A data row passes a filter when any of the columns passes (views and goal templates)."""
    return any(test(freeze(row.get(c)), wanted) for c in columns)


def order_rows(rows: list[dict[str, Any]], keys: Iterable[str]) -> list[dict[str, Any]]:
    """Rows sorted by fields, the first key first ('-field': descending); stable, missing values apart."""
    ordered = list(rows)
    for key in reversed(list(keys)):
        column = key.lstrip("-")
        ordered.sort(key=lambda r, c=column: (r.get(c) is None, r.get(c)), reverse=key.startswith("-"))
    return ordered


def _number(value: Any) -> float | None:
    """The first number in a value ('$12.50' -> 12.5), for answers given as text."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    text = str(value).replace(",", "")
    digits = ""
    for ch in text:
        if ch.isdigit() or (ch == "." and digits and "." not in digits) or (ch == "-" and not digits):
            digits += ch
        elif digits:
            break
    try:
        return float(digits)
    except ValueError:
        return None


class Env:
    """What an expression can read: state values, page, parameters, the answer, views."""

    __slots__ = ("values", "page", "params", "answer", "views")

    def __init__(self, values: tuple, page: str | None, params: dict[str, Any] | None = None,
                 answer: str | None = None, views: Callable[[str, Env], Any] | None = None) -> None:
        self.values = values
        self.page = page
        self.params = params or {}
        self.answer = answer
        self.views = views


Fn = Callable[[Env], Any]
OPERATORS = ("var", "param", "page", "answer", "lookup", "column", "count", "sum", "pluck", "record", "view")


@dataclass
class Compiled:
    """A compiled expression or condition and what it reads (for search abstraction and checks)."""

    fn: Fn
    reads: frozenset[str] = frozenset()
    params: frozenset[str] = frozenset()
    views: frozenset[str] = frozenset()
    page: bool = False
    answer: bool = False
    data: bool = False
    guard: str | None = None
    """Conditions only: the variable compared when the left side is a variable and the value a literal."""

    @property
    def static(self) -> bool:
        """Depends on nothing but the spec's data: can be evaluated once."""
        return not (self.reads or self.params or self.views or self.page or self.answer)


def _merge(fn: Fn, parts: Iterable[Compiled], **extra: Any) -> Compiled:
    parts = list(parts)
    return Compiled(
        fn=fn,
        reads=frozenset().union(*(p.reads for p in parts)) | extra.get("reads", frozenset()),
        params=frozenset().union(*(p.params for p in parts)) | extra.get("params", frozenset()),
        views=frozenset().union(*(p.views for p in parts)) | extra.get("views", frozenset()),
        page=any(p.page for p in parts) or extra.get("page", False),
        answer=any(p.answer for p in parts) or extra.get("answer", False),
        data=any(p.data for p in parts) or extra.get("data", False))


@dataclass
class Compiler:
    """Compiles expressions against a variable index, optionally with data tables and views."""

    index: dict[str, int]
    data: dict[str, dict[str, dict[str, Any]]] | None = None
    view_names: frozenset[str] = frozenset()
    params: frozenset[str] | None = None
    allow_answer: bool = False
    view_reads: dict[str, frozenset[str]] = field(default_factory=dict)

    def expr(self, node: Any, loc: str) -> Compiled:
        if isinstance(node, dict):
            return self._operator(node, loc)
        if isinstance(node, list):
            items = [self.expr(item, f"{loc}[{i}]") for i, item in enumerate(node)]
            if all(item.static for item in items):
                value = tuple(item.fn(None) for item in items)
                return Compiled(fn=lambda env: value, data=any(i.data for i in items))
            fns = [item.fn for item in items]
            return _merge(lambda env: tuple(f(env) for f in fns), items)
        if node is not None and not isinstance(node, (str, int, float, bool)):
            raise SpecError(f"{loc}: {node!r} is not a value")
        return Compiled(fn=lambda env: node)

    def _operator(self, node: dict, loc: str) -> Compiled:
        keys = [k for k in OPERATORS if k in node]
        if len(keys) != 1:
            raise SpecError(f"{loc}: an expression needs exactly one of {', '.join(OPERATORS)}; "
                            f"got keys {sorted(node)}")
        op = keys[0]
        allowed = {"var": {"var"}, "param": {"param"}, "page": {"page"}, "answer": {"answer"},
                   "lookup": {"lookup", "id", "field"}, "column": {"column"}, "count": {"count"},
                   "sum": {"sum", "field", "table", "times"}, "pluck": {"pluck", "field"},
                   "record": {"record"}, "view": {"view", "field", "total", "pages"}}[op]
        unknown = set(node) - allowed
        if unknown:
            raise SpecError(f"{loc}: unknown key(s) {sorted(unknown)} in a {op!r} expression "
                            f"(allowed: {sorted(allowed)})")
        return getattr(self, f"_{op}")(node, loc)

    def _var(self, node: dict, loc: str) -> Compiled:
        name = node["var"]
        if name not in self.index:
            raise SpecError(f"{loc}.var: unknown variable {name!r} (variables: {', '.join(sorted(self.index))})")
        i = self.index[name]
        return Compiled(fn=lambda env: env.values[i], reads=frozenset({name}))

    def _param(self, node: dict, loc: str) -> Compiled:
        name = node["param"]
        if self.params is None:
            raise SpecError(f"{loc}.param: parameters can only be used inside an action")
        if name not in self.params:
            raise SpecError(f"{loc}.param: unknown parameter {name!r} "
                            f"(this action's parameters: {sorted(self.params) or 'none'})")
        return Compiled(fn=lambda env: env.params.get(name), params=frozenset({name}))

    def _page(self, node: dict, loc: str) -> Compiled:
        return Compiled(fn=lambda env: env.page, page=True)

    def _answer(self, node: dict, loc: str) -> Compiled:
        if not self.allow_answer:
            raise SpecError(f"{loc}.answer: the answer can only be read by goal facts")
        return Compiled(fn=lambda env: env.answer, answer=True)

    def _table(self, table: Any, loc: str) -> dict[str, dict[str, Any]]:
        if self.data is None:
            raise SpecError(f"{loc}: data lookups are not available here (resolve them first)")
        if table not in self.data:
            raise SpecError(f"{loc}: unknown data table {table!r} (tables: {', '.join(sorted(self.data))})")
        return self.data[table]

    def _lookup(self, node: dict, loc: str) -> Compiled:
        rows = self._table(node["lookup"], f"{loc}.lookup")
        if "id" not in node or "field" not in node:
            raise SpecError(f"{loc}: a lookup needs id and field")
        key = self.expr(node["id"], f"{loc}.id")
        name = node["field"]
        if rows and not any(name in row for row in rows.values()):
            raise SpecError(f"{loc}.field: table {node['lookup']!r} has no field {name!r}")
        get = key.fn

        def lookup(env: Env) -> Any:
            row = rows.get(get(env))
            return None if row is None else freeze(row.get(name))
        return _merge(lookup, [key], data=True)

    def _column(self, node: dict, loc: str) -> Compiled:
        table, _, name = str(node["column"]).partition(".")
        rows = self._table(table, f"{loc}.column")
        if not name:
            raise SpecError(f"{loc}.column: write TABLE.FIELD, e.g. products.id")
        values = tuple(row.get(name) for row in rows.values())
        return Compiled(fn=lambda env: values, data=True)

    def _count(self, node: dict, loc: str) -> Compiled:
        inner = self.expr(node["count"], f"{loc}.count")
        get = inner.fn
        return _merge(lambda env: _length(get(env)), [inner])

    def _sum(self, node: dict, loc: str) -> Compiled:
        inner = self.expr(node["sum"], f"{loc}.sum")
        name, times = node.get("field"), node.get("times")
        if not name:
            raise SpecError(f"{loc}: a sum needs a field")
        rows = self._table(node["table"], f"{loc}.table") if "table" in node else None
        get = inner.fn

        def total(env: Env) -> float:
            result = 0.0
            for item in get(env) or ():
                source = rows.get(item.get("id"), {}) if rows is not None else item
                result += float(source.get(name) or 0) * float(item.get(times) or 0 if times else 1)
            return round(result, 2)
        return _merge(total, [inner], data=rows is not None)

    def _pluck(self, node: dict, loc: str) -> Compiled:
        inner = self.expr(node["pluck"], f"{loc}.pluck")
        name = node.get("field")
        if not name:
            raise SpecError(f"{loc}: a pluck needs a field")
        get = inner.fn

        def pluck(env: Env) -> tuple:
            values = {item.get(name) for item in get(env) or () if isinstance(item, Record)}
            return tuple(sorted(values, key=repr))
        return _merge(pluck, [inner])

    def _record(self, node: dict, loc: str) -> Compiled:
        if not isinstance(node["record"], dict) or not node["record"]:
            raise SpecError(f"{loc}.record: must map field names to expressions")
        parts = {k: self.expr(v, f"{loc}.record.{k}") for k, v in node["record"].items()}
        fns = sorted((k, p.fn) for k, p in parts.items())
        return _merge(lambda env: Record((k, f(env)) for k, f in fns), parts.values())

    def _view(self, node: dict, loc: str) -> Compiled:
        name = node["view"]
        if name not in self.view_names:
            raise SpecError(f"{loc}.view: unknown view {name!r} (views: {', '.join(sorted(self.view_names)) or 'none'})")
        if node.get("total"):
            return Compiled(fn=lambda env: env.views(name, env).total, views=frozenset({name}),
                            reads=self.view_reads.get(name, frozenset()))
        if node.get("pages"):
            return Compiled(fn=lambda env: tuple(range(1, env.views(name, env).pages + 1)), views=frozenset({name}),
                            reads=self.view_reads.get(name, frozenset()))
        column = node.get("field", "id")
        return Compiled(fn=lambda env: tuple(row.get(column) for row in env.views(name, env).rows),
                        views=frozenset({name}), reads=self.view_reads.get(name, frozenset()))

    def condition(self, node: Any, loc: str) -> Compiled:
        """Compile a condition {var|param|page|answer|expr, op, value} to a bool function."""
        if not isinstance(node, dict):
            raise SpecError(f"{loc}: a condition must be an object like {{var: x, op: eq, value: 1}}")
        lefts = [k for k in LEFT_KEYS if k in node]
        if len(lefts) != 1:
            raise SpecError(f"{loc}: a condition needs exactly one of {', '.join(LEFT_KEYS)}")
        op = node.get("op")
        if op not in OPS:
            raise SpecError(f"{loc}.op: unknown operator {op!r} (operators: {', '.join(OPS)})")
        unknown = set(node) - {*LEFT_KEYS, "op", "value", "fact", "evidence"}
        if unknown:
            raise SpecError(f"{loc}: unknown key(s) {sorted(unknown)} in a condition "
                            f"(allowed: one of {', '.join(LEFT_KEYS)}, op, value, fact, evidence)")
        key = lefts[0]
        left = self.expr({key: node[key]} if key != "expr" else node["expr"], loc)
        if op in UNARY_OPS:
            test = OPS[op]
            get = left.fn
            compiled = _merge(lambda env: test(get(env), None), [left])
            compiled.guard = node["var"] if key == "var" else None
            return compiled
        if "value" not in node:
            raise SpecError(f"{loc}: operator {op!r} needs a value")
        right = self.expr(node["value"], f"{loc}.value")
        if op == "oneof" and not (right.static and isinstance(node["value"], list)):
            raise SpecError(f"{loc}.value: 'oneof' takes a literal list of values")
        if op in ("length_gt", "length_eq", "number_eq") and not (
                right.static and isinstance(right.fn(None), (int, float))):
            raise SpecError(f"{loc}.value: {op!r} takes a number")
        test = OPS[op]
        get_left = left.fn
        if right.static:
            constant = right.fn(None)
            compiled = _merge(lambda env: test(get_left(env), constant), [left, right])
            compiled.guard = node["var"] if key == "var" else None
            return compiled
        get_right = right.fn
        return _merge(lambda env: test(get_left(env), get_right(env)), [left, right])

    def conditions(self, nodes: list, loc: str) -> list[Compiled]:
        if not isinstance(nodes, list):
            raise SpecError(f"{loc}: must be a list of conditions")
        return [self.condition(node, f"{loc}[{i}]") for i, node in enumerate(nodes)]

