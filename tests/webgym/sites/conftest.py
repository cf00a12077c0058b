"""Fixtures of the synthetic-site tests: a small hand-written spec, the shipped sites, a helper that
runs a scenario against the site server in a fresh Chromium, and, for the world tests, the scripted
LLM server and client of tests/webgym/llm and a small family to write into a temporary directory."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
import yaml
from playwright.async_api import Browser, async_playwright

from tests.webgym.llm.conftest import llm, make_llm, server  # noqa: F401  (fixtures)
from webgym.browser import launch_browser
from webgym.sites.server import SiteServer
from webgym.sites.site import Site, load_sites
from webgym.sites.specfiles import parse_site

MINI = yaml.safe_load("""
name: mini
hostname: mini.test
title: Mini Mart
domain: shopping
graph: mini
start_page: home
data:
  products:
    - {id: p1, name: Red Mug, price: 12.5, brand: acme}
    - {id: p2, name: Blue Mug, price: 9.0, brand: bolt}
    - {id: p3, name: Green Kettle, price: 30.0, brand: acme}
  brands:
    - {id: acme, name: Acme}
    - {id: bolt, name: Bolt}
state:
  query: {type: text, description: the search text}
  brand: {type: enum, values_from: brands.id, labels: brands, description: the brand filter}
  product: {type: enum, values_from: products.id, labels: products, description: the product open}
  qty: {type: int, min: 1, max: 3, default: 1, description: the quantity}
  cart: {type: list, fields: [id, qty], key: id, max_items: 2, labels: products, description: the cart}
  name: {type: text, description: the name on the order}
  placed: {type: bool, description: the order is placed}
views:
  results:
    from: products
    where:
      - {field: name, op: contains, value: {var: query}}
      - {field: brand, op: eq, value: {var: brand}}
pages:
  home:
    title: Home
    path: /
    main: [{type: controls, actions: [search]}]
  results:
    title: Results
    path: /search
    side: [{type: controls, actions: [filter_brand]}]
    main:
      - {type: controls, actions: [search]}
      - {type: list, view: results, title: "{name}", fields: [{field: price, format: money}], actions: [open]}
  product:
    title: "{product}"
    path: /product
    main:
      - {type: record, table: products, id: {var: product}, actions: [set_qty, add]}
      - {type: controls, actions: [back]}
  cart:
    title: Cart
    path: /cart
    main:
      - {type: items, var: cart, table: products, title: "{name}", fields: [qty], actions: [remove]}
      - {type: controls, actions: [checkout]}
nav: [go_cart]
actions:
  search:
    pages: [home, results]
    element: {kind: text_input, label: Search, submit: Go}
    params: {q: {values: [mug, kettle], free: true, bind: query}}
    effects: [{op: set, var: query, value: {param: q}}, {op: clear, var: brand}]
    to: results
  filter_brand:
    pages: [results]
    element: {kind: select, bind: brand, label: Brand}
    params: {b: {from: {column: brands.id}, labels: brands}}
    effects: [{op: set, var: brand, value: {param: b}}]
  open:
    pages: [results]
    element: {kind: link}
    params: {item: {from: {view: results, field: id}}}
    effects: [{op: set, var: product, value: {param: item}}, {op: set, var: qty, value: 1}]
    to: product
  set_qty:
    pages: [product]
    element: {kind: select, bind: qty, label: Quantity}
    params: {n: {values: [1, 2, 3]}}
    effects: [{op: set, var: qty, value: {param: n}}]
  add:
    pages: [product]
    element: {kind: button, label: Add to cart}
    effects: [{op: append, var: cart, value: {record: {id: {var: product}, qty: {var: qty}}}}]
  back:
    pages: [product]
    element: {kind: link, label: Back}
    to: results
  go_cart:
    pages: "*"
    element: {kind: link, label: "Cart ({#cart})"}
    to: cart
  remove:
    pages: [cart]
    element: {kind: button, label: Remove}
    params: {item: {from: {pluck: {var: cart}, field: id}}}
    effects: [{op: remove, var: cart, value: {param: item}}]
  checkout:
    pages: [cart]
    element: {kind: form, submit: Place order}
    params: {who: {values: [Ada, Alan], free: true, label: Name}}
    pre: [{var: cart, op: length_gt, value: 0}, {param: who, op: exists}]
    effects: [{op: set, var: name, value: {param: who}}, {op: set, var: placed, value: true}]
goals:
  - id: buy-cheap-mug
    text: On {title}, buy two of the cheaper mug as Ada.
    groups:
      - description: order
        facts:
          - {var: cart, op: contains, value: {record: {id: p2, qty: 2}}}
          - {var: cart, op: length_eq, value: 1}
          - {var: placed, op: eq, value: true}
      - description: buyer
        facts:
          - {var: name, op: eq, value: Ada}
  - id: kettle-price
    text: What does the Green Kettle cost on {title}?
    groups:
      - description: answer
        facts:
          - answer: true
            op: number_eq
            value: {lookup: products, id: p3, field: price}
            evidence: [{page: true, op: eq, value: product}, {var: product, op: eq, value: p3}]
""")


def mini_spec(**changes) -> dict:
    """A copy of the mini spec with top-level keys replaced."""
    return {**yaml.safe_load(yaml.safe_dump(MINI)), **changes}


@pytest.fixture
def mini() -> Site:
    return Site(parse_site(mini_spec(), "mini.yaml"))


@pytest.fixture(scope="session")
def shipped() -> dict[str, Site]:
    """The shipped sites, loaded once (their oracle paths are computed on demand and cached)."""
    return load_sites()


def write(tmp_path: Path, name: str, content: dict | str) -> Path:
    path = tmp_path / name
    path.write_text(content if isinstance(content, str) else yaml.safe_dump(content, sort_keys=False))
    return path


def in_chromium(sites: list[Site], scenario: Callable[[Browser, SiteServer], Awaitable[None]]) -> None:
    """Serve the sites and run `scenario(browser, server)` in a fresh Chromium mapped to them."""
    async def main() -> None:
        with SiteServer(sites) as site_server:
            async with async_playwright() as playwright:
                browser = await launch_browser(playwright, site_server.host_map())
                try:
                    await scenario(browser, site_server)
                finally:
                    await browser.close()

    asyncio.run(main())


TIP_JAR = yaml.safe_load("""
family: tipjar
about: A tip jar with a thank-you switch.
graph:
  start_page: home
  state:
    tips: {type: int, min: 0, max: 5, description: the tips given}
    thanked: {type: bool, description: the thank-you note is shown}
  pages:
    home:
      title: Tip jar
      path: /
      main: [{type: controls, actions: [tip, thank], layout: inline}]
  actions:
    tip: {pages: [home], element: {kind: button, label: Tip}, effects: [{op: inc, var: tips}]}
    thank: {pages: [home], element: {kind: checkbox, bind: thanked, label: Say thanks}, effects: [{op: toggle, var: thanked}]}
draw:
  brand: {$pick: brands.first}
site: {domain: Shopping, subdomain: General Merchandise, title: "{brand} Tips"}
data:
  amounts:
    each: [1, 2, 3]
    fields: {id: "a{item}", count: "{item}"}
goals:
  - id: tip-{a.id}
    vary: {a: {from: amounts}}
    text: ["On {title}, tip {a.count} times.", "Leave {a.count} tips on {title}."]
    groups: [{description: tips, facts: [{var: tips, op: eq, value: "{a.count}"}]}]
""")
"""A tiny, valid family with its graph inline: three goals, each a few clicks."""


def tip_jar(**changes) -> dict:
    """A copy of the tip-jar family with top-level keys replaced."""
    return {**yaml.safe_load(yaml.safe_dump(TIP_JAR)), **changes}


def save_family(directory: Path, raw: dict) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{raw['family']}.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


@pytest.fixture
def families_dir(tmp_path) -> Path:
    return tmp_path / "families"
