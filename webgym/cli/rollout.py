"""`webgym rollout` (the rollout flow, progress as periodic counts) and `webgym bench rollout`."""

from __future__ import annotations

import subprocess
import sys
from typing import Annotated

import typer

from webgym.cli.common import config_of, config_path_of, console, writes_lake
from webgym.config import project_path


@writes_lake
def rollout_command(
    ctx: typer.Context,
    iteration: Annotated[int, typer.Option(help="Iteration the episodes belong to (reruns skip finished ones).")] = 0,
    split: Annotated[str, typer.Option(help="train (a batch by difficulty ratio), validation (promotion checks) or test "
                                                "(held-out tasks).")] = "train",
    size: Annotated[int | None, typer.Option(
        help="Tasks to draw (default: 32 of train; every task of validation or test).")] = None,
    policy: Annotated[str | None, typer.Option(help="chat, local, scorer, oracle or random (default: the profile's).")] = None,
    checkpoint: Annotated[str | None, typer.Option(help="Checkpoint directory for the policy (local, scorer).")] = None,
    engine: Annotated[str | None, typer.Option(help="async, or the sync baseline (default: the profile's).")] = None,
    concurrency: Annotated[int | None, typer.Option(help="Episodes in flight per shard.")] = None,
    group_size: Annotated[int | None, typer.Option(help="Episodes per task (GRPO groups).")] = None,
    shards: Annotated[int | None, typer.Option(help="Shards across the task runner.")] = None,
    task: Annotated[list[str] | None, typer.Option(
        help="A task id of the split to roll out instead of a drawn batch (repeat for several).")] = None,
) -> None:
    """Roll out the policy on a batch of tasks and record trajectories and steps in the lake."""
    from flows.rollout import run_rollout

    if split not in ("train", "validation", "test"):
        raise typer.BadParameter("split must be train, validation or test")
    if size is None and split == "train":
        size = 32
    report = run_rollout(config_path=config_path_of(ctx), data_dir=config_of(ctx).lake.data_dir,
                         iteration=iteration, split=split, size=size, policy=policy, checkpoint=checkpoint,
                         engine=engine, concurrency=concurrency, group_size=group_size, shards=shards, tasks=task)
    rate = report.steps / report.wall_s if report.wall_s else 0.0
    console.print(f"rollout done: {report.episodes} episodes ({report.skipped} already done), {report.steps} steps, "
                  f"{rate:.2f} steps/s; endings: {report.terminations}")


bench_app = typer.Typer(help="Benchmarks that print figures.", no_args_is_help=True)


@bench_app.command("rollout")
def bench_rollout(
    quick: Annotated[bool, typer.Option(help="Median policy time 0.2 s and fewer episodes (about a minute).")] = False,
    episodes: Annotated[int | None, typer.Option(help="Episodes per engine.")] = None,
    concurrency: Annotated[int | None, typer.Option(help="Episodes in flight (both engines).")] = None,
    capacity: Annotated[int | None, typer.Option(help="Requests the stand-in serves at once.")] = None,
    median: Annotated[float | None, typer.Option(help="Median policy answer time m in seconds (p95 = 4m).")] = None,
) -> None:
    """Async engine against the synchronous baseline on the synthetic sites (benchmarks/rollout.py); last line
    `speedup: X.XX`."""
    options = {"--episodes": episodes, "--concurrency": concurrency, "--capacity": capacity, "--median": median}
    arguments = ["--quick"] * quick + [str(part) for name, value in options.items() if value is not None
                                       for part in (name, value)]
    done = subprocess.run([sys.executable, str(project_path("benchmarks/rollout.py")), *arguments], check=False)
    raise typer.Exit(done.returncode)
