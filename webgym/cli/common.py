"""What every command group shares: the consoles, the profile and lake of the current command, and
printing a table in the chosen format."""

from __future__ import annotations

import csv
import functools
import json
import signal
import sys
from collections.abc import Callable, Sequence
from decimal import Decimal
from enum import Enum
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

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


def exit_on_sigterm() -> None:
    """SIGTERM (a scheduler, systemd, a CI timeout) unwinds the command like Ctrl-C: its finally blocks and atexit
    handlers run, so the servers it started stop with it."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))


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
        err_console.print(f"[red]no lake at {escape(str(lake.root))}[/red]: run `webgym init` or the main job first, "
                          "or pass --data-dir")
        raise typer.Exit(2)
    return lake


P = ParamSpec("P")
R = TypeVar("R")


def writes_lake(command: Callable[P, R]) -> Callable[P, R]:
    """Mark a command that writes the lake: it holds the lake's writer lock while it runs (Lake.writing), and a
    second writer on the same lake exits 75 (try again later) naming the holder. The lock is taken when the
    command's body starts, after its options were parsed, so `--help` and read-only commands never take it. The
    command takes the context as `ctx` (Typer passes every parameter by name)."""

    @functools.wraps(command)
    def holding(*args: P.args, **kwargs: P.kwargs) -> R:
        from webgym.lake import Lake
        from webgym.lake.files import LakeBusy

        ctx: typer.Context = kwargs["ctx"]  # type: ignore[assignment]
        names, outer = [], ctx
        while outer.parent is not None:  # "judge run", without the program's own name
            names.insert(0, outer.info_name)
            outer = outer.parent
        try:
            ctx.with_resource(Lake(outer.obj["config"].lake.data_dir).writing(" ".join(names)))
        except LakeBusy as error:
            err_console.print(f"[red]{escape(str(error))}[/red]")
            raise typer.Exit(75) from None
        return command(*args, **kwargs)

    return holding


def print_rows(columns: Sequence[str], rows: Sequence[Sequence[Any]], output: OutputFormat) -> None:
    """Rows of plain Python values (as DuckDB returns them) as a table, CSV or JSON records on stdout:
    no pandas, so `webgym sql` starts fast. None prints as an empty cell, CSV field or null. Names and values
    are shown as they are: stored text from models and pages ("[/INST]", "[bold]") is not Rich markup."""
    if output is OutputFormat.csv:
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows(["" if v is None else v for v in row] for row in rows)
    elif output is OutputFormat.json:
        records = [dict(zip(columns, row, strict=True)) for row in rows]
        sys.stdout.write(json.dumps(records, default=_json_value, ensure_ascii=False) + "\n")
    else:
        table = Table(show_lines=False)
        for column in columns:
            table.add_column(Text(str(column)))
        for row in rows:
            table.add_row(*[Text("" if v is None else str(v)) for v in row])
        console.print(table)
        console.print(f"({len(rows)} row{'s' if len(rows) != 1 else ''})", style="dim")


def _json_value(value: Any) -> Any:
    """What json cannot write itself: times as ISO 8601, decimals as numbers, NumPy values as Python's."""
    if hasattr(value, "isoformat"):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    if hasattr(value, "tolist"):
        return value.tolist()
    return str(value)


def print_frame(frame: pd.DataFrame, output: OutputFormat) -> None:
    """A frame as a table, CSV or JSON records on stdout (missing values as None, like `print_rows`)."""
    plain = frame.astype(object).where(frame.notna(), None)
    print_rows([str(c) for c in frame.columns], list(plain.itertuples(index=False, name=None)), output)
