"""Start-up of the `webgym` command: `webgym --help` and `webgym sql "SELECT 1"` on an empty lake, and with
`--nightly` `webgym nightly --iterations 0` (checks, task set, warehouse, report) on a lake whose task set
is built (one untimed run per checkout builds it first).

    .venv/bin/python benchmarks/startup.py [--repeats 7] [--nightly] [--compare /path/to/other/checkout]

Each command runs `--repeats` times in a fresh process; prints the median wall and CPU (user +
system) seconds and the load average, as one JSON line. CPU time moves less than wall time on a
shared machine. `--compare` runs the same commands with another checkout first on PYTHONPATH,
interleaved with this one, so both see the same load.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = {"help": ["--help"], "sql": ["sql", "SELECT 1"]}
NIGHTLY = ["nightly", "--iterations", "0"]


def run_once(checkout: Path, data_dir: str, args: list[str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one `python -m webgym.cli` in a fresh process."""
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # measure what a user sees: compiled modules cached by the first run
    start = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-m", "webgym.cli", "--data-dir", data_dir, *args],
                               cwd=checkout, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    if status:
        raise RuntimeError(f"webgym {' '.join(args)} failed: {process.stderr.read().decode()[-2000:]}")
    return time.perf_counter() - start, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--compare", type=Path, help="Another checkout, measured alongside (e.g. the code before).")
    parser.add_argument("--nightly", action="store_true", help="Also time `webgym nightly --iterations 0`.")
    args = parser.parse_args()
    checkouts = {"this": ROOT, **({"compare": args.compare.resolve()} if args.compare else {})}
    commands = {**COMMANDS, **({"nightly0": NIGHTLY} if args.nightly else {})}
    samples: dict[str, dict[str, list[tuple[float, float]]]] = {k: {c: [] for c in commands} for k in checkouts}
    loads = []
    with tempfile.TemporaryDirectory() as data_dir:
        for checkout in checkouts.values():  # warm the bytecode caches (and build the task set)
            run_once(checkout, data_dir, NIGHTLY if args.nightly else COMMANDS["help"])
        for _ in range(args.repeats):
            loads.append(os.getloadavg()[0])
            for name, checkout in checkouts.items():
                for command, argv in commands.items():
                    samples[name][command].append(run_once(checkout, data_dir, argv))
    result: dict[str, object] = {"repeats": args.repeats, "load_median": statistics.median(loads),
                                 "cpus": os.cpu_count()}
    for name, by_command in samples.items():
        for command, values in by_command.items():
            result[f"{name}_{command}_wall_s"] = round(statistics.median(v[0] for v in values), 3)
            result[f"{name}_{command}_cpu_s"] = round(statistics.median(v[1] for v in values), 3)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
