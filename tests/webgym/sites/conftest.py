"""Fixtures of the world tests: the scripted LLM server and client of tests/webgym/llm, and a small
family to write into a temporary directory."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.webgym.llm.conftest import llm, make_llm, server  # noqa: F401  (fixtures)

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
