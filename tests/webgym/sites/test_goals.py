"""Goal templates: one goal per combination of values, each an ordinary goal with its own id, text,
rubric and checks; mistakes are reported with the template and the values that caused them."""

from __future__ import annotations

import json

import pytest

from webgym.sites.expr import SpecError
from webgym.sites.site import Site
from webgym.sites.specfiles import parse_site
from webgym.sites.tasks import task_text
from tests.webgym.sites.conftest import mini_spec

PRICE = {
    "id": "price-{p.id}",
    "vary": {"p": {"from": "products", "where": [{"field": "brand", "op": "eq", "value": "acme"}]}},
    "text": "What does the {p.name} cost on {title}?",
    "groups": [{"description": "answer", "facts": [
        {"answer": True, "op": "number_eq", "value": "{p.price}",
         "evidence": [{"page": True, "op": "eq", "value": "product"}, {"var": "product", "op": "eq", "value": "{p.id}"}]}]}],
}

CHEAPEST = {
    "id": "cheapest-{q}-x{n}",
    "vary": {"q": ["mug", "kettle", "lamp"], "n": [2, 3],
             "best": {"from": "products", "where": [{"field": "name", "op": "contains", "value": "{q}"}],
                      "sort": ["price"], "limit": 1}},
    "text": "On {title}, search for “{q}” and put {n} of the cheapest result in your cart.",
    "groups": [{"description": "cart", "facts": [
        {"var": "cart", "op": "contains", "value": {"record": {"id": "{best.id}", "qty": "{n}"}}},
        {"var": "cart", "op": "length_eq", "value": 1}]}],
}


def site_with(*templates: dict) -> Site:
    spec = mini_spec()
    spec["goals"] = spec["goals"] + [json.loads(json.dumps(t)) for t in templates]
    return Site(parse_site(spec, "mini.yaml"))


def error_of(*templates: dict) -> str:
    with pytest.raises(SpecError) as caught:
        site_with(*templates).validate()
    return str(caught.value)


def test_a_template_makes_one_goal_per_data_row_with_its_own_text_and_checks():
    site = site_with(PRICE)
    goals = {goal.id: goal for goal in site.spec.goals}
    assert list(goals) == ["buy-cheap-mug", "kettle-price", "price-p1", "price-p3"]  # hand-written ones first, kept
    assert goals["price-p3"].text == "What does the Green Kettle cost on {title}?"  # {title} is the site's
    check = json.loads(site.rubric("price-p3").groups[0].checks[0])
    assert check["value"] == 30.0 and check["evidence"][1]["value"] == "p3"  # the number stays a number
    assert site.rubric("price-p1").groups[0].facts == ["The answer gives 12.5"]
    assert goals["price-p1"].origin == "goals[2] (template 'price-{p.id}' with p=p1)"
    assert goals["buy-cheap-mug"].origin is None
    paths = site.validate()
    assert [str(step) for step in paths["price-p3"].steps][-1] == 'answer(text="30")'


def test_later_bindings_query_the_data_with_earlier_ones_and_empty_combinations_make_no_goal():
    site = site_with(CHEAPEST)
    made = [goal.id for goal in site.spec.goals if goal.origin]
    assert made == ["cheapest-mug-x2", "cheapest-mug-x3", "cheapest-kettle-x2", "cheapest-kettle-x3"]  # no lamp
    cart = json.loads(site.rubric("cheapest-mug-x3").groups[0].checks[0])
    assert cart["value"] == {"record": {"id": "p2", "qty": 3}}  # the cheaper mug, the quantity as a number
    assert task_text(site, site.spec.goals[-1]) == "On Mini Mart, search for “kettle” and put 3 of the cheapest result in your cart."
    assert set(site.validate()) >= set(made)


@pytest.mark.parametrize(("change", "message"), [
    (lambda t: t.update(text="What does {p.label} cost?"),
     "mini.yaml: goals[2] (template 'price-{p.id}') with p=p1: text: {p.label}: p has no field 'label' "
     "(fields: brand, id, name, price)"),
    (lambda t: t.update(id="price"),
     "mini.yaml: goals[2] (template 'price'): id 'price' is made by both p=p1 and p=p3"),
    (lambda t: t["vary"]["p"].update({"from": "items"}),
     "mini.yaml: goals[2] (template 'price-{p.id}'): vary.p.from: unknown data table 'items' (tables: brands, products)"),
    (lambda t: t["vary"]["p"]["where"][0].update(field="maker"),
     "vary.p.where[0].field: table 'products' has no field 'maker'"),
    (lambda t: t["vary"]["p"]["where"][0].update(value="nobody"),
     "mini.yaml: goals[2] (template 'price-{p.id}'): makes no goal"),
    (lambda t: t["vary"].update(title=["x"]), "vary.title: {title} is filled in from the site"),
    (lambda t: t["vary"].update(q=[]), "vary.q: no values"),
    (lambda t: t["groups"][0]["facts"][0].update(op="equals"),
     "goals[2] (template 'price-{p.id}' with p=p1): goals[price-p1].groups[0].facts[0].op: unknown operator 'equals'"),
    (lambda t: t.pop("text"), "mini.yaml: goals[2].text: Field required"),
])
def test_template_mistakes_name_the_template_and_the_values(change, message):
    template = json.loads(json.dumps(PRICE))
    change(template)
    assert message in error_of(template)


def test_bindings_that_make_the_very_same_goal_make_it_once():
    template = json.loads(json.dumps(PRICE))
    template.update(id="acme-price", text="What does an Acme product cost on {title}?")
    template["groups"][0]["facts"][0].update(value="{p.brand}", op="contains")
    template["groups"][0]["facts"][0]["evidence"] = []
    made = [goal for goal in site_with(template).spec.goals if goal.origin]
    assert [goal.id for goal in made] == ["acme-price"]
    assert made[0].origin == "goals[2] (template 'acme-price' with p=p1)"


def test_a_binding_used_before_it_is_made_is_named():
    template = json.loads(json.dumps(CHEAPEST))
    template["vary"] = {"best": template["vary"]["best"], "q": ["mug"], "n": [1]}
    assert "vary.best.where[0].value: {q} is bound after this; list 'q' earlier in vary" in error_of(template)


def test_a_made_goal_that_collides_with_a_hand_written_one_is_named():
    template = {**json.loads(json.dumps(PRICE)), "id": "{p.id}"}
    template["vary"]["p"]["where"] = []
    spec = mini_spec()
    spec["goals"].insert(0, {**spec["goals"][0], "id": "p2"})
    spec["goals"].append(template)
    with pytest.raises(SpecError, match=r"goals\[3\] \(template '\{p.id\}' with p=p2\): duplicate goal id 'p2' "
                                        r"\(also made by goals\[0\]\)"):
        parse_site(spec, "mini.yaml")


def test_a_made_goal_beyond_its_band_is_rejected_with_template_and_value():
    far = {"id": "far-{n}", "vary": {"n": [2, 5]}, "text": "Put {n} items in the cart.",
           "groups": [{"description": "cart", "facts": [{"var": "cart", "op": "length_eq", "value": "{n}"}]}]}
    message = error_of(far)
    assert "mini.yaml: far-5 from goals[2] (template 'far-{n}' with n=5): unreachable: no path within the easy band" in message
    assert "far-2" not in message  # the reachable instance is fine
