"""Keeps API keys out of everything the LLM layer writes: ledger rows, logs and error messages."""

from __future__ import annotations

import re
import threading

_KEY_LIKE = re.compile(r"\b(sk|pk|rk)-[A-Za-z0-9_\-]{8,}")
_known: set[str] = set()
_lock = threading.Lock()


def register_secret(value: str) -> None:
    """Remember a key read from the environment so `redact` removes it wherever it shows up."""
    if len(value) >= 4:
        with _lock:
            _known.add(value)


def redact(text: str) -> str:
    """`text` with every registered key and anything shaped like an OpenAI-style key replaced."""
    with _lock:
        known = sorted(_known, key=len, reverse=True)
    for value in known:
        text = text.replace(value, "[redacted]")
    return _KEY_LIKE.sub("[redacted]", text)
