"""The local journal streaming writers append to before their rows become parts: object stores cannot
append, and a row acknowledged to a rollout must survive a crash.

Under `journal_dir()`, each writer has a directory of `<seq>.<table>.arrow` files, an entry valid once
its `<seq>.ok` marker exists, and a `lock` the writer holds while alive; `commit_dead_writers` turns
what writers that died left into parts.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import TYPE_CHECKING

from webgym.lake.files import parquet_bytes, remove_dir, try_lock
from webgym.lake.tables import Tables, conformed

if TYPE_CHECKING:
    import pyarrow as pa


class Journal:
    """Entries of one writer: `<seq>.<table>.arrow` files, valid once `<seq>.ok` exists."""

    def __init__(self, lake: Tables, directory: Path) -> None:
        self.lake, self.dir = lake, directory

    def entries(self) -> list[int]:
        return sorted(int(p.name.split(".")[0]) for p in self.dir.glob("*.ok"))

    def add(self, seq: int, tables: dict[str, pa.Table]) -> None:
        """Journal entry `seq`: one Arrow file per table, fsynced, then its marker."""
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
                locks.enter_context(try_lock(self.lake._lock_path(name), wait=True))
            for name, tables in batches.items():
                schema = self.lake.ensure_table(name)
                part = self.lake._path(name, f"part-{self.dir.name}-{seqs[0]:08d}.parquet")
                merged = pa.concat_tables([conformed(t, schema.arrow) for t in tables])
                if not committed.exists() and not self.lake.fs.exists(part):
                    self.lake._put(part, parquet_bytes(merged))
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


def commit_dead_writers(lake: Tables) -> int:
    """Commit the journals of writers no longer alive (nobody holds their lock) and remove them; return rows
    committed."""
    committed = 0
    root = lake.journal_dir()
    if root.exists():
        for writer_dir in sorted(p for p in root.iterdir() if p.is_dir()):
            with try_lock(writer_dir / "lock") as locked:
                if locked:
                    committed += Journal(lake, writer_dir).commit_all()
                    remove_dir(writer_dir)
    return committed
