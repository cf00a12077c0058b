"""Reading task files in whatever layout a benchmark publishes, one record at a time.

JSON arrays, JSON Lines, pretty-printed concatenated objects, CSV/TSV and Parquet; blank lines and a
missing final newline. Text is UTF-8 (a BOM names UTF-8, UTF-16 or UTF-32), or the encoding the
caller names for an odd file. A record holding bytes that are not valid UTF-8 becomes a `BadRecord`
naming file, line and byte offset, and the records around it are read as they are: a file is never
decoded as a whole in some other encoding behind the caller's back. A broken record becomes a
`BadRecord` naming where it is; reading goes on after it.

Reading is bounded. JSON Lines in UTF-8 (the common layout, and the only one that grows to
gigabytes) are streamed a line at a time, up to `Limits.max_file_bytes` in all; Parquet a row
group at a time. Layouts that cannot be split without parsing (JSON arrays, concatenated values,
CSV, and files in another encoding) are read whole, up to the smaller `Limits.max_whole_file_bytes`.
A file over its cap, an endless stream, or binary data (a NUL byte in a text file) is refused with
`FileRefused` (one line naming the cap), never read into memory whole.
"""

from __future__ import annotations

import codecs
import csv
import io
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

_BOMS = ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"), (codecs.BOM_UTF8, "utf-8-sig"),
         (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))
_NEXT_VALUE = re.compile(r"\S")
_HEAD_BYTES = 1 << 16
"""How much of a file is looked at to tell its layout and whether it is text."""
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


@dataclass(frozen=True)
class Limits:
    """How much of a task file ingest reads (taskset.ingest): streamed layouts up to `max_file_bytes`,
    layouts read whole up to `max_whole_file_bytes`, and one line or record up to `max_record_bytes`."""

    max_file_bytes: int = 2 << 30
    max_whole_file_bytes: int = 256 << 20
    max_record_bytes: int = 64 << 20


class FileRefused(ValueError):
    """A file ingest will not read: over a size cap, endless, or not text."""


def _size(count: int) -> str:
    return f"{count / 2**30:.1f} GiB" if count >= 2**30 else f"{count / 2**20:.0f} MiB"


def read_records(path: str | Path, encoding: str | None = None,
                 limits: Limits | None = None) -> Iterator[Record | BadRecord]:
    """Every record of a task file, in order, with BadRecords in place of the broken ones; FileRefused
    (raised when met) for a file over `limits`, an endless stream or binary data."""
    name = str(path)
    limits = limits or Limits()
    suffix = Path(name).suffix.lower()
    try:
        if suffix == ".parquet":
            yield from _parquet(name)
            return
        handle = open(name, "rb")  # noqa: SIM115: closed below, after the records are read
    except (OSError, ValueError) as error:  # pyarrow raises ArrowInvalid, a ValueError
        yield BadRecord(name, None, f"cannot read the file: {error}")
        return
    with handle:
        if os.path.isfile(name) and os.path.getsize(name) > limits.max_file_bytes:
            raise FileRefused(f"{name}: {_size(os.path.getsize(name))}, over the ingest size cap of "
                              f"{_size(limits.max_file_bytes)} (taskset.ingest.max_file_bytes)")
        head = handle.read(_HEAD_BYTES)
        if len(head) == _HEAD_BYTES and b"\n" not in head:  # a long first line: its end tells the layout
            head += handle.readline(limits.max_record_bytes)
        bom = next((named for bom, named in _BOMS if head.startswith(bom)), None)
        utf8 = encoding is None and bom in (None, "utf-8-sig")
        if utf8 and b"\0" in head:
            raise FileRefused(f"{name}: binary data (byte 0x00 at byte offset {head.index(0)}), not a task file")
        if utf8 and suffix not in (".csv", ".tsv") and _first_line_is_json(head.removeprefix(codecs.BOM_UTF8)):
            yield from _json_lines(name, head, handle, limits)
            return
        whole = head + _rest(name, handle, len(head), limits)
        try:
            decoded = decode(whole, encoding)
        except (OSError, ValueError) as error:
            yield BadRecord(name, None, f"cannot read the file: {error}")
            return
    if suffix in (".csv", ".tsv"):
        records = _csv(name, decoded.text, "\t" if suffix == ".tsv" else ",")
    elif decoded.text.lstrip().startswith("["):
        records = _json_array(name, decoded.text)
    else:
        records = _json_values(name, decoded.text)
    yield from _without_invalid_bytes(records, decoded.invalid)


def _rest(name: str, handle: BinaryIO, read: int, limits: Limits) -> bytes:
    """The rest of a file read whole, FileRefused past max_whole_file_bytes (or an endless stream)."""
    rest = handle.read(max(0, limits.max_whole_file_bytes - read) + 1)
    if read + len(rest) > limits.max_whole_file_bytes:
        raise FileRefused(f"{name}: over {_size(limits.max_whole_file_bytes)}, the cap on a file read whole "
                          "(JSON arrays, CSV, other encodings; taskset.ingest.max_whole_file_bytes): "
                          "write it as JSON Lines, which is streamed, or raise the cap")
    return rest


def _first_line_is_json(head: bytes) -> bool:
    """Whether `head` starts a JSON Lines file: its first non-blank line is a whole JSON value, and not
    the opening of an array (an array is one document, whatever its lines)."""
    lines = head.split(b"\n")
    for line in lines[:-1] if len(lines) > 1 else lines:
        if line.strip():
            if line.lstrip().startswith(b"["):
                return False
            try:
                json.loads(line)
            except (json.JSONDecodeError, UnicodeDecodeError):
                return False
            return True
    return False


def _json_lines(name: str, head: bytes, handle: BinaryIO, limits: Limits) -> Iterator[Record | BadRecord]:
    """JSON Lines streamed: one line in memory at a time, the file up to max_file_bytes."""
    lines = _lines(name, head, handle, limits)
    for number, (offset, line) in enumerate(lines, start=1):
        if number == 1 and line.startswith(codecs.BOM_UTF8):
            line, offset = line[len(codecs.BOM_UTF8):], offset + len(codecs.BOM_UTF8)
        if len(line) > limits.max_record_bytes:
            yield BadRecord(name, number, f"line longer than {_size(limits.max_record_bytes)} "
                                          "(taskset.ingest.max_record_bytes)")
            continue
        if not line.strip():
            continue
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as error:
            yield BadRecord(name, number, f"not valid UTF-8 (byte 0x{line[error.start]:02x} at byte offset "
                                          f"{offset + error.start}, line {number}); if the whole file uses another "
                                          "encoding, pass --encoding (e.g. cp1252)")
            continue
        try:
            yield Record(name, number, json.loads(text))
        except json.JSONDecodeError as error:
            yield BadRecord(name, number, f"invalid JSON: {error.msg} at column {error.colno}")


def _lines(name: str, head: bytes, handle: BinaryIO, limits: Limits) -> Iterator[tuple[int, bytes]]:
    """(byte offset, line without its "\\n") of a file whose first bytes are `head`; a line longer than
    max_record_bytes comes back cut to one byte past the limit (the rest skipped, never held), and
    FileRefused past max_file_bytes."""
    stream = io.BufferedReader(_Prefixed(head, handle), buffer_size=1 << 20)
    offset = 0
    while True:
        line = stream.readline(limits.max_record_bytes + 1)
        if not line:
            return
        size = len(line)
        while not line.endswith(b"\n") and size > limits.max_record_bytes:
            more = stream.readline(1 << 20)
            if not more:
                break
            size += len(more)
            line = line[:limits.max_record_bytes + 1] + (b"\n" if more.endswith(b"\n") else b"")
            if offset + size > limits.max_file_bytes:
                break
        if offset + size > limits.max_file_bytes:
            raise FileRefused(f"{name}: more than {_size(limits.max_file_bytes)} (an endless stream?), the ingest "
                              "size cap (taskset.ingest.max_file_bytes)")
        yield offset, line.removesuffix(b"\n")
        offset += size


class _Prefixed(io.RawIOBase):
    """A binary stream of bytes already read (`head`) followed by the rest of `handle`."""

    def __init__(self, head: bytes, handle: BinaryIO) -> None:
        self.head, self.handle = memoryview(head), handle

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self.head:
            count = min(len(buffer), len(self.head))
            buffer[:count] = self.head[:count]
            self.head = self.head[count:]
            return count
        return self.handle.readinto(buffer)


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

    index = 0
    for batch in pq.ParquetFile(name).iter_batches(batch_size=4096):
        for row in batch.to_pylist():
            index += 1
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
