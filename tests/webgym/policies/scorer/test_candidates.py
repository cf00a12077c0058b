"""The scorer's candidates: phrases of a task, what a page offers, and recorded steps (the scorer's
own and the oracle's) mapped back onto them, the way training rebuilds every decision."""

from __future__ import annotations

import pytest

from schemas.steps import Action, Element
from webgym.policies.scorer.candidates import Choice, page_candidates, phrases, step_choices


def _element(mark: int, tag: str, role: str | None, text: str, y: float, form: int | None = None,
             label: str | None = None, value: str | None = None, x: float = 100.0, width: float = 200.0) -> Element:
    return Element(mark=mark, tag=tag, role=role, text=text, x=x, y=y, width=width, height=30.0, form=form,
                   label=label, value=value)


CHECKOUT = [
    _element(1, "input", "text", "Search products", 10, form=0, label="Search products", value=""),
    _element(2, "button", "submit", "Search", 10, form=0, x=400),
    _element(3, "a", None, "Cart (1)", 60),
    _element(4, "input", "text", "e.g. Jane Doe", 200, form=1, label="Full name", value=""),
    _element(5, "input", "text", "York", 260, form=1, label="City", value="York"),
    _element(6, "input", "radio", "Express (next day)", 320, form=1, label="Delivery"),
    _element(7, "button", "submit", "Place order", 380, form=1),
    _element(8, "button", "radio", "2", 440, label="Quantity"),
]
PAGE = "Checkout\nBrass Desk Lamp\t$45.00\t2\nDelivery details\nFull name\nYour code is 381402\nPlace order"


def _keys(candidates) -> dict[str, object]:
    return {c.key: c for c in candidates}


def test_phrases_cover_quotes_emails_names_tokens_words_and_page_codes():
    task = ('On Mailbird, write to lena.fischer@northwind.example with the subject “Design review” and the text '
            '“Notes attached.”, change the password hunter22 for Ada Lovelace and order two Brass Desk Lamps.')
    found = {p.text: p for p in phrases(task, PAGE)}
    assert found["Notes attached."].source == "quoted"  # a quote keeps its own full stop
    assert found["Design review"].context.endswith("with the subject")
    assert found["lena.fischer@northwind.example"].source == "email"
    assert found["Ada Lovelace"].source == "name" and found["Brass Desk Lamps"].source == "name"
    assert found["hunter22"].source == "digits"
    assert found["lamp"].source == "word" and "the" not in found and "two" not in found
    assert found["381402"].source == "page"
    assert len(found) == len(phrases(task, PAGE))  # no duplicates


def test_a_page_offers_clicks_one_fill_per_form_answers_and_moves():
    candidates = _keys(page_candidates(CHECKOUT, PAGE))
    order = candidates["fill 7"]
    assert [f.mark for f in order.fields] == [4, 5]
    assert order.text == 'type into "Full name", "City" and click "Place order"'
    assert candidates["fill 2"].text == 'type into "Search products" and click "Search"'
    assert candidates["click 6"].text == 'click toggle "Express (next day)" (Delivery)'
    assert candidates["click 8"].text == 'click option "2" (Quantity)'
    assert "click 4" not in candidates  # a text field is typed into by its fill, not clicked alone
    answers = [c.answer for c in candidates.values() if c.kind in ("answer", "done")]
    assert answers == ["Done.", "Checkout", "Brass Desk Lamp $45.00 2", "Delivery details", "Full name",
                       "Your code is 381402", "Place order"]
    assert {"scroll down", "scroll up", "back"} <= set(candidates)


def test_an_answer_reads_the_label_on_the_line_above_it():
    """Pages print a value under its label; the scorer reads both, so "121" is the runtime's answer."""
    film = "Northern Signal\nRuntime (minutes)\n121\n\nRated\n12A\n12:15\nSelect\n12:15\nSelect"
    answers = {c.answer: c for c in page_candidates([], film) if c.kind == "answer"}
    assert answers["121"].text == 'answer "121" under "Runtime (minutes)"' and answers["121"].label == "Runtime (minutes)"
    assert answers["Rated"].label == "121"  # blank lines are skipped
    assert answers["12:15"].label == "12A" and list(answers).count("12:15") == 1  # a repeated line keeps its first label
    assert answers["Northern Signal"].text == 'answer "Northern Signal"'  # the top line has no label


def test_a_fill_types_the_chosen_phrases_keeps_the_rest_and_submits():
    order = _keys(page_candidates(CHECKOUT, PAGE))["fill 7"]
    assert order.actions(["Ada Lovelace", None]) == [Action(name="type", text="Ada Lovelace", mark=4),
                                                    Action(name="click", mark=7)]
    assert order.response(["Ada Lovelace", None]) == ("fill 7: type into \"Full name\", \"City\" and click "
                                                      "\"Place order\" with Full name='Ada Lovelace', City=(kept)")
    lone = page_candidates([_element(1, "textarea", None, "", 10, label="Message", value="")], None)
    (fill,) = [c for c in lone if c.kind == "fill"]
    assert fill.actions(["Hello"]) == [Action(name="type", text="Hello\n", mark=1)]  # no submit button: Enter


@pytest.mark.parametrize("key,typed", [("fill 7", ("Ada Lovelace", "Leeds")), ("fill 7", (None, None)),
                                       ("fill 2", ("lamp",)), ("click 6", ()), ("click 3", ()), ("done", ()),
                                       ("answer 2", ()), ("scroll up", ()), ("back", ())])
def test_every_candidate_rebuilds_from_the_calls_it_makes(key, typed):
    candidate = _keys(page_candidates(CHECKOUT, PAGE))[key]
    choices, _, problem = step_choices(CHECKOUT, PAGE, candidate.actions(typed))
    assert problem is None and choices == [Choice(key, typed)]


def test_an_oracle_form_step_becomes_the_radio_click_then_the_fill():
    def centre(mark: int) -> dict:
        e = CHECKOUT[mark - 1]
        return {"x": e.x + e.width / 2, "y": e.y + e.height / 2}
    oracle = [Action(name="type", text="York", **centre(5)), Action(name="type", text="Ada Lovelace", **centre(4)),
              Action(name="click", x=CHECKOUT[5].x + 150, y=CHECKOUT[5].y + 10),  # inside the radio's label box
              Action(name="click", **centre(7))]
    choices, _, problem = step_choices(CHECKOUT, PAGE, oracle)
    # York is already the city: typing it again keeps the field.
    assert problem is None and choices == [Choice("click 6"), Choice("fill 7", ("Ada Lovelace", None))]


def test_oracle_answers_map_to_the_line_that_gives_them_or_are_added():
    choices, candidates, _ = step_choices(CHECKOUT, PAGE, [Action(name="answer", text="45")])
    assert _keys(candidates)[choices[0].key].answer == "Brass Desk Lamp $45.00 2"
    choices, candidates, _ = step_choices(CHECKOUT, PAGE, [Action(name="answer", text="It is 12:30")])
    added = _keys(candidates)[choices[0].key]
    assert added.answer == "It is 12:30" and added.kind == "answer"


def test_typing_that_was_never_submitted_is_no_choice_and_unknown_calls_are_reported():
    choices, _, problem = step_choices(CHECKOUT, PAGE, [Action(name="type", text="Ada", mark=4),
                                                         Action(name="scroll", direction="down", amount=0.4)])
    assert problem is None and choices == [Choice("scroll down")]
    _, _, problem = step_choices(CHECKOUT, PAGE, [Action(name="drag", mark=3, to_x=10, to_y=10)])
    assert problem == "no candidate does drag"
    _, _, problem = step_choices(CHECKOUT, PAGE, [Action(name="hover", mark=3)])
    assert problem.startswith("hover over no menu item that opens a submenu")
    _, _, problem = step_choices(CHECKOUT, PAGE, [Action(name="click", x=1200, y=700)])
    assert problem.startswith("click at no visible element")


def test_a_name_run_stops_at_a_quote_so_no_phrase_keeps_one():
    for task in ('Enter "Agustina" into the text field.', 'Enter "Agustina into the text field.'):
        found = {p.text: p.source for p in phrases(task)}
        assert found["Agustina"] in ("quoted", "name")
        assert not [text for text in found if '"' in text]
    assert {p.text for p in phrases("Reply to Sarah Connor, Kyle Reese.")} >= {"Sarah Connor", "Kyle Reese"}


REAL_PAGE = [  # MiniWoB++-like: formless fields with a layout group, a select, a tab, a script-only span
    Element(mark=1, tag="input", role="password", text="", x=100, y=10, width=150, height=20, form=2,
            label="Password", value="", control="textbox"),
    Element(mark=2, tag="input", role="password", text="", x=100, y=40, width=150, height=20, form=2,
            label="Verify password", value="", control="textbox"),
    Element(mark=3, tag="button", text="Submit", x=100, y=70, width=60, height=20, form=2, control="submit"),
    Element(mark=4, tag="select", text="Red", x=100, y=100, width=80, height=20, label="Colour", value="Red",
            control="select", options=["Red", "Green", "Blue"]),
    Element(mark=5, tag="a", role="tab", text="Tab 2", x=100, y=130, width=60, height=20, control="tab",
            selected=False),
    Element(mark=6, tag="input", role="checkbox", text="Keep me", x=100, y=160, width=60, height=20,
            control="checkbox", checked=True),
    Element(mark=7, tag="span", text="ipsum", x=100, y=190, width=40, height=20),
]


def test_a_real_page_offers_the_grouped_fill_each_option_and_says_what_each_control_is():
    candidates = _keys(page_candidates(REAL_PAGE, ""))
    fill = candidates["fill 3"]
    assert [f.mark for f in fill.fields] == [1, 2] and fill.mark == 3
    assert fill.text == 'type into "Password", "Verify password" and click "Submit"'
    assert fill.actions(["x1", "x1"])[-1] == Action(name="click", mark=3)
    assert "click 4" not in candidates  # a select offers its options, not a click
    assert candidates["click 3"].kind == "submit"  # a button grouped by layout is also clicked alone
    options = [c for c in candidates.values() if c.option is not None]
    assert [(c.key, c.text) for c in options] == [("select 4 0", 'choose "Red" in "Colour" [selected]'),
                                                  ("select 4 1", 'choose "Green" in "Colour"'),
                                                  ("select 4 2", 'choose "Blue" in "Colour"')]
    assert options[1].actions() == [Action(name="select_option", mark=4, text="Green")]
    assert candidates["click 5"].text == 'click option "Tab 2" [tab]'
    assert candidates["click 6"].text == 'click toggle "Keep me" [checkbox, checked]'
    assert candidates["click 7"].text == 'click button "ipsum"'


def test_select_option_calls_map_back_onto_their_option():
    choices, _, problem = step_choices(REAL_PAGE, "", [Action(name="select_option", mark=4, text="Blue")])
    assert (choices, problem) == ([Choice("select 4 2")], None)
    _, _, problem = step_choices(REAL_PAGE, "", [Action(name="select_option", mark=4, text="Mauve")])
    assert problem.startswith("select_option of no offered option")
    choices, _, problem = step_choices(REAL_PAGE, "", [Action(name="type", text="a", mark=1),
                                                       Action(name="type", text="a", mark=2),
                                                       Action(name="click", mark=3)])
    assert (choices, problem) == ([Choice("fill 3", ("a", "a"))], None)
