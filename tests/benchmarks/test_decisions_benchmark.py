"""The decisions benchmark counts what it claims: a decision matches only when its candidate and every fill
field's option are the oracle's, counts are kept per oracle kind, an early "Done." is one the oracle
would not have answered, the targets read the shares, and checkpoints are paired decision by decision."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.benchmarks import load_benchmark
from tests.conftest import trajectories_frame
from webgym import PROJECT_ROOT
from webgym.embeddings import DIM
from webgym.policies.scorer.candidates import KINDS
from webgym.policies.scorer.features import FLAT_SCALARS, FlatFeatures
from webgym.train.scorer import ScorerSample

bench = load_benchmark("decisions")


def _sample(kinds: list[str], chosen: int) -> ScorerSample:
    """A decision among candidates of the given kinds (their one-hot scalars), the oracle's being `chosen`."""
    scalars = np.zeros((len(kinds), FLAT_SCALARS), np.float32)
    for i, kind in enumerate(kinds):
        scalars[i, KINDS.index(kind)] = 1.0
    vectors = np.zeros((len(kinds), DIM), np.float32)
    zero = np.zeros(DIM, np.float32)
    return ScorerSample("s", FlatFeatures(zero, zero, zero, vectors, scalars), chosen)


def test_matches_per_oracle_kind_and_early_done():
    page = ["link", "fill", "done", "answer"]
    samples = [_sample(page, 0), _sample(page, 0), _sample(page, 1), _sample(page, 1), _sample(page, 2)]
    best = np.array([0, 2, 1, 1, 2])  # right; "Done." instead of the link; the fill twice; "Done." when due
    fields_right = np.array([True, True, True, False, True])  # the second fill typed another phrase
    summary = bench.summarise(samples, best, fields_right)
    assert (summary["decisions"], summary["matched"], summary["early_done"]) == (5, 3, 1)
    assert summary["matched_share"] == 0.6
    assert summary["by_oracle_kind"] == {"done": {"decisions": 1, "matched": 1},
                                         "fill": {"decisions": 2, "matched": 1},
                                         "link": {"decisions": 2, "matched": 1}}
    # issue 48's targets, for the kinds there are decisions of
    assert summary["targets"] == {"all": {"share": 0.6, "target": 0.8, "met": False},
                                  "done": {"share": 1.0, "target": 0.85, "met": True}}


def test_a_checkpoint_is_paired_with_the_first_decision_by_decision():
    first = np.array([True, True, False, False, True])
    other = np.array([True, False, True, True, True])
    assert bench.paired(other, first) == {"gained": 2, "lost": 1, "mcnemar_p": 1.0}
    assert bench.paired(first, first)["gained"] == bench.paired(first, first)["lost"] == 0


def test_a_folder_that_is_no_lake_and_a_lake_without_demonstrations_are_named(tmp_path, lake):
    with pytest.raises(ValueError, match="is not a lake with a trajectories table"):
        bench.copy_lake(tmp_path / "nowhere", tmp_path / "out")
    lake.write_table("trajectories", trajectories_frame())  # oracle episodes, but of iteration 0
    with pytest.raises(ValueError, match="no oracle episodes at iteration 1000"):
        bench.study(PROJECT_ROOT / "configs" / "local.yaml", Path(lake.root), [])
