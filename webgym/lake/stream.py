"""Durable small appends for long-running writers such as rollouts (`lake.stream(...)`)."""

from __future__ import annotations

import fcntl
import io
import uuid
from typing import TYPE_CHECKING

from webgym.lake.files import remove_dir, safe_id, stamp
from webgym.lake.journal import Journal
from webgym.lake.lineage import current_flow_run_id, stamped
from webgym.lake.maintenance import Maintenance

if TYPE_CHECKING:
    import pandas as pd


class StreamWriter:
    """Durable small appends for long-running writers such as rollouts.

    Each `append` is journaled to local disk (fsync) before it returns, so an acknowledged row
    survives a crash; every `batch_rows` rows become one Parquet part per table. Several tables
    can be appended together (steps with their trajectory): they commit together.
    A writer started after a crash first commits what dead writers left in the journal. Its rows record the
    flow run that opened it, whichever thread appends them (the LLM ledger appends from its own).
    """

    def __init__(self, lake: Maintenance, run_id: str, batch_rows: int) -> None:
        self.lake, self.batch_rows = lake, batch_rows
        self.dir = lake.journal_dir() / f"{stamp()}-{safe_id(run_id)}-{uuid.uuid4().hex[:6]}"
        self._lock_handle: io.TextIOWrapper | None = None
        self._journal = Journal(lake, self.dir)
        self._seq = 0
        self._pending_rows = 0
        self.flow_run_id = current_flow_run_id()

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
        tables = {name: self.lake.to_arrow(name, stamped(name, frame, self.flow_run_id)) for name, frame in frames.items()}
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
        remove_dir(self.dir)
