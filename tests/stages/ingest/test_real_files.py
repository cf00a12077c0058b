"""Round trips of the real benchmark files in ../shared/benchmarks: every record becomes a row (or a
reported bad record), the right adapter is detected, and every field the source defines (text, start
URL, website, answer, eval block, difficulty or level, reference length, ...) lands in its column or
in raw, counted field by field. Skipped where ../shared is absent (a user's clone)."""

from __future__ import annotations

import pytest

from stages.ingest import IngestError, detect_source, seed_tasks_from_files
from tests.stages.ingest import BENCHMARKS

ALL = None  # a field every record gives

REAL_FILES = {  # folder/file: (source, records, {"<source field> -> <column>": records giving it})
    "webvoyager/WebVoyager_data.jsonl": ("webvoyager", 643, {
        "id -> source_id": ALL, "ques -> text": ALL, "web -> start_url": ALL, "web -> website": ALL}),
    "webvoyager/tasks_test.jsonl": ("webvoyager", 1, {"ques -> text": ALL, "web -> start_url": ALL}),
    "gaia_web/GAIA_web.jsonl": ("gaia", 90, {
        "task_id -> source_id": ALL, "ques -> text": ALL, "web -> start_url": ALL,
        "Final answer -> reference_answer": ALL, "Level -> source_difficulty": ALL}),
    "webarena/test.raw.json": ("webarena", 812, {
        "task_id -> source_id": ALL, "intent -> text": ALL, "start_url -> start_url": ALL, "start_url -> website": ALL,
        "eval -> evaluation": ALL, "eval.reference_answers -> reference_answer": 335,
        "instantiation_dict -> raw": 769}),
    "online_mind2web/Online_Mind2Web_06042025.json": ("online-mind2web", 300, {
        "task_id -> source_id": ALL, "confirmed_task -> text": ALL, "website -> start_url": ALL,
        "website -> website": ALL, "reference_length -> reference_length": ALL, "level -> source_difficulty": ALL}),
    "mind2web_live/mind2web-live_test_20241024.json": ("mind2web-live", 104, {
        "index -> source_id": ALL, "task -> text": ALL, "evaluation -> evaluation": ALL, "evaluation -> website": ALL,
        "reference_task_length -> reference_length": ALL}),
    "deepshop/deepshop_test.jsonl": ("deepshop", 150, {
        "id -> source_id": ALL, "ques -> text": ALL, "web -> start_url": ALL, "attribute -> evaluation": ALL,
        "filter -> evaluation": ALL, "sort -> evaluation": ALL, "category -> evaluation": ALL,
        "difficulty -> source_difficulty": ALL}),
    "agentsynth/task_sequences.jsonl": ("agentsynth", 194, {
        "task -> text": ALL, "website -> website": ALL, "action_sequence -> raw": ALL, "webpage_text -> raw": ALL}),
    "agentsynth/summarized_task_sequences.jsonl": ("agentsynth", 61, {
        "task -> text": ALL, "website -> website": ALL, "action_sequence -> raw": ALL}),
    "travelplanner/example_evaluation.jsonl": ("travelplanner", 180, {
        "idx -> source_id": ALL, "query -> text": ALL, "plan -> raw": 161}),
    "travelplanner/std_travelplanner.jsonl": ("travelplanner", 45, {
        "messages -> text": ALL, "messages -> reference_answer": ALL}),
    "mind2web2/mind2web2_dev_set_tasks.derived.jsonl": ("mind2web2", 10, {
        "task_id -> source_id": ALL, "task_description -> text": ALL}),
}

needs_shared = pytest.mark.skipif(not BENCHMARKS.is_dir(), reason=f"{BENCHMARKS} is absent (a clone has no ../shared)")


@needs_shared
@pytest.mark.parametrize("name", sorted(REAL_FILES))
def test_real_file_round_trip_keeps_every_field_it_defines(name):
    source, records, expected = REAL_FILES[name]
    path = str(BENCHMARKS / name)
    assert detect_source(path) == source
    result = seed_tasks_from_files(source, [path])
    (report,) = result.files
    assert (report.read, report.ingested, len(result.rows), report.bad) == (records, records, records, [])
    given = {field: count.given for field, count in report.fields.items()}
    assert given == {**given, **{f: records if n is ALL else n for f, n in expected.items()}}
    lost = {field: f"{count.kept}/{count.given}" for field, count in report.fields.items() if count.kept < count.given}
    assert lost == {}
    if source == "webvoyager":  # answers come from reference_answer.json beside the task file
        assert result.rows["reference_answer"].notna().all()


@needs_shared
def test_a_file_that_holds_no_tasks_is_refused_as_a_whole():
    with pytest.raises(IngestError, match="only 0 of 45 records have the fields travelplanner needs"):
        seed_tasks_from_files("travelplanner", [str(BENCHMARKS / "travelplanner/train_ref_info.jsonl")])
