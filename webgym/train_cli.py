"""`webgym train`: accept an iteration's steps and train the policy on them (the train flow)."""

from __future__ import annotations

from typing import Annotated, get_args

import typer
from rich.console import Console

console = Console()


def train_command(
    ctx: typer.Context,
    iteration: Annotated[int | None, typer.Option(
        help="Iteration whose judged episodes to learn from (default: the newest in the lake).")] = None,
    objective: Annotated[str | None, typer.Option(
        help="filtered_bc, sft, reinforce or grpo (default: the profile's accept.objective).")] = None,
    iterations_back: Annotated[int | None, typer.Option(
        help="filtered_bc replay buffer: learn from this many latest iterations.")] = None,
    lr: Annotated[float | None, typer.Option(help="Learning rate (default: the profile's).")] = None,
    epochs: Annotated[int | None, typer.Option(help="Epochs (default: the profile's).")] = None,
) -> None:
    """Accept the steps to learn from, train from the newest checkpoint, record the new checkpoint."""
    from flows.evaluate import latest_iteration
    from flows.train import Objective, train

    if objective not in (None, *get_args(Objective)):
        raise typer.BadParameter(f"objective must be one of {', '.join(get_args(Objective))}")
    root = ctx.obj["config"].data_root()
    report = train(iteration=latest_iteration(root) if iteration is None else iteration, objective=objective,
                   iterations_back=iterations_back, learning_rate=lr, epochs=epochs,
                   config_path=ctx.obj["config_path"], data_dir=root)
    state = "already trained" if report.resumed else "trained"
    console.print(f"iteration {report.iteration} ({report.objective}): {report.accepted_steps} accepted steps, "
                  f"{state} {report.checkpoint_id} at {report.path}")
    console.print("  " + ", ".join(f"{k}={v:.4g}" for k, v in report.metrics.items()))
    if report.groups_missing:
        console.print(f"  [yellow]grpo: {report.groups_missing} effective group(s) missing[/yellow]: roll out more")
    for problem in report.problems[:10]:
        console.print(f"  [yellow]skipped[/yellow] {problem}", soft_wrap=True)
