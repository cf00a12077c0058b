"""The dedup benchmark plants what it claims: duplicates and near-misses tied to a base task."""

from __future__ import annotations

import pytest

from tests.benchmarks import load_benchmark
from webgym.config import DedupConfig

bench = load_benchmark("dedup")


def test_build_plants_duplicates_and_near_misses_of_base_tasks():
    frame = bench.build(2000, seed=1)
    assert len(frame) == 2000 and frame["source_id"].is_unique
    assert frame["role"].value_counts().to_dict() == {"base": 1600, "duplicate": 200, "near_miss": 200}
    bases = frame[frame["role"] == "base"].set_index("source_id")
    planted = frame[frame["role"] != "base"]
    assert (planted["website"].to_numpy() == bases.loc[planted["base"], "website"].to_numpy()).all()
    misses = frame[frame["role"] == "near_miss"]
    assert (misses["text"].to_numpy() != bases.loc[misses["base"], "text"].to_numpy()).all()
    assert set(misses["kind"]) == {"entity", "number", "superlative"}
    assert bench.build(2000, seed=1).equals(frame)


def test_the_labelled_real_pairs_hold_both_duplicates_and_near_misses_each_with_its_kind():
    pairs = bench.load_pairs()
    assert len(pairs) >= 150 and len({p["id"] for p in pairs}) == len(pairs)
    duplicates = [p for p in pairs if p["duplicate"]]
    assert len(pairs) / 3 <= len(duplicates) <= 2 * len(pairs) / 3  # neither class can carry the figures alone
    assert {p["kind"] for p in duplicates} == {"copy", "rewording"}
    assert {p["kind"] for p in pairs if not p["duplicate"]} >= {"start_url", "entity", "number", "date", "attribute",
                                                                 "negation", "added_constraint"}
    for pair in pairs:
        assert pair["a"]["text"].strip() and pair["b"]["text"].strip() and pair["a"]["file"] and pair["b"]["file"]
        assert (pair["a"]["source"], pair["a"]["source_id"], pair["a"]["text"]) != (
            pair["b"]["source"], pair["b"]["source_id"], pair["b"]["text"])


def _pair_keys(pairs: list[dict]) -> list[frozenset]:
    return [frozenset((p[side]["source"], p[side]["source_id"], p[side]["text"]) for side in "ab") for p in pairs]


def test_the_held_out_sets_share_no_pair_with_the_tuning_set_and_hold_both_classes():
    tuning = set(_pair_keys(bench.load_pairs()))
    for path in (bench.HELD_OUT, bench.FRESH):
        pairs = bench.load_pairs(path)
        assert not set(_pair_keys(pairs)) & tuning and len({p["id"] for p in pairs}) == len(pairs), path.name
        assert {p["kind"] for p in pairs if p["duplicate"]} <= {"copy", "rewording"}
        assert 50 <= sum(p["duplicate"] for p in pairs) <= len(pairs) - 50, path.name


def test_pair_figures_count_precision_recall_and_the_wrong_pairs():
    pairs = [{"id": str(i), "duplicate": d, "kind": "k", "a": {"text": "a"}, "b": {"text": "b"}}
             for i, d in enumerate([True, True, True, False, False])]
    figures = bench.pair_figures(pairs, [True, True, False, True, False])
    assert (figures["precision"], figures["recall"]) == (round(2 / 3, 4), round(2 / 3, 4))
    assert [w["id"] for w in figures["wrong"]] == ["2", "3"]
    assert figures["right_by_kind"] == {"duplicate:k": "2/3", "near-miss:k": "1/2"}


@pytest.mark.slow
def test_dedup_keeps_precision_on_both_pair_sets_and_finds_more_rewordings_on_the_held_out_one(tmp_path):
    """Issue 47: near-duplicate dedup on re-worded real tasks it was not tuned on. The target there is
    recall >= 0.85 at precision >= 0.97; this holds what the default configuration reaches (0.52 recall
    before the generic words of WebArena-Verified's re-wordings and the lower threshold)."""
    threshold = DedupConfig().threshold
    tuning = bench.run_pairs(threshold, str(tmp_path))
    held_out = bench.run_pairs(threshold, str(tmp_path), bench.HELD_OUT)
    assert tuning["precision"] >= 0.97 and tuning["recall"] >= 0.80
    assert held_out["precision"] >= 0.97 and held_out["recall"] >= 0.70


def test_the_held_out_pairs_judged_wrongly_stay_unread_unless_asked(monkeypatch, capsys):
    """Reading the held-out pairs dedup gets wrong is how a held-out set turns into a tuning set."""
    wrong = {"id": "pair-x", "duplicate": True, "kind": "rewording", "a": "held-out text", "b": "its re-wording"}

    def run_pairs(threshold, cache_dir, path=bench.PAIRS):
        return {"precision": 1.0, "recall": 0.5, "wrong": [{**wrong, "a": f"{path.name}: {wrong['a']}"}]}

    monkeypatch.setattr(bench, "run_pairs", run_pairs)
    monkeypatch.setattr("sys.argv", ["dedup.py", "--pairs-only"])
    bench.main()
    printed = capsys.readouterr().out
    assert "dedup_pairs.jsonl: held-out text" in printed
    assert "dedup_pairs_heldout.jsonl" not in printed and "dedup_pairs_fresh.jsonl" not in printed
    assert "held-out pairs: {\"precision\": 1.0, \"recall\": 0.5}" in printed
    assert "fresh held-out pairs: {\"precision\": 1.0, \"recall\": 0.5}" in printed
    monkeypatch.setattr("sys.argv", ["dedup.py", "--pairs-only", "--show-held-out"])
    bench.main()
    shown = capsys.readouterr().out
    assert "dedup_pairs_heldout.jsonl: held-out text" in shown and "dedup_pairs_fresh.jsonl: held-out text" in shown
