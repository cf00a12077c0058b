"""The build_taskset flow: ingest -> dedup -> annotate -> decompose -> external -> split, each stage gated on
data quality.

With input files it ingests those; without, it builds the embedded default task set: every goal of
the world's synthetic sites (hand-written and generated from families, `sites.world`), whose exact
rubrics need no LLM, split by the families and sites `taskset.split` holds out. Resumable: ingest
skips records already in seed_tasks, dedup records only new duplicates, annotate skips seeds whose
task is in the lake (and writes batch by batch), decompose only plans tasks not decomposed yet, the external
world's tasks (taskset.miniwob) are added once, and the split is drawn afresh over the whole table (the same draw for the same tasks and seed).

The tasks below are the stages' drivers (read the lake, run the stage, write its table); the
`webgym ingest` and `webgym taskset ...` commands call the same drivers.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal

import pandas as pd
from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE

from flows.gates import quality_gate, recover_lake, retry_unless_misconfigured
from flows.lineage import RUN_HOOKS
from stages.annotate import BadTask, annotated_tasks, asks_llm, pending_seeds
from stages.decompose import LLMTextWriter, new_decomposed_tasks
from stages.dedup import duplicate_tasks, without_duplicates
from stages.external import miniwob_tasks, miniwob_train_ids
from stages.ingest import (FileReport, SeedTaskBatches, TaskFiles, files_by_source, publication_date,
                           seed_task_batches, task_files)
from stages.ingest.known import CONTENT_COLUMNS
from stages.ingest.read import Limits, Record
from stages.revisions import chosen_revisions
from stages.split import assigned_splits, needs_site_table, same_splits, split_counts
from stages.stale import (answers_current, any_to_rewrite, flagged_stale, held_back_by_source, refreshed_seeds,
                          seeds_to_annotate, stale_answers, stale_summary)
from webgym.config import Config, load_config, replaced
from webgym.embeddings import Embedder
from webgym.lake import Lake
from webgym.llm.client import LLM
from webgym.sites import miniwob
from webgym.sites.world import world_of
from webgym.sites.tasks import task_records

log = logging.getLogger(__name__)


@dataclass
class DedupReport:
    """What a dedup run found and wrote."""

    seeds: int
    duplicates: int
    """Seed tasks that are duplicates now, recorded before or by this run."""
    kinds: dict[str, int]
    """Duplicates by kind: exact, near, eval_overlap."""
    new: int
    embedded: int
    cached: int


@dataclass
class AnnotateReport:
    """What an annotate run did."""

    pending: int = 0
    annotated: int = 0
    asked_llm: int = 0
    bad: list[BadTask] = field(default_factory=list)
    llm: str = "no LLM calls"
    stale: dict[str, dict[str, int]] = field(default_factory=dict)
    """Pending seed tasks per source that were stale as of stale_as_of: flagged, and dropped or rewritten."""
    stale_as_of: str = ""


@dataclass
class TasksetReport:
    """What one build did: rows added per stage, the bad records of every stage, the split."""

    ingested: int = 0
    already_ingested: int = 0
    duplicates: int = 0
    """Seed tasks newly recorded as duplicates (they never become tasks)."""
    annotated: int = 0
    asked_llm: int = 0
    """Seed tasks that needed an LLM annotation (each one structured call, retries aside)."""
    decomposed: int = 0
    decomposed_written: dict[str, int] = field(default_factory=dict)
    """Decomposed tasks added, by who wrote their text: llm, template."""
    decompose_problems: list[str] = field(default_factory=list)
    """Decomposed tasks whose LLM text failed (kept with the template text), with why."""
    bad_records: list[str] = field(default_factory=list)
    """'<file>:<line>: reason' (ingest) and '<source>/<source_id>: reason' (annotate); retried next build."""
    splits: dict[str, int] = field(default_factory=dict)
    """Tasks per split after the build: train, test, removed (on a test website but not drawn)."""
    test_websites: int = 0
    """Distinct websites of the test split."""
    llm: str = "no LLM calls"
    """The annotation's (and stale rewrites') LLM calls."""
    stale: dict[str, dict[str, int]] = field(default_factory=dict)
    """Seed tasks annotated now that were stale, per source: flagged, and dropped or rewritten."""
    stale_as_of: str = ""
    """The date staleness was judged on, and what was done: e.g. '2026-11-24, keep'."""
    decompose_llm: str = "no LLM calls"
    """The decomposed texts' LLM calls."""
    external: int = 0
    """MiniWoB++ test tasks added (taskset.miniwob)."""


def _seed_identities(lake: Lake, source: str) -> Iterator[pd.DataFrame]:
    """What ingest compares new records of `source` with: its seed tasks' identity and content, a few
    thousand rows at a time (the index they fill is on disk, stages.ingest.known)."""
    import pyarrow.dataset as ds

    return lake.read_batches("seed_tasks", columns=CONTENT_COLUMNS, filter=ds.field("source") == source)


def _write_seed_tasks(lake: Lake, batches: SeedTaskBatches, config: Config, source: str) -> list[FileReport]:
    """Write each frame of `batches` as a seed_tasks part (stale phrases flagged) as it comes; the reports."""
    for rows in batches.batches:
        lake.write_table("seed_tasks", flagged_stale(rows, config.taskset.stale.day()), run_id=f"ingest-{source}")
    return batches.files


@task(cache_policy=NO_CACHE)
def ingest_inputs(config: Config, inputs: list[str], source: str = "auto", column_map: dict[str, str] | None = None,
                  encoding: str | None = None, published: str | None = None) -> list[FileReport]:
    """Read benchmark task files into seed_tasks, a part per taskset.ingest.batch_rows new rows, in
    bounded memory (bad records reported, the rest ingested). Every file is opened and checked first:
    IngestError, with nothing written, when the request itself is wrong. A file refused part-way (an
    endless stream) or an ingest killed part-way leaves the parts written, and a rerun skips what they
    hold. `published` (YYYY-MM-DD) dates the files' records (stages.ingest); taskset.ingest caps what is read."""
    settings = config.taskset.ingest
    lake = Lake(config.lake.data_dir)
    limits = Limits(max_file_bytes=settings.max_file_bytes, max_whole_file_bytes=settings.max_whole_file_bytes,
                    max_record_bytes=settings.max_record_bytes)
    day = publication_date(published)
    opened = [task_files(name, files, column_map, encoding, day, limits)
              for name, files in files_by_source(inputs, source, encoding, limits).items()]
    reports: list[FileReport] = []
    for files in opened:
        batches = seed_task_batches(files, _seed_identities(lake, files.source), batch_rows=settings.batch_rows,
                                    batch_bytes=settings.batch_bytes)
        reports += _write_seed_tasks(lake, batches, config, files.source)
    return reports


@task(cache_policy=NO_CACHE)
def ingest_synthetic_sites(config: Config) -> list[FileReport]:
    """Every goal of the world's sites (hand-written and generated; webgym/sites/world.py, which
    checks them first and leaves out, reported, those that fail) as seed tasks of source `synthetic`."""
    world = world_of(config.sites)
    for problem in world.problems:
        log.warning("site left out: %s", problem)
    source = "synthetic sites"
    goals = [Record(source, line, record) for line, record in enumerate(task_records(list(world.sites.values())), 1)]
    lake = Lake(config.lake.data_dir)
    return _write_seed_tasks(lake, seed_task_batches(TaskFiles("synthetic", {source: goals}),
                                                     _seed_identities(lake, "synthetic")), config, "synthetic")


@task(cache_policy=NO_CACHE)
def find_duplicates(config: Config) -> DedupReport:
    """Record the exact and near-duplicate seed tasks not recorded yet in the duplicates table;
    embeddings come from (and go to) the cache in taskset.dedup.cache_dir."""
    settings = config.taskset.dedup
    lake = Lake(config.lake.data_dir)
    columns = ["source", "source_id", "revision", "text", "website", "start_url"]
    seeds = chosen_revisions(lake.read_table("seed_tasks", columns=columns), config.taskset.revisions)
    embedder = Embedder(settings.cache_dir, settings.batch_size, precision=settings.precision)
    found = duplicate_tasks(seeds, embedder, settings)
    new = without_duplicates(found, lake.read_table("duplicates", columns=["source", "source_id", "revision"]))
    lake.write_table("duplicates", new, run_id="dedup")
    return DedupReport(len(seeds), len(found), found["kind"].value_counts().to_dict(), len(new),
                       embedder.stats.embedded, embedder.stats.cached)


@task(retries=2, retry_delay_seconds=[5, 30], retry_condition_fn=retry_unless_misconfigured, cache_policy=NO_CACHE)
def annotate_seeds(config: Config) -> AnnotateReport:
    """Annotate every pending seed task into the tasks table, a part per taskset.annotate.batch_size
    tasks (LLM calls where a source lacks something); stale ones (checked again as of
    taskset.stale.as_of) are kept flagged, left out, or first rewritten to a future date, as
    taskset.stale.handle says. A revision whose reference answer was given for an earlier wording
    (stages.stale.stale_answers) is held back until a revision with its own answer comes. Bad records
    are logged and reported, and the next run tries them again."""
    settings, stale, day = config.taskset.annotate, config.taskset.stale, config.taskset.stale.day()
    lake = Lake(config.lake.data_dir)
    every = lake.read_table("seed_tasks")
    seeds = chosen_revisions(every.assign(answer_stale=stale_answers(every)), config.taskset.revisions)
    kept = without_duplicates(seeds, lake.read_table("duplicates", columns=["source", "source_id", "revision"]))
    pending = pending_seeds(kept, lake.read_table("tasks", columns=["task_id"]))
    todo = flagged_stale(answers_current(pending), day)
    report = AnnotateReport(pending=len(todo), stale=stale_summary(todo, stale.handle),
                            stale_as_of=f"{day.isoformat()}, {stale.handle}")
    for source, count in held_back_by_source(pending).items():
        report.stale.setdefault(source, {})["held back (reference answer older than the text)"] = count
    todo = seeds_to_annotate(todo, stale.handle)
    purposes = ([settings.purpose] if asks_llm(todo) else []) + (
        [stale.purpose] if any_to_rewrite(todo, stale.handle) else [])
    llm = LLM(config.llm, lake, run_id="annotate") if purposes else None
    try:
        if llm:
            llm.require(*purposes)
        for start in range(0, len(todo), settings.batch_size):
            batch = todo.iloc[start:start + settings.batch_size]
            if stale.purpose in purposes:
                refreshed = refreshed_seeds(batch, llm, stale, day)
                batch, report.bad = refreshed.rows, report.bad + refreshed.bad
                for source, count in refreshed.by_source.items():
                    report.stale[source]["rewritten"] = report.stale[source].get("rewritten", 0) + count
            result = annotated_tasks(batch, llm, settings)
            lake.write_table("tasks", result.rows, run_id="annotate")
            report.annotated += len(result.rows)
            report.asked_llm += result.asked
            report.bad += result.bad
            for bad in result.bad:
                log.warning("not annotated: %s", bad)
    finally:
        if llm:
            llm.close()
            report.llm = str(llm.ledger.totals)
    return report


@dataclass
class DecomposeReport:
    """What a decompose run added."""

    added: int
    existing: int
    """Decomposed tasks the table held before."""
    parents: int
    """Tasks the added ones were decomposed from."""
    written: dict[str, int] = field(default_factory=dict)
    """Added tasks by who wrote their text: llm, template."""
    problems: list[str] = field(default_factory=list)
    """Tasks whose LLM text failed (they keep the template text), with why."""
    llm: str = "no LLM calls"


@task(cache_policy=NO_CACHE)
def decompose_tasks(config: Config) -> DecomposeReport:
    """Add the decomposed tasks (WebGym Algorithm 1) of tasks not decomposed yet; their texts are written
    by the LLM when an endpoint serves taskset.decompose.purpose (appendix E.6), else by the template."""
    settings = config.taskset.decompose
    lake = Lake(config.lake.data_dir)
    tasks = lake.read_table("tasks")
    llm = LLM(config.llm, lake, run_id="decompose") if config.llm.served(settings.purpose) else None
    writer = LLMTextWriter(llm, settings) if llm else None
    try:
        children = new_decomposed_tasks(tasks, settings, writer)
    finally:
        if llm:
            llm.close()
    lake.write_table("tasks", children, run_id="decompose")
    for problem in writer.problems if writer else []:
        log.warning("%s", problem)
    return DecomposeReport(len(children), int(tasks["parent_task_id"].notna().sum()),
                           int(children["parent_task_id"].nunique()), children["text_writer"].value_counts().to_dict(),
                           writer.problems if writer else [], str(llm.ledger.totals) if llm else "no LLM calls")


@task(cache_policy=NO_CACHE)
def add_external_tasks(config: Config) -> int:
    """Add the MiniWoB++ tasks the profile lists (taskset.miniwob) that the tasks table lacks, their utterances read
    in Chromium; the tasks added."""
    import asyncio

    lake = Lake(config.lake.data_dir)
    tasks = lake.read_table("tasks", columns=["task_id"])
    rows = miniwob_tasks(config.taskset.miniwob, tasks, lambda pairs: asyncio.run(miniwob.seeded_utterances(pairs)))
    if len(rows):
        lake.write_table("tasks", rows, run_id="external")
    return len(rows)


@task(cache_policy=NO_CACHE)
def split_task_set(config: Config) -> tuple[dict[str, int], int]:
    """Draw the OOD split over the whole tasks table and rewrite it when any task's split changed (synthetic
    sites held out by family and by site from the world's site table); tasks per split, test websites."""
    lake = Lake(config.lake.data_dir)
    before = lake.read_table("tasks")
    split = config.taskset.split
    sites = world_of(config.sites).table() if needs_site_table(before, split) else None
    tasks = assigned_splits(before, split, config.taskset.revisions, sites, miniwob_train_ids(config.taskset.miniwob))
    if not same_splits(before, tasks):
        lake.replace_table("tasks", tasks, run_id="split")
    return split_counts(tasks)


def _with_parameters(config: Config, test_websites: int | None, stale: str | None, as_of: str | None) -> Config:
    """The profile with taskset.split.test_websites, taskset.stale.handle and .as_of replaced (None keeps each)."""
    split = replaced(config.taskset.split, test_websites=test_websites)
    stale_settings = replaced(config.taskset.stale, handle=stale, as_of=as_of)
    return config.model_copy(update={"taskset": config.taskset.model_copy(update={"split": split,
                                                                                  "stale": stale_settings})})


def taskset_report(files: list[FileReport], dedup: DedupReport, annotated: AnnotateReport, decomposed: DecomposeReport,
                   split: tuple[dict[str, int], int], external: int = 0) -> TasksetReport:
    """The build's figures from what each stage's driver reported."""
    return TasksetReport(
        ingested=sum(f.ingested for f in files), already_ingested=sum(f.present for f in files),
        duplicates=dedup.new, annotated=annotated.annotated, asked_llm=annotated.asked_llm,
        decomposed=decomposed.added, decomposed_written=decomposed.written, decompose_problems=decomposed.problems,
        decompose_llm=decomposed.llm,
        bad_records=[str(b) for f in files for b in f.bad] + [str(b) for b in annotated.bad],
        splits=split[0], test_websites=split[1], llm=annotated.llm, stale=annotated.stale,
        stale_as_of=annotated.stale_as_of, external=external)


@flow(name="build_taskset", flow_run_name="build-taskset", **RUN_HOOKS)
def build_taskset(inputs: list[str] | None = None, source: str = "auto", column_map: dict[str, str] | None = None,
                  test_websites: int | None = None, stale: Literal["keep", "drop", "rewrite"] | None = None,
                  as_of: str | None = None, config_path: str | None = None, data_dir: str | None = None,
                  encoding: str | None = None, published: str | None = None) -> TasksetReport:
    """Build the task set from `inputs` (benchmark task files read by the `source` adapter, `auto` to
    detect; `column_map` for the generic one; `encoding` for files that are not UTF-8; `published`,
    YYYY-MM-DD, the date their source published them), or, without inputs, from the
    shipped synthetic sites. `test_websites` overrides taskset.split.test_websites, `stale` and
    `as_of` (YYYY-MM-DD) taskset.stale.handle and .as_of; unset parameters come from the profile."""
    config = _with_parameters(load_config(config_path, data_dir), test_websites, stale, as_of)
    lake_root = config.lake.data_dir
    recover_lake(lake_root)
    files = ingest_inputs(config, inputs, source, column_map, encoding, published) if inputs else \
        ingest_synthetic_sites(config)
    quality_gate(lake_root, ["seed_tasks"])
    duplicates = find_duplicates(config)
    quality_gate(lake_root, ["duplicates"])
    annotated = annotate_seeds(config)
    quality_gate(lake_root, ["tasks", "llm_calls"])
    decomposed = decompose_tasks(config)
    quality_gate(lake_root, ["tasks"])
    external = add_external_tasks(config)
    split = split_task_set(config)
    quality_gate(lake_root, ["tasks"])
    report = taskset_report(files, duplicates, annotated, decomposed, split, external)
    for bad in report.bad_records:
        get_run_logger().warning("bad record: %s", bad)
    for problem in report.decompose_problems:
        get_run_logger().warning("%s", problem)
    return report
