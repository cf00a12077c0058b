"""Learning curve of the set-of-marks scorer on the synthetic sites (issue #8 item 4).

    .venv/bin/python benchmarks/learning_curve.py [--iterations 5] [--out reports/scorer]

The experiment, every episode in Chromium against the site server, every verdict exact:
1. tasks: every goal of every shipped site plus its WebGym decompositions (template texts), split
   by site: the held-out sites (default: the "-b" site of each graph, so a test site shares its
   graph, never its data, with a training site) are the test split; evaluation uses a fixed
   seeded sample of --test-tasks of them;
2. untrained: a freshly initialised scorer, evaluated greedily on those test tasks;
3. warm start (AutoWebWorld, OpenWebRL's small curated set): the BFS oracle demonstrates at most
   --demos-per-site TRAIN tasks per website; the scorer is trained on them (SFT) and evaluated;
4. iterations: the scorer rolls out a fresh sample of --train-tasks train tasks (--group-size
   episodes each, sampling at --temperature), the exact verifier judges the recorded final states
   (answered episodes only, as the rule gates do), filtered BC trains on the successful steps
   (the demonstrations and every success so far, from the current checkpoint), then the greedy
   evaluation on the test tasks.
Everything lands in a lake (trajectories, steps, checkpoints, evals) under --out; the curve is
printed and plotted to --out/learning_curve.png, the figures saved to --out/learning_curve.json.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import logging
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import torch  # noqa: E402
from playwright.async_api import async_playwright  # noqa: E402

from schemas.evals import Eval  # noqa: E402
from schemas.tasks import Task, task_id_for  # noqa: E402
from schemas.values import difficulty_band  # noqa: E402
from stages.decompose import decomposed_tasks  # noqa: E402
from stages.judge.gates import gate_judgments  # noqa: E402
from webgym.browser import launch_browser  # noqa: E402
from webgym.config import DecomposeConfig, EnvConfig, RolloutConfig, ScorerConfig, load_config, replaced  # noqa: E402
from webgym.env.safety import UrlPolicy  # noqa: E402
from webgym.lake import Lake  # noqa: E402
from webgym.policies.base import Policy, TaskSpec  # noqa: E402
from webgym.policies.oracle import SiteOracle  # noqa: E402
from webgym.policies.scorer.checkpoint import Scorer, init_scorer, save_scorer  # noqa: E402
from webgym.policies.scorer.embeddings import TextEmbeddings  # noqa: E402
from webgym.policies.scorer.policy import ScorerPolicy  # noqa: E402
from webgym.rollout.collect import collect, episode_specs  # noqa: E402
from webgym.rollout.site_state import SiteStateReader  # noqa: E402
from webgym.sites.server import SiteServer  # noqa: E402
from webgym.sites.site import Site, load_sites  # noqa: E402
from webgym.sites.tasks import reference_answer, start_url, task_text  # noqa: E402
from webgym.sites.verify import verify  # noqa: E402
from webgym.train.scorer import ScorerSample, record_checkpoint, scorer_samples, train_scorer  # noqa: E402

log = logging.getLogger("learning_curve")
HELD_OUT = ["acct-b", "forum-b", "mail-b", "rail-b", "recipes-b", "shop-b"]


# ---- tasks ---------------------------------------------------------------------------------------

def site_tasks(sites: dict[str, Site], held_out: list[str], now: dt.datetime) -> pd.DataFrame:
    """The tasks table of the experiment: goals and their decompositions, split by site."""
    rows = []
    for site in sites.values():
        for goal in site.spec.goals:
            source_id, rubric = f"{site.name}/{goal.id}", site.rubric(goal.id)
            rows.append(Task(task_id=task_id_for("synthetic", source_id), source="synthetic", source_id=source_id,
                             text=task_text(site, goal), website=site.spec.hostname, start_url=start_url(site),
                             domain=site.spec.domain, subdomain=site.spec.subdomain, difficulty=rubric.n_facts,
                             rubric=rubric, reference_answer=reference_answer(rubric), created_at=now).model_dump())
    originals = pd.DataFrame(rows)
    tasks = pd.concat([originals, decomposed_tasks(originals, DecomposeConfig(), now=now)], ignore_index=True)
    test_hosts = {sites[name].spec.hostname for name in held_out}
    return tasks.assign(split=tasks["website"].map(lambda host: "test" if host in test_hosts else "train"))


def demo_tasks(tasks: pd.DataFrame, per_site: int, seed: int) -> pd.DataFrame:
    """The train tasks the oracle demonstrates: at most `per_site` per website (OpenWebRL's small
    curated warm-start set, capped per website; 0: all), a seeded draw. Never a test task."""
    train = tasks[tasks["split"] == "train"]
    if not per_site:
        return train
    return train.sample(frac=1.0, random_state=seed).groupby("website").head(per_site)


def specs_of(tasks: pd.DataFrame) -> list[TaskSpec]:
    return [TaskSpec(r.task_id, r.text, r.start_url, r.website, int(r.difficulty), r.rubric)
            for r in tasks.itertuples(index=False)]


# ---- rollout and verdicts -----------------------------------------------------------------------

async def _rollout(lake: Lake, sites: dict[str, Site], tasks: list[TaskSpec], policy: Policy, iteration: int,
                   run_key: str, settings: RolloutConfig) -> list[str]:
    """Roll every task out once (group_size times) in Chromium; the trajectory ids."""
    specs = episode_specs(tasks, iteration, settings, run_key)
    with SiteServer(sites) as server:
        reader = SiteStateReader(server)
        async with async_playwright() as playwright:
            browser = await launch_browser(playwright, site_hosts=server.host_map())
            try:
                await collect(specs, policy, browser, lake, settings, EnvConfig(observation="set_of_marks"),
                              UrlPolicy(site_hosts=frozenset(server.sites), allow_public=False), reader,
                              run_id=run_key)
            finally:
                await browser.close()
                await reader.aclose()
    return [spec.trajectory_id for spec in specs]


def verdicts(lake: Lake, trajectory_ids: list[str], tasks: pd.DataFrame) -> pd.DataFrame:
    """The trajectories with `success`: not gated by rule (it answered) and confirmed by the exact verifier."""
    trajectories = lake.read_table("trajectories")
    trajectories = trajectories[trajectories["trajectory_id"].isin(trajectory_ids)]
    gated = set(gate_judgments(trajectories)["trajectory_id"])
    rubrics = tasks.set_index("task_id")["rubric"]
    success = [r.trajectory_id not in gated and verify(rubrics[r.task_id], r.final_state, r.answer).success
               for r in trajectories.itertuples(index=False)]
    return trajectories.assign(success=success)


def accepted_successes(judged: pd.DataFrame, steps: pd.DataFrame) -> pd.DataFrame:
    """Filtered BC's accepted rows: every step of every successful trajectory, weight 1."""
    kept = steps[steps["trajectory_id"].isin(judged.loc[judged["success"], "trajectory_id"])]
    return kept[["trajectory_id", "t"]].assign(weight=1.0, advantage=0.0)


def write_evals(lake: Lake, judged: pd.DataFrame, tasks: pd.DataFrame, iteration: int, checkpoint: str) -> None:
    meta = tasks.set_index("task_id")
    rows = [Eval(trajectory_id=r.trajectory_id, iteration=iteration, checkpoint=checkpoint, split="test",
                 task_id=r.task_id, difficulty_band=difficulty_band(int(meta.at[r.task_id, "difficulty"])),
                 domain=meta.at[r.task_id, "domain"], success=bool(r.success),
                 evaluated_at=dt.datetime.now(dt.UTC)).model_dump() for r in judged.itertuples(index=False)]
    lake.write_table("evals", pd.DataFrame(rows), run_id=f"eval-{iteration}")


# ---- the experiment ------------------------------------------------------------------------------

class Experiment:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.out = Path(args.out)
        self.lake = Lake(self.out / "lake")
        self.sites = load_sites(names=args.sites)
        self.tasks = site_tasks(self.sites, args.held_out, dt.datetime.now(dt.UTC))
        self.lake.write_table("tasks", self.tasks, run_id="tasks")
        self.train_tasks = specs_of(self.tasks[self.tasks["split"] == "train"])
        test = self.tasks[self.tasks["split"] == "test"]
        self.test_tasks = specs_of(test.sample(min(args.test_tasks, len(test)), random_state=args.seed)
                                   if args.test_tasks else test)
        self.embed = TextEmbeddings()
        self.config = ScorerConfig(seed=args.seed)
        self.curve: list[dict] = []

    def sample_train(self, iteration: int) -> list[TaskSpec]:
        """This iteration's batch of train tasks (all of them without --train-tasks)."""
        if not self.args.train_tasks or self.args.train_tasks >= len(self.train_tasks):
            return self.train_tasks
        rng = np.random.default_rng([self.args.seed, iteration])
        return [self.train_tasks[i] for i in rng.choice(len(self.train_tasks), self.args.train_tasks, replace=False)]

    def rollout(self, tasks: list[TaskSpec], policy: Policy, iteration: int, key: str,
                group_size: int = 1) -> pd.DataFrame:
        started = time.monotonic()
        settings = RolloutConfig(concurrency=self.args.concurrency, group_size=group_size)
        ids = asyncio.run(_rollout(self.lake, self.sites, tasks, policy, iteration, key, settings))
        judged = verdicts(self.lake, ids, self.tasks)
        log.info("%s: %d/%d successful, %d steps, %.0f s", key, judged["success"].sum(), len(judged),
                 judged["n_steps"].sum(), time.monotonic() - started)
        return judged

    def evaluate(self, scorer: Scorer, iteration: int, label: str, **figures: float) -> None:
        policy = ScorerPolicy(scorer, self.embed, greedy=True)
        try:
            judged = self.rollout(self.test_tasks, policy, iteration, f"eval-{iteration}-{scorer.checkpoint_id}")
        finally:
            policy.close()
        write_evals(self.lake, judged, self.tasks, iteration, scorer.checkpoint_id)
        point = {"iteration": iteration, "stage": label, "checkpoint": scorer.checkpoint_id,
                 "test_tasks": len(judged), "test_successes": int(judged["success"].sum()),
                 "test_success": float(judged["success"].mean()), **figures}
        self.curve.append(point)
        log.info("curve: %s", point)
        (self.out / "learning_curve.json").write_text(json.dumps(self.curve, indent=2) + "\n")

    def train(self, scorer: Scorer, samples: list[ScorerSample], iteration: int, objective: str,
              epochs: int) -> tuple[Scorer, dict[str, float]]:
        # the embedded default's scorer recipe (configs/local.yaml's train block)
        config = replaced(load_config().train, objective=objective, epochs=epochs, seed=self.args.seed)
        result = train_scorer(scorer, samples, config)
        path = self.out / "checkpoints" / result.scorer.checkpoint_id
        save_scorer(result.scorer, path)
        record_checkpoint(self.lake, result.scorer, str(path), iteration, objective, result.metrics,
                          run_id=f"train-{iteration}")
        return result.scorer, result.metrics

    def samples(self, accepted: pd.DataFrame) -> list[ScorerSample]:
        steps = self.lake.read_table("steps")
        built, problems = scorer_samples(steps, self.lake.read_table("trajectories"), self.tasks, accepted,
                                         self.embed, self.config.history)
        for problem in problems[:20]:
            log.warning("sample skipped: %s", problem)
        if problems:
            log.warning("%d step(s) could not be rebuilt", len(problems))
        return built

    def run(self) -> None:
        args = self.args
        log.info("tasks: %d train, %d test of %d (held-out sites: %s)", len(self.train_tasks), len(self.test_tasks),
                 int((self.tasks["split"] == "test").sum()), ", ".join(args.held_out))
        scorer = init_scorer(self.config)
        self.evaluate(scorer, 0, "untrained")

        oracle = SiteOracle({name: site for name, site in self.sites.items() if name not in args.held_out})
        demos = self.rollout(specs_of(demo_tasks(self.tasks, args.demos_per_site, args.seed)), oracle, 0,
                             "oracle-demos")
        steps = self.lake.read_table("steps")
        pool = self.samples(accepted_successes(demos, steps))
        scorer, metrics = self.train(scorer, pool, 0, "sft", args.warm_epochs)
        self.evaluate(scorer, 0, "warm start", demo_episodes=int(demos["success"].sum()), samples=len(pool),
                      **metrics)

        for iteration in range(1, args.iterations + 1):
            policy = ScorerPolicy(scorer, self.embed, temperature=args.temperature, seed=args.seed + iteration)
            try:
                judged = self.rollout(self.sample_train(iteration), policy, iteration, f"rollout-{iteration}",
                                      args.group_size)
            finally:
                policy.close()
            new = self.samples(accepted_successes(judged, self.lake.read_table("steps")))
            pool += new
            scorer, metrics = self.train(scorer, pool, iteration, "filtered_bc", args.epochs)
            self.evaluate(scorer, iteration, f"iteration {iteration}",
                          rollout_success=float(judged["success"].mean()), rollout_episodes=len(judged),
                          new_samples=len(new), samples=len(pool), **metrics)
        self.report()

    def report(self) -> None:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        base = self.curve[0]["test_success"]
        print(f"\n{'stage':<14} {'checkpoint':<26} {'test success':>14} {'gain':>7} {'rollout':>8} {'samples':>8}")
        for point in self.curve:
            rollout = f"{point['rollout_success']:.0%}" if "rollout_success" in point else "-"
            successes = f"{point['test_successes']:>4}/{point['test_tasks']:<3}"
            print(f"{point['stage']:<14} {point['checkpoint']:<26} {successes} {point['test_success']:>5.0%} {100 * (point['test_success'] - base):>+6.0f} {rollout:>8} "
                  f"{point.get('samples', 0):>8}")
        warm = self.curve[1]["test_success"]
        print(f"warm-start gain: {100 * (warm - base):+.0f} points; gain from its own rollouts: "
              f"{100 * (self.curve[-1]['test_success'] - warm):+.0f} points "
              f"(best {100 * (max(p['test_success'] for p in self.curve[2:]) - warm):+.0f})")
        figure, axis = plt.subplots(figsize=(7, 4))
        xs = list(range(len(self.curve)))
        axis.plot(xs, [100 * p["test_success"] for p in self.curve], marker="o", label="held-out test sites (greedy)")
        rollout = [(x, 100 * p["rollout_success"]) for x, p in zip(xs, self.curve) if "rollout_success" in p]
        if rollout:
            axis.plot(*zip(*rollout), marker="s", linestyle="--", label="own rollouts on train sites (sampled)")
        axis.set_xticks(xs, ["untrained", "warm start", *(str(p["iteration"]) for p in self.curve[2:])])
        axis.set_xlabel("iteration")
        axis.set_ylabel("success (%)")
        axis.set_ylim(0, 100)
        axis.set_title(f"Set-of-marks scorer on the synthetic sites ({self.curve[0]['test_tasks']} test tasks)")
        axis.grid(alpha=0.3)
        axis.legend()
        figure.tight_layout()
        figure.savefig(self.out / "learning_curve.png", dpi=120)
        print(f"plot: {self.out / 'learning_curve.png'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(ROOT / "reports" / "scorer"), help="Output directory (a fresh lake).")
    parser.add_argument("--iterations", type=int, default=5, help="Rollout -> verify -> train -> eval iterations.")
    parser.add_argument("--sites", nargs="+", default=None, help="Only these sites (default: every shipped site).")
    parser.add_argument("--held-out", nargs="+", default=HELD_OUT, help="Sites of the test split.")
    parser.add_argument("--test-tasks", type=int, default=80,
                        help="Test tasks evaluated (a seeded sample, the same every time; 0: all).")
    parser.add_argument("--train-tasks", type=int, default=80,
                        help="Train tasks rolled out per iteration (a fresh seeded sample each time; 0: all).")
    parser.add_argument("--demos-per-site", type=int, default=4,
                        help="Oracle demonstrations per train website for the warm start (0: every train task).")
    parser.add_argument("--group-size", type=int, default=2, help="Rollouts per train task per iteration.")
    parser.add_argument("--temperature", type=float, default=0.7, help="Sampling temperature of the rollouts.")
    parser.add_argument("--warm-epochs", type=int, default=30, help="Epochs of the warm start.")
    parser.add_argument("--epochs", type=int, default=8, help="Epochs per iteration.")
    parser.add_argument("--concurrency", type=int, default=4, help="Episodes in flight.")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    for noisy in ("httpx", "sentence_transformers", "webgym.rollout.collect"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    # One thread each for torch (scorer and MiniLM): Chromium needs the other core, and two threads
    # on a busy 2-core machine were 5x slower than one.
    torch.set_num_threads(1)
    if Path(args.out).exists() and any(Path(args.out).iterdir()):
        parser.error(f"{args.out} is not empty: give a fresh --out (the lake would resume old episodes)")
    Path(args.out).mkdir(parents=True, exist_ok=True)
    Experiment(args).run()


if __name__ == "__main__":
    main()
