"""`webgym ingest` and `webgym taskset ...`: building the task set from benchmark files."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from stages.ingest import ADAPTERS

SOURCES_HELP = "; ".join(f"{a.name}: {a.summary}" for a in ADAPTERS.values())

taskset_app = typer.Typer(help="Build and inspect the task set: dedup, decomposition, split, export.",
                          no_args_is_help=True)


def _mapping(pairs: list[str]) -> dict[str, str]:
    mapping = {}
    for pair in pairs:
        field, sep, column = pair.partition("=")
        if not sep or not field.strip() or not column.strip():
            raise typer.BadParameter(f"--map takes FIELD=COLUMN, got {pair!r}")
        mapping[field.strip()] = column.strip()
    return mapping


def ingest(
    ctx: typer.Context,
    paths: Annotated[list[Path], typer.Argument(help="Task files (and, for WebVoyager, its answer file).",
                                                exists=True, dir_okay=False)],
    source: Annotated[str, typer.Option(help=f"Source format: auto (detected from the file's shape), "
                                             f"or one of: {SOURCES_HELP}.")] = "auto",
    column_map: Annotated[list[str] | None, typer.Option(
        "--map", help="generic source: FIELD=COLUMN (fields: text, id, website, start_url, reference_answer, "
                      "domain, subdomain, difficulty, evaluation). Repeatable.")] = None,
    show_bad: Annotated[int, typer.Option(help="Bad records to print per file.")] = 20,
) -> None:
    """Read benchmark task files into seed_tasks; print per file: records read, ingested, present, bad."""
    from stages.ingest import IngestError, detect_source, seed_tasks_from_files
    from webgym.cli import _lake, console, err_console

    lake = _lake(ctx)
    groups: dict[str, list[str]] = {}
    if source == "auto":
        for path in paths:
            found = detect_source(str(path))
            if found is None:
                err_console.print(f"[red]{escape(str(path))}[/red]: cannot tell which benchmark this file comes from; "
                                  f"pass --source (one of {', '.join(ADAPTERS)})")
                raise typer.Exit(2)
            console.print(f"{escape(str(path))}: source [bold]{found}[/bold] (detected)")
            groups.setdefault(found, []).append(str(path))
    else:
        groups[source] = [str(p) for p in paths]
    existing = set(map(tuple, lake.read_table("seed_tasks", columns=["source", "source_id"]).itertuples(index=False)))
    total_bad = 0
    for name, files in groups.items():
        try:
            result = seed_tasks_from_files(name, files, existing, _mapping(column_map or []))
        except IngestError as error:
            err_console.print(f"[red]{error}[/red]")
            raise typer.Exit(2) from None
        lake.write_table("seed_tasks", result.rows, run_id=f"ingest-{name}")
        for report in result.files:
            console.print(f"{escape(report.file)} ({name}): {report.read} read, {report.ingested} ingested, "
                          f"{report.present} already present, {len(report.bad)} bad")
            for bad in report.bad[:show_bad]:
                console.print(f"  [yellow]bad[/yellow] {escape(str(bad))}", soft_wrap=True)
            if len(report.bad) > show_bad:
                console.print(f"  ... and {len(report.bad) - show_bad} more")
        total_bad += len(result.bad)
    console.print(f"seed_tasks now holds {lake.count('seed_tasks')} rows"
                  + (f"; {total_bad} bad record(s) reported above" if total_bad else ""))


@taskset_app.command()
def dedup(
    ctx: typer.Context,
    threshold: Annotated[float | None, typer.Option(help="Override taskset.dedup.threshold.")] = None,
    eval_source: Annotated[list[str] | None, typer.Option(
        help="Evaluation benchmark whose near-duplicates are dropped (repeatable; overrides "
             "taskset.dedup.eval_sources).")] = None,
) -> None:
    """Find exact and near-duplicate seed tasks; record each dropped task in the duplicates table."""
    for noisy in ("faiss.loader", "sentence_transformers"):  # both announce every load at INFO
        logging.getLogger(noisy).setLevel(logging.WARNING)
    from stages.dedup import duplicate_tasks
    from webgym import PROJECT_ROOT
    from webgym.cli import _config, _lake, console
    from webgym.embeddings import Embedder

    settings = _config(ctx).taskset.dedup
    settings = settings.model_copy(update={k: v for k, v in {"threshold": threshold,
                                                              "eval_sources": eval_source}.items() if v})
    lake = _lake(ctx, must_exist=True)
    seeds = lake.read_table("seed_tasks", columns=["source", "source_id", "text", "website"])
    embedder = Embedder(PROJECT_ROOT / settings.cache_dir, settings.batch_size)
    found = duplicate_tasks(seeds, embedder, settings)
    known = set(map(tuple, lake.read_table("duplicates", columns=["source", "source_id"]).itertuples(index=False)))
    new = found[[(s, i) not in known for s, i in zip(found["source"], found["source_id"], strict=True)]]
    lake.write_table("duplicates", new, run_id="dedup")
    counts = found["kind"].value_counts().to_dict()
    console.print(f"{len(seeds)} seed tasks: {len(seeds) - len(found)} kept, {len(found)} duplicates "
                  f"({', '.join(f'{k} {v}' for k, v in sorted(counts.items())) or 'none'}); "
                  f"{len(new)} new row(s) in duplicates; embedded {embedder.stats.embedded} text(s), "
                  f"{embedder.stats.cached} from the cache")


@taskset_app.command()
def plan(
    ctx: typer.Context,
    rubric_file: Annotated[Path, typer.Argument(help='Rubric JSON as the tasks table stores it: '
                                                     '{"groups": [{"description": ..., "facts": [...]}, ...]}.')],
    cap: Annotated[int | None, typer.Option(help="Most subsets to plan (default taskset.decompose."
                                                 "max_subsets_per_task; 0 for no cap).")] = None,
) -> None:
    """Print WebGym Algorithm 1's decomposition plan of a rubric as JSON (no LLM):
    [{"groups": [indices], "difficulty": n}, ...]."""
    import json

    from pydantic import ValidationError

    from schemas.rubric import Rubric
    from stages.decompose import decomposition_plan
    from webgym.cli import _config, err_console

    try:
        rubric = Rubric.model_validate_json(rubric_file.read_text(encoding="utf-8-sig"))
    except OSError as error:
        err_console.print(f"[red]cannot read {escape(str(rubric_file))}: {escape(str(error))}[/red]")
        raise typer.Exit(2) from None
    except ValidationError as error:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'rubric'}: {e['msg']}" for e in error.errors()[:5])
        err_console.print(f"[red]{escape(str(rubric_file))} is not a rubric ({escape(problems)})[/red]")
        raise typer.Exit(2) from None
    limit = _config(ctx).taskset.decompose.max_subsets_per_task if cap is None else (cap or None)
    typer.echo(json.dumps([s.as_json() for s in decomposition_plan(rubric, limit)]))


@taskset_app.command()
def decompose(ctx: typer.Context) -> None:
    """Add the decomposed tasks of every original task with a rubric (template texts; no LLM)."""
    from stages.decompose import decomposed_tasks
    from webgym.cli import _config, _lake, console

    lake = _lake(ctx, must_exist=True)
    tasks = lake.read_table("tasks")
    children = decomposed_tasks(tasks, _config(ctx).taskset.decompose)
    new = children[~children["task_id"].isin(tasks["task_id"])]
    lake.write_table("tasks", new, run_id="decompose")
    console.print(f"{len(new)} decomposed task(s) added ({len(children) - len(new)} already there) "
                  f"from {children['parent_task_id'].nunique()} parent(s)")


@taskset_app.command()
def stats(ctx: typer.Context) -> None:
    """Print task counts by source, difficulty band (easy 1-3, medium 4-6, hard 7+), domain and split."""
    from webgym import warehouse
    from webgym.cli import OutputFormat, _lake, _print_frame, console

    lake = _lake(ctx, must_exist=True)
    for view, title in (("tasks_by_source", "by source"), ("tasks_by_band", "by difficulty band"),
                        ("tasks_by_domain", "by domain"), ("tasks_by_split", "by split")):
        console.print(f"[bold]tasks {title}[/bold]")
        _print_frame(warehouse.query(lake, f"SELECT * FROM {view}"), OutputFormat.table)


@taskset_app.command()
def export(
    ctx: typer.Context,
    out: Annotated[Path, typer.Option(help="JSON Lines file to write.")],
    format_: Annotated[str, typer.Option("--format", help="Layout: webgym (WebGym's task JSONL).")] = "webgym",
    split: Annotated[str | None, typer.Option(help="Only tasks of this split (train or test).")] = None,
) -> None:
    """Write the tasks table in another harness's task layout (fact groups in evaluator_reference)."""
    import json

    from stages.export import FORMATS
    from webgym.cli import _lake, console, err_console

    if format_ not in FORMATS:
        err_console.print(f"[red]unknown format {format_!r}; formats are {', '.join(FORMATS)}[/red]")
        raise typer.Exit(2)
    tasks = _lake(ctx, must_exist=True).read_table("tasks")
    if split is not None:
        tasks = tasks[tasks["split"] == split]
    records = FORMATS[format_](tasks)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    tmp.replace(out)
    console.print(f"{len(records)} task(s) written to {escape(str(out))} ({format_} layout)")
