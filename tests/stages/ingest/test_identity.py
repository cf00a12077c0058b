"""A seed task's identity: (source, source_id, revision). A known id with the same content is already
present, with new content it is the next revision; related benchmarks keep their own ids; records
without ids are named by their file's content hash. Which revision is current follows publication."""

from __future__ import annotations

import datetime as dt
import re
import shutil

import pandas as pd

import stages.ingest
from stages.ingest import TaskFiles, content_key, file_id, seed_task_batches, seed_tasks_from_files
from stages.ingest.read import Record
from stages.revisions import chosen_revisions
from stages.stale import stale_answers
from tests.stages.ingest import FIXTURES

WEBVOYAGER = FIXTURES / "webvoyager" / "WebVoyager_data.jsonl"
REVISED = FIXTURES / "webvoyager_revised" / "WebVoyager_data_08312025.jsonl"


def ingest(source: str, paths, existing: pd.DataFrame | None = None, published=None):
    return seed_tasks_from_files(source, [str(p) for p in paths], existing, published=published)


def lake_of(*results) -> pd.DataFrame:
    return pd.concat([r.rows for r in results], ignore_index=True)


def test_a_reworded_record_of_a_known_id_is_a_new_revision_linked_to_the_old_one():
    first = ingest("webvoyager", [WEBVOYAGER])
    revised = ingest("webvoyager", [REVISED], first.rows)
    (report,) = revised.files
    assert (report.read, report.ingested, report.revised, report.present) == (2, 1, 1, 1)
    (row,) = revised.rows.to_dict("records")
    assert (row["source_id"], row["revision"], row["previous_revision"]) == ("Cambridge Dictionary--3", 2, 1)
    assert row["text"] == "Look up the British pronunciation of \u2018zeitgeist\u2019."
    assert row["reference_answer"] == "/\u02c8tsa\u026at.\u0261a\u026ast/"  # the answer file beside it is joined too
    lake = lake_of(first, revised)
    for again in (REVISED, WEBVOYAGER):  # either revision, read again, is already present
        result = ingest("webvoyager", [again], lake)
        assert result.rows.empty and result.files[0].present == result.files[0].read - len(result.files[0].bad)


def test_the_same_id_with_other_content_is_bad_within_one_file_and_a_revision_across_files(tmp_path):
    one, two = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    one.write_text('{"web_name": "A", "id": "A--1", "ques": "one", "web": "https://a.com"}\n'
                   '{"web_name": "A", "id": "A--1", "ques": "two", "web": "https://a.com"}\n'
                   '{"web_name": "A", "id": "A--1", "ques": "one", "web": "https://a.com"}\n')
    two.write_text('{"web_name": "A", "id": "A--1", "ques": "one", "web": "https://b.com"}\n')
    result = ingest("webvoyager", [one, two])
    first, second = result.files
    assert (first.ingested, first.present) == (1, 1)
    assert str(first.bad[0]) == f"{one}: line 2: id 'A--1' already used by line 1 for a different task"
    assert (second.ingested, second.revised) == (1, 1)  # another start URL: a revision
    assert result.rows[["revision", "start_url"]].values.tolist() == [[1, "https://a.com"], [2, "https://b.com"]]


def test_batches_are_bounded_by_rows_and_bytes_and_identity_spans_them():
    """Frames hold batch_rows rows at most, fewer once their records reach batch_bytes; a record repeated
    batches later is still present, and its id with other content still bad."""
    def record(line: int, i: int, text: str = "") -> Record:
        return Record("tasks.jsonl", line, {"web_name": "A", "id": f"A--{i}", "ques": text or f"task {i}",
                                            "web": "https://a.com"})

    records = [record(i + 1, i) for i in range(10)]
    records += [record(11, 0), record(12, 1, "other"), record(13, 10, "x" * 1000), record(14, 11, "y")]
    stream = seed_task_batches(TaskFiles("webvoyager", {"tasks.jsonl": records}), batch_rows=4, batch_bytes=1000)
    assert stream.files[0].read == 0  # nothing is read before the frames are taken
    sizes = [len(frame) for frame in stream.batches]
    assert sizes == [4, 4, 3, 1]  # by 4 rows, but the long record fills the third frame with its bytes
    (report,) = stream.files
    assert (report.read, report.ingested, report.present) == (14, 12, 1)
    assert [str(b) for b in report.bad] == ["tasks.jsonl: line 12: id 'A--1' already used by line 2 for a different "
                                            "task"]


def test_a_report_counts_every_bad_record_and_keeps_the_first_ones(tmp_path, monkeypatch):
    monkeypatch.setattr(stages.ingest, "BAD_KEPT", 5)
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"web_name": "A", "id": "A--1", "ques": "one", "web": "https://a.com"}\n' + "{broken\n" * 40)
    (report,) = ingest("webvoyager", [tasks]).files
    assert (report.read, report.ingested, report.bad_count) == (41, 1, 40)
    assert [b.line for b in report.bad] == [2, 3, 4, 5, 6]


def test_webarena_lite_tasks_are_not_taken_for_the_webarena_tasks_they_revise():
    webarena = ingest("webarena", [FIXTURES / "webarena_test.raw.json"])
    lite = ingest("webarena-lite", [FIXTURES / "webarena_lite.raw.json"], webarena.rows)
    assert lite.files[0].ingested == 3 and lite.files[0].present == 0
    assert set(lite.rows["source"]) == {"webarena-lite"} and (lite.rows["revision"] == 1).all()


def test_records_without_ids_are_named_by_their_files_content_wherever_it_is(tmp_path):
    for folder in ("a", "b", "c"):
        (tmp_path / folder).mkdir()
        shutil.copy(FIXTURES / "agentsynth_task_sequences.jsonl", tmp_path / folder / "tasks.jsonl")
    edited = tmp_path / "b" / "tasks.jsonl"
    edited.write_text(edited.read_text().replace("official trailer", "first trailer"))
    first = ingest("agentsynth", [tmp_path / "a" / "tasks.jsonl"])
    (source_id,) = first.rows["source_id"]
    assert re.fullmatch(r"file@[0-9a-f]{16}:1", source_id)
    assert source_id == f"{file_id(str(tmp_path / 'a' / 'tasks.jsonl'))}:1"
    second = ingest("agentsynth", [edited], first.rows)
    assert second.files[0].ingested == 1 and second.rows["source_id"].iloc[0] != source_id
    lake = lake_of(first, second)
    for again in (tmp_path / "a" / "tasks.jsonl", tmp_path / "c" / "tasks.jsonl"):  # the same file in another folder
        result = ingest("agentsynth", [again], lake)
        assert result.rows.empty and result.files[0].present == 1


def test_array_records_without_ids_are_named_by_their_position():
    rows = ingest("insta", [FIXTURES / "insta_v3.parquet"]).rows
    assert [re.sub("@[0-9a-f]{16}", "", i) for i in rows["source_id"]] == ["file#1", "file#2", "file#4"]


def test_content_is_text_start_url_evaluation_and_answer_whatever_the_key_order():
    row = {"text": "t", "start_url": "u", "evaluation": '{"a": 1, "b": 2}', "reference_answer": "r"}
    assert content_key(row) == content_key({**row, "evaluation": '{"b": 2, "a": 1}', "website": "other"})
    for column, value in (("text", "t2"), ("start_url", "u2"), ("evaluation", '{"a": 2}'), ("reference_answer", None)):
        assert content_key(row) != content_key({**row, column: value})


def _revisions() -> pd.DataFrame:
    return pd.DataFrame([
        {"task_id": "a1", "parent_task_id": None, "source": "s", "source_id": "a", "revision": None},
        {"task_id": "a2", "parent_task_id": None, "source": "s", "source_id": "a", "revision": 2},
        {"task_id": "a1.0", "parent_task_id": "a1", "source": "s", "source_id": "a", "revision": None},
        {"task_id": "a2.0", "parent_task_id": "a2", "source": "s", "source_id": "a", "revision": 2},
        {"task_id": "b1", "parent_task_id": None, "source": "s", "source_id": "b", "revision": 1},
        {"task_id": "c1", "parent_task_id": None, "source": "t", "source_id": "a", "revision": 1}])


def test_the_task_set_uses_the_newest_revision_unless_told_otherwise():
    tasks = _revisions()
    assert chosen_revisions(tasks)["task_id"].tolist() == ["a2", "a2.0", "b1", "c1"]
    assert chosen_revisions(tasks, "first")["task_id"].tolist() == ["a1", "a1.0", "b1", "c1"]
    assert chosen_revisions(tasks, "all")["task_id"].tolist() == tasks["task_id"].tolist()
    seeds = tasks[tasks["parent_task_id"].isna()].drop(columns=["task_id", "parent_task_id"])
    assert chosen_revisions(seeds)["revision"].tolist() == [2, 1, 1]


OM2W, OM2W_REDATED = FIXTURES / "Online_Mind2Web.json", FIXTURES / "online_mind2web_redated" / "Online_Mind2Web.json"


def current_texts(lake: pd.DataFrame) -> dict[str, str]:
    chosen = chosen_revisions(lake)
    return dict(zip(chosen["source_id"], chosen["text"], strict=True))


def test_the_current_revision_is_the_last_published_whatever_the_ingest_order():
    original_first = ingest("webvoyager", [WEBVOYAGER])
    original_first = lake_of(original_first, ingest("webvoyager", [REVISED], original_first.rows))
    revised_first = ingest("webvoyager", [REVISED])
    revised_first = lake_of(revised_first, ingest("webvoyager", [WEBVOYAGER], revised_first.rows))
    assert current_texts(original_first) == current_texts(revised_first)
    assert current_texts(revised_first)["Cambridge Dictionary--3"] == \
        "Look up the British pronunciation of \u2018zeitgeist\u2019."
    # The file name's date (08312025), or --published, dates a revision; an undated one is the oldest.
    assert set(revised_first["published"].dropna()) == {dt.datetime(2025, 8, 31, tzinfo=dt.UTC)}
    dated = ingest("webvoyager", [WEBVOYAGER], ingest("webvoyager", [REVISED]).rows, published=dt.datetime(
        2023, 11, 1, tzinfo=dt.UTC))
    lake = lake_of(ingest("webvoyager", [REVISED]), dated)
    assert current_texts(lake) == current_texts(original_first)
    assert chosen_revisions(lake, "first").set_index("source_id").at["Cambridge Dictionary--3", "text"] == \
        "Look up the pronunciation of \u2018zeitgeist\u2019."


def test_online_mind2web_redated_ids_are_revisions_of_their_base_id():
    base = "b7258ee05d75e6c50673a59914db412e"
    for order in ((OM2W, OM2W_REDATED), (OM2W_REDATED, OM2W)):
        first = ingest("online-mind2web", [order[0]])
        second = ingest("online-mind2web", [order[1]], first.rows)
        lake = lake_of(first, second)
        assert sorted(set(lake["source_id"])) == sorted({base, "ade4c09ad3fdb1607209750924cd232f"})
        assert second.files[0].present == 1 and second.files[0].revised == 1
        assert current_texts(lake)[base].startswith("Find the store location and hours of the closest Trader Joe's")
        redated = lake[lake["text"].str.contains("Trader Joe")]
        assert redated["published"].tolist() == [dt.datetime(2025, 11, 3, tzinfo=dt.UTC)]


def test_a_reworded_revision_that_keeps_the_old_answer_is_stale_until_refreshed():
    first = ingest("webvoyager", [WEBVOYAGER])
    lake = lake_of(first, ingest("webvoyager", [REVISED], first.rows))
    why = dict(zip(zip(lake["source_id"], lake["revision"]), stale_answers(lake), strict=True))
    assert why == {("Allrecipes--0", 1): None, ("Cambridge Dictionary--3", 1): None,
                   ("Cambridge Dictionary--3", 2): "reference answer of revision 1, given for another wording"}
    # Ingest order does not matter: the answer is stale on the revision published later.
    revised_first = ingest("webvoyager", [REVISED])
    lake = lake_of(revised_first, ingest("webvoyager", [WEBVOYAGER], revised_first.rows))
    stale = lake[stale_answers(lake).notna()]
    assert stale["text"].tolist() == ["Look up the British pronunciation of \u2018zeitgeist\u2019."]
    refreshed = lake[stale_answers(lake).notna()].assign(reference_answer="/\u02c8za\u026at.\u0261a\u026ast/",
                                                         revision=3)
    assert stale_answers(pd.concat([lake, refreshed], ignore_index=True)).iloc[-1] is None
