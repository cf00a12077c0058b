"""A loaded site: spec + compiled machine, checked as a whole, with its goals' rubrics and oracle paths.

Loading compiles every expression (unknown variables, parameters, pages, tables and views are
errors at their exact location) and checks the pages: every block's actions exist and are
offered on that page, and every action is triggered by some element on every page that offers
it. `Site.validate` then runs the oracle for every goal: a goal with no path within its
difficulty band's step limit (10/20/30 for easy/medium/hard) is rejected. Paths found are kept on
disk (pathcache.py); `search_paths` finds the missing ones in parallel processes first.
"""

from __future__ import annotations

import logging
import multiprocessing
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

from schemas.rubric import Rubric
from schemas.values import HORIZONS, difficulty_band
from webgym.progress import Ticker
from webgym.sites.expr import SpecError
from webgym.sites.machine import Machine
from webgym.sites.oracle import Plan, plan, rubric_checks
from webgym.sites.pathcache import CACHE_DIR, PathCache
from webgym.sites.search import SearchLimit
from webgym.sites.spec import SPECS_DIR, SiteSpec
from webgym.sites.specfiles import load_site, spec_files
from webgym.sites.tasks import goal_rubric

log = logging.getLogger(__name__)

ROW_BLOCKS = ("list", "items")


@dataclass
class Problems:
    """Collects spec problems so one error lists them all."""

    where: str
    items: list[str] = field(default_factory=list)

    def add(self, loc: str, message: str) -> None:
        self.items.append(f"{self.where}: {loc}: {message}")

    def raise_if_any(self) -> None:
        if self.items:
            raise SpecError("\n".join(self.items))


class Site:
    """One site, ready to serve, search and verify."""

    def __init__(self, spec: SiteSpec, max_states: int = 200_000, cache_dir: str | Path | None = None) -> None:
        self.spec = spec
        self.machine = Machine(spec)
        self.max_states = max_states
        if cache_dir is not None:
            self.machine.paths = PathCache(cache_dir, self.machine)
        self._check_pages()
        self._rubrics = {goal.id: self._rubric(i) for i, goal in enumerate(spec.goals)}
        self._paths: dict[tuple[str, tuple[int, ...] | None], Plan | None] = {}

    @property
    def name(self) -> str:
        return self.spec.name

    def _rubric(self, index: int) -> Rubric:
        goal = self.spec.goals[index]
        if [g.id for g in self.spec.goals].count(goal.id) > 1:
            raise SpecError(f"{self.spec.where()}: goals[{index}].id: duplicate goal id {goal.id!r}")
        return goal_rubric(self.machine, goal, f"{self.spec.where()}: " + (f"{goal.origin}: " if goal.origin else ""))

    def _check_pages(self) -> None:
        spec, machine = self.spec, self.machine
        problems = Problems(spec.where())
        rendered: dict[str, set[str]] = {page: set() for page in spec.pages}
        for i, action in enumerate(spec.nav):
            if action not in spec.actions:
                problems.add(f"nav[{i}]", f"unknown action {action!r}")
                continue
            for page in machine.actions[action].pages:
                rendered[page].add(action)
        for page_id, page in spec.pages.items():
            for column in ("main", "side"):
                for b, block in enumerate(getattr(page, column)):
                    loc = f"pages.{page_id}.{column}[{b}]"
                    self._check_block(page_id, block, loc, problems, rendered[page_id])
        for action_id, action in machine.actions.items():
            for page in sorted(action.pages):
                if action_id not in rendered[page]:
                    problems.add(f"actions.{action_id}",
                                 f"no element triggers it on page {page!r} (list it in a block of that page "
                                 f"or in nav, or remove the page from its pages)")
        problems.raise_if_any()

    def _check_block(self, page_id: str, block, loc: str, problems: Problems, rendered: set[str]) -> None:
        spec, machine = self.spec, self.machine
        needs = {"list": "view", "record": "table", "items": "var"}
        if block.type in needs and getattr(block, needs[block.type]) is None:
            problems.add(loc, f"a {block.type} block needs {needs[block.type]}")
            return
        if block.type in ("heading", "text", "notice") and not block.text:
            problems.add(loc, f"a {block.type} block needs text")
        if block.view is not None and block.view not in spec.views:
            problems.add(f"{loc}.view", f"unknown view {block.view!r} (views: {', '.join(spec.views) or 'none'})")
        if block.table is not None and block.table not in machine.tables:
            problems.add(f"{loc}.table", f"unknown data table {block.table!r}")
        if block.var is not None and (block.var not in machine.vars
                                      or machine.vars[block.var].spec.type not in ("list", "set")):
            problems.add(f"{loc}.var", f"{block.var!r} is not a list or set variable")
        try:
            machine.compiler.conditions(block.when, f"{spec.where()}: {loc}.when")
            if block.id is not None:
                machine.compiler.expr(block.id, f"{spec.where()}: {loc}.id")
            for s, stat in enumerate(block.stats):
                machine.compiler.expr(stat.get("value"), f"{spec.where()}: {loc}.stats[{s}].value")
        except SpecError as error:
            problems.items.append(str(error))
        for a, action_id in enumerate(block.actions):
            if action_id not in spec.actions:
                problems.add(f"{loc}.actions[{a}]", f"unknown action {action_id!r}")
                continue
            action = machine.actions[action_id]
            if page_id not in action.pages:
                problems.add(f"{loc}.actions[{a}]", f"action {action_id!r} is not offered on page {page_id!r} "
                                                    f"(its pages: {', '.join(sorted(action.pages))})")
                continue
            kind = spec.actions[action_id].element.kind
            free = len(action.params) - (1 if block.type in ROW_BLOCKS else 0)
            if block.type in ROW_BLOCKS and not action.params:
                problems.add(f"{loc}.actions[{a}]", f"row action {action_id!r} needs a parameter for the row's id")
            elif kind in ("link", "button", "select", "pagination", "checkbox", "text_input") and free > 1:
                problems.add(f"{loc}.actions[{a}]", f"a {kind} can set one parameter, {action_id!r} has {free} "
                                                    f"(use a form)")
            elif kind == "text_input" and free != 1:
                problems.add(f"{loc}.actions[{a}]", "a text_input needs exactly one parameter to type into")
            rendered.add(action_id)

    # ---- goals -----------------------------------------------------------------------------

    def rubric(self, goal_id: str) -> Rubric:
        return self._rubrics[goal_id]

    def band(self, goal_id: str) -> str:
        return difficulty_band(self.rubric(goal_id).n_facts)

    def oracle_path(self, goal_id: str, groups: tuple[int, ...] | None = None) -> Plan:
        """Shortest path of a goal (or of a subset of its fact groups) from the start state, within
        the step limit of its difficulty band. Raises SpecError when there is none, SearchLimit when
        the search gives up."""
        rubric = self.rubric(goal_id)
        facts = sum(len(g.facts) for i, g in enumerate(rubric.groups) if groups is None or i in groups)
        band = difficulty_band(facts)
        key = (goal_id, groups)
        if key not in self._paths:
            self._paths[key] = plan(self.machine, self.machine.initial(), rubric_checks(rubric, groups),
                                    max_depth=HORIZONS[band], max_states=self.max_states)
        found = self._paths[key]
        if found is None:
            part = "" if groups is None else f" groups {list(groups)}"
            raise SpecError(f"{self.spec.where()}: goal {goal_id!r}{part}: unreachable: no path within the {band} "
                            f"band's {HORIZONS[band]} steps ({facts} facts)")
        return found

    def oracle_paths(self) -> tuple[dict[str, Plan], dict[str, str]]:
        """Oracle paths of all goals, and why each goal without one has none."""
        paths: dict[str, Plan] = {}
        failures: dict[str, str] = {}
        for goal in self.spec.goals:
            try:
                paths[goal.id] = self.oracle_path(goal.id)
            except (SpecError, SearchLimit) as error:
                failures[goal.id] = str(error).split(": ", 2)[-1]
        return paths, failures

    def validate(self) -> dict[str, Plan]:
        """Oracle paths of all goals; a goal that does not fit its band's step limit is an error."""
        problems = Problems(self.spec.where())
        paths, failures = self.oracle_paths()
        for i, goal in enumerate(self.spec.goals):
            if goal.id in failures:
                problems.add(f"{goal.id} from {goal.origin}" if goal.origin else f"goals[{i}] ({goal.id})",
                             failures[goal.id])
        problems.raise_if_any()
        return paths


def load_sites(directory: str | Path = SPECS_DIR, names: list[str] | None = None,
               max_states: int = 200_000, cache_dir: str | Path | None = CACHE_DIR) -> dict[str, Site]:
    """Every site in a directory of specs (or the named ones), by name; their oracle paths are kept
    in `cache_dir` (None: in memory only)."""
    sites: dict[str, Site] = {}
    for path in spec_files(directory):
        spec = load_site(path)
        if spec.name in sites:
            raise SpecError(f"{path}: name: site {spec.name!r} is already defined by {sites[spec.name].spec.source}")
        sites[spec.name] = Site(spec, max_states, cache_dir)
    if names:
        unknown = sorted(set(names) - set(sites))
        if unknown:
            raise SpecError(f"unknown site(s) {', '.join(unknown)}; sites are {', '.join(sorted(sites))}")
        return {name: sites[name] for name in names}
    return sites


_WORKER_SITES: dict[str, Site] = {}
"""The sites of a search worker process, built once when it starts."""


def _start_worker(specs: list[tuple[SiteSpec, int, Path]]) -> None:
    for spec, max_states, cache_dir in specs:
        _WORKER_SITES[spec.name] = Site(spec, max_states, cache_dir)


def _search(job: tuple[str, str]) -> None:
    try:
        _WORKER_SITES[job[0]].oracle_path(job[1])
    except (SpecError, SearchLimit):
        pass  # validate() searches it again in the parent and reports why


def search_paths(sites: list[Site], workers: int) -> int:
    """Search, in `workers` processes, the oracle path of every goal whose path is not on disk yet, so
    that validate(), export and replay then read it from the cache; returns how many were missing.
    With one worker, or sites without a cache directory, validate() searches them in this process."""
    missing = [(site, goal.id) for site in sites for goal in site.spec.goals
               if site.machine.paths is None or not site.machine.paths.has(rubric_checks(site.rubric(goal.id)))]
    jobs = [(site, goal_id) for site, goal_id in missing if site.machine.paths is not None]
    if workers < 2 or len(jobs) < 2:
        return len(missing)
    jobs.sort(key=lambda job: -job[0].rubric(job[1]).n_facts)  # the longest searches first: a shorter tail
    specs = [(site.spec, site.max_states, site.machine.paths.directory) for site in {s.name: s for s, _ in jobs}.values()]
    ticker = Ticker(log, "oracle paths", len(jobs), "goals searched")
    with ProcessPoolExecutor(min(workers, len(jobs)), mp_context=multiprocessing.get_context("spawn"),
                             initializer=_start_worker, initargs=(specs,)) as pool:
        for found in as_completed([pool.submit(_search, (site.name, goal_id)) for site, goal_id in jobs]):
            found.result()
            ticker.tick()
    return len(missing)
