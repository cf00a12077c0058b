"""The scorer's text vectors: MiniLM embeddings memoised in memory and kept on disk by text hash, so
rollouts embed each page text once and training reads the vectors back."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from webgym.config.policy import ScorerConfig
from webgym.embeddings import DIM, Embedder, EmbeddingCache, text_key


class TextEmbeddings:
    """MiniLM vectors by text, memoised in memory (per-step texts repeat a lot) and, with `cache_dir`,
    kept on disk by text hash: new vectors are written `save_every` at a time and on `flush`, as one
    chunk each (not a chunk per call, as the embedder's own cache would)."""

    def __init__(self, embedder: Embedder | None = None, cache_dir: str | Path | None = None,
                 save_every: int = 4096) -> None:
        self.embedder = embedder or Embedder()
        self.cache = EmbeddingCache(cache_dir, self.embedder.cache_name) if cache_dir is not None else None
        self.save_every = save_every
        self._memo: dict[str, np.ndarray] = {}
        self._unsaved: list[str] = []

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        """(N, 384) float32 unit vectors; the empty text is the zero vector."""
        missing = list(dict.fromkeys(t for t in texts if t and t not in self._memo))
        if missing:
            self._fill(missing)
        zero = np.zeros(DIM, dtype=np.float32)
        return np.stack([self._memo[t] if t else zero for t in texts]) if texts else np.zeros((0, DIM), np.float32)

    def _fill(self, missing: list[str]) -> None:
        if self.cache is not None:
            found, vectors = self.cache.get([text_key(t) for t in missing])
            for text, vector in zip([t for t, hit in zip(missing, found, strict=True) if hit], vectors, strict=True):
                self._memo[text] = vector.astype(np.float32)
            missing = [t for t, hit in zip(missing, found, strict=True) if not hit]
        if not missing:
            return
        for text, vector in zip(missing, self.embedder(missing), strict=True):
            self._memo[text] = vector
        if self.cache is not None:
            self._unsaved += missing
            if len(self._unsaved) >= self.save_every:
                self.flush()

    def flush(self) -> None:
        """Write the vectors embedded since the last flush to the file cache (one chunk)."""
        if self.cache is None:
            return
        texts, self._unsaved = self._unsaved, []
        if texts:
            self.cache.put([text_key(t) for t in texts], np.stack([self._memo[t] for t in texts]))


def scorer_embeddings(settings: ScorerConfig) -> TextEmbeddings:
    """The text vectors of the profile's scorer, built in one place so that rollouts and training embed
    at the same precision and share one cache."""
    return TextEmbeddings(Embedder(precision=settings.embedding_precision), cache_dir=settings.embedding_cache)
