"""Data-quality suites: great-expectations checks per table, derived from schemas/ plus the
cross-table rules of the data model. `webgym quality` and every flow run the same `validate`.

Per table: every part's file schema fits the table schema; required columns are non-null; keys
are unique; declared bounds and enum values hold; references point at existing rows. On tasks,
also: difficulty = number of facts, no website in both splits (no task family, in an external world whose
pages share a host), decomposed tasks share their parent's split, and exact checks line up with facts.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

import schemas
from schemas import TABLES, TableSchema, schema_for
from schemas.values import EXTERNAL_SOURCES
from webgym.held_out import test_lines
from webgym.lake import Lake

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Violation:
    """One failed expectation, with example offending rows identified by their keys."""

    table: str
    check: str
    unexpected: int
    examples: list[dict] = field(default_factory=list)

    def __str__(self) -> str:
        lines = [f"{self.table}: {self.check} failed ({self.unexpected} row(s))"]
        lines += [f"    e.g. {example}" for example in self.examples]
        return "\n".join(lines)


class QualityError(RuntimeError):
    """A table broke its data-quality suite; the message lists every violation."""

    def __init__(self, violations: list[Violation]) -> None:
        self.violations = violations
        super().__init__("data-quality violations:\n" + "\n".join(str(v) for v in violations))


@dataclass
class _Check:
    """Expectations over one frame (a table, or a frame derived from tables for a rule)."""

    table: str
    frame: pd.DataFrame
    expectations: list
    index_columns: list[str]


def _schema_checks(schema: TableSchema, frame: pd.DataFrame, lake_frames: dict[str, pd.DataFrame]) -> _Check:
    import great_expectations.expectations as gxe

    expectations: list = []
    for f in schema.arrow:
        if not f.nullable:
            expectations.append(gxe.ExpectColumnValuesToNotBeNull(column=f.name))
        low, high = schema.bounds(f.name)
        if low is not None or high is not None:
            expectations.append(gxe.ExpectColumnValuesToBeBetween(column=f.name, min_value=low, max_value=high))
        allowed = schema.enum_values(f.name)
        if allowed:
            expectations.append(gxe.ExpectColumnValuesToBeInSet(column=f.name, value_set=allowed))
    if len(schema.keys) == 1:
        expectations.append(gxe.ExpectColumnValuesToBeUnique(column=schema.keys[0]))
    else:
        expectations.append(gxe.ExpectCompoundColumnsToBeUnique(column_list=list(schema.keys)))
    for column, target in schema.references.items():
        table, target_column = target.split(".")
        values = lake_frames[table][target_column].dropna().unique().tolist()
        expectations.append(gxe.ExpectColumnValuesToBeInSet(column=column, value_set=values))
    return _Check(schema.name, frame, expectations, list(schema.keys))


def _task_rule_checks(tasks: pd.DataFrame) -> list[_Check]:
    import great_expectations.expectations as gxe

    keys = ["task_id"]
    with_rubric = tasks[tasks["rubric"].notna()]
    n_facts = with_rubric.assign(
        rubric_facts=[sum(len(g["facts"]) for g in r["groups"]) for r in with_rubric["rubric"]],
        checks_fit_facts=[all(g.get("checks") is None or len(g["checks"]) == len(g["facts"])
                              for g in r["groups"]) for r in with_rubric["rubric"]])
    split_of = tasks.set_index("task_id")["split"].to_dict()
    children = tasks[tasks["parent_task_id"].notna()]
    children = children.assign(parent_split=[split_of.get(p) for p in children["parent_task_id"]])
    own = tasks[~tasks["source"].isin(EXTERNAL_SOURCES)]
    external = tasks[tasks["source"].isin(EXTERNAL_SOURCES)]
    test_websites, test_families = (sorted(line) for line in test_lines(tasks))
    return [
        _Check("tasks", n_facts[["task_id", "difficulty", "rubric_facts", "checks_fit_facts"]], [
            gxe.ExpectColumnPairValuesToBeEqual(column_A="difficulty", column_B="rubric_facts"),
            gxe.ExpectColumnValuesToBeInSet(column="checks_fit_facts", value_set=[True]),
        ], keys),
        _Check("tasks", own.loc[own["split"].isin(["train", "validation"]), ["task_id", "website"]], [
            gxe.ExpectColumnValuesToNotBeInSet(column="website", value_set=test_websites),
        ], keys),
        _Check("tasks", external.loc[external["split"].isin(["train", "validation"]), ["task_id", "family"]], [
            gxe.ExpectColumnValuesToNotBeInSet(column="family", value_set=test_families),
        ], keys),
        _Check("tasks", children[["task_id", "split", "parent_split"]], [
            gxe.ExpectColumnPairValuesToBeEqual(column_A="split", column_B="parent_split"),
        ], keys),
    ]


def _file_schema_violations(lake: Lake, schema: TableSchema) -> list[Violation]:
    """Parts whose stored column types cannot be read as the table's types."""
    bad = []
    expected = schema.arrow
    for part in lake.parts(schema.name):
        with lake.fs.open(part, "rb") as handle:
            stored = pq.read_schema(handle)
        for f in stored:
            if f.name not in expected.names:
                bad.append({"file": part, "column": f.name, "problem": "not in the schema"})
            elif not _castable(f.type, expected.field(f.name).type):
                bad.append({"file": part, "column": f.name,
                            "problem": f"stored as {f.type}, schema says {expected.field(f.name).type}"})
    if not bad:
        return []
    return [Violation(schema.name, "part files match the schema", len(bad), bad[:5])]


def _castable(stored: pa.DataType, expected: pa.DataType) -> bool:
    """Whether a stored column type reads losslessly as the schema's type."""
    if stored.equals(expected) or pa.types.is_null(stored):
        return True
    if pa.types.is_integer(stored):
        return pa.types.is_integer(expected) or pa.types.is_floating(expected)
    if pa.types.is_floating(stored):
        return pa.types.is_floating(expected)
    return pa.types.is_timestamp(stored) and pa.types.is_timestamp(expected)


def _describe(config) -> str:
    kwargs = {k: v for k, v in config.kwargs.items() if k not in ("batch_id", "result_format")}
    for key in ("value_set",):
        if key in kwargs and len(kwargs[key]) > 5:
            kwargs[key] = f"<{len(kwargs[key])} values>"
    args = ", ".join(f"{k}={v}" for k, v in kwargs.items())
    return f"{config.type}({args})"


def _run(checks: list[_Check], examples: int) -> list[Violation]:
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    # GX pins this module's logger at INFO and announces a temporary docs folder on every context.
    logging.getLogger("great_expectations.data_context.types.base").setLevel(logging.WARNING)
    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    source = context.data_sources.add_pandas("lake")
    violations = []
    for i, check in enumerate(checks):
        if check.frame.empty or not check.expectations:
            continue
        name = f"{check.table}_{i}"
        batch = source.add_dataframe_asset(name).add_batch_definition_whole_dataframe("all")
        suite = context.suites.add(gx.ExpectationSuite(name=name, expectations=check.expectations))
        definition = context.validation_definitions.add(gx.ValidationDefinition(name=name, data=batch, suite=suite))
        result = definition.run(
            batch_parameters={"dataframe": check.frame.reset_index(drop=True)},
            result_format={"result_format": "COMPLETE", "unexpected_index_column_names": check.index_columns})
        for outcome in result.results:
            if outcome.success:
                continue
            details = outcome.result or {}
            rows = details.get("unexpected_index_list") or []
            count = details.get("unexpected_count") or len(rows) or 1
            error = (outcome.exception_info or {}).get("exception_message")
            listed = [dict(r) for r in rows[:examples]] if rows else ([{"error": error}] if error else [])
            violations.append(Violation(check.table, _describe(outcome.expectation_config), count, listed))
    return violations


def validate(lake: Lake, tables: Iterable[str] | None = None, examples: int = 5) -> list[Violation]:
    """Run the suites of the named tables (all by default); return every violation found."""
    names = list(tables) if tables else list(TABLES)
    for name in names:
        schema_for(name)
    violations: list[Violation] = []
    frames: dict[str, pd.DataFrame] = {}
    readable = []
    for name in names:
        file_problems = _file_schema_violations(lake, schema_for(name))
        violations += file_problems
        if not file_problems:
            readable.append(name)
    needed = set(readable) | {t.split(".")[0] for n in readable for t in schema_for(n).references.values()}
    for name in needed:
        frames[name] = lake.read_table(name)
    checks = [_schema_checks(schema_for(n), frames[n], frames) for n in readable]
    if "tasks" in readable and not frames["tasks"].empty:
        checks += _task_rule_checks(frames["tasks"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        violations += _run(checks, examples)
    return violations


@functools.cache
def _suites_version() -> str:
    """A digest of the code the suites derive from (this module and schemas/), so a release that changes
    a check or a schema checks every table again once."""
    digest = hashlib.sha256()
    for source in [Path(__file__), *sorted(Path(schemas.__file__).parent.glob("*.py"))]:
        digest.update(source.name.encode() + b"\0" + source.read_bytes())
    return digest.hexdigest()


def _fingerprint(lake: Lake, name: str) -> str:
    """What a table's suite reads: its parts and those of the tables it references, under this version of
    the suites. Parts are immutable and uniquely named, so an equal fingerprint means the same verdict."""
    digest = hashlib.sha256(_suites_version().encode())
    for table in [name, *sorted({t.split(".")[0] for t in schema_for(name).references.values()})]:
        digest.update(f"\0{table}:".encode() + "\0".join(p.rsplit("/", 1)[-1] for p in lake.parts(table)).encode())
    return digest.hexdigest()


def assert_quality(lake: Lake, tables: Iterable[str] | None = None) -> None:
    """Raise QualityError when any suite fails: what flows call after each stage. A table is checked only
    when its fingerprint differs from the one it last passed with (remembered in the lake's quality
    directory), so a night's gates read what its stages wrote, not the whole lake every time."""
    names = list(tables) if tables else list(TABLES)
    passed_dir = lake.quality_dir()
    prints = {name: _fingerprint(lake, name) for name in names}
    changed = [name for name in names
               if not (passed_dir / name).is_file() or (passed_dir / name).read_text() != prints[name]]
    if not changed:
        return
    violations = validate(lake, changed)
    failed = {v.table for v in violations}
    passed_dir.mkdir(parents=True, exist_ok=True)
    for name in changed:
        if name not in failed:
            tmp = passed_dir / f".{name}.{os.getpid()}.tmp"
            tmp.write_text(prints[name])
            tmp.replace(passed_dir / name)
    if violations:
        raise QualityError(violations)
