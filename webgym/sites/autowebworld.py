"""Reader of AutoWebWorld's published FSM JSON (fsm.json), turned into a site spec.

Their format: meta {app, version, initial_page_id, terminal_pages}; pages [{id, signature_schema
{"$.var": "boolean|null", ...}, actions [{id, name, is_navigation, from, to, parameters,
preconditions [{path, cond, value}], effects [{op, path, value | value_ref | value_expr}],
gui_procedure [{op: click | type_text | key_press | hover | drag, selector, ...}]}]}].

Mapping, following their BFS semantics (bfs_action.py):
- every signature path becomes a state variable (boolean -> enum true/false, string -> text,
  number -> int, array -> list of records or set of values); defaults are null for '|null' types;
- a navigation resets every variable the target page's signature does not declare, which is
  their "target defaults merged with same-name carry-over";
- parameters are literal in their FSMs, so `value_ref` resolves to the parameter's value;
  `value_expr: append($.list, {...})` appends a record; `clear` sets false / [] / 0 / null by type;
- an action's gui_procedure picks its element: type_text -> a text input, otherwise a link
  (navigation) or a button; hover and drag steps are done by that one click;
- each terminal page becomes a goal "reach that page", in its own one-fact group.
"""

from __future__ import annotations

import json
import re
from typing import Any

from webgym.sites.expr import SpecError
from webgym.sites.spec import SiteSpec, validated_spec

CONDS = {"eq", "neq", "not_null", "length_gt", "in", "gt", "lt", "gte", "lte", "exists", "oneof"}
APPEND_EXPR = re.compile(r"^\s*append\(\s*\$\.([\w.]+)\s*,\s*(.+)\)\s*$", re.S)


def is_autowebworld(raw: Any) -> bool:
    return (isinstance(raw, dict) and isinstance(raw.get("meta"), dict) and "initial_page_id" in raw["meta"]
            and isinstance(raw.get("pages"), list))


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "site"


def _words(identifier: str) -> str:
    text = re.sub(r"^ACT_", "", identifier).replace("_", " ").strip().lower()
    return text[:1].upper() + text[1:]


def _var(path: Any, loc: str) -> str:
    if not isinstance(path, str) or not path.startswith("$.") or len(path) < 3:
        raise SpecError(f"{loc}: {path!r} is not a signature path like '$.name'")
    return path[2:]


def _type(declared: Any, loc: str) -> tuple[str, bool]:
    if not isinstance(declared, str):
        raise SpecError(f"{loc}: type {declared!r} must be a string like 'string|null'")
    parts = [p.strip().lower() for p in declared.split("|")]
    nullable = "null" in parts
    base = next((p for p in parts if p != "null"), "null")
    if base.startswith("array"):
        return "array", nullable
    kinds = {"boolean": "bool", "bool": "bool", "string": "text", "number": "int", "integer": "int",
             "integer_ge1": "int", "any": "text", "null": "text"}
    if base not in kinds:
        raise SpecError(f"{loc}: unsupported signature type {declared!r}")
    return kinds[base], nullable


def _object(text: str, loc: str) -> dict[str, Any]:
    """A JSON object whose values may be signature references ($.x) -> a record expression."""
    refs: dict[str, str] = {}

    def hold(match: re.Match) -> str:
        refs[f"__ref{len(refs)}"] = match.group(1)
        return f'"__ref{len(refs) - 1}"'
    try:
        parsed = json.loads(re.sub(r"\$\.([\w.]+)", hold, text))
    except json.JSONDecodeError as error:
        raise SpecError(f"{loc}: cannot read {text!r} ({error})") from None
    if not isinstance(parsed, dict):
        raise SpecError(f"{loc}: append takes an object, got {text!r}")
    return {"record": {k: {"var": refs[v]} if isinstance(v, str) and v in refs else v for k, v in parsed.items()}}


def from_autowebworld(raw: dict[str, Any], source: str, name: str | None = None) -> SiteSpec:
    """Convert an AutoWebWorld FSM to a site spec (validated like any other spec)."""
    meta = raw["meta"]
    name = name or _slug(str(meta.get("app") or "autowebworld"))
    page_ids = [p.get("id") for p in raw["pages"]]
    types: dict[str, tuple[str, bool]] = {}
    schema_of: dict[str, set[str]] = {}
    for p, page in enumerate(raw["pages"]):
        loc = f"{source}: pages[{p}]"
        if not isinstance(page, dict) or not isinstance(page.get("id"), str):
            raise SpecError(f"{loc}.id: every page needs a string id")
        schema = page.get("signature_schema") or {}
        if not isinstance(schema, dict):
            raise SpecError(f"{loc}.signature_schema: must be an object of '$.path': 'type'")
        schema_of[page["id"]] = set()
        for path, declared in schema.items():
            var = _var(path, f"{loc}.signature_schema")
            types.setdefault(var, _type(declared, f"{loc}.signature_schema.{path}"))
            schema_of[page["id"]].add(var)
    arrays_of_records = set()
    for page in raw["pages"]:
        for action in page.get("actions") or []:
            for effect in action.get("effects") or []:
                if effect.get("value_expr") and effect.get("op") == "set":
                    match = APPEND_EXPR.match(str(effect["value_expr"]))
                    if match:
                        arrays_of_records.add(match.group(1))

    def declare(var: str) -> dict[str, Any]:
        kind, nullable = types.get(var, ("text", True))
        if kind == "array":
            return {"type": "list" if var in arrays_of_records else "set", "description": var.replace("_", " "),
                    "fields": ["id"] if var in arrays_of_records else None}
        spec: dict[str, Any] = {"type": "enum" if kind == "bool" else kind, "description": var.replace("_", " ")}
        if kind == "bool":
            spec["values"] = [True, False]
            spec["default"] = None if nullable else False
        return spec

    actions: dict[str, Any] = {}
    pages: dict[str, Any] = {}
    for p, page in enumerate(raw["pages"]):
        ids = []
        for a, action in enumerate(page.get("actions") or []):
            loc = f"{source}: pages[{p}].actions[{a}]"
            action_id = action.get("id")
            if not isinstance(action_id, str):
                raise SpecError(f"{loc}.id: every action needs a string id")
            if action_id in actions:
                action_id = f"{action_id}__{page['id']}"
            actions[action_id] = _action(action, page["id"], page_ids, schema_of, types, declare, loc)
            ids.append(action_id)
        pages[page["id"]] = {"title": _words(page["id"]), "path": "/" + _slug(page["id"]),
                             "main": [{"type": "heading", "text": _words(page["id"])},
                                      {"type": "controls", "actions": ids, "layout": "stack"}]}
    variables = {var: declare(var) for var in types}
    for action in actions.values():
        for effect in action["effects"]:
            variables.setdefault(effect["var"], declare(effect["var"]))
    terminals = meta.get("terminal_pages") or []
    goals = []
    for t, terminal in enumerate(terminals):
        if terminal not in page_ids:
            raise SpecError(f"{source}: meta.terminal_pages[{t}]: unknown page {terminal!r}")
        goals.append({"id": _slug(terminal), "text": f"On {{title}}, get to the {_words(terminal)} page.",
                      "groups": [{"description": f"reach {_words(terminal)}",
                                  "facts": [{"page": True, "op": "eq", "value": terminal}]}]})
    if meta.get("initial_page_id") not in page_ids:
        raise SpecError(f"{source}: meta.initial_page_id: unknown page {meta.get('initial_page_id')!r}")
    spec = {"name": name, "hostname": f"{name}.test", "title": _words(str(meta.get("app") or name).replace("-", "_")),
            "domain": "imported", "graph": name, "start_page": meta["initial_page_id"],
            "state": variables, "pages": pages, "actions": actions, "goals": goals}
    return validated_spec(spec, source)


def _action(action: dict, page: str, page_ids: list[str], schema_of: dict[str, set[str]],
            types: dict[str, tuple[str, bool]], declare, loc: str) -> dict[str, Any]:
    navigation = bool(action.get("is_navigation"))
    target = action.get("to")
    if navigation and target not in page_ids:
        raise SpecError(f"{loc}.to: unknown page {target!r}")
    parameters = action.get("parameters") or {}
    pre = []
    for c, cond in enumerate(action.get("preconditions") or []):
        if cond.get("cond") not in CONDS:
            raise SpecError(f"{loc}.preconditions[{c}].cond: unsupported condition {cond.get('cond')!r} "
                            f"(supported: {', '.join(sorted(CONDS))})")
        item = {"var": _var(cond.get("path"), f"{loc}.preconditions[{c}].path"), "op": cond["cond"]}
        if cond["cond"] not in ("not_null", "exists"):
            item["value"] = cond.get("value")
        pre.append(item)
    effects = []
    for e, effect in enumerate(action.get("effects") or []):
        effects.append(_effect(effect, parameters, types, f"{loc}.effects[{e}]"))
    if navigation:
        effects += [{"op": "clear", "var": var} for var in sorted(types) if var not in schema_of[target]]
    procedure = action.get("gui_procedure") or []
    if not procedure:
        raise SpecError(f"{loc}.gui_procedure: an action needs at least one GUI step (no element would trigger it)")
    typed = [step for step in procedure if step.get("op") == "type_text"]
    label = _words(action.get("id", ""))
    out: dict[str, Any] = {"pages": [page], "description": label, "effects": effects, "pre": pre,
                           "to": target if navigation else None}
    if typed:
        text = str(typed[0].get("text") or "text").strip("{} ") or "text"
        out["element"] = {"kind": "text_input", "label": label, "submit": "Go"}
        out["params"] = {"text": {"values": [text.replace("_", " ")], "free": True, "label": label}}
    else:
        out["element"] = {"kind": "link" if navigation else "button", "label": label}
    return out


def _effect(effect: dict, parameters: dict, types: dict[str, tuple[str, bool]], loc: str) -> dict[str, Any]:
    op = effect.get("op")
    var = _var(effect.get("path"), f"{loc}.path")
    if op == "set" and "value_expr" in effect:
        match = APPEND_EXPR.match(str(effect["value_expr"]))
        if not match or match.group(1) != var:
            raise SpecError(f"{loc}.value_expr: only 'append($.{var}, {{...}})' is supported, got "
                            f"{effect['value_expr']!r}")
        return {"op": "append", "var": var, "value": _object(match.group(2), f"{loc}.value_expr")}
    if op == "set":
        value = effect.get("value")
        if "value_ref" in effect:
            ref = str(effect["value_ref"]).strip("{} ")
            if ref not in parameters:
                raise SpecError(f"{loc}.value_ref: {effect['value_ref']!r} names no parameter of the action "
                                f"(parameters: {sorted(parameters) or 'none'})")
            value = parameters[ref]
        return {"op": "set", "var": var, "value": value}
    if op == "inc":
        return {"op": "inc", "var": var, "value": effect.get("by", effect.get("value", 1))}
    if op == "clear":
        kind = types.get(var, ("text", True))[0]
        return {"op": "set", "var": var, "value": {"bool": False, "array": [], "int": 0}.get(kind)}
    if op == "append_unique":
        value = parameters.get(str(effect.get("value_ref", "")).strip("{} "), effect.get("value"))
        return {"op": "append", "var": var, "value": value}
    raise SpecError(f"{loc}.op: unsupported effect {op!r} (supported: set, inc, clear, append_unique)")
