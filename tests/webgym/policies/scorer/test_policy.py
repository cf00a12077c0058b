"""The set-of-marks scorer as a policy: seeded initialisation, checkpoints that reload exactly, and
episodes in Chromium on a synthetic site whose recorded steps rebuild to the very decisions taken
(same candidate, same log-probability), which is what training on them relies on."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from schemas.steps import Action, Element
from schemas.tasks import Task
from tests.conftest import NOW, rows
from tests.webgym.rollout.conftest import roll_out
from tests.webgym.sites.conftest import mini  # noqa: F401 (fixture)
from webgym.checkpoints import CheckpointError
from webgym.config import EnvConfig, PolicyConfig, RolloutConfig, ScorerConfig
from webgym.embeddings import DIM, Embedder
from webgym.env.observe import Observation
from webgym.policies.base import PolicyError, PolicyInput, TaskSpec
from webgym.policies.scorer.candidates import page_candidates, step_choices
from webgym.policies.scorer.checkpoint import init_scorer, load_scorer, open_scorer, save_scorer
from webgym.policies.scorer.embeddings import TextEmbeddings, scorer_embeddings
from webgym.policies.scorer.features import Chosen, Decision, scalar_count
from webgym.policies.scorer.policy import ScorerPolicy
from webgym.rollout.collect import episode_specs
from webgym.sites.tasks import task_record
from webgym.train.scorer import batch_logprobs, scorer_samples

SMALL = ScorerConfig(hidden=32, seed=4)


def _same(a, b) -> bool:
    return all(torch.equal(v, b.net.state_dict()[k]) for k, v in a.net.state_dict().items())


def test_an_untrained_scorer_is_drawn_from_its_seed():
    assert _same(init_scorer(SMALL), init_scorer(SMALL))
    assert not _same(init_scorer(SMALL), init_scorer(SMALL.model_copy(update={"seed": 5})))
    assert init_scorer(SMALL).checkpoint_id == "scorer-init-s4"


def test_checkpoints_reload_exactly_and_bad_ones_say_what_is_wrong(tmp_path):
    scorer = init_scorer(SMALL)
    path = save_scorer(scorer, tmp_path / "ckpt")
    assert sorted(p.name for p in path.iterdir()) == ["config.json", "model.safetensors"]
    loaded = open_scorer(ScorerConfig(checkpoint=str(path)))
    assert _same(scorer, loaded) and (loaded.checkpoint_id, loaded.hidden) == ("scorer-init-s4", 32)
    with pytest.raises(CheckpointError, match="already exists"):
        save_scorer(scorer, path)
    (path / "model.safetensors").unlink()
    with pytest.raises(CheckpointError, match="model.safetensors is missing"):
        load_scorer(path)
    save_scorer(scorer, tmp_path / "bad")
    (tmp_path / "bad" / "config.json").write_text(json.dumps({"hidden": 32}))  # no dropout, no id
    with pytest.raises(CheckpointError, match="unreadable"):
        load_scorer(tmp_path / "bad")


def test_embedding_dropout_drops_texts_in_training_only_and_stays_with_the_checkpoint(tmp_path):
    scorer = init_scorer(SMALL.model_copy(update={"dropout": 0.0, "embedding_dropout": 0.5}))
    net, generator = scorer.net, torch.Generator().manual_seed(0)
    task, page, history = (torch.randn(1, DIM, generator=generator) for _ in range(3))
    texts = torch.randn(1, 5, DIM, generator=generator)
    scalars = torch.randn(1, 5, scalar_count("mlp"), generator=generator)
    no_texts = (torch.zeros_like(task),) * 3 + (torch.zeros_like(texts), scalars)
    net.train()
    assert not torch.equal(net.candidate_scores(task, page, history, texts, scalars),
                           net.candidate_scores(task, page, history, texts, scalars))
    assert torch.equal(net.candidate_scores(*no_texts), net.candidate_scores(*no_texts))  # scalars are kept
    net.eval()
    assert torch.equal(net.candidate_scores(task, page, history, texts, scalars),
                       net.candidate_scores(task, page, history, texts, scalars))
    loaded = load_scorer(save_scorer(scorer, tmp_path / "ckpt"))
    assert loaded.embedding_dropout == 0.5 and loaded.net.embedding_dropout.p == 0.5
    meta = json.loads((tmp_path / "ckpt" / "config.json").read_text())
    del meta["embedding_dropout"]  # written before the setting: none
    (tmp_path / "ckpt" / "config.json").write_text(json.dumps(meta))
    assert load_scorer(tmp_path / "ckpt").net.embedding_dropout.p == 0.0


class CountingEmbedder(Embedder):
    """The real MiniLM embedder, counting the texts it had to embed."""

    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []

    def __call__(self, texts: list[str]) -> np.ndarray:
        self.texts += texts
        return super().__call__(texts)


def test_vectors_kept_on_disk_are_read_back_by_the_next_run_without_embedding(tmp_path):
    texts = ["Add to cart", "Search flights", "", "Add to cart", "Checkout"]
    first = TextEmbeddings(cache_dir=tmp_path)
    embedded = first(texts)
    first.flush()
    reader = CountingEmbedder()
    again = TextEmbeddings(reader, cache_dir=tmp_path)(texts + ["Sign in"])
    assert reader.texts == ["Sign in"]
    assert np.array_equal(again[:5], embedded)
    assert not again[2].any()


def test_the_profiles_precision_embeds_and_caches_apart_from_float32(tmp_path):
    texts = ["Add to cart", "Search flights", "Checkout"]
    fast = scorer_embeddings(ScorerConfig(embedding_precision="bfloat16", embedding_cache=str(tmp_path)))
    vectors = fast(texts)
    fast.flush()
    exact = scorer_embeddings(ScorerConfig(embedding_precision="float32", embedding_cache=str(tmp_path)))
    reference = exact(texts)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["all-MiniLM-L6-v2-bfloat16"]
    assert not np.array_equal(vectors, reference)
    assert (vectors * reference).sum(axis=1).min() > 0.9999


def _decision(task: str, elements: list[Element], page_text: str, history: tuple[Chosen, ...] = ()) -> Decision:
    return Decision(task, "", history, page_candidates(elements, page_text), [], len(history), 10)


def _held_back(decision: Decision, greedy: bool = True, **margins: float) -> dict[str, float]:
    """What a policy with these margins takes off each candidate's score, by candidate text (zeros left out)."""
    policy = ScorerPolicy(init_scorer(SMALL), TextEmbeddings(), greedy=greedy, **margins)
    try:
        held = policy._held_back(decision)
    finally:
        policy.close()
    return {} if held is None else {c.text: float(h) for c, h in zip(decision.candidates, held, strict=True) if h}


def test_greedy_decoding_answers_done_only_when_it_wins_by_the_margin():
    done = torch.tensor([False, True, False])
    picks = {}
    for margin, logits in [(0.0, [1.0, 2.5, 0.5]), (1.0, [1.0, 2.5, 0.5]), (2.0, [1.0, 2.5, 0.5]),
                           (2.0, [1.0, 3.5, 0.5])]:
        policy = ScorerPolicy(init_scorer(SMALL), TextEmbeddings(), greedy=True, done_margin=margin)
        try:
            picks[margin, logits[1]] = policy._pick(torch.tensor(logits), margin * done)
        finally:
            policy.close()
    assert {key: index for key, (index, _) in picks.items()} == {(0.0, 2.5): 1, (1.0, 2.5): 1, (2.0, 2.5): 0,
                                                                 (2.0, 3.5): 1}
    network_logprob = float(torch.log_softmax(torch.tensor([1.0, 2.5, 0.5]), dim=-1)[0])
    assert picks[2.0, 2.5][1] == pytest.approx(network_logprob)  # what training recomputes: no margin in it


COLLAPSED = [Element(mark=1, tag="h3", role="tab", text="Section #2", x=0, y=0, width=100, height=20),
             Element(mark=2, tag="button", text="Submit", x=0, y=40, width=100, height=20)]
DATE_FIELD = [Element(mark=1, tag="input", role="textbox", text="", label="Date:", x=0, y=0, width=100, height=20),
              Element(mark=2, tag="button", text="Submit", x=0, y=40, width=100, height=20)]


def test_greedy_decoding_holds_back_a_later_clause_while_the_page_offers_the_earlier_one():
    """MiniWoB++'s collapsible and date tasks, as the bundled MiniLM reads them: Submit, which the task names last,
    waits while the section header or the date field is there to use, and is free once it was used; "Done." waits
    while any of them is still to use."""
    expand = "Expand the section below and click submit."
    before = _decision(expand, COLLAPSED, f"{expand}\nSection #2\nSubmit")
    assert _held_back(before, order_margin=3.0) == {'click button "Submit"': 3.0, 'answer "Done."': 6.0}
    assert _held_back(before, done_margin=2.0, order_margin=3.0) == {'click button "Submit"': 3.0,
                                                                      'answer "Done."': 8.0}
    assert _held_back(before, order_margin=3.0, greedy=False) == {}  # sampled rollouts are unchanged
    after = _decision(expand, COLLAPSED, f"{expand}\nSection #2\nSubmit", (Chosen('click option "Section #2"'),))
    assert _held_back(after, order_margin=3.0) == {'answer "Done."': 3.0}  # Submit is still to click
    date = "Select 12/26/2016 as the date and hit submit."
    assert _held_back(_decision(date, DATE_FIELD, f"{date}\nDate:\nSubmit"), order_margin=3.0) == {
        'click button "Submit"': 3.0, 'answer "Done."': 6.0}
    # the field was used once: the date's clause need not count as done for Submit to be free again
    used = _decision(date, DATE_FIELD, f"{date}\nDate:\nSubmit",
                     tuple(Chosen(c.text) for c in page_candidates(DATE_FIELD[:1], "") if c.kind == "fill"))
    assert _held_back(used, order_margin=3.0) == {'answer "Done."': 3.0}


def _sections(shown: list[str], expanded: bool | None) -> list[Element]:
    """MiniWoB++'s click-collapsible-2: three section headers (the second open when `expanded`) and its links."""
    headers = [Element(mark=i, tag="h3", role="tab", control="tab", text=f"Section #{i}", x=0, y=30 * i, width=100,
                       height=20, expanded=expanded if i == 2 else False) for i in (1, 2, 3)]
    return headers + [Element(mark=10 + i, tag="span", text=t, x=0, y=100 + 20 * i, width=60, height=20)
                      for i, t in enumerate(shown)]


def test_greedy_decoding_clicks_only_the_element_the_task_names_and_opens_sections_to_find_it():
    """The task names its link in quotes: a shown link of another text waits, and where the named one is not shown
    only the sections not yet opened may be chosen (not scrolling, not "Done.", not another link); with none left
    to open, nothing is held for it."""
    task = 'Expand the sections below, to find and click on the link "sapien".'
    opened = (Chosen('click option "Section #2" [tab, collapsed]'),)
    shown = _decision(task, _sections(["tristique", "Sapien."], True), task, opened)
    assert _held_back(shown, order_margin=3.0) == {'click button "tristique"': 3.0, 'answer "Done."': 3.0}
    not_shown = _decision(task, _sections(["tristique", "orci"], True), task, opened)
    hidden = _held_back(not_shown, order_margin=3.0)
    free = {c.text for c in not_shown.candidates} - set(hidden)
    assert free == {'click option "Section #1" [tab, collapsed]', 'click option "Section #3" [tab, collapsed]'}
    assert set(hidden.values()) == {float("inf")}
    everything_opened = (*opened, Chosen('click option "Section #1"'), Chosen('click option "Section #3"'))
    nothing_left = _decision(task, _sections(["tristique"], False), task, everything_opened)
    assert _held_back(nothing_left, order_margin=3.0) == {}
    pie = 'Expand the pie menu below and click on the item labeled "s".'
    opener = [Element(mark=1, tag="div", text="+", x=0, y=0, width=40, height=40)]
    assert _held_back(_decision(pie, opener, pie), order_margin=3.0) == {}  # what shows "s" may be any button
    clicked = (*opened, Chosen('click button "sapien"'))
    after = _decision(task, _sections(["tristique", "sapien"], True), task, clicked)
    assert _held_back(after, order_margin=3.0) == {'answer "Done."': 3.0}  # by the sections left, not for the link
    assert _held_back(shown, order_margin=3.0, greedy=False) == {}


def _picker(month: str, days: int, opened: bool = True) -> list[Element]:
    """MiniWoB++'s choose-date: the read-only field, Submit, and, once opened, the picker's Prev and its days, named
    by their dates as observe.py names a calendar's days."""
    page = [Element(mark=1, tag="input", control="readonly", text="Date:", label="Date:", x=0, y=0, width=100,
                    height=20),
            Element(mark=2, tag="button", control="button", text="Submit", x=0, y=40, width=100, height=20)]
    if opened:
        page.append(Element(mark=3, tag="a", text="Prev", x=0, y=80, width=30, height=20))
        page += [Element(mark=10 + d, tag="a", role="link", text=f"{month} {d}, 2016", x=20 * (d % 7),
                         y=100 + 20 * (d // 7), width=20, height=20) for d in range(1, days + 1)]
    return page


def _free(decision: Decision) -> set[str]:
    held = _held_back(decision, order_margin=3.0)
    return {c.text for c in decision.candidates if c.text not in held}


def test_greedy_decoding_clicks_the_day_a_task_names_by_its_date_and_steps_the_calendar_to_it():
    """A task that names a date ("12/30/2016") names one day of a calendar, however the page writes it: before the
    picker is open only its read-only field may be chosen, a calendar of a later month only steps back (Prev), the
    shown day is the only choice (not Submit, a scroll or a page line), and once it is clicked nothing is held for
    it."""
    task = "Select 11/30/2016 as the date and hit submit."
    assert _free(_decision(task, _picker("December", 31, opened=False), task)) == {'click button "Date:" [readonly]'}
    assert _free(_decision(task, _picker("December", 31), task)) == {'click link "Prev"'}
    assert _free(_decision(task, _picker("November", 30), task)) == {'click link "November 30, 2016"'}
    picked = (Chosen('click button "Date:" [readonly]'), Chosen('click link "November 30, 2016"'))
    after = _held_back(_decision(task, _picker("November", 30)[:2], task, picked), order_margin=3.0)
    assert set(after) <= {'answer "Done."'}
    later = "Select 01/05/2017 as the date and hit submit."
    no_next = _held_back(_decision(later, _picker("December", 31), later), order_margin=3.0)
    assert float("inf") not in no_next.values()  # no Next on the page: nothing is held for the date
    on_page = 'Click on the link "November 30, 2016".'  # a date in a quoted name: the same element
    assert 'click link "November 30, 2016"' not in _held_back(_decision(on_page, _picker("November", 30), on_page),
                                                               order_margin=3.0)


def test_greedy_decoding_chooses_the_option_of_a_list_the_task_names_before_anything_else():
    """MiniWoB++'s choose-list: the one option whose whole text the task says is the only choice until chosen
    (not Submit, not another name MiniLM finds close); a task that says two options' texts names neither."""
    names = ["Nata", "Eula", "Claude"]
    page = [Element(mark=1, tag="select", control="select", text="Nata", label="Pick one", options=names, x=0, y=0,
                    width=100, height=20),
            Element(mark=2, tag="button", control="button", text="Submit", x=0, y=40, width=100, height=20)]
    task = "Select Eula from the list and click Submit."
    assert _free(_decision(task, page, task)) == {'choose "Eula" in "Pick one"'}
    chosen = _held_back(_decision(task, page, task, (Chosen('choose "Eula" in "Pick one"'),)), order_margin=3.0)
    assert float("inf") not in chosen.values()
    two = "Select Eula or Claude from the list and click Submit."
    assert float("inf") not in _held_back(_decision(two, page, two), order_margin=3.0).values()


def test_greedy_decoding_chooses_every_option_the_task_names_in_a_list_that_keeps_several():
    """MiniWoB++'s click-scroll-list: a multiple select (a listbox) and a task that says two of its options. Each is
    the only choice in the task's order until chosen, then Submit is free; where the list keeps one choice, two
    said options name neither (above)."""
    names = ["Gwen", "Willow", "Eula", "Cherianne"]
    page = [Element(mark=1, tag="select", control="listbox", text=" ".join(names), options=names, x=0, y=0,
                    width=100, height=80),
            Element(mark=2, tag="button", control="button", text="Submit", x=0, y=90, width=100, height=20)]
    task = "Select Cherianne, Willow from the scroll list and click Submit."
    assert _free(_decision(task, page, task)) == {'choose "Cherianne" in "list 1"'}
    first = (Chosen('choose "Cherianne" in "list 1"'),)
    assert _free(_decision(task, page, task, first)) == {'choose "Willow" in "list 1"'}
    both = (*first, Chosen('choose "Willow" in "list 1"'))
    assert float("inf") not in _held_back(_decision(task, page, task, both), order_margin=3.0).values()


def _menu(opened: bool) -> list[Element]:
    """MiniWoB++'s click-menu as observe.py sees jQuery UI's menu: top items, one whose submenu is hidden (or shown,
    with its items, when `opened`)."""
    items = [Element(mark=1, tag="div", role="menuitem", control="menuitem", text="Clarissa", x=0, y=0, width=80,
                     height=20, expanded=opened),
             Element(mark=2, tag="div", role="menuitem", control="menuitem", text="Blanca", x=0, y=20, width=80,
                     height=20, expanded=False),
             Element(mark=3, tag="div", role="menuitem", control="menuitem", text="Orelie", x=0, y=40, width=80,
                     height=20)]
    return items + [Element(mark=4 + i, tag="div", role="menuitem", control="menuitem", text=name, x=80, y=20 * i,
                            width=80, height=20) for i, name in enumerate(["Heda", "Robbyn"] if opened else [])]


def test_greedy_decoding_follows_a_menu_path_hovering_its_items_and_reaches_a_named_item_through_submenus():
    """A menu path ("Clarissa>Robbyn") names each item in turn: the first is hovered (a click on a menu item with a
    submenu chooses it), then the item it shows is the only choice. A quoted item not shown ("Stop") is reached by
    hovering the items whose submenus are hidden."""
    task = "Select Clarissa>Robbyn"
    closed = _decision(task, _menu(False), task)
    assert _free(closed) == {'hover option "Clarissa" [menuitem, collapsed]'}
    (hover,) = [c for c in closed.candidates if c.text in _free(closed)]
    assert hover.actions() == [Action(name="hover", mark=1)]
    hovered = (Chosen('hover option "Clarissa" [menuitem, collapsed]'),)
    assert _free(_decision(task, _menu(True), task, hovered)) == {'click option "Robbyn" [menuitem]'}
    quoted = 'Click the "Menu" button, and then find and click on the item labeled "Robbyn".'
    clicked = (Chosen('click button "Menu"'),)
    assert _free(_decision(quoted, _menu(False), quoted, clicked)) == {
        'hover option "Clarissa" [menuitem, collapsed]', 'hover option "Blanca" [menuitem, collapsed]'}


def test_a_task_that_names_a_button_by_its_cross_names_the_close_button():
    """MiniWoB++'s click-dialog-2: 'labeled "x"' is jQuery UI's title-bar button, which the page names Close."""
    dialog = [Element(mark=1, tag="button", role="button", control="button", text=t, x=40 * i, y=0, width=30,
                      height=20) for i, t in enumerate(["Close", "Cancel", "OK"], start=1)]
    task = 'Click the button in the dialog box labeled "x".'
    held = _held_back(_decision(task, dialog, task), order_margin=3.0)
    assert 'click button "Close"' not in held and {'click button "Cancel"', 'click button "OK"'} <= set(held)


def _shades(selected: set[int]) -> list[Element]:
    """MiniWoB++'s click-shades as observe.py names its swatches (marks 1-3 green, 4-5 red), `selected` marked so."""
    colours = {1: "green", 2: "green", 3: "green", 4: "red", 5: "red"}
    return [Element(mark=m, tag="span", text=c, x=20 * m, y=0, width=12, height=12, selected=m in selected or None)
            for m, c in colours.items()] + [
        Element(mark=6, tag="button", control="button", text="Submit", x=0, y=40, width=100, height=20)]


def test_greedy_decoding_clicks_every_element_of_what_the_task_asks_all_of_once():
    """"All the shades of green": each swatch named green not yet selected is the only choice, in any order; once
    all are (or as many clicks were made), nothing is held. A word the page names only one element by is no
    target."""
    task = "Select all the shades of green and press Submit."
    assert _free(_decision(task, _shades(set()), task)) == {'click button "green"'}
    one = _decision(task, _shades({2}), task, (Chosen('click button "green"'),))
    assert {c.mark for c in one.candidates if c.text in _free(one)} == {1, 3}
    done = (Chosen('click button "green"'),) * 3
    assert float("inf") not in _held_back(_decision(task, _shades({1, 2, 3}), task, done), order_margin=3.0).values()
    unselected = _decision(task, _shades(set()), task, done)  # a page that shows no selection: clicks count
    assert float("inf") not in _held_back(unselected, order_margin=3.0).values()
    page = [Element(mark=1, tag="a", role="link", control="link", text="Products", x=0, y=0, width=60, height=20),
            Element(mark=2, tag="a", role="link", control="link", text="About", x=0, y=20, width=60, height=20)]
    assert _held_back(_decision("Show all products.", page, "Show all products."), order_margin=3.0) == {}


def test_a_recorded_hover_or_click_on_a_menu_item_with_a_hidden_submenu_is_its_hover_and_other_hovers_map_to_none():
    """Training rebuilds what a step chose: the hover the candidate made, or a click an older policy or an oracle made
    on that item; a hover over anything else is no candidate."""
    for action in (Action(name="hover", mark=1), Action(name="click", mark=1)):
        choices, _, why = step_choices(_menu(False), "", [action])
        assert why is None and [c.key for c in choices] == ["hover 1"]
    _, _, why = step_choices(_menu(False), "", [Action(name="hover", mark=3)])
    assert why is not None and "hover over no menu item" in why


def test_greedy_decoding_holds_what_finishes_the_task_back_by_a_margin_per_clause_left():
    """click-checkboxes-large: Submit after one of the listed boxes waits by a margin for each box left, so a
    network that scores Submit far above the next box still ticks them all first."""
    task = "Select Alpha, Bravo, Charlie and click Submit."
    boxes = [Element(mark=i, tag="input", role="checkbox", control="checkbox", text=name, checked=False, x=0,
                     y=30 * i, width=80, height=20) for i, name in enumerate(["Alpha", "Bravo", "Charlie"], start=1)]
    page = [*boxes, Element(mark=4, tag="button", text="Submit", x=0, y=120, width=80, height=20)]
    assert _held_back(_decision(task, page, task), order_margin=3.0) == {
        'click toggle "Bravo" [checkbox, unchecked]': 3.0, 'click toggle "Charlie" [checkbox, unchecked]': 3.0,
        'click button "Submit"': 9.0, 'answer "Done."': 12.0}  # a box out of order waits by one margin only
    held = _held_back(_decision(task, page, task, (Chosen('click toggle "Alpha" [checkbox, unchecked]'),)),
                      order_margin=3.0)
    assert held == {'click toggle "Charlie" [checkbox, unchecked]': 3.0, 'click button "Submit"': 6.0,
                    'answer "Done."': 9.0}


def test_only_the_scorers_greedy_decisions_with_a_margin_are_named_apart():
    margin = PolicyConfig(kind="scorer", scorer=ScorerConfig(done_margin=2.0))
    assert margin.label(greedy=True) == "scorer-done2" and margin.label(greedy=False) == "scorer"
    both = PolicyConfig(kind="scorer", scorer=ScorerConfig(done_margin=2.0, order_margin=3.0))
    assert both.label(greedy=True) == "scorer-done2-order3"
    assert PolicyConfig(kind="scorer", scorer=ScorerConfig(order_margin=3.0)).label(greedy=True) == "scorer-order3"
    assert PolicyConfig(kind="scorer").label(greedy=True) == "scorer"
    assert PolicyConfig(kind="chat", scorer=ScorerConfig(done_margin=2.0)).label(greedy=True) == "chat"


def test_coordinate_observations_are_refused_with_the_setting_to_change():
    observed = PolicyInput(TaskSpec("t", "Buy a mug", "http://mini.test/"),
                           Observation("http://mini.test/", "Home", ["http://mini.test/"], 0, b"", None), [], 0, 5)
    policy = ScorerPolicy(init_scorer(SMALL), TextEmbeddings())
    try:
        with pytest.raises(PolicyError, match="env.observation to set_of_marks"):
            policy.decide(observed)
    finally:
        policy.close()


@pytest.mark.slow  # MiniLM, Chromium and a dozen scored steps: 20-60 s on a busy 2-core machine
def test_episodes_in_chromium_rebuild_to_the_decisions_taken(lake, mini):
    tasks = [TaskSpec(r["source_id"], r["text"], r["start_url"], r["hostname"], 2, r["rubric"])
             for r in (task_record(mini, goal) for goal in mini.spec.goals)]
    embed = TextEmbeddings()
    scorer = init_scorer(ScorerConfig(seed=1))
    policy = ScorerPolicy(scorer, embed, seed=3)
    settings = RolloutConfig(concurrency=2, default_horizon=6, horizons={"easy": 6, "medium": 6, "hard": 6})

    try:
        roll_out(lake, [mini], episode_specs(tasks, 0, settings, "scorer"), policy, settings,
                 EnvConfig(observation="set_of_marks"))
    finally:
        policy.close()
    trajectories, steps = lake.read_table("trajectories"), lake.read_table("steps").sort_values(["trajectory_id", "t"])
    assert set(trajectories["policy_version"]) == {"scorer-init-s1"} and len(trajectories) == 2
    assert steps["page_text"].notna().all() and steps["page_text"].str.contains("Mini Mart").any()
    assert steps["logprob"].le(0).all()
    for step in steps.itertuples():
        choices, _, problem = step_choices([Element.model_validate(e) for e in step.elements], step.page_text,
                                           [Action.model_validate(a) for a in step.actions])
        assert problem is None and len(choices) == 1 and step.response.startswith(choices[0].key + ":")
    task_rows = rows([Task(task_id=t.task_id, source="synthetic", source_id=t.task_id, text=t.text, created_at=NOW)
                      for t in tasks])
    accepted = steps[["trajectory_id", "t"]].assign(weight=1.0, advantage=0.0)
    samples, problems = scorer_samples(steps, trajectories, task_rows, accepted, embed)
    assert problems == [] and [s.sample_id for s in samples] == [f"{r.trajectory_id}:{r.t}" for r in steps.itertuples()]
    with torch.no_grad():
        logprobs, mask = batch_logprobs(scorer.net.eval(), samples)
    np.testing.assert_allclose((logprobs * mask).sum(dim=1).numpy(), steps["logprob"].to_numpy(), atol=2e-3)

