"""Learning curve of the nightly loop over several seeds: does held-out success rise, and by how much.

    .venv/bin/python benchmarks/learning_curve.py --seeds 3 [--first-seed 0] [--profile configs/local.yaml]
        [--eval-tasks 90] [--iterations N] [--out reports/learning_curve] [--base OUT]

Each seed runs the main job itself (`webgym nightly` on the profile, in its own lake under --out), with
that seed for the scorer's initial weights and sampling, the training batches and the evaluation's task
sample, the replay draw and the sample order; the test split (which sites are held out) stays the same.
A seed that finished is not run again (its lake would gain iterations); an interrupted one resumes.
Every checkpoint is evaluated greedily on --eval-tasks tasks of each held-out kind (same family: unseen
sites of training families; unseen family: families never trained on), the same tasks at every
iteration of a seed, and on the profile's external MiniWoB++ tasks, which are reported as their own kind
and kept out of "all" (the synthetic kinds together) and of the targets.

It prints one JSON line: per seed and pooled over the seeds, success with its 95% Wilson interval per
point (untrained, warm start, iterations) and held-out kind, hard-band success, each point paired task for
task with the warm start (tasks gained, tasks lost, exact McNemar p), the training rollouts' success, the
promotion decisions and how many validation refused, the targets of issue 48 with whether each is met,
the policy's share of the oracle's decisions per point and kind when the evaluations are labelled
(rollout.label_evaluations), and the seconds each seed took; and it writes the figures to --out/learning_curve.json and the plot to
--out/learning_curve.png. With --base (another arm's --out, run with the same seeds: the default, for a
lever) each point is also paired task for task with the same point of the base arm.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import pandas as pd  # noqa: E402

from stages.iterations import TRAJECTORY_COLUMNS, next_iteration  # noqa: E402
from webgym.config import load_config  # noqa: E402
from webgym.lake import Lake  # noqa: E402
from webgym.lake.queries import steps_of  # noqa: E402
from webgym.policies.scorer.agreement import labelled_decisions, made_by_kind  # noqa: E402
from webgym.stats import discordant, mcnemar_exact, rate_summary, wilson_interval  # noqa: E402
from webgym.warehouse import query  # noqa: E402

KINDS = {"site": "same family", "family": "unseen family", "external": "external"}
"""evals.held_out -> how the curve names it."""
WARM_START = "warm start"
TARGETS = {"all_last": 0.45, "unseen_family_last": 0.30, "hard_band_last": 0.25, "hard_band_episodes": 40,
           "nights_add": 0.12, "nights_add_p": 0.01, "nights_add_every_seed": 0.06}
"""Issue 48's targets: success at the last night (all synthetic kinds, unseen family, hard band on enough
hard episodes) and what the nights add over the warm start (pooled, paired, and on every seed)."""


def seed_profile(base: Path, seed: int, out: Path, eval_tasks: int, iterations: int | None) -> Path:
    """A profile that extends `base` with this seed everywhere a draw is made, and the seed's own lake."""
    nightly = {"eval_tasks": eval_tasks, **({"iterations": iterations} if iterations is not None else {})}
    profile = {
        "extends": str(base.resolve()), "profile": f"learning-curve-seed{seed}",
        "lake": {"data_dir": str(out / "lake")}, "warehouse": {"path": str(out / "warehouse.duckdb")},
        "policy": {"seed": seed, "scorer": {"seed": seed}}, "taskset": {"sample": {"seed": seed}},
        "accept": {"seed": seed}, "train": {"seed": seed}, "nightly": nightly}
    path = out / "profile.yaml"
    path.write_text(json.dumps(profile, indent=2) + "\n")  # JSON is YAML
    return path


def run_seed(profile: Path, home: Path) -> float:
    """The main job on the seed's profile, its output in home/nightly.log; seconds it took. A seed that
    finished before (home/seconds.txt) is not run again: a second nightly run would add iterations."""
    finished = home / "seconds.txt"
    if finished.exists():
        return float(finished.read_text())
    lake = Lake(home / "lake")
    left = load_config(profile).nightly.iterations - next_iteration(
        lake.read_table("checkpoints"), lake.read_table("evals"),
        lake.read_table("trajectories", columns=TRAJECTORY_COLUMNS))
    started = time.monotonic()
    with (home / "nightly.log").open("a") as out:
        done = subprocess.run([sys.executable, "-m", "webgym.cli", "--config", str(profile), "nightly",
                               "--iterations", str(max(left, 0))], stdout=out, stderr=subprocess.STDOUT, cwd=ROOT)
    if done.returncode:
        raise SystemExit(f"learning_curve: the nightly run of {profile} failed (exit {done.returncode}); "
                         f"see {home / 'nightly.log'}; run the benchmark again to resume it")
    seconds = time.monotonic() - started
    finished.write_text(f"{seconds:.1f}\n")
    return seconds


def headline_evals(lake: Lake) -> pd.DataFrame:
    """The evals rows of the seed's headline test evaluation (the one that covers most iterations), each
    with its point: untrained, warm start or it<N>."""
    evals = lake.read_table("evals")
    evals = evals[evals["split"] == "test"]
    headline = evals.groupby("evaluation")["iteration"].nunique().idxmax()
    evals = evals[evals["evaluation"] == headline]
    trained = set(lake.read_table("checkpoints", columns=["checkpoint_id"])["checkpoint_id"])
    untrained = ~evals["checkpoint"].isin(trained)
    evals = evals.assign(point=evals["iteration"].map(lambda i: f"it{i}").where(~untrained, "untrained"))
    evals.loc[(evals["iteration"] == 0) & ~untrained, "point"] = WARM_START
    return evals


def synthetic(evals: pd.DataFrame) -> pd.DataFrame:
    """The rows of the synthetic sites' held-out kinds (the external MiniWoB++ tasks left out)."""
    return evals[evals["held_out"] != "external"]


def seed_points(evals: pd.DataFrame) -> pd.DataFrame:
    """One row per (point, kind) of the headline evaluation: episodes and successes, for each held-out
    kind, the synthetic kinds together ("all") and their hard band. Points in order: untrained, warm
    start, iterations."""
    order = evals.groupby("point")["evaluated_at"].min().sort_values().index.tolist()
    ours = synthetic(evals)
    groups = [evals.assign(kind=evals["held_out"].map(KINDS).fillna("same family")),
              ours.assign(kind="all"), ours[ours["difficulty_band"] == "hard"].assign(kind="hard band")]
    rows = pd.concat(groups).groupby(["point", "kind"])["success"].agg(episodes="count", successes="sum").reset_index()
    return rows.assign(order=rows["point"].map(order.index)).sort_values(["order", "kind"])


def outcomes(evals: pd.DataFrame) -> pd.DataFrame:
    """Success per synthetic held-out episode (rows: held-out kind, task, its occurrence at the point, so a
    task evaluated twice at a point is paired by its order of evaluation) and point (columns, in order)."""
    ours = synthetic(evals).sort_values("evaluated_at")
    ours = ours.assign(occurrence=ours.groupby(["point", "held_out", "task_id"]).cumcount())
    table = ours.pivot_table(index=["held_out", "task_id", "occurrence"], columns="point", values="success",
                             aggfunc="max")
    return table[ours.groupby("point")["evaluated_at"].min().sort_values().index.tolist()]


def _paired(point: str, new: pd.Series, old: pd.Series) -> dict:
    both = pd.concat([new.rename("new"), old.rename("old")], axis=1).dropna().astype(bool)
    gained, lost = discordant(both["new"], both["old"])
    return {"point": point, "paired": len(both), "gained": gained, "lost": lost}


PAIR_COLUMNS = ["point", "paired", "gained", "lost"]


def seed_pairs(evals: pd.DataFrame) -> pd.DataFrame:
    """Each trained point after the warm start against the warm start, task for task on the synthetic
    held-out kinds: paired episodes, tasks only the point solved (gained) and only the warm start solved
    (lost)."""
    table = outcomes(evals)
    points = table.columns.tolist()
    later = points[points.index(WARM_START) + 1:] if WARM_START in points else []
    return pd.DataFrame([_paired(point, table[point], table[WARM_START]) for point in later], columns=PAIR_COLUMNS)


def arm_pairs(evals: pd.DataFrame, base: pd.DataFrame) -> pd.DataFrame:
    """Each point against the same point of another arm run with the same seed (so on the same held-out
    tasks), task for task: gained are tasks only this arm solved, lost only the base arm."""
    mine, theirs = outcomes(evals), outcomes(base)
    return pd.DataFrame([_paired(point, mine[point], theirs[point]) for point in mine.columns if point in theirs],
                        columns=PAIR_COLUMNS)


def pool_pairs(frames: Iterable[pd.DataFrame]) -> pd.DataFrame:
    """Pairs of several seeds summed per point (points in the first seed's order)."""
    return pd.concat(frames).groupby("point", as_index=False, sort=False)[["paired", "gained", "lost"]].sum()


DECISION_COLUMNS = ["point", "kind", "decisions", "matched"]


def seed_decisions(lake: Lake, evals: pd.DataFrame) -> pd.DataFrame:
    """Per point and kind of the oracle's decision (and "all"): the decisions the oracle labelled in the
    headline evaluation's episodes (rollout.label_evaluations) and how many of them the policy made;
    no rows when none is labelled."""
    steps = steps_of(lake, evals["trajectory_id"], ["trajectory_id", "t", "elements", "page_text", "actions",
                                                    "expert_actions"])
    decided = labelled_decisions(steps).merge(evals[["trajectory_id", "point"]], on="trajectory_id")
    return made_by_kind(decided, "point")[DECISION_COLUMNS]


def seed_rollouts(lake: Lake, config_path: Path) -> list[dict]:
    """Success of the training rollouts per iteration (sampled, on training tasks)."""
    frame = query(lake, "SELECT iteration, trajectories AS n, successes AS k FROM rollout_success "
                        "WHERE purpose = 'train' ORDER BY iteration", load_config(config_path).judge)
    return [{"iteration": int(r.iteration), **rate_summary(int(r.k), int(r.n))} for r in frame.itertuples()]


def targets(pooled: pd.DataFrame, per_seed: dict[int, pd.DataFrame], pairs: pd.DataFrame) -> dict:
    """Issue 48's targets (TARGETS) on the curve pooled over the seeds, each seed's own curve and the
    pooled pairs of the last point with the warm start."""
    def success(frame: pd.DataFrame, point: str, kind: str) -> float:
        row = frame[(frame["point"] == point) & (frame["kind"] == kind)]
        return float(row["successes"].sum() / row["episodes"].sum()) if len(row) else float("nan")

    points = pooled.drop_duplicates("point").sort_values("order")["point"].tolist()
    last = points[-1]
    drops = []
    for before, after in zip(points[1:], points[2:], strict=False):
        row = pooled[(pooled["point"] == after) & (pooled["kind"] == "all")].iloc[0]
        low, high = wilson_interval(int(row["successes"]), int(row["episodes"]))
        drops.append({"point": after, "drop": success(pooled, before, "all") - success(pooled, after, "all"),
                      "interval_half_width": (high - low) / 2})
    hard = int(pooled[(pooled["point"] == last) & (pooled["kind"] == "hard band")]["episodes"].sum())
    last_all, unseen_last, hard_last = (success(pooled, last, kind) for kind in ("all", "unseen family", "hard band"))
    gain = last_all - success(pooled, WARM_START, "all")
    seed_gains = {seed: success(frame, last, "all") - success(frame, WARM_START, "all")
                  for seed, frame in per_seed.items()}
    paired = pairs[pairs["point"] == last]
    gained, lost = int(paired["gained"].sum()), int(paired["lost"].sum())
    p = mcnemar_exact(gained, lost)
    return {
        "last_point": last,
        "all_last": last_all, "all_last_met": last_all >= TARGETS["all_last"],
        "unseen_family_last": unseen_last, "unseen_family_last_met": unseen_last >= TARGETS["unseen_family_last"],
        "hard_band_last": hard_last, "hard_band_episodes": hard,
        "hard_band_last_met": hard >= TARGETS["hard_band_episodes"] and hard_last >= TARGETS["hard_band_last"],
        "nights_add_points": round(100 * gain, 1), "nights_add_met": gain >= TARGETS["nights_add"],
        "nights_add_gained": gained, "nights_add_lost": lost, "nights_add_p": p,
        "nights_add_significant": gained > lost and p < TARGETS["nights_add_p"],
        "nights_add_per_seed_points": {seed: round(100 * g, 1) for seed, g in seed_gains.items()},
        "nights_add_every_seed_met": all(g >= TARGETS["nights_add_every_seed"] for g in seed_gains.values()),
        "never_falls_by_more_than_its_interval": all(d["drop"] <= d["interval_half_width"] for d in drops),
        "falls": drops,
    }


def plot(per_seed: dict[int, pd.DataFrame], pooled: pd.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    points = pooled.drop_duplicates("point").sort_values("order")["point"].tolist()
    figure, axis = plt.subplots(figsize=(8, 4.5))
    kinds = [k for k in ("same family", "unseen family", "all", "external") if k in set(pooled["kind"])]
    for offset, kind in enumerate(kinds):
        rows = pooled[pooled["kind"] == kind].set_index("point").loc[points]
        bounds = [wilson_interval(int(k), int(n)) for k, n in zip(rows["successes"], rows["episodes"], strict=True)]
        success = rows["successes"] / rows["episodes"]
        xs = [i + (offset - 1) * 0.06 for i in range(len(points))]
        line = axis.errorbar(xs, 100 * success, yerr=[[100 * (s - lo) for s, (lo, _) in zip(success, bounds, strict=True)],
                                                      [100 * (hi - s) for s, (_, hi) in zip(success, bounds, strict=True)]],
                             marker="o", capsize=3, label=f"{kind} (all seeds)")
        for frame in per_seed.values():
            mine = frame[frame["kind"] == kind].set_index("point").reindex(points)
            axis.plot(xs, 100 * mine["successes"] / mine["episodes"], color=line[0].get_color(), alpha=0.25)
    axis.set_xticks(range(len(points)), points)
    axis.set_ylabel("held-out success (%)")
    axis.set_ylim(0, min(100, 100 * float(pooled["successes"].div(pooled["episodes"]).max()) * 1.3 + 5))
    axis.set_title(f"Nightly loop, {len(per_seed)} seeds: pooled success with 95% Wilson intervals; thin: each seed")
    axis.grid(alpha=0.3)
    axis.legend(fontsize="small")
    figure.tight_layout()
    figure.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=3, help="How many seeds, one main job each.")
    parser.add_argument("--first-seed", type=int, default=0,
                        help="Seeds run from this one up (to split the seeds over machines or sessions).")
    parser.add_argument("--profile", default=str(ROOT / "configs" / "local.yaml"), help="Profile the seeds extend.")
    parser.add_argument("--eval-tasks", type=int, default=90,
                        help="Held-out tasks per held-out kind every checkpoint is evaluated on (90: 180 episodes).")
    parser.add_argument("--iterations", type=int, default=None, help="Iterations per seed (default: the profile's).")
    parser.add_argument("--out", default=str(ROOT / "reports" / "learning_curve"), help="Where the seeds' lakes go.")
    parser.add_argument("--base", default=None,
                        help="Another arm's --out (the default's, for a lever): each point is paired task for task with "
                             "the same point of the same seed there (seeds it lacks are left out).")
    args = parser.parse_args()
    if args.base and not Path(args.base).is_dir():
        parser.error(f"--base {args.base}: no such folder (pass another arm's --out, e.g. the default's)")
    out = Path(args.out).resolve()
    per_seed, pairs, against_base, rollouts, promotions, decisions, seconds = {}, {}, {}, {}, {}, {}, {}
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    for seed in seeds:
        home = out / f"seed{seed}"
        home.mkdir(parents=True, exist_ok=True)
        profile = seed_profile(Path(args.profile), seed, home, args.eval_tasks, args.iterations)
        print(f"learning_curve: seed {seed}: main job in {home} (log: {home / 'nightly.log'})", file=sys.stderr, flush=True)
        seconds[seed] = round(run_seed(profile, home), 1)
        lake = Lake(home / "lake")
        evals = headline_evals(lake)
        per_seed[seed] = seed_points(evals)
        pairs[seed] = seed_pairs(evals)
        base_lake = Path(args.base).resolve() / f"seed{seed}" / "lake" if args.base else None
        if base_lake is not None and (base_lake / "evals").is_dir():
            against_base[seed] = arm_pairs(evals, headline_evals(Lake(base_lake)))
        rollouts[seed] = seed_rollouts(lake, profile)
        decisions[seed] = seed_decisions(lake, evals)
        promotions[seed] = lake.read_table("promotions")[["iteration", "checkpoint_id", "promoted", "reason"]] \
            .sort_values("iteration").to_dict("records")
        print(f"learning_curve: seed {seed} done in {seconds[seed]:.0f} s", file=sys.stderr, flush=True)
    pooled = pd.concat(per_seed.values()).groupby(["point", "kind"], as_index=False).agg(
        episodes=("episodes", "sum"), successes=("successes", "sum"), order=("order", "min")).sort_values(["order", "kind"])

    def curve(frame: pd.DataFrame) -> list[dict]:
        return [{"point": r.point, "kind": r.kind, **rate_summary(int(r.successes), int(r.episodes))}
                for r in frame.itertuples()]

    def paired(frame: pd.DataFrame) -> list[dict]:
        return [{"point": r.point, "paired": int(r.paired), "gained": int(r.gained), "lost": int(r.lost),
                 "mcnemar_p": mcnemar_exact(int(r.gained), int(r.lost))} for r in frame.itertuples()]

    pooled_pairs = pool_pairs(pairs.values())
    order = pooled.drop_duplicates("point").set_index("point")["order"]
    pooled_decisions = pd.concat(decisions.values()).groupby(["point", "kind"], as_index=False)[
        ["decisions", "matched"]].sum()
    pooled_decisions = pooled_decisions.assign(order=pooled_decisions["point"].map(order)).sort_values(["order", "kind"])
    base_summary = {"base": args.base, "against_base_seeds": sorted(against_base),
                    "pooled_against_base": paired(pool_pairs(against_base.values()))} if against_base else {}
    summary = {"seeds": seeds, "profile": args.profile, "eval_tasks_per_kind": args.eval_tasks, **base_summary,
               "pooled": curve(pooled), "pooled_against_warm_start": paired(pooled_pairs),
               "targets": targets(pooled, per_seed, pooled_pairs),
               "per_seed": {seed: {"curve": curve(frame), "against_warm_start": paired(pairs[seed]),
                                   **({"against_base": paired(against_base[seed])} if seed in against_base else {}),
                                   "rollouts": rollouts[seed], "promotions": promotions[seed],
                                   "seconds": seconds[seed]} for seed, frame in per_seed.items()},
               "decisions_by_kind": [{"point": r.point, "kind": r.kind, "decisions": int(r.decisions),
                                      "matched": int(r.matched), "share": round(r.matched / r.decisions, 4)}
                                     for r in pooled_decisions.itertuples()],
               "promotions_refused": sum(not d["promoted"] for made in promotions.values() for d in made),
               "promotions_decided": sum(len(made) for made in promotions.values()),
               "seconds": round(sum(seconds.values()), 1)}
    (out / "learning_curve.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
    plot(per_seed, pooled, out / "learning_curve.png")
    print(json.dumps(summary, default=str))
    print(f"learning_curve: figures in {out / 'learning_curve.json'}, plot {out / 'learning_curve.png'}", file=sys.stderr)


if __name__ == "__main__":
    main()
