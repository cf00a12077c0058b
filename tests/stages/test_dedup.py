"""Dedup with the real MiniLM model: exact and near duplicates, priorities, eval overlap, the cache."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from stages.dedup import duplicate_tasks, normalised_text, similar_pairs, without_duplicates
from webgym.config import DedupConfig
from webgym.embeddings import Embedder, resolve_precision

NOW = dt.datetime(2026, 11, 22, tzinfo=dt.UTC)


@pytest.fixture(scope="module")
def embedder(tmp_path_factory) -> Embedder:
    return Embedder(tmp_path_factory.mktemp("embeddings"))


def seeds(*rows: tuple) -> pd.DataFrame:
    """Seed tasks from (source, source_id, text, website[, start_url]) tuples."""
    return pd.DataFrame([(*row, None)[:5] for row in rows], columns=["source", "source_id", "text", "website",
                                                                     "start_url"])


def dropped(result: pd.DataFrame) -> dict[str, tuple[str, str]]:
    return {r.source_id: (r.duplicate_of_source_id, r.kind) for r in result.itertuples()}


def test_exact_duplicates_are_matched_within_a_website_when_known(embedder):
    tasks = seeds(("webvoyager", "a", "Find the cheapest flight to Denver.", "google.com"),
                  ("webvoyager", "b", "find the cheapest  flight to denver", "google.com"),
                  ("webvoyager", "c", "Find the cheapest flight to Denver!", "kayak.com"),
                  ("gaia", "d", "FIND THE CHEAPEST FLIGHT TO DENVER", None))
    result = duplicate_tasks(tasks, embedder, DedupConfig(), NOW)
    assert dropped(result) == {"b": ("a", "exact"), "d": ("a", "exact")}
    assert (result["similarity"] == 1.0).all() and (result["threshold"] == DedupConfig().threshold).all()


def test_paraphrases_are_dropped_and_near_misses_kept(embedder):
    tasks = seeds(("insta", "1", "Find a vegan lasagna recipe with over 100 reviews.", "allrecipes.com"),
                  ("insta", "2", "Find a vegan lasagna recipe that has more than 100 reviews.", "allrecipes.com"),
                  ("insta", "3", "Find a vegan brownie recipe with over 100 reviews.", "allrecipes.com"),
                  ("insta", "4", "Find a vegan lasagna recipe with over 500 reviews.", "allrecipes.com"))
    result = duplicate_tasks(tasks, embedder, DedupConfig(), NOW)
    assert dropped(result) == {"2": ("1", "near")}
    assert DedupConfig().threshold <= result.at[0, "similarity"] <= 1.0
    loose = duplicate_tasks(tasks, embedder, DedupConfig(same_constraints=False), NOW)
    assert dropped(loose) == {"2": ("1", "near"), "4": ("1", "near")}


def test_the_copy_of_the_higher_priority_source_survives(embedder):
    tasks = seeds(("pae", "p", "Search Allrecipes for a vegan lasagna recipe.", "allrecipes.com"),
                  ("webvoyager", "w", "Search Allrecipes for a vegan lasagna recipe", "allrecipes.com"))
    assert dropped(duplicate_tasks(tasks, embedder, DedupConfig(), NOW)) == {"p": ("w", "exact")}


def test_webarena_lite_outranks_webarena_whose_eval_blocks_it_corrects(embedder):
    text = "What is the top-1 best selling product in 2022"
    tasks = seeds(("webarena", "0", text, None, "__SHOPPING_ADMIN__"),
                  ("webarena-lite", "0", text, None, "__SHOPPING_ADMIN__"))
    assert dropped(duplicate_tasks(tasks, embedder, DedupConfig(), NOW)) == {"0": ("0", "exact")}
    assert duplicate_tasks(tasks, embedder, DedupConfig(), NOW)["source"].tolist() == ["webarena"]


def test_eval_overlap_drops_training_tasks_near_an_evaluation_task(embedder):
    tasks = seeds(("insta", "i1", "Show the store hours of the Gamestop closest to zip code 90028.", "gamestop.com"),
                  ("insta", "i2", "Show the store hours of the Gamestop closest to zip code 90028 please.",
                   "gamestop.com"),
                  ("online-mind2web", "o1", "Find the store hours of the Gamestop closest to zip code 90028.",
                   "gamestop.com"))
    insta_first = ["insta", "online-mind2web"]
    plain = dropped(duplicate_tasks(tasks, embedder, DedupConfig(threshold=0.9, source_priority=insta_first), NOW))
    assert plain == {"i2": ("i1", "near"), "o1": ("i1", "near")}
    with_eval = duplicate_tasks(tasks, embedder, DedupConfig(threshold=0.9, source_priority=insta_first,
                                                             eval_sources=["online-mind2web"]), NOW)
    assert dropped(with_eval) == {"i1": ("o1", "eval_overlap"), "i2": ("o1", "eval_overlap")}
    assert without_duplicates(tasks, with_eval)["source_id"].tolist() == ["o1"]


def test_cached_embeddings_equal_fresh_ones_and_are_not_recomputed(tmp_path):
    texts = ["Book a table for two in Lyon.", "Réservez une table pour deux à Lyon.", "Book a table for two in Lyon."]
    cold = Embedder(tmp_path, save_every=1)
    first = cold(texts)
    assert (cold.stats.embedded, cold.stats.cached) == (2, 0)
    assert len(list((tmp_path / "all-MiniLM-L6-v2").glob("chunk-*.npz"))) == 2  # one chunk per saved block
    warm = Embedder(tmp_path)
    second = warm(texts)
    assert (warm.stats.embedded, warm.stats.cached) == (0, 3)
    np.testing.assert_array_equal(first, second)
    assert first.shape == (3, 384) and np.allclose(np.linalg.norm(first, axis=1), 1, atol=1e-2)


def test_bfloat16_vectors_agree_with_float32_and_are_cached_apart(tmp_path):
    texts = ["Find the cheapest wireless earbuds on amazon.com", "Réservez une table pour deux à Lyon."]
    exact = Embedder(tmp_path)(texts)
    fast = Embedder(tmp_path, precision="bfloat16")
    approximate = fast(texts)
    assert fast.stats.embedded == 2  # not answered from the float32 cache
    assert ((exact * approximate).sum(axis=1) > 0.999).all()
    assert {p.name for p in tmp_path.iterdir()} == {"all-MiniLM-L6-v2", "all-MiniLM-L6-v2-bfloat16"}


def test_approximate_search_finds_the_same_pairs_as_exact_search():
    rng = np.random.default_rng(1)
    base = rng.normal(size=(300, 384)).astype(np.float32)
    near = base[:50] + 0.05 * rng.normal(size=(50, 384)).astype(np.float32)
    vectors = np.concatenate([base, near])
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    exact = similar_pairs(vectors, 0.9)
    approximate = similar_pairs(vectors, 0.9, exact_below=1, nprobe=8)
    pairs = lambda g: {(i, int(j)) for i in range(len(vectors)) for j in g.of(i)[0] if j != i}  # noqa: E731
    assert pairs(exact) == {(i, i + 300) for i in range(50)} | {(i + 300, i) for i in range(50)}
    assert len(pairs(approximate) & pairs(exact)) >= 0.95 * len(pairs(exact))


def test_opposite_constraints_are_never_duplicates(embedder):
    tasks = seeds(("insta", "1", "Find the cheapest flight from Boston to Denver on kayak.com.", "kayak.com"),
                  ("insta", "2", "Find the most expensive flight from Boston to Denver on kayak.com.", "kayak.com"))
    assert duplicate_tasks(tasks, embedder, DedupConfig(threshold=0.8), NOW).empty
    assert len(duplicate_tasks(tasks, embedder, DedupConfig(threshold=0.8, same_constraints=False), NOW)) == 1


def test_normalisation():
    assert normalised_text("  Café,  OPEN?\tnow ") == "café open now"


def test_the_same_words_on_another_start_page_are_another_task(embedder):
    tasks = seeds(("webarena", "516", "Add this product to my wishlist", "__SHOPPING__", "__SHOPPING__/tea.html"),
                  ("webarena", "517", "Add this product to my wishlist", "__SHOPPING__", "__SHOPPING__/skin.html"),
                  ("webarena", "518", "Add this product to my wishlist.", "__SHOPPING__", "__SHOPPING__/tea.html"),
                  ("deepshop", "d1", "Find a USB-C hub under $50 on Amazon.", "amazon.com",
                   "https://www.amazon.com/?language=en_US&currency=USD"),
                  ("webvoyager", "w1", "Find a USB-C hub under $50 on Amazon.", "amazon.com", "https://www.amazon.com/"),
                  ("mind2web-live", "m1", "Find a USB-C hub under $50 on amazon", "amazon.com", None))
    assert dropped(duplicate_tasks(tasks, embedder, DedupConfig(source_priority=["webvoyager"]), NOW)) == {
        "518": ("516", "exact"), "d1": ("w1", "exact"), "m1": ("w1", "exact")}


def test_the_near_misses_of_the_issue_are_kept_apart_and_rewordings_are_not(embedder):
    tasks = seeds(
        ("webarena", "194", "Get the total payment amount of the last 5 completed orders", "__SHOPPING_ADMIN__"),
        ("webarena", "195", "Get the total payment amount of the last 5 pending orders", "__SHOPPING_ADMIN__"),
        ("webarena", "223", "I am at CMU Pittsburgh, how long it takes to drive to the nearest Mcdonald's", "__MAP__"),
        ("webarena", "224", "I am at CMU Pittsburgh, how long it takes to drive to the nearest wendys", "__MAP__"),
        ("webarena", "141", "How much I spent on food-related shopping during March 2023", "__SHOPPING__"),
        ("webarena", "144", "How much I spent on food shopping during from mid Jan to the end Jan 2023",
         "__SHOPPING__"),
        ("online-mind2web", "o1", "Get the frozen vegan cheese pizza between 5 to 10 USD on Target.", "target.com"),
        ("online-mind2web", "o2", "Get the frozen vegetarian cheese pizza between 5 to 10 USD on Target.",
         "target.com"),
        ("webvoyager", "w15", "Find a pair of mens running shoes in black, size 7, 4+ stars and under $50 on Amazon.",
         "amazon.com"),
        ("deepshop", "d15", "Find a pair of mens running shoes in black, size 7 extra wide, 4+ stars and under $50 "
                            "on Amazon.", "amazon.com"),
        ("mind2web-live", "37", "Find me the cheapest external HD for an Xbox One on gamestop.", "gamestop.com"),
        ("online-mind2web", "o37", "Find me the cheapest external Hard Drive for an Xbox One on GameStop.",
         "gamestop.com"))
    config = DedupConfig(threshold=0.8, source_priority=["online-mind2web"])
    assert dropped(duplicate_tasks(tasks, embedder, config, NOW)) == {"37": ("o37", "near")}
    loose = dropped(duplicate_tasks(tasks, embedder, config.model_copy(update={"same_constraints": False}), NOW))
    assert {"195", "224", "o2", "d15"} <= set(loose)  # what the embeddings alone would drop


def test_cli_dedup_records_duplicates_once(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from webgym.cli import app
    from webgym.lake import Lake

    monkeypatch.delenv("WEBGYM_DATA", raising=False)
    lake = Lake(tmp_path / "data")
    lake.write_table("seed_tasks", pd.DataFrame([
        {"source": "webvoyager", "source_id": str(i), "text": text, "website": "allrecipes.com", "raw": "{}",
         "ingested_at": NOW}
        for i, text in enumerate(["Find a vegan lasagna recipe.", "find a vegan lasagna recipe",
                                  "Find a vegan brownie recipe."])]))
    config = tmp_path / "profile.yaml"
    config.write_text(f"taskset:\n  dedup:\n    cache_dir: {tmp_path / 'cache'}\n")
    args = ["--config", str(config), "--data-dir", lake.root, "taskset", "dedup"]
    first = CliRunner().invoke(app, args)
    assert first.exit_code == 0, first.output
    assert "3 seed tasks: 2 kept, 1 duplicates (exact 1); 1 new row(s)" in " ".join(first.output.split())
    second = CliRunner().invoke(app, args)
    assert "0 new row(s)" in second.output and lake.count("duplicates") == 1
    assert lake.read_table("duplicates").at[0, "duplicate_of_source_id"] == "0"


def test_exempt_sources_are_never_dropped_nor_embedded(embedder):
    texts: list[str] = []

    def embed(batch: list[str]) -> np.ndarray:
        texts.extend(batch)
        return embedder(batch)
    tasks = seeds(("synthetic", "shop-a/rate-p1", "On Shop A, rate the Blue Mug 5 stars.", "shop-a.test"),
                  ("synthetic", "shop-a/rate-p2", "On Shop A, rate the Blue Mug 5 stars.", "shop-a.test"),
                  ("insta", "1", "Find a vegan lasagna recipe with over 100 reviews.", "allrecipes.com"),
                  ("insta", "2", "Find a vegan lasagna recipe that has more than 100 reviews.", "allrecipes.com"))
    assert dropped(duplicate_tasks(tasks, embed, DedupConfig(), NOW)) == {"2": ("1", "near")}
    assert not any("Shop A" in text for text in texts)
    assert "shop-a/rate-p2" in dropped(duplicate_tasks(tasks, embed, DedupConfig(exempt_sources=[]), NOW))


@pytest.mark.parametrize(("flags", "expected"), [
    ("fpu sse2 avx avx2 avx512f avx512bw", "float32"),
    ("fpu avx2 avx512f avx512_bf16", "bfloat16"),
    ("fpu avx2 amx_tile amx_bf16", "bfloat16"),
])
def test_auto_precision_is_bfloat16_only_where_the_cpu_computes_it(tmp_path, flags, expected):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(f"processor\t: 0\nflags\t\t: {flags}\n")
    assert resolve_precision("auto", cpuinfo) == expected
    assert resolve_precision("auto", tmp_path / "absent") == "float32"
    assert resolve_precision("bfloat16", cpuinfo) == "bfloat16"


@pytest.mark.slow
def test_a_run_that_embeds_nothing_new_does_not_import_torch(tmp_path):
    """A nightly rerun finds every task's vector cached: it must not pay torch's import (seconds)."""
    script = ("import sys; from webgym.embeddings import Embedder; "
              f"Embedder({str(tmp_path)!r}, precision='auto')(['Book a table for two in Lyon']); "
              "print('torch' in sys.modules)")
    first = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    again = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert (first.stdout.strip(), again.stdout.strip()) == ("True", "False")
