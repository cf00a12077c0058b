"""Ingest: task files of public benchmarks -> seed_tasks rows, one adapter per source format.

`seed_tasks_from_files` reads every record, converts it with the source's adapter and returns
the new rows plus a report per file; a broken record is reported with file and line and the
rest go on. Rows whose (source, source_id) the caller says exist already are not added again.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from pydantic import ValidationError

from schemas.seed_tasks import SCHEMA, SeedTask
from stages.ingest.adapter import Adapter, RecordError, Where
from stages.ingest.agentsynth import AGENTSYNTH
from stages.ingest.browsecomp import BROWSECOMP
from stages.ingest.deepshop import DEEPSHOP
from stages.ingest.gaia import GAIA
from stages.ingest.generic import GENERIC
from stages.ingest.insta import INSTA
from stages.ingest.mind2web2 import MIND2WEB2
from stages.ingest.mind2web_live import MIND2WEB_LIVE
from stages.ingest.online_mind2web import ONLINE_MIND2WEB
from stages.ingest.read import BadRecord, Record, read_records
from stages.ingest.synthetic import SYNTHETIC
from stages.ingest.travelplanner import TRAVELPLANNER
from stages.ingest.webarena import WEBARENA
from stages.ingest.webgym import WEBGYM
from stages.ingest.webvoyager import PAE, WEBVOYAGER

ADAPTERS: dict[str, Adapter] = {a.name: a for a in (
    INSTA, PAE, AGENTSYNTH, BROWSECOMP, TRAVELPLANNER, MIND2WEB_LIVE, ONLINE_MIND2WEB, DEEPSHOP, MIND2WEB2,
    GAIA, WEBVOYAGER, WEBARENA, WEBGYM, SYNTHETIC, GENERIC)}
"""Every source format by its --source name."""

DETECTION_ORDER = ("synthetic", "webgym", "webarena", "browsecomp", "gaia", "deepshop", "webvoyager",
                   "online-mind2web", "mind2web-live", "mind2web2", "travelplanner", "agentsynth", "insta")
"""`--source auto` tries these shape tests in order (most specific first). PAE shares WebVoyager's
layout and the generic adapter needs a mapping, so neither is ever picked automatically."""


class IngestError(ValueError):
    """The request itself is wrong (unknown source, unreadable mapping); nothing was ingested."""


@dataclass
class FileReport:
    """What happened to one file's records: read = ingested + already present + bad."""

    file: str
    source: str
    read: int = 0
    ingested: int = 0
    present: int = 0
    bad: list[BadRecord] = field(default_factory=list)


@dataclass
class IngestResult:
    rows: pd.DataFrame
    files: list[FileReport]

    @property
    def bad(self) -> list[BadRecord]:
        return [b for f in self.files for b in f.bad]


def adapter_for(source: str) -> Adapter:
    try:
        return ADAPTERS[source]
    except KeyError:
        raise IngestError(f"unknown source {source!r}; sources are auto, {', '.join(ADAPTERS)}") from None


def detect_source(path: str, sample: int = 5) -> str | None:
    """The adapter whose shape test accepts the file's first readable records, None if none does."""
    records = (r for r in read_records(path) if isinstance(r, Record) and isinstance(r.data, dict))
    for record in itertools.islice(records, sample):
        for name in DETECTION_ORDER:
            if ADAPTERS[name].recognises(record.data):
                return name
    return None


def files_by_source(paths: list[str], source: str = "auto") -> dict[str, list[str]]:
    """The files to read with each adapter: all with `source`, or each with the adapter `detect_source`
    picks (IngestError naming a file whose shape no adapter recognises)."""
    if source != "auto":
        adapter_for(source)
        return {source: list(paths)}
    groups: dict[str, list[str]] = {}
    for path in paths:
        found = detect_source(path)
        if found is None:
            raise IngestError(f"{path}: cannot tell which benchmark this file comes from; "
                              f"pass --source (one of {', '.join(ADAPTERS)})")
        groups.setdefault(found, []).append(path)
    return groups


def seed_tasks_from_files(source: str, paths: list[str], existing: set[tuple[str, str]] | None = None,
                          mapping: dict[str, str] | None = None,
                          now: dt.datetime | None = None) -> IngestResult:
    """One row per new seed task read from `paths` with the `source` adapter, plus a report per file
    (`seed_tasks_from_records` over each task file's records). IngestError when the request itself is
    wrong (the adapter cannot prepare the files: a missing answer file, a bad mapping)."""
    adapter = adapter_for(source)
    try:
        task_files, context = adapter.prepare([str(p) for p in paths], mapping or {})
    except (ValueError, OSError) as error:
        raise IngestError(str(error)) from None
    return seed_tasks_from_records(source, {path: read_records(path) for path in task_files}, existing, context, now)


def seed_tasks_from_records(source: str, files: dict[str, Iterable[Record | BadRecord]],
                            existing: set[tuple[str, str]] | None = None, context: Any = None,
                            now: dt.datetime | None = None) -> IngestResult:
    """One row per new seed task among the records of `files` (name -> records as read), converted by
    the `source` adapter with its `context`, plus a report per file.

    `existing` holds (source, source_id) keys already in the lake; records with those keys count
    as present. A repeated id in the batch is present when its text is the same, bad otherwise.
    """
    adapter = adapter_for(source)
    now = now or dt.datetime.now(dt.UTC)
    seen: dict[str, tuple[str, str]] = {}  # source_id -> (text, where)
    rows: list[dict[str, Any]] = []
    reports = []
    for path, records in files.items():
        report = FileReport(path, source)
        reports.append(report)
        for item in records:
            if isinstance(item, BadRecord):
                if item.line is not None:  # a record; None means the whole file failed
                    report.read += 1
                report.bad.append(item)
                continue
            report.read += 1
            try:
                row = _seed_row(adapter, item, context, now)
            except (RecordError, ValidationError) as error:
                report.bad.append(BadRecord(item.file, item.line, _reason(error)))
                continue
            key = row["source_id"]
            if (source, key) in (existing or set()):
                report.present += 1
            elif key in seen and seen[key][0] == row["text"]:
                report.present += 1
            elif key in seen:
                report.bad.append(BadRecord(item.file, item.line,
                                            f"id {key!r} already used by {seen[key][1]} for a different task"))
            else:
                seen[key] = (row["text"], f"{item.file}:{item.line}")
                rows.append(row)
                report.ingested += 1
    frame = pd.DataFrame(rows, columns=SCHEMA.columns) if rows else SCHEMA.empty_frame()
    return IngestResult(frame, reports)


def _seed_row(adapter: Adapter, record: Record, context: Any, now: dt.datetime) -> dict[str, Any]:
    if not isinstance(record.data, dict):
        raise RecordError(f"expected an object (a record), found {type(record.data).__name__}")
    fields = adapter.convert(record.data, Where(record.file, record.line), context)
    task = SeedTask(source=adapter.name, source_file=record.file, source_line=record.line,
                    raw=json.dumps(record.data, ensure_ascii=False, default=str), ingested_at=now, **fields)
    return task.model_dump()


def _reason(error: Exception) -> str:
    if isinstance(error, ValidationError):
        first = error.errors()[0]
        return f"field {'.'.join(map(str, first['loc']))}: {first['msg']}"
    return str(error)
