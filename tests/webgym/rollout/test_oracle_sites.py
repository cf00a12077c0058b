"""The oracle on the shipped synthetic sites through the async engine: goals reached, as the exact
verifier confirms later from the recorded final state, with the site server already stopped."""

from __future__ import annotations

import asyncio

import pandas as pd
from playwright.async_api import async_playwright

from schemas.tasks import Task
from tests.conftest import NOW, rows
from webgym import quality
from webgym.browser import launch_browser
from webgym.config import EnvConfig, RolloutConfig
from webgym.env.safety import UrlPolicy
from webgym.policies.base import TaskSpec
from webgym.policies.oracle import SiteOracle
from webgym.rollout.collect import collect, episode_specs
from webgym.rollout.site_state import SiteStateReader
from webgym.sites.server import SiteServer
from webgym.sites.site import load_sites
from webgym.sites.tasks import task_record
from webgym.sites.verify import verify

SITES = ["shop-a", "mail-b", "fly-a"]


def _tasks(sites) -> list[TaskSpec]:
    specs = []
    for site in sites.values():
        for goal in site.spec.goals[:2]:
            record = task_record(site, goal)
            specs.append(TaskSpec(record["source_id"], record["text"], record["start_url"], record["hostname"],
                                  record["difficulty"], record["rubric"]))
    return specs


def _rollout(lake, sites, tasks, policy, **rollout) -> None:
    settings = RolloutConfig(**rollout)
    specs = episode_specs(tasks, iteration=0, config=settings, run_key=policy.version)

    async def main() -> None:
        with SiteServer(sites) as server:
            reader = SiteStateReader(server)
            async with async_playwright() as playwright:
                browser = await launch_browser(playwright, site_hosts=server.host_map())
                try:
                    await collect(specs, policy, browser, lake, settings, EnvConfig(),
                                  UrlPolicy(site_hosts=frozenset(server.sites), allow_public=False), reader)
                finally:
                    await browser.close()
                    await reader.aclose()

    asyncio.run(main())


def test_oracle_reaches_every_goal_and_the_verifier_agrees_offline(lake):
    sites = load_sites(names=SITES)
    tasks = _tasks(sites)
    lake.write_table("tasks", rows([Task(task_id=t.task_id, source="synthetic", source_id=t.task_id, text=t.text,
                                         website=t.website, start_url=t.start_url, difficulty=t.difficulty,
                                         rubric=t.rubric, created_at=NOW) for t in tasks]))
    _rollout(lake, sites, tasks, SiteOracle(sites), concurrency=3)
    trajectories = lake.read_table("trajectories").merge(
        pd.DataFrame({"task_id": [t.task_id for t in tasks], "rubric": [t.rubric for t in tasks]}))
    assert len(trajectories) == len(tasks) and (trajectories["termination"] == "answered").all()
    verdicts = [verify(r.rubric, r.final_state, r.answer) for r in trajectories.itertuples()]  # server is gone
    assert all(v.success for v in verdicts), [v.rationale for v in verdicts if not v.success]
    steps = lake.read_table("steps")
    assert steps["state_hash"].notna().all() and steps["response"].str.startswith("oracle: ").all()
    assert quality.validate(lake, ["tasks", "trajectories", "steps"]) == []


def test_fully_noisy_oracle_fails_with_the_unmet_facts_marked(lake):
    sites = load_sites(names=["shop-a"])
    tasks = _tasks(sites)[:1]
    _rollout(lake, sites, tasks, SiteOracle(sites, epsilon=1.0, seed=3), concurrency=1)
    (record,) = lake.read_table("trajectories").itertuples()
    verdict = verify(tasks[0].rubric, record.final_state, record.answer)
    assert record.termination == "max_steps" and not verdict.success
    assert any(f.success is False for g in verdict.groups for f in g.facts)
