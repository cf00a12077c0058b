"""Spec loading and validation: bad specs are rejected with the file and the exact location."""

from __future__ import annotations

import pytest

from webgym.sites.expr import SpecError
from webgym.sites.site import Site, load_sites
from webgym.sites.specfiles import load_site, parse_site
from webgym.sites.tasks import task_text
from tests.webgym.sites.conftest import mini_spec, write


def _error(spec: dict) -> str:
    with pytest.raises(SpecError) as caught:
        Site(parse_site(spec, "bad.yaml"))
    return str(caught.value)


def test_unknown_variable_is_named_with_its_location():
    spec = mini_spec()
    spec["actions"]["add"]["pre"] = [{"var": "qtty", "op": "gt", "value": 0}]
    message = _error(spec)
    assert "bad.yaml: actions.add.pre[0].var: unknown variable 'qtty'" in message
    assert "qty" in message  # the known variables are listed


def test_action_without_element_on_a_page_is_rejected():
    spec = mini_spec()
    spec["actions"]["add"]["pages"] = ["product", "cart"]
    assert "actions.add: no element triggers it on page 'cart'" in _error(spec)


def test_block_naming_an_unknown_action_or_one_not_offered_there():
    spec = mini_spec()
    spec["pages"]["cart"]["main"].append({"type": "controls", "actions": ["nope", "add"]})
    message = _error(spec)
    assert "pages.cart.main[2].actions[0]: unknown action 'nope'" in message
    assert "pages.cart.main[2].actions[1]: action 'add' is not offered on page 'cart'" in message


def test_structural_errors_name_the_field():
    spec = mini_spec()
    spec["state"]["qty"]["type"] = "integer"
    assert "bad.yaml: state.qty.type: Input should be" in _error(spec)
    spec = mini_spec()
    spec["actions"]["add"]["effects"] = [{"op": "inc", "var": "cart"}]
    assert "actions.add.effects[0]: 'inc' does not apply to 'cart', a list" in _error(spec)


def test_goal_fact_with_an_unknown_operator_is_named():
    spec = mini_spec()
    spec["goals"][0]["groups"][0]["facts"][0]["op"] = "equals"
    assert "goals[buy-cheap-mug].groups[0].facts[0].op: unknown operator 'equals'" in _error(spec)


def test_unreachable_goal_is_rejected_by_validation():
    spec = mini_spec()
    spec["goals"].append({"id": "impossible", "text": "x", "groups": [{"description": "d", "facts": [
        {"var": "cart", "op": "length_eq", "value": 3}]}]})
    with pytest.raises(SpecError, match=r"goals\[2\] \(impossible\): unreachable: no path within the easy "
                                        r"band's 10 steps"):
        Site(parse_site(spec, "bad.yaml")).validate()


def counter(target: int) -> dict:
    """One button that adds 1; the goal needs `target` clicks and the answer."""
    return {"name": "counter", "hostname": "counter.test", "title": "Counter", "domain": "test", "graph": "counter",
            "start_page": "home", "state": {"n": {"type": "int", "min": 0, "max": 20, "description": "the count"}},
            "pages": {"home": {"title": "Home", "path": "/", "main": [{"type": "controls", "actions": ["bump"]}]}},
            "actions": {"bump": {"pages": ["home"], "element": {"kind": "button", "label": "+1"},
                                 "effects": [{"op": "inc", "var": "n"}]}},
            "goals": [{"id": "reach", "text": "x", "groups": [{"description": "d", "facts": [
                {"var": "n", "op": "eq", "value": target}]}]}]}


def test_goal_longer_than_its_band_allows_is_rejected():
    fits = Site(parse_site(counter(9), "counter.yaml")).validate()
    assert fits["reach"].length == 10  # one fact: easy band, 10 steps with the answer
    with pytest.raises(SpecError, match=r"goals\[0\] \(reach\): unreachable: no path within the easy band's 10"):
        Site(parse_site(counter(10), "counter.yaml")).validate()


def test_yaml_errors_and_unknown_graph_name_the_file(tmp_path):
    broken = write(tmp_path, "broken.yaml", "name: x\npages: {home: {title: What?}}\n  bad: indent")
    with pytest.raises(SpecError, match="broken.yaml: not valid YAML"):
        load_site(broken)
    orphan = write(tmp_path, "orphan.yaml", {"extends": "nope", "name": "x"})
    with pytest.raises(SpecError, match="orphan.yaml: extends: unknown graph 'nope' .*shop"):
        load_site(orphan)


def test_site_extends_a_graph_and_overrides_only_what_it_names(shipped):
    shop_a, shop_b = shipped["shop-a"].spec, shipped["shop-b"].spec
    assert shop_a.graph == shop_b.graph == "shop"
    assert set(shop_a.actions) == set(shop_b.actions) and set(shop_a.pages) == set(shop_b.pages)
    assert shop_a.actions["search"].params["q"].values == ["mug", "lamp", "kettle"]
    assert shop_a.actions["search"].params["q"].free  # kept from the graph
    assert shop_a.data["products"] != shop_b.data["products"]


def test_shipped_sites_cover_twelve_sites_six_graphs_six_domains(shipped):
    assert len(shipped) >= 12
    assert len({s.spec.graph for s in shipped.values()}) >= 6
    assert len({s.spec.domain for s in shipped.values()}) >= 6
    hostnames = [s.spec.hostname for s in shipped.values()]
    assert len(set(hostnames)) == len(hostnames) and all(h.endswith(".test") for h in hostnames)
    goals = [(site, goal.id) for site in shipped.values() for goal in site.spec.goals]
    assert len(goals) >= 180
    # Question goals answered from page content, and goals WebGym's decomposition applies to.
    assert sum(any("answer" in f for g in goal.groups for f in g.facts)
               for site in shipped.values() for goal in site.spec.goals) >= 60
    decomposable = [(site.name, gid) for site, gid in goals
                    if len(site.rubric(gid).groups) >= 2 and any(len(g.facts) >= 3 for g in site.rubric(gid).groups)]
    assert len(decomposable) >= 60


def test_every_shipped_site_has_fifteen_goals_with_easy_and_medium_ones_and_several_have_hard_ones(shipped):
    bands = {name: [site.band(goal.id) for goal in site.spec.goals] for name, site in shipped.items()}
    assert {name: len(b) >= 15 and "easy" in b and "medium" in b for name, b in bands.items()} == dict.fromkeys(bands, True)
    assert sum("hard" in b for b in bands.values()) >= 6
    texts = [task_text(site, goal) for site in shipped.values() for goal in site.spec.goals]
    assert len(set(texts)) == len(texts)  # templates make distinct tasks, not copies


def test_load_sites_refuses_a_duplicate_name(tmp_path):
    write(tmp_path, "a.yaml", mini_spec())
    write(tmp_path, "b.yaml", mini_spec())
    with pytest.raises(SpecError, match="b.yaml: name: site 'mini' is already defined by .*a.yaml"):
        load_sites(tmp_path)
