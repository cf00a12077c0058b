"""The seed tasks an ingest compares records with, looked up on disk so that memory stays bounded.

An ingest must know, for every record, whether its id is known, which revision is the newest, and
whether the same content is already held: in the lake, or added earlier by the same ingest. Held in
Python, that index grows with the lake and the files (hundreds of bytes per task, gigabytes for a
multi-GB file of new tasks); held in a SQLite file in a temporary folder it costs SQLite's page cache
(a few MB) and about 100 bytes of disk per task, and is removed when the ingest ends.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

CONTENT_COLUMNS = ["source", "source_id", "revision", "text", "start_url", "evaluation", "reference_answer"]
"""The seed_tasks columns the index is built from (identity and content_key's columns)."""


def content_key(row: dict[str, Any]) -> str:
    """What makes two records of one id the same revision: text, start URL, evaluation block (key
    order aside) and reference answer."""
    evaluation = row.get("evaluation")
    try:
        evaluation = json.dumps(json.loads(evaluation), sort_keys=True, ensure_ascii=False) if evaluation else None
    except json.JSONDecodeError:
        pass
    content = [row["text"], row.get("start_url"), evaluation, row.get("reference_answer")]
    return hashlib.sha256(json.dumps(content, ensure_ascii=False).encode()).hexdigest()


class KnownTasks:
    """One source's seed tasks by source_id: the newest revision, where this ingest added it (file
    number and place, for the "id already used" report), and every content (`content_key`) held."""

    def __init__(self, source: str) -> None:
        self.source = source
        self._folder = tempfile.TemporaryDirectory(prefix="webgym-ingest-")
        self._db = sqlite3.connect(Path(self._folder.name) / "known.sqlite")
        self._db.executescript("""
            PRAGMA journal_mode = OFF;
            PRAGMA synchronous = OFF;
            CREATE TABLE ids (source_id TEXT PRIMARY KEY, latest INTEGER NOT NULL, file INTEGER, place TEXT)
                WITHOUT ROWID;
            CREATE TABLE contents (source_id TEXT, content BLOB, PRIMARY KEY (source_id, content)) WITHOUT ROWID;
        """)

    def __enter__(self) -> KnownTasks:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._db.close()
        self._folder.cleanup()

    def load(self, frames: Iterable[pd.DataFrame]) -> None:
        """Add the rows of `frames` (CONTENT_COLUMNS of seed_tasks, any sources) that are of this source."""
        for frame in frames:
            rows = frame[frame["source"] == self.source]
            if rows.empty:
                continue
            rows = rows.astype(object).where(rows.notna(), None)
            records = rows.to_dict("records")
            self._db.executemany(
                "INSERT INTO ids (source_id, latest) VALUES (?, ?) "
                "ON CONFLICT (source_id) DO UPDATE SET latest = max(latest, excluded.latest)",
                [(r["source_id"], int(r.get("revision") or 1)) for r in records])
            self._db.executemany("INSERT OR IGNORE INTO contents VALUES (?, ?)",
                                 [(r["source_id"], bytes.fromhex(content_key(r))) for r in records])

    def holds(self, source_id: str, content: str) -> bool:
        """Whether `content` (a content_key) is held under `source_id`."""
        return self._db.execute("SELECT 1 FROM contents WHERE source_id = ? AND content = ?",
                                (source_id, bytes.fromhex(content))).fetchone() is not None

    def newest(self, source_id: str) -> tuple[int, int | None, str | None]:
        """The newest revision held under `source_id` (0 when none) and, when this ingest added it, the
        number of the file and the place in it."""
        found = self._db.execute("SELECT latest, file, place FROM ids WHERE source_id = ?", (source_id,)).fetchone()
        return found if found is not None else (0, None, None)

    def add(self, source_id: str, content: str, revision: int, file: int, place: str) -> None:
        """Record revision `revision` of `source_id`, added by this ingest from `file` at `place`."""
        self._db.execute("INSERT OR REPLACE INTO ids VALUES (?, ?, ?, ?)", (source_id, revision, file, place))
        self._db.execute("INSERT OR IGNORE INTO contents VALUES (?, ?)", (source_id, bytes.fromhex(content)))
