"""The state machine: preconditions, effects and computed values, as a page's actions use them."""

from __future__ import annotations

import pytest

from webgym.sites.expr import OPS, Record, freeze
from webgym.sites.machine import Rejected, State, Step, snapshot_hash
from webgym.sites.site import Site
from webgym.sites.specfiles import parse_site
from tests.webgym.sites.conftest import mini_spec


def run(site: Site, *steps: tuple[str, dict]) -> State:
    state = site.machine.initial()
    for action, params in steps:
        state = site.machine.apply(state, Step.of(action, params))
    return state


def value(site: Site, state: State, var: str):
    return site.machine.snapshot(state)["state"][var]


@pytest.mark.parametrize("op, left, right, expected", [
    ("eq", "Red  MUG", "red mug", True), ("neq", 2, 3, True), ("gt", 3, 2, True), ("gte", 2, 2, True),
    ("lt", None, 2, False), ("lte", 2.0, 2, True), ("exists", "", None, False), ("exists", (), None, False),
    ("not_null", 0, None, True), ("in", "b", ("a", "b"), True), ("not_in", "c", ("a", "b"), True),
    ("oneof", "A", ("a", "b"), True), ("contains", ("x", "y"), "y", True), ("lacks", ("x",), "y", True),
    ("contains_all", ("a", "b", "c"), ("a", "c"), True), ("contains_all", ("a",), ("a", "c"), False),
    ("length_gt", ("a",), 0, True), ("length_eq", None, 0, True), ("number_eq", "It costs $1,240.00", 1240, True),
    ("eq", ("b", "a"), ("a", "b"), True), ("contains", freeze([{"id": 1, "qty": 2}]), freeze({"qty": 2, "id": 1}), True),
])
def test_condition_operators(op, left, right, expected):
    assert OPS[op](left, right) is expected


def test_effects_set_inc_clear_append_remove_and_computed_values(mini):
    state = run(mini, ("search", {"q": "mug"}), ("open", {"item": "p2"}), ("set_qty", {"n": 2}), ("add", {}))
    assert value(mini, state, "cart") == [{"id": "p2", "qty": 2}]  # record computed from product and qty
    state = mini.machine.apply(state, Step.of("set_qty", {"n": 3}))
    state = mini.machine.apply(state, Step.of("add", {}))
    assert value(mini, state, "cart") == [{"id": "p2", "qty": 3}]  # same key: replaced, not added
    state = run(mini, ("search", {"q": "mug"}), ("filter_brand", {"b": "bolt"}), ("search", {"q": "kettle"}))
    assert value(mini, state, "brand") is None and value(mini, state, "query") == "kettle"  # clear


def test_full_list_and_failed_precondition_refuse_with_a_reason(mini):
    state = run(mini, ("search", {"q": "mug"}), ("open", {"item": "p1"}), ("add", {}), ("back", {}),
                ("open", {"item": "p2"}), ("add", {}), ("back", {}), ("search", {"q": "kettle"}), ("open", {"item": "p3"}))
    with pytest.raises(Rejected, match="the cart is full"):
        mini.machine.apply(state, Step.of("add", {}))
    with pytest.raises(Rejected, match="not possible right now"):
        mini.machine.apply(run(mini, ("go_cart", {})), Step.of("checkout", {"who": "Ada"}))


def test_parameters_from_the_page_and_free_text(mini):
    machine = mini.machine
    results = run(mini, ("search", {"q": "mug"}))
    with pytest.raises(Rejected, match="'p3' is not an option for item"):  # the kettle is not listed
        machine.apply(results, Step.of("open", {"item": "p3"}))
    typed = machine.apply(results, Step.of("search", {"q": "  Green KETTLE "}))  # any typed text is accepted
    assert value(mini, typed, "query") == "Green KETTLE"
    assert [r["id"] for r in machine.view(typed, "results").rows] == ["p3"]  # case-insensitive match
    assert value(mini, machine.apply(results, Step.of("search", {"q": "KETTLE"})), "query") == "kettle"
    with pytest.raises(Rejected, match="'4' is not an option for n"):
        machine.apply(run(mini, ("search", {"q": "mug"}), ("open", {"item": "p1"})), Step.of("set_qty", {"n": "4"}))
    with pytest.raises(Rejected, match="'add' is not offered on this page"):
        machine.apply(machine.initial(), Step.of("add", {}))


def test_int_effects_stay_in_range_and_toggles_flip():
    spec = mini_spec()
    spec["actions"]["set_qty"] = {"pages": ["product"], "element": {"kind": "button", "label": "+"},
                                  "effects": [{"op": "inc", "var": "qty", "value": 2}]}
    spec["actions"]["add"]["effects"].append({"op": "toggle", "var": "placed"})
    site = Site(parse_site(spec, "mini.yaml"))
    state = run(site, ("search", {"q": "mug"}), ("open", {"item": "p1"}), ("set_qty", {}), ("set_qty", {}))
    assert value(site, state, "qty") == 3  # max 3
    state = site.machine.apply(state, Step.of("add", {}))
    assert value(site, state, "placed") is True


def test_snapshots_round_trip_and_hash_is_stable(mini):
    state = run(mini, ("search", {"q": "mug"}), ("open", {"item": "p2"}), ("add", {}))
    snapshot = mini.machine.snapshot(state)
    assert mini.machine.from_snapshot(snapshot) == state
    assert snapshot_hash(snapshot) == snapshot_hash({**snapshot, "state": dict(reversed(snapshot["state"].items()))})
    assert snapshot_hash(snapshot) != snapshot_hash(mini.machine.snapshot(mini.machine.initial()))
    with pytest.raises(ValueError, match="unknown variable"):
        mini.machine.from_snapshot({**snapshot, "state": {"nope": 1}})


def test_records_compare_whatever_their_key_order():
    assert freeze({"b": 1, "a": 2}) == freeze({"a": 2, "b": 1}) == Record((("a", 2), ("b", 1)))
