"""Turn a model's free-text response into tool calls, defensively.

Accepted, in this order: Qwen-style `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`
blocks (including Qwen3-VL's `computer_use` tool with `action`/`coordinate`), bare JSON objects,
and function-call lines such as `click(512, 86)` or `Action: answer("42")`. Several calls in one
response run in order. A malformed call never raises, whatever the string (wrong types, JSON nested
thousands deep, lone surrogates): the calls before it are kept and the step records a parse error
that names the problem.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from schemas.steps import Action
from webgym.env.actions import ALIASES, TOOLS


@dataclass(frozen=True)
class ParsedResponse:
    actions: list[Action]
    memory: str | None
    thought: str | None
    error: str | None
    """None when every call parsed; otherwise what was wrong (and `actions` holds the calls before it)."""


class _CallError(ValueError):
    pass


_TOOL_CALL = re.compile(r"<tool_call>(.*?)(?:</tool_call>|$)", re.S)
_MEMORY = re.compile(r"<memory>(.*?)(?:</memory>|$)", re.S)
_THINK = re.compile(r"<think>(.*?)</think>", re.S)
_CALL_LINE = re.compile(r"^\s*(?:[-*]\s*)?(?:action\s*:\s*)?([a-z_]+\s*\(.*\))\s*;?\s*$", re.I | re.M)

# Qwen3-VL computer_use `action` values -> our tools.
_COMPUTER_USE = {"left_click": "click", "click": "click", "double_click": "click", "right_click": "click",
                 "middle_click": "click", "triple_click": "click", "mouse_move": "hover",
                 "left_click_drag": "drag", "type": "type", "key": "press_keys", "scroll": "scroll",
                 "hscroll": "scroll", "wait": "wait", "terminate": "answer", "answer": "answer",
                 "goto": "goto", "history_back": "back", "back": "back"}

# Argument spellings seen across agent stacks -> Action fields.
_ARG_NAMES = {"content": "text", "answer": "text", "response": "text", "value": "text", "query": "text",
              "seconds": "amount", "time": "amount", "duration": "amount", "index": "tab", "tab_index": "tab",
              "element": "mark", "element_id": "mark", "x1": "x", "y1": "y", "x2": "to_x", "y2": "to_y",
              "key": "keys", "link": "url"}


_LITERAL_ERRORS = (ValueError, TypeError, SyntaxError, RecursionError, MemoryError)
"""What json and ast raise on hostile input: bad syntax, nesting deeper than the stack, lone surrogates
(UnicodeEncodeError is a ValueError), literals of types no tool takes."""


def parse_response(text: str | None) -> ParsedResponse:
    """Parse one model response; never raises."""
    text = text or ""
    memory = _first(_MEMORY, text)
    thought = _first(_THINK, text)
    try:
        return _parsed(text, memory, thought)
    except Exception as error:  # the contract is a recorded error, whatever a hostile string finds
        return ParsedResponse([], memory, thought, f"unparseable response ({type(error).__name__}: {str(error)[:120]})")


def _parsed(text: str, memory: str | None, thought: str | None) -> ParsedResponse:
    raw_calls, error = _raw_calls(text)
    actions: list[Action] = []
    for raw in raw_calls:
        try:
            actions.append(_to_action(raw))
        except _CallError as problem:
            error = f"call {len(actions) + 1}: {problem}"
            break
    if not actions and error is None:
        error = "no tool call found in the response"
    return ParsedResponse(actions, memory, thought, error)


def _first(pattern: re.Pattern, text: str) -> str | None:
    match = pattern.search(text)
    return match.group(1).strip() if match else None


def _raw_calls(text: str) -> tuple[list[Any], str | None]:
    """The calls as loosely structured data: dicts (JSON) or ast.Call nodes (function syntax)."""
    blocks = _TOOL_CALL.findall(text)
    if blocks:
        calls = []
        for i, block in enumerate(blocks, 1):
            try:
                calls.append(_loads(block))
            except _CallError as problem:
                return calls, f"tool_call {i}: {problem}"
        return calls, None
    body = _MEMORY.sub("", _THINK.sub("", text))
    objects = [o for o in _json_objects(body) if isinstance(o, dict) and ("name" in o or "action" in o)]
    if objects:
        return objects, None
    calls = []
    for line in _CALL_LINE.findall(body):
        try:
            node = ast.parse(line.strip(), mode="eval").body
        except _LITERAL_ERRORS:
            continue
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id.lower() in ALIASES:
            calls.append(node)
    return calls, None


def _loads(block: str) -> Any:
    block = block.strip().removeprefix("```json").removeprefix("```").removesuffix("```").strip()
    try:
        return json.loads(block)
    except _LITERAL_ERRORS:
        pass
    try:  # single quotes, Python literals
        return ast.literal_eval(block.replace("true", "True").replace("false", "False").replace("null", "None"))
    except _LITERAL_ERRORS:
        raise _CallError(f"not valid JSON: {block[:80]!r}") from None


def _json_objects(text: str) -> list[Any]:
    """Top-level {...} objects embedded in prose."""
    found, depth, start = [], 0, None
    for i, char in enumerate(text):
        if char == "{":
            start = i if depth == 0 else start
            depth += 1
        elif char == "}" and depth:
            depth -= 1
            if depth == 0:
                try:
                    found.append(json.loads(text[start:i + 1]))
                except _LITERAL_ERRORS:
                    pass
    return found


def _to_action(raw: Any) -> Action:
    if isinstance(raw, ast.Call):
        name, args = _from_ast(raw)
    elif isinstance(raw, dict):
        name, args = _from_json(raw)
    else:
        raise _CallError(f"expected an object, got {type(raw).__name__}")
    tool = TOOLS[name]
    fields = _normalise(args)
    if not any(all(fields.get(k) is not None for k in alternative) for alternative in tool.required):
        needed = " or ".join("(" + ", ".join(alt) + ")" for alt in tool.required)
        raise _CallError(f"{name} needs {needed}; got {sorted(fields)}")
    try:
        return Action(name=name, **fields)
    except ValidationError as error:
        first = error.errors()[0]
        raise _CallError(f"{name}: argument {first['loc'][0]!r}: {first['msg']}") from None


def _tool_name(name: Any) -> str:
    if not isinstance(name, str) or name.lower() not in ALIASES:
        raise _CallError(f"unknown tool {name!r}; tools are {sorted(TOOLS)}")
    return ALIASES[name.lower()]


def _from_ast(node: ast.Call) -> tuple[str, dict]:
    name = _tool_name(node.func.id)
    try:
        positional = [ast.literal_eval(a) for a in node.args]
        keywords = {k.arg: ast.literal_eval(k.value) for k in node.keywords if k.arg}
    except _LITERAL_ERRORS:
        raise _CallError(f"{node.func.id}(...) arguments must be literals") from None
    spec = TOOLS[name].positional
    if name in ("click", "hover") and len(positional) == 1 and isinstance(positional[0], int):
        spec = ("mark",)
    if len(positional) > len(spec):
        raise _CallError(f"{name} takes at most {len(spec)} positional argument(s), got {len(positional)}")
    return name, {**dict(zip(spec, positional)), **keywords}


def _from_json(raw: dict) -> tuple[str, dict]:
    args = raw.get("arguments", raw.get("args", raw.get("parameters", {})))
    if isinstance(args, str):
        args = _loads(args)
    if not isinstance(args, dict):
        raise _CallError("arguments must be an object")
    name = raw.get("name")
    if name in ("computer_use", "browser_use", None):
        action = args.get("action", raw.get("action"))
        if not isinstance(action, str) or action not in _COMPUTER_USE:
            raise _CallError(f"unknown computer_use action {str(action)[:80]!r}")
        args = {k: v for k, v in args.items() if k != "action"}
        if action == "scroll" and "pixels" in args:
            pixels = args.pop("pixels")
            if not isinstance(pixels, int | float) or isinstance(pixels, bool):
                raise _CallError(f"scroll pixels must be a number, got {str(pixels)[:80]!r}")
            args["direction"] = "up" if pixels > 0 else "down"
        if action == "terminate" and "text" not in args and "answer" not in args:
            args["text"] = str(args.get("status", ""))
        args.pop("status", None)
        return _COMPUTER_USE[action], args
    return _tool_name(name), args


def _normalise(args: dict) -> dict:
    fields: dict[str, Any] = {}
    for key, value in args.items():
        key = _ARG_NAMES.get(key, key)
        if key in ("coordinate", "start_coordinate", "point", "coordinates") and isinstance(value, list | tuple):
            if len(value) != 2:
                raise _CallError(f"{key} must be [x, y], got {value!r}")
            target = ("x", "y") if key != "coordinate" or "start_coordinate" not in args else ("to_x", "to_y")
            fields.update(dict(zip(target, value)))
        elif key == "keys" and isinstance(value, str):
            fields["keys"] = [k for k in re.split(r"[+\s]+", value) if k]
        elif key == "text" and not isinstance(value, str):
            fields["text"] = _as_text(value)
        elif key in Action.model_fields and key not in ("name", "ok", "feedback"):
            fields[key] = value
    return fields


def _as_text(value: Any) -> str:
    """A non-string answer as text: numbers as written, lists and objects as JSON."""
    if isinstance(value, int | float):
        return str(value)
    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        raise _CallError(f"text must be a string, number, list or object, got {type(value).__name__}") from None
