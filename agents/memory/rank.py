"""Ranking primitives: BM25 over pre-tokenised documents (bm25s), dense cosine ranking through an
optional embedder, and Reciprocal Rank Fusion.

RRF follows Cormack, Clarke and Buettcher, "Reciprocal Rank Fusion outperforms Condorcet and
individual Rank Learning Methods" (SIGIR 2009): score(d) = sum over lists of 1 / (k + rank(d)),
ranks starting at 1, k = 60.
"""

from __future__ import annotations

import logging
from collections.abc import Hashable, Sequence
from typing import Protocol, TypeVar

import numpy as np

H = TypeVar("H", bound=Hashable)
RRF_K = 60


def rrf(rankings: Sequence[Sequence[H]], k: int = RRF_K,
        weights: Sequence[float] | None = None) -> list[tuple[H, float]]:
    """Fuse ranked lists by Reciprocal Rank Fusion (Cormack et al. 2009).

    Args:
        rankings: lists of document keys, best first; a key may appear in any number of lists
            (repeats inside one list are dropped before ranking).
        k: the RRF constant (60 in the paper); must be >= 0.
        weights: optional weight per list (default 1.0 each).

    Returns:
        (key, score) pairs, highest score first; ties keep the order of first appearance.

    Raises:
        ValueError: on k < 0 or a weights list of the wrong length.
    """
    if k < 0:
        raise ValueError("RRF k must be >= 0")
    if weights is not None and len(weights) != len(rankings):
        raise ValueError("one weight per ranked list")
    scores: dict[H, float] = {}
    for li, ranking in enumerate(rankings):
        w = 1.0 if weights is None else float(weights[li])
        unique = list(dict.fromkeys(ranking))
        for rank, key in enumerate(unique, start=1):
            scores[key] = scores.get(key, 0.0) + w / (k + rank)
    order = {key: i for i, key in enumerate(scores)}
    return sorted(scores.items(), key=lambda kv: (-kv[1], order[kv[0]]))


class BM25Index:
    """Okapi BM25 over pre-tokenised documents, backed by bm25s (Lu, 2024, arXiv 2407.03618).

    Args:
        docs: one token list per document (see `agents.memory.text.tokenize`).
        k1, b: the BM25 parameters (Robertson & Zaragoza 2009); bm25s' Lucene variant.
    """

    def __init__(self, docs: Sequence[Sequence[str]], k1: float = 1.5, b: float = 0.75):
        import bm25s  # local import: bm25s logs/prints progress at import on some versions

        logging.getLogger("bm25s").setLevel(logging.WARNING)
        self.size = len(docs)
        self._bm = bm25s.BM25(k1=k1, b=b)
        if self.size:
            self._bm.index([list(d) or ["\x00empty"] for d in docs], show_progress=False)

    def scores(self, query: Sequence[str]) -> np.ndarray:
        """BM25 score of every document for the token list `query` (float array, len = docs)."""
        if not self.size or not query:
            return np.zeros(self.size, dtype=np.float32)
        return np.asarray(self._bm.get_scores(list(query)), dtype=np.float32)

    def rank(self, query: Sequence[str], mask: np.ndarray | None = None, depth: int = 50,
             min_relative: float = 0.0) -> list[int]:
        """Indices of the documents with a positive score, best first, at most `depth`.

        `mask` (bool array) keeps only the documents where it is True; `min_relative` in [0, 1]
        drops documents scoring below that fraction of the best score (keeps a list to its
        strong matches, so incidental word overlaps do not accumulate under fusion)."""
        s = self.scores(query)
        if mask is not None:
            s = np.where(mask, s, 0.0)
        idx = np.argsort(-s, kind="stable")[:depth]
        floor = max(float(s[idx[0]]) * min_relative, 0.0) if len(idx) else 0.0
        return [int(i) for i in idx if s[i] > 0 and s[i] >= floor]


class Embedder(Protocol):
    """Maps texts to vectors (rows of a float array, shape (len(texts), dim)). Optional: e.g. the
    all-MiniLM-L6-v2 sentence embedder; retrieval works without one."""

    def __call__(self, texts: Sequence[str]) -> np.ndarray: ...


class DenseIndex:
    """Cosine-similarity ranking of documents with an `Embedder` (vectors computed once)."""

    def __init__(self, texts: Sequence[str], embedder: Embedder):
        self.embedder = embedder
        vecs = np.asarray(embedder(list(texts)), dtype=np.float32) if texts else np.zeros((0, 1), np.float32)
        self.vecs = vecs / np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)

    def rank(self, query: str, mask: np.ndarray | None = None, depth: int = 50, min_sim: float = 0.2) -> list[int]:
        """Indices with cosine similarity >= `min_sim`, best first, at most `depth`."""
        if not len(self.vecs):
            return []
        q = np.asarray(self.embedder([query]), dtype=np.float32)[0]
        sims = self.vecs @ (q / max(float(np.linalg.norm(q)), 1e-12))
        if mask is not None:
            sims = np.where(mask, sims, -1.0)
        idx = np.argsort(-sims, kind="stable")[:depth]
        return [int(i) for i in idx if sims[i] >= min_sim]
