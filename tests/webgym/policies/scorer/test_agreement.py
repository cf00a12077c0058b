"""The policy's decisions on labelled steps, counted by the kind of the oracle's choice."""

from __future__ import annotations

import pandas as pd

from schemas.steps import Action, Element
from webgym.policies.scorer.agreement import labelled_decisions

PAGE = [Element(mark=1, tag="input", role="checkbox", text="Newsletter", x=10, y=10, width=20, height=20, checked=True),
        Element(mark=2, tag="a", role="link", text="Settings", x=10, y=50, width=80, height=20)]
TEXT = "Card on file\nending 4821\nPlan\nPlus"


def step(t: int, expert: list[Action] | None, policy: list[Action], trajectory: str = "r1") -> dict:
    return {"trajectory_id": trajectory, "t": t, "elements": [e.model_dump() for e in PAGE], "page_text": TEXT,
            "actions": [a.model_dump() for a in policy],
            "expert_actions": None if expert is None else [a.model_dump() for a in expert]}


def click(mark: int) -> Action:
    return Action(name="click", mark=mark)


def answer(text: str) -> Action:
    return Action(name="answer", text=text)


def test_each_labelled_step_counts_under_the_oracles_kind_and_matches_only_the_same_choice():
    steps = pd.DataFrame([
        step(0, [click(1)], [click(1)]),  # the toggle, as the oracle
        step(1, [click(1)], [click(2)]),  # a link instead of the toggle
        step(2, [answer("Done.")], [answer("Done.")]),
        step(3, [answer("4821")], [answer("ending 4821")]),  # the line that quotes the oracle's answer
        step(4, [answer("4821")], [answer("Done.")]),  # "Done." too early
        step(5, [Action(name="scroll", direction="down")], []),  # the policy made no parsable call
        step(6, None, [click(2)]),  # unlabelled: not a decision to count
        step(7, [answer("Gold")], [answer("Silver")]),  # two answers off the page: not the same candidate
    ])
    decisions = labelled_decisions(steps)
    assert decisions[["t", "kind", "matched"]].values.tolist() == [
        [0, "toggle", True], [1, "toggle", False], [2, "done", True], [3, "answer", True], [4, "answer", False],
        [5, "scroll_down", False], [7, "answer", False]]


def test_a_label_that_maps_onto_no_candidate_is_left_out_and_no_labels_give_an_empty_table():
    steps = pd.DataFrame([step(0, [click(99)], [click(1)]), step(1, None, [click(1)])])
    assert labelled_decisions(steps).empty
    assert list(labelled_decisions(steps.iloc[:0]).columns) == ["trajectory_id", "t", "kind", "matched"]
