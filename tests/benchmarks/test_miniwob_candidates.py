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


def _picker(month_shown: str | None, held: str = "") -> list:
    elements = [_element(1, "input", f"Date: {held}".strip(), role="text", label="Date:", control="readonly"),
                _element(2, "button", "Submit", control="button")]
    if month_shown:
        elements += [_element(3, "a", "Prev", control="link"), _element(4, "a", "Next", control="link"),
                     _element(5, "a", "9", control="link"), _element(6, "a", "19", control="link")]
    return page_candidates(elements, f"Date:\nSubmit\n{month_shown or ''}")


def test_a_date_is_chosen_in_the_picker_month_by_month_then_submitted():
    utterance = "Select 03/09/2016 as the date and hit submit."
    assert bench.pick(utterance, _picker(None), set())[0].target == "Date:"  # open the picker
    assert bench.pick(utterance, _picker("December 2016"), {"click 3"})[0].target == "Prev"  # again and again
    assert bench.pick(utterance, _picker("January 2016"), set())[0].target == "Next"
    assert bench.pick(utterance, _picker("March 2016"), set())[0].target == "9"  # not 19
    assert bench.pick(utterance, _picker(None, held="03/09/2016"), set())[0].target == "Submit"
