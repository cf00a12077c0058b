"""`webgym init`, `webgym quality` and `webgym lake ...`: create, check and maintain the Parquet lake."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape

from webgym.cli.common import config_of, console, err_console, lake_of, writes_lake
from webgym.config import warehouse_path

lake_app = typer.Typer(help="Maintain the Parquet lake.", no_args_is_help=True)


def quality(
    ctx: typer.Context,
    tables: Annotated[list[str] | None, typer.Argument(help="Tables to check (default: all).")] = None,
) -> None:
    """Run the data-quality suites; print each violation with example rows; exit 1 on any."""
    from schemas import SchemaError
    from webgym import quality as dq

    lake = lake_of(ctx, must_exist=True)
    try:
        violations = dq.validate(lake, tables)
    except SchemaError as error:
        err_console.print(f"[red]{escape(str(error))}[/red]")
        raise typer.Exit(2) from None
    for violation in violations:
        console.print(f"[red]FAIL[/red] {escape(str(violation))}")
    if violations:
        console.print(f"[red]{len(violations)} violation(s)[/red]")
        raise typer.Exit(1)
    console.print(f"[green]all data-quality suites passed[/green] ({', '.join(tables or ['all tables'])})")


@writes_lake
def init(ctx: typer.Context) -> None:
    """Create the lake's tables and warehouse.duckdb (idempotent)."""
    from webgym import warehouse

    lake = lake_of(ctx)
    lake.init()
    config = config_of(ctx)
    path = warehouse.build(lake, warehouse_path(config), config.judge)
    console.print(f"lake ready at {escape(str(lake.root))}; warehouse at {escape(str(path))}")


@lake_app.command("compact")
@writes_lake
def lake_compact(
    ctx: typer.Context,
    tables: Annotated[list[str] | None, typer.Argument(help="Tables to compact (default: all).")] = None,
    min_files: Annotated[int | None, typer.Option(help="Only tables with at least this many parts.")] = None,
) -> None:
    """Merge small Parquet parts; prints row counts and checksums before and after."""
    from rich.progress import Progress

    from schemas import TABLES

    lake = lake_of(ctx, must_exist=True)
    threshold = min_files or config_of(ctx).lake.compact_min_files
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
@writes_lake
def lake_recover(ctx: typer.Context) -> None:
    """Commit what crashed writers journaled and finish interrupted compactions."""
    rows = lake_of(ctx, must_exist=True).recover()
    console.print(f"recovered {rows} journaled row(s)")


@lake_app.command("repair")
@writes_lake
def lake_repair(
    ctx: typer.Context,
    tables: Annotated[list[str] | None, typer.Argument(help="Tables to repair (default: all).")] = None,
) -> None:
    """Remove rows whose key repeats (e.g. left by two writers at once), keeping the first; prints counts."""
    from schemas import TABLES

    lake = lake_of(ctx, must_exist=True)
    lake.recover()
    removed = {name: lake.repair(name) for name in tables or list(TABLES)}
    for name, count in removed.items():
        console.print(f"{name}: {count} duplicated row(s) removed, {lake.count(name)} rows kept")
    console.print(f"repaired: {sum(removed.values())} duplicated row(s) removed")
