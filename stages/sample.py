"""Sampling: training batches drawn by difficulty band ratio (or uniformly), reproducible by seed.

Bands are WebGym's (easy 1-3 facts, medium 4-6, hard 7+). Quotas follow the ratio (largest
remainder); a band with too few tasks gives its shortfall to the others in proportion. Tasks on
blocklisted websites and test tasks are never drawn. Source shares fix how much of a batch a source's
tasks take (a few hundred MiniWoB++ train tasks beside two thousand synthetic ones would otherwise
come up by their count).

The frontier curriculum (taskset.sample.curriculum) bends the draw towards what the policy can
still learn from its own rollouts: a share of the batch re-draws training tasks it failed or
half-solved (WebRL's curriculum from failures), and the rest is drawn in proportion to p(1 - p),
p a task's estimated success rate, so tasks it always or never solves come up less often than
those it half-solves (DAPO's dynamic sampling, before the rollout rather than after).
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


def _draw(rng: np.random.Generator, positions: np.ndarray, n: int, weights: np.ndarray | None) -> np.ndarray:
    """`n` of `positions` without replacement, in proportion to their `weights` (None: uniformly)."""
    if weights is None:
        return rng.choice(positions, size=n, replace=False)
    chances = weights[positions]
    return rng.choice(positions, size=n, replace=False, p=chances / chances.sum())


def _trainable(tasks: pd.DataFrame, blocklist: Iterable[str]) -> pd.DataFrame:
    """The tasks a training batch may draw: train split, not on a blocklisted website."""
    return tasks[(tasks["split"] == "train") & ~tasks["website"].isin(set(blocklist))]


OTHER_SOURCES = "(other sources)"
"""The group of the sources a share list does not name."""


def _by_source(pool: pd.DataFrame, size: int, shares: dict[str, float]) -> dict[str, tuple[pd.DataFrame, int]]:
    """Each named source's tasks of `pool` and the rest, with their quota of `size` by `shares` (largest
    remainder, a group with too few tasks giving its shortfall to the others, as the bands do)."""
    groups = pool["source"].where(pool["source"].isin(list(shares)), OTHER_SOURCES)
    weights = {**shares, OTHER_SOURCES: 1 - sum(shares.values())}
    quotas = _quotas(size, weights, {g: int((groups == g).sum()) for g in weights})
    return {g: (pool[groups == g], n) for g, n in quotas.items() if n}


def training_batch(tasks: pd.DataFrame, size: int, ratio: dict[str, float] | None = None, seed: int = 0,
                   blocklist: Iterable[str] = (), weights: pd.Series | None = None,
                   source_shares: dict[str, float] | None = None) -> pd.DataFrame:
    """Up to `size` distinct training tasks: `ratio` weights the bands easy / medium / hard (None:
    uniform over tasks); `weights` (positive, by the index of `tasks`) weights the tasks within a band;
    `source_shares` (taskset.sample.source_shares) gives each named source its share of `size` and the other
    sources the rest, drawn apart (a source given 0 is never drawn); the same seed gives the same batch. Fewer
    when too few tasks qualify."""
    unknown = sorted(set(ratio or {}) - set(DIFFICULTY_BANDS))
    if unknown:
        raise ValueError(f"unknown difficulty band(s) {unknown}; bands are {list(DIFFICULTY_BANDS)}")
    rng = np.random.default_rng(seed)
    pool = _trainable(tasks, blocklist)
    if ratio is not None:
        pool = pool[pool["difficulty"].notna()]
    if source_shares:
        parts = [training_batch(part, n, ratio, seed, (), weights)["task_id"]
                 for part, n in _by_source(pool, size, source_shares).values()]
        picked_ids = set(pd.concat(parts)) if parts else set()
        return pool[pool["task_id"].isin(picked_ids)].reset_index(drop=True)
    chances = None if weights is None else weights.reindex(pool.index).to_numpy(dtype=float)
    if ratio is None:
        picked = _draw(rng, np.arange(len(pool)), min(size, len(pool)), chances)
        return pool.iloc[np.sort(picked)].reset_index(drop=True)
    bands = pool["difficulty"].map(lambda d: difficulty_band(int(d)))
    band_weights = {b: float(ratio.get(b, 0)) for b in DIFFICULTY_BANDS}
    quotas = _quotas(size, band_weights, {b: int((bands == b).sum()) for b in DIFFICULTY_BANDS})
    picked = [_draw(rng, np.flatnonzero((bands == b).to_numpy()), n, chances) for b, n in quotas.items() if n]
    rows = np.sort(np.concatenate(picked)) if picked else np.zeros(0, dtype=int)
    return pool.iloc[rows].reset_index(drop=True)


def task_outcomes(trajectories: pd.DataFrame, verdicts: pd.DataFrame, before: int) -> pd.DataFrame:
    """The policy's own training rollouts (purpose train) of the iterations before `before`, per task:
    tries and successes by their verdicts (unjudged episodes do not count). Earlier iterations only, so
    an interrupted iteration draws again the batch it first drew."""
    mine = trajectories.loc[(trajectories["purpose"] == "train") & (trajectories["iteration"] < before),
                            ["trajectory_id", "task_id"]]
    judged = mine.merge(verdicts[["trajectory_id", "success"]], on="trajectory_id")
    judged = judged.assign(success=judged["success"].astype(int))
    return judged.groupby("task_id", as_index=False).agg(tries=("success", "size"), successes=("success", "sum"))


def _skills(tasks: pd.DataFrame) -> tuple[pd.Series, pd.Series]:
    """Each task's family (its site family, else its website) and skill (the goal it shares with the same
    goal on the family's other sites: the family and the last part of the source id)."""
    family = tasks["family"].fillna(tasks["website"]).fillna(tasks["task_id"])
    goal = tasks["source_id"].astype(str).str.rsplit("/", n=1).str[-1]
    return family, family + "/" + goal


def frontier_weights(tasks: pd.DataFrame, outcomes: pd.DataFrame, prior_tries: float = 2.0) -> pd.Series:
    """p(1 - p) per task (by the index of `tasks`), p its skill's estimated success rate: the skill's
    successes and tries, shrunk towards its family's rate ((successes + 1) / (tries + 2)) by
    `prior_tries` pseudo-tries, so an untried skill of a well-known family inherits the family's rate
    and an untried family weighs 0.25, the most."""
    family, skill = _skills(tasks)
    tried = outcomes.merge(pd.DataFrame({"task_id": tasks["task_id"], "family": family, "skill": skill}),
                           on="task_id")
    by_family = tried.groupby("family")[["tries", "successes"]].sum()
    by_skill = tried.groupby("skill")[["tries", "successes"]].sum()
    family_rate = (family.map(by_family["successes"]).fillna(0) + 1) / (family.map(by_family["tries"]).fillna(0) + 2)
    rate = ((skill.map(by_skill["successes"]).fillna(0) + prior_tries * family_rate)
            / (skill.map(by_skill["tries"]).fillna(0) + prior_tries))
    return rate * (1 - rate)


def curriculum_batch(tasks: pd.DataFrame, outcomes: pd.DataFrame, size: int, ratio: dict[str, float] | None,
                     seed: int, blocklist: Iterable[str] = (), retry_share: float = 0.25,
                     source_shares: dict[str, float] | None = None) -> pd.DataFrame:
    """A training batch of the frontier curriculum: up to `retry_share` of `size` re-draws tasks the policy
    tried and did not always solve (half-solved ones first, then failed ones; the bands and source shares do
    not apply), the rest is `training_batch` over the other tasks weighted by `frontier_weights`."""
    if outcomes.empty:  # nothing tried yet: the plain draw, so the warm start is the default's
        return training_batch(tasks, size, ratio, seed, blocklist, source_shares=source_shares)
    rng = np.random.default_rng(seed)
    pool = _trainable(tasks, blocklist)
    unsolved = outcomes[(outcomes["successes"] < outcomes["tries"]) & outcomes["task_id"].isin(pool["task_id"])]
    half_solved = rng.permutation(unsolved.loc[unsolved["successes"] > 0, "task_id"].to_numpy())
    failed = rng.permutation(unsolved.loc[unsolved["successes"] == 0, "task_id"].to_numpy())
    retried = [*half_solved, *failed][:min(size, int(round(retry_share * size)))]
    rest = tasks[~tasks["task_id"].isin(retried)]
    fresh = training_batch(rest, size - len(retried), ratio, seed, blocklist, frontier_weights(rest, outcomes),
                           source_shares)
    return pool[pool["task_id"].isin({*retried, *fresh["task_id"]})].reset_index(drop=True)


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
