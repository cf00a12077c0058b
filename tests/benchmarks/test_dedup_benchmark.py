"""The dedup benchmark plants what it claims: duplicates and near-misses tied to a base task."""

from __future__ import annotations


from tests.benchmarks import load_benchmark

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
