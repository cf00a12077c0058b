"""Rewrites of whole tables and recovery: compaction, replacing a table's content, removing repeated
keys, and finishing what killed writers left (`webgym lake compact | repair | recover`)."""

from __future__ import annotations

import json
import os
import time
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING

from schemas import schema_for
from schemas.table import FLOW_RUN_ID
from webgym.lake.files import parquet_bytes, safe_id, stamp, try_lock
from webgym.lake.journal import commit_dead_writers
from webgym.lake.lineage import current_flow_run_id
from webgym.lake.tables import Tables

if TYPE_CHECKING:
    import pandas as pd


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


class Maintenance(Tables):
    """Crash-safe rewrites of whole tables, and the recovery every flow runs first."""

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
        with try_lock(self._lock_path(name), wait=True):
            self._finish_intent(name)
            parts = self.parts(name)
            rows, checksum = self.checksum(name)
            if len(parts) < min_files:
                return CompactionResult(name, len(parts), len(parts), rows, rows, checksum, checksum)
            self._rewrite(name, parts, "compacted")
            rows_after, checksum_after = self.checksum(name)
            return CompactionResult(name, len(parts), len(self.parts(name)), rows, rows_after,
                                    checksum, checksum_after)

    def replace_table(self, name: str, frame: pd.DataFrame, run_id: str = "run", changed: pd.Series | None = None
                      ) -> str:
        """Make `frame` the table's whole content (one new part; the old parts go), for stages that
        rewrite rows, such as the split. Crash-safe like `compact`: the intent is written first, so
        `recover` either keeps the old parts or finishes the swap, never both or neither. Rows keep the flow run
        that first wrote them (`flow_run_id`, as the frame carries it): rewriting rows is not writing new ones;
        the rows `changed` marks (a boolean mask over `frame`) record the flow run writing now."""
        self.recover(name)
        if changed is not None and schema_for(name).stamped:
            frame = frame.assign(**{FLOW_RUN_ID: frame[FLOW_RUN_ID].astype(object).mask(changed, current_flow_run_id())})
        table = self.to_arrow(name, frame)
        output = self._path(name, f"part-{stamp()}-{safe_id(run_id)}-{uuid.uuid4().hex[:6]}.parquet")
        with try_lock(self._lock_path(name), wait=True):
            self._finish_intent(name)
            intent = self._intent_path(name)
            self._put(intent, json.dumps({"output": output, "inputs": self.parts(name)}).encode())
            self._put(output, parquet_bytes(table))
            self._finish_compaction(intent)
        return output

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
                with try_lock(self._lock_path(table)) as locked:  # held: that rewrite is alive
                    if locked:
                        self._finish_intent(table)
        return commit_dead_writers(self)
