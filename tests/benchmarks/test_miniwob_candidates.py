"""The MiniWoB++ candidate benchmark's scripted agent picks by the utterance among the scorer's candidates."""

from __future__ import annotations

from schemas.steps import Element
from tests.benchmarks import load_benchmark
from webgym.policies.scorer.candidates import page_candidates

bench = load_benchmark("miniwob_candidates")


def _element(mark: int, tag: str, text: str, **fields) -> Element:
    return Element(mark=mark, tag=tag, text=text, x=10.0, y=30.0 * mark, width=100.0, height=20.0, **fields)


LOGIN = [_element(1, "input", "", role="text", form=0, label="Username", value="", control="textbox"),
         _element(2, "input", "", role="password", form=0, label="Password", value="", control="textbox"),
         _element(3, "button", "Login", form=0, control="submit"),
         _element(4, "span", "Forgot it")]


def test_fields_get_the_quoted_phrase_named_before_it_and_named_elements_are_clicked():
    candidates = page_candidates(LOGIN, "")
    utterance = 'Enter the password "x7B" and the username "lyda" into the text fields and press login.'
    fill, typed = bench.pick(utterance, candidates, set())
    assert (fill.key, typed) == ("fill 3", ["lyda", "x7B"])
    assert bench.pick("Click on the link Forgot it.", candidates, set())[0].key == "click 4"
    assert bench.pick("Click on the link Forgot it.", candidates, {"click 4"}) is None
    assert bench.pick('Click on the "okay" button.', candidates, set()) is None  # nothing named, no typing asked
