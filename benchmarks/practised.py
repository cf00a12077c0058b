"""Did the nights learn what they practised: a lake's training tasks rolled out again, greedily, by its warm start
and by its last served checkpoint, paired task by task.

    .venv/bin/python benchmarks/practised.py --lake DIR [--profile configs/local.yaml] [--out reports/practised]

Held-out success asks whether what the nights learn carries over to sites and families they never saw; this asks
the step before it: whether they learn the tasks they practised. It copies the lake to --out (the lake itself is
not written; a rerun reuses the copy and its finished episodes), takes every training task the nights rolled out
(trajectories of purpose train) and whether any of its rollouts succeeded, rolls each out once, greedily (the
profile's policy with `policy.scorer.greedy`, so with the margins evaluations decide with), with the warm start
(the first promoted checkpoint) and with the last promoted one (`webgym rollout --split train --task ...`,
iterations 1100 and 1101), judges them (`webgym judge run`), and pairs the two task by task: tasks gained, tasks
lost and the exact McNemar p, per world (synthetic sites, MiniWoB++) and by whether a night had solved the task.
Beside it, from the lake's own headline evaluation, the same pairing on each held-out kind between the warm
start's episodes and the last iteration's.

Prints one JSON line and writes it to --out/practised.json.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import pandas as pd  # noqa: E402
import yaml  # noqa: E402

from benchmarks.decisions import copy_lake  # noqa: E402
from webgym.config import JudgeConfig, load_config  # noqa: E402
from webgym.lake import Lake  # noqa: E402
from webgym.stats import discordant, mcnemar_exact, rate_summary  # noqa: E402
from webgym.warehouse import query  # noqa: E402

ITERATIONS = {"warm start": 1100, "last served": 1101}
"""Where each checkpoint's greedy episodes go in the copied lake, apart from any night's."""
GROUPINGS = [["world"], ["world", "solved_by_nights"]]


def served(lake: Lake, models: Path) -> dict[str, dict[str, str]]:
    """The warm start (first promoted checkpoint) and the last promoted one: id and directory each (the
    checkpoints table's path, else `models`/<id>: a lake moved since)."""
    promotions = lake.read_table("promotions")
    promoted = promotions[promotions["promoted"].astype(bool)].sort_values("iteration")
    if promoted.empty:
        raise ValueError(f"{lake.root}: no promoted checkpoint; has a warm start finished there?")
    paths = lake.read_table("checkpoints").set_index("checkpoint_id")["path"]
    out = {}
    for point, cid in (("warm start", promoted["checkpoint_id"].iloc[0]),
                       ("last served", promoted["checkpoint_id"].iloc[-1])):
        path = Path(paths[cid])
        out[point] = {"checkpoint": cid, "path": str(path if path.is_dir() else models / cid)}
    return out


def practised_tasks(lake: Lake, judge: JudgeConfig) -> pd.DataFrame:
    """One row per training task the nights rolled out: task_id, world (synthetic or miniwob) and
    solved_by_nights (any of its rollouts succeeded)."""
    frame = query(lake, """
        SELECT tr.task_id, any_value(CASE WHEN t.source LIKE 'miniwob%' THEN 'miniwob' ELSE 'synthetic' END) AS world,
               bool_or(coalesce(v.success, false)) AS solved_by_nights
        FROM trajectories tr JOIN tasks t USING (task_id) LEFT JOIN verdicts v USING (trajectory_id)
        WHERE tr.purpose = 'train' AND tr.iteration < 1000 GROUP BY tr.task_id ORDER BY tr.task_id""", judge)
    if frame.empty:
        raise ValueError(f"{lake.root}: no training rollouts; did a night run there?")
    return frame


def greedy_profile(profile: Path, out: Path) -> Path:
    """A profile that extends `profile` and decodes greedily."""
    path = out / "greedy.yaml"
    path.write_text(yaml.safe_dump({"extends": str(profile), "policy": {"scorer": {"greedy": True}}}))
    return path


def roll_out(profile: Path, lake: Path, iteration: int, checkpoint: str, task_ids: list[str]) -> None:
    """One greedy episode per task with `checkpoint`, judged (finished episodes are not redone)."""
    webgym = [sys.executable, "-m", "webgym.cli", "--config", str(profile), "--data-dir", str(lake)]
    tasks = [arg for task in task_ids for arg in ("--task", task)]
    subprocess.run([*webgym, "rollout", "--iteration", str(iteration), "--split", "train", "--policy", "scorer",
                    "--checkpoint", checkpoint, "--group-size", "1", *tasks], check=True, cwd=ROOT)
    subprocess.run([*webgym, "judge", "run", "--iteration", str(iteration)], check=True, cwd=ROOT)


def outcomes(lake: Lake, judge: JudgeConfig) -> pd.DataFrame:
    """Success per task (rows) and checkpoint point (columns) of the greedy episodes."""
    frame = query(lake, f"""
        SELECT tr.task_id, tr.iteration, coalesce(v.success, false) AS success
        FROM trajectories tr LEFT JOIN verdicts v USING (trajectory_id)
        WHERE tr.iteration IN ({", ".join(str(i) for i in ITERATIONS.values())})""", judge)
    points = {iteration: point for point, iteration in ITERATIONS.items()}
    frame = frame.assign(point=frame["iteration"].map(points))
    return frame.pivot_table(index="task_id", columns="point", values="success", aggfunc="max").astype(bool)


def pairs(rows: pd.DataFrame, new: str, old: str, groupings: list[list[str]]) -> list[dict]:
    """All rows together, then per group of each grouping's keys: tasks, each column's successes with its interval,
    tasks only `new` solved (gained), only `old` solved (lost), and the exact McNemar p."""
    keys = list(dict.fromkeys(key for keys in groupings for key in keys))
    groups = [({key: "all" for key in keys}, rows)]
    for grouping in groupings:
        for values, group in rows.groupby(grouping, sort=True):
            named = dict(zip(grouping, values, strict=True))
            groups.append(({key: named.get(key, "all") for key in keys}, group))
    out = []
    for names, group in groups:
        gained, lost = discordant(group[new], group[old])
        out.append({**{k: (v if isinstance(v, str) else bool(v)) for k, v in names.items()}, "tasks": len(group),
                    old: rate_summary(int(group[old].sum()), len(group)),
                    new: rate_summary(int(group[new].sum()), len(group)),
                    "gained": gained, "lost": lost, "mcnemar_p": mcnemar_exact(gained, lost)})
    return out


def held_out_pairs(lake: Lake, warm_start: str) -> list[dict]:
    """The headline test evaluation's held-out kinds: the warm start's episodes against the last iteration's,
    task by task; "all" is the synthetic kinds together, as in the learning curve (the external MiniWoB++ kind is
    a row of its own)."""
    evals = lake.read_table("evals")
    evals = evals[evals["split"] == "test"]
    headline = evals.groupby("evaluation")["iteration"].nunique().idxmax()
    evals = evals[evals["evaluation"] == headline]
    warm = evals[(evals["iteration"] == 0) & (evals["checkpoint"] == warm_start)]
    last = evals[evals["iteration"] == evals["iteration"].max()]
    both = warm.merge(last, on=["held_out", "task_id"], suffixes=("_warm", "_last"))
    table = pd.DataFrame({"held_out": both["held_out"].fillna("site"), "warm start": both["success_warm"].astype(bool),
                          "last served": both["success_last"].astype(bool)})
    synthetic = table["held_out"] != "external"
    return [*pairs(table[synthetic], "last served", "warm start", [["held_out"]]),
            *pairs(table[~synthetic], "last served", "warm start", [["held_out"]])[1:]]


def study(profile: Path, lake_dir: Path, models: Path, out: Path) -> dict:
    """Roll the two checkpoints out on the practised tasks in the copy at `lake_dir`; the figures."""
    lake = Lake(str(lake_dir))
    judge = load_config(profile).judge
    checkpoints = served(lake, models)
    tasks = practised_tasks(lake, judge)
    greedy = greedy_profile(profile, out)
    for point, iteration in ITERATIONS.items():
        roll_out(greedy, lake_dir, iteration, checkpoints[point]["path"], tasks["task_id"].tolist())
    rows = tasks.merge(outcomes(lake, judge), left_on="task_id", right_index=True)
    return {"lake": str(lake_dir), "checkpoints": checkpoints,
            "practised": pairs(rows, "last served", "warm start", GROUPINGS),
            "held_out": held_out_pairs(lake, checkpoints["warm start"]["checkpoint"])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lake", required=True, help="A main job's lake (only read).")
    parser.add_argument("--profile", default=str(ROOT / "configs" / "local.yaml"), help="The lake's profile.")
    parser.add_argument("--out", default=str(ROOT / "reports" / "practised"), help="Where the copy and JSON go.")
    args = parser.parse_args()
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    try:
        lake = Path(args.lake).resolve()
        result = study(Path(args.profile).resolve(), copy_lake(lake, out), lake / "models", out)
    except ValueError as error:
        parser.error(str(error))
    print(json.dumps(result))
    (out / "practised.json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
