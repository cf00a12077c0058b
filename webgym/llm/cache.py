"""Persistent answer cache: SQLite under llm.cache_dir, keyed by the full request.

The key covers the endpoint family, model, messages (images by hash), every sampling parameter,
the response format and the prompt name and version, so a rerun of a stage sends no request
while any change to what the model would see is a miss. Only answers are stored, never keys.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

KEY_FORMAT = 1
"""Bump when the key's ingredients change, so old entries stop matching."""

_DATA_URL = re.compile(r"^data:[^;,]+;base64,")


def _hash_images(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _hash_images(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_hash_images(v) for v in value]
    if isinstance(value, str) and _DATA_URL.match(value):
        return "sha256:" + hashlib.sha256(value.encode("ascii")).hexdigest()
    return value


def request_key(family: str, model: str, messages: list[dict[str, Any]], params: dict[str, Any],
                prompt: tuple[str, str] | None) -> str:
    """SHA-256 of the canonical request; `prompt` is (name, version) of the template used."""
    canonical = json.dumps({"format": KEY_FORMAT, "family": family, "model": model,
                            "messages": _hash_images(messages), "params": params,
                            "prompt": list(prompt) if prompt else None},
                           sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class CacheStats:
    """What `webgym llm cache stats` prints."""

    path: Path
    entries: int
    hits: int
    size_bytes: int
    by_purpose: list[tuple[str, str, int, int]]
    """(purpose, model, entries, hits) rows."""


class ResponseCache:
    """Thread-safe SQLite store of chat completions (as JSON), shared by processes via WAL."""

    FILE = "responses.sqlite3"

    def __init__(self, directory: Path) -> None:
        self.path = directory / self.FILE
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None

    def _connect(self) -> sqlite3.Connection:
        if self._db is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(self.path, timeout=30, check_same_thread=False, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute("""CREATE TABLE IF NOT EXISTS responses (
                key TEXT PRIMARY KEY, purpose TEXT NOT NULL, model TEXT NOT NULL,
                created_at TEXT NOT NULL, hits INTEGER NOT NULL DEFAULT 0, response TEXT NOT NULL)""")
            self._db = db
        return self._db

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored completion for `key`, counting the hit; None on a miss."""
        with self._lock:
            db = self._connect()
            row = db.execute("SELECT response FROM responses WHERE key = ?", (key,)).fetchone()
            if row is None:
                return None
            db.execute("UPDATE responses SET hits = hits + 1 WHERE key = ?", (key,))
        return json.loads(row[0])

    def put(self, key: str, purpose: str, model: str, response: dict[str, Any]) -> None:
        with self._lock:
            self._connect().execute(
                "INSERT OR REPLACE INTO responses (key, purpose, model, created_at, response) VALUES (?, ?, ?, ?, ?)",
                (key, purpose, model, dt.datetime.now(dt.UTC).isoformat(), json.dumps(response)))

    def stats(self) -> CacheStats:
        if not self.path.exists():
            return CacheStats(self.path, 0, 0, 0, [])
        with self._lock:
            db = self._connect()
            entries, hits = db.execute("SELECT count(*), coalesce(sum(hits), 0) FROM responses").fetchone()
            groups = db.execute("SELECT purpose, model, count(*), sum(hits) FROM responses "
                                "GROUP BY purpose, model ORDER BY purpose, model").fetchall()
        size = sum(p.stat().st_size for p in self.path.parent.glob(self.FILE + "*"))
        return CacheStats(self.path, entries, hits, size, [tuple(g) for g in groups])

    def clear(self, purpose: str | None = None) -> int:
        """Delete all entries (or one purpose's); return how many."""
        if not self.path.exists():
            return 0
        with self._lock:
            db = self._connect()
            if purpose is None:
                removed = db.execute("DELETE FROM responses").rowcount
            else:
                removed = db.execute("DELETE FROM responses WHERE purpose = ?", (purpose,)).rowcount
            db.execute("VACUUM")
        return removed

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None
