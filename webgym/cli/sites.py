"""`webgym sites ...`: serve the synthetic sites, list them, print oracle paths, replay them in
Chromium, export their goals as tasks."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from schemas.values import HORIZONS, difficulty_band
from stages.decompose import decomposition_plan
from webgym.cli.common import config_of, err_console
from webgym.config import SitesConfig
from webgym.sites.expr import SpecError
from webgym.sites.search import SearchLimit
from webgym.sites.site import Site, load_sites, search_paths
from webgym.sites.tasks import export_tasks

sites_app = typer.Typer(help="Synthetic verifiable websites: FSM specs served as real sites, with exact goals.",
                        no_args_is_help=True)
console = Console(soft_wrap=True)
"""Oracle paths and replay lines are long: soft-wrapped, never cut."""


def _settings(ctx: typer.Context) -> SitesConfig:
    return config_of(ctx).sites


def _sites(ctx: typer.Context, names: list[str] | None = None) -> dict[str, Site]:
    settings = _settings(ctx)
    try:
        return load_sites(settings.specs_dir, names, settings.max_states, settings.cache_dir)
    except SpecError as error:
        err_console.print(f"[red]invalid site spec[/red]\n{error}")
        raise typer.Exit(2) from None


@sites_app.command("list")
def list_sites(ctx: typer.Context) -> None:
    """One site a line: name, host name, domain, number of goals and how many fall in each band."""
    for site in _sites(ctx).values():
        spec = site.spec
        bands = [site.band(goal.id) for goal in spec.goals]
        counts = ", ".join(f"{bands.count(band)} {band}" for band in HORIZONS)
        console.print(f"{spec.name:<12} {spec.hostname:<22} {spec.domain:<10} {len(spec.goals)} goals: {counts}",
                      highlight=False)


@sites_app.command("paths")
def paths(
    ctx: typer.Context,
    site: Annotated[str, typer.Argument(help="Site name, e.g. shop-a.")],
    subsets: Annotated[bool, typer.Option(help="Also the goals WebGym's decomposition makes (subsets of fact groups).")] = False,
) -> None:
    """Print the shortest oracle path of every goal of a site (each ends with the answer)."""
    loaded = _sites(ctx, [site])[site]
    search_paths([loaded], _settings(ctx).search_workers)
    for goal in loaded.spec.goals:
        choices: list[tuple[int, ...] | None] = [None]
        if subsets:
            choices += [tuple(s.groups) for s in decomposition_plan(loaded.rubric(goal.id))]
        for groups in choices:
            rubric = loaded.rubric(goal.id)
            facts = sum(len(g.facts) for i, g in enumerate(rubric.groups) if groups is None or i in groups)
            try:
                plan = loaded.oracle_path(goal.id, groups)
            except (SpecError, SearchLimit) as error:
                console.print(f"[red]{goal.id}: {error}[/red]")
                raise typer.Exit(1) from None
            label = goal.id if groups is None else f"{goal.id} groups {list(groups)}"
            band = difficulty_band(facts)
            console.print(f"[bold]{label}[/bold] ({facts} facts, {band}, limit {HORIZONS[band]}): "
                          f"{plan.length} steps, {plan.explored} states explored", highlight=False)
            for n, step in enumerate(plan.steps, start=1):
                console.print(f"  {n:>2}. {step}", highlight=False)


@sites_app.command("verify")
def verify(
    ctx: typer.Context,
    sites: Annotated[list[str] | None, typer.Argument(help="Sites to check (default: all).")] = None,
    concurrency: Annotated[int | None, typer.Option(help="Goals replayed at once (default: sites.replay_concurrency).")] = None,
) -> None:
    """Replay every oracle path in Chromium; the verifier must confirm every goal. Exit 1 on any mismatch."""
    from webgym.sites.replay import verify_sites

    settings = _settings(ctx)
    started = time.monotonic()
    loaded = _sites(ctx, sites)
    total = sum(len(site.spec.goals) for site in loaded.values())
    searched = search_paths(list(loaded.values()), settings.search_workers)
    for site in loaded.values():
        try:
            site.validate()
        except (SpecError, SearchLimit) as error:
            err_console.print(f"[red]{error}[/red]")
            raise typer.Exit(1) from None
    found = time.monotonic()
    results = verify_sites(list(loaded.values()), concurrency=concurrency or settings.replay_concurrency,
                           shots=Path(settings.reports_dir))
    for result in results:
        mark = "[green]ok[/green]  " if result.ok else "[red]FAIL[/red]"
        line = f"{mark} {result.site:<12} {result.goal:<34} {result.steps:>2} steps {result.seconds:5.1f} s"
        if not result.ok:
            line += f"\n       {result.message}" + (f"\n       screenshot: {result.screenshot}" if result.screenshot else "")
        console.print(line, highlight=False)
    failed = [r for r in results if not r.ok]
    replayed = time.monotonic()
    console.print(f"{len(results) - len(failed)}/{len(results)} oracle paths confirmed in Chromium on {len(loaded)} "
                  f"site(s) in {replayed - started:.0f} s (oracle search {found - started:.0f} s: {searched} of "
                  f"{total} path(s) searched, the rest from the cache; replay {replayed - found:.0f} s)",
                  highlight=False)
    if failed:
        raise typer.Exit(1)


@sites_app.command("export-tasks")
def export(
    ctx: typer.Context,
    path: Annotated[Path, typer.Argument(help="JSONL file to write (format: webgym/sites/tasks.py).")],
    sites: Annotated[list[str] | None, typer.Option("--site", help="Only these sites (repeatable).")] = None,
    rephrase: Annotated[bool, typer.Option(
        help="Have the LLM (llm.endpoints.site-tasks, else llm.default) reword each task text.")] = False,
) -> None:
    """Write every goal as one JSON line: the file the `synthetic` ingest adapter reads."""
    from webgym.config import ConfigError
    from webgym.lake import Lake
    from webgym.sites.tasks import llm_rephraser

    config = config_of(ctx)
    loaded = list(_sites(ctx, sites).values())
    search_paths(loaded, _settings(ctx).search_workers)
    try:
        if rephrase:
            from webgym.llm.client import LLM

            with LLM(config.llm, Lake(config.lake.data_dir), run_id="sites-export") as llm:
                count = export_tasks(loaded, path, llm_rephraser(llm))
        else:
            count = export_tasks(loaded, path)
    except (SpecError, SearchLimit, ConfigError) as error:
        err_console.print(f"[red]{error}[/red]")
        raise typer.Exit(1) from None
    console.print(f"wrote {count} task(s) to {path}")


@sites_app.command("serve")
def serve(
    ctx: typer.Context,
    port: Annotated[int | None, typer.Option(help="Port (default: sites.port).")] = None,
    sites: Annotated[list[str] | None, typer.Option("--site", help="Only these sites (repeatable).")] = None,
) -> None:
    """Serve the sites on 127.0.0.1, each under its host name, until interrupted."""
    from webgym.browser import host_rules
    from webgym.sites.server import SiteServer

    settings = _settings(ctx)
    server = SiteServer(_sites(ctx, sites), settings.host, settings.port if port is None else port)
    for hostname, target in server.host_map().items():
        console.print(f"http://{hostname}/  ->  {target}", highlight=False)
    console.print(f'open them in Chromium with --host-resolver-rules="{host_rules(server.host_map())}"', highlight=False)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.httpd.server_close()
