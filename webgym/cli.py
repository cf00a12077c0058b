"""The `webgym` command. Every subcommand has --help; global options come before the subcommand."""

from __future__ import annotations

import logging
import sys
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.logging import RichHandler
from rich.progress import Progress
from rich.table import Table

from webgym.config import Config, ConfigError, load_config
from webgym.judge_cli import judge_app
from webgym.lake import Lake
from webgym.llm.cli import llm_app
from webgym.models.cli import models_app
from webgym.prefect_env import configure_prefect
from webgym.evaluate_cli import evaluate_command
from webgym.export_cli import export_samples_command
from webgym.rollout.cli import bench_app, rollout_command
from webgym.serve.cli import serve_command
from webgym.server_cli import server_command
from webgym.train_cli import train_command
from webgym.sites.cli import sites_app
from webgym.taskset_cli import ingest, taskset_app

app = typer.Typer(help="WebGym pipeline: task sets, rollouts, judging and training of web agents.",
                  no_args_is_help=True, pretty_exceptions_enable=False)
lake_app = typer.Typer(help="Maintain the Parquet lake.", no_args_is_help=True)
warehouse_app = typer.Typer(help="The DuckDB warehouse over the lake.", no_args_is_help=True)
app.add_typer(lake_app, name="lake")
app.add_typer(warehouse_app, name="warehouse")
app.add_typer(llm_app, name="llm")
app.add_typer(taskset_app, name="taskset")
app.add_typer(models_app, name="models")
app.add_typer(judge_app, name="judge")
app.add_typer(sites_app, name="sites")
app.command()(ingest)
app.command("rollout")(rollout_command)
app.command("evaluate")(evaluate_command)
app.command("export-samples")(export_samples_command)
app.command("train")(train_command)
app.add_typer(bench_app, name="bench")
app.command("serve")(serve_command)
app.command("server")(server_command)

console = Console()
err_console = Console(stderr=True, soft_wrap=True)
log = logging.getLogger("webgym")


class OutputFormat(str, Enum):
    table = "table"
    csv = "csv"
    json = "json"


def _config(ctx: typer.Context) -> Config:
    return ctx.obj["config"]


def _lake(ctx: typer.Context, must_exist: bool = False) -> Lake:
    config = _config(ctx)
    lake = Lake(config.data_root())
    if must_exist and not lake.fs.exists(lake.url()):
        err_console.print(f"[red]no lake at {lake.root}[/red]: run `webgym init` or the main job first, "
                          "or pass --data-dir")
        raise typer.Exit(2)
    return lake


@app.callback()
def main(
    ctx: typer.Context,
    config: Annotated[Path | None, typer.Option(help="Profile YAML (default configs/local.yaml).")] = None,
    data_dir: Annotated[str | None, typer.Option(
        help="Lake root, path or fsspec URL (default: env WEBGYM_DATA, else the profile's lake.data_dir).")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Debug logging.")] = False,
) -> None:
    logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO, format="%(message)s",
                        handlers=[RichHandler(console=err_console, show_path=False)], force=True)
    for noisy in ("httpx", "httpx2", "openai", "great_expectations", "prefect", "filelock", "fsspec"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    configure_prefect()
    try:
        ctx.obj = {"config": load_config(config, {"lake.data_dir": data_dir} if data_dir else None),
                   "config_path": str(config) if config else None}
    except ConfigError as error:
        err_console.print(f"[red]{error}[/red]")
        raise typer.Exit(2) from None


def _print_frame(frame, output: OutputFormat) -> None:
    if output is OutputFormat.csv:
        sys.stdout.write(frame.to_csv(index=False))
    elif output is OutputFormat.json:
        sys.stdout.write(frame.to_json(orient="records", date_format="iso", force_ascii=False) + "\n")
    else:
        table = Table(*[str(c) for c in frame.columns], show_lines=False)
        for row in frame.itertuples(index=False):
            table.add_row(*["" if v is None else str(v) for v in row])
        console.print(table)
        console.print(f"({len(frame)} row{'s' if len(frame) != 1 else ''})", style="dim")


@app.command()
def sql(
    ctx: typer.Context,
    query: Annotated[str | None, typer.Argument(help="One SQL statement over the lake's tables and views.")] = None,
    output: Annotated[OutputFormat, typer.Option("--format", help="Output format.")] = OutputFormat.table,
    list_views: Annotated[bool, typer.Option("--list", help="List tables and views instead.")] = False,
) -> None:
    """Query the lake with DuckDB (an in-memory database: never blocked by a running flow)."""
    import duckdb

    from webgym import warehouse

    if list_views:
        _print_frame(warehouse.describe(), output)
        return
    if not query:
        err_console.print("[red]give a query[/red], e.g. webgym sql \"SELECT * FROM tasks_by_source\", "
                          "or --list to see the tables and views")
        raise typer.Exit(2)
    try:
        frame = warehouse.query(_lake(ctx, must_exist=True), query, tuple(_config(ctx).judge.priority))
    except duckdb.Error as error:
        err_console.print(f"[red]SQL error:[/red] {error}")
        raise typer.Exit(1) from None
    _print_frame(frame, output)


@app.command()
def quality(
    ctx: typer.Context,
    tables: Annotated[list[str] | None, typer.Argument(help="Tables to check (default: all).")] = None,
) -> None:
    """Run the data-quality suites; print each violation with example rows; exit 1 on any."""
    from schemas import SchemaError
    from webgym import quality as dq

    lake = _lake(ctx, must_exist=True)
    try:
        violations = dq.validate(lake, tables)
    except SchemaError as error:
        err_console.print(f"[red]{error}[/red]")
        raise typer.Exit(2) from None
    for violation in violations:
        console.print(f"[red]FAIL[/red] {violation}")
    if violations:
        console.print(f"[red]{len(violations)} violation(s)[/red]")
        raise typer.Exit(1)
    console.print(f"[green]all data-quality suites passed[/green] ({', '.join(tables or ['all tables'])})")


@app.command()
def init(ctx: typer.Context) -> None:
    """Create the lake's tables and warehouse.duckdb (idempotent)."""
    from webgym import warehouse

    lake = _lake(ctx)
    lake.init()
    path = warehouse.build(lake, _config(ctx).warehouse_path(), tuple(_config(ctx).judge.priority))
    console.print(f"lake ready at {lake.root}; warehouse at {path}")


@lake_app.command("compact")
def lake_compact(
    ctx: typer.Context,
    tables: Annotated[list[str] | None, typer.Argument(help="Tables to compact (default: all).")] = None,
    min_files: Annotated[int | None, typer.Option(help="Only tables with at least this many parts.")] = None,
) -> None:
    """Merge small Parquet parts; prints row counts and checksums before and after."""
    from schemas import TABLES

    lake = _lake(ctx, must_exist=True)
    threshold = min_files or _config(ctx).lake.compact_min_files
    names = tables or list(TABLES)
    with Progress(console=err_console, transient=True) as progress:
        for name in progress.track(names, description="compacting"):
            result = lake.compact(name, threshold)
            same = result.rows_before == result.rows_after and result.checksum_before == result.checksum_after
            console.print(f"{name}: {result.files_before} -> {result.files_after} files, "
                          f"{result.rows_after} rows, checksum {'unchanged' if same else 'CHANGED'}")
            if not same:
                raise typer.Exit(1)


@lake_app.command("recover")
def lake_recover(ctx: typer.Context) -> None:
    """Commit what crashed writers journaled and finish interrupted compactions."""
    rows = _lake(ctx, must_exist=True).recover()
    console.print(f"recovered {rows} journaled row(s)")


@warehouse_app.command("build")
def warehouse_build(ctx: typer.Context) -> None:
    """Write warehouse.duckdb with views over the lake, for the DuckDB CLI or DBeaver."""
    from webgym import warehouse

    path = warehouse.build(_lake(ctx), _config(ctx).warehouse_path(), tuple(_config(ctx).judge.priority))
    console.print(f"warehouse written to {path}")


@app.command()
def report(
    ctx: typer.Context,
    out: Annotated[Path | None, typer.Option(
        help="HTML file to write (default: reports/report.html beside the lake's folder).")] = None,
) -> None:
    """Write a static HTML report with plots from the warehouse views and print its path."""
    from webgym import report as html_report

    lake = _lake(ctx, must_exist=True)
    path = html_report.write_report(lake, out or html_report.default_path(lake), _config(ctx).profile)
    typer.echo(path.resolve())


NIGHTLY_QUERIES = (
    "SELECT iteration, checkpoint, split, difficulty_band, episodes, success_rate FROM eval_success_by_band",
    "SELECT iteration, difficulty_band, trajectories, success_rate FROM success_by_band",
    "SELECT t.website, count(*) AS episodes, avg(v.success::INT) AS success FROM trajectories tr "
    "JOIN verdicts v USING (trajectory_id) JOIN tasks t USING (task_id) GROUP BY ALL ORDER BY success",
)


@app.command()
def nightly(
    ctx: typer.Context,
    iterations: Annotated[int | None, typer.Option(help="Iterations this run (default: the profile's).")] = None,
) -> None:
    """Run the nightly flow: task set, then rollout -> judge -> accept -> train -> serve -> evaluate, report."""
    from flows.nightly import nightly as nightly_flow

    summary = nightly_flow(iterations=iterations, config_path=ctx.obj["config_path"], data_dir=_config(ctx).data_root())
    console.print(f"[bold]nightly finished[/bold] on {summary.data_root}")
    if summary.recovered_rows:
        console.print(f"  recovered {summary.recovered_rows} journaled row(s) of an interrupted run")
    if summary.baseline_success is not None:
        console.print(f"  untrained policy: held-out success {summary.baseline_success:.1%}")
    for it in summary.iterations:
        rollout = "-" if it.rollout_success is None else f"{it.rollout_success:.1%}"
        console.print(f"  iteration {it.iteration} ({it.kind}): {it.episodes} episodes, success {rollout}; "
                      f"{it.accepted_steps} accepted steps -> {it.checkpoint_id}; held-out success "
                      f"{it.eval_success:.1%} on {it.eval_episodes} episodes")
    console.print("  all data-quality suites passed; rows: " + ", ".join(f"{k}={v}" for k, v in summary.rows.items()))
    console.print(f"  warehouse: {summary.warehouse}")
    console.print(f"  report: {summary.report}")
    console.print("  try:")
    for sql in NIGHTLY_QUERIES:
        console.print(f'    .venv/bin/webgym sql "{sql}"', soft_wrap=True, highlight=False)


def run() -> None:
    """Entry point that turns configuration and schema errors into clear one-line messages."""
    from schemas import SchemaError

    try:
        app()
    except (ConfigError, SchemaError) as error:
        err_console.print(f"[red]{error}[/red]")
        sys.exit(2)


if __name__ == "__main__":
    run()
