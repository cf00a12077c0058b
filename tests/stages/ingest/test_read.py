"""Reading task files: layouts, encodings (UTF-8 by default, invalid bytes reported per record, an
explicit encoding for odd files) and where each record is ("line N", "record N (line M)")."""

from __future__ import annotations

import contextlib
import json
import os
import threading
import tracemalloc

import pytest

from stages.ingest.read import BadRecord, FileRefused, Limits, Record, read_records


def read(tmp_path, content: bytes, name: str = "tasks.jsonl", encoding: str | None = None,
         limits: Limits | None = None) -> list:
    path = tmp_path / name
    path.write_bytes(content)
    return list(read_records(path, encoding, limits))


def kinds(records: list) -> list[tuple[str, int | None, int | None]]:
    return [(type(r).__name__, r.line, r.index) for r in records]


@pytest.mark.parametrize(("content", "expected"), [
    (b'\xef\xbb\xbf{"a": 1}\n{"a": 2}', [(1, None), (2, None)]),               # UTF-8 BOM, no final newline
    ('{"a": 1}\n\n\n{"a": "\u00e9"}\n'.encode("utf-16"), [(1, None), (4, None)]),  # UTF-16 with BOM, blank lines
    (b'{\n  "a": 1\n}\n{\n  "a": 2\n}\n', [(1, None), (4, None)]),               # pretty-printed concatenated values
    (b'[{"a": 1}, {"a": 2}]', [(1, 1), (1, 2)]),                                 # JSON array on one line
    (b'[\n  {"a": 1},\n  {\n    "a": 2\n  }\n]\n', [(2, 1), (3, 2)]),            # JSON array, one element a line
])
def test_layouts_and_where_each_record_starts(tmp_path, content, expected):
    records = read(tmp_path, content, "tasks.json")
    assert all(isinstance(r, Record) for r in records)
    assert [(r.line, r.index) for r in records] == expected


def test_array_errors_say_record_n_and_the_line_it_starts_on(tmp_path):
    records = read(tmp_path, b'[\n  {"a": 1},\n  {"a": 2,\n   "b": oops},\n  {"a": 3}\n]\n', "tasks.json")
    assert kinds(records) == [("Record", 2, 1), ("BadRecord", 3, 2), ("Record", 5, 3)]
    assert str(records[1]).startswith(f"{tmp_path / 'tasks.json'}: record 2 (line 3): invalid JSON")
    assert records[2].where == "record 3 (line 5)"


def test_line_based_errors_say_line_n(tmp_path):
    records = read(tmp_path, b'{"a": 1}\n{"a": \n{"a": 3}\n')
    assert kinds(records) == [("Record", 1, None), ("BadRecord", 2, None), ("Record", 3, None)]
    assert str(records[1]).startswith(f"{tmp_path / 'tasks.jsonl'}: line 2: invalid JSON")


def test_an_invalid_byte_is_reported_with_line_and_byte_offset_and_the_rest_read_as_utf8(tmp_path):
    records = read(tmp_path, b'{"t": "shop\xe2\x80\x99s caf\xc3\xa9"}\n{"t": "bad \xff"}\n{"t": "na\xc3\xafve"}\n')
    assert kinds(records) == [("Record", 1, None), ("BadRecord", 2, None), ("Record", 3, None)]
    assert records[0].data == {"t": "shop\u2019s caf\u00e9"} and records[2].data == {"t": "na\u00efve"}
    assert "not valid UTF-8 (byte 0xff at byte offset 35, line 2)" in records[1].reason
    assert "--encoding" in records[1].reason


def test_an_invalid_byte_inside_an_array_element_spoils_only_that_element(tmp_path):
    content = '[\n  {"t": "caf\u00e9"},\n  {"t": "one",\n   "u": "bad \udcff"},\n  {"t": "three"}\n]\n'
    records = read(tmp_path, content.encode("utf-8", "surrogateescape"), "tasks.json")
    assert kinds(records) == [("Record", 2, 1), ("BadRecord", 3, 2), ("Record", 5, 3)]
    assert records[0].data == {"t": "caf\u00e9"} and "line 4" in records[1].reason


def test_a_legacy_file_needs_its_encoding_named(tmp_path):
    content = '{"t": "caf\u00e9 \u2019"}\n{"t": "plain"}\n'.encode("cp1252")
    assert kinds(read(tmp_path, content)) == [("BadRecord", 1, None), ("Record", 2, None)]
    records = read(tmp_path, content, encoding="cp1252")
    assert [r.data["t"] for r in records] == ["caf\u00e9 \u2019", "plain"]
    (bad,) = read(tmp_path, b'{"t": "\x81"}\n', encoding="cp1252")
    assert bad.whole_file and "not valid cp1252: byte 0x81 at byte offset 7" in bad.reason
    (unknown,) = read(tmp_path, b'{"t": 1}\n', encoding="no-such-codec")
    assert unknown.whole_file and "unknown encoding 'no-such-codec'" in unknown.reason


def test_line_separators_inside_json_strings_do_not_split_a_line(tmp_path):
    records = read(tmp_path, '{"t": "a\u2028b\u0085c"}\n{"t": "d"}\n'.encode())
    assert kinds(records) == [("Record", 1, None), ("Record", 2, None)]
    assert records[0].data["t"] == "a\u2028b\u0085c"


def test_csv_rows_with_the_wrong_number_of_fields_are_reported(tmp_path):
    records = read(tmp_path, b'text,website\n"multi\nline task",a.com\nonly-one-field\n\nok,b.com\n', "tasks.csv")
    assert kinds(records) == [("Record", 2, None), ("BadRecord", 4, None), ("Record", 6, None)]
    assert records[0].data == {"text": "multi\nline task", "website": "a.com"}


def test_a_missing_file_is_one_bad_entry(tmp_path):
    (bad,) = read_records(tmp_path / "nope.jsonl")
    assert isinstance(bad, BadRecord) and bad.whole_file and "cannot read" in bad.reason


def test_a_truncated_array_is_reported_after_its_whole_records(tmp_path):
    records = read(tmp_path, b'[\n  {"task_id": "a", "task_description": "one"},\n  {"task_id": "b", "task_descr',
                   "tasks.json")
    assert kinds(records) == [("Record", 2, 1), ("BadRecord", 3, 2)]



SMALL = Limits(max_file_bytes=1 << 20, max_whole_file_bytes=1 << 16, max_record_bytes=1 << 10)


def test_binary_data_is_refused_in_one_line(tmp_path):
    with pytest.raises(FileRefused, match=r"^/dev/zero: binary data \(byte 0x00 at byte offset 0\), not a task file$"):
        list(read_records("/dev/zero"))
    with pytest.raises(FileRefused, match="byte 0x00 at byte offset 9"):
        read(tmp_path, b'{"a": 1}\n\x00\x01\x02')
    with pytest.raises(FileRefused, match=r"over 64 MiB, the cap on a file read whole"):  # UTF-16: read whole, capped
        list(read_records("/dev/zero", "utf-16", Limits(max_whole_file_bytes=64 << 20)))


def _endless(fifo, line: bytes) -> threading.Thread:
    """A writer of `line` into the named pipe `fifo` until its reader goes."""
    def write() -> None:
        with contextlib.suppress(BrokenPipeError), open(fifo, "wb") as out:
            while True:
                out.write(line * 1000)

    os.mkfifo(fifo)
    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    return thread


def test_an_endless_stream_of_valid_lines_is_refused_at_the_size_cap(tmp_path):
    _endless(tmp_path / "tasks.jsonl", b'{"a": 1}\n')
    records = read_records(tmp_path / "tasks.jsonl", limits=SMALL)
    with pytest.raises(FileRefused, match=r"more than 1 MiB \(an endless stream\?\), the ingest size cap"):
        for count, _ in enumerate(records):  # noqa: B007: streamed, one record at a time, until the cap
            pass
    assert count == (1 << 20) // 9 - 1


def test_files_over_the_caps_are_refused_before_they_are_read(tmp_path):
    with pytest.raises(FileRefused, match=r"tasks.jsonl: 2 MiB, over the ingest size cap of 1 MiB"):
        read(tmp_path, b'{"a": 1}\n' * ((2 << 20) // 9), limits=SMALL)
    array = b"[" + b",".join([b'{"a": 1}'] * 10000) + b"]"
    with pytest.raises(FileRefused, match=r"over 0 MiB, the cap on a file read whole \(JSON arrays"):
        read(tmp_path, array, "tasks.json", limits=SMALL)
    assert len(read(tmp_path, array, "tasks.json")) == 10000


def test_a_line_over_the_record_cap_is_a_bad_record_and_the_next_line_is_read(tmp_path):
    records = read(tmp_path, b'{"a": 1}\n{"a": "' + b"x" * 5000 + b'"}\n{"a": 3}\n', limits=SMALL)
    assert kinds(records) == [("Record", 1, None), ("BadRecord", 2, None), ("Record", 3, None)]
    assert records[1].reason == "line longer than 0 MiB (taskset.ingest.max_record_bytes)"


def test_json_lines_are_streamed_in_small_memory(tmp_path):
    path = tmp_path / "tasks.jsonl"
    line = json.dumps({"text": "x" * 900}).encode() + b"\n"
    path.write_bytes(line * 8000)  # 7 MB
    tracemalloc.start()
    try:
        assert sum(1 for _ in read_records(path)) == 8000
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 3 << 20


def test_json_lines_with_a_long_first_line_are_streamed_too(tmp_path):
    limits = Limits(max_whole_file_bytes=1 << 16)  # a file read whole would be refused
    line = json.dumps({"text": "x" * 100_000}).encode() + b"\n"
    assert kinds(read(tmp_path, line * 3, limits=limits)) == [("Record", 1, None), ("Record", 2, None),
                                                              ("Record", 3, None)]
