"""`webgym sql`, `webgym warehouse build` and `webgym report`: look at the lake through DuckDB views."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from rich.markup import escape

from webgym.cli.common import OutputFormat, config_of, console, err_console, lake_of, print_frame, print_rows
from webgym.config import warehouse_path

warehouse_app = typer.Typer(help="The DuckDB warehouse over the lake.", no_args_is_help=True)


def sql(
    ctx: typer.Context,
    query: Annotated[str | None, typer.Argument(help="One SQL statement over the lake's tables and views.")] = None,
    output: Annotated[OutputFormat, typer.Option("--format", help="Output format.")] = OutputFormat.table,
    list_views: Annotated[bool, typer.Option("--list", help="List tables and views instead.")] = False,
) -> None:
    """Query the lake with DuckDB, read-only (one SELECT; an in-memory database: never blocked by a running flow)."""
    import duckdb

    from webgym import warehouse

    if list_views:
        print_frame(warehouse.describe(), output)
        return
    if not query:
        err_console.print("[red]give a query[/red], e.g. webgym sql \"SELECT * FROM tasks_by_source\", "
                          "or --list to see the tables and views")
        raise typer.Exit(2)
    try:
        result = warehouse.read_only_query(lake_of(ctx, must_exist=True), query, config_of(ctx).judge)
    except warehouse.ReadOnlyError as error:
        err_console.print(f"[red]refused:[/red] {escape(str(error))}")
        raise typer.Exit(2) from None
    except duckdb.Error as error:
        err_console.print(f"[red]SQL error:[/red] {escape(str(error))}")
        raise typer.Exit(1) from None
    print_rows(result.columns, result.rows, output)


@warehouse_app.command("build")
def warehouse_build(ctx: typer.Context) -> None:
    """Write the lake's warehouse.duckdb (inside a local lake, or warehouse.path) with views over the lake,
    for the DuckDB CLI or DBeaver."""
    from webgym import warehouse

    config = config_of(ctx)
    path = warehouse.build(lake_of(ctx), warehouse_path(config), config.judge)
    console.print(f"warehouse written to {escape(str(path))}")


def report(
    ctx: typer.Context,
    out: Annotated[Path | None, typer.Option(
        help="HTML file to write (default: reports/report.html beside the lake's folder).")] = None,
) -> None:
    """Write a static HTML report with plots from the warehouse views and print its path."""
    from webgym import report as html_report

    lake = lake_of(ctx, must_exist=True)
    path = html_report.write_report(lake, out or html_report.default_path(lake))
    typer.echo(path.resolve())
