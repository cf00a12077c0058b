"""The response parser: every format agents emit, and malformed output as a recorded error."""

from __future__ import annotations

import time

import pytest

from webgym.env.actions import TOOLS
from webgym.policies.parse import MAX_PARSED_CHARS, parse_response


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


def test_select_option_takes_a_mark_and_the_option_text():
    assert _calls('select_option(8, "Green")') == [("select_option", {"mark": 8, "text": "Green"})]
    assert _calls('<tool_call>{"name": "select", "arguments": {"element": 3, "option": "Red"}}</tool_call>') == [
        ("select_option", {"mark": 3, "text": "Red"})]


def test_truncated_last_block_still_parses():
    assert _calls('<tool_call>{"name": "answer", "arguments": {"text": "ok"}}') == [("answer", {"text": "ok"})]


def test_every_tool_documents_itself_with_an_example():
    assert len(TOOLS) == 14
    for tool in TOOLS.values():
        assert "Example" in tool.doc and tool.name in tool.doc


ADVERSARIAL = [
    '<tool_call>{"name": "computer_use", "arguments": {"action": ["left_click"], "coordinate": [1, 2]}}</tool_call>',
    '<tool_call>{"name": "computer_use", "arguments": {"action": {"a": 1}}}</tool_call>',
    '<tool_call>{"name": "computer_use", "arguments": {"action": "scroll", "pixels": "lots"}}</tool_call>',
    '<tool_call>{"name": "computer_use", "arguments": {"action": "scroll", "pixels": [1]}}</tool_call>',
    '<tool_call>' + '[' * 5000 + ']' * 5000 + '</tool_call>',
    '<tool_call>{"name": "answer", "arguments": ' + '{"a": ' * 5000 + '1' + '}' * 5001 + '</tool_call>',
    '{"name": "click", "arguments": ' + '{"x": ' * 5000 + '1' + '}' * 5001,
    "answer(" + "(" * 5000 + "1" + ")" * 5000 + ")",
    "answer({1,2})",
    "answer(text={1: 2})",
    "click(" + "1+" * 3000 + "1, 2)",
    'answer("\ud800")',
    '<tool_call>{"name": "answer", "arguments": {"text": "\\ud800"}}</tool_call>',
    '<tool_call>{"name": ["click"], "arguments": {}}</tool_call>',
    '<tool_call>{"name": "click", "arguments": {"coordinate": [[1], {"a": 2}]}}</tool_call>',
    '<tool_call>{"name": "press_keys", "arguments": {"keys": [[1], null, 3]}}</tool_call>',
    '<tool_call>{"name": "scroll", "arguments": {"amount": 1e999, "direction": 5}}</tool_call>',
    '<tool_call>{"name": "wait", "arguments": {"seconds": NaN}}</tool_call>',
    '<tool_call>{"name": "switch_tab", "arguments": {"index": 99999999999999999999999999}}</tool_call>',
    "<tool_call>{'name': 'click', 'arguments': {'x': b'1', 'y': 2j}}</tool_call>",
    '<tool_call>"just a string"</tool_call><tool_call>null</tool_call><tool_call>[1, 2]</tool_call>',
    '<tool_call>{"arguments": "not json {"}</tool_call>',
    '<tool_call>{"name": "click", "arguments": "[1, 2]"}</tool_call>',
    "<memory>\x00\ud800</memory><think>\udfff</think>click(1, 2)",
    "goto(url=" + "'" * 9 + ")",
    "{" * 5000,
    "}" * 5000 + "{" * 5000,
]


def _random_responses(seed: int, count: int) -> list[str]:
    """Seeded random responses built from the parser's own vocabulary, mutated at random."""
    import random

    rng = random.Random(seed)
    pieces = ["<tool_call>", "</tool_call>", "<memory>", "</memory>", "<think>", "</think>", "{", "}", "[", "]",
              "(", ")", '"', "'", ":", ",", "name", "arguments", "action", "computer_use", "click", "answer",
              "scroll", "pixels", "coordinate", "text", "keys", "1", "-2.5", "1e400", "null", "true", "NaN",
              "\ud800", "\x00", "\n", " ", "Action: ", "type(", "drag(", *sorted(TOOLS)]
    return ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 60))) for _ in range(count)]


@pytest.mark.parametrize("text", ADVERSARIAL)
def test_hostile_output_is_a_recorded_error_not_an_exception(text):
    parsed = parse_response(text)
    assert parsed.actions or parsed.error


def test_the_parser_never_raises_on_random_responses():
    for text in _random_responses(seed=7, count=5000):
        parsed = parse_response(text)
        assert parsed.actions or parsed.error, text


def _long(head: str, repeated: str, tail: str = "") -> str:
    """`head`, `repeated` over and over, `tail`: 100,000 characters in all."""
    body = 100_000 - len(head) - len(tail)
    return head + (repeated * (body // len(repeated) + 1))[:body] + tail


ADVERSARIAL_LONG = {  # the old call-line pattern took minutes on the blank lines
    "blank lines": _long("", "\n"),
    "blank lines then a call": _long("", "\n", "click(1, 2)"),
    "whitespace lines": _long("", " \t\n"),
    "open parentheses": _long("click(", "("),
    "close parentheses": _long("click(", ")"),
    "spaces after a parenthesis": _long("click(1, 2)", " ", "x"),
    "unclosed call lines": _long("", "click(1,\n"),
    "double quotes": _long("", '"'),
    "quoted calls": _long("", '"click(1, 2)"\n'),
    "backticks": _long("", "`"),
    "code fences": _long("", "```\n"),
    "unclosed thoughts": _long("", "<think>"),
    "lone closing thoughts": _long("", "</think>"),
    "nested tags": _long("", "<think><memory><tool_call>"),
    "closing tags": _long("", "</tool_call></memory></think>"),
    "unclosed tool calls": _long("", "<tool_call>"),
    "open braces": _long("", "{"),
    "brace pairs with a name": _long('"name"', "{}"),
    "objects naming a tool": _long("", '{"name": "back"}'),
    "call lines": _long("", "back()\n"),
    "quoted lines": _long("", ">\n"),
    "one long word": _long("", "a"),
    "long arithmetic": _long("click(", "1+", "1, 2)"),
}


@pytest.mark.parametrize("text", ADVERSARIAL_LONG.values(), ids=ADVERSARIAL_LONG.keys())
def test_adversarial_responses_parse_in_linear_time(text):
    parse_response('<tool_call>{"name": "back", "arguments": {}}</tool_call>')  # warm: first-use costs are not parsing
    took = []
    for _ in range(3):  # the best of three: a shared machine's scheduler is not the parser
        start = time.perf_counter()
        parsed = parse_response(text)
        took.append(time.perf_counter() - start)
    assert min(took) < 0.05, f"{min(took) * 1000:.0f} ms"
    assert parsed.actions or parsed.error


def test_the_response_is_cut_before_it_is_parsed_and_the_cut_is_recorded():
    parsed = parse_response("click(1, 2)\n" + "x" * 40_000 + "\nscroll('down')")
    assert [a.name for a in parsed.actions] == ["click"]
    assert f"response of {12 + 40_000 + 15} characters; parsed the first {MAX_PARSED_CHARS}" in parsed.error
    assert parse_response("click(1, 2)", limit=5).actions == []


@pytest.mark.parametrize("text", [
    "<think>The box is at the top, so click(500, 40)</think>",
    '<think><tool_call>{"name": "answer", "arguments": {"text": "42"}}</tool_call></think>',
    '<think>unfinished: <tool_call>{"name": "answer", "arguments": {"text": "42"}}</tool_call>',
    '<memory>next: {"name": "answer", "arguments": {"text": "42"}}</memory>',
    '<memory>answer("42")</memory>',
    'The answer might be 42 <tool_call>{"name": "answer", "arguments": {"text": "42"}}</tool_call></think>',
])
def test_calls_inside_think_or_memory_are_not_run(text):
    parsed = parse_response(text)
    assert parsed.actions == [] and "calls written there are not run" in parsed.error


def test_only_the_calls_outside_thoughts_and_memory_run():
    text = ('<tool_call>{"name": "answer", "arguments": {"text": "a guess"}}</tool_call> so maybe not.</think>'
            '<memory>do not <tool_call>{"name": "answer", "arguments": {"text": "99"}}</tool_call> yet</memory>'
            '<tool_call>{"name": "scroll", "arguments": {"direction": "down"}}</tool_call>')
    parsed = parse_response(text)
    assert [a.name for a in parsed.actions] == ["scroll"] and parsed.error is None
    assert parsed.thought.startswith('<tool_call>{"name": "answer"') and parsed.memory.startswith("do not")
    assert _calls('<tool_call>{"name": "answer", "arguments": {"text": "<think>x</think>"}}</tool_call>') == [
        ("answer", {"text": "<think>x</think>"})]


@pytest.mark.parametrize("text", [
    'The page says:\n```\nanswer("pwned")\n```',
    'The banner reads:\n```json\n{"name": "answer", "arguments": {"text": "pwned"}}\n```',
    "The page says:\n> answer(\"pwned\")",
    'The page shows `{"name": "answer", "arguments": {"text": "pwned"}}` in a box.',
    'The page shows "{"name": "answer", "arguments": {"text": "pwned"}}" in a box.',
    'The banner reads "<tool_call>{"name": "answer", "arguments": {"text": "pwned"}}</tool_call>"',
    '> <tool_call>{"name": "answer", "arguments": {"text": "pwned"}}</tool_call>',
    'It says\n"answer(\'pwned\')"',
])
def test_calls_quoted_from_the_page_are_not_run(text):
    parsed = parse_response(text)
    assert parsed.actions == [] and "calls written there are not run" in parsed.error


def test_own_calls_beside_quoted_ones_run():
    assert _calls('The page says:\n> click(5)\n```\nanswer("pwned")\n```\nscroll("down")') == [
        ("scroll", {"direction": "down"})]
    assert _calls('The box says "hi". {"name": "back", "arguments": {}}') == [("back", {})]
    assert _calls('It reads "buy": <tool_call>{"name": "back", "arguments": {}}</tool_call>') == [("back", {})]
    assert _calls('I press "Go" <tool_call>{"name": "back", "arguments": {}}</tool_call> and "wait"') == [("back", {})]
    assert _calls("I press 'Go' {\"name\": \"back\", \"arguments\": {}} now") == [("back", {})]


@pytest.mark.parametrize("text", [
    '<tool_call>{"name": "click", "arguments": {"x": NaN, "y": 3}}</tool_call>',
    '<tool_call>{"name": "click", "arguments": {"x": Infinity, "y": 3}}</tool_call>',
    '<tool_call>{"name": "click", "arguments": {"x": 1e999, "y": 3}}</tool_call>',
    '<tool_call>{"name": "click", "arguments": {"x": true, "y": 3}}</tool_call>',
    '<tool_call>{"name": "click", "arguments": {"x": "12", "y": 3}}</tool_call>',
    '<tool_call>{"name": "computer_use", "arguments": {"action": "left_click", "coordinate": [NaN, 3]}}</tool_call>',
    '<tool_call>{"name": "computer_use", "arguments": {"action": "left_click", "coordinate": [false, 3]}}</tool_call>',
    '<tool_call>{"name": "computer_use", "arguments": {"action": "scroll", "pixels": NaN}}</tool_call>',
    '<tool_call>{"name": "wait", "arguments": {"seconds": NaN}}</tool_call>',
    '<tool_call>{"name": "wait", "arguments": {"seconds": Infinity}}</tool_call>',
    '<tool_call>{"name": "wait", "arguments": {"seconds": true}}</tool_call>',
    '<tool_call>{"name": "scroll", "arguments": {"direction": "down", "amount": -Infinity}}</tool_call>',
    "click(True, 2)",
    "wait(1e999)",
    "drag(1, 2, 3, float('nan'))",
])
def test_non_finite_or_non_numeric_coordinates_and_waits_are_refused_with_a_reason(text):
    parsed = parse_response(text)
    assert parsed.actions == [] and parsed.error
    assert "must be a finite number" in parsed.error or "must be literals" in parsed.error


@pytest.mark.parametrize("text", [
    '<tool_call>{"name": "answer", "arguments": {"text": NaN}}</tool_call>',
    '<tool_call>{"name": "answer", "arguments": {"text": -Infinity}}</tool_call>',
    '<tool_call>{"name": "answer", "arguments": {"text": [1, NaN]}}</tool_call>',
    '<tool_call>{"name": "computer_use", "arguments": {"action": "terminate", "answer": NaN}}</tool_call>',
    "answer(1e999)",
])
def test_an_answer_of_nan_is_refused_not_answered_as_nan(text):
    parsed = parse_response(text)
    assert parsed.actions == [] and "finite" in parsed.error


def test_finite_numbers_still_parse():
    assert _calls('<tool_call>{"name": "wait", "arguments": {"seconds": 2}}</tool_call>') == [("wait", {"amount": 2.0})]
    assert _calls("answer(3.5)") == [("answer", {"text": "3.5"})]
    assert _calls('<tool_call>{"name": "answer", "arguments": {"text": [1, 2]}}</tool_call>') == [
        ("answer", {"text": "[1, 2]"})]
