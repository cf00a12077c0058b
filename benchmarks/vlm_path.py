"""The production VLM path learns: overfit a small Qwen3-VL on oracle demonstrations, replay greedily.

    .venv/bin/python benchmarks/vlm_path.py [--quick] [--tasks 6] [--epochs 80] [--lr 3e-3] [--seed 0]
        [--micro-batch-size 4] [--out DIR] [--grpo-sites 3]
        [--grpo-sft-epochs 30] [--grpo-rounds 8] [--grpo-group-size 8] [--grpo-epochs 2] [--grpo-temperature 1.0]
        [--grpo-demonstration-weight 1.0] [--grpo-lr 2e-4]
        [--size small] [--device cpu] [--precision fp32] [--zero-stage 2|3] [--grpo-round]

Everything goes through the flows a `chat` policy profile runs (issue 16, items 2, 3 and 5):
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
   round to 0 on both sides, while the base model's are near -log(vocabulary), so a mismatch shows;
6. item 5 (not with --quick; `grpo_heldout`): the filter tasks of a chain of 3 city guides, generated sites
   sharing one filter bar ("On <site>, show <category> in <district>."); an SFT checkpoint of the oracle's
   demonstrations of 9 of each site's 15 tasks (it succeeds on those and on none of the 6 others); 3 of the
   6 held out on each site (the validation split), the other 3 rolled out, each held-out combination
   rolled out on another site; then rounds of sampled groups on those -> judge -> GRPO through the VLM
   trainer, with the demonstrations as a supervised term in every update -> serve, each checkpoint
   evaluated greedily on the held-out, the rolled-out and the demonstrated tasks. `grpo_heldout_before` /
   `grpo_heldout_after` are the held-out tasks' success before the first and after the last round.

--size, --device, --precision and --zero-stage set the model and the trainer (train.device, train.precision,
train.zero_stage) for every training; `webgym serve` picks its device itself (the GPU when there is one, in
bf16). --grpo-round adds one GRPO round on the replayed tasks after parity (`grpo_round`); with
--size medium --device cuda --precision bf16 --zero-stage 2 this is the GPU device check
(benchmarks/gpu_check.sh).

--quick demonstrates 4 tasks instead of 6 and skips item 5; it still checks items 2 and 3. (30 epochs at
4e-3 left the loss at 0.19 and replayed 1 of 4 episodes, the tags garbled; 40 at 3e-3 replayed 3 of 4
with seed 1, an answer taken from another task.)

Prints one JSON line: replay_success (with episodes and its 95% Wilson interval),
logprob_max_abs_diff, logprob_mean_abs_diff (over the base and the trained model; each with its tokens
and their mean |log-probability| under logprob_parity), the model's parameters, the
tokens of a training step (prompt and response; response alone), seconds per training step, the
loss before and after, training tokens per second (prompt and response), the served model's response tokens per
second of the policy's waits (`serving`), the parity tolerance held (1e-3 in fp32, 0.1 in bf16, the serving
dtype on a GPU: webgym/train/trainer.py), `grpo_round`, the seconds each part took, and under `grpo` every round of
item 5: its sampled
rollouts' success, whether it trained, and both halves' greedy success, each with its 95% interval.
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
import yaml  # noqa: E402
import pyarrow.dataset as ds  # noqa: E402

from webgym.config import load_config  # noqa: E402
from webgym.lake import Lake  # noqa: E402
from webgym.ports import free_port  # noqa: E402
from webgym.stats import rate_summary, wilson_interval  # noqa: E402

WEBGYM_SERVE = "{python} -m webgym.cli serve --checkpoint {checkpoint} --port {port} --served-model-name {name}"


def write_profile(out: Path, base: Path, args: argparse.Namespace, epochs: int, world: dict | None = None,
                  observation: str = "coordinates", lr_schedule: str = "constant") -> Path:
    """The CI profile with the `chat` policy on `base`, served by `webgym serve`, and the trainer's recipe;
    `world` replaces settings of the CI world (sites.world); `observation` is env.observation."""
    port = free_port()
    profile = {
        "extends": str(ROOT / "configs" / "ci.yaml"), "profile": "vlm-path",
        "lake": {"data_dir": str(out / "lake")},
        "sites": {"world": world or {}},
        # coordinates: the chat policy answers in pixels; set_of_marks: numbers drawn on the screenshot, and
        # demonstrations name the numbered element a click falls in (webgym/train/samples.py).
        "env": {"observation": observation},
        "policy": {"kind": "chat", "checkpoint": str(base), "seed": args.seed,
                   "sampling": {"max_tokens": 64}},
        "llm": {"endpoints": {"policy": [{"base_url": f"http://127.0.0.1:{port}/v1", "model": base.name,
                                          "timeout_s": 600}]},
                "cache_dir": str(out / "llm-cache")},
        "serve": {"command": WEBGYM_SERVE, "port": port, "state_dir": str(out / "serve"), "startup_timeout_s": 600},
        "rollout": {"concurrency": 2},
        # Every demonstrated task is learnt (accept's default keeps 6 per website, OpenWebRL's curation).
        "accept": {"objective": "sft", "sft_max_per_website": None},
        "train": {"objective": "sft", "seed": args.seed, "epochs": epochs, "learning_rate": args.lr,
                  "micro_batch_size": args.micro_batch_size, "lr_schedule": lr_schedule, "warmup_ratio": 0.0,
                  "weight_decay": 0.0, "device": args.device, "precision": args.precision,
                  "zero_stage": args.zero_stage, "checkpoints_dir": str(out / "models")},
    }
    out.mkdir(parents=True, exist_ok=True)
    path = out / "profile.yaml"
    path.write_text(json.dumps(profile, indent=2) + "\n")  # JSON is YAML
    return path


def write_grpo_profile(out: Path, sft_profile: Path, start: str, args: argparse.Namespace,
                       name: str = "profile.yaml") -> Path:
    """The SFT profile turned to GRPO from the `start` checkpoint, written to out/`name`, in the lake out/lake
    (its own, or the SFT profile's when `out` is the SFT's directory): sampled groups of args.group_size per
    task, the vlm-cpu nightly's GRPO recipe (format errors earn -1, 2 epochs), with the demonstrations'
    supervised term at args.grpo_demonstration_weight."""
    profile = {
        "extends": str(sft_profile), "profile": "vlm-path-grpo",
        "lake": {"data_dir": str(out / "lake")},
        "policy": {"checkpoint": start, "sampling": {"temperature": args.grpo_temperature}},
        "judge": {"format_error_reward": -1.0},
        "rollout": {"group_size": args.grpo_group_size},
        "accept": {"objective": "grpo", "grpo_demonstration_weight": args.grpo_demonstration_weight},
        "train": {"objective": "grpo", "epochs": args.grpo_epochs, "learning_rate": args.grpo_lr,
                  "lr_schedule": "constant", "checkpoints_dir": str(out / "models")},
    }
    out.mkdir(parents=True, exist_ok=True)
    path = out / name
    path.write_text(json.dumps(profile, indent=2) + "\n")
    return path


def two_step_tasks(profile: Path, count: int) -> list[dict]:
    """`count` easy tasks of the profile's world, one per site in site order (a two-step goal of
    difficulty 1: open a page, then answer), as task records."""
    from webgym.sites.tasks import two_step_records
    from webgym.sites.world import world_of

    sites = world_of(load_config(profile).sites).sites
    return two_step_records([sites[name] for name in sorted(sites)], count)


def write_tasks(profile: Path, records: list[dict], split: str) -> list[str]:
    """The task records as rows of the lake's tasks table in `split` (those not there yet: a rerun on the same
    --out resumes); their ids."""
    from webgym.sites.tasks import task_row

    lake = Lake(load_config(profile).lake.data_dir)
    rows = pd.DataFrame([task_row(r, split, dt.datetime.now(dt.UTC)) for r in records])
    new = rows[~rows["task_id"].isin(lake.read_table("tasks", columns=["task_id"])["task_id"])]
    if len(new):
        lake.write_table("tasks", new)
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


def serving_rate(profile: Path, trajectory_ids: list[str]) -> dict:
    """Response tokens the served model sampled over the episodes' steps, and per second of the policy's waits
    (webgym serve's generation, HTTP and queueing behind the other episodes in flight)."""
    config = load_config(profile)
    steps = Lake(config.lake.data_dir).read_table("steps", columns=["token_ids", "latency"],
                                                  filter=ds.field("trajectory_id").isin(trajectory_ids))
    tokens = int(steps["token_ids"].dropna().map(len).sum())
    waited = float(sum(latency["policy_s"] or 0.0 for latency in steps["latency"].dropna()))
    return {"response_tokens": tokens, "policy_seconds": round(waited, 2),
            "tokens_per_s": round(tokens / waited, 1) if waited else None}


GRPO_ROUND_ITERATION = 3
"""The lake iteration of --grpo-round's sampled groups (0: demonstrations and replay, 1 and 2: parity)."""


def grpo_round(out: Path, profile: Path, checkpoint: str, args: argparse.Namespace) -> dict:
    """One GRPO round from the served `checkpoint` on the replayed tasks, in the same lake: args.grpo_group_size
    sampled episodes per task, judged (a format error earns -1), then GRPO through the VLM trainer with the
    profile's device, precision and ZeRO stage when some group's rewards differ (else nothing to learn)."""
    from flows.judge import judge
    from flows.rollout import rollout
    from flows.train import acceptance, train

    grpo = write_grpo_profile(out, profile, checkpoint, args, name="grpo-profile.yaml")
    sampled = rollout(iteration=GRPO_ROUND_ITERATION, split="train", size=None, policy="chat", checkpoint=checkpoint,
                      config_path=str(grpo))
    judge(iteration=GRPO_ROUND_ITERATION, config_path=str(grpo))
    success = verdicts_of(grpo, sampled.trajectory_ids)
    point = {"rollouts": rate_summary(int(success.sum()), len(success)), "group_size": args.grpo_group_size}
    chosen = acceptance(load_config(grpo), GRPO_ROUND_ITERATION)
    if chosen.accepted.empty:
        return {**point, "trained": False}
    trained = train(iteration=GRPO_ROUND_ITERATION, objective="grpo", config_path=str(grpo))
    metrics = trained.metrics
    return {**point, "trained": True, "groups_effective": chosen.groups_effective,
            "accepted_steps": trained.accepted_steps, "steps": int(metrics["train/steps"]),
            "loss_initial": round(metrics["train/loss_initial"], 4), "loss_final": round(metrics["train/loss"], 4),
            "seconds_per_train_step": round(metrics["train/step_time_s"], 3),
            "logprob_max_abs_diff": metrics.get("train/logprob_max_abs_diff")}


def greedy_success(profile: Path, checkpoint: str, iteration: int, split: str, demonstrated: set[str],
                   tasks: list[str] | None = None) -> dict:
    """Greedy episodes of the served `checkpoint`, one per task of `split` (or per task id of `tasks`), judged
    by the exact verifier; also split by whether the task's kind was demonstrated (by_cell)."""
    from flows.judge import judge
    from flows.rollout import rollout

    report = rollout(iteration=iteration, split=split, size=None, policy="chat", checkpoint=checkpoint,
                     greedy=True, group_size=1, tasks=tasks, config_path=str(profile))
    judge(iteration=iteration, config_path=str(profile))
    success = verdicts_of(profile, report.trajectory_ids)
    return {**rate_summary(int(success.sum()), len(success)), "terminations": report.terminations,
            "by_cell": by_cell(profile, success, demonstrated)}


def filter_grid(site) -> list[tuple[int | None, int | None, dict]]:
    """Every category and district filter of a directory site as a task record ("On <site>, show <category> in
    <district>."), with the category's and the district's place among the site's own three (None for
    "Everything" or "All districts", the starting filters; the task that changes neither is left out). A task
    takes a click per filter it changes, then answer "Done."."""
    from webgym.sites.site import Site
    from webgym.sites.spec import GoalSpec
    from webgym.sites.tasks import task_record

    def places(rows: list[dict]) -> list[tuple[int | None, dict]]:
        others = iter(range(len(rows)))
        return [(None if row["id"] == "all" else next(others), row) for row in rows]

    goals = {(i, j): GoalSpec(id=f"grid-{c['id']}-{d['id']}", text=f"On {{title}}, show {c['name']} in {d['name']}.",
                              groups=[{"description": "filters", "facts": [
                                  {"var": "category", "op": "eq", "value": c["id"]},
                                  {"var": "district", "op": "eq", "value": d["id"]}]}])
             for i, c in places(site.spec.data["categories"]) for j, d in places(site.spec.data["districts"])
             if (i, j) != (None, None)}
    grid = Site(site.spec.model_copy(update={"goals": list(goals.values())}), max_states=site.max_states)
    return [(i, j, task_record(grid, goal)) for (i, j), goal in goals.items()]


CHAIN_FILTERS = {"kinds": ["parks", "cafes", "libraries"], "districts": ["Market District", "Lakeside", "Southbank"]}


def write_chain_family(out: Path) -> Path:
    """The directory family as a chain of city guides, written to out/families/guide.yaml: every site has the
    filter bar of CHAIN_FILTERS, in that order, while its title, town, places and styles are drawn as before.
    The family's own filter goals are left out: filter_grid makes every one."""
    raw = yaml.safe_load((ROOT / "webgym" / "sites" / "families" / "directory.yaml").read_text())
    kinds = {kind["id"]: kind for kind in raw["words"]["kinds"]}
    raw["family"] = "guide"
    raw["draw"]["kinds_drawn"] = [kinds[kind] for kind in CHAIN_FILTERS["kinds"]]
    raw["draw"]["districts_drawn"] = CHAIN_FILTERS["districts"]
    raw["goals"] = [goal for goal in raw["goals"] if not goal["id"].startswith("filter-")]
    families = out / "families"
    families.mkdir(parents=True, exist_ok=True)
    (families / "guide.yaml").write_text(yaml.safe_dump(raw, sort_keys=False, allow_unicode=True))
    return families


def demonstrated_cell(category: int | None, district: int | None) -> bool:
    """The one-filter tasks and a diagonal of the 3x3 grid of two-filter tasks: every filter is shown clicked
    alone and with one partner; the other 6 two-filter tasks are never demonstrated."""
    return category is None or district is None or (category + district) % 3 == 0


UNDEMONSTRATED = [(i, j) for i in range(3) for j in range(3) if not demonstrated_cell(i, j)]
"""The 6 two-filter tasks of a site that are never demonstrated, in grid order."""


def held_out_cell(site: int, category: int | None, district: int | None) -> bool:
    """Every other never demonstrated task of the site-th site, starting with the first on even sites and the
    second on odd ones: each combination is held out on some sites and left to GRPO on the others."""
    return (category, district) in UNDEMONSTRATED and (UNDEMONSTRATED.index((category, district)) + site) % 2 == 0


def grid_family(profile: Path) -> dict[str, list[dict]]:
    """Item 5's family on the profile's guide sites (filter_grid): the demonstrated tasks, the held-out ones
    (held_out_cell) and those GRPO rolls out (`rl`: the never demonstrated ones not held out)."""
    from webgym.sites.world import world_of

    sites = world_of(load_config(profile).sites).sites
    cells = [(index, i, j, record)
             for index, name in enumerate(sorted(sites)) for i, j, record in filter_grid(sites[name])]
    return {"demonstrated": [r for n, i, j, r in cells if demonstrated_cell(i, j)],
            "rl": [r for n, i, j, r in cells if not demonstrated_cell(i, j) and not held_out_cell(n, i, j)],
            "held_out": [r for n, i, j, r in cells if held_out_cell(n, i, j)]}


def by_cell(profile: Path, success: pd.Series, demonstrated: set[str]) -> dict:
    """The episodes' success (by trajectory, verdicts_of) on demonstrated and on never demonstrated kinds of
    filter task."""
    config = load_config(profile)
    tasks = Lake(config.lake.data_dir).read_table("trajectories", columns=["trajectory_id", "task_id"],
                                                 filter=ds.field("trajectory_id").isin(success.index.tolist()))
    kind = tasks.set_index("trajectory_id")["task_id"].str.split("/").str[-1].isin(demonstrated)
    return {name: rate_summary(int(success[kind[kind == flag].index].sum()), int((kind == flag).sum()))
            for name, flag in (("demonstrated", True), ("undemonstrated", False))}


def grpo_heldout(out: Path, base: Path, args: argparse.Namespace, seconds: dict[str, float]) -> dict:
    """Item 5: does GRPO through the VLM trainer raise greedy success on tasks it never rolls out?

    The family is the filter tasks of a chain of city guides (write_chain_family, filter_grid): "On <site>,
    show <category> in <district>.", on sites that share one filter bar, so a combination's clicks are the
    same on every site. The SFT checkpoint learns the oracle's demonstrations of 9 of each site's 15 tasks
    (demonstrated_cell; cosine schedule, args.grpo_sft_epochs epochs): it succeeds on those and on none of the
    6 combinations it never saw. Half of those are held out on each site (held_out_cell): they are the
    validation tasks, and nothing trains on them. GRPO rolls out the other half, the tasks the SFT checkpoint
    fails (a solved task's group has no variance to learn from): each round samples args.grpo_group_size
    episodes of each, judges them (a format error earns -1), trains GRPO when a group's rewards differ (with
    the oracle's demonstrations, recorded again in GRPO's lake, as the supervised term of
    args.grpo_demonstration_weight), serves the new checkpoint and evaluates it greedily on every task: the
    held-out ones, the rolled-out ones and the demonstrated ones (whether GRPO keeps them). A held-out
    combination is rolled out on another site, so what GRPO can carry over is what it learns of the
    combination, not of a site."""
    from flows.judge import judge
    from flows.rollout import rollout
    from flows.serve import serve
    from flows.train import acceptance, train
    from webgym.serve import supervisor

    started = time.perf_counter()
    world = {"families": ["guide"], "instances": args.grpo_sites, "hand_written": False,
             "families_dir": str(write_chain_family(out))}
    sft_profile = write_profile(out / "grpo-sft", base, args, args.grpo_sft_epochs, world, "set_of_marks", "cosine")
    family = grid_family(sft_profile)
    demonstrated = {record["goal_id"] for record in family["demonstrated"]}
    write_tasks(sft_profile, family["demonstrated"], "train")
    rollout(iteration=0, split="train", size=None, policy="oracle", config_path=str(sft_profile))
    judge(iteration=0, config_path=str(sft_profile))
    checkpoint = train(iteration=0, objective="sft", config_path=str(sft_profile)).path
    seconds["grpo_sft"] = time.perf_counter() - started

    started = time.perf_counter()
    profile = write_grpo_profile(out / "grpo", sft_profile, checkpoint, args)
    rl_tasks = write_tasks(profile, family["rl"], "train")
    held_out = write_tasks(profile, family["held_out"], "validation")
    shown = write_tasks(profile, family["demonstrated"], "train")
    rollout(iteration=0, split="train", tasks=shown, policy="oracle", group_size=1, config_path=str(profile))
    judge(iteration=0, config_path=str(profile))

    def evaluated(served: str, round_: int) -> dict:
        train_split = greedy_success(profile, served, round_, "train", demonstrated, shown + rl_tasks)["by_cell"]
        validation = greedy_success(profile, served, round_, "validation", demonstrated)["by_cell"]
        return {"held_out": validation["undemonstrated"], "demonstrated": train_split["demonstrated"],
                "rl_tasks_greedy": train_split["undemonstrated"]}

    try:
        serve(checkpoint=checkpoint, config_path=str(profile))
        curve = [{"round": 0, "checkpoint": Path(checkpoint).name, **evaluated(checkpoint, 0)}]
        for round_ in range(1, args.grpo_rounds + 1):
            sampled = rollout(iteration=round_, split="train", tasks=rl_tasks, policy="chat", checkpoint=checkpoint,
                              config_path=str(profile))
            judge(iteration=round_, config_path=str(profile))
            success = verdicts_of(profile, sampled.trajectory_ids)
            point = {"round": round_, "rollouts": {**rate_summary(int(success.sum()), len(success)),
                                                   "terminations": sampled.terminations}}
            chosen = acceptance(load_config(profile), round_)
            if chosen.accepted.empty:  # every group earned one reward: nothing to learn, the checkpoint stays
                curve.append({**point, "trained": False, "checkpoint": Path(checkpoint).name,
                              **{key: curve[-1][key] for key in ("held_out", "demonstrated", "rl_tasks_greedy")}})
                continue
            trained = train(iteration=round_, objective="grpo", config_path=str(profile))
            checkpoint = trained.path
            serve(checkpoint=checkpoint, config_path=str(profile))
            curve.append({**point, "trained": True, "checkpoint": trained.checkpoint_id,
                          "groups_effective": chosen.groups_effective, "accepted_steps": trained.accepted_steps,
                          "train_seconds": round(trained.metrics["train/time_s"], 1), **evaluated(checkpoint, round_)})
    finally:
        supervisor.stop(load_config(profile).serve)
    seconds["grpo_rounds"] = time.perf_counter() - started
    return {"rl_tasks": rl_tasks, "held_out_tasks": held_out, "demonstrated": sorted(demonstrated),
            "sft_epochs": args.grpo_sft_epochs, "learning_rate": args.grpo_lr,
            "demonstration_weight": args.grpo_demonstration_weight,
            "temperature": args.grpo_temperature, "curve": curve}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="4 tasks instead of 6; items 2 and 3 still.")
    parser.add_argument("--tasks", type=int, help="Easy train tasks to demonstrate and replay (default 6; quick 4).")
    parser.add_argument("--epochs", type=int, default=80, help="SFT passes over the demonstrations.")
    parser.add_argument("--lr", type=float, default=3e-3, help="SFT learning rate (constant, AdamW; item 5's SFT too).")
    parser.add_argument("--micro-batch-size", type=int, default=4, help="Samples per optimiser step.")
    parser.add_argument("--seed", type=int, default=0, help="Seed of the random weights, sample order and sampling.")
    parser.add_argument("--size", default="small",
                        help="Random model (webgym/models/tiny.py SIZES): tiny ~0.26 M, small ~2.4 M (CPU), medium "
                             "~85 M parameters (GPU).")
    parser.add_argument("--device", default="cpu", help="train.device: auto, cpu, cuda or cuda:N (serving: auto).")
    parser.add_argument("--precision", default="fp32", choices=["fp32", "bf16"], help="train.precision.")
    parser.add_argument("--zero-stage", type=int, choices=[2, 3], help="train.zero_stage (DeepSpeed); none: torch.")
    parser.add_argument("--grpo-round", action="store_true",
                        help="After parity, one GRPO round on the replayed tasks (groups of --grpo-group-size).")
    parser.add_argument("--out", type=Path, help="Keep the lake, checkpoints and server log here (default: temporary).")
    parser.add_argument("--grpo-sites", type=int, default=3,
                        help="Item 5: guide sites whose filter tasks make the family (15 each: 9 demonstrated, 3 "
                             "held out).")
    parser.add_argument("--grpo-sft-epochs", type=int, default=30,
                        help="Item 5: SFT epochs of the starting checkpoint (it learns the demonstrated tasks only).")
    parser.add_argument("--grpo-rounds", type=int, default=8, help="Item 5: rounds of rollout, judge and GRPO.")
    parser.add_argument("--grpo-group-size", type=int, default=8, help="Item 5: sampled episodes per task and round.")
    parser.add_argument("--grpo-epochs", type=int, default=2, help="Item 5: GRPO passes over a round's samples.")
    parser.add_argument("--grpo-temperature", type=float, default=1.0,
                        help="Item 5: sampling temperature of GRPO's rollouts (log-probabilities stay the model's).")
    parser.add_argument("--grpo-demonstration-weight", type=float, default=1.0,
                        help="Item 5: weight of the supervised term on the SFT demonstrations in every GRPO update "
                             "(accept.grpo_demonstration_weight; 0: GRPO alone).")
    parser.add_argument("--grpo-lr", type=float, default=2e-4,
                        help="Item 5: GRPO learning rate (at SFT's 3e-3 the token ratios fall to 0.05 in one round).")
    args = parser.parse_args()
    if args.tasks is None:
        args.tasks = 4 if args.quick else 6

    from flows.judge import judge
    from flows.rollout import rollout
    from flows.serve import serve
    from flows.train import train
    import torch

    from webgym.models.checkpoint import load_vlm, resolve_device, resolve_dtype
    from webgym.models.tiny import write_tiny_checkpoint
    from webgym.serve import supervisor
    from webgym.train.trainer import BF16_PARITY_TOLERANCE, PARITY_TOLERANCE

    seconds: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as scratch:
        out = (args.out or Path(scratch)).resolve()
        out.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        base = write_tiny_checkpoint(out / f"{args.size}-base", seed=args.seed, size=args.size)
        parameters = sum(p.numel() for p in load_vlm(base).model.parameters())
        profile = write_profile(out, base, args, args.epochs)
        task_ids = write_tasks(profile, two_step_tasks(profile, args.tasks), "train")
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
            serving = serving_rate(profile, sampled.trajectory_ids)
            seconds["parity"] = time.perf_counter() - started

            round_ = None
            if args.grpo_round:
                started = time.perf_counter()
                round_ = grpo_round(out, profile, trained.path, args)
                seconds["grpo_round"] = time.perf_counter() - started
        finally:
            if served is not None:
                supervisor.stop(load_config(profile).serve)
        tokens = training_tokens(profile, base, 0)
        grpo = None if args.quick else grpo_heldout(out, base, args, seconds)

    episodes, successes = len(success), int(success.sum())
    low, high = wilson_interval(successes, episodes)
    # parity loads the checkpoint as `webgym serve` does (dtype auto: bf16 on a GPU), whatever the training precision
    bf16 = resolve_dtype("auto", resolve_device("auto")) == torch.bfloat16
    tokens_per_step = tokens * args.micro_batch_size
    print(json.dumps({
        "quick": args.quick, "seed": args.seed, "tasks": task_ids, "size": args.size, "device": args.device,
        "precision": args.precision, "zero_stage": args.zero_stage, "cuda": torch.cuda.is_available(),
        "replay_success": successes / episodes, "replay_episodes": episodes,
        "replay_success_ci95": [round(low, 3), round(high, 3)],
        "replay_terminations": replay.terminations, "oracle_success": oracle_success,
        "logprob_max_abs_diff": max(p["max_abs_diff"] for p in parity.values()),
        "logprob_mean_abs_diff": sum(p["mean_abs_diff"] * p["tokens"] for p in parity.values())
        / max(sum(p["tokens"] for p in parity.values()), 1),
        "logprob_parity": parity,
        "logprob_tolerance": BF16_PARITY_TOLERANCE if bf16 else PARITY_TOLERANCE,
        "serving": serving, "grpo_round": round_,
        "grpo_heldout_before": grpo["curve"][0]["held_out"] if grpo else None,
        "grpo_heldout_after": grpo["curve"][-1]["held_out"] if grpo else None,
        "grpo": grpo,
        "model_parameters": parameters,
        "train_samples": int(metrics["train/samples"]), "train_steps": int(metrics["train/steps"]),
        "epochs": args.epochs, "learning_rate": args.lr, "micro_batch_size": args.micro_batch_size,
        "tokens_per_step": round(tokens_per_step),
        "response_tokens_per_step": metrics["train/response_tokens"],
        "seconds_per_train_step": round(metrics["train/step_time_s"], 3),
        "train_tokens_per_s": round(tokens_per_step / metrics["train/step_time_s"], 1),
        "train_engine_init_s": round(metrics["train/engine_init_s"], 1),
        "loss_initial": round(metrics["train/loss_initial"], 4), "loss_final": round(metrics["train/loss"], 4),
        "seconds": {name: round(value, 1) for name, value in seconds.items()},
        "seconds_total": round(sum(seconds.values()), 1),
    }))


if __name__ == "__main__":
    main()
