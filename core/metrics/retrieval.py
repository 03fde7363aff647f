"""Ranking and retrieval metrics grouped by query: NDCG@k, DCG@k, MAP(@k), MRR, precision@k,
recall@k, hit rate@k and R-precision, over rows ``(query id, item score, relevance)``.

A query's ranking can only be computed once all of its rows are known, and a query's rows may
arrive in different batches, bundles or partitions. :class:`RetrievalState` therefore holds the
rows themselves: three (n,) columns, the query key (the 64-bit hash of the query id,
:func:`mergeable_metrics._util.ids.hash_column`), the score and the relevance, kept sorted by (query key, score,
relevance). Merging concatenates and re-sorts, so every split and merge order gives the same
state bit for bit, and a query split over workers is ranked exactly as if it had arrived whole.
Values are computed from the merged state only: per query, then averaged over the queries.

Memory bound: 32 bytes per row per slice the row belongs to (the overall slice and one slice per
slice spec), on the worker that merges a slice's states; the state is exact, never compressed.
Query keys are 64-bit hashes: two distinct query ids share a key with probability about
``q**2 / 2**65`` for ``q`` queries (2.7e-8 for a million queries).

Definitions (for one query with ``n`` items, ``R`` of them relevant, ranked by decreasing score):

* DCG@k and NDCG@k read graded relevance (any finite value >= 0) exactly as scikit-learn's
  ``dcg_score`` / ``ndcg_score`` (linear gains, ``1 / log2(rank + 1)`` discounts, ``k=None`` for
  every item; tied scores share the average gain of their block, sklearn's ``ignore_ties=False``).
* The other metrics read binary relevance (``relevance > 0``). Tied scores are ranked
  pessimistically: less relevant items first among equal scores (a deterministic order that does
  not depend on the order rows arrive in). ``precision@k = hits@k / k`` (Spark's ``precisionAt``,
  torchmetrics' ``RetrievalPrecision``), ``recall@k = hits@k / R``, ``hit_rate@k = [hits@k > 0]``,
  ``mrr``: ``1 / rank`` of the first relevant item, ``map@k``: ``sum of precision@i over the
  relevant items at ranks i <= k, / min(R, k)`` (Spark's ``meanAveragePrecisionAt``; without k:
  average precision, ``/ R``), ``r_precision = hits@R / R``.
* A query with no relevant item (``R = 0``; for NDCG an ideal DCG of 0) is undefined for every
  metric but DCG: it is left out of the mean and counted by ``queries_without_relevant``
  (scikit-learn's ``ndcg_score`` counts such a query as 0 instead). A slice without a query
  with a relevant item has NaN values (undefined, with one ``UndefinedMetricWarning``).

The mean over queries is the correctly rounded quotient of the exact sum of the per-query values
(:mod:`mergeable_metrics._util.exact`), so it does not depend on the order of queries either. With
``sample_weight`` (``weight_col``) each query carries one weight, the same on each of its rows
(scikit-learn's ``ndcg_score(sample_weight=)``: a weight per query), and every metric is the
weighted mean over the queries, ``sum w_q v_q / sum w_q``; rows of one query with different
weights are refused, naming the query.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from fractions import Fraction
from types import MappingProxyType
from typing import Any

import numpy as np

from mergeable_metrics.inputs.validation import Batch, invalid_value_message
from mergeable_metrics._util.exact import exact_ratio, exact_sum
from mergeable_metrics._util.ids import hash_column
from mergeable_metrics._util.limits import MAX_TOP_K, check_at_most
from mergeable_metrics.metrics.base import Metric, record_undefined
from mergeable_metrics.states.base import State, _rebuild_state

__all__ = [
    "DCG",
    "HitRate",
    "MAP",
    "MRR",
    "NDCG",
    "NumQueries",
    "QueriesWithoutRelevant",
    "RPrecision",
    "RetrievalLayout",
    "RetrievalPrecision",
    "RetrievalRecall",
    "RetrievalState",
    "per_query_values",
    "with_query_keys",
]

#: the task kinds whose batches the retrieval state reads (binary 0/1 or graded relevance)
RETRIEVAL_TASKS = ("binary", "regression")


@dataclass(frozen=True)
class RetrievalLayout:
    """No configuration: the state holds every row, so any k can be computed from it."""


def _canonical(query: np.ndarray, score: np.ndarray, relevance: np.ndarray, weight: np.ndarray) -> dict[str, np.ndarray]:
    score = score + 0.0  # -0.0 as 0.0: equal scores are one key
    weight = weight + 0.0
    order = np.lexsort((weight, relevance, score, query))
    return {"query": query[order], "score": score[order], "relevance": relevance[order], "weight": weight[order]}


class RetrievalState(State):
    """The rows of every query: ``query`` (n,) int64 query keys, ``score`` (n,) float64,
    ``relevance`` (n,) float64 (>= 0) and ``weight`` (n,) float64 (>= 0: the query's
    ``sample_weight``, the same on each of its rows; 1 without weights), sorted by (query, score,
    relevance, weight). Merge: concatenate, re-sort. Kind version 2 (the ``weight`` field); bytes
    of version 1 read with weight 1.

    Merges are lazy: a merged state keeps its parts (each a sorted state) and sorts their
    concatenation once, the first time its fields are read (encode, equality, compute), so
    folding B batches one by one costs one sort of all rows, not B sorts of a growing state.
    """

    kind = "retrieval"
    Layout = RetrievalLayout
    FIELDS = (("query", "int64"), ("score", "float64"), ("relevance", "float64"), ("weight", "float64"))
    NONNEGATIVE = ("relevance", "weight")
    VERSION = 2  # 2: the per-query sample weight
    OLD_FIELDS = {1: (("query", "int64"), ("score", "float64"), ("relevance", "float64"))}

    @classmethod
    def upgrade(cls, version: int, layout: Any, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Version 1 bytes (no weights): every query weighs 1."""
        if version != 1:
            return super().upgrade(version, layout, arrays)
        return {**arrays, "weight": np.ones(np.asarray(arrays["query"]).shape[0])}

    @property  # type: ignore[override]
    def arrays(self) -> Any:
        """The fields (read-only), the parts of a lazy merge sorted into one on first read."""
        d = self.__dict__
        arrays = d.get("_arrays")
        if arrays is None:  # two threads may both sort: they find the same fields
            parts = d.get("_parts")
            if parts is None:  # another thread has just sorted them
                return d["_arrays"]
            cat = {name: np.concatenate([p.arrays[name] for p in parts]) for name, _ in self.FIELDS}
            fields = _canonical(cat["query"], cat["score"], cat["relevance"], cat["weight"])
            for a in fields.values():
                a.flags.writeable = False
            arrays = d["_arrays"] = MappingProxyType(fields)
            d.pop("_parts", None)
        return arrays

    @arrays.setter
    def arrays(self, value: Any) -> None:  # State.__init__'s (object.__setattr__) only
        self.__dict__["_arrays"] = value

    @property
    def n(self) -> int:
        """Rows held (without sorting a lazy merge)."""
        d = self.__dict__
        parts = d.get("_parts")
        return sum(p.n for p in parts) if parts is not None else int(self.arrays["query"].shape[0])

    def _runs(self) -> list["RetrievalState"]:
        parts = self.__dict__.get("_parts")
        return list(parts) if parts is not None else [self]

    @classmethod
    def shape(cls, layout: RetrievalLayout, field: str) -> None:
        return None  # a 1-D field of any length

    @classmethod
    def layout_for(cls, requirements: list[Any], task: Any) -> RetrievalLayout:
        return RetrievalLayout()

    @classmethod
    def zero(cls, layout: RetrievalLayout) -> "RetrievalState":
        return cls(layout, {"query": np.zeros(0, np.int64), "score": np.zeros(0), "relevance": np.zeros(0), "weight": np.zeros(0)})

    @classmethod
    def from_batch(cls, layout: RetrievalLayout, batch: Batch) -> "RetrievalState":
        if batch.query is None:
            raise ValueError("retrieval metrics need query ids: give query_col")
        score = batch.y_score if batch.y_score is not None else batch.y_pred
        if score is None or batch.y_true is None:
            raise ValueError("retrieval metrics need relevance labels (label_col) and scores (score_col)")
        rel = np.asarray(batch.y_true, dtype=np.float64)
        if rel.size and not (rel >= 0).all():
            raise ValueError(f"retrieval relevance must be >= 0, got {rel[~(rel >= 0)][0]!r}")
        q = np.asarray(batch.query, dtype=np.int64)
        w = np.ones(q.shape[0]) if batch.sample_weight is None else np.asarray(batch.sample_weight, dtype=np.float64)
        return cls(layout, _canonical(q, np.asarray(score, dtype=np.float64), rel, w))

    def merge(self, other: State) -> "RetrievalState":
        if type(other) is not type(self):
            raise ValueError(f"cannot merge state {getattr(other, 'kind', type(other).__name__)!r} into {self.kind!r}")
        assert isinstance(other, RetrievalState)
        if other.n == 0:
            return self
        if self.n == 0:
            return other
        out = object.__new__(RetrievalState)
        object.__setattr__(out, "layout", self.layout)
        object.__setattr__(out, "exact", {})
        out.__dict__["_parts"] = self._runs() + other._runs()
        return out

    def __reduce__(self) -> tuple:
        return (_rebuild_state, (self.kind, self.layout, dict(self.arrays)))

    def validate(self, integral: bool = False) -> "RetrievalState":
        super().validate(integral)
        q, s, r, w = self["query"], self["score"], self["relevance"], self["weight"]
        if not q.shape == s.shape == r.shape == w.shape:
            raise ValueError(f"invalid {self.kind} state: fields of different lengths {q.shape}, {s.shape}, {r.shape}, {w.shape}")
        if q.size and not np.array_equal(np.lexsort((w, r, s, q)), np.arange(q.size)):
            raise ValueError(f"invalid {self.kind} state: rows are not canonical (sorted by query, score, relevance, weight)")
        return self

    def summary(self) -> str:
        return f"{self.kind}: {self['query'].size} rows, {np.unique(self['query']).size} queries"


def with_query_keys(
    batch: Batch, ids: np.ndarray, rows: np.ndarray, names: tuple[Any, Any] = ("query", "relevance"), skip: bool = False
) -> tuple[Batch, np.ndarray | None]:
    """``batch`` with its query keys (:attr:`mergeable_metrics.inputs.validation.Batch.query`, the 64-bit hashes of the
    ids, :func:`mergeable_metrics._util.ids.hash_column`), its relevance (``y_true``) checked to be >= 0.

    Args:
        batch: a validated batch.
        ids: (n,) query id of each element of ``batch``.
        rows: (n,) input row of each element (messages).
        names: the query and relevance columns' names (messages).
        skip: drop the elements with a missing id or a negative relevance instead of raising.

    Returns:
        ``(batch, bad)``: ``bad`` is the (n,) mask of the elements dropped (``skip``), or None.

    Raises:
        ValueError: a missing id or a negative relevance, naming the column, the value and the
            row (unless ``skip``).
    """
    ids = np.asarray(ids)
    if ids.dtype.kind == "f":
        missing = np.isnan(ids)
    elif ids.dtype.kind == "O":
        missing = np.array([v is None or (isinstance(v, float) and v != v) for v in ids.tolist()], dtype=bool)
    else:
        missing = np.zeros(ids.shape[0], dtype=bool)
    rel = np.asarray(batch.y_true, dtype=np.float64) if batch.y_true is not None else np.zeros(ids.shape[0])
    if rel.shape[0] != ids.shape[0]:
        raise ValueError(f"{names[0]} has {ids.shape[0]} query ids for {rel.shape[0]} rows")
    with np.errstate(invalid="ignore"):
        bad = missing | (rel < 0)
    out = None
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        if not skip:
            column, value, what = (
                (names[0], ids[i].item() if hasattr(ids[i], "item") else ids[i], "query ids must not be missing")
                if missing[i]
                else (names[1], float(rel[i]), "relevance must be >= 0")
            )
            raise ValueError(invalid_value_message(column, value, int(rows[i]), what, f" ({int(bad.sum())} invalid rows in this batch)"))
        batch, ids, rows, out = batch.take(~bad), ids[~bad], rows[~bad], bad
    keys = hash_column(ids, names[0], rows).view(np.int64)
    if batch.sample_weight is not None and keys.size:
        w = np.asarray(batch.sample_weight, dtype=np.float64)
        order = np.lexsort((w, keys))
        ks, ws = keys[order], w[order]
        clash = np.flatnonzero((ks[1:] == ks[:-1]) & (ws[1:] != ws[:-1]))
        if clash.size:
            i, j = int(order[clash[0]]), int(order[clash[0] + 1])
            qid = ids[j].item() if hasattr(ids[j], "item") else ids[j]
            raise ValueError(
                f"column {names[0]!r}: query {qid!r} has rows of different sample weights ({float(w[i])!r} at row {int(rows[i])}, "
                f"{float(w[j])!r} at row {int(rows[j])}); a weight is per query (scikit-learn's ndcg_score sample_weight), the same on each of its rows"
            )
    return dataclasses.replace(batch, query=keys), out


# -- per-query values ------------------------------------------------------------------------
@dataclass(frozen=True)
class _Ranked:
    """The state's rows ranked per query: by query, decreasing score, increasing relevance."""

    group: np.ndarray  # (n,) query index in [0, q)
    pos: np.ndarray  # (n,) 0-based rank within the query
    score: np.ndarray
    relevance: np.ndarray
    start: np.ndarray  # (q,) first row of each query
    size: np.ndarray  # (q,) items per query
    relevant: np.ndarray  # (q,) relevant (> 0) items per query
    weight: np.ndarray  # (q,) each query's sample weight

    @property
    def q(self) -> int:
        return int(self.size.shape[0])


def _ranked(state: RetrievalState) -> _Ranked:
    """The state's rows ranked per query (computed once per state)."""
    cached = state.__dict__.get("_ranked")
    if cached is None:
        cached = state.__dict__["_ranked"] = _rank(state)
    return cached


def _rank(state: RetrievalState) -> _Ranked:
    query, score, rel, w = state["query"], state["score"], state["relevance"], state["weight"]
    order = np.lexsort((rel, -score, query))
    query, score, rel, w = query[order], score[order], rel[order], w[order]
    n = query.shape[0]
    new = np.ones(n, dtype=bool)
    new[1:] = query[1:] != query[:-1]
    start = np.flatnonzero(new)
    group = np.cumsum(new) - 1
    size = np.diff(np.append(start, n))
    pos = np.arange(n) - start[group]
    relevant = np.bincount(group, weights=(rel > 0).astype(np.float64), minlength=start.size).astype(np.int64)
    qw = w[start]
    if n and (w != qw[group]).any():  # rows of one query folded in different batches with different weights
        i = int(np.flatnonzero(w != qw[group])[0])
        raise ValueError(
            f"retrieval: the query of key {int(query[i])} has rows of different sample weights ({float(qw[group[i]])!r} and {float(w[i])!r}); "
            "a weight is per query (scikit-learn's ndcg_score sample_weight), the same on each of its rows"
        )
    return _Ranked(group, pos, score, rel, start, size, relevant, qw)


def _discount(n: int, k: int | None) -> np.ndarray:
    """scikit-learn's ``1 / (log(rank + 1) / log(2))`` for ranks 1..n, 0 past ``k``."""
    d = 1 / (np.log(np.arange(n) + 2) / np.log(2))
    if k is not None:
        d[k:] = 0
    return d


def _dcg(r: _Ranked, k: int | None) -> np.ndarray:
    """(q,) DCG@k of each query with tie-averaged gains (sklearn's ``_tie_averaged_dcg``)."""
    n = r.group.shape[0]
    if n == 0:
        return np.zeros(0)
    cum = np.cumsum(_discount(int(r.size.max()), k))
    # blocks of tied scores within a query: their mean gain times the sum of their discounts
    new = np.ones(n, dtype=bool)
    new[1:] = (r.group[1:] != r.group[:-1]) | (r.score[1:] != r.score[:-1])
    bstart = np.flatnonzero(new)
    block = np.cumsum(new) - 1
    bsize = np.diff(np.append(bstart, n))
    gain = np.bincount(block, weights=r.relevance, minlength=bstart.size) / bsize
    last = r.pos[bstart] + bsize - 1
    first = r.pos[bstart]
    disc = cum[last] - np.where(first > 0, cum[np.maximum(first - 1, 0)], 0.0)
    return np.bincount(r.group[bstart], weights=gain * disc, minlength=r.q)


def _ideal_dcg(r: _Ranked, k: int | None) -> np.ndarray:
    """(q,) DCG@k of each query's items ranked by their own relevance (no ties matter)."""
    n = r.group.shape[0]
    if n == 0:
        return np.zeros(0)
    order = np.lexsort((-r.relevance, r.group))
    disc = _discount(int(r.size.max()), k)
    return np.bincount(r.group[order], weights=disc[r.pos] * r.relevance[order], minlength=r.q)


def per_query_values(state: RetrievalState, metric: str, k: int | None = None) -> np.ndarray:
    """(q,) value of ``metric`` for each query of ``state`` (queries in key order), NaN for an
    undefined query (no relevant item; for ``ndcg`` an ideal DCG of 0).

    Args:
        state: a retrieval state.
        metric: ``"dcg"``, ``"ndcg"``, ``"map"``, ``"mrr"``, ``"precision"``, ``"recall"``,
            ``"hit_rate"`` or ``"r_precision"``.
        k: the cutoff (None: every item; ignored by ``mrr`` and ``r_precision``).
    """
    r = _ranked(state)
    if metric in ("dcg", "ndcg"):
        dcg = _dcg(r, k)
        if metric == "dcg":
            return dcg
        ideal = _ideal_dcg(r, k)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(ideal > 0, dcg / np.where(ideal > 0, ideal, 1.0), np.nan)
    b = (r.relevance > 0).astype(np.float64)
    R = r.relevant.astype(np.float64)
    undefined = r.relevant == 0
    within = np.ones_like(b) if k is None else (r.pos < k).astype(np.float64)
    hits = np.bincount(r.group, weights=b * within, minlength=r.q)
    if metric == "precision":
        out = hits / (r.size if k is None else float(k))
    elif metric == "recall":
        out = hits / np.where(undefined, 1.0, R)
    elif metric == "hit_rate":
        out = (hits > 0).astype(np.float64)
    elif metric == "r_precision":
        top_r = np.bincount(r.group, weights=b * (r.pos < r.relevant[r.group]), minlength=r.q)
        out = top_r / np.where(undefined, 1.0, R)
    elif metric == "mrr":
        rr = np.zeros(r.q)
        np.maximum.at(rr, r.group, b / (r.pos + 1))
        out = rr
    elif metric == "map":
        rel_rank = np.cumsum(b) - np.concatenate([[0.0], np.cumsum(b)])[r.start][r.group]  # relevant items up to each rank
        prec = b * within * rel_rank / (r.pos + 1)
        den = R if k is None else np.minimum(R, float(k))
        out = np.bincount(r.group, weights=prec, minlength=r.q) / np.where(undefined, 1.0, den)
    else:
        raise ValueError(f"unknown retrieval metric {metric!r}")
    return np.where(undefined, np.nan, out)


def _mean_defined(values: np.ndarray, weights: np.ndarray | None = None) -> float:
    """The mean of the non-NaN values, weighted by ``weights`` (each query's sample weight; as
    ``np.average``), correctly rounded from exact sums; NaN, recorded as undefined, when there
    are none (or their weights sum to 0)."""
    keep = ~np.isnan(values)
    v = values[keep]
    if weights is None or (weights == 1).all():
        if not v.size:
            record_undefined()
            return float("nan")
        return exact_ratio(exact_sum(v).fraction(), Fraction(int(v.size)))
    w = weights[keep]
    total = exact_sum(w).fraction() if w.size else Fraction(0)
    if total == 0:
        record_undefined()
        return float("nan")
    return exact_ratio(exact_sum(v, w).fraction(), total)


class _Retrieval(Metric):
    """Shared: the retrieval state, needs labels (relevance), scores and query ids, ``k``."""

    params = {"k": None}
    positional = "k"
    tasks = RETRIEVAL_TASKS
    undefined = "no query with a relevant item"
    _what: str = ""
    _uses_k = True

    def configure(self) -> None:
        k = self.p["k"]
        if k is not None:
            if not self._uses_k:
                raise ValueError(f"metric {self.name!r} takes no k")
            if isinstance(k, bool) or not isinstance(k, int) or k < 1:
                raise ValueError(f"metric {self.name!r}: k must be an integer >= 1 or none, got {k!r}")
            check_at_most(k, MAX_TOP_K, "k", f"metric {self.name!r}")

    def requires(self) -> list[tuple[type[State], Any]]:
        return [(RetrievalState, None)]

    def needs(self) -> frozenset[str]:
        return frozenset({"target", "score", "query"})

    def compute(self, states: dict[str, State]) -> float:
        st = states["retrieval"]
        assert isinstance(st, RetrievalState)
        return _mean_defined(per_query_values(st, self._what, self.p["k"]), _ranked(st).weight)


class NDCG(_Retrieval):
    """Normalized discounted cumulative gain at k, averaged over queries: graded relevance,
    ties and discounts as scikit-learn's ``ndcg_score`` (k=None: every item). A query whose
    ideal DCG is 0 (no relevant item) is undefined and left out (sklearn scores it 0). Source:
    ``sklearn.metrics.ndcg_score`` per query."""

    name = "ndcg"
    full_name = "NDCG@k"
    aliases = ("ndcg_score", "normalized_dcg")
    sklearn = "sklearn.metrics.ndcg_score"
    _what = "ndcg"


class DCG(_Retrieval):
    """Discounted cumulative gain at k, averaged over queries: graded relevance, ties and
    discounts as scikit-learn's ``dcg_score``. Defined (0) for a query without relevant items.
    Source: ``sklearn.metrics.dcg_score`` per query."""

    name = "dcg"
    full_name = "DCG@k"
    aliases = ("dcg_score",)
    bounds = (0.0, math.inf)
    sklearn = "sklearn.metrics.dcg_score"
    undefined = "no query"
    _what = "dcg"


class MAP(_Retrieval):
    """Mean average precision (at k), binary relevance (> 0): per query, the sum of precision@i
    over the relevant items at ranks i <= k, divided by min(R, k) (R relevant items; without k,
    average precision over every item, / R). Ties ranked pessimistically. Source: hand
    computation (Spark's ``RankingMetrics.meanAveragePrecisionAt``; without ties and k,
    ``sklearn.metrics.average_precision_score`` per query)."""

    name = "map"
    full_name = "MAP@k"
    aliases = ("mean_average_precision",)
    reference = "pyspark.mllib.evaluation.RankingMetrics.meanAveragePrecisionAt"
    _what = "map"


class MRR(_Retrieval):
    """Mean reciprocal rank: per query, 1 / rank of the first relevant item (binary relevance,
    ties ranked pessimistically). Source: hand computation (torchmetrics' ``RetrievalMRR``)."""

    name = "mrr"
    full_name = "Mean reciprocal rank"
    aliases = ("mean_reciprocal_rank",)
    reference = "torchmetrics.retrieval.RetrievalMRR"
    _what = "mrr"
    _uses_k = False


class RetrievalPrecision(_Retrieval):
    """Retrieval precision at k: per query, the relevant items among the top k, / k (k=None:
    every item, / the query's items). Binary relevance, ties ranked pessimistically. Source:
    hand computation (Spark's ``RankingMetrics.precisionAt``, torchmetrics'
    ``RetrievalPrecision``)."""

    name = "retrieval_precision"
    full_name = "Retrieval precision@k"
    aliases = ("precision_at_k",)
    reference = "pyspark.mllib.evaluation.RankingMetrics.precisionAt"
    _what = "precision"


class RetrievalRecall(_Retrieval):
    """Retrieval recall at k: per query, the relevant items among the top k, / the query's
    relevant items. Binary relevance, ties ranked pessimistically. Source: hand computation
    (Spark's ``RankingMetrics.recallAt``, torchmetrics' ``RetrievalRecall``)."""

    name = "retrieval_recall"
    full_name = "Retrieval recall@k"
    aliases = ("recall_at_k",)
    reference = "pyspark.mllib.evaluation.RankingMetrics.recallAt"
    _what = "recall"


class HitRate(_Retrieval):
    """Hit rate at k: the fraction of queries with a relevant item in the top k. Binary
    relevance, ties ranked pessimistically. Source: hand computation (torchmetrics'
    ``RetrievalHitRate``)."""

    name = "hit_rate"
    full_name = "Hit rate@k"
    aliases = ("retrieval_hit_rate",)
    reference = "torchmetrics.retrieval.RetrievalHitRate"
    _what = "hit_rate"


class RPrecision(_Retrieval):
    """R-precision: per query with R relevant items, the relevant items among the top R, / R.
    Binary relevance, ties ranked pessimistically. Source: hand computation (torchmetrics'
    ``RetrievalRPrecision``)."""

    name = "r_precision"
    full_name = "R-precision"
    aliases = ("retrieval_r_precision",)
    reference = "torchmetrics.retrieval.RetrievalRPrecision"
    _what = "r_precision"
    _uses_k = False


class NumQueries(_Retrieval):
    """Number of distinct queries in the slice."""

    name = "num_queries"
    full_name = "Queries"
    undefined = ""
    higher_is_better = None
    bounds = (0.0, math.inf)
    _uses_k = False

    def compute(self, states: dict[str, State]) -> float:
        return float(np.unique(states["retrieval"]["query"]).size)


class QueriesWithoutRelevant(_Retrieval):
    """Number of queries in the slice without a relevant item (relevance > 0): the queries the
    ranking metrics but DCG leave out as undefined."""

    name = "queries_without_relevant"
    full_name = "Queries without a relevant item"
    undefined = ""
    higher_is_better = None
    bounds = (0.0, math.inf)
    _uses_k = False

    def compute(self, states: dict[str, State]) -> float:
        st = states["retrieval"]
        assert isinstance(st, RetrievalState)
        r = _ranked(st)
        return float(np.count_nonzero(r.relevant == 0))
