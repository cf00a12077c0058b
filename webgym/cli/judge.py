"""`webgym judge ...`: judge an iteration's trajectories, compare the judges with human labels, show and clear
the blocklist."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from webgym.cli.common import (OutputFormat, config_of, config_path_of, console, err_console, lake_of, print_frame,
                               writes_lake)

judge_app = typer.Typer(help="Judge trajectories (rule gates, exact verifier, reference answers, LLM judges), "
                             "measure the judges against human labels, and show or clear the blocklist.",
                        no_args_is_help=True)

JUDGE_NAMES = "exact, reference, rubric, webjudge, task_only"


@judge_app.command("run")
@writes_lake
def run(
    ctx: typer.Context,
    iteration: Annotated[int, typer.Option(help="Training iteration whose trajectories are judged.")],
    judge: Annotated[list[str] | None, typer.Option(
        help=f"Run only this judge ({JUDGE_NAMES}); repeatable. LLM judges named here run even where a rule "
             "already decided. Default: the profile's judge.judges.")] = None,
    rejudge: Annotated[bool, typer.Option(help="Judge pairs already judged again, adding rows.")] = False,
) -> None:
    """Run the judge flow: every unjudged trajectory of the iteration, then the judgments quality suite."""
    from flows.judge import judge as judge_flow
    from stages.judge.run import plan_judges
    from webgym.config import ConfigError

    try:
        plan_judges(config_of(ctx), judge)  # fail before Prefect starts
        summary = judge_flow(iteration=iteration, judges=judge, rejudge=rejudge, config_path=config_path_of(ctx),
                             data_dir=config_of(ctx).lake.data_dir)
    except ConfigError as error:
        err_console.print(f"[red]{escape(str(error))}[/red]")
        raise typer.Exit(2) from None
    console.print(f"iteration {summary.iteration}: {summary.trajectories} trajectories")
    for (name, outcome), count in sorted(summary.outcomes.items()):
        console.print(f"  {escape(name)}: {count} {escape(outcome)}")
    if not summary.outcomes:
        console.print("  nothing new to judge")
    for name, why in summary.skipped.items():
        console.print(f"  [yellow]{name} skipped[/yellow]: {escape(why)}")
    for problem in summary.problems:
        console.print(f"  [yellow]not judged[/yellow]: {escape(problem)}")
    console.print(f"  {summary.blocked} judgment(s) flagged blocked; {summary.llm}")
    console.print(f"  websites blocklisted now: {escape(', '.join(summary.listed)) or 'none'}")
    console.print("  judgments and blocklist passed their data-quality suites")


@judge_app.command()
def blocklist(
    ctx: typer.Context,
    all_: Annotated[bool, typer.Option("--all", help="Also the websites cleared by `unblock`.")] = False,
    output: Annotated[str, typer.Option("--format", help="Output format: table, csv or json.")] = "table",
) -> None:
    """The websites the sampler skips, each with why (blocked or unreachable), the evidence and its episodes."""
    if output not in OutputFormat.__members__:
        err_console.print(f"[red]unknown format {output!r}; formats are table, csv, json[/red]")
        raise typer.Exit(2)
    rows = lake_of(ctx, must_exist=True).read_table("blocklist")
    rows = rows if all_ else rows[rows["cleared_at"].isna()]
    print_frame(rows[["website", "reason", "tasks", "evidence", "trajectory_ids", "listed_at", "cleared_at"]],
                OutputFormat[output])


@judge_app.command()
@writes_lake
def unblock(
    ctx: typer.Context,
    websites: Annotated[list[str], typer.Argument(help="Listed websites (host names) to clear.")],
) -> None:
    """Clear websites from the blocklist, so the sampler draws their tasks again; only evidence seen from
    now on can list them again."""
    from flows.judge import unblock_websites

    try:
        unblock_websites.fn(config_of(ctx), websites)
    except KeyError as error:
        err_console.print(f"[red]{escape(error.args[0])}; `webgym judge blocklist` lists them[/red]")
        raise typer.Exit(2) from None
    console.print(f"cleared from the blocklist: {escape(', '.join(websites))}")


@judge_app.command("agreement")
def agreement(
    ctx: typer.Context,
    labels: Annotated[Path, typer.Argument(help="CSV with columns trajectory_id and success (human labels).")],
    output: Annotated[str, typer.Option("--format", help="Output format: table, csv or json.")] = "table",
) -> None:
    """Accuracy, precision, recall and F1 of every judge present (and of the verdicts) against human labels."""
    from stages.judge.agreement import LabelError, read_labels
    from stages.judge.agreement import agreement as agreement_table
    from webgym import warehouse

    if output not in OutputFormat.__members__:
        err_console.print(f"[red]unknown format {output!r}; formats are table, csv, json[/red]")
        raise typer.Exit(2)
    try:
        read = read_labels(labels)
    except LabelError as error:
        err_console.print(f"[red]{escape(str(error))}[/red]")
        raise typer.Exit(2) from None
    for bad in read.bad:
        err_console.print(f"[yellow]bad label[/yellow] {escape(bad)}")
    lake = lake_of(ctx, must_exist=True)
    verdicts = warehouse.query(lake, warehouse.verdicts_sql(config_of(ctx).judge))
    table = agreement_table(read.frame, lake.read_table("judgments"), verdicts)
    print_frame(table.round(3), OutputFormat[output])
    if output == "table":
        console.print(f"{len(read.frame)} label(s) read, {len(read.bad)} bad")
