"""How a policy does on MiniWoB++ pages it never trained on: success per task, per task family and overall.

    .venv/bin/python benchmarks/external.py [--policy scorer|random] [--checkpoint DIR] [--tasks N | --task NAME ...]
        [--seeds 10] [--first-seed 100] [--profile configs/local.yaml] [--out reports/miniwob]

Runs the user's own path in a lake of its own (--out/lake): the MiniWoB++ tasks are added as the build adds
them (stages/external.py: each seeded utterance read in Chromium) and made test tasks held out as `external`,
then `webgym evaluate` with the policy: one greedy episode per task, with the profile's "Done." margin for the
scorer, judged by the exact judge on the page's own reward, as the nightly evaluates every checkpoint. A rerun
reuses the lake and its finished episodes; use one --out per task list (an evaluation takes every test task of
its lake).

Seeds start at --first-seed (default 100), apart from the seeds the main job evaluates (0 onwards), so this is an
independent sample of the same pages. --tasks N takes the first N of the task list in sorted order (default:
every task the agent can do, webgym.sites.miniwob.task_names()).

Prints one JSON line (overall, by family, by task, each with its 95% Wilson interval) and writes it to
--out/miniwob.json, with a Markdown table per task and per family beside it (--out/miniwob.md) for the results
book. A task's family is `webgym.sites.miniwob.family_of`'s (click-tab-2-hard is of click-tab). It refuses a task of
a family the profile trains on (taskset.miniwob.train_tasks).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import pandas as pd  # noqa: E402

from stages.external import miniwob_tasks  # noqa: E402
from stages.split import assigned_splits  # noqa: E402
from webgym.config import MiniwobConfig, load_config  # noqa: E402
from webgym.lake import Lake  # noqa: E402
from webgym.sites import miniwob  # noqa: E402
from webgym.stats import rate_summary  # noqa: E402

def _webgym(profile: Path, lake: Path, *args: str) -> None:
    command = [sys.executable, "-m", "webgym.cli", "--config", str(profile), "--data-dir", str(lake), *args]
    print("$", " ".join(command[2:]), file=sys.stderr, flush=True)
    subprocess.run(command, check=True, cwd=ROOT)


def _add_tasks(lake: Lake, config: MiniwobConfig) -> None:
    """The tasks `config` lists that the lake lacks, added as the build adds them and split as it splits them."""
    have = lake.read_table("tasks", columns=["task_id"])
    rows = miniwob_tasks(config, have, lambda pairs: asyncio.run(miniwob.seeded_utterances(pairs)))
    if len(rows):
        lake.write_table("tasks", assigned_splits(rows, load_config(None).taskset.split), run_id="miniwob-benchmark")


def _rates(frame: pd.DataFrame, by: str) -> list[dict]:
    return [{by: key, **rate_summary(int(group["success"].sum()), len(group))}
            for key, group in frame.groupby(by, sort=True)]


def _markdown(result: dict) -> str:
    def row(name: str, r: dict) -> str:
        low, high = r["ci95"]
        return f"| {name} | {r['successes']}/{r['episodes']} | {r['success']:.0%} [{low:.0%}, {high:.0%}] |"
    lines = ["| family | successes | success [95% CI] |", "|---|---|---|"]
    lines += [row(r["family"], r) for r in result["by_family"]]
    lines += ["", "| task | successes | success [95% CI] |", "|---|---|---|"]
    lines += [row(r["task"], r) for r in result["by_task"]]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--policy", default="scorer", help="scorer (with --checkpoint, or untrained) or random.")
    parser.add_argument("--checkpoint", default=None, help="A scorer checkpoint directory (default: untrained).")
    parser.add_argument("--tasks", type=int, default=None, help="The first N tasks of the sorted list.")
    parser.add_argument("--task", action="append", default=None, help="A task by name (repeat; overrides --tasks).")
    parser.add_argument("--seeds", type=int, default=10, help="Seeded episodes per task.")
    parser.add_argument("--first-seed", type=int, default=100, help="The first seed.")
    parser.add_argument("--profile", default=str(ROOT / "configs" / "local.yaml"), help="Profile to run with.")
    parser.add_argument("--out", default=str(ROOT / "reports" / "miniwob"), help="Where the lake and results go.")
    args = parser.parse_args()

    names = args.task or miniwob.task_names()[:args.tasks]
    trained = {miniwob.family_of(task) for task in load_config(args.profile).taskset.miniwob.train_tasks}
    seen = [task for task in names if miniwob.family_of(task) in trained]
    if seen:
        parser.error(f"{seen} are of families {args.profile} trains on (taskset.miniwob.train_tasks)")
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    lake_dir = out / "lake"
    profile = out / "profile.yaml"
    profile.write_text(f"extends: {Path(args.profile).resolve()}\nprofile: miniwob-benchmark\n"
                       f"policy:\n  kind: {args.policy}\ntaskset:\n  miniwob:\n    tasks: []\n", encoding="utf-8")
    _webgym(profile, lake_dir, "init")
    lake = Lake(str(lake_dir))
    _add_tasks(lake, MiniwobConfig(tasks=names, seeds=args.seeds, first_seed=args.first_seed))
    ids = [miniwob.task_id(t, s) for t in names for s in seeds]
    evaluate = ["evaluate", "--iteration", "0"]
    if args.checkpoint:
        evaluate += ["--checkpoint", str(Path(args.checkpoint).resolve())]
    _webgym(profile, lake_dir, *evaluate)

    evals = lake.read_table("evals")
    evals = evals[evals["task_id"].isin(ids)]
    latest = evals.groupby("evaluation")["evaluated_at"].max().idxmax()  # this run's evaluation
    verdicts = evals[evals["evaluation"] == latest].drop_duplicates("task_id")
    verdicts["task"] = verdicts["task_id"].str.split("/").str[1]
    verdicts["family"] = verdicts["task"].map(miniwob.family_of)
    result = {"policy": args.policy, "checkpoint": args.checkpoint, "tasks": len(names), "seeds": seeds,
              **rate_summary(int(verdicts["success"].sum()), len(verdicts)),
              "by_family": _rates(verdicts, "family"), "by_task": _rates(verdicts, "task")}
    (out / "miniwob.json").write_text(json.dumps(result) + "\n", encoding="utf-8")
    (out / "miniwob.md").write_text(_markdown(result), encoding="utf-8")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
