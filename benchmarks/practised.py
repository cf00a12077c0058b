"""Did the nights learn what they practised, and was it their own episodes that taught it: a lake's training tasks
rolled out again, greedily, by its warm start, by its last served checkpoint and by a control trained without the
nights' own episodes, paired task by task.

    .venv/bin/python benchmarks/practised.py --lake DIR [--profile configs/local.yaml] [--out reports/practised]

Held-out success asks whether what the nights learn carries over to sites and families they never saw; this asks
the steps before it: whether they learn the tasks they practised, and from what. Every night also trains more
epochs on the warm start's demonstrations (most of a night's accepted steps), so a rise could come from those
epochs alone. The control tells them apart: the served chain trained again from the warm start, each promoted
night on its accepted steps of demonstrations only, with the profile's `train` block (the nights' recipe).

It copies the lake to --out (the lake itself is not written; a rerun reuses the copy and the finished episodes, and
trains the control again: seeded, so to the same weights), takes every training task the nights rolled out
(trajectories of purpose train) and whether any of its rollouts succeeded, rolls each out once, greedily (the
profile's policy with `policy.scorer.greedy`, so with the margins evaluations decide with), with the warm start
(the first promoted checkpoint), the last promoted one and the control (`webgym rollout --split train --task ...`,
iterations 1100-1102), judges them (`webgym judge run`), and evaluates the control on the lake's held-out tasks
(`webgym evaluate --size N`, N the warm start's episodes per held-out kind, so the same tasks). Then it pairs, task
by task (tasks gained, tasks lost, exact McNemar p), the last served checkpoint and the control each with the warm
start, and the last served with the control: on the practised tasks per world (synthetic sites, MiniWoB++) and by
whether a night had solved the task, and on each held-out kind (the nights' own evaluations for the warm start and
the last served).

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
from benchmarks.learning_curve import headline_evals  # noqa: E402
from webgym.config import Config, JudgeConfig, load_config  # noqa: E402
from webgym.lake import Lake  # noqa: E402
from webgym.lake.queries import accepted_rows  # noqa: E402
from webgym.train.fit import fit_scorer  # noqa: E402
from webgym.stats import discordant, mcnemar_exact, rate_summary  # noqa: E402
from webgym.warehouse import query  # noqa: E402

WARM, LAST, CONTROL = "warm start", "last served", "demonstrations only"
ITERATIONS = {WARM: 1100, LAST: 1101, CONTROL: 1102}
"""Where each checkpoint's greedy episodes (and the control's held-out evaluation) go in the copied lake, apart
from any night's."""
COMPARISONS = [(LAST, WARM), (CONTROL, WARM), (LAST, CONTROL)]
"""(new, old) pairs reported: what the nights add, what their demonstration epochs alone add, and what the
nights' own episodes add over those."""
GROUPINGS = [["world"], ["world", "solved_by_nights"]]


def promoted_chain(lake: Lake) -> pd.DataFrame:
    """The promoted checkpoints in order (iteration, checkpoint_id): the warm start, then each night served."""
    promotions = lake.read_table("promotions")
    promoted = promotions[promotions["promoted"].astype(bool)].sort_values("iteration")
    if promoted.empty:
        raise ValueError(f"{lake.root}: no promoted checkpoint; has a warm start finished there?")
    return promoted[["iteration", "checkpoint_id"]].reset_index(drop=True)


def served(lake: Lake, models: Path) -> dict[str, dict[str, str]]:
    """The warm start (first promoted checkpoint) and the last promoted one: id and directory each (the
    checkpoints table's path, else `models`/<id>: a lake moved since)."""
    chain = promoted_chain(lake)
    paths = lake.read_table("checkpoints").set_index("checkpoint_id")["path"]
    out = {}
    for point, cid in ((WARM, chain["checkpoint_id"].iloc[0]), (LAST, chain["checkpoint_id"].iloc[-1])):
        path = Path(paths[cid])
        out[point] = {"checkpoint": cid, "path": str(path if path.is_dir() else models / cid)}
    return out


def night_demonstrations(lake: Lake, iteration: int, objective: str) -> pd.DataFrame:
    """The accepted steps a night trained on that belong to demonstrations (not to the nights' own episodes)."""
    accepted = accepted_rows(lake, iteration, objective)
    purposes = lake.read_table("trajectories", columns=["trajectory_id", "purpose"])
    demonstrations = set(purposes.loc[purposes["purpose"] == "demonstration", "trajectory_id"])
    return accepted[accepted["trajectory_id"].isin(demonstrations)]


def train_control(config: Config, lake: Lake, warm_start: str, out: Path) -> dict[str, str]:
    """The served chain trained again from the warm start without the nights' own episodes: each promoted night, in
    turn, on its demonstration steps, from the previous control checkpoint. Training's seed and recipe are the
    profile's, as the nights'. A rerun finds the checkpoints it trained (the same weights, the same ids)."""
    control = {"checkpoint": Path(warm_start).name, "path": warm_start}
    for iteration in promoted_chain(lake)["iteration"].iloc[1:]:
        rows = night_demonstrations(lake, int(iteration), config.accept.objective)
        if rows.empty:
            raise ValueError(f"{lake.root}: night {iteration} trained on no demonstration steps: no control to train")
        fitted = fit_scorer(config, lake, rows, control["path"], ITERATIONS[CONTROL], out / "control")
        control = {"checkpoint": fitted.checkpoint_id, "path": fitted.path}
    return control


def practised_tasks(lake: Lake, judge: JudgeConfig) -> pd.DataFrame:
    """One row per training task the nights rolled out: task_id, world (synthetic or miniwob) and
    solved_by_nights (any of its rollouts succeeded)."""
    frame = query(lake, f"""
        SELECT tr.task_id, any_value(CASE WHEN t.source LIKE 'miniwob%' THEN 'miniwob' ELSE 'synthetic' END) AS world,
               bool_or(coalesce(v.success, false)) AS solved_by_nights
        FROM trajectories tr JOIN tasks t USING (task_id) LEFT JOIN verdicts v USING (trajectory_id)
        WHERE tr.purpose = 'train' AND tr.iteration < {min(ITERATIONS.values())}
        GROUP BY tr.task_id ORDER BY tr.task_id""", judge)
    if frame.empty:
        raise ValueError(f"{lake.root}: no training rollouts; did a night run there?")
    return frame


def greedy_profile(profile: Path, out: Path) -> Path:
    """A profile that extends `profile` and decodes greedily."""
    path = out / "greedy.yaml"
    path.write_text(yaml.safe_dump({"extends": str(profile), "policy": {"scorer": {"greedy": True}}}))
    return path


def webgym(profile: Path, lake: Path, *args: str) -> None:
    """Run a webgym command on the copied lake."""
    subprocess.run([sys.executable, "-m", "webgym.cli", "--config", str(profile), "--data-dir", str(lake), *args],
                   check=True, cwd=ROOT)


def roll_out(profile: Path, lake: Path, iteration: int, checkpoint: str, task_ids: list[str]) -> None:
    """One greedy episode per task with `checkpoint`, judged (finished episodes are not redone)."""
    tasks = [arg for task in task_ids for arg in ("--task", task)]
    webgym(profile, lake, "rollout", "--iteration", str(iteration), "--split", "train", "--policy", "scorer",
           "--checkpoint", checkpoint, "--group-size", "1", *tasks)
    webgym(profile, lake, "judge", "run", "--iteration", str(iteration))


def outcomes(lake: Lake, judge: JudgeConfig, checkpoints: dict[str, dict[str, str]]) -> pd.DataFrame:
    """Success per task (rows) and point (columns) of each point's greedy episodes: those at its iteration rolled
    out by its checkpoint (an episode another checkpoint left there does not count)."""
    frame = query(lake, f"""
        SELECT tr.task_id, tr.iteration, tr.policy_version, coalesce(v.success, false) AS success
        FROM trajectories tr LEFT JOIN verdicts v USING (trajectory_id)
        WHERE tr.iteration IN ({", ".join(str(i) for i in ITERATIONS.values())})""", judge)
    points = {iteration: point for point, iteration in ITERATIONS.items()}
    frame = frame.assign(point=frame["iteration"].map(points))
    frame = frame[frame["policy_version"] == frame["point"].map(lambda p: checkpoints[p]["checkpoint"])]
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


def nights_held_out(lake: Lake) -> pd.DataFrame:
    """The evals rows of the nights' headline test evaluation (the learning curve's), without this benchmark's."""
    evals = headline_evals(lake)
    return evals[evals["iteration"] < min(ITERATIONS.values())]


def held_out_outcomes(lake: Lake, checkpoints: dict[str, dict[str, str]]) -> pd.DataFrame:
    """Success per held-out task (rows: kind, task) of the warm start's and the last iteration's episodes of the
    nights' headline test evaluation, and of the control's evaluation when there is one (columns)."""
    nights = nights_held_out(lake)
    chosen = {WARM: nights[(nights["iteration"] == 0) & (nights["checkpoint"] == checkpoints[WARM]["checkpoint"])],
              LAST: nights[nights["iteration"] == nights["iteration"].max()]}
    if CONTROL in checkpoints:
        evals = lake.read_table("evals")
        chosen[CONTROL] = evals[(evals["split"] == "test") & (evals["iteration"] == ITERATIONS[CONTROL])
                                & (evals["checkpoint"] == checkpoints[CONTROL]["checkpoint"])]
    table = pd.concat([frame.assign(point=point) for point, frame in chosen.items()])
    table = table.assign(held_out=table["held_out"].fillna("site"))
    return table.pivot_table(index=["held_out", "task_id"], columns="point", values="success", aggfunc="max")


def held_out_pairs(outcomes: pd.DataFrame, new: str, old: str) -> list[dict]:
    """`new` against `old` on the held-out tasks both have, per kind; "all" is the synthetic kinds together, as
    in the learning curve (the external MiniWoB++ kind is a row of its own)."""
    table = outcomes[[new, old]].dropna().astype(bool).reset_index()
    synthetic = table["held_out"] != "external"
    return [*pairs(table[synthetic], new, old, [["held_out"]]), *pairs(table[~synthetic], new, old, [["held_out"]])[1:]]


def held_out_size(lake: Lake, warm_start: str) -> int:
    """How many held-out tasks of each synthetic kind the nights evaluated the warm start on (evaluate's --size)."""
    nights = nights_held_out(lake)
    warm = nights[(nights["iteration"] == 0) & (nights["checkpoint"] == warm_start)
                  & (nights["held_out"] != "external")]
    return int(warm.groupby("held_out")["task_id"].nunique().max())


def study(profile: Path, lake_dir: Path, models: Path, out: Path) -> dict:
    """Train the control, roll the three checkpoints out on the practised tasks in the copy at `lake_dir` and
    evaluate the control on the held-out tasks; the figures."""
    lake = Lake(str(lake_dir))
    config = load_config(profile)
    checkpoints = served(lake, models)
    checkpoints[CONTROL] = train_control(config, lake, checkpoints[WARM]["path"], out)
    tasks = practised_tasks(lake, config.judge)
    greedy = greedy_profile(profile, out)
    for point, iteration in ITERATIONS.items():
        roll_out(greedy, lake_dir, iteration, checkpoints[point]["path"], tasks["task_id"].tolist())
    webgym(profile, lake_dir, "evaluate", "--checkpoint", checkpoints[CONTROL]["path"], "--iteration",
           str(ITERATIONS[CONTROL]), "--size", str(held_out_size(lake, checkpoints[WARM]["checkpoint"])))
    rows = tasks.merge(outcomes(lake, config.judge, checkpoints), left_on="task_id", right_index=True)
    held_out = held_out_outcomes(lake, checkpoints)
    return {"lake": str(lake_dir), "checkpoints": checkpoints,
            "practised": {f"{new} against {old}": pairs(rows, new, old, GROUPINGS) for new, old in COMPARISONS},
            "held_out": {f"{new} against {old}": held_out_pairs(held_out, new, old) for new, old in COMPARISONS}}


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
