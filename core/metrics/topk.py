"""Top-k accuracy from a rank histogram: one state serves every k up to a set maximum.

:class:`TopKState` holds, for ranks ``r < max_k``, the weight of rows whose true class has rank
``r`` among the row's K scores (0 = highest), and the total weight. Top-k accuracy is
``sum(hits[:k]) / weight`` for any ``k <= max_k``. Merging is fieldwise addition.

Ties follow scikit-learn's ``top_k_accuracy_score`` (a stable ascending sort, reversed): among
equal scores the higher class id ranks first, so the rank of true class ``t`` is
``#{j: s_j > s_t} + #{j > t: s_j == s_t}``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from mergeable_metrics.inputs.validation import Batch
from mergeable_metrics._util.limits import MAX_TOP_K, check_at_most, check_count
from mergeable_metrics.metrics.base import Metric, record_undefined
from mergeable_metrics._util.exact import exact_sum
from mergeable_metrics.states.base import ConfusionMatrixLayout, State, _weighted_count


@dataclass(frozen=True)
class TopKLayout:
    """Number of classes K and the largest k served (``max_k >= 1``)."""

    num_classes: int
    max_k: int

    def __post_init__(self) -> None:
        ConfusionMatrixLayout(self.num_classes)
        object.__setattr__(self, "num_classes", int(self.num_classes))
        object.__setattr__(self, "max_k", check_count(self.max_k, "max_k", 1, MAX_TOP_K))


def true_class_rank(scores: np.ndarray, y: np.ndarray) -> np.ndarray:
    """(N,) 0-based rank of each row's true class among its (N, K) scores (sklearn tie order)."""
    n, k = scores.shape
    s_t = scores[np.arange(n), y][:, None]
    higher = (scores > s_t).sum(axis=1)
    tied_after = ((scores == s_t) & (np.arange(k)[None, :] > y[:, None])).sum(axis=1)
    return (higher + tied_after).astype(np.int64)


class TopKState(State):
    """``hits`` (max_k,) float64: weight of rows whose true class has rank r; ``weight`` ()."""

    kind = "top_k"
    Layout = TopKLayout
    FIELDS = (("hits", "float64"), ("weight", "float64"))
    COUNTS = ("hits", "weight")
    EXACT = ("hits", "weight")

    @classmethod
    def shape(cls, layout: TopKLayout, field: str) -> tuple[int, ...]:
        return (layout.max_k,) if field == "hits" else ()

    @classmethod
    def layout_for(cls, requirements: list[Any], task: Any) -> TopKLayout:
        return TopKLayout(task.num_classes, max(int(r) for r in requirements))

    @classmethod
    def from_batch(cls, layout: TopKLayout, batch: Batch) -> "TopKState":
        if batch.y_score is None or batch.y_score.ndim != 2:
            raise ValueError("top-k accuracy needs an (N, K) score matrix")
        rank = true_class_rank(batch.y_score, batch.y_true)
        size = max(layout.max_k, layout.num_classes)
        w = batch.sample_weight
        if w is None:
            return cls(layout, {"hits": _weighted_count(rank, None, size)[: layout.max_k], "weight": np.float64(batch.n)})
        hits = exact_sum(w, index=rank, size=size).take(slice(0, layout.max_k))
        return cls(layout, {"hits": hits, "weight": exact_sum(w)})


@dataclass(frozen=True)
class BinaryTopKLayout:
    """No configuration: binary top-k accuracy reads the rule of scikit-learn for 1-D scores."""


class BinaryTopKState(State):
    """Top-1 accuracy of binary 1-D scores under both of scikit-learn's thresholds.

    ``top_k_accuracy_score`` on binary 1-D scores predicts ``score > 0.5`` when every score of
    the input lies in [0, 1], else ``score > 0``: the threshold depends on all rows. The state
    keeps ``hits`` (2,): the weight of rows whose prediction at 0.5 (entry 0) and at 0 (entry
    1) equals the label; ``weight`` (): the weight of every row; ``outside`` () int64: the rows
    (counted without weights, as the rule reads the scores) whose score is outside [0, 1].
    Merging adds every field, so the choice of threshold is made once, on the merged state.
    """

    kind = "binary_top_k"
    Layout = BinaryTopKLayout
    FIELDS = (("hits", "float64"), ("weight", "float64"), ("outside", "int64"))
    COUNTS = ("hits", "weight", "outside")
    EXACT = ("hits", "weight")

    @classmethod
    def shape(cls, layout: BinaryTopKLayout, field: str) -> tuple[int, ...]:
        return (2,) if field == "hits" else ()

    @classmethod
    def layout_for(cls, requirements: list[Any], task: Any) -> BinaryTopKLayout:
        return BinaryTopKLayout()

    def validate(self, integral: bool = False) -> "BinaryTopKState":
        """:meth:`State.validate`, and: the weight of the correct rows at either threshold is at
        most the weight of all rows (each an exact sum over a subset of them, so their rounded
        values keep the order; a decoded state with more would give an accuracy above 1).

        Raises:
            ValueError: naming the field, its value and the weight.
        """
        super().validate(integral)
        hits, weight = self.arrays["hits"], float(self.arrays["weight"])
        if (hits > weight).any():
            i = int(np.flatnonzero(hits > weight)[0])
            raise ValueError(f"invalid {self.kind} state: hits[{i}] = {float(hits[i])!r} exceeds the weight {weight!r} of all rows")
        return self

    @classmethod
    def from_batch(cls, layout: BinaryTopKLayout, batch: Batch) -> "BinaryTopKState":
        score = batch.y_score if batch.y_score is not None else batch.y_pred
        if score is None or np.ndim(score) != 1:
            raise ValueError("binary top-k accuracy needs (N,) scores or predictions")
        score = np.asarray(score, dtype=np.float64)
        y = batch.y_true != 0
        outside = int(np.count_nonzero((score < 0) | (score > 1)))
        hit05, hit0 = (score > 0.5) == y, (score > 0) == y
        w = batch.sample_weight
        if w is None:
            hits = np.array([np.count_nonzero(hit05), np.count_nonzero(hit0)], dtype=np.float64)
            return cls(layout, {"hits": hits, "weight": np.float64(batch.n), "outside": np.int64(outside)})
        # one exact sum over the rows twice: entry 0 the hits at 0.5, entry 1 those at 0, 2 the misses
        index = np.concatenate([np.where(hit05, 0, 2), np.where(hit0, 1, 2)])
        hits = exact_sum(np.concatenate([w, w]), index=index, size=3).take(slice(0, 2))
        return cls(layout, {"hits": hits, "weight": exact_sum(w), "outside": np.int64(outside)})


class TopKAccuracy(Metric):
    """Top-k accuracy: the weighted fraction of rows whose true class is among the k highest
    scores (ties as scikit-learn). ``k`` defaults to 2 (scikit-learn's default); ``max_k`` widens
    the state so that any k up to it can be computed from merged states. ``k >= K`` gives 1.0.
    NaN with no examples. Multiclass: needs an (N, K) score matrix. Binary: 1-D scores of the
    positive class, as scikit-learn: ``k=1`` is the accuracy of ``score > 0.5`` when every score
    of the slice is in [0, 1], else of ``score > 0`` (:class:`BinaryTopKState` keeps both, so the
    choice is made on the merged state); ``k >= 2`` gives 1.0. Source:
    ``sklearn.metrics.top_k_accuracy_score(labels=range(K))``.
    """

    name = "top_k_accuracy"
    full_name = "Top-k accuracy"
    aliases = ("top_k_accuracy_score", "topk_accuracy", "top_k")
    params = {"k": 2, "max_k": None}
    tasks = ("binary", "multiclass")
    sklearn = "sklearn.metrics.top_k_accuracy_score"
    undefined = "no examples (total weight 0)"

    def configure(self) -> None:
        for name in ("k", "max_k"):
            v = self.p[name]
            if v is None and name == "max_k":
                continue
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"metric {self.name!r}: {name} must be an integer >= 1, got {v!r}")
            check_at_most(v, MAX_TOP_K, name, f"metric {self.name!r}")
        if self.p["max_k"] is not None and self.p["max_k"] < self.p["k"]:
            raise ValueError(f"metric {self.name!r}: max_k ({self.p['max_k']}) must be >= k ({self.p['k']})")

    def requires(self) -> list[tuple[type[State], Any]]:
        if self.task.kind == "binary":
            return [(BinaryTopKState, None)]
        return [(TopKState, max(self.p["k"], self.p["max_k"] or 1))]

    def needs(self) -> frozenset[str]:
        return frozenset({"target", "score" if self.task.kind == "binary" else "score_matrix"})

    def compute(self, states: dict[str, State]) -> float:
        if self.task.kind == "binary":
            st = states["binary_top_k"]
            w = float(st["weight"])
            if w == 0:
                record_undefined()
                return float("nan")
            if self.p["k"] >= 2:  # both classes are in the top 2
                return 1.0
            return float(st["hits"][0 if int(st["outside"]) == 0 else 1] / w)
        st = states["top_k"]
        w = float(st["weight"])
        if w == 0:
            record_undefined()
            return float("nan")
        return float(st["hits"][: self.p["k"]].sum() / w)


__all__ = ["BinaryTopKLayout", "BinaryTopKState", "TopKAccuracy", "TopKLayout", "TopKState", "true_class_rank"]
