"""`webgym export-samples`: accepted steps as training samples in LLaMA-Factory's or Hugging Face's layout."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

OBJECTIVES = ("filtered_bc", "reinforce", "grpo", "sft")
SHOWN_PROBLEMS = 20


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

    from stages.accept import STEP_COLUMNS, accept
    from stages.export import SAMPLE_FORMATS
    from webgym import warehouse
    from webgym.cli import _config, _lake, console, err_console
    from webgym.train.samples import samples_from_lake

    config = _config(ctx)
    objective = objective or config.accept.objective
    if format_ not in SAMPLE_FORMATS or objective not in OBJECTIVES:
        err_console.print(f"[red]--format is one of {', '.join(SAMPLE_FORMATS)} and --objective one of "
                          f"{', '.join(OBJECTIVES)}; got {format_!r} and {objective!r}[/red]")
        raise typer.Exit(2)
    lake = _lake(ctx, must_exist=True)
    accepted = lake.read_table("accepted", filter=(ds.field("iteration") == iteration)
                               & (ds.field("objective") == objective))
    if accepted.empty:
        settings = config.accept.model_copy(update={"objective": objective})
        selection = accept(warehouse.query(lake, "SELECT * FROM verdicts", tuple(config.judge.priority)),
                           lake.read_table("trajectories"), lake.read_table("steps", columns=STEP_COLUMNS),
                           lake.read_table("tasks", columns=["task_id", "split", "website"]), iteration, settings)
        accepted = selection.accepted
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
