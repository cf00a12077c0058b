"""Two sites of one family look and read differently in a real browser: screenshots of their start
pages through the site server differ, while the same site renders the same every time."""

from __future__ import annotations

import io

import pytest
from PIL import Image, ImageChops

from tests.webgym.sites.conftest import in_chromium
from webgym.browser import VIEWPORT
from webgym.sites.family import load_families
from webgym.sites.generate import generate_spec
from webgym.sites.site import Site


def changed_fraction(a: bytes, b: bytes) -> float:
    """Share of pixels that differ between two screenshots of the same size."""
    diff = ImageChops.difference(Image.open(io.BytesIO(a)).convert("RGB"), Image.open(io.BytesIO(b)).convert("RGB"))
    return sum(1 for pixel in diff.getdata() if pixel != (0, 0, 0)) / (diff.width * diff.height)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["shop", "bank", "news"])
def test_two_instances_of_a_family_differ_in_their_screenshots_and_text(name):
    family = load_families(names=[name])[name]
    sites = [Site(generate_spec(family, seed), cache_dir=None) for seed in (0, 1)]
    shots: dict[str, list[bytes]] = {}
    texts: dict[str, str] = {}

    async def scenario(browser, server):
        for site in sites:
            for _ in range(2):
                context = await browser.new_context(viewport=VIEWPORT)
                page = await context.new_page()
                await page.goto(f"http://{site.spec.hostname}/")
                shots.setdefault(site.name, []).append(await page.screenshot())
                texts[site.name] = await page.inner_text("body")
                await context.close()
    in_chromium(sites, scenario)
    a, b = (shots[site.name] for site in sites)
    assert a[0] == a[1] and b[0] == b[1]  # deterministic rendering
    assert changed_fraction(a[0], b[0]) > 0.2
    assert texts[sites[0].name] != texts[sites[1].name]
    assert sites[0].spec.title in texts[sites[0].name] and sites[1].spec.title in texts[sites[1].name]
