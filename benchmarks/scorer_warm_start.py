"""A scorer warm start of a chosen architecture, trained on a lake's warm-start demonstrations, as the nightly
trains its own (the steps accepted at iteration 0 under sft, the profile's warm-start epochs and rate).

    .venv/bin/python benchmarks/scorer_warm_start.py --lake DIR --architecture relational --out DIR
        [--profile configs/local.yaml] [--seed 0]

What `benchmarks/decisions.py` compares with the lake's own warm start: the same demonstrations, the same
recipe, another network. The lake is only read (no checkpoints row is written); the checkpoint goes to
--out/<checkpoint id> and its path is printed with the training's metrics as one JSON line.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from webgym.config import load_config  # noqa: E402
from webgym.config.profile import replaced  # noqa: E402
from webgym.lake import Lake  # noqa: E402
from webgym.lake.queries import accepted_rows  # noqa: E402
from webgym.policies.scorer.checkpoint import init_scorer, save_scorer  # noqa: E402
from webgym.policies.scorer.embeddings import scorer_embeddings  # noqa: E402
from webgym.policies.scorer.features import ARCHITECTURES  # noqa: E402
from webgym.train.fit import episode_rows  # noqa: E402
from webgym.train.scorer import scorer_samples, train_scorer  # noqa: E402

WARM_START = 0
"""The nightly's warm-start iteration."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lake", required=True, help="A main job's lake (its iteration 0 demonstrations; only read).")
    parser.add_argument("--architecture", choices=ARCHITECTURES, required=True)
    parser.add_argument("--out", required=True, help="Where the checkpoint directory goes.")
    parser.add_argument("--profile", default=str(ROOT / "configs" / "local.yaml"), help="The lake's profile.")
    parser.add_argument("--seed", type=int, default=0, help="Initial weights (policy.scorer.seed) and batch order.")
    args = parser.parse_args()
    config = load_config(args.profile)
    settings = replaced(config.policy.scorer, architecture=args.architecture, seed=args.seed)
    recipe = replaced(config.train, objective="sft", epochs=config.nightly.warm_start_epochs,
                      learning_rate=config.nightly.warm_start_learning_rate, seed=args.seed)
    lake = Lake(str(Path(args.lake).resolve()))
    accepted = accepted_rows(lake, WARM_START, "sft")
    if accepted.empty:
        parser.error(f"{args.lake}: no steps accepted at iteration {WARM_START} under sft (run a main job first)")
    embed = scorer_embeddings(settings)
    scorer = init_scorer(settings)
    samples, problems = scorer_samples(episode_rows(lake, accepted, "steps"),
                                       episode_rows(lake, accepted, "trajectories"),
                                       lake.read_table("tasks"), accepted, embed, scorer.history,
                                       architecture=scorer.architecture)
    embed.flush()
    result = train_scorer(scorer, samples, recipe)
    path = save_scorer(result.scorer, Path(args.out).resolve() / result.scorer.checkpoint_id)
    print(json.dumps({"checkpoint": result.scorer.checkpoint_id, "path": str(path), "architecture": args.architecture,
                      "skipped": len(problems), **result.metrics}))


if __name__ == "__main__":
    main()
