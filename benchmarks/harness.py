"""What the episode harness costs over raw Playwright, for the main job's full step.

    .venv/bin/python benchmarks/harness.py [--steps 40] [--repeats 3] [--concurrency 1 4]

Both variants run the same steps on the synthetic sites, `concurrency` pages at once in one
Chromium: open a site's start page, then per step observe it in set-of-marks mode (screenshot,
interactive elements, page text, title, tabs), check for a block page and click the next
element of the list (links and buttons in turn), as the main job does. Raw: plain Playwright
calls, no marks drawn, no guard, waiting after a click only until the page reports idle
(`webgym.env.actions.settle`, which raw code needs too, or its next read races the navigation). Episode: `webgym.env.episode.Episode` with its egress proxy,
URL guard, marks drawn on the screenshot and the block check. Prints steps/s of each, medians
of `--repeats` interleaved runs, and their ratio (raw / episode: the harness overhead), with the
load average, as one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import time

from playwright.async_api import Browser, async_playwright

from schemas.steps import Action
from webgym.browser import launch_browser
from webgym.config import EnvConfig
from webgym.env.actions import settle
from webgym.env.episode import Episode
from webgym.env.observe import INTERACTIVE_JS, PAGE_TEXT_JS
from webgym.env.safety import UrlPolicy
from webgym.sites.server import SiteServer
from webgym.sites.site import load_sites

CLICKABLE = ("a", "button")


def _target(elements: list[dict], step: int) -> dict | None:
    """The element clicked at `step`: links and buttons in turn (the same rule for both variants)."""
    candidates = [e for e in elements if e["tag"] in CLICKABLE]
    return candidates[step % len(candidates)] if candidates else None


async def raw_episode(browser: Browser, url: str, steps: int, config: EnvConfig) -> int:
    context = await browser.new_context(viewport={"width": config.viewport_width, "height": config.viewport_height})
    try:
        page = await context.new_page()
        await page.goto(url)
        for step in range(steps):
            await page.screenshot(type="png")
            elements = await page.evaluate(INTERACTIVE_JS)
            await page.evaluate(PAGE_TEXT_JS)
            await page.title()
            target = _target(elements, step)
            if target is None:
                await page.goto(url)
                continue
            await page.mouse.click(target["x"] + target["width"] / 2, target["y"] + target["height"] / 2)
            await settle(page, config.action_timeout_s)
        return steps
    finally:
        await context.close()


async def harness_episode(browser: Browser, url: str, steps: int, config: EnvConfig, policy: UrlPolicy) -> int:
    async with Episode(browser, config, policy) as episode:
        await episode.open(url)
        for step in range(steps):
            observation = await episode.observe()
            await episode.blocked()
            target = _target([e.model_dump() for e in observation.elements or []], step)
            if target is None:
                await episode.open(url)
                continue
            await episode.act([Action(name="click", mark=target["mark"])])
        return steps


async def timed(variant, browser: Browser, urls: list[str], concurrency: int, steps: int) -> float:
    """Steps per second of `concurrency` episodes of `steps` steps at once."""
    start = time.perf_counter()
    done = await asyncio.gather(*(variant(browser, urls[i % len(urls)], steps) for i in range(concurrency)))
    return sum(done) / (time.perf_counter() - start)


async def run(steps: int, repeats: int, concurrencies: list[int]) -> dict:
    config = EnvConfig(observation="set_of_marks")
    with SiteServer(load_sites()) as server:
        urls = [f"http://{host}/" for host in sorted(server.sites)]
        policy = UrlPolicy(site_hosts=frozenset(server.sites), allow_public=False)
        variants = {"raw": lambda b, u, n: raw_episode(b, u, n, config),
                    "episode": lambda b, u, n: harness_episode(b, u, n, config, policy)}
        result: dict = {"steps_per_episode": steps, "repeats": repeats, "cpus": os.cpu_count()}
        loads = []
        async with async_playwright() as playwright:
            browser = await launch_browser(playwright, site_hosts=server.host_map())
            try:
                await timed(variants["episode"], browser, urls, 1, 2)  # warm the browser and the caches
                for concurrency in concurrencies:
                    rates: dict[str, list[float]] = {name: [] for name in variants}
                    for _ in range(repeats):
                        loads.append(os.getloadavg()[0])
                        for name, variant in variants.items():
                            rates[name].append(await timed(variant, browser, urls, concurrency, steps))
                    raw, episode = (statistics.median(rates[name]) for name in ("raw", "episode"))
                    result[f"c{concurrency}"] = {"raw_steps_per_s": round(raw, 2),
                                                 "episode_steps_per_s": round(episode, 2),
                                                 "overhead": round(raw / episode, 3)}
            finally:
                await browser.close()
        result["load_median"] = statistics.median(loads)
        return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=40, help="Steps per episode.")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 4])
    args = parser.parse_args()
    print(json.dumps(asyncio.run(run(args.steps, args.repeats, args.concurrency))))


if __name__ == "__main__":
    main()
