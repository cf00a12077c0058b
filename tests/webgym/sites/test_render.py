"""Pages: deterministic HTML, an element for every action a page offers, themes that differ per site."""

from __future__ import annotations

import re

from webgym.sites.machine import Step
from webgym.sites.render import Renderer, theme_for


def offered_elements(html: str) -> set[str]:
    return set(re.findall(r'data-wg-action="([^"]+)"', html))


def test_every_offered_action_has_an_element_along_a_path(shipped):
    for name, goal in [("shop-a", "desk-lamp-order"), ("forum-a", "upvote-follow-top-vegetables"),
                       ("acct-b", "downgrade-reminders")]:
        site = shipped[name]
        renderer = Renderer(site.machine)
        for state in site.oracle_path(goal).states:
            html = renderer.render(state)
            assert html == renderer.render(state)  # the same state, the same bytes
            enabled = {step.action for step, _ in site.machine.successors(state)}
            assert enabled <= offered_elements(html), (name, state.page, enabled - offered_elements(html))


def test_themes_are_drawn_from_the_seed_and_differ_between_sites(shipped):
    themes = {name: theme_for(site.spec) for name, site in shipped.items()}
    assert theme_for(shipped["shop-a"].spec) == themes["shop-a"]
    assert len({t.palette for t in themes.values()}) >= 8
    assert {t.layout for t in themes.values()} == {"sidebar-left", "sidebar-right", "top"}
    assert len({(t.font, t.heading_font) for t in themes.values()}) >= 5
    shop_a, shop_b = Renderer(shipped["shop-a"].machine), Renderer(shipped["shop-b"].machine)
    home_a = shop_a.render(shipped["shop-a"].machine.initial())
    home_b = shop_b.render(shipped["shop-b"].machine.initial())
    assert "layout-sidebar-left" in home_a and "layout-sidebar-right" in home_b
    assert "Northwind Goods" in home_a and "Voltline" in home_b


def test_disabled_elements_show_what_cannot_be_done_now(mini):
    machine = mini.machine
    cart = machine.apply(machine.initial(), Step.of("go_cart"))
    html = Renderer(machine).render(cart)
    submit = re.search(r'<button type="submit"[^>]*data-wg-submit[^>]*>Place order', html).group(0)
    assert "disabled" in submit  # the cart is empty
