"""The response parser: every format agents emit, and malformed output as a recorded error."""

from __future__ import annotations

import pytest

from webgym.env.actions import TOOLS
from webgym.policies.parse import parse_response


def _calls(text: str) -> list[tuple]:
    parsed = parse_response(text)
    assert parsed.error is None, parsed.error
    return [(a.name, a.model_dump(exclude_none=True, exclude={"name"})) for a in parsed.actions]


def test_qwen_computer_use_calls_with_memory_and_thought():
    text = ('<think>search first</think><memory>mug A costs $5</memory>\n'
            '<tool_call>\n{"name": "computer_use", "arguments": {"action": "left_click", "coordinate": [500, 300]}}\n'
            '</tool_call>\n<tool_call>{"name": "computer_use", "arguments": {"action": "type", "text": "mug\\n"}}'
            '</tool_call>\n<tool_call>{"name": "computer_use", "arguments": {"action": "key", "keys": ["ctrl", "a"]}}'
            '</tool_call>')
    parsed = parse_response(text)
    assert parsed.memory == "mug A costs $5" and parsed.thought == "search first"
    assert _calls(text) == [("click", {"x": 500, "y": 300}), ("type", {"text": "mug\n"}),
                            ("press_keys", {"keys": ["ctrl", "a"]})]


def test_openwebrl_tool_names_and_argument_spellings():
    text = ('<tool_call>{"name": "write", "arguments": {"content": "Alpine Ridge"}}</tool_call>'
            '<tool_call>{"name": "goto_url", "arguments": {"url": "http://shop-a.test/"}}</tool_call>'
            '<tool_call>{"name": "switch_tab", "arguments": {"index": 1}}</tool_call>'
            '<tool_call>{"name": "done", "arguments": {"answer": "42"}}</tool_call>')
    assert _calls(text) == [("type", {"text": "Alpine Ridge"}), ("goto", {"url": "http://shop-a.test/"}),
                            ("switch_tab", {"tab": 1}), ("answer", {"text": "42"})]


def test_function_call_lines_and_marks():
    assert _calls('Thought: the button.\nAction: click(512, 86)\nscroll("down", 1.0)') == [
        ("click", {"x": 512, "y": 86}), ("scroll", {"direction": "down", "amount": 1.0})]
    assert _calls("click(7)") == [("click", {"mark": 7})]
    assert _calls('answer("The cheapest is AX 204")') == [("answer", {"text": "The cheapest is AX 204"})]


def test_bare_json_object_and_single_quotes():
    assert _calls('I will answer now: {"name": "answer", "arguments": {"text": "done"}}') == [
        ("answer", {"text": "done"})]
    assert _calls("<tool_call>{'name': 'back', 'arguments': {}}</tool_call>") == [("back", {})]


@pytest.mark.parametrize("text, problem", [
    ("I am not sure what to do.", "no tool call found"),
    ("<tool_call>{bad json</tool_call>", "tool_call 1: not valid JSON"),
    ('<tool_call>{"name": "fly", "arguments": {}}</tool_call>', "unknown tool 'fly'"),
    ('<tool_call>{"name": "click", "arguments": {"x": 3}}</tool_call>', "click needs (x, y) or (mark)"),
    ('<tool_call>{"name": "click", "arguments": {"x": "left", "y": 3}}</tool_call>', "argument 'x'"),
    ('<tool_call>{"name": "computer_use", "arguments": {"action": "left_click", "coordinate": [1]}}</tool_call>',
     "coordinate must be [x, y]"),
    ("", "no tool call found"),
    (None, "no tool call found"),
])
def test_malformed_output_is_a_recorded_error(text, problem):
    parsed = parse_response(text)
    assert parsed.actions == [] and problem in parsed.error


def test_calls_before_a_bad_one_are_kept():
    parsed = parse_response('<tool_call>{"name": "scroll", "arguments": {}}</tool_call>'
                            '<tool_call>{"name": "type", "arguments": {}}</tool_call>')
    assert [a.name for a in parsed.actions] == ["scroll"] and parsed.error.startswith("call 2: type needs")


def test_truncated_last_block_still_parses():
    assert _calls('<tool_call>{"name": "answer", "arguments": {"text": "ok"}}') == [("answer", {"text": "ok"})]


def test_every_tool_documents_itself_with_an_example():
    assert len(TOOLS) == 13
    for tool in TOOLS.values():
        assert "Example" in tool.doc and tool.name in tool.doc
