"""Ingest adapters over small fixtures in each published layout: every record ingested or reported
where it is, the fields each source defines kept, the source detected from the file's shape."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest

from schemas.rubric import Rubric
from stages.ingest import ADAPTERS, IngestError, detect_source, seed_tasks_from_files
from tests.stages.ingest import FIXTURES


def ingest(source: str, *names: str, mapping: dict | None = None, encoding: str | None = None):
    return seed_tasks_from_files(source, [str(FIXTURES / n) for n in names], mapping=mapping, encoding=encoding)


def by_id(result) -> dict[str, dict]:
    return {row["source_id"]: row for row in result.rows.to_dict("records")}


# (source, fixture, ingested, where the bad records are as (line, record)); every record read is either
# ingested or reported
CASES = [
    ("webvoyager", "webvoyager/WebVoyager_data.jsonl", 2, [(3, None)]),
    ("pae", "pae_webvoyager_train.jsonl", 2, []),
    ("pae", "pae_webarena_map_eval.jsonl", 3, []),
    ("insta", "insta_v3.parquet", 3, [(None, 3)]),
    ("agentsynth", "agentsynth_task_sequences.jsonl", 1, [(2, None)]),
    ("browsecomp", "browse_comp_test_set.csv", 2, [(4, None)]),
    ("travelplanner", "travelplanner_queries.jsonl", 2, [(3, None)]),
    ("mind2web-live", "mind2web-live_test.json", 2, [(17, 2)]),
    ("online-mind2web", "Online_Mind2Web.json", 2, []),
    ("deepshop", "deepshop_test.jsonl", 2, []),
    ("mind2web2", "mind2web2_tasks.jsonl", 1, [(2, None)]),
    ("gaia", "GAIA_web.jsonl", 2, []),
    ("webarena", "webarena_test.raw.json", 2, []),
    ("webarena-lite", "webarena_lite.raw.json", 3, []),
    ("webgym", "webgym_tasks.jsonl", 4, [(5, None)]),
    ("synthetic", "synthetic_goals.jsonl", 1, [(2, None)]),
    ("generic", "generic_utf16.jsonl", 2, []),
]


@pytest.mark.parametrize(("source", "fixture", "ingested", "bad_where"), CASES)
def test_every_record_is_ingested_or_reported_where_it_is(source, fixture, ingested, bad_where):
    result = ingest(source, fixture)
    (report,) = result.files
    assert report.ingested == len(result.rows) == ingested
    assert [(b.line, b.index) for b in report.bad] == bad_where
    assert report.read == report.ingested + report.present + len(report.bad)
    assert all(b.file.endswith(fixture) for b in report.bad)
    rows = result.rows
    assert (rows["source"] == source).all() and rows["text"].str.strip().ne("").all()
    assert rows["source_file"].str.endswith(fixture).all()
    assert (rows["source_line"].notna() | rows["source_record"].notna()).all()
    assert (rows["revision"] == 1).all() and rows["previous_revision"].isna().all()
    assert all(isinstance(json.loads(raw), dict) for raw in rows["raw"])


@pytest.mark.parametrize(("source", "fixture"), [(s, f) for s, f, *_ in CASES
                                                 if f not in ("pae_webvoyager_train.jsonl", "generic_utf16.jsonl")])
def test_auto_detects_the_source_from_the_file_shape(source, fixture):
    assert detect_source(str(FIXTURES / fixture)) == source


def test_pae_proposals_look_like_webvoyager_and_generic_is_never_guessed():
    assert detect_source(str(FIXTURES / "pae_webvoyager_train.jsonl")) == "webvoyager"
    assert detect_source(str(FIXTURES / "generic_utf16.jsonl")) is None


@pytest.mark.parametrize(("source", "fixture"), [(s, f) for s, f, *_ in CASES if s != "generic"])
def test_every_field_the_source_gives_is_kept_in_a_column_or_raw(source, fixture):
    (report,) = ingest(source, fixture).files
    assert report.fields, f"{source} declares no fields"
    lost = {name: (count.kept, count.given) for name, count in report.fields.items() if count.kept != count.given}
    assert lost == {} or (source == "pae" and set(lost) == {"id -> source_id"})  # PAE proposals repeat ids


def test_webvoyager_answers_come_from_the_separate_answer_file():
    rows = by_id(ingest("webvoyager", "webvoyager/WebVoyager_data.jsonl"))
    assert rows["Allrecipes--0"]["reference_answer"].startswith("'Vegetarian Four Cheese Lasagna'")
    assert json.loads(rows["Allrecipes--0"]["evaluation"])["answer_type"] == "possible"
    assert rows["Cambridge Dictionary--3"]["website"] == "dictionary.cambridge.org"
    assert rows["Cambridge Dictionary--3"]["text"] == "Look up the pronunciation of \u2018zeitgeist\u2019."


def test_pae_ids_are_file_and_line_when_they_repeat_and_its_eval_block_and_answers_are_kept():
    ids = sorted(by_id(ingest("pae", "pae_webvoyager_train.jsonl")))
    assert [re.sub("@[0-9a-f]{16}:", "@HASH:", i) for i in ids] == [
        "file@HASH:1", "file@HASH:2"]
    rows = by_id(ingest("pae", "pae_webarena_map_eval.jsonl"))
    assert sorted(rows) == ["map--0", "map--1", "map--2"]
    assert rows["map--0"]["reference_answer"].startswith("Pittsburgh International Airport, 1000 Airport Blvd")
    assert rows["map--2"]["reference_answer"] == "Carnegie Museum of Art; Carnegie Museum of Natural History"
    assert json.loads(rows["map--1"]["evaluation"])["reference_answers"] == {
        "fuzzy_match": ["There is no airport within 5 km of Carnegie Mellon University"]}
    assert (rows["map--1"]["website"], rows["map--1"]["start_url"]) == ("google.com", "https://www.google.com/maps/")


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
    assert rows["0"]["source_record"] == 1 and rows["1"]["source_line"] == 32


def test_webarena_lite_is_its_own_source_linked_to_the_webarena_task_it_revises():
    rows = by_id(ingest("webarena-lite", "webarena_lite.raw.json"))
    assert {k: r["derived_from"] for k, r in rows.items()} == {"0": "webarena/0", "1": "webarena/1",
                                                                "2": "webarena/390"}
    assert rows["0"]["reference_answer"] == "Quest Lumaflex\u2122 Band"
    assert rows["2"]["reference_answer"] == "N/A" and pd.isna(rows["1"]["reference_answer"])
    assert json.loads(rows["0"]["evaluation"])["reference_answers"] == {"must_include": ["Quest Lumaflex\u2122 Band"]}


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
    assert rows["0"]["reference_length"] == 5


def test_non_english_text_and_deepshop_none_subgoals():
    om2w = by_id(ingest("online-mind2web", "Online_Mind2Web.json"))
    assert om2w["ade4c09ad3fdb1607209750924cd232f"]["text"] == "\u5728\u7f51\u7ad9\u4e0a\u67e5\u627e\u5317\u4eac\u7684\u5929\u6c14\u9884\u62a5\u3002"
    shop = by_id(ingest("deepshop", "deepshop_test.jsonl"))
    assert json.loads(shop["Amazon--31"]["evaluation"])["subgoals"] == {
        "attribute": "Compact camera with 10x zoom", "filter": "priced under $300"}
    assert shop["Amazon--541"]["source_difficulty"] == "hard"


def test_generic_maps_columns_of_a_legacy_encoded_csv_read_with_its_encoding():
    mapping = {"text": "question", "website": "site", "reference_answer": "answer"}
    as_utf8 = ingest("generic", "generic_legacy.csv", mapping=mapping)
    assert [b.line for b in as_utf8.bad] == [2, 4] and "not valid UTF-8" in as_utf8.bad[0].reason
    result = ingest("generic", "generic_legacy.csv", mapping=mapping, encoding="cp1252")
    assert [b.line for b in result.bad] == [4]
    first = result.rows.iloc[0]
    assert first["text"] == "Find the caf\u00e9 menu\u2019s cheapest item"
    assert (first["website"], first["reference_answer"]) == ("cafe.example.com", "Espresso")
    with pytest.raises(IngestError, match="unknown field"):
        ingest("generic", "generic_legacy.csv", mapping={"question": "text"})


def test_non_objects_and_corrupt_parquet_are_reported(tmp_path):
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text('{"task_id": "a", "task_description": "one"}\n["not", "a", "record"]\n')
    result = seed_tasks_from_files("mind2web2", [str(mixed)])
    assert len(result.rows) == 1 and "expected an object" in result.bad[0].reason and result.bad[0].line == 2
    corrupt = tmp_path / "tasks.parquet"
    corrupt.write_bytes(b"PAR1 this is not parquet")
    (bad,) = seed_tasks_from_files("insta", [str(corrupt)]).bad
    assert bad.whole_file and "cannot read the file" in bad.reason


def test_every_source_of_the_issue_has_an_adapter():
    assert set(ADAPTERS) == {"insta", "pae", "agentsynth", "browsecomp", "travelplanner", "mind2web-live",
                             "online-mind2web", "deepshop", "mind2web2", "gaia", "webvoyager", "webarena",
                             "webarena-lite", "webgym", "synthetic", "generic"}
