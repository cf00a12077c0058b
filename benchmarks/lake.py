"""The lake at a million steps: view build, statistics queries, `webgym sql` and compaction.

    .venv/bin/python benchmarks/lake.py [--steps 1000000] [--appends 205] [--repeats 3] [--keep DIR]

Builds a lake of `--steps` steps (10 per trajectory, one judgment per trajectory, 1,000 tasks) from
a base of 1,000 realistic steps copied with new ids, in parts of 62,500 steps. Then measures, as
the median of `--repeats` runs: building the DuckDB views in Python (`warehouse.connect`), each
statistics view's query, and a whole `webgym sql` call (a fresh process). Then it appends a
night's worth of small parts (`--appends` batches of 64 steps with their trajectories and
judgments, as a main-job night writes about 205 parts per table) through the lake's writer, whose
merge policy keeps the parts few, and measures again. Last, `webgym lake compact` of every table
in a fresh process, with its wall time and peak memory (max RSS). Prints one JSON line.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from schemas import schema_for
from webgym import warehouse
from webgym.lake import Lake

BASE_TRAJECTORIES = 100
STEPS_PER_TRAJECTORY = 10
TASKS = 1_000
PART_STEPS = 62_500
APPEND_STEPS = 64
NOW = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)


def base_tables() -> dict[str, pa.Table]:
    """1,000 steps of 100 trajectories with a judgment each, and 1,000 tasks, in the lake's schemas."""
    elements = [{"mark": m, "tag": "button", "role": "button", "text": f"Item {m} - add to basket",
                 "x": 10.0 * m, "y": 40.0, "width": 120.0, "height": 32.0} for m in range(12)]
    steps = [{"trajectory_id": f"r{i}", "t": t, "screenshot_sha256": f"{(i * 31 + t) % 997:064x}",
              "url": f"http://shop-{i % 20}.test/item/{t}", "title": "Shop", "tabs": [f"http://shop-{i % 20}.test/"],
              "active_tab": 0, "elements": elements, "page_text": "Home\nBasket\n" + "Item line\n" * 30,
              "response": "I will click the item to open it. " * 4,
              "actions": [{"name": "click", "mark": t % 12, "ok": True, "feedback": "clicked 'Item'"}]}
             for i in range(BASE_TRAJECTORIES) for t in range(STEPS_PER_TRAJECTORY)]
    trajectories = [{"trajectory_id": f"r{i}", "task_id": f"task{i % TASKS}", "iteration": i % 3, "policy": "chat",
                     "policy_version": "v0", "horizon": 15, "n_steps": STEPS_PER_TRAJECTORY,
                     "termination": "answered", "answer": "done", "started_at": NOW,
                     "ended_at": NOW + dt.timedelta(seconds=30)} for i in range(BASE_TRAJECTORIES)]
    judgments = [{"judgment_id": f"j{i}", "trajectory_id": f"r{i}", "judge": "rubric", "status": "judged",
                  "success": i % 3 == 0, "reward": float(i % 3 == 0), "judged_at": NOW}
                 for i in range(BASE_TRAJECTORIES)]
    tasks = [{"task_id": f"task{i}", "source": "synthetic", "source_id": f"g{i}", "text": "Buy the red mug",
              "website": f"shop-{i % 20}.test", "difficulty": 1 + i % 10, "split": "train", "created_at": NOW}
             for i in range(TASKS)]
    rows = {"steps": steps, "trajectories": trajectories, "judgments": judgments, "tasks": tasks}
    return {name: schema_for(name).to_arrow(pd.DataFrame([schema_for(name).row(**row).model_dump() for row in table]))
            for name, table in rows.items()}


def copies(base: dict[str, pa.Table], first: int, count: int) -> dict[str, pa.Table]:
    """`count` copies of the base episodes, each with new trajectory and judgment ids."""
    out = {}
    for name in ("steps", "trajectories", "judgments"):
        parts = []
        for k in range(first, first + count):
            table = base[name]
            for column in ("trajectory_id", "judgment_id"):
                if column in table.column_names:
                    renamed = pc.binary_join_element_wise(table[column], f"-c{k}", "")
                    table = table.set_column(table.schema.get_field_index(column), column, renamed)
            parts.append(table)
        out[name] = pa.concat_tables(parts)
    return out


def build(lake: Lake, steps: int) -> dict[str, pa.Table]:
    base = base_tables()
    lake.init()
    lake.write_arrow("tasks", base["tasks"], run_id="bench")
    per_copy = base["steps"].num_rows
    per_part = PART_STEPS // per_copy
    for first in range(0, steps // per_copy, per_part):
        for name, table in copies(base, first, min(per_part, steps // per_copy - first)).items():
            lake.write_arrow(name, table, run_id="bench")
    return base


def append_night(lake: Lake, base: dict[str, pa.Table], appends: int) -> None:
    """`appends` small parts per table, as a night of rollouts and judging writes them."""
    episodes = APPEND_STEPS // STEPS_PER_TRAJECTORY
    for a in range(appends):
        small = {name: table.slice(0, episodes * (STEPS_PER_TRAJECTORY if name == "steps" else 1))
                 for name, table in base.items() if name != "tasks"}
        for name, table in copies(small, 10_000_000 + a, 1).items():
            lake.write_arrow(name, table, run_id="night")


def parts(lake: Lake) -> dict[str, int]:
    return {name: len(lake.parts(name)) for name in ("steps", "trajectories", "judgments")}


def timed(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return round(statistics.median(times), 3)


def webgym(lake: Lake, *args: str) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds, peak RSS in MB) of one `webgym` command in a fresh process (CPU
    time moves less than wall time on a loaded machine)."""
    command = [sys.executable, "-m", "webgym.cli", "--data-dir", lake.root, *args]
    process = subprocess.run([sys.executable, "-c", MEASURE, *command], capture_output=True, text=True)
    if process.returncode:
        raise RuntimeError(f"webgym {' '.join(args)} failed: {process.stderr[-2000:]}")
    wall, cpu, peak_kb = json.loads(process.stdout.splitlines()[-1])
    return round(wall, 3), round(cpu, 3), round(peak_kb / 1024, 1)


MEASURE = """
import json, os, subprocess, sys, time
start = time.perf_counter()
child = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)
_, status, usage = os.wait4(child.pid, 0)
print(json.dumps([time.perf_counter() - start, usage.ru_utime + usage.ru_stime, usage.ru_maxrss]))
sys.exit(os.waitstatus_to_exitcode(status))
"""
"""Runs a command from a small process: a child forked from this benchmark, which holds the lake's
tables, would count their memory in its peak RSS."""


def measure(lake: Lake, repeats: int) -> dict:
    views: dict[str, float] = {}
    with warehouse.connect(lake) as con:
        for name in warehouse.STATS_VIEWS:
            views[name] = timed(lambda name=name: con.execute(f"SELECT * FROM {name}").fetchall(), repeats)
    sql = [webgym(lake, "sql", "SELECT * FROM rollout_throughput") for _ in range(repeats)]
    return {"parts": parts(lake),
            "view_build_s": timed(lambda: warehouse.connect(lake).close(), repeats),
            "query_s": views, "query_max_s": max(views.values()),
            "sql_call_s": statistics.median(wall for wall, _, _ in sql),
            "sql_call_cpu_s": statistics.median(cpu for _, cpu, _ in sql),
            "sql_call_peak_mb": max(peak for _, _, peak in sql)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=1_000_000)
    parser.add_argument("--appends", type=int, default=205)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--keep", type=Path, help="Build the lake here and keep it (default: a temporary folder).")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        lake = Lake(args.keep or Path(tmp) / "data")
        start = time.perf_counter()
        base = build(lake, args.steps)
        built_s = time.perf_counter() - start
        before = measure(lake, args.repeats)
        start = time.perf_counter()
        append_night(lake, base, args.appends)
        night_s = time.perf_counter() - start
        after = measure(lake, args.repeats)
        compact_s, compact_cpu_s, compact_peak = webgym(lake, "lake", "compact", "--min-files", "2")
        print(json.dumps({
            "steps": lake.count("steps"), "repeats": args.repeats, "load": os.getloadavg()[0],
            "build_s": round(built_s, 1), "appends": args.appends, "appends_s": round(night_s, 1),
            "before_night": before, "after_night": after,
            "compact_s": compact_s, "compact_cpu_s": compact_cpu_s, "compact_peak_mb": compact_peak, "parts_after_compact": parts(lake)}))


if __name__ == "__main__":
    main()
