"""Rows of ranking and retrieval cases ``(query id, relevance, score)`` and their per-query
scikit-learn references, shared by the core, Beam, Spark and CLI tests of :mod:`mergeable_metrics.metrics.retrieval`."""

from __future__ import annotations

from typing import Iterator

import numpy as np


def retrieval_data(seed: int, n_queries: int = 20, ties: bool = True, graded: bool = True) -> dict[str, np.ndarray]:
    """Columns ``q`` (string ids), ``rel`` (0..3, or 0/1 when not ``graded``), ``s`` (scores
    rounded to 0.1 with ``ties``, else distinct) and ``g`` (a slice column), 2 to 8 items per
    query, the rows of each query spread over the input (shuffled)."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(2, 9, size=n_queries)
    q = np.repeat(np.array([f"q{i}" for i in range(n_queries)], dtype=object), sizes)
    n = q.size
    rel = rng.integers(0, 4 if graded else 2, size=n).astype(float)
    s = np.round(rng.random(n), 1) if ties else rng.permutation(n) / n
    g = rng.choice(np.array(["web", "app"], dtype=object), size=n)
    perm = rng.permutation(n)
    return {"q": q[perm], "rel": rel[perm], "s": s[perm], "g": g[perm]}


def queries(data: dict) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """``(relevance, scores)`` of each query, in order of first appearance."""
    q = np.asarray(data["q"])
    for key in dict.fromkeys(q.tolist()):
        m = q == key
        yield np.asarray(data["rel"], dtype=float)[m], np.asarray(data["s"], dtype=float)[m]


def sk_ndcg_mean(data: dict, k: int | None = None) -> float:
    """scikit-learn's ``ndcg_score`` per query, averaged over the queries with a relevant item
    (a single relevant item is its own ideal ranking: 1; sklearn refuses one-item queries)."""
    from sklearn.metrics import ndcg_score

    vals = [ndcg_score([rel], [s], k=k) if rel.size > 1 else 1.0 for rel, s in queries(data) if rel.sum() > 0]
    return float(np.mean(vals))
