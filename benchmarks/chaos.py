"""Fault injection: the nightly main job killed with SIGKILL at random moments, restarted each time.

    .venv/bin/python benchmarks/chaos.py --kills 20 [--seed 0] [--iterations 2] [--set nightly.eval_tasks=4]

The task set is built once (uninterrupted) in a temporary lake and copied twice: one copy runs the job
on the profile (configs/ci.yaml, with the `--set` changes) without interruption, the other runs it
killed (the whole process group, SIGKILL) at `--kills` moments drawn with `--seed` over the
uninterrupted run's duration and restarted after each kill, then to the end. Checks, on the killed
lake: rows whose table key (schemas/) repeats (`duplicated`), episodes once committed but missing at
the end (`lost`), tables whose quality suite fails (`suites_failed`), and whether the final evals
(iteration, held-out kind, task, success) equal the uninterrupted run's (`evals_equal`). Prints one
JSON line with those, `kills` delivered and the seconds of both runs.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from schemas import TABLES
from webgym import PROJECT_ROOT, quality
from webgym.lake import Lake

EVAL_KEY = ["iteration", "held_out", "task_id", "success"]


def _profile(folder: Path, base: Path, changes: dict[str, Any]) -> Path:
    """A profile extending `base` with its own lake and warehouse, the task set already built, and `changes`."""
    settings: dict[str, Any] = {"extends": str(base.resolve()), "lake": {"data_dir": str(folder / "data")},
                                "warehouse": {"path": str(folder / "warehouse.duckdb")}}
    for dotted, value in changes.items():
        *parents, leaf = dotted.split(".")
        node = settings
        for key in parents:
            node = node.setdefault(key, {})
        node[leaf] = value
    path = folder / "profile.yaml"
    path.write_text(yaml.safe_dump(settings))
    return path


def _job(profile: Path, *args: str) -> subprocess.Popen:
    env = {**os.environ, "WEBGYM_DATA": "", "PYTHONPATH": str(PROJECT_ROOT)}
    return subprocess.Popen([sys.executable, "-m", "webgym.cli", "--config", str(profile), *args], env=env,
                            cwd=PROJECT_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)


def _finish(process: subprocess.Popen, what: str) -> None:
    _, stderr = process.communicate()
    if process.returncode:
        raise SystemExit(f"{what} exited {process.returncode}:\n{stderr.decode(errors='replace')[-3000:]}")


def _committed_episodes(lake: Lake) -> set[str]:
    """Episodes in the lake after a kill, once the dead writer's journal is committed (as the next run does)."""
    lake.recover()
    return set(lake.read_table("trajectories", columns=["trajectory_id"])["trajectory_id"])


def _duplicated(lake: Lake) -> int:
    return sum(int(lake.read_table(name, columns=list(schema.keys)).duplicated().sum())
               for name, schema in TABLES.items())


def _evals(lake: Lake) -> list[tuple]:
    rows = lake.read_table("evals", columns=EVAL_KEY).sort_values(EVAL_KEY)
    return [tuple(r) for r in rows.itertuples(index=False)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=20, help="SIGKILLs to deliver.")
    parser.add_argument("--seed", type=int, default=0, help="Seed of the kill moments.")
    parser.add_argument("--iterations", type=int, default=None, help="Nightly iterations (default: the profile's).")
    parser.add_argument("--profile", type=Path, default=PROJECT_ROOT / "configs" / "ci.yaml")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="Profile change for both runs, e.g. nightly.eval_tasks=4 (repeatable).")
    args = parser.parse_args()
    changes = {k: yaml.safe_load(v) for k, v in (item.split("=", 1) for item in args.set)}
    iterations = [] if args.iterations is None else ["--iterations", str(args.iterations)]
    with tempfile.TemporaryDirectory(prefix="webgym-chaos-") as tmp:
        root = Path(tmp)
        for name in ("taskset", "straight", "killed"):
            (root / name).mkdir()
        _finish(_job(_profile(root / "taskset", args.profile, changes), "nightly", "--iterations", "0"), "task set")
        changes["nightly.build_taskset"] = False
        profiles = {}
        for name in ("straight", "killed"):
            shutil.copytree(root / "taskset" / "data", root / name / "data")
            profiles[name] = _profile(root / name, args.profile, changes)

        started = time.monotonic()
        _finish(_job(profiles["straight"], "nightly", *iterations), "uninterrupted run")
        straight_s = time.monotonic() - started

        rng = random.Random(args.seed)
        moments = sorted(rng.uniform(0, straight_s) for _ in range(args.kills))
        killed, seen, kills = Lake(root / "killed" / "data"), set(), 0
        started = time.monotonic()
        for moment in moments:
            process = _job(profiles["killed"], "nightly", *iterations)
            try:
                process.wait(timeout=max(0.0, moment - (time.monotonic() - started)))
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
                kills += 1
            seen |= _committed_episodes(killed)
        _finish(_job(profiles["killed"], "nightly", *iterations), "final run")
        killed_s = time.monotonic() - started

        final = set(killed.read_table("trajectories", columns=["trajectory_id"])["trajectory_id"])
        failing = {v.table for v in quality.validate(killed)}
        print(json.dumps({
            "kills": kills, "lost": len(seen - final), "duplicated": _duplicated(killed),
            "suites_failed": len(failing), "evals_equal": _evals(killed) == _evals(Lake(root / "straight" / "data")),
            "seconds": round(killed_s, 1), "uninterrupted_seconds": round(straight_s, 1), "seed": args.seed,
            "iterations": args.iterations, "set": args.set}))


if __name__ == "__main__":
    main()
