"""Ingest: task files of public benchmarks -> seed_tasks rows, one adapter per source format.

`task_files` opens a source's files and checks each against the adapter on its first records: when
most records lack the fields the format needs, the request stops naming the adapters whose fields
do fit. `seed_task_batches` then reads every record, converts it with the source's adapter and
yields the new rows in frames of a bounded size, plus a report per file; a broken record is
reported with file and line (or record and line) and the rest go on. Nothing is held but one frame
and the record being read: the ids and contents already seen are looked up on disk
(stages.ingest.known), so a file of millions of new tasks ingests in bounded memory.
`seed_tasks_from_files` gathers the frames in one, for inputs small enough to hold.

A seed task is identified by its source, its id in the source and its revision. A record whose id
is known counts as already present only when its content (text, start URL, evaluation block,
reference answer) is one the lake holds; a re-worded or revised record becomes the next revision,
which names the one it replaces. Records without an id are identified by their file's content (a
hash of its bytes) and line: the same file copied to another folder is the same file, an edited
file another one.

Which revision is current follows publication, not ingest order (stages.revisions): each row's
`published` is the record's own date (Online-Mind2Web's `<id>_MMDDYY` ids, which are revisions of
`<id>`), else the `published` date given to ingest, else a date in the file name
(`WebVoyager_data_08312025.jsonl`, `mind2web-live_test_20241024.json`).
"""

from __future__ import annotations

import collections
import datetime as dt
import hashlib
import itertools
import json
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from pydantic import ValidationError

from schemas.seed_tasks import SCHEMA, SeedTask
from stages.ingest.adapter import Adapter, RecordError, Where, fits, has_value, optional_text, value_at
from stages.ingest.agentsynth import AGENTSYNTH
from stages.ingest.browsecomp import BROWSECOMP
from stages.ingest.deepshop import DEEPSHOP
from stages.ingest.gaia import GAIA
from stages.ingest.generic import GENERIC
from stages.ingest.insta import INSTA
from stages.ingest.known import KnownTasks, content_key
from stages.ingest.mind2web2 import MIND2WEB2
from stages.ingest.mind2web_live import MIND2WEB_LIVE
from stages.ingest.online_mind2web import ONLINE_MIND2WEB
from stages.ingest.read import BadRecord, FileRefused, Limits, Record, read_records
from stages.ingest.synthetic import SYNTHETIC
from stages.ingest.travelplanner import TRAVELPLANNER
from stages.ingest.webarena import WEBARENA, WEBARENA_LITE
from stages.ingest.webgym import WEBGYM
from stages.ingest.webvoyager import PAE, WEBVOYAGER

if TYPE_CHECKING:  # the CLI lists ADAPTERS at start-up; pandas loads when a stage runs
    import pandas as pd

ADAPTERS: dict[str, Adapter] = {a.name: a for a in (
    INSTA, PAE, AGENTSYNTH, BROWSECOMP, TRAVELPLANNER, MIND2WEB_LIVE, ONLINE_MIND2WEB, DEEPSHOP, MIND2WEB2,
    GAIA, WEBVOYAGER, WEBARENA, WEBARENA_LITE, WEBGYM, SYNTHETIC, GENERIC)}
"""Every source format by its --source name."""

DETECTION_ORDER = ("synthetic", "webgym", "webarena-lite", "webarena", "browsecomp", "gaia", "deepshop", "pae",
                   "webvoyager", "online-mind2web", "mind2web-live", "mind2web2", "travelplanner", "agentsynth",
                   "insta")
"""`--source auto` tries these shape tests in order (most specific first). The generic adapter needs
a mapping, so it is never picked automatically."""

DETECTION_NOTES = {
    "webvoyager": "PAE's proposed tasks share this layout: pass --source pae if these are PAE tasks"}
"""What to tell the user when `auto` picks a source whose layout another source shares."""

FIT_SHARE = 0.5
"""A file is of an adapter's format when at least this share of its records have the required fields."""


class IngestError(ValueError):
    """The request itself is wrong (unknown source, a file of another format, an unreadable mapping);
    nothing was ingested."""


@dataclass
class FieldCount:
    """One field the source defines: records that give it, and rows that keep it (in its column, or raw)."""

    given: int = 0
    kept: int = 0


BAD_KEPT = 1000
"""Bad records a file's report keeps (each is counted): a file of millions of broken lines is not held."""


@dataclass
class FileReport:
    """What happened to one file's records: read = ingested + already present + bad_count; `revised` of
    the ingested are new revisions of known ids; `bad` keeps the first BAD_KEPT bad records; `fields`
    counts, per source field, what was given and kept."""

    file: str
    source: str
    read: int = 0
    ingested: int = 0
    present: int = 0
    revised: int = 0
    bad: list[BadRecord] = field(default_factory=list)
    bad_count: int = 0
    fields: dict[str, FieldCount] = field(default_factory=dict)

    def field_count(self, path: str, column: str) -> FieldCount:
        return self.fields.setdefault(f"{path} -> {column}", FieldCount())

    def add_bad(self, record: BadRecord) -> None:
        self.bad_count += 1
        if len(self.bad) < BAD_KEPT:
            self.bad.append(record)


@dataclass
class IngestResult:
    rows: pd.DataFrame
    files: list[FileReport]

    @property
    def bad(self) -> list[BadRecord]:
        return [b for f in self.files for b in f.bad]


Existing: TypeAlias = "pd.DataFrame | Iterable[pd.DataFrame] | None"
"""The seed tasks held already: seed_tasks rows (stages.ingest.known.CONTENT_COLUMNS), whole or in frames."""

BATCH_ROWS = 20_000
"""New seed tasks per frame of `seed_task_batches` (taskset.ingest.batch_rows)."""
BATCH_BYTES = 64 << 20
"""Bytes of records' JSON after which a frame is full even if short of BATCH_ROWS (taskset.ingest.batch_bytes)."""


def adapter_for(source: str) -> Adapter:
    try:
        return ADAPTERS[source]
    except KeyError:
        raise IngestError(f"unknown source {source!r}; sources are auto, {', '.join(ADAPTERS)}") from None


def file_id(path: str) -> str:
    """How records without an id name their file: 'file@' and the first 16 hex digits of the SHA-256
    of its bytes, so the same file read from another folder (or under another name) names its records
    alike, and an edited file differently."""
    with open(path, "rb") as handle:
        return "file@" + hashlib.file_digest(handle, "sha256").hexdigest()[:16]


_FILE_DATES = ((re.compile(r"(?<!\d)((?:19|20)\d\d)-?(\d\d)-?(\d\d)(?!\d)"), (1, 2, 3)),
               (re.compile(r"(?<!\d)(\d\d)(\d\d)((?:19|20)\d\d)(?!\d)"), (3, 1, 2)))
"""Dates in file names, tried in order: YYYYMMDD or YYYY-MM-DD, then MMDDYYYY (Online_Mind2Web_06042025)."""


def published_in_name(path: str) -> dt.datetime | None:
    """The date a file's name carries (its publication, by benchmark custom), None when none does."""
    for pattern, (year, month, day) in _FILE_DATES:
        for match in pattern.finditer(Path(path).name):
            try:
                return dt.datetime(int(match[year]), int(match[month]), int(match[day]), tzinfo=dt.UTC)
            except ValueError:
                continue
    return None


def publication_date(text: str | None) -> dt.datetime | None:
    """A `--published` date (YYYY-MM-DD) as UTC midnight; IngestError for anything else."""
    if text is None:
        return None
    try:
        return dt.datetime.combine(dt.date.fromisoformat(text), dt.time(), dt.UTC)
    except ValueError:
        raise IngestError(f"--published takes a date as YYYY-MM-DD, not {text!r}") from None


def detect_source(path: str, sample: int = 5, encoding: str | None = None, limits: Limits | None = None) -> str | None:
    """The adapter whose shape test accepts the file's first readable records, None if none does;
    IngestError for a file read_records refuses."""
    try:
        return _detected(read_records(path, encoding, limits), sample)
    except FileRefused as error:
        raise IngestError(str(error)) from None


def _detected(items: Iterable[Record | BadRecord | Any], sample: int = 5) -> str | None:
    records = (r.data if isinstance(r, Record) else r for r in items if not isinstance(r, BadRecord))
    for record in itertools.islice((r for r in records if isinstance(r, dict)), sample):
        for name in DETECTION_ORDER:
            if ADAPTERS[name].shape_matches(record):
                return name
    return None


def files_by_source(paths: list[str], source: str = "auto", encoding: str | None = None,
                    limits: Limits | None = None) -> dict[str, list[str]]:
    """The files to read with each adapter: all with `source`, or each with the adapter `detect_source`
    picks (IngestError naming a file whose shape no adapter recognises)."""
    if source != "auto":
        adapter_for(source)
        return {source: list(paths)}
    groups: dict[str, list[str]] = {}
    for path in paths:
        found = detect_source(path, encoding=encoding, limits=limits)
        if found is None:
            raise IngestError(f"{path}: cannot tell which benchmark this file comes from; "
                              f"pass --source (one of {', '.join(ADAPTERS)})")
        groups.setdefault(found, []).append(path)
    return groups


def fitting_adapters(records: list[Any]) -> list[str]:
    """The adapters (generic aside) whose required fields at least FIT_SHARE of `records` have."""
    return [a.name for a in ADAPTERS.values()
            if a.required and sum(fits(r, a.required) for r in records) >= FIT_SHARE * len(records)]


def check_fit(adapter: Adapter, path: str, items: list[Record | BadRecord]) -> None:
    """IngestError when most records of a file lack the fields `adapter` needs, naming the adapters
    whose fields do fit (adapters that need a mapping, generic, are not checked)."""
    records = [item.data for item in items if isinstance(item, Record)]
    if not adapter.required or not records:
        return
    fitting = sum(fits(r, adapter.required) for r in records)
    if fitting >= FIT_SHARE * len(records):
        return
    others = [name for name in fitting_adapters(records) if name != adapter.name]
    detected = _detected(records)
    hint = (f"its records fit {', '.join(others)}: pass --source {detected if detected in others else others[0]}"
            if others else
            "no adapter's fields fit it: is it a task file? (--source generic --map text=COLUMN reads any layout)")
    raise IngestError(f"{path}: only {fitting} of {len(records)} records have the fields {adapter.name} needs "
                      f"({adapter.describe_required()}); {hint}")


FIT_SAMPLE = 1000
"""Records of a file `check_fit` looks at (the first ones): a file is streamed, never held whole."""


@dataclass
class TaskFiles:
    """One source's task files, prepared and checked but not read yet (beyond the first FIT_SAMPLE
    records of each): path -> its records as they will be read, the adapter's context, each file's
    name in fallback ids (default: its file name) and the date its records carry when they have none."""

    source: str
    records: dict[str, Iterable[Record | BadRecord]]
    context: Any = None
    file_ids: dict[str, str] = field(default_factory=dict)
    published: dict[str, dt.datetime | None] = field(default_factory=dict)


def task_files(source: str, paths: list[str], mapping: dict[str, str] | None = None, encoding: str | None = None,
               published: dt.datetime | None = None, limits: Limits | None = None) -> TaskFiles:
    """`paths` opened for the `source` adapter, each checked against its format on its first records.
    `encoding` overrides UTF-8 for odd files; `published` dates every file's records (else a date in
    the file's name does). IngestError when the request itself is wrong: the adapter cannot prepare
    the files (a missing answer file, a bad mapping), a file is of another format, or a file is
    refused (over a size cap in `limits`, endless, binary)."""
    adapter = adapter_for(source)
    try:
        paths_read, context = adapter.prepare([str(p) for p in paths], mapping or {}, encoding)
        files: dict[str, Iterable[Record | BadRecord]] = {}
        for path in paths_read:
            records = read_records(path, encoding, limits)
            first = collections.deque(itertools.islice(records, FIT_SAMPLE))
            check_fit(adapter, path, list(first))
            files[path] = _sample_then_rest(first, records)
        ids = {path: file_id(path) for path in paths_read if os.path.isfile(path)}
        dates = {path: published or published_in_name(path) for path in paths_read}
        return TaskFiles(source, files, context, ids, dates)
    except IngestError:
        raise
    except (ValueError, OSError) as error:  # FileRefused, and what `prepare` raises
        raise IngestError(str(error)) from None


def _sample_then_rest(sample: collections.deque, rest: Iterator[Record | BadRecord]) -> Iterator[Record | BadRecord]:
    """The records of a file: the sample `check_fit` saw, let go one by one as read, then the rest."""
    while sample:
        yield sample.popleft()
    yield from rest


def seed_tasks_from_files(source: str, paths: list[str], existing: Existing = None,
                          mapping: dict[str, str] | None = None, encoding: str | None = None,
                          now: dt.datetime | None = None, published: dt.datetime | None = None,
                          limits: Limits | None = None) -> IngestResult:
    """One row per new seed task (or new revision) read from `paths` with the `source` adapter, plus a
    report per file: `task_files`, then `seed_tasks_from_records` (IngestError as they raise it)."""
    files = task_files(source, paths, mapping, encoding, published, limits)
    return seed_tasks_from_records(source, files.records, existing, files.context, now, files.file_ids,
                                   files.published)


@dataclass
class SeedTaskBatches:
    """The new seed tasks of some task files as frames (`batches`), converted as they are consumed, and a
    report per file (`files`), complete once the last frame is taken. Only one frame is held at a time,
    so memory does not grow with the files."""

    files: list[FileReport]
    batches: Iterator[pd.DataFrame]


def seed_task_batches(files: TaskFiles, existing: Existing = None, now: dt.datetime | None = None,
                      batch_rows: int = BATCH_ROWS, batch_bytes: int = BATCH_BYTES) -> SeedTaskBatches:
    """One row per new seed task or new revision among the records of `files`, converted by the
    source's adapter, in frames of `batch_rows` rows at most (fewer once their records' JSON reaches
    `batch_bytes`), plus a report per file.

    A record whose id and content `existing` (or an earlier record of these files) holds is present;
    a known id with new content is the next revision; an id repeated within one file with other
    content is bad (the file contradicts itself). The ids and contents seen are kept on disk
    (stages.ingest.known), not in memory. IngestError when a file is refused part-way (an endless
    stream over taskset.ingest.max_file_bytes) or cannot be read: the frames taken before stay whole.
    """
    reports = [FileReport(path, files.source) for path in files.records]
    return SeedTaskBatches(reports, _batches(files, reports, existing, now or dt.datetime.now(dt.UTC),
                                             batch_rows, batch_bytes))


def _existing_frames(existing: Existing) -> Iterable[pd.DataFrame]:
    import pandas as pd

    if existing is None:
        return ()
    return (existing,) if isinstance(existing, pd.DataFrame) else existing


def _batches(files: TaskFiles, reports: list[FileReport], existing: Existing, now: dt.datetime, batch_rows: int,
             batch_bytes: int) -> Iterator[pd.DataFrame]:
    adapter = adapter_for(files.source)
    with KnownTasks(files.source) as known:
        known.load(_existing_frames(existing))
        rows: list[dict[str, Any]] = []
        size = 0
        for number, ((path, records), report) in enumerate(zip(files.records.items(), reports, strict=True)):
            label = files.file_ids.get(path) or Path(path).name
            try:
                for item in records:
                    row = _new_row(adapter, item, report, known, (number, label), files.context, now,
                                   files.published.get(path))
                    if row is None:
                        continue
                    rows.append(row)
                    size += len(row["raw"])
                    if len(rows) >= batch_rows or size >= batch_bytes:
                        yield _frame(rows)
                        rows, size = [], 0
            except (FileRefused, OSError) as error:
                raise IngestError(str(error)) from None
        if rows:
            yield _frame(rows)


def _new_row(adapter: Adapter, item: Record | BadRecord, report: FileReport, known: KnownTasks,
             file: tuple[int, str], context: Any, now: dt.datetime, published: dt.datetime | None
             ) -> dict[str, Any] | None:
    """The seed_tasks row of `item` when it is a new task or revision (None when it is bad or present),
    counted in `report`; `file` is its file's number in the ingest and its name in fallback ids."""
    if isinstance(item, BadRecord):
        if not item.whole_file:
            report.read += 1
        report.add_bad(item)
        return None
    report.read += 1
    try:
        row = _seed_row(adapter, item, Where(item.file, file[1], item.line, item.index), context, now, published)
    except (RecordError, ValidationError) as error:
        report.add_bad(BadRecord(item.file, item.line, _reason(error), item.index))
        return None
    _count_fields(report, adapter, item.data, row)
    key, content = row["source_id"], content_key(row)
    if known.holds(key, content):
        report.present += 1
        return None
    latest, added_in, place = known.newest(key)
    if added_in == file[0]:
        report.add_bad(BadRecord(item.file, item.line, f"id {key!r} already used by {place} for a different task",
                                    item.index))
        return None
    row["revision"], row["previous_revision"] = latest + 1, latest or None
    known.add(key, content, latest + 1, file[0], item.where)
    report.ingested += 1
    report.revised += row["previous_revision"] is not None
    return row


def _frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame(rows, columns=SCHEMA.columns)


def seed_tasks_from_records(source: str, files: dict[str, Iterable[Record | BadRecord]],
                            existing: Existing = None, context: Any = None,
                            now: dt.datetime | None = None, file_ids: dict[str, str] | None = None,
                            published: dict[str, dt.datetime | None] | None = None) -> IngestResult:
    """One row per new seed task or new revision among the records of `files` (path -> records as read),
    converted by the `source` adapter with its `context`, plus a report per file: `seed_task_batches`
    gathered in one frame, for inputs small enough to hold (the synthetic sites' goals, tests)."""
    import pandas as pd

    stream = seed_task_batches(TaskFiles(source, files, context, file_ids or {}, published or {}), existing, now)
    frames = list(stream.batches)
    rows = pd.concat(frames, ignore_index=True) if frames else SCHEMA.empty_frame()
    return IngestResult(rows, stream.files)


def _seed_row(adapter: Adapter, record: Record, where: Where, context: Any, now: dt.datetime,
              published: dt.datetime | None) -> dict[str, Any]:
    if not isinstance(record.data, dict):
        raise RecordError(f"expected an object (a record), found {type(record.data).__name__}")
    fields = adapter.convert(record.data, where, context)
    fields["published"] = fields.get("published") or published
    task = SeedTask(source=adapter.name, source_file=record.file, source_line=record.line, source_record=record.index,
                    raw=json.dumps(record.data, ensure_ascii=False, default=str), ingested_at=now, **fields)
    return task.model_dump()


def _count_fields(report: FileReport, adapter: Adapter, record: dict, row: dict[str, Any]) -> None:
    """Count, per field the source defines, whether the record gives it and the row keeps it."""
    for path, column in adapter.fields:
        value = value_at(record, path)
        if not has_value(value):
            continue
        count = report.field_count(path, column)
        count.given += 1
        if column == "raw":
            count.kept += has_value(value_at(json.loads(row["raw"]), path))
        elif column == "source_id":
            count.kept += row["source_id"] == optional_text(value)
        else:
            count.kept += has_value(row.get(column))


def _reason(error: Exception) -> str:
    if isinstance(error, ValidationError):
        first = error.errors()[0]
        return f"field {'.'.join(map(str, first['loc']))}: {first['msg']}"
    return str(error)
