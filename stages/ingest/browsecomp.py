"""BrowseComp: OpenAI's CSV {problem, answer, problem_topic, canary}; problem and answer are
base64 XOR-encrypted with a key derived from the row's canary string (SHA-256, repeated), as in
simple-evals. Decrypted here; a row that does not decrypt to UTF-8 is reported."""

from __future__ import annotations

import base64
import binascii
import hashlib
from typing import Any

from stages.ingest.adapter import Adapter, RecordError, Where, as_json, optional_text


def _key(password: str, length: int) -> bytes:
    digest = hashlib.sha256(password.encode()).digest()
    return digest * (length // len(digest)) + digest[: length % len(digest)]


def decrypt(ciphertext_b64: str, password: str) -> str:
    """The plain text of a BrowseComp field; RecordError when it is not base64 or not UTF-8 after."""
    try:
        encrypted = base64.b64decode(ciphertext_b64, validate=True)
        return bytes(a ^ b for a, b in zip(encrypted, _key(password, len(encrypted)), strict=True)).decode()
    except (binascii.Error, UnicodeDecodeError) as error:
        raise RecordError(f"does not decrypt with the row's canary ({error.__class__.__name__})") from None


def browsecomp_task(record: dict, where: Where, context: Any) -> dict[str, Any]:
    canary = optional_text(record.get("canary"))
    if canary is None:
        raise RecordError("missing field 'canary' (the decryption key)")
    fields = {}
    for name in ("problem", "answer"):
        value = optional_text(record.get(name))
        if value is None:
            raise RecordError(f"missing field {name!r}")
        try:
            fields[name] = decrypt(value, canary).strip()
        except RecordError as error:
            raise RecordError(f"field {name!r} {error}") from None
    if not fields["problem"]:
        raise RecordError("field 'problem' decrypts to empty text")
    topic = optional_text(record.get("problem_topic"))
    return {"source_id": where.fallback_id, "text": fields["problem"], "reference_answer": fields["answer"],
            "evaluation": as_json({"problem_topic": topic}) if topic else None}


BROWSECOMP = Adapter("browsecomp", "BrowseComp CSV (problem/answer encrypted with the canary; decrypted)",
                     browsecomp_task, required=(("problem", "answer", "canary"),),
                     fields=(("problem", "text"), ("answer", "reference_answer"), ("problem_topic", "evaluation"),
                             ("canary", "raw")))
