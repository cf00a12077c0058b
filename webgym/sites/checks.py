"""The checks a site must pass before it is used, with every failure reported instead of raised.

A site is usable when its spec parses and compiles (Site), every goal has an oracle path within its
band's step limit and `max_states` (BFS, searched in parallel and cached by pathcache.py), and the
oracle paths of a sample of its goals replay in Chromium to the exact verifier's success (replay.py).
Each failure is a `SiteProblem` naming family, seed, site, goal and reason; a failing site is left
out and the others go on. Replays that succeeded are remembered in `ReplayLog`, keyed by the whole
spec, the goal and the code that renders and replays, so a second check of an unchanged site skips
the browser.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from webgym.sites.expr import SpecError
from webgym.sites.generate import generated_name
from webgym.sites.pathcache import ENGINE
from webgym.sites.site import Site, search_paths
from webgym.sites.spec import SiteSpec

REPLAY_FILES = ("render.py", "oracle.py", "replay.py", "server.py", "templates/page.html", "templates/site.css",
                "templates/looks.css", "templates/site.js")
"""The code a replay's outcome depends on, besides the state machine (pathcache.ENGINE)."""


HAND_WRITTEN = "hand-written"
"""The family a problem names when a hand-written spec fails before its graph is known."""


@dataclass(frozen=True)
class SiteProblem:
    """Why a site was left out: which family and seed made it, which goal failed (None: the whole
    site), and the reason."""

    family: str
    seed: int | None
    site: str
    goal: str | None
    reason: str

    def __str__(self) -> str:
        made = f"family {self.family}" + (f", seed {self.seed}" if self.seed is not None else "")
        return f"{self.site} ({made})" + (f", goal {self.goal}" if self.goal else "") + f": {self.reason}"


def _spec_problem(family: str, seed: int | None, site: str, error: BaseException) -> SiteProblem:
    """A site that could not be built at all; the reason keeps the error's first lines."""
    text = str(error) if isinstance(error, SpecError) else f"{type(error).__name__}: {error}"
    lines = text.splitlines()
    return SiteProblem(family, seed, site, None, "\n".join(lines[:8]) + ("\n..." if len(lines) > 8 else ""))


def build_site(make: Callable[[], SiteSpec], family: str, seed: int | None, name: str, max_states: int,
               cache_dir: str | Path | None) -> Site | SiteProblem:
    """The Site of a spec made by `make`, or the problem that stopped it. Any error counts: a family's
    rules (hand- or LLM-written) may fail in ways no check foresaw, and one bad site must not stop
    the others."""
    try:
        return Site(make(), max_states, cache_dir)
    except Exception as error:  # noqa: BLE001 - reported per site, see the docstring
        return _spec_problem(family, seed, name, error)


def oracle_problems(site: Site) -> list[SiteProblem]:
    """One problem per goal without an oracle path within its band's limit and max_states."""
    return [problem(site, goal_id, reason) for goal_id, reason in site.oracle_paths()[1].items()]


def problem(site: Site, goal: str | None, reason: str) -> SiteProblem:
    """A problem of a built site; the seed is named for generated sites only."""
    family = site.spec.family or site.spec.graph
    generated = site.name == generated_name(family, site.spec.seed)
    return SiteProblem(family, site.spec.seed if generated else None, site.name, goal, reason)


def replay_sample(site: Site, count: int) -> list[str]:
    """The goals whose replay checks the most: the longest oracle path of each template (or single
    goal), longest first, `count` of them."""
    longest: dict[str, tuple[int, str]] = {}
    for goal in site.spec.goals:
        template = goal.origin.split("'")[1] if goal.origin and "'" in goal.origin else goal.id
        length = site.oracle_path(goal.id).length
        if template not in longest or (-length, goal.id) < (-longest[template][0], longest[template][1]):
            longest[template] = (length, goal.id)
    ranked = sorted(longest.values(), key=lambda pair: (-pair[0], pair[1]))
    return [goal_id for _, goal_id in ranked[:count]]


class ReplayLog:
    """Goals whose oracle path replayed successfully, one empty file per (spec, goal, replay code)."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        digest = hashlib.sha256(ENGINE.encode())
        for name in REPLAY_FILES:
            digest.update((Path(__file__).resolve().parent / name).read_bytes())
        self.code = digest.hexdigest()

    def _file(self, site: Site, goal_id: str) -> Path:
        body = json.dumps([self.code, site.spec.model_dump(mode="json"), goal_id], sort_keys=True, ensure_ascii=False)
        key = hashlib.sha256(body.encode()).hexdigest()
        return self.directory / key[:2] / key

    def confirmed(self, site: Site, goal_id: str) -> bool:
        return self._file(site, goal_id).is_file()

    def confirm(self, site: Site, goal_id: str) -> None:
        path = self._file(site, goal_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()


def checked_sites(sites: list[Site], *, workers: int = 2, replay_goals: int = 1, replay_concurrency: int = 3,
                  replays: ReplayLog | None = None) -> tuple[list[Site], list[SiteProblem]]:
    """The sites that pass every check, and the problems of those that do not (see the module
    docstring). Oracle paths are searched in `workers` processes first; `replay_goals` goals of each
    site are replayed in Chromium (0: none)."""
    search_paths(sites, workers)
    problems: list[SiteProblem] = []
    passed = []
    for site in sites:
        found = oracle_problems(site)
        problems += found
        if not found:
            passed.append(site)
    if replay_goals <= 0 or not passed:
        return passed, problems
    from webgym.sites.replay import verify_sites

    wanted = {site.name: [g for g in replay_sample(site, replay_goals)
                          if replays is None or not replays.confirmed(site, g)] for site in passed}
    to_replay = [site for site in passed if wanted[site.name]]
    failed: set[str] = set()
    if to_replay:
        by_name = {site.name: site for site in to_replay}
        for result in verify_sites(to_replay, wanted, concurrency=replay_concurrency):
            site = by_name[result.site]
            if result.ok:
                if replays is not None:
                    replays.confirm(site, result.goal)
                continue
            failed.add(site.name)
            problems.append(problem(site, result.goal, f"replay in Chromium failed: {result.message}"))
    return [site for site in passed if site.name not in failed], problems
