"""The relational scorer's scalars: which clause of the task a candidate answers, whether it was acted on,
which page line answers the question, how much of the task is undone; and its checkpoints."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

from schemas.steps import Element
from webgym.checkpoints import CheckpointError
from webgym.config import ScorerConfig
from webgym.embeddings import DIM
from webgym.policies.scorer.candidates import page_candidates
from webgym.policies.scorer.checkpoint import init_scorer, load_scorer, save_scorer
from webgym.policies.scorer.embeddings import TextEmbeddings
from webgym.policies.scorer.features import FLAT_SCALARS, Chosen, Decision, clauses, flat_features
from webgym.policies.scorer.network import candidate_logits
from webgym.policies.scorer.relations import RELATION_SCALARS, out_of_order, relation_scalars

TASK = "On Lumen Bank, turn on SMS alerts and make your profile visible to “Only me”."


class WordVectors:
    """A stand-in for MiniLM: each text a fixed random unit vector, so equal words match (1.0) and other
    words do not (near 0): the features' arithmetic without the model's load time."""

    cache_name = "fake"

    def __call__(self, texts: list[str]) -> np.ndarray:
        out = []
        for text in texts:
            seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little")
            vector = np.random.default_rng(seed).standard_normal(DIM)
            out.append(vector / np.linalg.norm(vector))
        return np.asarray(out, dtype=np.float32)


def _toggle(mark: int, text: str, group: str) -> Element:
    return Element(mark=mark, tag="input", role="checkbox" if group == "Alerts" else "radio", text=text, x=0,
                   y=40 * mark, width=100, height=20, label=group)


SETTINGS = [_toggle(1, "SMS alerts", "Alerts"), _toggle(2, "Email alerts", "Alerts"),
            _toggle(3, "Only me", "Profile visibility"), _toggle(4, "Everyone", "Profile visibility")]


def _relations(task: str, elements, page_text: str, history: tuple[Chosen, ...] = ()) -> dict[str, np.ndarray]:
    candidates = page_candidates(elements, page_text)
    rows = relation_scalars(task, clauses(task), "Lumen Bank: settings /settings", [(c.text, c.typed) for c in history],
                            candidates, TextEmbeddings(WordVectors()))
    return {c.text: row for c, row in zip(candidates, rows, strict=True)}


def test_a_toggle_knows_its_clause_and_whether_that_clause_was_acted_on():
    before = _relations(TASK, SETTINGS, "")
    sms, email, only_me = (before[f'click toggle "{t}" ({g})'] for t, g in
                           [("SMS alerts", "Alerts"), ("Email alerts", "Alerts"), ("Only me", "Profile visibility")])
    assert sms[1] > email[1] and only_me[1] > email[1]  # they cover their clause better than the toggle it omits
    assert sms[14] == 0.0 > email[14]  # the best match on the page, and one below it
    assert sms[4] == 0.0 and sms[16] == 1.0  # its clause is the first one undone
    assert sms[18] == 1.0 and only_me[18] == 0.0  # and it is the first element of the page that the task asks for
    after = _relations(TASK, SETTINGS, "", (Chosen('click toggle "SMS alerts" (Alerts)'),))
    sms_after = after['click toggle "SMS alerts" (Alerts)']
    only_me_after = after['click toggle "Only me" (Profile visibility)']
    assert sms_after[4] > 0.5 and sms_after[10] == 1.0  # done, and chosen before
    assert only_me_after[16] == 1.0 and sms_after[16] == 0.0  # the next clause to act on is the profile's
    assert only_me_after[18] == 1.0 and sms_after[18] == 0.0


def test_done_sees_the_task_undone_until_every_clause_was_acted_on():
    start = _relations(TASK, SETTINGS, "")['answer "Done."']
    end = _relations(TASK, SETTINGS, "", (Chosen('click toggle "SMS alerts" (Alerts)'),
                                          Chosen('click option "Only me" (Profile visibility)')))['answer "Done."']
    assert start[11] > end[11]  # the undone share falls as clauses are acted on
    assert end[12] > start[12] == 0.0  # the least acted-on clause: none at first


def test_a_page_title_that_names_part_of_a_clause_does_not_do_it_for_the_order_margin():
    task = "Select Angelina from the scroll list and Submit."
    page = [Element(mark=1, tag="select", text="", control="select", x=0, y=0, width=150, height=90,
                    options=["Angelina", "Clemence"]),
            Element(mark=2, tag="button", text="Submit", x=0, y=100, width=80, height=30)]
    candidates = page_candidates(page, "")
    held = out_of_order(task, clauses(task), "Click Scroll List Task /miniwob/click-scroll-list.html", [], candidates,
                        TextEmbeddings(WordVectors()))
    # "scroll list" is half of the first clause's words: the title says which page this is, not that it was done
    assert {c.text for c, h in zip(candidates, held, strict=True) if h} == {'click button "Submit"', 'answer "Done."'}


def _out_of_order(history: tuple[Chosen, ...] = ()) -> set[str]:
    candidates = page_candidates(SETTINGS, "")
    held = out_of_order(TASK, clauses(TASK), "Lumen Bank: settings /settings", [(c.text, c.typed) for c in history],
                        candidates, TextEmbeddings(WordVectors()))
    return {c.text for c, later in zip(candidates, held, strict=True) if later}


def test_an_element_of_a_later_clause_waits_until_the_earlier_clause_is_acted_on():
    # "Only me" answers the last clause; the SMS toggle, there to click, answers the one before; "Done." waits for both
    only_me, done = 'click toggle "Only me" (Profile visibility)', 'answer "Done."'
    assert _out_of_order() == {only_me, done}
    sms = Chosen('click toggle "SMS alerts" (Alerts)')
    assert _out_of_order((sms,)) == {done}
    assert _out_of_order((sms, Chosen(only_me))) == set()
    # choosing another element of the group does not act on the clause: the SMS toggle is still there to click
    email = Chosen('click toggle "Email alerts" (Alerts)')
    assert _out_of_order((email,)) == {only_me, done}


def test_an_element_is_in_order_by_the_first_clause_it_serves_when_the_task_restates_it_later():
    """The synthetic sites' tasks end by restating what is required: the SMS toggle serves the first clause and the
    restatement, and it is the profile's toggle that waits for it, not the other way round."""
    task = "Turn on SMS alerts, make your profile visible to “Only me”. Required: SMS."
    candidates = page_candidates(SETTINGS, "")
    held = out_of_order(task, clauses(task), "Lumen Bank: settings /settings", [], candidates,
                        TextEmbeddings(WordVectors()))
    assert {c.text for c, later in zip(candidates, held, strict=True) if later} == {
        'click toggle "Only me" (Profile visibility)', 'answer "Done."'}


def test_an_open_tab_holds_nothing_back_where_a_closed_one_does():
    """click-tab-2's pages: the tab the task names may already be open, and then its link is the next thing to do."""
    task = "Alerts tab, then Save."

    def held(open_tab: str) -> set[str]:
        tabs = [Element(mark=i, tag="li", role="tab", control="tab", text=name, x=0, y=0, width=60, height=20,
                        selected=name == open_tab) for i, name in enumerate(["Alerts", "Profile"], start=1)]
        link = Element(mark=3, tag="a", role=None, text="Save", x=0, y=40, width=60, height=20)
        candidates = page_candidates([*tabs, link], "")
        later = out_of_order(task, clauses(task), "Lumen Bank", [], candidates, TextEmbeddings(WordVectors()))
        return {c.text for c, flag in zip(candidates, later, strict=True) if flag}

    assert held(open_tab="Profile") == {'click link "Save"', 'answer "Done."'}
    assert held(open_tab="Alerts") == {'answer "Done."'}  # Save is still to click


def test_the_pointer_names_the_line_whose_label_the_question_asks_for():
    film = "Northern Signal\nRuntime (minutes)\n121\nRated\n12A"
    lines = _relations("What is the runtime of Northern Signal in minutes?", [], film)
    runtime, rated = lines['answer "121" under "Runtime (minutes)"'], lines['answer "12A" under "Rated"']
    assert runtime[6] > rated[6] and runtime[15] == pytest.approx(0.0, abs=1e-6) and rated[15] < -0.5
    assert runtime[8] == 1.0  # a number, and the question asks for an amount (minutes)


def test_the_relational_architecture_reads_more_scalars_and_the_mlp_the_same_as_before():
    decision = Decision(TASK, "Settings", (), page_candidates(SETTINGS, ""), [], 0, 10)
    embed = TextEmbeddings(WordVectors())
    assert flat_features(decision, embed, 3).scalars.shape[1] == FLAT_SCALARS
    relational = flat_features(decision, embed, 3, "relational")
    assert relational.scalars.shape[1] == FLAT_SCALARS + RELATION_SCALARS
    scorer = init_scorer(ScorerConfig(hidden=16, architecture="relational"))
    assert candidate_logits(scorer.net, relational).shape == (len(decision.candidates),)


def test_checkpoints_keep_their_architecture_and_older_ones_load_as_the_mlp(tmp_path):
    relational = save_scorer(init_scorer(ScorerConfig(hidden=16, architecture="relational")), tmp_path / "r")
    assert load_scorer(relational).architecture == "relational"
    old = save_scorer(init_scorer(ScorerConfig(hidden=16)), tmp_path / "old")
    meta = json.loads((old / "config.json").read_text())
    del meta["architecture"]  # as written before the architecture was a choice
    (old / "config.json").write_text(json.dumps(meta))
    assert load_scorer(old).architecture == "mlp"
    meta["architecture"] = "transformer"
    (old / "config.json").write_text(json.dumps(meta))
    with pytest.raises(CheckpointError, match="architecture 'transformer' is not one this version knows"):
        load_scorer(old)
