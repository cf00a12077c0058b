"""The build_taskset flow: ingest -> dedup -> annotate -> decompose -> split, each stage gated on data quality.

With input files it ingests those; without, it builds the embedded default task set: every goal of
the shipped synthetic sites (as `webgym sites export-tasks` writes them), whose exact rubrics need no
LLM, split by the held-out sites of `taskset.split.held_out_websites`. Resumable: ingest skips records
already in seed_tasks, dedup records only new duplicates, annotate skips seeds whose task is in the
lake (and writes batch by batch), decompose only plans tasks not decomposed yet, and the split is
drawn afresh over the whole table (the same draw for the same tasks and seed).
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE

from flows.gates import quality_gate, recover_lake, retry_unless_misconfigured
from stages.annotate import AnnotateSummary, annotate_lake
from stages.decompose import new_decomposed_tasks
from stages.dedup import dedup_lake
from stages.ingest import IngestResult, ingest_files
from stages.split import assigned_splits
from webgym import PROJECT_ROOT
from webgym.config import Config, load_config
from webgym.lake import Lake
from webgym.sites.site import load_sites, search_paths
from webgym.sites.tasks import export_tasks


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
    bad_records: list[str] = field(default_factory=list)
    """'<file>:<line>: reason' (ingest) and '<source>/<source_id>: reason' (annotate); retried next build."""
    splits: dict[str, int] = field(default_factory=dict)
    """Tasks per split after the build: train, test, removed (on a test website but not drawn)."""
    test_websites: int = 0
    """Distinct websites of the test split."""
    llm: str = "no LLM calls"


def _ingest_report(results: dict[str, IngestResult]) -> TasksetReport:
    files = [f for result in results.values() for f in result.files]
    return TasksetReport(ingested=sum(f.ingested for f in files), already_ingested=sum(f.present for f in files),
                         bad_records=[str(b) for f in files for b in f.bad])


@task(cache_policy=NO_CACHE)
def ingest_inputs(data_root: str, inputs: list[str], source: str, column_map: dict[str, str]) -> TasksetReport:
    """Read benchmark task files into seed_tasks (bad records reported, the rest ingested)."""
    return _ingest_report(ingest_files(Lake(data_root), inputs, source, column_map))


@task(cache_policy=NO_CACHE)
def ingest_synthetic_sites(config: Config) -> TasksetReport:
    """Export every goal of the shipped synthetic sites and ingest them as source `synthetic`."""
    settings = config.sites
    sites = list(load_sites(PROJECT_ROOT / settings.specs_dir, max_states=settings.max_states,
                            cache_dir=PROJECT_ROOT / settings.cache_dir if settings.cache_dir else None).values())
    search_paths(sites, settings.search_workers)
    with tempfile.TemporaryDirectory(prefix="webgym-sites-") as folder:
        path = Path(folder) / "synthetic-tasks.jsonl"
        export_tasks(sites, path)
        return _ingest_report(ingest_files(Lake(config.data_root()), [str(path)], "synthetic"))


@task(cache_policy=NO_CACHE)
def find_duplicates(config: Config) -> int:
    """Record exact and near-duplicate seed tasks in the duplicates table; the count of new ones."""
    return dedup_lake(Lake(config.data_root()), config.taskset.dedup).new


@task(retries=2, retry_delay_seconds=[5, 30], retry_condition_fn=retry_unless_misconfigured, cache_policy=NO_CACHE)
def annotate_seeds(config: Config) -> AnnotateSummary:
    """Annotate pending seed tasks into tasks (LLM calls where needed; resumable batch by batch)."""
    return annotate_lake(Lake(config.data_root()), config)


@task(cache_policy=NO_CACHE)
def decompose_tasks(config: Config) -> int:
    """Add the decomposed tasks (WebGym Algorithm 1, template texts) of tasks not decomposed yet."""
    lake = Lake(config.data_root())
    children = new_decomposed_tasks(lake.read_table("tasks"), config.taskset.decompose)
    lake.write_table("tasks", children, run_id="decompose")
    return len(children)


@task(cache_policy=NO_CACHE)
def split_task_set(config: Config) -> tuple[dict[str, int], int]:
    """Draw the OOD split over the whole tasks table and rewrite it; tasks per split, test websites."""
    lake = Lake(config.data_root())
    tasks = assigned_splits(lake.read_table("tasks"), config.taskset.split)
    lake.replace_table("tasks", tasks, run_id="split")
    counts = tasks["split"].fillna("removed").value_counts().to_dict()
    return counts, tasks.loc[tasks["split"] == "test", "website"].nunique()


@flow(name="build_taskset")
def build_taskset(inputs: list[str] | None = None, source: str = "auto", column_map: dict[str, str] | None = None,
                  test_websites: int | None = None, config_path: str | None = None,
                  data_dir: str | None = None) -> TasksetReport:
    """Build the task set from `inputs` (benchmark task files read by the `source` adapter, `auto` to
    detect; `column_map` for the generic one), or, without inputs, from the shipped synthetic sites.
    `test_websites` overrides taskset.split.test_websites; unset parameters come from the profile."""
    overrides = {"lake.data_dir": data_dir, "taskset.split.test_websites": test_websites}
    config = load_config(config_path, {k: v for k, v in overrides.items() if v is not None})
    root = config.data_root()
    recover_lake(root)
    if inputs:
        report = ingest_inputs(root, inputs, source, column_map or {})
    else:
        report = ingest_synthetic_sites(config)
    quality_gate(root, ["seed_tasks"])
    report.duplicates = find_duplicates(config)
    quality_gate(root, ["duplicates"])
    annotated = annotate_seeds(config)
    quality_gate(root, ["tasks", "llm_calls"])
    report.decomposed = decompose_tasks(config)
    quality_gate(root, ["tasks"])
    report.splits, report.test_websites = split_task_set(config)
    quality_gate(root, ["tasks"])
    report.annotated, report.asked_llm, report.llm = annotated.annotated, annotated.asked_llm, annotated.llm
    report.bad_records += [str(bad) for bad in annotated.bad]
    for bad in report.bad_records:
        get_run_logger().warning("bad record: %s", bad)
    return report
