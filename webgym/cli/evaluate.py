"""`webgym evaluate`: a checkpoint on the held-out test split, success with 95% intervals by held-out
kind, band and domain."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from webgym.cli.common import config_of, config_path_of, console, writes_lake


def _table(title: str, rows: list[dict], column: str) -> Table:
    table = Table(title=title, title_justify="left")
    for name in (column, "episodes", "successes", "success", "95% interval"):
        table.add_column(name, justify="left" if name == column else "right")
    for row in rows:
        table.add_row(Text(str(row[column])), str(row["episodes"]), str(row["successes"]), f"{row['success_rate']:.1%}",
                      f"{row['ci_low']:.1%} - {row['ci_high']:.1%}")
    return table


@writes_lake
def evaluate_command(
    ctx: typer.Context,
    checkpoint: Annotated[str | None, typer.Option(
        help="Checkpoint directory to evaluate (default: the profile's policy as configured).")] = None,
    iteration: Annotated[int | None, typer.Option(
        help="Iteration the evals rows belong to (default: the newest in the lake).")] = None,
    size: Annotated[int | None, typer.Option(
        help="Held-out tasks per held-out kind, unseen family and unseen site (a seeded sample, the same every "
             "time; default: all of the split).")] = None,
    split: Annotated[str, typer.Option(
        help="test (held out: the headline) or validation (training families never trained on: what promotion "
             "decides on).")] = "test",
) -> None:
    """Roll out a checkpoint greedily on the OOD test split (or the validation split), judge it, record
    evals, print success."""
    from flows.evaluate import evaluate

    if split not in ("test", "validation"):
        raise typer.BadParameter("split must be test or validation")
    report = evaluate(checkpoint=checkpoint, iteration=iteration, size=size, split=split,
                      config_path=config_path_of(ctx), data_dir=config_of(ctx).lake.data_dir)
    low, high = report.interval
    console.print(f"evaluated {escape(', '.join(report.policy_versions)) or 'nothing'} at iteration {report.iteration} "
                  f"(evaluation {report.evaluation}): {report.episodes} episodes, success {report.success_rate:.1%} "
                  f"(95% interval {low:.1%} - {high:.1%})")
    console.print(_table("by held-out kind (family: unseen site family; site: unseen site)", report.by_held_out,
                         "held_out"))
    console.print(_table("by difficulty band", report.by_band, "difficulty_band"))
    console.print(_table("by domain", report.by_domain, "domain"))
