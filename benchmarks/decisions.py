"""How often scorer checkpoints decide as the oracle does, step by step, on held-out tasks.

    .venv/bin/python benchmarks/decisions.py --lake DIR --checkpoint DIR [--checkpoint DIR ...]
        [--profile configs/local.yaml] [--size 120] [--out reports/decisions]

A proxy for a change to the scorer (its features, its recipe) that takes minutes, where a learning-curve
seed takes 20 or more. It copies the lake to --out (the lake itself is not written; checkpoints are not copied),
rolls the oracle out there on --size test-split tasks of each held-out kind (`webgym rollout --split test
--policy oracle`, iteration 1000; a rerun reuses the copy and its finished episodes), rebuilds every
decision of those demonstrations as training would (webgym.train.scorer.scorer_samples) and asks each
checkpoint for its greedy choice at each of them, on the same decisions, with the profile's "Done." margin
(policy.scorer.done_margin, as its evaluations decide). The order margin (policy.scorer.order_margin) is not
applied: it reads the decision's texts, which the rebuilt features no longer carry, so these are the network's
choices with the "Done." margin only.

Prints one JSON line per checkpoint and writes them all to --out/decisions.json: decisions, matched (the
best-scored candidate and every fill field's best option are the oracle's), per oracle candidate kind
the decisions and matched, early_done (decisions where the oracle goes on and the checkpoint would
answer "Done."), issue 48's targets with whether each is met, and for every checkpoint after the first,
paired with the first on the same decisions: those only it matches (gained) and only the first matches
(lost), with the exact McNemar p. The decisions of one episode are not independent, so no interval is given. A gain here
need not show in episodes, which need every decision right: in README's study two scalars raised the
matched share by 2-4 points on three seeds while held-out success did not rise.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from webgym.config import load_config  # noqa: E402
from webgym.lake import Lake  # noqa: E402
from webgym.policies.scorer.candidates import KINDS  # noqa: E402
from webgym.policies.scorer.checkpoint import load_scorer  # noqa: E402
from webgym.policies.scorer.embeddings import scorer_embeddings  # noqa: E402
from webgym.stats import discordant, mcnemar_exact  # noqa: E402
from webgym.train.scorer import ScorerSample, greedy_decisions, scorer_samples  # noqa: E402

ITERATION = 1000
"""The demonstrations' iteration in the copied lake, apart from any night's."""
TARGETS = {"all": 0.80, "toggle": 0.80, "done": 0.85, "answer": 0.60, "scroll_down": 0.50}
"""Issue 48's matched shares: overall and per oracle kind."""


def copy_lake(lake: Path, out: Path) -> Path:
    """The lake's tables copied to out/lake once (not its checkpoints); a rerun reuses the copy."""
    if not (lake / "trajectories").is_dir():
        raise ValueError(f"{lake} is not a lake with a trajectories table (pass the data_dir of a night's lake)")
    copy = out / "lake"
    if not copy.exists():
        shutil.copytree(lake, copy, ignore=shutil.ignore_patterns("models"))
    return copy


def demonstrate(profile: Path, lake: Path, size: int) -> None:
    """The oracle's episodes on `size` test tasks of each held-out kind, recorded in `lake`."""
    subprocess.run([sys.executable, "-m", "webgym.cli", "--config", str(profile), "--data-dir", str(lake),
                    "rollout", "--iteration", str(ITERATION), "--split", "test", "--size", str(size),
                    "--policy", "oracle"], check=True, cwd=ROOT)


def kind_of(sample: ScorerSample, candidate: int) -> str:
    """A candidate's kind, read from its one-hot scalars."""
    return KINDS[int(np.argmax(sample.flat.scalars[candidate, :len(KINDS)]))]


def matches(samples: list[ScorerSample], best: np.ndarray, fields_right: np.ndarray) -> np.ndarray:
    """Per decision, whether it matches the oracle: its best candidate is the oracle's and so is every fill
    field's best option."""
    return np.array([int(pick) == sample.chosen and bool(ok)
                     for sample, pick, ok in zip(samples, best, fields_right, strict=True)], dtype=bool)


def summarise(samples: list[ScorerSample], best: np.ndarray, fields_right: np.ndarray) -> dict:
    """Matched decisions overall and per oracle kind, the oracle's steps on which it would answer "Done.", and
    TARGETS with whether each is met."""
    by_kind: dict[str, dict[str, int]] = {}
    early_done = 0
    right = matches(samples, best, fields_right)
    for sample, pick, matched in zip(samples, best, right, strict=True):
        want, got = kind_of(sample, sample.chosen), kind_of(sample, int(pick))
        counts = by_kind.setdefault(want, {"decisions": 0, "matched": 0})
        counts["decisions"] += 1
        counts["matched"] += int(matched)
        early_done += int(want != "done" and got == "done")
    shares = {kind: c["matched"] / c["decisions"] for kind, c in by_kind.items()}
    shares["all"] = float(right.mean()) if len(right) else 0.0
    targets = {kind: {"share": round(shares[kind], 4), "target": target, "met": shares[kind] >= target}
               for kind, target in TARGETS.items() if kind in shares}
    return {"decisions": len(samples), "matched": int(right.sum()), "matched_share": shares["all"],
            "early_done": early_done, "by_oracle_kind": dict(sorted(by_kind.items())), "targets": targets}


def paired(right: np.ndarray, first: np.ndarray) -> dict:
    """A checkpoint's matches against the first checkpoint's on the same decisions."""
    gained, lost = discordant(right, first)
    return {"gained": gained, "lost": lost, "mcnemar_p": mcnemar_exact(gained, lost)}


def study(profile: Path, lake: Path, checkpoints: list[Path]) -> list[dict]:
    """Each checkpoint's summary on the oracle's decisions recorded at ITERATION in `lake`."""
    tables = Lake(str(lake))
    trajectories = tables.read_table("trajectories")
    trajectories = trajectories[(trajectories["iteration"] == ITERATION) & (trajectories["policy"] == "oracle")]
    if trajectories.empty:
        raise ValueError(f"{lake}: no oracle episodes at iteration {ITERATION}; does the task set have a test split?")
    steps = tables.read_table("steps")
    steps = steps[steps["trajectory_id"].isin(trajectories["trajectory_id"])]
    every_step = steps[["trajectory_id", "t"]].assign(weight=1.0, advantage=np.nan)
    tasks = tables.read_table("tasks")
    settings = load_config(profile).policy.scorer
    embed = scorer_embeddings(settings)
    samples_by_reading: dict[tuple[int, str], list[ScorerSample]] = {}
    out: list[dict] = []
    first: np.ndarray | None = None
    for path in checkpoints:
        scorer = load_scorer(path)
        reading = (scorer.history, scorer.architecture)
        if reading not in samples_by_reading:
            samples, problems = scorer_samples(steps, trajectories, tasks, every_step, embed, scorer.history,
                                               architecture=scorer.architecture)
            for problem in problems:
                print(f"decisions: skipped {problem}", file=sys.stderr)
            samples_by_reading[reading] = samples
        samples = samples_by_reading[reading]
        best, fields_right = greedy_decisions(scorer.net, samples, done_margin=settings.done_margin)
        right = matches(samples, best, fields_right)
        first = right if first is None else first
        against = paired(right, first) if len(right) == len(first) else None  # another reading skipped others
        out.append({"checkpoint": scorer.checkpoint_id, "architecture": scorer.architecture, "path": str(path),
                    "episodes": len(trajectories),
                    "done_margin": settings.done_margin,
                    **summarise(samples, best, fields_right),
                    **({"against_first": against} if out and against else {})})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lake", required=True, help="The lake whose held-out tasks are demonstrated (only read).")
    parser.add_argument("--checkpoint", action="append", required=True, help="A scorer checkpoint directory.")
    parser.add_argument("--profile", default=str(ROOT / "configs" / "local.yaml"), help="The lake's profile.")
    parser.add_argument("--size", type=int, default=120, help="Oracle episodes per held-out kind.")
    parser.add_argument("--out", default=str(ROOT / "reports" / "decisions"), help="Where the copy and JSON go.")
    args = parser.parse_args()
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    profile = Path(args.profile).resolve()
    try:
        lake = copy_lake(Path(args.lake).resolve(), out)
        demonstrate(profile, lake, args.size)
        results = study(profile, lake, [Path(c).resolve() for c in args.checkpoint])
    except ValueError as error:
        parser.error(str(error))
    for result in results:
        print(json.dumps(result))
    (out / "decisions.json").write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
