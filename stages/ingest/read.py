"""Reading task files in whatever layout a benchmark publishes, one record at a time.

JSON arrays, JSON Lines, pretty-printed concatenated objects, CSV/TSV and Parquet; blank lines and a
missing final newline. Text is UTF-8 (a BOM names UTF-8, UTF-16 or UTF-32), or the encoding the
caller names for an odd file. A record holding bytes that are not valid UTF-8 becomes a `BadRecord`
naming file, line and byte offset, and the records around it are read as they are: a file is never
decoded as a whole in some other encoding behind the caller's back. A broken record becomes a
`BadRecord` naming where it is; reading goes on after it.
"""

from __future__ import annotations

import codecs
import csv
import io
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_BOMS = ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"), (codecs.BOM_UTF8, "utf-8-sig"),
         (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))
_NEXT_VALUE = re.compile(r"\S")
_NEXT_ELEMENT = re.compile(r"[^\s,]")


def location(line: int | None, index: int | None) -> str:
    """Where a record is, as people count: 'line N' in line-based files, 'record N (line M)' for the
    N-th element of a JSON array (or 'record N' in a Parquet file); '' for the whole file."""
    if index is None:
        return f"line {line}" if line is not None else ""
    return f"record {index}" + (f" (line {line})" if line is not None else "")


@dataclass(frozen=True)
class Record:
    """One record as read: `line` is the 1-based line it starts on (None in Parquet), `index` the
    1-based position among the elements of a JSON array or the rows of a Parquet file (None in
    line-based files, where the line alone says where it is)."""

    file: str
    line: int | None
    data: Any
    index: int | None = None

    @property
    def where(self) -> str:
        return location(self.line, self.index)


@dataclass(frozen=True)
class BadRecord:
    """A record that could not be read or converted; line and index both None when the whole file failed."""

    file: str
    line: int | None
    reason: str
    index: int | None = None

    @property
    def whole_file(self) -> bool:
        return self.line is None and self.index is None

    def __str__(self) -> str:
        where = location(self.line, self.index)
        return f"{self.file}: {where}: {self.reason}" if where else f"{self.file}: {self.reason}"


@dataclass(frozen=True)
class Text:
    """A file's text, with the lines (1-based) holding bytes that are not UTF-8, each with the first
    bad byte and its offset in the file; those bytes read as U+FFFD."""

    text: str
    invalid: dict[int, str] = field(default_factory=dict)


class EncodingProblem(ValueError):
    """The file cannot be decoded at all in the encoding it was given."""


def decode(data: bytes, encoding: str | None = None) -> Text:
    """A file's text: in `encoding` when given (strictly), else by its BOM, else UTF-8 with every
    line holding invalid bytes listed (never guessed as another encoding)."""
    if encoding is not None:
        return Text(_strict(data, encoding))
    for bom, named in _BOMS:
        if data.startswith(bom):
            return Text(_strict(data, named))
    try:
        return Text(data.decode("utf-8"))
    except UnicodeDecodeError:
        pass
    invalid, offset = {}, 0
    for number, line in enumerate(data.split(b"\n"), start=1):
        try:
            line.decode("utf-8")
        except UnicodeDecodeError as error:
            invalid[number] = f"byte 0x{line[error.start]:02x} at byte offset {offset + error.start}"
        offset += len(line) + 1
    return Text(data.decode("utf-8", errors="replace"), invalid)


def _strict(data: bytes, encoding: str) -> str:
    try:
        return data.decode(encoding)
    except LookupError:
        raise EncodingProblem(f"unknown encoding {encoding!r}") from None
    except UnicodeDecodeError as error:
        raise EncodingProblem(f"not valid {encoding}: byte 0x{data[error.start]:02x} at byte offset "
                              f"{error.start}") from None


def read_records(path: str | Path, encoding: str | None = None) -> Iterator[Record | BadRecord]:
    """Every record of a task file, in order, with BadRecords in place of the broken ones."""
    name = str(path)
    suffix = Path(name).suffix.lower()
    try:
        if suffix == ".parquet":
            yield from _parquet(name)
            return
        with open(name, "rb") as handle:
            raw = handle.read()
        decoded = decode(raw, encoding)
    except (OSError, ValueError) as error:  # pyarrow raises ArrowInvalid, a ValueError
        yield BadRecord(name, None, f"cannot read the file: {error}")
        return
    if suffix in (".csv", ".tsv"):
        records = _csv(name, decoded.text, "\t" if suffix == ".tsv" else ",")
    elif decoded.text.lstrip().startswith("["):
        records = _json_array(name, decoded.text)
    else:
        records = _json_values(name, decoded.text)
    yield from _without_invalid_bytes(records, decoded.invalid)


def _without_invalid_bytes(records: Iterator[tuple[Record | BadRecord, int]],
                           invalid: dict[int, str]) -> Iterator[Record | BadRecord]:
    """The records, each one spanning a line with invalid bytes replaced by a BadRecord saying where."""
    for item, last_line in records:
        if invalid and isinstance(item, Record) and item.line is not None:
            bad = next((line for line in range(item.line, last_line + 1) if line in invalid), None)
            if bad is not None:
                yield BadRecord(item.file, item.line, f"not valid UTF-8 ({invalid[bad]}, line {bad}); if the whole "
                                                      "file uses another encoding, pass --encoding (e.g. cp1252)",
                                item.index)
                continue
        yield item


def _parquet(name: str) -> Iterator[Record]:
    import pyarrow.parquet as pq  # only for Parquet seed files: keeps `webgym` start-up light

    for index, row in enumerate(pq.ParquetFile(name).read().to_pylist(), start=1):
        yield Record(name, None, row, index)


def _csv(name: str, text: str, delimiter: str) -> Iterator[tuple[Record | BadRecord, int]]:
    """CSV rows as (record, last line); a record's line is the line its row starts on."""
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    try:
        header = next(reader)
    except StopIteration:
        return
    except csv.Error as error:
        yield BadRecord(name, 1, f"unreadable CSV header: {error}"), 1
        return
    header = [h.strip() for h in header]
    start = reader.line_num + 1
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as error:
            yield BadRecord(name, start, f"unreadable CSV row: {error}"), reader.line_num
            start = reader.line_num + 1
            continue
        if not any(cell.strip() for cell in row):
            start = reader.line_num + 1
            continue
        if len(row) != len(header):
            yield BadRecord(name, start, f"expected {len(header)} fields ({', '.join(header)}), found {len(row)}"), \
                reader.line_num
        else:
            yield Record(name, start, dict(zip(header, row, strict=True))), reader.line_num
        start = reader.line_num + 1


class _Lines:
    """Line numbers of positions met in increasing order, counting each stretch of text once (a
    count from the start for every record would be quadratic in big arrays)."""

    def __init__(self, text: str) -> None:
        self.text, self.position, self.line = text, 0, 1

    def at(self, position: int) -> int:
        if position < self.position:
            return self.text.count("\n", 0, position) + 1
        self.line += self.text.count("\n", self.position, position)
        self.position = position
        return self.line


def _json_values(name: str, text: str) -> Iterator[tuple[Record | BadRecord, int]]:
    """JSON Lines (one value per line), or values spanning several lines when the first one does.
    Lines end at "\\n" only: JSON strings may hold U+2028 and other characters str.splitlines splits on."""
    lines = text.split("\n")
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
            yield Record(name, number, json.loads(line)), number
        except json.JSONDecodeError as error:
            yield BadRecord(name, number, f"invalid JSON: {error.msg} at column {error.colno}"), number


def _json_stream(name: str, text: str) -> Iterator[tuple[Record | BadRecord, int]]:
    """Concatenated (pretty-printed) values; after a broken one, resume at the next line that starts a value."""
    decoder = json.JSONDecoder()
    lines = _Lines(text)
    position = 0
    while True:
        match = _NEXT_VALUE.search(text, position)
        if match is None:
            return
        position = match.start()
        try:
            value, end = decoder.raw_decode(text, position)
        except json.JSONDecodeError as error:
            yield BadRecord(name, lines.at(position), f"invalid JSON: {error.msg} at line {error.lineno}, "
                                                            f"column {error.colno}"), error.lineno
            resume = re.compile(r"\n(?=[\[{])").search(text, error.pos)
            if resume is None:
                return
            position = resume.start() + 1
            continue
        yield Record(name, lines.at(position), value), lines.at(end - 1)
        position = end


def _json_array(name: str, text: str) -> Iterator[tuple[Record | BadRecord, int]]:
    """Elements of a top-level array, each with its 1-based index and the line it starts on; a broken
    element is reported and reading resumes at the next element that starts on a line of its own at
    the first element's indentation."""
    decoder = json.JSONDecoder()
    lines = _Lines(text)
    position = text.index("[") + 1
    index = 0
    indent: str | None = None
    while True:
        match = _NEXT_ELEMENT.search(text, position)
        if match is None or text[match.start()] == "]":
            if match is None:
                end = lines.at(len(text))
                yield BadRecord(name, end, "the array is not closed (file truncated?)"), end
            return
        position = match.start()
        index += 1
        line = lines.at(position)
        if indent is None:
            line_start = text.rfind("\n", 0, position) + 1
            indent = text[line_start:position] if not text[line_start:position].strip() else ""
        try:
            value, end = decoder.raw_decode(text, position)
        except json.JSONDecodeError as error:
            yield BadRecord(name, line, f"invalid JSON: {error.msg} at line {error.lineno}, column {error.colno}",
                            index), error.lineno
            resume = re.compile(r"\n" + re.escape(indent) + r"(?=[\[{\"0-9tfn-])").search(text, error.pos)
            if resume is None:
                return
            position = resume.start() + 1
            continue
        yield Record(name, line, value, index), lines.at(end - 1)
        position = end
