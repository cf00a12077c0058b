"""Fixtures of the rollout tests, and rolling a policy out on synthetic sites in Chromium."""

from __future__ import annotations

import asyncio

from playwright.async_api import async_playwright

from tests.fixture_site import secret, site  # noqa: F401 (fixtures)
from webgym.browser import launch_browser
from webgym.config import EnvConfig, RolloutConfig
from webgym.env.safety import UrlPolicy
from webgym.lake import Lake
from webgym.policies.base import Expert, Policy
from webgym.rollout.collect import collect
from webgym.rollout.episode_run import EpisodeSpec
from webgym.rollout.site_state import SiteStateReader
from webgym.sites.server import SiteServer
from webgym.sites.site import Site


def roll_out(lake: Lake, sites: dict[str, Site] | list[Site], specs: list[EpisodeSpec], policy: Policy,
             settings: RolloutConfig, env: EnvConfig, expert: Expert | None = None) -> None:
    """Run the episodes on a site server of these sites in a fresh Chromium and record them in the lake."""
    async def main() -> None:
        with SiteServer(sites) as server:
            reader = SiteStateReader(server)
            async with async_playwright() as playwright:
                browser = await launch_browser(playwright, site_hosts=server.host_map())
                try:
                    await collect(specs, policy, browser, lake, settings, env,
                                  UrlPolicy(site_hosts=frozenset(server.sites), allow_public=False), reader,
                                  expert=expert)
                finally:
                    await browser.close()
                    await reader.aclose()

    asyncio.run(main())
