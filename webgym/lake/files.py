"""Where the lake's files are and how one appears: paths under the root (a path or an fsspec URL), files
made visible in one step, the local directories object stores cannot hold, and the locks.

Every file becomes visible in one step (temporary name, then rename; a single PUT on object stores), so a
reader never sees a partial file and a killed writer leaves earlier data intact.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import hashlib
import io
import os
import re
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
import fsspec

from webgym.config import project_path

if TYPE_CHECKING:  # Arrow is imported where rows are read or written: `webgym sql` starts without it
    import pyarrow as pa

WRITER_LOCK = "_writer.lock"
ROW_GROUP_ROWS = 16_384
"""Rows per row group of every part: reading, merging and compacting hold a few groups at a time
(a step row with its elements and page text is a few kB, so a group is tens of MB decoded)."""


class LakeBusy(RuntimeError):
    """Another process holds the lake's writer lock; the message names it."""


def stamp() -> str:
    """The current UTC time as part names sort it (oldest first)."""
    return dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S%f")


def safe_id(run_id: str) -> str:
    """`run_id` as it may appear in a file name."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", run_id)[:64]


def parquet_bytes(table: pa.Table) -> bytes:
    """`table` as one Parquet file (zstd, ROW_GROUP_ROWS rows per group)."""
    import pyarrow.parquet as pq

    buffer = io.BytesIO()
    pq.write_table(table, buffer, compression="zstd", row_group_size=ROW_GROUP_ROWS)
    return buffer.getvalue()


@contextlib.contextmanager
def try_lock(path: Path, wait: bool = False) -> Iterator[bool]:
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


def remove_dir(directory: Path) -> None:
    """Remove a directory of plain files."""
    for path in directory.iterdir():
        path.unlink()
    directory.rmdir()


class Storage:
    """The lake's root: its paths, atomic files, local directories and locks."""

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

    # -- the writer lock -------------------------------------------------------------------
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
