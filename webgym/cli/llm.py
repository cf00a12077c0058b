"""`webgym llm ...`: look after the LLM layer's persistent cache."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from webgym.cli.common import config_of, console
from webgym.llm.cache import ResponseCache

llm_app = typer.Typer(help="The LLM layer: answer cache.", no_args_is_help=True)
cache_app = typer.Typer(help="The persistent LLM answer cache (llm.cache_dir).", no_args_is_help=True)
llm_app.add_typer(cache_app, name="cache")


def _cache(ctx: typer.Context) -> ResponseCache:
    return ResponseCache(Path(config_of(ctx).llm.cache_dir))


@cache_app.command("stats")
def cache_stats(ctx: typer.Context) -> None:
    """Entries, hits and size of the cache, per purpose and model."""
    stats = _cache(ctx).stats()
    console.print(f"cache {stats.path}: {stats.entries} entries, {stats.hits} hits, "
                  f"{stats.size_bytes / 1e6:.2f} MB")
    if stats.by_purpose:
        table = Table("purpose", "model", "entries", "hits")
        for purpose, model, entries, hits in stats.by_purpose:
            table.add_row(purpose, model, str(entries), str(hits))
        console.print(table)


@cache_app.command("clear")
def cache_clear(
    ctx: typer.Context,
    purpose: Annotated[str | None, typer.Option(help="Only this purpose's entries (default: all).")] = None,
) -> None:
    """Delete cached answers, so the next calls go to the endpoints again."""
    removed = _cache(ctx).clear(purpose)
    console.print(f"removed {removed} cached answer(s)" + (f" for purpose {purpose!r}" if purpose else ""))
