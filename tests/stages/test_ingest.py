"""Ingest adapters over small fixtures in each published layout, and the reading of awkward files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from schemas.rubric import Rubric
from stages.ingest import ADAPTERS, IngestError, detect_source, seed_tasks_from_files
from stages.ingest.read import BadRecord, Record, read_records
from webgym.cli import app

FIXTURES = Path(__file__).parent.parent / "fixtures" / "ingest"
BENCHMARKS = Path(__file__).resolve().parents[3] / "shared" / "benchmarks"


def ingest(source: str, *names: str, mapping: dict | None = None):
    return seed_tasks_from_files(source, [str(FIXTURES / n) for n in names], mapping=mapping)


def by_id(result) -> dict[str, dict]:
    return {row["source_id"]: row for row in result.rows.to_dict("records")}


# (source, fixture, ingested, bad lines); every record read is either ingested or reported
CASES = [
    ("webvoyager", "webvoyager/WebVoyager_data.jsonl", 2, [3]),
    ("pae", "pae_webvoyager_train.jsonl", 2, []),
    ("insta", "insta_v3.parquet", 3, [2]),
    ("agentsynth", "agentsynth_task_sequences.jsonl", 1, [2]),
    ("browsecomp", "browse_comp_test_set.csv", 2, [4]),
    ("travelplanner", "travelplanner_queries.jsonl", 2, [3]),
    ("mind2web-live", "mind2web-live_test.json", 2, [19]),
    ("online-mind2web", "Online_Mind2Web.json", 2, []),
    ("deepshop", "deepshop_test.jsonl", 2, []),
    ("mind2web2", "mind2web2_tasks.jsonl", 1, [2]),
    ("gaia", "GAIA_web.jsonl", 2, []),
    ("webarena", "webarena_test.raw.json", 2, []),
    ("webgym", "webgym_tasks.jsonl", 4, [5]),
    ("synthetic", "synthetic_goals.jsonl", 1, [2]),
    ("generic", "generic_utf16.jsonl", 2, []),
]


@pytest.mark.parametrize(("source", "fixture", "ingested", "bad_lines"), CASES)
def test_every_record_is_ingested_or_reported_with_its_line(source, fixture, ingested, bad_lines):
    result = ingest(source, fixture)
    (report,) = result.files
    assert report.ingested == len(result.rows) == ingested
    assert [b.line for b in report.bad] == bad_lines
    assert report.read == report.ingested + report.present + len(report.bad)
    assert all(b.file.endswith(fixture) for b in report.bad)
    rows = result.rows
    assert (rows["source"] == source).all() and rows["text"].str.strip().ne("").all()
    assert rows["source_file"].str.endswith(fixture).all() and rows["source_line"].notna().all()
    assert all(isinstance(json.loads(raw), dict) for raw in rows["raw"])


@pytest.mark.parametrize(("source", "fixture"), [(s, f) for s, f, *_ in CASES if s not in ("pae", "generic")])
def test_auto_detects_the_source_from_the_file_shape(source, fixture):
    assert detect_source(str(FIXTURES / fixture)) == source


def test_pae_and_generic_are_never_guessed():
    assert detect_source(str(FIXTURES / "pae_webvoyager_train.jsonl")) == "webvoyager"
    assert detect_source(str(FIXTURES / "generic_utf16.jsonl")) is None


def test_webvoyager_answers_come_from_the_separate_answer_file():
    rows = by_id(ingest("webvoyager", "webvoyager/WebVoyager_data.jsonl"))
    assert rows["Allrecipes--0"]["reference_answer"].startswith("'Vegetarian Four Cheese Lasagna'")
    assert json.loads(rows["Allrecipes--0"]["evaluation"])["answer_type"] == "possible"
    assert rows["Cambridge Dictionary--3"]["website"] == "dictionary.cambridge.org"
    assert rows["Cambridge Dictionary--3"]["text"] == "Look up the pronunciation of \u2018zeitgeist\u2019."


def test_pae_ids_are_file_and_line_because_its_ids_repeat():
    assert sorted(by_id(ingest("pae", "pae_webvoyager_train.jsonl"))) == [
        "pae_webvoyager_train.jsonl:1", "pae_webvoyager_train.jsonl:2"]


def test_browsecomp_problem_and_answer_are_decrypted_with_the_canary():
    result = ingest("browsecomp", "browse_comp_test_set.csv")
    rows = result.rows.set_index("source_line")
    assert rows.at[2, "text"] == "Which football club won a 1990s cup final\nafter trailing 0-2 at half time?"
    assert rows.at[2, "reference_answer"] == "Example United"
    assert rows.at[3, "reference_answer"] == "Caf\u00e9 Kyo"
    assert "does not decrypt" in result.bad[0].reason


def test_webarena_keeps_placeholder_hosts_and_the_eval_block():
    rows = by_id(ingest("webarena", "webarena_test.raw.json"))
    assert rows["0"]["start_url"] == "__SHOPPING_ADMIN__" and rows["0"]["website"] == "__SHOPPING_ADMIN__"
    assert rows["0"]["reference_answer"] == "Quest Lumaflex\u2122 Band"
    assert json.loads(rows["0"]["evaluation"])["eval_types"] == ["string_match"]
    assert rows["1"]["start_url"].count(" |AND| ") == 1 and rows["1"]["website"] == "__SHOPPING__"


def test_webgym_rubrics_are_kept_and_strings_and_lists_converted_by_the_rule():
    result = ingest("webgym", "webgym_tasks.jsonl")
    rubrics = {k: Rubric.model_validate(v["rubric"]) for k, v in by_id(result).items()}
    assert [len(g.facts) for g in rubrics["101"].groups] == [2, 3, 4]
    assert [(g.description, g.facts) for g in rubrics["102"].groups] == [
        ("shows flights from Boston to Denver", ["shows flights from Boston to Denver"]),
        ("sorted by price", ["sorted by price"])]
    assert [g.facts for g in rubrics["103"].groups] == [["answer states 1889"]]
    assert rubrics["104"].groups[0].facts == ["cs.AI new"]
    row = by_id(result)["101"]
    assert (row["website"], row["start_url"], row["source_difficulty"]) == (
        "chopin2025.pl", "https://www.chopin2025.pl", "9")
    assert by_id(result)["103"]["reference_answer"] == "1889"
    assert "'facts' must be a non-empty list" in result.bad[0].reason


def test_synthetic_goals_keep_their_exact_rubric():
    row = by_id(ingest("synthetic", "synthetic_goals.jsonl"))["shop-a/buy-red-mug"]
    assert row["website"] == "shop-a.test" and row["start_url"] == "http://shop-a.test/"
    assert row["rubric"]["groups"][0]["checks"][1] == '{"var": "ordered", "eq": true}'


def test_travelplanner_reads_queries_and_chat_rows_and_reports_sandbox_rows():
    result = ingest("travelplanner", "travelplanner_queries.jsonl")
    texts = sorted(result.rows["text"])
    assert texts[1] == "Please help me plan a trip from St. Petersburg to Rockford spanning 3 days."
    assert "not a task" in result.bad[0].reason


def test_mind2web_live_website_comes_from_the_evaluation_urls():
    rows = by_id(ingest("mind2web-live", "mind2web-live_test.json"))
    assert rows["0"]["website"] == "gamestop.com" and rows["2"]["website"] == "flightaware.com"


def test_non_english_text_and_deepshop_none_subgoals():
    om2w = by_id(ingest("online-mind2web", "Online_Mind2Web.json"))
    assert om2w["ade4c09ad3fdb1607209750924cd232f"]["text"] == "\u5728\u7f51\u7ad9\u4e0a\u67e5\u627e\u5317\u4eac\u7684\u5929\u6c14\u9884\u62a5\u3002"
    shop = by_id(ingest("deepshop", "deepshop_test.jsonl"))
    assert json.loads(shop["Amazon--31"]["evaluation"])["subgoals"] == {
        "attribute": "Compact camera with 10x zoom", "filter": "priced under $300"}
    assert shop["Amazon--541"]["source_difficulty"] == "hard"


def test_generic_maps_columns_of_a_legacy_encoded_csv():
    result = ingest("generic", "generic_legacy.csv",
                    mapping={"text": "question", "website": "site", "reference_answer": "answer"})
    assert [b.line for b in result.bad] == [4]
    first = result.rows.iloc[0]
    assert first["text"] == "Find the caf\u00e9 menu\u2019s cheapest item"
    assert (first["website"], first["reference_answer"]) == ("cafe.example.com", "Espresso")
    with pytest.raises(IngestError, match="unknown field"):
        ingest("generic", "generic_legacy.csv", mapping={"question": "text"})


def test_reingesting_adds_nothing_and_conflicting_ids_are_bad(tmp_path):
    first = ingest("webvoyager", "webvoyager/WebVoyager_data.jsonl")
    keys = {("webvoyager", k) for k in first.rows["source_id"]}
    again = seed_tasks_from_files("webvoyager", [str(FIXTURES / "webvoyager/WebVoyager_data.jsonl")], keys)
    assert again.rows.empty and again.files[0].present == 2
    clash = tmp_path / "clash.jsonl"
    clash.write_text('{"web_name": "A", "id": "A--1", "ques": "one", "web": "https://a.com"}\n'
                     '{"web_name": "A", "id": "A--1", "ques": "two", "web": "https://a.com"}\n'
                     '{"web_name": "A", "id": "A--1", "ques": "one", "web": "https://a.com"}\n')
    result = seed_tasks_from_files("webvoyager", [str(clash)])
    assert len(result.rows) == 1 and result.files[0].present == 1
    assert "already used by" in result.bad[0].reason and result.bad[0].line == 2


@pytest.mark.parametrize(("content", "expected"), [
    (b'\xef\xbb\xbf{"a": 1}\n{"a": 2}', [1, 2]),                       # UTF-8 BOM, no final newline
    ('{"a": 1}\n\n\n{"a": "\u00e9"}\n'.encode("utf-16"), [1, 4]),       # UTF-16 with BOM, blank lines
    (b'{\n  "a": 1\n}\n{\n  "a": 2\n}\n', [1, 4]),                       # pretty-printed concatenated values
    (b'[{"a": 1}, {"a": 2}]', [0, 1]),                                   # JSON array
])
def test_read_records_handles_encodings_and_layouts(tmp_path, content, expected):
    path = tmp_path / "tasks.json"
    path.write_bytes(content)
    records = list(read_records(path))
    assert all(isinstance(r, Record) for r in records)
    assert [r.line for r in records] == expected


def test_a_broken_utf8_line_is_reported_and_the_rest_read(tmp_path):
    path = tmp_path / "tasks.jsonl"
    path.write_bytes(b'{"t": "caf\xc3\xa9"}\n{"t": "bad \xff\xfe"}\n{"t": "na\xc3\xafve"}\n')
    records = list(read_records(path))
    assert [(type(r).__name__, r.line) for r in records] == [("BadRecord", 2), ("Record", 1), ("Record", 3)]
    assert records[2].data == {"t": "na\u00efve"}


def test_csv_rows_with_the_wrong_number_of_fields_are_reported(tmp_path):
    path = tmp_path / "tasks.csv"
    path.write_text('text,website\n"multi\nline task",a.com\nonly-one-field\n\nok,b.com\n', encoding="utf-8")
    records = list(read_records(path))
    assert [(type(r).__name__, r.line) for r in records] == [("Record", 2), ("BadRecord", 4), ("Record", 6)]
    assert records[0].data == {"text": "multi\nline task", "website": "a.com"}


def test_a_missing_file_is_one_bad_entry(tmp_path):
    (bad,) = read_records(tmp_path / "nope.jsonl")
    assert isinstance(bad, BadRecord) and bad.line is None and "cannot read" in bad.reason


def test_cli_ingest_reports_per_file_and_does_not_duplicate(tmp_path, monkeypatch):
    monkeypatch.delenv("WEBGYM_DATA", raising=False)
    runner = CliRunner()
    args = ["--data-dir", str(tmp_path / "data"), "ingest", str(FIXTURES / "webvoyager/WebVoyager_data.jsonl"),
            str(FIXTURES / "webarena_test.raw.json")]
    first = runner.invoke(app, args)
    assert first.exit_code == 0, first.output
    output = " ".join(first.output.split())
    assert "source webvoyager (detected)" in output and "source webarena (detected)" in output
    assert "(webvoyager): 3 read, 2 ingested, 0 already present, 1 bad" in output
    assert "WebVoyager_data.jsonl:3: invalid JSON" in output
    second = runner.invoke(app, args)
    assert "seed_tasks now holds 4 rows" in " ".join(second.output.split())
    unknown = runner.invoke(app, ["--data-dir", str(tmp_path / "data"), "ingest",
                                  str(FIXTURES / "generic_utf16.jsonl")])
    assert unknown.exit_code == 2 and "pass --source" in " ".join(unknown.output.split())


def test_every_source_of_the_issue_has_an_adapter():
    assert set(ADAPTERS) == {"insta", "pae", "agentsynth", "browsecomp", "travelplanner", "mind2web-live",
                             "online-mind2web", "deepshop", "mind2web2", "gaia", "webvoyager", "webarena",
                             "webgym", "synthetic", "generic"}


REAL_FILES = {  # folder/file: (source, records in SOURCE.md, records that are not tasks)
    "webvoyager/WebVoyager_data.jsonl": ("webvoyager", 643, 0),
    "webvoyager/tasks_test.jsonl": ("webvoyager", 1, 0),
    "gaia_web/GAIA_web.jsonl": ("gaia", 90, 0),
    "webarena/test.raw.json": ("webarena", 812, 0),
    "online_mind2web/Online_Mind2Web_06042025.json": ("online-mind2web", 300, 0),
    "mind2web_live/mind2web-live_test_20241024.json": ("mind2web-live", 104, 0),
    "deepshop/deepshop_test.jsonl": ("deepshop", 150, 0),
    "agentsynth/task_sequences.jsonl": ("agentsynth", 194, 0),
    "agentsynth/summarized_task_sequences.jsonl": ("agentsynth", 61, 0),
    "travelplanner/example_evaluation.jsonl": ("travelplanner", 180, 0),
    "travelplanner/std_travelplanner.jsonl": ("travelplanner", 45, 0),
    "travelplanner/train_ref_info.jsonl": ("travelplanner", 45, 45),
    "mind2web2/mind2web2_dev_set_tasks.derived.jsonl": ("mind2web2", 10, 0),
}


@pytest.mark.skipif(not BENCHMARKS.is_dir(), reason=f"{BENCHMARKS} is absent (a clone has no ../shared)")
@pytest.mark.parametrize("name", sorted(REAL_FILES))
def test_real_benchmark_files_ingest_with_every_record_accounted_for(name):
    source, records, not_tasks = REAL_FILES[name]
    result = seed_tasks_from_files(source, [str(BENCHMARKS / name)])
    (report,) = result.files
    assert report.read == records
    assert report.ingested == records - not_tasks and len(report.bad) == not_tasks
    if not_tasks == 0 and name != "webvoyager/tasks_test.jsonl":
        assert detect_source(str(BENCHMARKS / name)) == source
    if source == "webvoyager":
        assert result.rows["reference_answer"].notna().all()


def test_truncated_arrays_non_objects_and_corrupt_parquet_are_reported(tmp_path):
    truncated = tmp_path / "tasks.json"
    truncated.write_text('[\n  {"task_id": "a", "task_description": "one"},\n  {"task_id": "b", "task_descr')
    records = list(read_records(truncated))
    assert [type(r).__name__ for r in records] == ["Record", "BadRecord"] and records[1].line == 3
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text('{"task_id": "a", "task_description": "one"}\n["not", "a", "record"]\n')
    result = seed_tasks_from_files("mind2web2", [str(mixed)])
    assert len(result.rows) == 1 and "expected an object" in result.bad[0].reason and result.bad[0].line == 2
    corrupt = tmp_path / "tasks.parquet"
    corrupt.write_bytes(b"PAR1 this is not parquet")
    (bad,) = seed_tasks_from_files("insta", [str(corrupt)]).bad
    assert bad.line is None and "cannot read the file" in bad.reason


def test_cli_auto_takes_the_answer_file_as_a_path_and_rows_pass_the_quality_suite(tmp_path, monkeypatch):
    from webgym.lake import Lake
    from webgym.quality import validate

    monkeypatch.delenv("WEBGYM_DATA", raising=False)
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text((FIXTURES / "webvoyager/WebVoyager_data.jsonl").read_text())
    result = CliRunner().invoke(app, ["--data-dir", str(tmp_path / "data"), "ingest", str(tasks),
                                      str(FIXTURES / "webvoyager/reference_answer.json")])
    assert result.exit_code == 0, result.output
    lake = Lake(tmp_path / "data")
    rows = lake.read_table("seed_tasks").set_index("source_id")
    assert rows.at["Allrecipes--0", "reference_answer"].startswith("'Vegetarian")
    assert validate(lake, ["seed_tasks"]) == []
