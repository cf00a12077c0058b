"""Oracle paths on disk, so a second `webgym sites verify`, an export or a rollout does not search again.

A shortest path from a site's start state depends on the site's state machine (its whole spec but the
goals), on the checks the path must satisfy, and on the code that runs the machine and the search. The
key hashes all three, so editing a spec, a goal or that code makes new keys and old entries are simply
never read again (delete `.cache/sites` to reclaim the space). An entry holds the steps alone; reading
it takes those steps on the machine and checks that the goal holds at the end, so a damaged or stale
file is a miss, never a wrong path. BFS paths are shortest, so a cached path longer than a caller's step
limit means no path fits that limit. Writes go to a temporary file that is then renamed, so processes
searching in parallel can share the directory.

Only paths from the start state are kept (what verify, export and every episode's first step ask
for); the replans of a noisy oracle from states it wandered into stay in memory.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from webgym.config import SitesConfig
from webgym.sites.machine import Rejected, Step
from webgym.sites.search import Path as StatePath

if TYPE_CHECKING:
    from webgym.sites.expr import Compiled
    from webgym.sites.machine import Machine

CACHE_DIR = Path(SitesConfig().cache_dir)
"""Where the sites keep their oracle paths unless told otherwise: the profile's default (git-ignored)."""

ENGINE_FILES = ("expr.py", "machine.py", "search.py")
"""The code a path depends on: the expression language, the state machine and the search."""


def _engine_digest() -> str:
    digest = hashlib.sha256()
    for name in ENGINE_FILES:
        digest.update((Path(__file__).resolve().parent / name).read_bytes())
    return digest.hexdigest()


ENGINE = _engine_digest()


class PathCache:
    """Shortest FSM paths from one site's start state, one JSON file per (machine, checks)."""

    def __init__(self, directory: str | Path, machine: Machine) -> None:
        self.directory = Path(directory)
        self.machine = machine
        self.fsm = hashlib.sha256(machine.spec.model_dump_json(exclude={"goals"}).encode()).hexdigest()

    def file(self, checks: list[dict[str, Any]]) -> Path:
        body = json.dumps([ENGINE, self.fsm, checks], sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        key = hashlib.sha256(body.encode()).hexdigest()
        return self.directory / key[:2] / f"{key}.json"

    def has(self, checks: list[dict[str, Any]]) -> bool:
        return self.file(checks).is_file()

    def get(self, checks: list[dict[str, Any]], conditions: list[Compiled]) -> StatePath | None:
        """The cached path to `conditions`, taken again on the machine; None when missing or invalid."""
        try:
            entry = json.loads(self.file(checks).read_text(encoding="utf-8"))
            steps = [Step.of(action, args) for action, args in entry["steps"]]
            explored = int(entry["explored"])
        except (OSError, ValueError, KeyError, TypeError):
            return None
        states = [self.machine.initial()]
        try:
            for step in steps:
                states.append(self.machine.apply(states[-1], step))
        except Rejected:
            return None
        env = self.machine.env(states[-1])
        if not all(condition.fn(env) for condition in conditions):
            return None
        return StatePath(steps, states, explored)

    def put(self, checks: list[dict[str, Any]], path: StatePath) -> None:
        """Keep a path found from the start state."""
        target = self.file(checks)
        target.parent.mkdir(parents=True, exist_ok=True)
        entry = {"site": self.machine.spec.name, "explored": path.explored,
                 "steps": [[step.action, step.args] for step in path.steps]}
        tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(entry, ensure_ascii=False), encoding="utf-8")
        tmp.replace(target)
