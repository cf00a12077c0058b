"""Figures for the world of hand-written and generated sites on this machine: how long generation,
the oracle search (cold and warm) and the Chromium replay of a sample take, and what the world holds.

    .venv/bin/python benchmarks/sites.py [--instances 5] [--workers 2] [--replay-goals 1] [--family shop ...]

Every run uses a fresh temporary cache directory, never the project's `.cache/sites`, so "cold" is
what a clean clone pays. Phases, each timed on its own:
  generation   family files -> specs -> compiled sites (hand-written specs loaded too)
  search cold  every goal's oracle path, in --workers processes, then each site's goals checked
  search warm  load_world again on the same cache (generation included): what every later run pays
  replay       --replay-goals goals per site replayed in Chromium (the longest of different templates)
Then the counts: sites and goals per family and difficulty band, and every problem found.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

from schemas.values import HORIZONS, difficulty_band
from webgym.config import SitesConfig, WorldConfig
from webgym.sites.checks import HAND_WRITTEN, ReplayLog, SiteProblem, build_site, checked_sites, oracle_problems
from webgym.sites.family import load_families
from webgym.sites.site import Site, search_paths
from webgym.sites.spec import SPECS_DIR
from webgym.sites.specfiles import load_site, spec_files
from webgym.sites.world import generated_sites, load_world


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=int, default=5, help="Sites generated per family.")
    parser.add_argument("--workers", type=int, default=2, help="Processes of the cold search.")
    parser.add_argument("--replay-goals", type=int, default=1, help="Goals per site replayed in Chromium (0: none).")
    parser.add_argument("--concurrency", type=int, default=3, help="Goals replayed at once.")
    parser.add_argument("--family", action="append", help="Only these families (repeatable).")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp)
        started = time.monotonic()
        built: list[Site | SiteProblem] = [build_site(lambda path=path: load_site(path), HAND_WRITTEN, None, path.stem,
                                                      200_000, cache) for path in spec_files(SPECS_DIR)]
        for family in load_families(names=args.family).values():
            built += generated_sites(family, list(range(args.instances)), 200_000, cache)
        sites = [item for item in built if isinstance(item, Site)]
        problems = [item for item in built if isinstance(item, SiteProblem)]
        generated = time.monotonic()

        search_paths(sites, args.workers)
        for site in sites:
            problems += oracle_problems(site)
        searched = time.monotonic()

        world = WorldConfig(families=args.family, instances=args.instances, replay_goals=0, generated_dir=None)
        warm = load_world(SitesConfig(world=world, cache_dir=str(cache), search_workers=args.workers))
        warmed = time.monotonic()

        failed = {problem.site for problem in problems}
        usable = [site for site in sites if site.name not in failed]
        _, replay_problems = checked_sites(usable, workers=args.workers, replay_goals=args.replay_goals,
                                           replay_concurrency=args.concurrency, replays=ReplayLog(cache / "replays"))
        replayed = time.monotonic()
        problems += replay_problems

    report(warm.sites, problems, args.replay_goals)
    goals = sum(len(site.spec.goals) for site in sites)
    print(f"\n{len(sites)} sites, {goals} goals on this machine ({args.workers} search processes):")
    print(f"  generation (specs, compile)   {generated - started:7.1f} s")
    print(f"  search, cold                  {searched - generated:7.1f} s")
    print(f"  search, warm (load_world)     {warmed - searched:7.1f} s")
    print(f"  replay in Chromium            {replayed - warmed:7.1f} s  ({args.replay_goals} goal(s) per site, "
          f"{len(usable)} sites)")


def report(sites: dict[str, Site], problems: list[SiteProblem], replay_goals: int) -> None:
    """Sites and goals per family and band, then the problems."""
    rows: dict[str, Counter] = defaultdict(Counter)
    for site in sites.values():
        family = str(site.spec.family)
        rows[family]["sites"] += 1
        for goal in site.spec.goals:
            rows[family][difficulty_band(site.rubric(goal.id).n_facts)] += 1
    bands = list(HORIZONS)
    print(f"{'family':<12} {'sites':>5} {'goals':>6} " + " ".join(f"{band:>6}" for band in bands))
    total: Counter = Counter()
    for family, row in sorted(rows.items()):
        total.update(row)
        print(f"{family:<12} {row['sites']:>5} {sum(row[b] for b in bands):>6} " + " ".join(f"{row[b]:>6}" for b in bands))
    print(f"{'all':<12} {total['sites']:>5} {sum(total[b] for b in bands):>6} " + " ".join(f"{total[b]:>6}" for b in bands)
          + f"   ({len(rows)} families)")
    print(f"\n{len(problems)} problem(s)" + ("" if replay_goals else " (no replay)") + (":" if problems else ""))
    for problem in problems:
        print(f"  {problem}")


if __name__ == "__main__":
    main()
