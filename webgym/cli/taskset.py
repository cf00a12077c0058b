"""`webgym ingest` and `webgym taskset ...`: building the task set from benchmark files."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from stages.ingest import ADAPTERS
from webgym.cli.common import (OutputFormat, config_of, config_path_of, console, err_console, lake_of,
                               print_frame, writes_lake)
from webgym.config import replaced

if TYPE_CHECKING:
    from stages.ingest import FileReport

SOURCES_HELP = "; ".join(f"{a.name}: {a.summary}" for a in ADAPTERS.values())
ENCODING_HELP = ("Text encoding of the input files (e.g. cp1252, latin-1, utf-16) when they are not UTF-8; by default "
                 "files are read as UTF-8 (a BOM names UTF-16/32) and records with invalid bytes are reported.")
PUBLISHED_HELP = ("The date the source published these files (YYYY-MM-DD): which revision of a task is current "
                  "follows it, not the order of ingests. Default: a date in the file name (WebVoyager_data_08312025), "
                  "or the record's own (Online-Mind2Web's <id>_MMDDYY); undated revisions count as the oldest.")

taskset_app = typer.Typer(help="Build and inspect the task set: dedup, annotation, decomposition, split, export.",
                          no_args_is_help=True)


def _mapping(pairs: list[str]) -> dict[str, str]:
    mapping = {}
    for pair in pairs:
        field, sep, column = pair.partition("=")
        if not sep or not field.strip() or not column.strip():
            raise typer.BadParameter(f"--map takes FIELD=COLUMN, got {pair!r}")
        mapping[field.strip()] = column.strip()
    return mapping


def _absolute(paths: list[Path] | None) -> list[str]:
    """Input paths resolved against the current directory (flows and deployments may run elsewhere)."""
    return [os.path.abspath(p) for p in paths or []]


def _print_file_report(report: FileReport, detected: bool, show_bad: int) -> None:
    from stages.ingest import DETECTION_NOTES

    file = escape(report.file)
    if detected:
        note = DETECTION_NOTES.get(report.source)
        console.print(f"{file}: source [bold]{report.source}[/bold] (detected)" + (f"; {escape(note)}" if note else ""))
    revised = f" ({report.revised} new revision(s) of known ids)" if report.revised else ""
    console.print(f"{file} ({report.source}): {report.read} read, {report.ingested} ingested{revised}, "
                  f"{report.present} already present, {report.bad_count} bad")
    by_field: dict[str, tuple[int, int]] = {}  # a source field may land in several columns: its worst count
    for name, count in report.fields.items():
        if not name.endswith("-> raw"):
            field = name.split(" -> ")[0]
            kept, given = by_field.get(field, (count.kept, count.given))
            by_field[field] = (min(kept, count.kept), given)
    kept = [f"{field} {k}/{g}" for field, (k, g) in by_field.items()]
    lost = [f"{name} {c.kept}/{c.given}" for name, c in report.fields.items() if c.kept < c.given]
    if kept:
        console.print(f"  fields kept: {escape(', '.join(kept))}", soft_wrap=True)
    if lost:
        console.print(f"  [yellow]fields not kept[/yellow]: {escape(', '.join(lost))}", soft_wrap=True)
    shown = report.bad[:show_bad]
    for bad in shown:
        console.print(f"  [yellow]bad[/yellow] {escape(str(bad))}", soft_wrap=True)
    if report.bad_count > len(shown):
        console.print(f"  ... and {report.bad_count - len(shown)} more")


def ingest_exit_code(reports: list[FileReport]) -> int:
    """0 when every record was ingested or already present, 1 when some were bad (reported), 2 when
    nothing was ingested nor present (every record bad, or no records)."""
    if not any(r.ingested or r.present for r in reports):
        return 2
    return 1 if any(r.bad for r in reports) else 0


@writes_lake
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
    encoding: Annotated[str | None, typer.Option(help=ENCODING_HELP)] = None,
    published: Annotated[str | None, typer.Option(help=PUBLISHED_HELP)] = None,
) -> None:
    """Read benchmark task files into seed_tasks; print per file: records read, ingested (new revisions of
    known ids among them), already present, bad, and how many records gave and kept each field. Exit
    code 0 when all is well, 1 when some records are bad (reported), 2 when nothing was ingested."""
    import pyarrow.dataset as ds

    from flows.build_taskset import ingest_inputs
    from stages.ingest import IngestError, publication_date
    from stages.stale import stale_counts

    lake = lake_of(ctx)
    try:
        publication_date(published)  # a bad date fails before anything is read
        reports = ingest_inputs.fn(config_of(ctx), _absolute(paths), source, _mapping(column_map or []), encoding,
                                   published)
    except IngestError as error:
        err_console.print(f"[red]{escape(str(error))}[/red]")
        raise typer.Exit(2) from None
    for report in reports:
        _print_file_report(report, source == "auto", show_bad)
    total_bad = sum(report.bad_count for report in reports)
    console.print(f"seed_tasks now holds {lake.count('seed_tasks')} rows"
                  + (f"; {total_bad} bad record(s) reported above" if total_bad else ""))
    flagged = stale_counts(lake.read_table("seed_tasks", columns=["source", "stale_phrase"], filter=(
        ds.field("source_file").isin([report.file for report in reports]) & ds.field("stale_phrase").is_valid())))
    console.print(f"stale tasks in these files (as of {config_of(ctx).taskset.stale.day().isoformat()}): "
                  + (", ".join(f"{source} {n}" for source, n in flagged.items()) or "none"))
    code = ingest_exit_code(reports)
    if code == 2:
        err_console.print("[red]nothing was ingested[/red]: every record is bad (see above); check --source and "
                          "--encoding")
    raise typer.Exit(code)


@taskset_app.command()
@writes_lake
def dedup(
    ctx: typer.Context,
    threshold: Annotated[float | None, typer.Option(help="Override taskset.dedup.threshold.")] = None,
    eval_source: Annotated[list[str] | None, typer.Option(
        help="Evaluation benchmark whose near-duplicates are dropped (repeatable; overrides "
             "taskset.dedup.eval_sources).")] = None,
) -> None:
    """Find exact and near-duplicate seed tasks; record each dropped task in the duplicates table."""
    from flows.build_taskset import find_duplicates

    config = config_of(ctx)
    lake_of(ctx, must_exist=True)
    settings = replaced(config.taskset.dedup, threshold=threshold, eval_sources=eval_source or None)
    result = find_duplicates.fn(config.model_copy(update={
        "taskset": config.taskset.model_copy(update={"dedup": settings})}))
    console.print(f"{result.seeds} seed tasks: {result.seeds - result.duplicates} kept, {result.duplicates} duplicates "
                  f"({', '.join(f'{k} {v}' for k, v in sorted(result.kinds.items())) or 'none'}); "
                  f"{result.new} new row(s) in duplicates; embedded {result.embedded} text(s), "
                  f"{result.cached} from the cache")


@taskset_app.command()
@writes_lake
def annotate(ctx: typer.Context) -> None:
    """Annotate seed tasks not in tasks yet: website, domain, rubric (LLM where the source lacks them)."""
    from flows.build_taskset import annotate_seeds

    lake_of(ctx, must_exist=True)
    summary = annotate_seeds.fn(config_of(ctx))
    console.print(f"{summary.annotated} of {summary.pending} pending seed task(s) annotated, {summary.asked_llm} "
                  f"with the LLM ({summary.llm}); {len(summary.bad)} bad")
    console.print(_stale_line(summary.stale, summary.stale_as_of))
    for bad in summary.bad:
        console.print(f"  [yellow]bad[/yellow] {escape(str(bad))}", soft_wrap=True)


@taskset_app.command()
@writes_lake
def build(
    ctx: typer.Context,
    inputs: Annotated[list[Path] | None, typer.Argument(
        help="Benchmark task files; none: the shipped synthetic sites' goals.", exists=True, dir_okay=False)] = None,
    source: Annotated[str, typer.Option(help="Source format of the inputs (as for `webgym ingest`).")] = "auto",
    column_map: Annotated[list[str] | None, typer.Option(
        "--map", help="generic source: FIELD=COLUMN, as for `webgym ingest`. Repeatable.")] = None,
    test_websites: Annotated[int | None, typer.Option(help="Override taskset.split.test_websites.")] = None,
    encoding: Annotated[str | None, typer.Option(help=ENCODING_HELP)] = None,
    published: Annotated[str | None, typer.Option(help=PUBLISHED_HELP)] = None,
    stale: Annotated[str | None, typer.Option(
        help="Stale tasks (a planned date now past): keep (flagged), drop, or rewrite (the LLM moves the dates "
             "to the future). Overrides taskset.stale.handle.")] = None,
    as_of: Annotated[str | None, typer.Option(
        help="Judge staleness as of this date (YYYY-MM-DD; default today). Overrides taskset.stale.as_of.")] = None,
) -> None:
    """Run the build_taskset flow: ingest -> dedup -> annotate -> decompose -> split, quality-gated."""
    from flows.build_taskset import build_taskset
    from webgym.config import ConfigError, replaced

    try:
        replaced(config_of(ctx).taskset.stale, handle=stale, as_of=as_of)  # a bad value fails before Prefect starts
    except ConfigError as error:
        err_console.print(f"[red]{escape(str(error))}[/red]")
        raise typer.Exit(2) from None
    report = build_taskset(inputs=_absolute(inputs) or None, source=source, column_map=_mapping(column_map or []),
                           test_websites=test_websites, stale=stale, as_of=as_of, config_path=config_path_of(ctx),
                           data_dir=config_of(ctx).lake.data_dir, encoding=encoding, published=published)
    console.print(f"task set built: {report.ingested} seed task(s) ingested ({report.already_ingested} already "
                  f"there), {report.duplicates} new duplicate(s), {report.annotated} annotated ({report.asked_llm} "
                  f"with the LLM: {report.llm}), {report.decomposed} decomposed "
                  f"({_written(report.decomposed_written)}; {report.decompose_llm})")
    for problem in report.decompose_problems:
        console.print(f"  [yellow]template kept[/yellow] {escape(problem)}", soft_wrap=True)
    console.print(_stale_line(report.stale, report.stale_as_of))
    console.print("split: " + ", ".join(f"{k} {v}" for k, v in sorted(report.splits.items()))
                  + f"; {report.test_websites} test website(s)")
    for bad in report.bad_records:
        console.print(f"  [yellow]bad[/yellow] {escape(bad)}", soft_wrap=True)


@taskset_app.command()
def plan(
    ctx: typer.Context,
    rubric_file: Annotated[Path, typer.Argument(help='Rubric JSON as the tasks table stores it: '
                                                     '{"groups": [{"description": ..., "facts": [...]}, ...]}.')],
    cap: Annotated[int | None, typer.Option(help="Most subsets to plan (default taskset.decompose."
                                                 "max_subsets_per_task; 0 for no cap).")] = None,
) -> None:
    """Print WebGym Algorithm 1's decomposition plan of a rubric as JSON (no LLM):
    [{"groups": \\[indices], "difficulty": n}, ...]."""
    import json

    from pydantic import ValidationError

    from schemas.rubric import Rubric
    from stages.decompose import decomposition_plan

    try:
        rubric = Rubric.model_validate_json(rubric_file.read_text(encoding="utf-8-sig"))
    except OSError as error:
        err_console.print(f"[red]cannot read {escape(str(rubric_file))}: {escape(str(error))}[/red]")
        raise typer.Exit(2) from None
    except ValidationError as error:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'rubric'}: {e['msg']}" for e in error.errors()[:5])
        err_console.print(f"[red]{escape(str(rubric_file))} is not a rubric ({escape(problems)})[/red]")
        raise typer.Exit(2) from None
    limit = config_of(ctx).taskset.decompose.max_subsets_per_task if cap is None else (cap or None)
    typer.echo(json.dumps([s.as_json() for s in decomposition_plan(rubric, limit)]))


@taskset_app.command()
@writes_lake
def decompose(ctx: typer.Context) -> None:
    """Add the decomposed tasks of every original task with a rubric not decomposed yet: texts by the LLM
    when an endpoint serves taskset.decompose.purpose, else by the template."""
    from flows.build_taskset import decompose_tasks

    lake_of(ctx, must_exist=True)
    result = decompose_tasks.fn(config_of(ctx))
    console.print(f"{result.added} decomposed task(s) added ({result.existing} already there) "
                  f"from {result.parents} parent(s); texts: {_written(result.written)} ({result.llm})")
    for problem in result.problems:
        console.print(f"  [yellow]template kept[/yellow] {escape(problem)}", soft_wrap=True)


def _stale_line(stale: dict[str, dict[str, int]], as_of: str) -> str:
    """'stale tasks (as of 2026-11-24, keep): webvoyager 66 flagged; ...' per source."""
    per_source = "; ".join(f"{source} " + ", ".join(f"{n} {what}" for what, n in counts.items())
                           for source, counts in sorted(stale.items()))
    return f"stale tasks (as of {as_of}): {per_source or 'none'}"


def _written(counts: dict[str, int]) -> str:
    """'3 by the llm, 2 by the template' from text_writer counts."""
    return ", ".join(f"{n} by the {who}" for who, n in sorted(counts.items())) or "none"


@taskset_app.command()
def stats(ctx: typer.Context) -> None:
    """Print task counts by source, difficulty band (easy 1-3, medium 4-6, hard 7+), domain and split."""
    from webgym import warehouse

    lake = lake_of(ctx, must_exist=True)
    for view, title in (("tasks_by_source", "by source"), ("tasks_by_band", "by difficulty band"),
                        ("tasks_by_domain", "by domain"), ("tasks_by_split", "by split")):
        console.print(f"[bold]tasks {title}[/bold]")
        print_frame(warehouse.query(lake, f"SELECT * FROM {view}"), OutputFormat.table)


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

    if format_ not in FORMATS:
        err_console.print(f"[red]unknown format {format_!r}; formats are {', '.join(FORMATS)}[/red]")
        raise typer.Exit(2)
    tasks = lake_of(ctx, must_exist=True).read_table("tasks")
    if split is not None:
        tasks = tasks[tasks["split"] == split]
    records = FORMATS[format_](tasks)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    tmp.replace(out)
    console.print(f"{len(records)} task(s) written to {escape(str(out))} ({format_} layout)")
