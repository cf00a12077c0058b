"""Figures for the synthetic sites' goals and oracle paths on this machine (no browser).

    .venv/bin/python benchmarks/site_paths.py [--workers 2] [--site shop-a ...]

Prints the goals per site and difficulty band (and how many WebGym's decomposition applies to), then
the time to find every goal's oracle path: cold in one process, cold with --workers processes
(`search_paths`), and warm, when every path comes from the disk cache. Each run uses a fresh
temporary cache directory, never the project's `.cache/sites`. The Chromium replay that `webgym
sites verify` adds on top prints its own time.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from schemas.values import HORIZONS
from webgym.sites.site import Site, load_sites, search_paths


def timed(run: Callable[[], object]) -> float:
    started = time.monotonic()
    run()
    return time.monotonic() - started


def validate_all(sites: dict[str, Site]) -> None:
    for site in sites.values():
        site.validate()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2, help="Processes for the parallel cold search.")
    parser.add_argument("--site", action="append", help="Only these sites (repeatable).")
    args = parser.parse_args()

    sites = load_sites(names=args.site, cache_dir=None)
    print(f"{'site':<12} {'goals':>5} " + " ".join(f"{band:>6}" for band in HORIZONS) + f" {'decomposable':>13}")
    totals = dict.fromkeys([*HORIZONS, "goals", "decomposable"], 0)
    for name, site in sites.items():
        rubrics = [site.rubric(goal.id) for goal in site.spec.goals]
        bands = [site.band(goal.id) for goal in site.spec.goals]
        split = sum(len(r.groups) >= 2 and any(len(g.facts) >= 3 for g in r.groups) for r in rubrics)
        for key, value in [*((band, bands.count(band)) for band in HORIZONS), ("goals", len(bands)),
                           ("decomposable", split)]:
            totals[key] += value
        print(f"{name:<12} {len(bands):>5} " + " ".join(f"{bands.count(band):>6}" for band in HORIZONS) + f" {split:>13}")
    print(f"{'all':<12} {totals['goals']:>5} " + " ".join(f"{totals[band]:>6}" for band in HORIZONS)
          + f" {totals['decomposable']:>13}")

    with tempfile.TemporaryDirectory() as serial_dir, tempfile.TemporaryDirectory() as parallel_dir:
        serial = timed(lambda: validate_all(load_sites(names=args.site, cache_dir=Path(serial_dir))))
        cold = load_sites(names=args.site, cache_dir=Path(parallel_dir))
        parallel = timed(lambda: (search_paths(list(cold.values()), args.workers), validate_all(cold)))
        warm = timed(lambda: validate_all(load_sites(names=args.site, cache_dir=Path(parallel_dir))))
    print(f"oracle paths of {totals['goals']} goals: cold, 1 process {serial:.1f} s; cold, {args.workers} "
          f"processes {parallel:.1f} s; warm (disk cache, loading included) {warm:.1f} s")


if __name__ == "__main__":
    main()
