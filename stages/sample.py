"""Sampling: training batches drawn by difficulty band ratio (or uniformly), reproducible by seed.

Bands are WebGym's (easy 1-3 facts, medium 4-6, hard 7+). Quotas follow the ratio (largest
remainder); a band with too few tasks gives its shortfall to the others in proportion. Tasks on
blocklisted websites and test tasks are never drawn.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from schemas.values import DIFFICULTY_BANDS, difficulty_band


def _quotas(size: int, weights: dict[str, float], available: dict[str, int]) -> dict[str, int]:
    quotas = dict.fromkeys(weights, 0)
    remaining, open_bands = size, {b for b, w in weights.items() if w > 0 and available[b] > 0}
    while remaining > 0 and open_bands:
        total = sum(weights[b] for b in open_bands)
        shares = {b: remaining * weights[b] / total for b in open_bands}
        floors = {b: int(shares[b]) for b in open_bands}
        for b in sorted(open_bands, key=lambda b: (floors[b] - shares[b], b))[:remaining - sum(floors.values())]:
            floors[b] += 1
        for b in open_bands:
            take = min(floors[b], available[b] - quotas[b])
            quotas[b] += take
            remaining -= take
        open_bands = {b for b in open_bands if quotas[b] < available[b]}
    return quotas


def training_batch(tasks: pd.DataFrame, size: int, ratio: dict[str, float] | None = None, seed: int = 0,
                   blocklist: Iterable[str] = ()) -> pd.DataFrame:
    """Up to `size` distinct training tasks: `ratio` weights the bands easy / medium / hard (None:
    uniform over tasks); the same seed gives the same batch. Fewer when too few tasks qualify."""
    unknown = sorted(set(ratio or {}) - set(DIFFICULTY_BANDS))
    if unknown:
        raise ValueError(f"unknown difficulty band(s) {unknown}; bands are {list(DIFFICULTY_BANDS)}")
    rng = np.random.default_rng(seed)
    pool = tasks[(tasks["split"] == "train") & ~tasks["website"].isin(set(blocklist))]
    if ratio is None:
        picked = rng.choice(len(pool), size=min(size, len(pool)), replace=False)
        return pool.iloc[np.sort(picked)].reset_index(drop=True)
    pool = pool[pool["difficulty"].notna()]
    bands = pool["difficulty"].map(lambda d: difficulty_band(int(d)))
    weights = {b: float(ratio.get(b, 0)) for b in DIFFICULTY_BANDS}
    quotas = _quotas(size, weights, {b: int((bands == b).sum()) for b in DIFFICULTY_BANDS})
    picked = [rng.choice(np.flatnonzero((bands == b).to_numpy()), size=n, replace=False)
              for b, n in quotas.items() if n]
    rows = np.sort(np.concatenate(picked)) if picked else np.zeros(0, dtype=int)
    return pool.iloc[rows].reset_index(drop=True)


def split_task_ids(tasks: pd.DataFrame, split: str) -> set[str]:
    """The ids of the tasks of `split` (none when the task set is not built or not split yet)."""
    return set(tasks.loc[tasks["split"] == split, "task_id"])


def evaluation_batch(tasks: pd.DataFrame, size: int | None = None, seed: int = 0,
                     split: str = "test") -> pd.DataFrame:
    """The tasks to evaluate on: every task of `split` (test: held out; validation: promotion checks), or
    `size` of each held-out kind (unseen family, unseen site; validation tasks are of one kind) drawn by
    seed, so both kinds are measured on the same footing."""
    pool = tasks[tasks["split"] == split]
    if size is None:
        return pool.reset_index(drop=True)
    rng = np.random.default_rng(seed)
    picked = []
    for _, kind in pool.groupby(pool["held_out"].fillna("site"), sort=True):
        positions = np.flatnonzero(pool.index.isin(kind.index))
        picked.append(positions if size >= len(positions) else rng.choice(positions, size=size, replace=False))
    rows = np.sort(np.concatenate(picked)) if picked else np.zeros(0, dtype=int)
    return pool.iloc[rows].reset_index(drop=True)


def batch_seed(seed: int, iteration: int, split: str, draw: int = 0) -> int:
    """The seed of a rollout's task draw: a fresh training batch every iteration (and every extra draw
    of dynamic sampling), the same held-out tasks every time, so evaluations compare."""
    return seed + (iteration + 7919 * draw if split == "train" else 0)
