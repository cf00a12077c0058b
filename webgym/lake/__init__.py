"""The Parquet lake: the only code that knows where tables and blobs live and how they are written.

Layout under the root (a path or an fsspec URL), and the module that owns each part:

    <table>/_schema.parquet          zero rows, the current schema (tables.py)
    <table>/part-<stamp>-<id>.parquet one file per write: appends never rewrite earlier data; merges
                                      keep them few (parts.py); `replace_table` swaps a whole table
    blobs/<sha256>.png                screenshots, content-addressed, written once (blobs.py)
    _compaction/<table>.json          intent of a merge, compaction or replace in progress (parts.py,
                                      finished by `recover` in maintenance.py)
    _writer.lock                      held by the one writing command at a time (`writing`, files.py)
    _locks/<table>.lock               held while a table's parts are merged, compacted or replaced
    _journal/<writer>/                streaming writers' appends before they become parts (journal.py,
                                      stream.py)
    _quality/<table>                  what the table last passed its quality suite with (webgym.quality)

Every file becomes visible in one step (files.py), so a reader never sees a partial file and a killed
writer leaves earlier data intact. `Lake` is the one object the rest of the code holds; each concern
is a class of its own module, and Lake combines them.
"""

from __future__ import annotations

from webgym.lake.blobs import Blobs
from webgym.lake.maintenance import Maintenance
from webgym.lake.stream import StreamWriter


class Lake(Maintenance, Blobs):
    """Tables as Parquet parts under one root, plus the blob store."""

    def stream(self, run_id: str = "stream", batch_rows: int = 64) -> StreamWriter:
        """A journaled writer for many small appends (rollouts); see StreamWriter."""
        return StreamWriter(self, run_id, batch_rows)
