"""The Parquet lake: the only code that knows where tables and blobs live and how they are written.

Layout under the root (a path or an fsspec URL):

    <table>/_schema.parquet          zero rows, the current schema (so SQL views always type-check)
    <table>/part-<stamp>-<id>.parquet one file per write: appends never rewrite earlier data (only
                                      `replace_table` swaps a whole table, e.g. for the split)
    blobs/<sha256>.png                screenshots, content-addressed, written once
    _compaction/<table>.json          intent of a compaction or replace in progress (finished by `recover`)
    _writer.lock                      held by the one writing command at a time (`writing`)
    _locks/<table>.lock               held while a table's parts are merged, compacted or replaced
    _quality/<table>                  what the table last passed its quality suite with (webgym.quality)

Every write keeps the parts few (`merge`): once MERGE_FANOUT parts of one size tier exist they
become one part of the next tier, so a table of N bytes has at most about
MERGE_FANOUT * log_MERGE_FANOUT(N) parts and each row is rewritten about log_MERGE_FANOUT(N)
times. Thousands of tiny parts would make every DuckDB view bind slowly (it reads each
file's footer).

Every file becomes visible in one step (temporary name, then rename; a single PUT on object
stores), so a reader never sees a partial file and a killed writer leaves earlier data intact.
Streaming writers journal each append to local disk and commit a part per batch (`StreamWriter`).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import hashlib
import io
import json
import logging
import math
import os
import re
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import duckdb
import fsspec

from schemas import TABLES, TableSchema, schema_for
from webgym.config import project_path
from webgym.llm.secrets import known_secrets, redact_known

if TYPE_CHECKING:  # Arrow is imported where rows are read or written: `webgym sql` starts without it
    import pandas as pd
    import pyarrow as pa
    import pyarrow.dataset as ds

log = logging.getLogger(__name__)

SCHEMA_FILE = "_schema.parquet"
WRITER_LOCK = "_writer.lock"


class LakeBusy(RuntimeError):
    """Another process holds the lake's writer lock; the message names it."""


MERGE_FANOUT = 8
"""Parts of one size tier (size within a factor MERGE_FANOUT) that the writer merges into one."""
ROW_GROUP_ROWS = 16_384
"""Rows per row group of every part: reading, merging and compacting hold a few groups at a time
(a step row with its elements and page text is a few kB, so a group is tens of MB decoded)."""
READ_ATTEMPTS = 5
"""Listings a reader tries when writers' merges keep removing parts it listed before it opened them."""
T = TypeVar("T")


def _stamp() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S%f")


def _safe_id(run_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", run_id)[:64]


@dataclass(frozen=True)
class CompactionResult:
    """What a compaction did; equal counts and checksums prove no row changed."""

    table: str
    files_before: int
    files_after: int
    rows_before: int
    rows_after: int
    checksum_before: int
    checksum_after: int


class Lake:
    """Tables as Parquet parts under one root, plus the blob store."""

    def __init__(self, root: str | Path) -> None:
        self.root = str(root).rstrip("/")
        self.fs, self._base = fsspec.core.url_to_fs(self.root)
        self.is_local = isinstance(self.fs, fsspec.implementations.local.LocalFileSystem)

    # -- paths -----------------------------------------------------------------------------
    def _path(self, *parts: str) -> str:
        return "/".join([self._base.rstrip("/"), *parts])

    def url(self, *parts: str) -> str:
        """A location as DuckDB and users see it: a plain path locally, protocol://... remotely."""
        return self._as_url(self._path(*parts))

    def _as_url(self, path: str) -> str:
        return path if self.is_local else self.fs.unstrip_protocol(path)

    def connect_duckdb(self) -> duckdb.DuckDBPyConnection:
        """A fresh in-memory DuckDB connection that can read this lake (never locks a file)."""
        con = duckdb.connect()
        if not self.is_local:
            con.register_filesystem(self.fs)
        return con

    def _local_dir(self, name: str) -> Path:
        """A local directory for what object stores cannot hold: `_<name>` under a local root."""
        if self.is_local:
            return Path(self._path(f"_{name}"))
        digest = hashlib.sha256(self.root.encode()).hexdigest()[:16]
        return project_path(f".{name}") / digest

    def journal_dir(self) -> Path:
        """Local directory for streaming journals (object stores cannot append)."""
        return self._local_dir("journal")

    def quality_dir(self) -> Path:
        """Local directory where the quality gate remembers which tables passed (webgym.quality)."""
        return self._local_dir("quality")

    def _lock_path(self, name: str) -> Path:
        """The lock a merge, compaction or replace of table `name` holds (one at a time per table)."""
        return self._local_dir("locks") / f"{name}.lock"

    # -- atomic files ----------------------------------------------------------------------
    def _put(self, path: str, data: bytes) -> None:
        """Make `path` appear with `data` in one step."""
        if not self.is_local:
            self.fs.pipe_file(path, data)
            return
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.{uuid.uuid4().hex[:8]}.tmp")
        with open(tmp, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)

    def _put_batches(self, path: str, schema: pa.Schema, batches: Iterable[pa.RecordBatch]) -> None:
        """Make `path` appear, in one step like `_put`, as one Parquet file of `batches`, holding at
        most one row group (ROW_GROUP_ROWS rows) in memory."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        if self.is_local:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            target = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.{uuid.uuid4().hex[:8]}.tmp")
            sink = open(target, "wb")
        else:
            target, sink = path, self.fs.open(path, "wb")  # an object store shows it when closed
        with sink:
            with pq.ParquetWriter(sink, schema, compression="zstd") as writer:
                pending: list[pa.RecordBatch] = []
                for batch in batches:
                    pending.append(batch)
                    if sum(b.num_rows for b in pending) >= ROW_GROUP_ROWS:
                        writer.write_table(pa.Table.from_batches(pending, schema), row_group_size=ROW_GROUP_ROWS)
                        pending = []
                if pending:
                    writer.write_table(pa.Table.from_batches(pending, schema), row_group_size=ROW_GROUP_ROWS)
            if self.is_local:
                sink.flush()
                os.fsync(sink.fileno())
        if self.is_local:
            os.replace(target, path)

    @staticmethod
    def _parquet_bytes(table: pa.Table) -> bytes:
        import pyarrow.parquet as pq

        buffer = io.BytesIO()
        pq.write_table(table, buffer, compression="zstd", row_group_size=ROW_GROUP_ROWS)
        return buffer.getvalue()

    # -- tables ----------------------------------------------------------------------------
    def to_arrow(self, name: str, frame: pd.DataFrame) -> pa.Table:
        """`frame` as the table's Arrow rows, validated, with every secret the process knows redacted from its
        text: the one place every write passes (a model response or page can echo an API key)."""
        schema = self.ensure_table(name)
        secrets = known_secrets()
        if secrets:
            from pandas.api.types import is_string_dtype

            text = [c for c in frame.columns if frame[c].dtype == object or is_string_dtype(frame[c])]
            frame = frame.assign(**{c: frame[c].map(lambda v: redact_known(v, secrets)) for c in text})
        return schema.to_arrow(frame)

    def ensure_table(self, name: str) -> TableSchema:
        """Create the table's folder and schema file, refreshing the file when the schema changed."""
        import pyarrow.parquet as pq

        schema = schema_for(name)
        path = self._path(name, SCHEMA_FILE)
        if self.fs.exists(path):
            with self.fs.open(path, "rb") as handle:
                if pq.read_schema(handle).equals(schema.arrow, check_metadata=False):
                    return schema
        self._put(path, self._parquet_bytes(schema.arrow.empty_table()))
        return schema

    def init(self, con: duckdb.DuckDBPyConnection | None = None) -> None:
        """Give every table of the data model a schema file, so views over the lake bind (idempotent).

        A file that is missing or lacks a column of the current schema is rewritten (`ensure_table`).
        """
        for name in self.stale_tables(con):
            self.ensure_table(name)

    def stale_tables(self, con: duckdb.DuckDBPyConnection | None = None) -> list[str]:
        """Tables whose schema file is missing or lacks a column of the current schema. The check reads the
        footers with DuckDB (`con`, one of `connect_duckdb`'s, or a new one), so a command that only reads
        (`webgym sql`) imports no Arrow on a current lake; writers still refresh a changed column type when
        they write."""
        files = {self._as_url(self._path(name, SCHEMA_FILE)): name for name in TABLES}
        found = [url for url in files if self.fs.exists(url)]
        columns: dict[str, set[str]] = {name: set() for name in TABLES}
        if found:
            with contextlib.nullcontext(con) if con is not None else self.connect_duckdb() as reader:
                for url, column in reader.execute("SELECT file_name, name FROM parquet_schema(?)", [found]).fetchall():
                    columns[files[url]].add(column)
        return [name for name, present in columns.items() if not set(schema_for(name).columns) <= present]

    def has_files(self, name: str) -> bool:
        """Whether the table's folder holds any Parquet file (its schema file or a part)."""
        return bool(self.fs.glob(self._path(name, "*.parquet")))

    def parts(self, name: str) -> list[str]:
        """Committed part files of a table, oldest first."""
        pattern = self._path(name, "part-*.parquet")
        return sorted(self.fs.glob(pattern))

    def _consistent_parts(self, name: str) -> list[str]:
        """The parts that hold each committed row once: while a merge has put its output but not yet
        removed its inputs (or was killed there), the listing holds both, so its inputs are left out."""
        parts = self.parts(name)
        try:
            plan = json.loads(self.fs.cat_file(self._intent_path(name)))
        except FileNotFoundError:
            return parts
        names = {path.rsplit("/", 1)[-1] for path in parts}
        if plan["output"].rsplit("/", 1)[-1] not in names:
            return parts
        inputs = {path.rsplit("/", 1)[-1] for path in plan["inputs"]}
        return [path for path in parts if path.rsplit("/", 1)[-1] not in inputs]

    def _read_parts(self, name: str, read: Callable[[list[str]], T]) -> T:
        """`read` over the table's consistent parts. Readers take no lock, so a writer's merge may remove a
        listed part before it is opened: then the rows are in the merge's output, and a fresh listing
        finds them."""
        for _ in range(READ_ATTEMPTS - 1):
            try:
                return read(self._consistent_parts(name))
            except FileNotFoundError:
                log.debug("a part of %s went while it was read (a merge); reading a fresh listing", name)
        return read(self._consistent_parts(name))

    def _part_sizes(self, name: str) -> dict[str, int]:
        found = self.fs.glob(self._path(name, "part-*.parquet"), detail=True)
        return {path: int(info["size"]) for path, info in found.items()}

    def write_table(self, name: str, frame: pd.DataFrame, run_id: str = "run") -> str | None:
        """Validate `frame` and append it as a new part; return the part's path (None if empty)."""
        return self.write_arrow(name, self.to_arrow(name, frame), run_id)

    def write_arrow(self, name: str, table: pa.Table, run_id: str = "run") -> str | None:
        """Append an Arrow table already in the table's schema (as `write_table` makes it) as a new part."""
        table = conformed(table, self.ensure_table(name).arrow)
        if table.num_rows == 0:
            return None
        path = self._path(name, f"part-{_stamp()}-{_safe_id(run_id)}-{uuid.uuid4().hex[:6]}.parquet")
        self._put(path, self._parquet_bytes(table))
        log.debug("wrote %d rows to %s", table.num_rows, path)
        self.merge(name)
        return path

    def replace_table(self, name: str, frame: pd.DataFrame, run_id: str = "run") -> str:
        """Make `frame` the table's whole content (one new part; the old parts go), for stages that
        rewrite rows, such as the split. Crash-safe like `compact`: the intent is written first, so
        `recover` either keeps the old parts or finishes the swap, never both or neither."""
        self.recover(name)
        table = self.to_arrow(name, frame)
        output = self._path(name, f"part-{_stamp()}-{_safe_id(run_id)}-{uuid.uuid4().hex[:6]}.parquet")
        with _try_lock(self._lock_path(name), wait=True):
            self._finish_intent(name)
            intent = self._intent_path(name)
            self._put(intent, json.dumps({"output": output, "inputs": self.parts(name)}).encode())
            self._put(output, self._parquet_bytes(table))
            self._finish_compaction(intent)
        return output

    def read_arrow(self, name: str, columns: list[str] | None = None,
                   filter: ds.Expression | None = None) -> pa.Table:
        """All committed rows of a table as Arrow, typed by the current schema."""
        import pyarrow.dataset as ds

        schema = schema_for(name)

        def read(parts: list[str]) -> pa.Table:
            if not parts:
                empty = schema.arrow.empty_table()
                return empty.select(columns) if columns else empty
            dataset = ds.dataset(parts, schema=schema.arrow, format="parquet", filesystem=self.fs)
            return dataset.to_table(columns=columns, filter=filter)

        return self._read_parts(name, read)

    def read_table(self, name: str, columns: list[str] | None = None,
                   filter: ds.Expression | None = None) -> pd.DataFrame:
        """All committed rows of a table as a DataFrame (nested columns as dicts and lists)."""
        return self.read_arrow(name, columns, filter).to_pandas(maps_as_pydicts="strict")

    def count(self, name: str) -> int:
        import pyarrow.dataset as ds

        def count(parts: list[str]) -> int:
            if not parts:
                return 0
            return ds.dataset(parts, schema=schema_for(name).arrow, format="parquet",
                              filesystem=self.fs).count_rows()

        return self._read_parts(name, count)

    def counts(self) -> dict[str, int]:
        """Rows per table, for every table of the data model."""
        return {name: self.count(name) for name in TABLES}

    def stream(self, run_id: str = "stream", batch_rows: int = 64) -> StreamWriter:
        """A journaled writer for many small appends (rollouts); see StreamWriter."""
        return StreamWriter(self, run_id, batch_rows)

    # -- writers ---------------------------------------------------------------------------
    @contextlib.contextmanager
    def writing(self, command: str) -> Iterator[None]:
        """Hold the lake's writer lock while `command` runs: a second writing command on the same lake is
        refused with LakeBusy naming the holder (pid, command, since), instead of both appending the same
        keys. The lock is an flock on `_writer.lock` in the root, released by the kernel when the holder
        dies (also by SIGKILL). Object stores have no locks: there one writer per lake is the operator's rule."""
        if not self.is_local:
            yield
            return
        os.makedirs(self._base, exist_ok=True)
        with open(self._path(WRITER_LOCK), "a+") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.seek(0)
                raise LakeBusy(f"lake {self.root} is being written by {handle.read().strip() or 'another process'}; "
                               "wait for it to finish or stop it, then run this again") from None
            try:
                handle.seek(0)
                handle.truncate()
                handle.write(f"pid {os.getpid()} (webgym {command}) since {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M:%S} UTC")
                handle.flush()
                yield
            finally:
                handle.truncate(0)
                fcntl.flock(handle, fcntl.LOCK_UN)

    # -- blobs -----------------------------------------------------------------------------
    def put_blob(self, data: bytes, suffix: str = "png") -> str:
        """Store bytes once under their SHA-256 and return the hash."""
        sha = hashlib.sha256(data).hexdigest()
        path = self._path("blobs", f"{sha}.{suffix}")
        if not self.fs.exists(path):
            self._put(path, data)
        return sha

    def get_blob(self, sha: str, suffix: str = "png") -> bytes:
        """The bytes stored under a hash; FileNotFoundError names the hash when absent."""
        path = self._path("blobs", f"{sha}.{suffix}")
        try:
            return self.fs.cat_file(path)
        except FileNotFoundError:
            raise FileNotFoundError(f"no blob {sha}.{suffix} under {self.url('blobs')}") from None

    # -- maintenance -----------------------------------------------------------------------
    def checksum(self, name: str) -> tuple[int, int]:
        """(rows, order-independent checksum of all rows) of a table."""
        parts = self.parts(name)
        if not parts:
            return 0, 0
        files = ", ".join(f"'{self._as_url(p)}'" for p in parts)
        with self.connect_duckdb() as con:
            rows, total = con.execute(
                f"SELECT count(*), coalesce(sum(hash(t)::HUGEINT), 0) "
                f"FROM read_parquet([{files}], union_by_name=true) t").fetchall()[0]
        return int(rows), int(total)

    def compact(self, name: str, min_files: int = 2) -> CompactionResult:
        """Merge a table's parts into one file without changing any row, streaming row groups so
        memory stays bounded whatever the table's size.

        The intent (inputs and output) is written first, so a compaction killed half-way is
        finished by `recover` instead of leaving duplicated rows behind.
        """
        self.recover(name)
        self.ensure_table(name)
        with _try_lock(self._lock_path(name), wait=True):
            self._finish_intent(name)
            parts = self.parts(name)
            rows, checksum = self.checksum(name)
            if len(parts) < min_files:
                return CompactionResult(name, len(parts), len(parts), rows, rows, checksum, checksum)
            self._rewrite(name, parts, "compacted")
            rows_after, checksum_after = self.checksum(name)
            return CompactionResult(name, len(parts), len(self.parts(name)), rows, rows_after,
                                    checksum, checksum_after)

    def merge(self, name: str) -> int:
        """Merge parts of the same size tier while a tier holds MERGE_FANOUT of them (the writers'
        policy that keeps parts few); return parts removed. Skips when another writer is merging."""
        removed = 0
        with _try_lock(self._lock_path(name)) as locked:
            if not locked:
                return 0
            self._finish_intent(name)
            while group := _full_tier(self._part_sizes(name)):
                self._rewrite(name, group, "merged")
                removed += len(group) - 1
        return removed

    def _rewrite(self, name: str, inputs: list[str], label: str) -> str:
        """Replace parts `inputs` by one part with their rows (caller holds the table's lock)."""
        import pyarrow.dataset as ds

        schema = schema_for(name).arrow
        output = self._path(name, f"part-{_stamp()}-{label}-{uuid.uuid4().hex[:6]}.parquet")
        intent = self._intent_path(name)
        self._put(intent, json.dumps({"output": output, "inputs": inputs}).encode())
        scan = ds.dataset(inputs, schema=schema, format="parquet", filesystem=self.fs).to_batches(
            batch_size=ROW_GROUP_ROWS, use_threads=False, batch_readahead=0, fragment_readahead=0)  # bounded memory
        self._put_batches(output, schema, scan)
        self._finish_compaction(intent)
        log.debug("merged %d parts of %s into %s", len(inputs), name, output)
        return output

    def _intent_path(self, name: str) -> str:
        return self._path("_compaction", f"{name}.json")

    def _finish_intent(self, name: str) -> None:
        """Finish what a killed merge, compaction or replace of `name` left (caller holds the lock)."""
        intent = self._intent_path(name)
        if self.fs.exists(intent):
            self._finish_compaction(intent)

    def repair(self, name: str) -> int:
        """Remove rows whose key (the table's schema keys) repeats an earlier row's, keeping the first
        written (oldest part first); return how many went. Crash-safe like `replace_table`; a table
        without duplicates is not rewritten."""
        schema = schema_for(name)
        frame = self.read_table(name)
        repeated = frame.duplicated(list(schema.keys), keep="first")
        if repeated.any():
            self.replace_table(name, frame[~repeated], run_id="repaired")
        return int(repeated.sum())

    def _finish_compaction(self, intent: str) -> None:
        plan = json.loads(self.fs.cat_file(intent))
        if self.fs.exists(plan["output"]):
            for path in plan["inputs"]:
                if self.fs.exists(path):
                    self.fs.rm(path)
        self.fs.rm(intent)

    def recover(self, name: str | None = None, stale_after_s: float = 3600) -> int:
        """Finish interrupted compactions, commit journals of dead writers and delete temporary
        files older than `stale_after_s` that killed writers left; return rows committed."""
        if self.is_local:
            cutoff = time.time() - stale_after_s
            for tmp in self.fs.glob(self._path(name or "*", ".*.tmp")):
                if os.stat(tmp).st_mtime < cutoff:
                    os.remove(tmp)
        for intent in self.fs.glob(self._path("_compaction", "*.json")):
            table = intent.rsplit("/", 1)[-1].removesuffix(".json")
            if name in (None, table):
                with _try_lock(self._lock_path(table)) as locked:  # held: that rewrite is alive
                    if locked:
                        self._finish_intent(table)
        committed = 0
        root = self.journal_dir()
        if root.exists():
            for writer_dir in sorted(p for p in root.iterdir() if p.is_dir()):
                with _try_lock(writer_dir / "lock") as locked:
                    if locked:
                        committed += _Journal(self, writer_dir).commit_all()
                        _remove_dir(writer_dir)
        return committed


def conformed(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """`table` in `schema`: columns in its order, and a column the schema gained since the rows were
    written (a journal a killed writer of an older release left) null, so upgrading never strands rows."""
    import pyarrow as pa

    if table.schema.equals(schema):
        return table
    missing = [f.name for f in schema if f.name not in table.column_names]
    required = [name for name in missing if not schema.field(name).nullable]
    if required:
        table_name = (schema.metadata or {}).get(b"table", b"?").decode()
        raise ValueError(f"rows for table {table_name} lack its required column(s) {', '.join(required)}")
    columns = [table[f.name] if f.name in table.column_names else pa.nulls(table.num_rows, f.type) for f in schema]
    return pa.Table.from_arrays(columns, names=schema.names).cast(schema)


@contextlib.contextmanager
def _try_lock(path: Path, wait: bool = False) -> Iterator[bool]:
    """Hold the lock file `path` if nobody alive holds it (or once they let go, with `wait`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _full_tier(sizes: dict[str, int]) -> list[str]:
    """Parts of the smallest size tier (bytes within a factor MERGE_FANOUT) that holds
    MERGE_FANOUT parts, oldest first; empty when no tier is full."""
    tiers: dict[int, list[str]] = {}
    for path, size in sizes.items():
        tiers.setdefault(int(math.log(max(size, 1), MERGE_FANOUT)), []).append(path)
    full = [sorted(paths) for _, paths in sorted(tiers.items()) if len(paths) >= MERGE_FANOUT]
    return full[0] if full else []


def _remove_dir(directory: Path) -> None:
    for path in directory.iterdir():
        path.unlink()
    directory.rmdir()


class _Journal:
    """Entries of one writer: `<seq>.<table>.arrow` files, valid once `<seq>.ok` exists."""

    def __init__(self, lake: Lake, directory: Path) -> None:
        self.lake, self.dir = lake, directory

    def entries(self) -> list[int]:
        return sorted(int(p.name.split(".")[0]) for p in self.dir.glob("*.ok"))

    def add(self, seq: int, tables: dict[str, pa.Table]) -> None:
        import pyarrow as pa

        for name, table in tables.items():
            path = self.dir / f"{seq:08d}.{name}.arrow"
            with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
                writer.write_table(table)
            with open(path, "rb+") as handle:
                os.fsync(handle.fileno())
        marker = self.dir / f"{seq:08d}.ok"
        with open(marker, "wb") as handle:
            os.fsync(handle.fileno())

    def commit_all(self) -> int:
        """Write one part per table from every complete entry, then drop the entries.

        Part names depend only on the writer and the first entry, and entries are removed newest
        first, so a commit interrupted anywhere and redone writes exactly the missing parts. The
        parts are written under their tables' locks together with a `<first>.committed` marker, so
        a merge can take them only once a redo knows not to write them again.
        """
        import pyarrow as pa

        seqs = self.entries()
        if not seqs:
            return 0
        batches: dict[str, list[pa.Table]] = {}
        for seq in seqs:
            for path in sorted(self.dir.glob(f"{seq:08d}.*.arrow")):
                with pa.memory_map(str(path)) as source:
                    batches.setdefault(path.name.split(".")[1], []).append(pa.ipc.open_file(source).read_all())
        rows = 0
        committed = self.dir / f"{seqs[0]:08d}.committed"
        with contextlib.ExitStack() as locks:
            for name in sorted(batches):
                locks.enter_context(_try_lock(self.lake._lock_path(name), wait=True))
            for name, tables in batches.items():
                schema = self.lake.ensure_table(name)
                part = self.lake._path(name, f"part-{self.dir.name}-{seqs[0]:08d}.parquet")
                merged = pa.concat_tables([conformed(t, schema.arrow) for t in tables])
                if not committed.exists() and not self.lake.fs.exists(part):
                    self.lake._put(part, self.lake._parquet_bytes(merged))
                rows += merged.num_rows
            with open(committed, "wb") as handle:
                os.fsync(handle.fileno())
        for seq in reversed(seqs):
            (self.dir / f"{seq:08d}.ok").unlink()
            for path in self.dir.glob(f"{seq:08d}.*.arrow"):
                path.unlink()
        for leftover in self.dir.glob("*.arrow"):  # entries whose marker never appeared
            leftover.unlink()
        committed.unlink()
        for name in batches:
            self.lake.merge(name)
        return rows


class StreamWriter:
    """Durable small appends for long-running writers such as rollouts.

    Each `append` is journaled to local disk (fsync) before it returns, so an acknowledged row
    survives a crash; every `batch_rows` rows become one Parquet part per table. Several tables
    can be appended together (steps with their trajectory): they commit together.
    A writer started after a crash first commits what dead writers left in the journal.
    """

    def __init__(self, lake: Lake, run_id: str, batch_rows: int) -> None:
        self.lake, self.batch_rows = lake, batch_rows
        self.dir = lake.journal_dir() / f"{_stamp()}-{_safe_id(run_id)}-{uuid.uuid4().hex[:6]}"
        self._lock_handle: io.TextIOWrapper | None = None
        self._journal = _Journal(lake, self.dir)
        self._seq = 0
        self._pending_rows = 0

    def __enter__(self) -> StreamWriter:
        self.lake.recover()
        self.dir.mkdir(parents=True)
        self._lock_handle = open(self.dir / "lock", "a")
        fcntl.flock(self._lock_handle, fcntl.LOCK_EX)
        return self

    def append(self, frames: dict[str, pd.DataFrame]) -> None:
        """Journal rows of one or more tables as one unit, committing when the batch is full."""
        if self._lock_handle is None:
            raise RuntimeError("StreamWriter.append outside `with lake.stream(...)`")
        tables = {name: self.lake.to_arrow(name, frame) for name, frame in frames.items()}
        self._journal.add(self._seq, tables)
        self._seq += 1
        self._pending_rows += max(t.num_rows for t in tables.values())
        if self._pending_rows >= self.batch_rows:
            self.flush()

    def flush(self) -> None:
        """Commit everything journaled so far as parts."""
        self._journal.commit_all()
        self._pending_rows = 0

    def __exit__(self, *exc: object) -> None:
        self.flush()
        assert self._lock_handle is not None
        fcntl.flock(self._lock_handle, fcntl.LOCK_UN)
        self._lock_handle.close()
        self._lock_handle = None
        _remove_dir(self.dir)
