"""AutoWebWorld's published FSM JSON, read as a site: their semantics, our oracle and server."""

from __future__ import annotations

import copy
import json

import pytest

from webgym.sites.expr import SpecError
from webgym.sites.site import Site
from webgym.sites.specfiles import load_site
from tests.webgym.sites.conftest import write


def click(selector: str) -> list[dict]:
    return [{"op": "click", "selector": selector}]


def action(id_: str, page: str, to: str | None = None, pre=(), effects=(), gui=None, parameters=None) -> dict:
    return {"id": id_, "name": "click", "is_navigation": to is not None, "from": page, "to": to or page,
            "parameters": parameters or {}, "preconditions": list(pre), "effects": list(effects),
            "gui_procedure": gui or click(f"#{id_.lower()}")}


FSM = {
    "meta": {"app": "Tiny_Store-web", "version": "1.0", "initial_page_id": "HOME", "terminal_pages": ["ORDER_DONE"]},
    "pages": [
        {"id": "HOME", "signature_schema": {"$.cookie_consent_given": "boolean|null"}, "actions": [
            action("ACT_HOME_ACCEPT_COOKIES", "HOME", pre=[{"path": "$.cookie_consent_given", "cond": "eq", "value": None}],
                   effects=[{"op": "set", "path": "$.cookie_consent_given", "value": True}]),
            action("ACT_HOME_GO_TO_SEARCH", "HOME", "SEARCH",
                   pre=[{"path": "$.cookie_consent_given", "cond": "eq", "value": True}])]},
        {"id": "SEARCH", "signature_schema": {"$.has_searched": "boolean|null", "$.selected_product_id": "string|null"},
         "actions": [
            action("ACT_SEARCH_PRODUCTS", "SEARCH", effects=[{"op": "set", "path": "$.has_searched", "value": True}],
                   gui=[{"op": "click", "selector": "#q"}, {"op": "type_text", "selector": "#q", "text": "{search_query}"},
                        {"op": "key_press", "key": "Enter"}]),
            action("ACT_OPEN_MATCHED_PRODUCT", "SEARCH", "PRODUCT", parameters={"item_id": "{ITEM_ANY}"},
                   pre=[{"path": "$.has_searched", "cond": "eq", "value": True}],
                   effects=[{"op": "set", "path": "$.selected_product_id", "value_ref": "{item_id}"},
                            {"op": "clear", "path": "$.has_searched"}])]},
        {"id": "PRODUCT", "signature_schema": {"$.selected_product_id": "string|null", "$.cart_items": "array<object>|null"},
         "actions": [
            action("ACT_PRODUCT_ADD_TO_CART", "PRODUCT", effects=[
                {"op": "set", "path": "$.cart_items", "value_expr": "append($.cart_items, {\"id\": $.selected_product_id})"}]),
            action("ACT_PRODUCT_VIEW_CART", "PRODUCT", "CART", pre=[{"path": "$.cart_items", "cond": "length_gt", "value": 0}])]},
        {"id": "CART", "signature_schema": {"$.cart_items": "array<object>|null"}, "actions": [
            action("ACT_CART_CHECKOUT", "CART", "ORDER_DONE", pre=[{"path": "$.cart_items", "cond": "length_gt", "value": 0}]),
            action("ACT_CART_BACK_TO_HOME", "CART", "HOME")]},
        {"id": "ORDER_DONE", "signature_schema": {}, "actions": []},
    ],
}


@pytest.fixture
def tiny(tmp_path) -> Site:
    return Site(load_site(write(tmp_path, "fsm.json", json.dumps(FSM))))


def test_fsm_json_becomes_a_site_with_one_goal_per_terminal_page(tiny):
    spec = tiny.spec
    assert (spec.name, spec.hostname, spec.start_page) == ("tiny-store-web", "tiny-store-web.test", "HOME")
    assert set(spec.pages) == {"HOME", "SEARCH", "PRODUCT", "CART", "ORDER_DONE"}
    assert spec.actions["ACT_SEARCH_PRODUCTS"].element.kind == "text_input"
    assert spec.actions["ACT_HOME_GO_TO_SEARCH"].element.kind == "link"
    assert [g.id for g in spec.goals] == ["order-done"]
    assert tiny.rubric("order-done").groups[0].facts == ["The browser ends on the Order done page"]


def test_oracle_follows_their_preconditions_and_literal_parameters(tiny):
    found = tiny.oracle_path("order-done")
    assert [s.action for s in found.steps] == [
        "ACT_HOME_ACCEPT_COOKIES", "ACT_HOME_GO_TO_SEARCH", "ACT_SEARCH_PRODUCTS", "ACT_OPEN_MATCHED_PRODUCT",
        "ACT_PRODUCT_ADD_TO_CART", "ACT_PRODUCT_VIEW_CART", "ACT_CART_CHECKOUT", "answer"]
    states = [tiny.machine.snapshot(s) for s in found.states]
    # Navigation keeps only the target page's signature: the consent is dropped on SEARCH,
    # the selected product is carried to PRODUCT, the cart to CART.
    assert states[2]["page"] == "SEARCH" and states[2]["state"]["cookie_consent_given"] is None
    assert states[4]["state"]["selected_product_id"] == "{ITEM_ANY}"
    assert states[5]["state"]["cart_items"] == [{"id": "{ITEM_ANY}"}]
    assert states[6]["page"] == "CART" and states[6]["state"]["selected_product_id"] is None


def test_unsupported_parts_are_rejected_with_their_location(tmp_path):
    bad = copy.deepcopy(FSM)
    bad["pages"][0]["actions"][0]["preconditions"][0]["cond"] = "startswith"
    with pytest.raises(SpecError, match=r"fsm.json: pages\[0\].actions\[0\].preconditions\[0\].cond: "
                                        r"unsupported condition 'startswith'"):
        load_site(write(tmp_path, "fsm.json", json.dumps(bad)))
    bad = copy.deepcopy(FSM)
    bad["pages"][3]["actions"][1]["gui_procedure"] = []
    with pytest.raises(SpecError, match=r"pages\[3\].actions\[1\].gui_procedure: an action needs at least one "
                                        r"GUI step \(no element would trigger it\)"):
        load_site(write(tmp_path, "fsm.json", json.dumps(bad)))
    bad = copy.deepcopy(FSM)
    bad["pages"][0]["actions"][1]["to"] = "NOWHERE"
    with pytest.raises(SpecError, match=r"pages\[0\].actions\[1\].to: unknown page 'NOWHERE'"):
        load_site(write(tmp_path, "fsm.json", json.dumps(bad)))
