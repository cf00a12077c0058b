"""Dedup: which seed tasks repeat another one, exactly or nearly, and which one each repeats.

Tasks are taken in priority order (evaluation sources, then `source_priority`, then as given) and
filtered greedily: a task is dropped when an earlier kept task has the same normalised text
(exact) or a MiniLM cosine similarity of their cores (stages.constraints.task_core: answer-format
instructions left out) at or above the threshold (near), found by exact or IVF
approximate nearest-neighbour search, and both start in the same place: the same start URL (host
and path) when both have one, else the same website when both are known. With `same_constraints`,
near-duplicates must also ask for the same (stages.constraints: numbers, constraint words, content
words such as entities, dates, statuses). With `eval_sources`, every other task within the
threshold of an evaluation task is dropped first.
Sources in `exempt_sources` (the synthetic sites, whose goals differ by their exact checks) are not
deduplicated at all.
"""

from __future__ import annotations

import datetime as dt
import math
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass

import faiss
import numpy as np
import pandas as pd

from schemas.duplicates import SCHEMA
from stages.constraints import agree, constraints_of, site_words, start_key, task_core
from stages.revisions import revision_numbers
from webgym.config import DedupConfig

def normalised_text(text: str) -> str:
    """Case-, width-, punctuation- and whitespace-insensitive form of a text (the exact-dedup key)."""
    text = unicodedata.normalize("NFKC", text).casefold()
    text = "".join(" " if unicodedata.category(c).startswith("P") else c for c in text)
    return " ".join(text.split())


@dataclass(frozen=True)
class Neighbours:
    """For each of N vectors, the others at or above the threshold: ids[lims[i]:lims[i+1]], sims likewise."""

    lims: np.ndarray
    ids: np.ndarray
    sims: np.ndarray

    def of(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        return self.ids[self.lims[i]:self.lims[i + 1]], self.sims[self.lims[i]:self.lims[i + 1]]


def similar_pairs(vectors: np.ndarray, threshold: float, exact_below: int = 20000, nprobe: int = 16,
                  batch: int = 16384) -> Neighbours:
    """Every pair with inner product >= threshold: exact search for small sets, IVF (approximate) above."""
    n, dim = vectors.shape
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    if n < exact_below:
        index = faiss.IndexFlatIP(dim)
    else:
        nlist = int(2 * math.sqrt(n))
        index = faiss.IndexIVFFlat(faiss.IndexFlatIP(dim), dim, nlist, faiss.METRIC_INNER_PRODUCT)
        sample = np.random.default_rng(0).choice(n, size=min(n, 30 * nlist), replace=False)
        index.train(vectors[np.sort(sample)])
        index.nprobe = nprobe
    index.add(vectors)
    lims, ids, sims = [np.zeros(1, dtype=np.int64)], [], []
    for start in range(0, n, batch):
        part_lims, part_sims, part_ids = index.range_search(vectors[start:start + batch], threshold)
        lims.append(part_lims[1:].astype(np.int64) + lims[-1][-1])
        ids.append(part_ids)
        sims.append(part_sims)
    return Neighbours(np.concatenate(lims), np.concatenate(ids) if ids else np.zeros(0, np.int64),
                      np.concatenate(sims) if sims else np.zeros(0, np.float32))


def _order(tasks: pd.DataFrame, config: DedupConfig) -> np.ndarray:
    """Positions of `tasks` in processing order: evaluation sources, then by source priority, stable."""
    priority = {s: i for i, s in enumerate([*config.eval_sources, *config.source_priority])}
    rank = tasks["source"].map(lambda s: priority.get(s, len(priority))).to_numpy()
    return np.argsort(rank, kind="stable")


def duplicate_tasks(tasks: pd.DataFrame, embed: Callable[[list[str]], np.ndarray], config: DedupConfig,
                    now: dt.datetime | None = None) -> pd.DataFrame:
    """One row per task dropped as a duplicate (the duplicates table): the kept task it repeats,
    exact / near / eval_overlap, and the similarity. `tasks` needs source, source_id, text, website
    (start_url and revision when known); tasks of `exempt_sources` are left out (never dropped, never
    embedded)."""
    now = now or dt.datetime.now(dt.UTC)
    tasks = tasks[~tasks["source"].isin(config.exempt_sources)]
    frame = tasks.iloc[_order(tasks, config)].reset_index(drop=True)
    n = len(frame)
    websites = frame["website"].astype(object).where(frame["website"].notna(), None)
    starts = frame["start_url"].astype(object).where(frame["start_url"].notna(), None) if "start_url" in frame \
        else pd.Series([None] * n, dtype=object)
    site = pd.factorize(websites, use_na_sentinel=True)[0]  # -1: unknown website
    start = pd.factorize(starts.map(start_key), use_na_sentinel=True)[0]  # -1: unknown start URL
    constraints = [constraints_of(t) for t in frame["text"]] if config.same_constraints else None
    sites = [site_words(w, u) for w, u in zip(websites, starts, strict=True)] if config.same_constraints else None
    is_eval = frame["source"].isin(config.eval_sources).to_numpy()
    dropped: dict[int, tuple[int, str, float]] = {}  # position -> (kept position, kind, similarity)

    def same_place(p: int, q: int) -> bool:
        if start[p] >= 0 and start[q] >= 0:
            return start[p] == start[q]
        return site[p] < 0 or site[q] < 0 or site[p] == site[q]

    def compatible(p: int, q: int) -> bool:
        return same_place(p, q) and (constraints is None or agree(constraints[p], constraints[q], sites[p] | sites[q]))

    # Exact: same normalised text in the same place, first such earlier copy wins.
    first_copies: dict[str, list[int]] = {}
    for p, text in enumerate(frame["text"]):
        copies = first_copies.setdefault(normalised_text(text), [])
        original = next((q for q in copies if same_place(p, q)), None)
        if original is None:
            copies.append(p)
        else:
            dropped[p] = (original, "exact", 1.0)

    # Near: greedy over the survivors' similarity graph.
    alive = np.array([p for p in range(n) if p not in dropped], dtype=np.int64)
    if len(alive) > 1:
        vectors = embed([task_core(text) for text in frame["text"].iloc[alive]])
        graph = similar_pairs(vectors, config.threshold, config.exact_search_below, config.nprobe)
        kept = np.zeros(n, dtype=bool)
        for i, p in enumerate(alive):
            ids, sims = graph.of(i)
            candidates = [(float(s), int(alive[j])) for j, s in zip(ids, sims, strict=True)
                          if alive[j] != p and compatible(p, alive[j])]
            overlap = [c for c in candidates if is_eval[c[1]]] if not is_eval[p] else []
            earlier = [c for c in candidates if c[1] < p and kept[c[1]]]
            if overlap:
                similarity, q = max(overlap)
                dropped[p] = (q, "eval_overlap", similarity)
            elif earlier:
                similarity, q = max(earlier)
                dropped[p] = (q, "near", similarity)
            else:
                kept[p] = True
    revision = revision_numbers(frame)
    rows = [{"source": frame.at[p, "source"], "source_id": frame.at[p, "source_id"], "revision": int(revision[p]),
             "duplicate_of_source": frame.at[q, "source"], "duplicate_of_source_id": frame.at[q, "source_id"],
             "kind": kind, "similarity": min(1.0, similarity), "threshold": config.threshold, "detected_at": now}
            for p, (q, kind, similarity) in sorted(dropped.items())]
    return pd.DataFrame(rows, columns=SCHEMA.columns) if rows else SCHEMA.empty_frame()


def _identities(frame: pd.DataFrame) -> list[tuple[str, str, int]]:
    return list(zip(frame["source"], frame["source_id"], revision_numbers(frame), strict=True))


def without_duplicates(tasks: pd.DataFrame, duplicates: pd.DataFrame) -> pd.DataFrame:
    """The rows of `tasks` (any frame keyed by source, source_id and revision) that no duplicates row
    names: the seed tasks that survive dedup, or the duplicates found now that the table does not hold
    yet. A revision the duplicates table does not name is kept: it is judged afresh."""
    dropped = set(_identities(duplicates))
    keep = np.array([key not in dropped for key in _identities(tasks)],
                    dtype=bool)  # an empty plain list would select columns, not rows
    return tasks[keep].reset_index(drop=True)

