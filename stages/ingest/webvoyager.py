"""WebVoyager and PAE: JSON Lines of {web_name, id, ques, web}.

WebVoyager's answers live in a separate `reference_answer.json` ({web_name: {notice, answers:
[{id, type, ans}]}}), joined on f"{web_name}--{id}"; it is used when given as a path or when it
sits next to the task file. The curated subsets and FARA's re-worded revision use the same layout.

PAE (Proposer-Agent-Evaluator) writes its tasks in this layout too. Its proposed training tasks
repeat ids, so a PAE file whose ids repeat is identified by file and line; its evaluation files
(e.g. `webarena_map_google_fixed_eval.jsonl`) add a WebArena-style `eval` block, which is kept whole
with its reference answer.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from schemas.values import website_of
from stages.ingest.adapter import Adapter, RecordError, Where, as_json, id_field, optional_text, text_field
from stages.ingest.read import Record, read_records
from stages.ingest.webarena import eval_block

log = logging.getLogger(__name__)

ANSWER_FILE = "reference_answer.json"


def is_answer_file(record: Any) -> bool:
    """Whether a parsed JSON document is WebVoyager's answer file."""
    return (isinstance(record, dict) and bool(record)
            and all(isinstance(v, dict) and isinstance(v.get("answers"), list) for v in record.values()))


def _load_answers(path: str) -> dict[str, dict]:
    with open(path, encoding="utf-8-sig") as handle:
        document = json.load(handle)
    if not is_answer_file(document):
        raise RecordError(f"{path} is not a WebVoyager answer file ({{web_name: {{answers: [...]}}}})")
    return {f"{web}--{answer['id']}": {"answer": answer.get("ans"), "answer_type": answer.get("type"),
                                       "notice": entry.get("notice") or None}
            for web, entry in document.items() for answer in entry["answers"]}


def _prepare(paths: list[str], mapping: dict[str, str], encoding: str | None) -> tuple[list[str], dict[str, dict]]:
    """Split answer files from task files (adding a sibling reference_answer.json) and load answers."""
    answer_files, task_files = [], []
    for path in paths:
        (answer_files if Path(path).name == ANSWER_FILE or _looks_like_answers(path) else task_files).append(path)
    for path in task_files:
        sibling = Path(path).with_name(ANSWER_FILE)
        if sibling.exists() and str(sibling) not in answer_files:
            answer_files.append(str(sibling))
    answers: dict[str, dict] = {}
    for path in answer_files:
        loaded = _load_answers(path)
        log.info("answers: %d read from %s", len(loaded), path)
        answers.update(loaded)
    return task_files, answers


def _looks_like_answers(path: str) -> bool:
    if Path(path).suffix.lower() != ".json":
        return False
    try:
        with open(path, encoding="utf-8-sig") as handle:
            return is_answer_file(json.load(handle))
    except (OSError, ValueError):
        return False


def _fields(record: dict, source_id: str) -> dict[str, Any]:
    start_url = text_field(record, "web") if record.get("web") else None
    return {"source_id": source_id, "text": text_field(record, "ques"),
            "website": website_of(start_url), "start_url": start_url}


def webvoyager_task(record: dict, where: Where, answers: dict[str, dict] | None) -> dict[str, Any]:
    source_id = id_field(record, "id", where)
    fields = _fields(record, source_id)
    answer = (answers or {}).get(source_id)
    if answer:
        fields["reference_answer"] = answer["answer"]
        fields["evaluation"] = as_json({"answer_type": answer["answer_type"], "notice": answer["notice"]})
    return fields


def _repeats_ids(path: str, encoding: str | None) -> bool:
    ids = [optional_text(r.data.get("id")) for r in read_records(path, encoding)
           if isinstance(r, Record) and isinstance(r.data, dict)]
    present = [i for i in ids if i is not None]
    return len(set(present)) < len(present)


def _pae_prepare(paths: list[str], mapping: dict[str, str], encoding: str | None) -> tuple[list[str], set[str]]:
    """The task files, and the context: those whose ids repeat (identified by file and line instead)."""
    return paths, {path for path in paths if _repeats_ids(path, encoding)}


def pae_task(record: dict, where: Where, repeating: set[str]) -> dict[str, Any]:
    source_id = where.fallback_id if where.file in repeating else id_field(record, "id", where)
    return {**_fields(record, source_id), **eval_block(record)}


def _recognises(record: dict) -> bool:
    return ({"web_name", "ques", "web"} <= record.keys() and "eval" not in record) or is_answer_file(record)


RECORD_FIELDS = (("id", "source_id"), ("ques", "text"), ("web", "start_url"), ("web", "website"), ("web_name", "raw"))

WEBVOYAGER = Adapter("webvoyager", "WebVoyager tasks (JSON Lines) with answers from reference_answer.json",
                     webvoyager_task, required=(("ques", "web"),), fields=RECORD_FIELDS, recognises=_recognises,
                     prepare=_prepare)
PAE = Adapter("pae", "PAE tasks (WebVoyager layout; its eval block and reference answers kept; file:line ids "
                     "when ids repeat)", pae_task, required=(("ques", "web"),),
              fields=(*RECORD_FIELDS, ("eval", "evaluation"), ("eval.reference_answers", "reference_answer")),
              recognises=lambda r: {"ques", "web", "eval"} <= r.keys() and isinstance(r["eval"], dict),
              prepare=_pae_prepare)
