"""Replay in Chromium: oracle paths clicked through on the rendered sites, confirmed by the verifier;
a mismatch between spec and page is reported with its step and a screenshot."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from webgym.cli import app
from webgym.sites.harness import StateClient
from webgym.sites.replay import replay_goal
from webgym.sites.site import Site
from webgym.sites.specfiles import load_site, parse_site
from tests.webgym.sites.conftest import in_chromium, mini_spec, write
from tests.webgym.sites.test_autowebworld import FSM


def replay(sites: list[Site], goals: list[tuple[Site, str]], shots: Path | None = None, served: list[Site] | None = None):
    results = []

    async def scenario(browser, server):
        states = StateClient(server)
        for site, goal in goals:
            results.append(await replay_goal(browser, site, goal, states, shots))
        await states.aclose()
    in_chromium(served or sites, scenario)
    return results


@pytest.mark.slow
def test_oracle_paths_replay_in_chromium_across_graphs(mini, shipped, tmp_path):
    tiny = Site(load_site(write(tmp_path, "fsm.json", json.dumps(FSM))))
    goals = [(mini, "buy-cheap-mug"), (mini, "kettle-price"), (tiny, "order-done"),
             (shipped["mail-a"], "reply-venue"), (shipped["acct-a"], "secure-account"),
             (shipped["recipes-b"], "best-gluten-free-soup"), (shipped["fly-a"], "shortest-flex")]
    results = replay([mini, tiny, shipped["mail-a"], shipped["acct-a"], shipped["recipes-b"], shipped["fly-a"]], goals)
    assert [(r.site, r.goal, r.ok, r.message) for r in results] == [(s.name, g, True, None) for s, g in goals]


@pytest.mark.slow
def test_a_page_that_disagrees_with_the_spec_is_reported_with_step_and_screenshot(mini, tmp_path):
    changed = mini_spec()
    changed["actions"]["add"]["effects"] = [{"op": "append", "var": "cart", "value": {"record": {"id": {"var": "product"}, "qty": 1}}}]
    served = Site(parse_site(changed, "changed.yaml"))
    [result] = replay([mini], [(mini, "buy-cheap-mug")], tmp_path / "shots", served=[served])
    assert not result.ok and result.failed_step == 4
    assert result.message.startswith("step 4 add(): state differs from the spec: cart = [{'id': 'p2', 'qty': 1}]")
    assert Path(result.screenshot).read_bytes().startswith(b"\x89PNG")

    renamed = mini_spec()
    renamed["actions"]["put_in_cart"] = renamed["actions"].pop("add")
    renamed["pages"]["product"]["main"][0]["actions"] = ["set_qty", "put_in_cart"]
    [result] = replay([mini], [(mini, "buy-cheap-mug")], tmp_path / "shots",
                      served=[Site(parse_site(renamed, "renamed.yaml"))])
    assert not result.ok and result.failed_step == 4 and "no element for add {} on this page" in result.message


@pytest.mark.slow
def test_webgym_sites_verify_confirms_every_shipped_goal(shipped):
    result = CliRunner().invoke(app, ["sites", "verify"])
    total = sum(len(site.spec.goals) for site in shipped.values())
    assert result.exit_code == 0, result.output
    assert f"{total}/{total} oracle paths confirmed in Chromium on {len(shipped)} site(s)" in result.output
    lengths = [int(n) for n in re.findall(r"^ok\s+\S+\s+\S+\s+(\d+) steps", result.output, re.M)]
    assert len(lengths) == total and all(3 <= n <= 25 for n in lengths)  # the 3..25 actions
