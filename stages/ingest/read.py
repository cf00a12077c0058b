"""Reading task files in whatever layout a benchmark publishes, one record at a time.

JSON arrays, JSON Lines, pretty-printed concatenated objects, CSV/TSV and Parquet; UTF-8 with or
without a BOM, UTF-16/32 with a BOM, legacy single-byte encodings; blank lines and a missing final
newline. A broken record becomes a `BadRecord` naming file and line; reading goes on after it.
"""

from __future__ import annotations

import codecs
import csv
import io
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

_BOMS = ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"), (codecs.BOM_UTF8, "utf-8-sig"),
         (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))


@dataclass(frozen=True)
class Record:
    """One record as read: `line` is the 1-based line (JSON Lines, CSV) or 0-based index (array, Parquet)."""

    file: str
    line: int
    data: Any


@dataclass(frozen=True)
class BadRecord:
    """A record that could not be read or converted; `line` is None when the whole file failed."""

    file: str
    line: int | None
    reason: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line is not None else self.file
        return f"{where}: {self.reason}"


def decode(data: bytes, name: str) -> tuple[str, list[BadRecord]]:
    """Text of a file: BOM first, then UTF-8; a few undecodable lines are reported (and blanked),
    a file that is mostly not UTF-8 is read as cp1252 (the usual legacy export), else latin-1."""
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return data.decode(encoding), []
    try:
        return data.decode("utf-8"), []
    except UnicodeDecodeError:
        pass
    lines = data.split(b"\n")
    broken = [i for i, line in enumerate(lines) if not _is_utf8(line)]
    non_ascii = sum(1 for line in lines if not line.isascii())
    if len(broken) * 2 < non_ascii:
        problems = [BadRecord(name, i + 1, "not valid UTF-8; line skipped") for i in broken]
        skipped = set(broken)
        text = "\n".join("" if i in skipped else line.decode("utf-8") for i, line in enumerate(lines))
        return text, problems
    try:
        return data.decode("cp1252"), []
    except UnicodeDecodeError:
        return data.decode("latin-1"), []


def _is_utf8(line: bytes) -> bool:
    try:
        line.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def read_records(path: str | Path) -> Iterator[Record | BadRecord]:
    """Every record of a task file, in order, with BadRecords in place of the broken ones."""
    name = str(path)
    suffix = Path(name).suffix.lower()
    try:
        if suffix == ".parquet":
            yield from _parquet(name)
            return
        with open(name, "rb") as handle:
            raw = handle.read()
    except (OSError, ValueError) as error:  # pyarrow raises ArrowInvalid, a ValueError
        yield BadRecord(name, None, f"cannot read the file: {error}")
        return
    text, problems = decode(raw, name)
    yield from problems
    if suffix in (".csv", ".tsv"):
        yield from _csv(name, text, "\t" if suffix == ".tsv" else ",")
    elif text.lstrip().startswith("["):
        yield from _json_array(name, text)
    else:
        yield from _json_values(name, text)


def _parquet(name: str) -> Iterator[Record]:
    for index, row in enumerate(pq.ParquetFile(name).read().to_pylist()):
        yield Record(name, index, row)


def _csv(name: str, text: str, delimiter: str) -> Iterator[Record | BadRecord]:
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    try:
        header = next(reader)
    except StopIteration:
        return
    except csv.Error as error:
        yield BadRecord(name, 1, f"unreadable CSV header: {error}")
        return
    header = [h.strip() for h in header]
    start = reader.line_num + 1
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as error:
            yield BadRecord(name, start, f"unreadable CSV row: {error}")
            start = reader.line_num + 1
            continue
        if not any(cell.strip() for cell in row):
            start = reader.line_num + 1
            continue
        if len(row) != len(header):
            yield BadRecord(name, start, f"expected {len(header)} fields ({', '.join(header)}), found {len(row)}")
        else:
            yield Record(name, start, dict(zip(header, row, strict=True)))
        start = reader.line_num + 1


def _line_of(text: str, position: int) -> int:
    return text.count("\n", 0, position) + 1


def _json_values(name: str, text: str) -> Iterator[Record | BadRecord]:
    """JSON Lines (one value per line), or values spanning several lines when the first one does."""
    lines = text.splitlines()
    first = next((line for line in lines if line.strip()), None)
    if first is None:
        return
    try:
        json.loads(first)
    except json.JSONDecodeError:
        yield from _json_stream(name, text)
        return
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            yield Record(name, number, json.loads(line))
        except json.JSONDecodeError as error:
            yield BadRecord(name, number, f"invalid JSON: {error.msg} at column {error.colno}")


def _json_stream(name: str, text: str) -> Iterator[Record | BadRecord]:
    """Concatenated (pretty-printed) values; after a broken one, resume at the next line that starts a value."""
    decoder = json.JSONDecoder()
    position = 0
    while True:
        match = re.compile(r"\S").search(text, position)
        if match is None:
            return
        position = match.start()
        try:
            value, end = decoder.raw_decode(text, position)
        except json.JSONDecodeError as error:
            yield BadRecord(name, error.lineno, f"invalid JSON: {error.msg} at column {error.colno}")
            resume = re.compile(r"\n(?=[\[{])").search(text, error.pos)
            if resume is None:
                return
            position = resume.start() + 1
            continue
        yield Record(name, _line_of(text, position), value)
        position = end


def _json_array(name: str, text: str) -> Iterator[Record | BadRecord]:
    """Elements of a top-level array; a broken element is reported and reading resumes at the next
    element that starts on a line of its own at the first element's indentation."""
    try:
        values = json.loads(text)
    except json.JSONDecodeError:
        yield from _json_array_salvage(name, text)
        return
    for index, value in enumerate(values):
        yield Record(name, index, value)


def _json_array_salvage(name: str, text: str) -> Iterator[Record | BadRecord]:
    decoder = json.JSONDecoder()
    position = text.index("[") + 1
    index = 0
    indent: str | None = None
    while True:
        match = re.compile(r"[^\s,]").search(text, position)
        if match is None or text[match.start()] == "]":
            if match is None:
                yield BadRecord(name, _line_of(text, len(text)), "the array is not closed (file truncated?)")
            return
        position = match.start()
        if indent is None:
            line_start = text.rfind("\n", 0, position) + 1
            indent = text[line_start:position] if not text[line_start:position].strip() else ""
        try:
            value, position = decoder.raw_decode(text, position)
        except json.JSONDecodeError as error:
            yield BadRecord(name, error.lineno, f"record {index}: invalid JSON: {error.msg} at column {error.colno}")
            resume = re.compile(r"\n" + re.escape(indent) + r"(?=[\[{\"0-9tfn-])").search(text, error.pos)
            index += 1
            if resume is None:
                return
            position = resume.start() + 1
            continue
        yield Record(name, index, value)
        index += 1
