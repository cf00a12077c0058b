"""Keeps API keys out of everything the pipeline writes: ledger rows, logs and error messages (`redact`),
and every text the lake stores (`redact_known`, which Lake applies to each frame before writing)."""

from __future__ import annotations

import os
import re
import threading
from typing import Any

_KEY_LIKE = re.compile(r"\b(sk|pk|rk)-[A-Za-z0-9_\-]{8,}")
_SECRET_NAME = re.compile(r"API_?KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL", re.I)
REDACTED = "[redacted]"
_known: set[str] = set()
_lock = threading.Lock()


def register_secret(value: str) -> None:
    """Remember a key read from the environment so `redact` removes it wherever it shows up."""
    if len(value) >= 4:
        with _lock:
            _known.add(value)


def known_secrets() -> list[str]:
    """Every secret this process knows, longest first: the keys registered (each endpoint's api_key_env) and
    the values of environment variables named like a secret (OPENAI_API_KEY, HF_TOKEN, ...; 8+ characters)."""
    found = {value for name, value in os.environ.items() if _SECRET_NAME.search(name) and len(value) >= 8}
    with _lock:
        found |= _known
    return sorted(found, key=len, reverse=True)


def redact(text: str) -> str:
    """`text` with every registered key and anything shaped like an OpenAI-style key replaced."""
    with _lock:
        known = sorted(_known, key=len, reverse=True)
    for value in known:
        text = text.replace(value, REDACTED)
    return _KEY_LIKE.sub(REDACTED, text)


def redact_known(value: Any, secrets: list[str]) -> Any:
    """`value` with each of `secrets` replaced in every string in it (also inside lists and dicts). Only known
    values go: stored text (task texts, answers) keeps whatever merely looks like a key."""
    if isinstance(value, str):
        for secret in secrets:
            if secret in value:
                value = value.replace(secret, REDACTED)
        return value
    if isinstance(value, dict):
        return {k: redact_known(v, secrets) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_known(v, secrets) for v in value]
    return value
