"""Turn a model's free-text response into tool calls, defensively and in linear time.

Accepted, in this order: Qwen-style `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`
blocks (including Qwen3-VL's `computer_use` tool with `action`/`coordinate`), bare JSON objects,
and function-call lines such as `click(512, 86)` or `Action: answer("42")`. Several calls in one
response run in order. A malformed call never raises, whatever the string (wrong types, JSON nested
thousands deep, lone surrogates): the calls before it are kept and the step records a parse error
that names the problem. Coordinates, scroll amounts and waits must be finite numbers (not NaN,
infinities, booleans or strings), and an answer of NaN is refused rather than answered as "nan".

Only the response's own calls run. A call written inside <think> (or before a lone </think>:
Qwen3's template opens the thought in the prompt) or <memory>, in a code fence, on a `>` quoted
line, or enclosed in quotes or backticks is a quotation, not a call. The page reaches the model as
its screenshot and as feedback that quotes the page's text in double quotes, so quoting is how a
model repeats what a page says, and a page that shows `answer("...")` must not get it answered. The
error of a response whose only calls are quoted says so.

Time is linear in the response: the first MAX_PARSED_CHARS characters are read (the cut is
recorded) and at most MAX_PARSED_CALLS calls, and no pattern here backtracks beyond the line, word or
span where it started (no quantifier is followed by one that matches the same characters, and only
the lazy body of a span, which ends at its closing tag or the end, crosses lines), so the work of all
matches together stays proportional to the text. tests/webgym/policies/test_parse.py times 100,000
characters of blank lines, parentheses, quotes, tags and braces.
"""

from __future__ import annotations

import ast
import json
import math
import re
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from pydantic import ValidationError

from schemas.steps import Action
from webgym.env.actions import ALIASES, TOOLS

MAX_PARSED_CHARS = 32_000
"""Characters of a response that are parsed (the rollout's default max_response_chars): the rest is never
searched, so no response, however long, holds the event loop for long."""
MAX_PARSED_CALLS = 100
"""Calls read from one response; the rollout runs at most rollout.max_calls_per_step of them anyway."""


@dataclass(frozen=True)
class ParsedResponse:
    actions: list[Action]
    memory: str | None
    thought: str | None
    error: str | None
    """None when every call parsed; otherwise what was wrong (and `actions` holds the calls before it)."""


class _CallError(ValueError):
    pass


QUOTES = "\"'`\u201c\u201d\u2018\u2019\u00ab\u00bb"
"""Characters that, right before and right after a call, make it a quotation."""
NUMBER_FIELDS = ("x", "y", "to_x", "to_y", "amount", "mark", "tab")
"""Action fields that take a number: coordinates, scroll amounts and waits, marks and tabs."""
_SPAN = re.compile(r"<(think|memory|tool_call)>(.*?)(?:</\1>|\Z)|```(.*?)(?:```|\Z)|</think>", re.S)
"""Thoughts, memory, tool-call blocks and code fences (an unclosed one runs to the end), and a lone
</think>. Inside a span only its own closing tag counts, so a tag quoted in an answer opens nothing."""
_QUOTED_LINE = re.compile(r"^[^\S\n]*>.*$", re.M)
_CALL_LINE = re.compile(r"\s*(?:[-*]\s*)?(?:(?i:action)\s*:\s*)?(([A-Za-z_]+)\s*\(.*\))\s*(?:;\s*)?")
"""One line that holds nothing but a call (after `- `, `* ` or `Action:`), matched whole. Lines are split
first: a pattern whose whitespace crossed lines made parsing quadratic in blank lines."""
_QUOTED_CALL = re.compile(rf"[{QUOTES}]\s*(?:(?P<word>[A-Za-z_]+)\s*\(|\{{\s*[\"'](?:name|action)[\"'])")
"""A call right after a quote or backtick (a tool's name before "(", or an object naming one)."""
_CALL_IN = re.compile(r"<tool_call>|[\"'](?:name|action)[\"']\s*:|\b(?P<word>[A-Za-z_]+)\s*\(")
"""A call anywhere in a quotation: a tool-call tag, a `name`/`action` key, a tool's name before "("."""
_BRACE = re.compile(r"[{}]")

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
              "key": "keys", "link": "url", "option": "text"}


_LITERAL_ERRORS = (ValueError, TypeError, SyntaxError, RecursionError, MemoryError)
"""What json and ast raise on hostile input: bad syntax, nesting deeper than the stack, lone surrogates
(UnicodeEncodeError is a ValueError), literals of types no tool takes."""


@dataclass
class _Parts:
    """A response split by whether calls written in it run."""

    text: str = ""
    """The response's own text: outside every span, without `>` quoted lines."""
    blocks: list[str] = field(default_factory=list)
    """Its own tool-call blocks."""
    quoted: list[str] = field(default_factory=list)
    """Where calls do not run: thoughts, memory, code fences, quoted tool-call blocks and lines."""
    thought: str | None = None
    memory: str | None = None


def parse_response(text: str | None, limit: int = MAX_PARSED_CHARS) -> ParsedResponse:
    """Parse one model response, its first `limit` characters; never raises."""
    text = text or ""
    cut = f"response of {len(text)} characters; parsed the first {limit}" if len(text) > limit else None
    parts = _parts(text[:limit])
    try:
        parsed = _parsed(parts)
    except Exception as error:  # the contract is a recorded error, whatever a hostile string finds
        parsed = ParsedResponse([], parts.memory, parts.thought,
                                f"unparseable response ({type(error).__name__}: {str(error)[:120]})")
    if cut is None:
        return parsed
    return ParsedResponse(parsed.actions, parsed.memory, parsed.thought, "; ".join(filter(None, [parsed.error, cut])))


def _parts(text: str) -> _Parts:
    """The response's spans sorted by whether calls in them run, in one pass."""
    parts, own, end, thought_end = _Parts(), [], 0, None
    for span in _SPAN.finditer(text):
        before = text[end:span.start()]
        own.append(before)
        tag, body = span.group(1), span.group(2) if span.group(1) else span.group(3)
        if span.group() == "</think>":  # the response began inside the thought: all before it is thought
            parts, own, thought_end = _Parts(), [], span.start()
        elif tag == "tool_call" and not _quoting(before.rpartition("\n")[2], text, span.start(), span.end()):
            parts.blocks.append(body)
        else:
            parts.quoted.append(body)
            if tag == "think" and parts.thought is None:
                parts.thought = body.strip()
            elif tag == "memory" and parts.memory is None:
                parts.memory = body.strip()
        end = span.end()
    own.append(text[end:])
    parts.text = "\n".join(own)
    if thought_end is not None:
        parts.quoted.append(text[:thought_end])
        parts.thought = text[:thought_end].strip()
    if ">" in parts.text:
        parts.quoted.append("\n".join(_QUOTED_LINE.findall(parts.text)))
        parts.text = _QUOTED_LINE.sub("", parts.text)
    return parts


def _quoting(line: str, text: str, start: int, end: int) -> bool:
    """Whether the tool-call block text[start:end] is a quotation: on a `>` quoted line (`line` is what stands
    before it on its line), or enclosed in quotes or backticks."""
    return line.lstrip().startswith(">") or _enclosed(text, start, end)


def _enclosed(text: str, start: int, end: int) -> bool:
    """Whether a quote or backtick stands right before text[start:end] and right after it (spaces between
    allowed): `"click(5)"`, `` `{...}` ``. A quote earlier in the sentence (`I click "Go" <tool_call>...`)
    quotes something else. Looks at most 40 characters each way, so the scan stays linear."""
    before, after = text[max(0, start - 40):start].rstrip(), text[end:end + 40].lstrip()
    return before[-1:] in tuple(QUOTES) and after[:1] in tuple(QUOTES)


def _parsed(parts: _Parts) -> ParsedResponse:
    raw_calls, error = _raw_calls(parts)
    actions: list[Action] = []
    for raw in raw_calls:
        try:
            actions.append(_to_action(raw))
        except _CallError as problem:
            error = f"call {len(actions) + 1}: {problem}"
            break
    if not actions and error is None:
        error = "no tool call found in the response"
        if _names_a_call(_QUOTED_CALL, parts.text) or _names_a_call(_CALL_IN, "\n".join(parts.quoted)):
            error += (" outside <think>, <memory>, code blocks and quotations; calls written there are not run: "
                      "write your own call outside them")
    return ParsedResponse(actions, parts.memory, parts.thought, error)


def _raw_calls(parts: _Parts) -> tuple[list[Any], str | None]:
    """The calls as loosely structured data: dicts (JSON) or ast.Call nodes (function syntax)."""
    if parts.blocks:
        calls = []
        for i, block in enumerate(parts.blocks[:MAX_PARSED_CALLS], 1):
            try:
                calls.append(_loads(block))
            except _CallError as problem:
                return calls, f"tool_call {i}: {problem}"
        return calls, None
    objects = _json_calls(parts.text)
    if objects:
        return objects, None
    lines = (_CALL_LINE.fullmatch(line) for line in parts.text.split("\n") if "(" in line)
    nodes = (_call_node(line.group(1)) for line in lines if line and line.group(2).lower() in ALIASES)
    return list(islice(filter(None, nodes), MAX_PARSED_CALLS)), None


def _names_a_call(pattern: re.Pattern, text: str) -> bool:
    """Whether `pattern` finds a call in `text`; its `word` is checked against the tools here, since a
    pattern alternating every tool name is slow to search."""
    return any(match["word"] is None or match["word"].lower() in ALIASES for match in pattern.finditer(text))


def _call_node(call: str) -> ast.Call | None:
    try:
        node = ast.parse(call, mode="eval").body
    except _LITERAL_ERRORS:
        return None
    return node if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) else None


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


def _json_calls(text: str) -> list[dict]:
    """Top-level {...} objects in prose that name a tool or an action, unless enclosed in quotes or backticks;
    only objects that mention `name` or `action` are decoded."""
    if "name" not in text and "action" not in text:
        return []
    found: list[dict] = []
    depth, start = 0, 0
    for brace in _BRACE.finditer(text):
        if brace.group() == "{":
            start = brace.start() if depth == 0 else start
            depth += 1
        elif depth:
            depth -= 1
            end = brace.end()
            if depth or (text.find("name", start, end) < 0 and text.find("action", start, end) < 0):
                continue
            try:
                value = json.loads(text[start:end])
            except _LITERAL_ERRORS:
                continue
            if isinstance(value, dict) and ("name" in value or "action" in value) \
                    and not _enclosed(text, start, end):
                found.append(value)
                if len(found) == MAX_PARSED_CALLS:
                    break
    return found


def _to_action(raw: Any) -> Action:
    if isinstance(raw, ast.Call):
        name, args = _from_ast(raw)
    elif isinstance(raw, dict):
        name, args = _from_json(raw)
    else:
        raise _CallError(f"expected an object, got {type(raw).__name__}")
    tool = TOOLS[name]
    fields = _normalise(name, args)
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
            args["direction"] = "up" if _number("scroll", "pixels", args.pop("pixels")) > 0 else "down"
        if action == "terminate" and "text" not in args and "answer" not in args:
            args["text"] = str(args.get("status", ""))
        args.pop("status", None)
        return _COMPUTER_USE[action], args
    return _tool_name(name), args


def _number(tool: str, argument: str, value: Any) -> int | float:
    """`value` if it is a finite int or float; booleans, strings, NaN and infinities are refused, since a
    coordinate or a wait of NaN would run as nonsense instead of failing."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise _CallError(f"{tool}: argument {argument!r} must be a finite number, got {str(value)[:80]!r}")
    return value


def _normalise(tool: str, args: dict) -> dict:
    fields: dict[str, Any] = {}
    for key, value in args.items():
        key = _ARG_NAMES.get(key, key)
        if key in ("coordinate", "start_coordinate", "point", "coordinates") and isinstance(value, list | tuple):
            if len(value) != 2:
                raise _CallError(f"{key} must be [x, y], got {value!r}")
            target = ("x", "y") if key != "coordinate" or "start_coordinate" not in args else ("to_x", "to_y")
            fields.update({field: _number(tool, key, v) for field, v in zip(target, value)})
        elif key == "keys" and isinstance(value, str):
            fields["keys"] = [k for k in re.split(r"[+\s]+", value) if k]
        elif key == "text" and not isinstance(value, str):
            fields["text"] = _as_text(value)
        elif key in NUMBER_FIELDS and value is not None:
            fields[key] = _number(tool, key, value)
        elif key in Action.model_fields and key not in ("name", "ok", "feedback"):
            fields[key] = value
    return fields


def _as_text(value: Any) -> str:
    """A non-string answer as text: numbers as written, lists and objects as JSON. NaN and infinities are
    refused: an answer of NaN must not reach the verifier as the word "nan"."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(_number("answer", "text", value))
    try:
        return json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        raise _CallError(f"text must be a string, number, list or object of finite numbers, got "
                         f"{str(value)[:80]!r}") from None
