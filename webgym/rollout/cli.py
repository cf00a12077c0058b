"""`webgym rollout`: run the rollout flow from the command line (progress as periodic counts)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console

console = Console()


def rollout_command(
    ctx: typer.Context,
    iteration: Annotated[int, typer.Option(help="Iteration the episodes belong to (reruns skip finished ones).")] = 0,
    split: Annotated[str, typer.Option(help="train (a batch by difficulty ratio) or test (held-out tasks).")] = "train",
    size: Annotated[int | None, typer.Option(help="Tasks to draw (test: all when unset).")] = 32,
    policy: Annotated[str | None, typer.Option(help="chat, local, scorer, oracle or random (default: the profile's).")] = None,
    checkpoint: Annotated[str | None, typer.Option(help="Checkpoint directory for the policy (local, scorer).")] = None,
    engine: Annotated[str | None, typer.Option(help="async, or the sync baseline (default: the profile's).")] = None,
    concurrency: Annotated[int | None, typer.Option(help="Episodes in flight per shard.")] = None,
    group_size: Annotated[int | None, typer.Option(help="Episodes per task (GRPO groups).")] = None,
    shards: Annotated[int | None, typer.Option(help="Shards across the task runner.")] = None,
) -> None:
    """Roll out the policy on a batch of tasks and record trajectories and steps in the lake."""
    from flows.rollout import run_rollout

    if split not in ("train", "test"):
        raise typer.BadParameter("split must be train or test")
    report = run_rollout(config_path=ctx.obj["config_path"], data_dir=ctx.obj["config"].data_root(),
                         iteration=iteration, split=split, size=size, policy=policy, checkpoint=checkpoint, engine=engine,
                         concurrency=concurrency, group_size=group_size, shards=shards)
    rate = report.steps / report.wall_s if report.wall_s else 0.0
    console.print(f"rollout done: {report.episodes} episodes ({report.skipped} already done), {report.steps} steps, "
                  f"{rate:.2f} steps/s; endings: {report.terminations}")


bench_app = typer.Typer(help="Benchmarks that print figures.", no_args_is_help=True)


@bench_app.command("rollout")
def bench_rollout(
    quick: Annotated[bool, typer.Option(help="Median policy time 0.2 s and fewer episodes (about a minute).")] = False,
    episodes: Annotated[int | None, typer.Option(help="Episodes per engine.")] = None,
    concurrency: Annotated[int | None, typer.Option(help="Episodes in flight (both engines).")] = None,
    median: Annotated[float | None, typer.Option(help="Median policy answer time m in seconds (p95 = 4m).")] = None,
) -> None:
    """Async engine against the synchronous baseline on the synthetic sites; last line `speedup: X.XX`."""
    from dataclasses import replace

    from webgym.rollout.bench import BenchSettings, run_bench

    settings = BenchSettings.quick() if quick else BenchSettings()
    changes = {"episodes": episodes, "concurrency": concurrency, "median_s": median}
    settings = replace(settings, **{k: v for k, v in changes.items() if v is not None})
    console.print(run_bench(settings), highlight=False)
