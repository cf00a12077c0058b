"""`webgym sites ...`: serve the synthetic sites, list them, print oracle paths, replay them in
Chromium, export their goals as tasks."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.markup import escape

from schemas.values import HORIZONS, difficulty_band
from webgym.cli.common import config_of, err_console

if TYPE_CHECKING:  # the site machinery loads when a command runs, not for every `webgym` call
    from webgym.config import SitesConfig
    from webgym.sites.site import Site
    from webgym.sites.world import World

sites_app = typer.Typer(help="Synthetic verifiable websites: FSM specs served as real sites, with exact goals.",
                        no_args_is_help=True)
console = Console(soft_wrap=True)
"""Oracle paths and replay lines are long: soft-wrapped, never cut."""


def _settings(ctx: typer.Context) -> SitesConfig:
    return config_of(ctx).sites


def _world(ctx: typer.Context) -> World:
    from webgym.sites.expr import SpecError
    from webgym.sites.world import world_of

    try:
        return world_of(_settings(ctx))
    except SpecError as error:
        err_console.print(f"[red]invalid site family[/red]\n{escape(str(error))}")
        raise typer.Exit(2) from None


def _sites(ctx: typer.Context, names: list[str] | None = None, everything: bool = False) -> dict[str, Site]:
    """The named sites (hand-written, or generated sites of the world), every site of the world, or by
    default the hand-written sites of sites.specs_dir."""
    from webgym.sites.expr import SpecError
    from webgym.sites.site import load_sites

    if everything:
        return dict(_world(ctx).sites)
    settings = _settings(ctx)
    try:
        known = load_sites(settings.specs_dir, None, settings.max_states, settings.cache_dir)
    except SpecError as error:
        err_console.print(f"[red]invalid site spec[/red]\n{escape(str(error))}")
        raise typer.Exit(2) from None
    if any(name not in known for name in names or []) and settings.world.instances:
        known = {**_world(ctx).sites, **known}
    unknown = [name for name in names or [] if name not in known]
    if unknown:
        err_console.print(f"[red]unknown site(s) {', '.join(unknown)}; sites are {', '.join(sorted(known))}[/red]")
        raise typer.Exit(2)
    return {name: known[name] for name in names} if names else known


@sites_app.command("list")
def list_sites(ctx: typer.Context) -> None:
    """One site of the world a line: family, name, host name, goals by band, and its status: train, held
    out (with its family, or as a site; taskset.split), or left out with the reason. Exit 1 when a site
    is left out."""
    from stages.split import held_out_sites

    config = config_of(ctx)
    world = _world(ctx)
    try:
        held_out = held_out_sites(world.table(), config.taskset.split)
    except ValueError as error:
        err_console.print(f"[red]{escape(str(error))}[/red]")
        raise typer.Exit(2) from None
    for name, site in sorted(world.sites.items(), key=lambda item: (world.family(item[0]), item[0])):
        bands = [site.band(goal.id) for goal in site.spec.goals]
        counts = ", ".join(f"{bands.count(band)} {band}" for band in HORIZONS)
        kind = held_out.get(site.spec.hostname)
        status = f"held out ({kind})" if kind else "train"
        console.print(f"{world.family(name):<12} {name:<16} {site.spec.hostname:<24} {len(site.spec.goals):>3} goals: "
                      f"{counts:<28} {status}", highlight=False)
    for problem in world.problems:
        console.print(f"[red]left out[/red] {problem}", highlight=False)
    families = len(world.families())
    console.print(f"{len(world.sites)} site(s) of {families} famil{'y' if families == 1 else 'ies'}, {world.goals} "
                  f"goals; {len(world.problems)} left out", highlight=False)
    if world.problems:
        raise typer.Exit(1)


@sites_app.command("paths")
def paths(
    ctx: typer.Context,
    site: Annotated[str, typer.Argument(help="Site name, e.g. shop-a.")],
    subsets: Annotated[bool, typer.Option(help="Also the goals WebGym's decomposition makes (subsets of fact groups).")] = False,
) -> None:
    """Print the shortest oracle path of every goal of a site (each ends with the answer)."""
    from stages.decompose import decomposition_plan
    from webgym.sites.expr import SpecError
    from webgym.sites.search import SearchLimit
    from webgym.sites.site import search_paths

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
                console.print(f"[red]{goal.id}: {escape(str(error))}[/red]")
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
    sites: Annotated[list[str] | None, typer.Argument(
        help="Sites to check, hand-written or generated (default: the hand-written sites).")] = None,
    everything: Annotated[bool, typer.Option("--all", help="Every site of the world (sites.world), generated "
                                                           "ones included.")] = False,
    concurrency: Annotated[int | None, typer.Option(help="Goals replayed at once (default: sites.replay_concurrency).")] = None,
) -> None:
    """Replay every oracle path of the sites in Chromium; the verifier must confirm every goal. Ends with a
    summary line; exit 1 on any mismatch."""
    from webgym.sites.expr import SpecError
    from webgym.sites.replay import verify_sites
    from webgym.sites.search import SearchLimit
    from webgym.sites.site import search_paths

    settings = _settings(ctx)
    started = time.monotonic()
    loaded = _sites(ctx, sites, everything)
    total = sum(len(site.spec.goals) for site in loaded.values())
    searched = search_paths(list(loaded.values()), settings.search_workers)
    for site in loaded.values():
        try:
            site.validate()
        except (SpecError, SearchLimit) as error:
            err_console.print(f"[red]{escape(str(error))}[/red]")
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
    from webgym.sites.expr import SpecError
    from webgym.sites.search import SearchLimit
    from webgym.sites.site import search_paths
    from webgym.sites.tasks import export_tasks, llm_rephraser

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
        err_console.print(f"[red]{escape(str(error))}[/red]")
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


@sites_app.command("write")
def write(
    ctx: typer.Context,
    description: Annotated[str, typer.Argument(help='What the family is, e.g. "a library catalogue with holds and '
                                                     'renewals".')],
    attempts: Annotated[int, typer.Option(help="Answers asked for (each rejected one is fed back with its "
                                               "problems).")] = 3,
    replay_goals: Annotated[int, typer.Option(help="Goals of each checked site replayed in Chromium.")] = 1,
) -> None:
    """Have the LLM (llm.endpoints.sites, else llm.default) write a site family, check it as the world checks
    its sites (spec, oracle paths, replay), feed the problems back, and save it to sites.world.families_dir
    only if it passes."""
    from webgym.config import ConfigError
    from webgym.lake import Lake
    from webgym.llm.client import LLM
    from webgym.sites.writer import FamilyNotWritten, write_family

    config = config_of(ctx)
    try:
        with LLM(config.llm, Lake(config.lake.data_dir), run_id="sites-write") as llm:
            written = write_family(llm, description, directory=config.sites.world.families_dir, attempts=attempts,
                                   max_states=config.sites.max_states, replay_goals=replay_goals)
    except (FamilyNotWritten, ConfigError) as error:
        err_console.print(f"[red]{escape(str(error))}[/red]")
        raise typer.Exit(1) from None
    for answer, problems in enumerate(written.rejected, start=1):
        console.print(f"answer {answer} rejected: " + "; ".join(problems), highlight=False)
    console.print(f"family {written.family.family} written to {written.path} (answer {written.answers} of "
                  f"{attempts} passed its checks)", highlight=False)
