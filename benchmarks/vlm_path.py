"""The production VLM path learns: overfit a small Qwen3-VL on oracle demonstrations, replay greedily.

    .venv/bin/python benchmarks/vlm_path.py [--quick] [--tasks 6] [--epochs 80] [--lr 3e-3] [--seed 0]
        [--micro-batch-size 4] [--out DIR]

Everything goes through the flows a `chat` policy profile runs (issue 16, items 2 and 3):
1. `webgym models small` writes a random ~2.4 M-parameter Qwen3-VL (webgym/models/tiny.py);
2. the rollout flow rolls out the oracle on a handful of easy train tasks of the CI world (one per
   site, two-step goals: open a page, then answer) in Chromium, and the judge flow judges them with
   the exact verifier;
3. the train flow accepts the demonstrations (sft) and the VLM trainer fits the model on the
   samples it rebuilds from the lake (webgym/train/samples.py);
4. the serve flow starts `webgym serve` on the new checkpoint (serve.command), the rollout flow rolls
   the `chat` policy out greedily on the same tasks over the OpenAI API, and the judge flow judges
   them: `replay_success` is the share of those episodes the exact verifier passes;
5. parity: a sampled rollout (temperature 1) of the served checkpoint on the same tasks, its steps
   rebuilt from the lake, and the trainer's recomputation of each response token's log-probability
   against what `webgym serve` returned (webgym/train/parity.py). The same is done for the random
   base model before training: the trained model is so sure of its tokens that their log-probabilities
   round to 0 on both sides, while the base model's are near -log(vocabulary), so a mismatch shows.

GRPO on held-out tasks (issue 16, item 5) is not run: `grpo_heldout_before` / `grpo_heldout_after`
print null. --quick demonstrates 4 tasks instead of 6; it still checks items 2 and 3. (30 epochs at
4e-3 left the loss at 0.19 and replayed 1 of 4 episodes, the tags garbled; 40 at 3e-3 replayed 3 of 4
with seed 1, an answer taken from another task.)

Prints one JSON line: replay_success (with episodes and its 95% Wilson interval),
logprob_max_abs_diff, logprob_mean_abs_diff (over the base and the trained model; each with its tokens
and their mean |log-probability| under logprob_parity), the model's parameters, the
tokens of a training step (prompt and response; response alone), seconds per training step, the
loss before and after, and the seconds each part took.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import pandas as pd  # noqa: E402
import pyarrow.dataset as ds  # noqa: E402

from webgym.cli.serve import free_port  # noqa: E402
from webgym.config import load_config  # noqa: E402
from webgym.lake import Lake  # noqa: E402
from webgym.stats import wilson_interval  # noqa: E402

WEBGYM_SERVE = "{python} -m webgym.cli serve --checkpoint {checkpoint} --port {port} --served-model-name {name}"


def write_profile(out: Path, base: Path, args: argparse.Namespace) -> Path:
    """The CI profile with the `chat` policy on `base`, served by `webgym serve`, and the trainer's recipe."""
    port = free_port()
    profile = {
        "extends": str(ROOT / "configs" / "ci.yaml"), "profile": "vlm-path",
        "lake": {"data_dir": str(out / "lake")},
        # The chat policy reads the screenshot and answers in pixels (no set-of-marks element list).
        "env": {"observation": "coordinates"},
        "policy": {"kind": "chat", "checkpoint": str(base), "seed": args.seed,
                   "sampling": {"max_tokens": 64}},
        "llm": {"endpoints": {"policy": [{"base_url": f"http://127.0.0.1:{port}/v1", "model": base.name,
                                          "timeout_s": 600}]},
                "cache_dir": str(out / "llm-cache")},
        "serve": {"command": WEBGYM_SERVE, "port": port, "state_dir": str(out / "serve"), "startup_timeout_s": 600},
        "rollout": {"concurrency": 2},
        "accept": {"objective": "sft"},
        "train": {"objective": "sft", "seed": args.seed, "epochs": args.epochs, "learning_rate": args.lr,
                  "micro_batch_size": args.micro_batch_size, "lr_schedule": "constant", "warmup_ratio": 0.0,
                  "weight_decay": 0.0, "device": "cpu", "checkpoints_dir": str(out / "models")},
    }
    path = out / "profile.yaml"
    path.write_text(json.dumps(profile, indent=2) + "\n")  # JSON is YAML
    return path


def write_tasks(profile: Path, count: int) -> list[str]:
    """`count` easy train tasks of the profile's world (one per site, in site order: a two-step goal of
    difficulty 1) as the lake's tasks table; their ids."""
    from webgym.sites.tasks import task_row, two_step_records
    from webgym.sites.world import world_of

    config = load_config(profile)
    sites = world_of(config.sites).sites
    chosen = two_step_records([sites[name] for name in sorted(sites)], count)
    rows = pd.DataFrame([task_row(r, "train", dt.datetime.now(dt.UTC)) for r in chosen])
    Lake(config.lake.data_dir).write_table("tasks", rows)
    return rows["task_id"].tolist()


def verdicts_of(profile: Path, trajectory_ids: list[str]) -> pd.Series:
    """The exact verifier's success per trajectory (the verdicts view)."""
    from webgym.warehouse import query

    config = load_config(profile)
    verdicts = query(Lake(config.lake.data_dir), "SELECT trajectory_id, success FROM verdicts", config.judge)
    return verdicts.set_index("trajectory_id")["success"].reindex(trajectory_ids).fillna(False).astype(bool)


def parity_of(profile: Path, checkpoint: str, trajectory_ids: list[str]) -> dict:
    """The trainer's recomputation against the served token log-probabilities, over every step of the episodes:
    max and mean absolute difference, tokens compared and their mean |log-probability| (how much the
    comparison can show: a token the model is sure of has log-probability 0 on both sides)."""
    from webgym.models.checkpoint import load_vlm
    from webgym.train.samples import samples_from_lake
    from webgym.train.trainer import logprob_parity

    config = load_config(profile)
    lake = Lake(config.lake.data_dir)
    steps = lake.read_table("steps", columns=["trajectory_id", "t"],
                            filter=ds.field("trajectory_id").isin(trajectory_ids))
    samples, problems = samples_from_lake(lake, steps.assign(weight=1.0, advantage=0.0), config.policy.context)
    if problems:
        raise RuntimeError(f"steps that could not be rebuilt: {problems[:3]}")
    parity = logprob_parity(load_vlm(checkpoint), samples)
    if parity is None:
        raise RuntimeError(f"the sampled steps of {checkpoint} recorded no token log-probabilities")
    served = [abs(lp) for sample in samples for lp in sample.old_token_logprobs or ()]
    return {"max_abs_diff": parity.max_abs_diff, "mean_abs_diff": parity.mean_abs_diff, "tokens": parity.tokens,
            "mean_abs_logprob": round(sum(served) / max(len(served), 1), 4), "mismatched": parity.mismatched}


def training_tokens(profile: Path, base: Path, iteration: int) -> float:
    """Mean tokens (prompt with image tokens, and response) of the samples the train flow learnt from."""
    from webgym.models.checkpoint import load_vlm
    from webgym.models.inputs import encode_sample
    from webgym.train.samples import samples_from_lake

    config = load_config(profile)
    lake = Lake(config.lake.data_dir)
    accepted = lake.read_table("accepted", filter=ds.field("iteration") == iteration)
    samples, _ = samples_from_lake(lake, accepted, config.policy.context)
    vlm = load_vlm(base)
    lengths = [encode_sample(vlm, s.messages, s.response).length for s in samples]
    return sum(lengths) / len(lengths)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="4 tasks instead of 6; items 2 and 3 still.")
    parser.add_argument("--tasks", type=int, help="Easy train tasks to demonstrate and replay (default 6; quick 4).")
    parser.add_argument("--epochs", type=int, default=80, help="SFT passes over the demonstrations.")
    parser.add_argument("--lr", type=float, default=3e-3, help="SFT learning rate (constant, AdamW).")
    parser.add_argument("--micro-batch-size", type=int, default=4, help="Samples per optimiser step.")
    parser.add_argument("--seed", type=int, default=0, help="Seed of the random weights, sample order and sampling.")
    parser.add_argument("--out", type=Path, help="Keep the lake, checkpoints and server log here (default: temporary).")
    args = parser.parse_args()
    if args.tasks is None:
        args.tasks = 4 if args.quick else 6

    from flows.judge import judge
    from flows.rollout import rollout
    from flows.serve import serve
    from flows.train import train
    from webgym.models.checkpoint import load_vlm
    from webgym.models.tiny import write_tiny_checkpoint
    from webgym.serve import supervisor

    seconds: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as scratch:
        out = (args.out or Path(scratch)).resolve()
        out.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        base = write_tiny_checkpoint(out / "small-base", seed=args.seed, size="small")
        parameters = sum(p.numel() for p in load_vlm(base).model.parameters())
        profile = write_profile(out, base, args)
        task_ids = write_tasks(profile, args.tasks)
        seconds["setup"] = time.perf_counter() - started
        config = str(profile)

        started = time.perf_counter()
        demos = rollout(iteration=0, split="train", size=None, policy="oracle", config_path=config)
        judge(iteration=0, config_path=config)
        oracle_success = float(verdicts_of(profile, demos.trajectory_ids).mean())
        seconds["demonstrations"] = time.perf_counter() - started

        served = None
        try:
            started = time.perf_counter()
            served = serve(checkpoint=str(base), config_path=config)
            sampled = rollout(iteration=2, split="train", size=None, policy="chat", checkpoint=str(base),
                              config_path=config)
            parity = {"base": parity_of(profile, str(base), sampled.trajectory_ids)}
            seconds["parity_base"] = time.perf_counter() - started

            started = time.perf_counter()
            trained = train(iteration=0, objective="sft", config_path=config)
            seconds["train"] = time.perf_counter() - started
            metrics = trained.metrics

            started = time.perf_counter()
            served = serve(checkpoint=trained.path, config_path=config)
            seconds["serve_start"] = time.perf_counter() - started

            started = time.perf_counter()
            replay = rollout(iteration=0, split="train", size=None, policy="chat", checkpoint=trained.path,
                             greedy=True, config_path=config)
            judge(iteration=0, config_path=config)
            success = verdicts_of(profile, replay.trajectory_ids)
            seconds["replay"] = time.perf_counter() - started

            started = time.perf_counter()
            sampled = rollout(iteration=1, split="train", size=None, policy="chat", checkpoint=trained.path,
                              config_path=config)
            parity["trained"] = parity_of(profile, trained.path, sampled.trajectory_ids)
            seconds["parity"] = time.perf_counter() - started
        finally:
            if served is not None:
                supervisor.stop(load_config(profile).serve)
        tokens = training_tokens(profile, base, 0)

    episodes, successes = len(success), int(success.sum())
    low, high = wilson_interval(successes, episodes)
    print(json.dumps({
        "quick": args.quick, "seed": args.seed, "tasks": task_ids,
        "replay_success": successes / episodes, "replay_episodes": episodes,
        "replay_success_ci95": [round(low, 3), round(high, 3)],
        "replay_terminations": replay.terminations, "oracle_success": oracle_success,
        "logprob_max_abs_diff": max(p["max_abs_diff"] for p in parity.values()),
        "logprob_mean_abs_diff": sum(p["mean_abs_diff"] * p["tokens"] for p in parity.values())
        / max(sum(p["tokens"] for p in parity.values()), 1),
        "logprob_parity": parity,
        "grpo_heldout_before": None, "grpo_heldout_after": None,
        "model_parameters": parameters,
        "train_samples": int(metrics["train/samples"]), "train_steps": int(metrics["train/steps"]),
        "epochs": args.epochs, "learning_rate": args.lr, "micro_batch_size": args.micro_batch_size,
        "tokens_per_step": round(tokens * args.micro_batch_size),
        "response_tokens_per_step": metrics["train/response_tokens"],
        "seconds_per_train_step": round(metrics["train/step_time_s"], 3),
        "loss_initial": round(metrics["train/loss_initial"], 4), "loss_final": round(metrics["train/loss"], 4),
        "seconds": {name: round(value, 1) for name, value in seconds.items()},
        "seconds_total": round(sum(seconds.values()), 1),
    }))


if __name__ == "__main__":
    main()
