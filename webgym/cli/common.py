"""What every command group shares: the consoles, the profile and lake of the current command, and
printing a table in the chosen format."""

from __future__ import annotations

import sys
from enum import Enum
from typing import TYPE_CHECKING

import typer
from rich.console import Console
from rich.table import Table

from webgym.config import Config

if TYPE_CHECKING:  # both import pandas and pyarrow: loaded by the commands that use them
    import pandas as pd

    from webgym.lake import Lake


def _stdout_console() -> Console:
    """Rich at the terminal's width; piped or redirected, lines as long as their content, since rich would
    otherwise cut table cells at $COLUMNS (80 by default) and `grep` or a file would get `difficulty_b…`."""
    terminal = Console()
    return terminal if terminal.is_terminal else Console(width=1_000_000)


console = _stdout_console()
err_console = Console(stderr=True, soft_wrap=True)


class OutputFormat(str, Enum):
    table = "table"
    csv = "csv"
    json = "json"


def config_of(ctx: typer.Context) -> Config:
    """The profile the command runs on (loaded once by the main callback)."""
    return ctx.obj["config"]


def config_path_of(ctx: typer.Context) -> str | None:
    """The --config path as given (None: the default profile), for flows that load it themselves."""
    return ctx.obj["config_path"]


def lake_of(ctx: typer.Context, must_exist: bool = False) -> Lake:
    """The command's lake; with `must_exist`, exit 2 naming what to run first when there is none."""
    from webgym.lake import Lake

    lake = Lake(config_of(ctx).lake.data_dir)
    if must_exist and not lake.fs.exists(lake.url()):
        err_console.print(f"[red]no lake at {lake.root}[/red]: run `webgym init` or the main job first, "
                          "or pass --data-dir")
        raise typer.Exit(2)
    return lake


def print_frame(frame: pd.DataFrame, output: OutputFormat) -> None:
    """A frame as a table, CSV or JSON records on stdout."""
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
