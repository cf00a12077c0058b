"""`webgym train` (accept an iteration's steps and train the policy on them: the train flow) and
`webgym export-samples` (the accepted steps as training samples for other stacks)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, get_args

import typer
from rich.markup import escape

from webgym.cli.common import config_of, config_path_of, console, err_console, lake_of, writes_lake
from webgym.config import Objective

SHOWN_PROBLEMS = 20
OBJECTIVES = get_args(Objective)


@writes_lake
def train_command(
    ctx: typer.Context,
    iteration: Annotated[int | None, typer.Option(
        help="Iteration whose judged episodes to learn from (default: the newest in the lake).")] = None,
    objective: Annotated[str | None, typer.Option(
        help="filtered_bc, sft, reinforce, grpo or dagger (default: the profile's accept.objective).")] = None,
    iterations_back: Annotated[int | None, typer.Option(
        help="filtered_bc and dagger replay buffer: learn from this many latest iterations.")] = None,
    lr: Annotated[float | None, typer.Option(help="Learning rate (default: the profile's).")] = None,
    epochs: Annotated[int | None, typer.Option(help="Epochs (default: the profile's).")] = None,
) -> None:
    """Accept the steps to learn from, train from the newest checkpoint, record the new checkpoint."""
    from flows.evaluate import newest_iteration
    from flows.train import train

    if objective not in (None, *OBJECTIVES):
        raise typer.BadParameter(f"objective must be one of {', '.join(OBJECTIVES)}")
    config = config_of(ctx)
    report = train(iteration=newest_iteration.fn(config) if iteration is None else iteration, objective=objective,
                   iterations_back=iterations_back, learning_rate=lr, epochs=epochs,
                   config_path=config_path_of(ctx), data_dir=config.lake.data_dir)
    state = "already trained" if report.resumed else "trained"
    console.print(f"iteration {report.iteration} ({report.objective}): {report.accepted_steps} accepted steps, "
                  f"{state} {report.checkpoint_id} at {escape(str(report.path))}")
    console.print("  " + ", ".join(f"{k}={v:.4g}" for k, v in report.metrics.items()))
    if report.groups_missing:
        console.print(f"  [yellow]grpo: {report.groups_missing} effective group(s) missing[/yellow]: roll out more")
    for problem in report.problems[:10]:
        console.print(f"  [yellow]skipped[/yellow] {escape(problem)}", soft_wrap=True)


def export_samples_command(
    ctx: typer.Context,
    out: Annotated[Path, typer.Argument(help="Output folder (new or empty).")],
    iteration: Annotated[int, typer.Option(help="Training iteration whose accepted steps are exported.")],
    format_: Annotated[str, typer.Option("--format", help="sharegpt (LLaMA-Factory: JSON, PNG files, "
                                                          "dataset_info.json) or hf (a datasets folder).")] = "hf",
    objective: Annotated[str | None, typer.Option(
        help=f"Objective of the accepted rows ({', '.join(OBJECTIVES)}); default: the profile's "
             "accept.objective.")] = None,
) -> None:
    """Export an iteration's accepted steps as training samples: the messages the policy saw, its response.

    The accepted table's rows of that iteration and objective; without any, the steps the profile's accept
    settings select now (not stored)."""
    import pyarrow.dataset as ds

    from flows.train import acceptance
    from webgym.config import replaced
    from webgym.train.export import SAMPLE_FORMATS
    from webgym.train.samples import samples_from_lake

    config = config_of(ctx)
    objective = objective or config.accept.objective
    if objective == "dagger":
        err_console.print("[red]dagger's lessons are the oracle's labels of scorer steps, not text responses: "
                          "export another objective's samples[/red]")
        raise typer.Exit(2)
    if format_ not in SAMPLE_FORMATS or objective not in OBJECTIVES:
        err_console.print(f"[red]--format is one of {', '.join(SAMPLE_FORMATS)} and --objective one of "
                          f"{', '.join(OBJECTIVES)}; got {format_!r} and {objective!r}[/red]")
        raise typer.Exit(2)
    lake = lake_of(ctx, must_exist=True)
    accepted = lake.read_table("accepted", filter=(ds.field("iteration") == iteration)
                               & (ds.field("objective") == objective))
    if accepted.empty:
        settings = config.model_copy(update={"accept": replaced(config.accept, objective=objective)})
        accepted = acceptance(settings, iteration).accepted
        console.print(f"no stored accepted rows for iteration {iteration} ({objective}): selected "
                      f"{len(accepted)} step(s) now with the profile's accept settings (not stored)")
    samples, problems = samples_from_lake(lake, accepted, config.policy.context)
    for problem in problems[:SHOWN_PROBLEMS]:
        err_console.print(f"[yellow]skipped[/yellow] {escape(problem)}")
    if not samples:
        err_console.print(f"[red]no samples to export for iteration {iteration} ({objective})[/red]")
        raise typer.Exit(1)
    name = f"webgym_{objective}_iter{iteration}"
    try:
        result = SAMPLE_FORMATS[format_](samples, out, name)
    except (FileExistsError, ValueError) as error:
        err_console.print(f"[red]{escape(str(error))}[/red]")
        raise typer.Exit(2) from None
    for problem in result.skipped[:SHOWN_PROBLEMS]:
        err_console.print(f"[yellow]skipped[/yellow] {escape(problem)}")
    console.print(f"{result.samples} sample(s) with {result.images} image(s) written to {escape(str(out))} "
                  f"({format_} layout); {len(problems) + len(result.skipped)} skipped")
    if format_ == "sharegpt":
        console.print(f"LLaMA-Factory: dataset_dir: {escape(str(out))}, dataset: {name}, mask_history: true")
    else:
        console.print(f"datasets.load_from_disk({escape(repr(str(out)))})")
