"""Score distribution: the mergeable state behind ROC AUC, average precision and their curves.

A :class:`ScoreDistributionState` holds, per bin of scores, the summed weight of positive and of
negative examples. It is **exact** (one bin per distinct score) while the distinct scores fit in the
layout's ``capacity``; beyond that it is **compressed** to coarser bins whose edges depend on the
configuration only, never on the data's arrival order, so merging stays associative and
commutative and every split of the data gives the same state.

How bins are chosen
-------------------
Every finite float64 score ``s`` maps to an order-preserving int64 *key*: the IEEE-754 bit pattern
for ``s >= 0``, and the bit pattern with its 63 low bits flipped (plus one, so that ``-0.0`` and
``+0.0`` share the key 0) for ``s < 0``. ``a < b`` if and only if ``key(a) < key(b)``.

A *level* ``L`` (0..63) groups scores whose keys agree after dropping ``L`` low bits: the bin of
``s`` at level ``L`` is ``key(s) >> L``. Level 0 is exact (one bin per distinct float). A bin at
level ``L <= 52`` spans scores that share sign, exponent and the top ``52 - L`` mantissa bits, so
its width is at most ``2**(L - 52)`` times the magnitude of its scores (a bounded *relative*
width, like a floating-point format with ``52 - L`` mantissa bits). Narrow score ranges (a cluster
1e-9 wide) and unbounded ones (logits, 1e300) therefore never collapse into one bin, and the
resolution is the same for probabilities and logits; no score range is configured.

The state of a dataset is canonical: its level is the smallest ``L`` at which the distinct bins
of the (non-zero-weight) scores number at most ``capacity``, and it holds exactly those bins.
Because a subset of the data never needs a higher level than the whole, merging two canonical
states (bring both to the larger level, add bin by bin, raise the level while the bins exceed
``capacity``) gives the canonical state of the union. Hence merge order and data split never
change the state (bit for bit, also with float weights: the binary state's weights are exact sums,
:mod:`mergeable_metrics._util.exact`, regrouped exactly whenever bins merge or coarsen).

What a compressed state knows
-----------------------------
Every bin boundary is an exact operating point: "score >= lowest score of bin b" selects exactly
the bins ``>= b``. The only unknown is the order of examples *inside* one bin, so every metric
computed from a compressed state comes with a certified interval (see :mod:`mergeable_metrics.metrics.ranking`).

Size: a state of ``m`` bins stores three (m,) arrays of 8 bytes each; the default capacity of
40,000 bins keeps one encoded state under 1 MiB (960 KB of arrays plus a small header).

:class:`ClassScoreDistributionState` applies the same binning to every column of an (N, K) score
matrix, with the weight of every true class per bin: what one-vs-rest and one-vs-one multiclass
ROC AUC and average precision need.

The keys and the canonical binning (:func:`score_keys`, :func:`bin_scores`, :func:`merge_bins`,
:func:`fold_bins`, ...) live in :mod:`mergeable_metrics.states.score_bins` (numpy only) and are re-exported here; this
module holds the states built on them. Folding speed: see :mod:`mergeable_metrics.states.score_bins` and
``benchmarks/bench_auc.py``.

Running states: within :func:`~mergeable_metrics.states.score_running.running_folds` (what
``MetricCollection.update`` folds in) :meth:`ScoreDistributionState.fold` returns a *running* state:
its bins live in a :class:`~mergeable_metrics.states.score_running.RunningBins` (raw counts or
limbs in a compiled hash table at the canonical level) and its fields are those of the canonical
state, built when first read (encode, equality, hash, repr, compute, merge); folding it again folds
a copy of the table, except in ``running_folds(in_place=True)`` (``MetricCollection.update`` on
states it has not handed out), which folds the table itself. The bytes are the canonical state's
for any batching.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from mergeable_metrics.inputs.validation import Batch
from mergeable_metrics._util.limits import MAX_CAPACITY, check_at_most  # MAX_CAPACITY re-exported: documented with the other maxima
from mergeable_metrics._util.exact import ExactSums, add_raw, exact_sum, raw_regroup, raw_sum
from mergeable_metrics.states.score_bins import (  # re-exported: the binning of these states (mergeable_metrics.states.score_bins)
    KEY_MAX_FINITE,
    MAX_LEVEL,
    bin_lower_scores,
    bin_scores,
    bin_upper_scores,
    canonical_bins,  # noqa: F401
    fold_bins,
    fold_bins_by_lookup,
    keys_to_scores,  # noqa: F401
    merge_bins,
    score_keys,
)
from mergeable_metrics.states.base import State, _layout_diff
from mergeable_metrics.states import score_running
from mergeable_metrics.states.score_running import RunningBins, running_folds  # noqa: F401  (running_folds: the update path's hook)

DEFAULT_CAPACITY = 40_000


# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ScoreDistributionLayout:
    """Configuration of a score distribution.

    Attributes:
        capacity: maximum number of bins (int in [2, 2**26]). While a slice has at most this many
            distinct scores its state is exact; beyond, it is compressed to the finest level that
            fits. Default 40,000: 3 arrays x 8 B x 40,000 = 960 KB, so one state stays < 1 MiB.
    """

    capacity: int = DEFAULT_CAPACITY

    def __post_init__(self) -> None:
        c = self.capacity
        if isinstance(c, bool) or not isinstance(c, (int, np.integer)) or not 2 <= c <= MAX_CAPACITY:
            raise ValueError(f"capacity must be an integer in [2, {MAX_CAPACITY}], got {c!r}")
        object.__setattr__(self, "capacity", int(c))


def check_capacity(cap: Any, metric: str) -> int | None:
    """A metric's ``capacity`` parameter checked (None: the default): an integer in [2, 2**26].

    Raises:
        ValueError: naming the metric and the bad value.
    """
    if cap is None:
        return None
    if isinstance(cap, bool) or not isinstance(cap, (int, np.integer)):
        raise ValueError(f"metric {metric!r}: capacity must be an integer, got {cap!r}")
    check_at_most(cap, MAX_CAPACITY, "capacity", f"metric {metric!r}")
    return ScoreDistributionLayout(int(cap)).capacity  # validates the range


class ScoreDistributionState(State):
    """Weighted positive/negative totals per score bin: exact per distinct score up to a capacity.

    Fields:
        level: () int64 in [0, 63]: 0 = exact (one bin per distinct score), L > 0 = bins of
            ``key >> L`` (see the module docstring).
        keys: (m,) int64, strictly increasing bin keys, ``m <= capacity``.
        pos: (m,) float64 >= 0, summed weight of positive examples (label 1) per bin.
        neg: (m,) float64 >= 0, summed weight of negative examples (label 0) per bin.

    Every bin has ``pos + neg > 0``: zero-weight examples leave no trace (as in scikit-learn,
    which drops them before building its curves). Unweighted totals are exact integers (to 2**53).

    Scores come from ``Batch.y_score``; a batch with only hard predictions ``y_pred`` (0/1) uses
    them as scores (two distinct values: the curve has one operating point).

    Raises:
        ValueError: on construction, arrays that break the invariants above (e.g. corrupted bytes);
            on merge, a different ``capacity``.
    """

    kind = "score_distribution"
    Layout = ScoreDistributionLayout
    FIELDS = (("level", "int64"), ("keys", "int64"), ("pos", "float64"), ("neg", "float64"))
    COUNTS = ("pos", "neg")
    NONNEGATIVE = ("level",)
    EXACT = ("pos", "neg")

    def __init__(self, layout: ScoreDistributionLayout, arrays: dict[str, np.ndarray], _trusted: bool = False):
        super().__init__(layout, arrays)
        if _trusted:
            return
        a = self.arrays
        level, keys, pos, neg = int(a["level"]), a["keys"], a["pos"], a["neg"]
        m = keys.shape[0]
        problems = []
        if not 0 <= level <= MAX_LEVEL:
            problems.append(f"level {level} is not in [0, {MAX_LEVEL}]")
        if level > 0 and 2 * m <= layout.capacity:
            problems.append(f"level {level} is not canonical for {m} bins and capacity {layout.capacity}")
        if pos.shape[0] != m or neg.shape[0] != m:
            problems.append(f"keys, pos, neg have lengths {m}, {pos.shape[0]}, {neg.shape[0]}")
        elif m:
            if m > layout.capacity:
                problems.append(f"{m} bins exceed capacity {layout.capacity}")
            if m > 1 and not bool(np.all(keys[1:] > keys[:-1])):
                problems.append("keys are not strictly increasing")
            if 0 <= level <= MAX_LEVEL:
                lim = KEY_MAX_FINITE >> level
                if int(keys[0]) < -lim - 1 or int(keys[-1]) > lim:
                    problems.append("keys outside the range of finite scores")
            # inf is the rounding of an exact sum past float64 (two weights of 1.7e308 in a bin): the
            # limbs hold it and were checked above (an inf without limbs is refused there); NaN fails >= 0
            w = pos + neg
            if not (np.all(pos >= 0) and np.all(neg >= 0) and np.all(w > 0)):
                problems.append("weights must be >= 0 (exact sums), and positive per bin")
        if problems:
            raise ValueError(f"invalid {self.kind} state: " + "; ".join(problems))

    # -- construction -----------------------------------------------------------------------
    @classmethod
    def shape(cls, layout: ScoreDistributionLayout, field: str) -> tuple[int, ...] | None:
        return () if field == "level" else None

    @classmethod
    def layout_for(cls, requirements: list[Any], task: Any) -> ScoreDistributionLayout:
        """One layout for every metric: the largest requested ``capacity`` (None = the default)."""
        caps = [DEFAULT_CAPACITY if r is None else int(r) for r in requirements]
        return ScoreDistributionLayout(max(caps) if caps else DEFAULT_CAPACITY)

    @classmethod
    def _make(cls, layout, keys, pos, neg, level) -> "ScoreDistributionState":
        return cls(
            layout,
            {
                "level": np.int64(level),
                "keys": np.ascontiguousarray(keys, dtype=np.int64),
                "pos": pos if isinstance(pos, ExactSums) else np.ascontiguousarray(pos, dtype=np.float64),
                "neg": neg if isinstance(neg, ExactSums) else np.ascontiguousarray(neg, dtype=np.float64),
            },
            _trusted=True,
        )

    # -- exact weights --------------------------------------------------------------------------
    def _counts_only(self) -> bool:
        """True when ``pos`` and ``neg`` are integers whose total is below 2**52: then the float64
        additions of the binning are exact and the exact-sum bookkeeping can be skipped (a pure
        function of the arrays: remembered per state, see :meth:`_counts_state`)."""
        got = self.__dict__.get("_counts")
        if got is None:
            a = self.arrays
            got = not (a["pos.limbs"].size or a["neg.limbs"].size) and _small_counts(a["pos"], a["neg"])
            self.__dict__["_counts"] = got
        return got

    @classmethod
    def _counts_state(cls, layout, keys, weights, level) -> "ScoreDistributionState":
        """:meth:`_from_weights` of (m, 2) weights already checked to be integer counts of total
        below 2**52 (its :meth:`_counts_only` is then known: True)."""
        out = cls._from_weights(layout, keys, weights, level)
        out.__dict__["_counts"] = True
        return out

    def _exact_in(self, keys: np.ndarray, level: int) -> tuple[np.ndarray, int]:
        """This state's exact weights regrouped into the bins ``keys`` at ``level`` (>= this
        level): un-normalised limbs of (2 m,) sums, entry ``2 bin + label``."""
        a = self.arrays
        if a["keys"].size == 0:
            return np.zeros((2 * keys.shape[0], 0), dtype=np.int64), 0
        to = np.searchsorted(keys, a["keys"] >> np.int64(level - int(a["level"])))
        return raw_regroup([(self.exact["neg"], 2 * to), (self.exact["pos"], 2 * to + 1)], 2 * keys.shape[0])

    @classmethod
    def _exact_state(cls, layout, keys, level, sums: tuple[np.ndarray, int]) -> "ScoreDistributionState":
        """From un-normalised limbs of (2 m,) sums, entry ``2 bin + label`` (rounded once per label)."""
        D, exp = sums
        m = keys.shape[0]
        if D.shape[1] == 0:
            D = np.zeros((2 * m, 1), dtype=np.int64)
        pos, neg = ExactSums.from_limbs(D[1::2], exp, (m,)), ExactSums.from_limbs(D[0::2], exp, (m,))
        return cls._make(layout, keys, pos, neg, level)

    @classmethod
    def _from_weights(cls, layout, keys, weights, level) -> "ScoreDistributionState":
        """From bins with (m, 2) weights of labels (0, 1)."""
        return cls._make(layout, keys, weights[:, 1], weights[:, 0], level)

    @classmethod
    def zero(cls, layout: ScoreDistributionLayout) -> "ScoreDistributionState":
        """The empty distribution (level 0, no bins), the identity of :meth:`merge`."""
        e = np.zeros(0)
        return cls._make(layout, np.zeros(0, np.int64), e, e, 0)

    @classmethod
    def from_batch(cls, layout: ScoreDistributionLayout, batch: Batch) -> "ScoreDistributionState":
        """The canonical state of one validated batch.

        Uses ``batch.y_score`` (or ``batch.y_pred`` as scores), ``batch.y_true`` (0/1) and
        ``batch.sample_weight``.

        Raises:
            ValueError: the batch has neither scores nor predictions, or non-binary labels.
        """
        return cls._from_valid(layout, *cls._inputs(batch))

    @classmethod
    def _inputs(cls, batch: Batch) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """``(score, y, w)`` of a batch: float64 scores, int64 labels, weights or None."""
        score = batch.y_score
        if score is None:
            if batch.y_pred is None:
                raise ValueError("a score distribution needs scores (or predicted labels)")
            score = batch.y_pred.astype(np.float64)
        y = batch.y_true
        return score, (y if y.dtype == np.int64 else y.astype(np.int64)), batch.sample_weight

    def fold(self, batch: Batch) -> "ScoreDistributionState":
        """``self.merge(from_batch(layout, batch))``, computed by binning the batch directly at this
        state's level (see :func:`fold_bins`): the same state, several times faster for the
        engines' read batches and per-slice pieces.

        Raises:
            ValueError: as :meth:`from_batch`.
        """
        score, y, w = self._inputs(batch)
        acc = self.__dict__.get("_running")
        if acc is not None or score_running.running_enabled(bool(self.arrays["keys"].size)):
            got = self._fold_running(acc, score, y, w)
            if got is not None:
                st, done = got
                if done == score.shape[0]:
                    return st
                # folded in place up to a table past its bound: the rest as before
                return st._fold_rest(score[done:], y[done:], None if w is None else w[done:])
        return self._fold_rest(score, y, w)

    def _fold_rest(self, score: np.ndarray, y: np.ndarray, w: np.ndarray | None) -> "ScoreDistributionState":
        """:meth:`fold` of validated rows without running bins (the canonical state)."""
        score, y, w = _drop_zero_weight(score, y, w)
        if score.shape[0] == 0:
            return self
        a = self.arrays
        bins = (a["keys"], self._weights(), int(a["level"]))
        score = np.ascontiguousarray(score, dtype=np.float64)
        if w is None and a["keys"].size and self._counts_only():
            got = fold_bins_by_lookup(bins, score_keys(score), y, self.layout.capacity)
            if got is not None and _small_counts(got[1][:, 0], got[1][:, 1]):
                return self._counts_state(self.layout, *got)  # integer counts: already exact
        k, wts, level = fold_bins(bins, score, y, w, self.layout.capacity)
        if w is None and self._counts_only() and _small_counts(wts[:, 0], wts[:, 1]):
            return self._counts_state(self.layout, k, wts, level)  # integer counts: already exact
        sums = add_raw(self._exact_in(k, level), _exact_rows(k, level, score, y, w))
        return self._exact_state(self.layout, k, level, sums)

    # -- running states (raw bins, canonical where observed; see score_running) ------------------
    def _fold_running(self, acc: RunningBins | None, score: np.ndarray, y: np.ndarray, w: np.ndarray | None) -> "tuple[ScoreDistributionState, int] | None":
        """:meth:`fold` through a :class:`~mergeable_metrics.states.score_running.RunningBins`
        (this state's, or one built from its bins): ``(state, done)``, a running state whose
        arrays are the canonical state's, built when first read, holding the rows ``:done``.
        None: fold as before (no compiled kernels, a table past its bound, weights that are
        not finite and >= 0). In ``running_folds(in_place=True)`` (``MetricCollection.update``
        on states nobody else holds) an accumulator that is not shared is folded in place, and
        ``done`` may stop short of the batch (a table past its bound: the rest folds as before)."""
        if not score_running._kernels():
            return None
        score = np.ascontiguousarray(score, dtype=np.float64)
        y = np.ascontiguousarray(y, dtype=np.int64)
        w = None if w is None else np.ascontiguousarray(w, dtype=np.float64)
        if acc is None:
            acc = self._accumulator(w)
            if acc is None:
                return None
        if score_running.folding_in_place():
            got, done = acc.fold_owned(score, y, w)
            return type(self)._running_state(self.layout, got), done
        folded = acc.fold(score, y, w)
        if folded is None:
            return None
        if folded is acc:
            return self, score.shape[0]  # nothing added (every weight 0)
        return type(self)._running_state(self.layout, folded), score.shape[0]

    def _accumulator(self, w: np.ndarray | None = None) -> RunningBins | None:
        """A :class:`RunningBins` of this (canonical) state's bins (about to fold the weights
        ``w``: on one grid when they and the sums fit one)."""
        a = self.arrays
        keys, level, cap = a["keys"], int(a["level"]), self.layout.capacity
        if keys.size == 0:
            return RunningBins.empty(level, cap)
        if self._counts_only():
            counts = np.stack((a["neg"], a["pos"]), axis=1).astype(np.int64)
            return RunningBins.of_bins(keys, level, cap, counts, None)
        D0, e0 = self.exact["neg"].full()
        D1, e1 = self.exact["pos"].full()
        if w is not None:
            got = RunningBins.grid_of_bins(keys, level, cap, (D0, e0, D1, e1), w)
            if got is not None:
                return got
        return RunningBins.of_bins(keys, level, cap, None, (D0, e0, D1, e1))

    @classmethod
    def _running_state(cls, layout: ScoreDistributionLayout, acc: RunningBins) -> "ScoreDistributionState":
        """A state of the bins of ``acc``: its ``arrays`` and ``exact`` are those of the canonical
        state (:meth:`_of_running`), built when first read; folding it folds ``acc`` (copied)."""
        self = object.__new__(cls)
        arrays = _RunningArrays(cls, layout, acc)
        object.__setattr__(self, "layout", layout)
        object.__setattr__(self, "arrays", arrays)
        object.__setattr__(self, "exact", _RunningExact(arrays))
        self.__dict__["_running"] = acc
        return self

    @classmethod
    def _of_running(cls, layout: ScoreDistributionLayout, acc: RunningBins) -> "ScoreDistributionState":
        """The canonical state of the bins of ``acc``."""
        got = acc.grid_bins()
        if got is not None and got[3] is not None:  # weights on one grid: the sums rounded from their 128-bit integers
            keys, level, (D, exp), v = got
            m = keys.shape[0]
            pos = ExactSums.lazy(D[1::2], exp, (m,), v[1::2].copy())
            neg = ExactSums.lazy(D[0::2], exp, (m,), v[0::2].copy())
            return cls._make(layout, keys, pos, neg, level)
        keys, level, counts, limbs = acc.bins()
        if counts is not None:
            if int(counts.sum()) < 1 << 52:  # integer counts: exact in float64
                return cls._counts_state(layout, keys, counts.astype(np.float64), level)
            m = keys.shape[0]
            D = np.zeros((2 * m, 3), dtype=np.int64)  # a count c is c * 2**0: limbs c mod 2**32, c >> 32
            D[:, 0] = counts.reshape(-1) & 0xFFFFFFFF
            D[:, 1] = counts.reshape(-1) >> 32
            limbs = (D, 0)
        return cls._exact_state(layout, keys, level, limbs)

    @classmethod
    def from_arrays(
        cls,
        layout: ScoreDistributionLayout,
        y_score: np.ndarray,
        y_true: np.ndarray,
        sample_weight: np.ndarray | None = None,
    ) -> "ScoreDistributionState":
        """The canonical state of already-validated arrays.

        Args:
            layout: the layout.
            y_score: (N,) finite float64 scores.
            y_true: (N,) int labels in {0, 1} (1 = positive).
            sample_weight: (N,) finite float64 >= 0, or None for unit weights.

        Raises:
            ValueError: lengths differ, labels outside {0, 1}, non-finite scores, or negative or
                non-finite weights.
        """
        score = np.ascontiguousarray(y_score, dtype=np.float64)
        y = np.asarray(y_true)
        w = None if sample_weight is None else np.ascontiguousarray(sample_weight, dtype=np.float64)
        n = score.shape[0]
        if score.ndim != 1 or y.shape != (n,) or (w is not None and w.shape != (n,)):
            raise ValueError("y_score, y_true and sample_weight must be 1-D of the same length")
        if n and not (np.isin(y, (0, 1)).all()):
            raise ValueError("y_true must hold labels 0 or 1")
        if not np.isfinite(score).all():
            raise ValueError("y_score must be finite (no nan or inf)")
        if w is not None and not (np.isfinite(w).all() and (w >= 0).all()):
            raise ValueError("sample_weight must be finite and >= 0")
        return cls._from_valid(layout, score, y.astype(np.int64, copy=False), w)

    @classmethod
    def _from_valid(cls, layout: ScoreDistributionLayout, score: np.ndarray, y: np.ndarray, w: np.ndarray | None) -> "ScoreDistributionState":
        score = np.ascontiguousarray(score, dtype=np.float64)
        if y.dtype != np.int64:
            y = y.astype(np.int64)
        score, y, w = _drop_zero_weight(score, y, w)
        if score.shape[0] == 0:
            return cls.zero(layout)
        keys, weights, level = bin_scores(score, y, w, layout.capacity)
        if w is None:  # integer counts, exact
            return cls._from_weights(layout, keys, weights, level)
        return cls._exact_state(layout, keys, level, _exact_rows(keys, level, score, y, w))

    # -- monoid -------------------------------------------------------------------------------
    def merge(self, other: "State") -> "ScoreDistributionState":
        """The canonical state of the union of both states' data.

        Both states are brought to the larger level, bins are added key by key, and the level is
        raised while the bins exceed ``capacity``. Associative and commutative; ``zero`` is the
        identity.

        Raises:
            ValueError: ``other`` is another kind, or its ``capacity`` differs (named in the message).
        """
        if type(other) is not type(self):
            raise ValueError(f"cannot merge state {getattr(other, 'kind', type(other).__name__)!r} into {self.kind!r}")
        if other.layout != self.layout:
            raise ValueError(f"cannot merge {self.kind} states: different capacity {self.layout.capacity} != {other.layout.capacity}")
        a, b = self.arrays, other.arrays
        if b["keys"].size == 0:
            return self
        if a["keys"].size == 0:
            return other  # type: ignore[return-value]
        k, wts, level = merge_bins(
            (a["keys"], self._weights(), int(a["level"])),
            (b["keys"], other._weights(), int(b["level"])),
            self.layout.capacity,
        )
        if self._counts_only() and other._counts_only() and _small_counts(wts[:, 0], wts[:, 1]):
            return self._counts_state(self.layout, k, wts, level)  # integer counts: already exact
        sums = add_raw(self._exact_in(k, level), other._exact_in(k, level))  # type: ignore[attr-defined]
        return self._exact_state(self.layout, k, level, sums)

    __add__ = merge

    def _weights(self) -> np.ndarray:
        """(m, 2) weights of labels (0, 1): a view of a (2, m) array, so columns are contiguous."""
        return np.stack((self.arrays["neg"], self.arrays["pos"])).T

    # -- accessors ------------------------------------------------------------------------------
    @property
    def level(self) -> int:
        return int(self.arrays["level"])

    @property
    def is_exact(self) -> bool:
        """True when every bin is one distinct score (level 0): metrics are then exact."""
        return self.level == 0

    @property
    def num_bins(self) -> int:
        return int(self.arrays["keys"].shape[0])

    def totals(self) -> tuple[float, float]:
        """``(positive weight, negative weight)``."""
        return float(self.arrays["pos"].sum()), float(self.arrays["neg"].sum())

    def thresholds(self) -> np.ndarray:
        """(m,) float64 ascending: per bin, the lowest score it can hold (the score itself when
        exact). Predicting positive when ``score >= thresholds[b]`` selects exactly bins ``>= b``."""
        return bin_lower_scores(self.arrays["keys"], self.level)

    def score_range(self) -> np.ndarray:
        """(m, 2) float64: lowest and highest score each bin can hold."""
        k, lvl = self.arrays["keys"], self.level
        return np.stack([bin_lower_scores(k, lvl), bin_upper_scores(k, lvl)], axis=1)

    def __repr__(self) -> str:
        p, n = self.totals()
        return f"{type(self).__name__}(capacity={self.layout.capacity}, level={self.level}, bins={self.num_bins}, pos={p:g}, neg={n:g})"


class Class0ScoreDistributionState(ScoreDistributionState):
    """The score distribution of *class 0's* scores, for ranking metrics with ``pos_label=0``.

    Same fields, binning and merge as :class:`ScoreDistributionState` (``pos`` is still the weight
    of label 1, ``neg`` of label 0; the metrics swap them). Its scores are, per batch:

    * ``Batch.y_score_class0``: column 0 of a binary score given as two columns (N, 2), e.g.
      ``predict_proba`` output, so that ``roc_auc@pos_label=0`` ranks by ``P[:, 0]`` exactly as
      ``sklearn.metrics.roc_auc_score(y == 0, P[:, 0])``;
    * else ``Batch.y_score``: a single score column is taken to hold the scores of the positive
      class (scikit-learn's ``pos_label`` convention, e.g. ``roc_curve(y, s, pos_label=0)``);
    * else hard predictions: score 1.0 where ``y_pred == 0``, 0.0 elsewhere.

    It is a separate state (kind ``score_distribution_class0``) so that ``pos_label=0`` and
    ``pos_label=1`` metrics can be computed together from a two-column input.
    """

    kind = "score_distribution_class0"

    @classmethod
    def _inputs(cls, batch: Batch) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        if batch.y_score_class0 is not None:
            y = batch.y_true
            return batch.y_score_class0, (y if y.dtype == np.int64 else y.astype(np.int64)), batch.sample_weight
        if batch.y_score is None and batch.y_pred is not None:
            batch = Batch(batch.y_true, (batch.y_pred == 0).astype(np.float64), None, batch.sample_weight)
        return super()._inputs(batch)


class _RunningArrays(Mapping):
    """The read-only fields of a running score distribution: those of its canonical state, built
    from the accumulator when a field is first read (encode, equality, hash, repr, compute, merge).
    Two threads reading at once may both build it: the same bits."""

    __slots__ = ("_cls", "_layout", "_acc", "_state")

    def __init__(self, cls: type, layout: ScoreDistributionLayout, acc: RunningBins):
        self._cls, self._layout, self._acc = cls, layout, acc
        self._state: ScoreDistributionState | None = None

    def state(self) -> ScoreDistributionState:
        """The canonical state of the running bins, built on the first call and kept."""
        st = self._state
        if st is None:
            st = self._state = self._cls._of_running(self._layout, self._acc)
        return st

    def __getitem__(self, key: str) -> np.ndarray:
        return self.state().arrays[key]

    def __iter__(self):
        return iter(self._cls._ORDER)

    def __len__(self) -> int:
        return len(self._cls._ORDER)

    def __contains__(self, key: object) -> bool:
        return key in self._cls._ORDER


class _RunningExact(Mapping):
    """The exact sums (``pos``, ``neg``) of a running score distribution (see :class:`_RunningArrays`)."""

    __slots__ = ("_arrays",)

    def __init__(self, arrays: _RunningArrays):
        self._arrays = arrays

    def __getitem__(self, key: str) -> ExactSums:
        return self._arrays.state().exact[key]

    def __iter__(self):
        return iter(self._arrays._cls.EXACT)

    def __len__(self) -> int:
        return len(self._arrays._cls.EXACT)

    def __contains__(self, key: object) -> bool:
        return key in self._arrays._cls.EXACT


# ---------------------------------------------------------------------------------------------
def _small_counts(*arrays: np.ndarray) -> bool:
    """Integer-valued float64 arrays whose total is below 2**52 (their float sums are exact)."""
    total = 0.0
    for v in arrays:
        if v.size and not bool(np.all(np.floor(v) == v)):
            return False
        total += float(np.abs(v).sum()) if v.size else 0.0
    return total < 2.0**52


def _exact_rows(keys: np.ndarray, level: int, score: np.ndarray, y: np.ndarray, w: np.ndarray | None) -> tuple[np.ndarray, int]:
    """Exact weights of validated examples (weights > 0) in the bins ``keys`` at ``level`` that
    hold them: un-normalised limbs of (2 m,) sums, entry ``2 bin + label``."""
    m = keys.shape[0]
    at = np.searchsorted(keys, score_keys(score) >> np.int64(level))
    return raw_sum(np.ones(score.shape[0]) if w is None else w, 2 * at + y, 2 * m)


def _drop_zero_weight(score: np.ndarray, y: np.ndarray, w: np.ndarray | None):
    """Examples with weight > 0 (zero-weight examples leave no trace in a score distribution)."""
    if w is not None:
        keep = w > 0
        if not keep.all():
            return score[keep], y[keep], w[keep]
    return score, y, w


# ---------------------------------------------------------------------------------------------
def default_class_capacity(num_classes: int) -> int:
    """Default bins per class column of a :class:`ClassScoreDistributionState`: each bin stores a
    key and K class weights (8 B each), so ``K (K + 1) 8 capacity`` stays near 1 MiB; clipped to
    [16, 40,000] (K = 3: 10,922 bins per column; K = 10: 1,191)."""
    return int(min(DEFAULT_CAPACITY, max(16, (1 << 20) // (8 * num_classes * (num_classes + 1)))))


@dataclass(frozen=True)
class ClassScoreDistributionLayout:
    """Configuration of a per-class score distribution.

    Attributes:
        num_classes: K >= 2 (labels in [0, K); the score matrix has K columns).
        capacity: bins per class column (int in [2, 2**26]); None picks
            :func:`default_class_capacity` (about 1 MiB per state).
    """

    num_classes: int
    capacity: int | None = None

    def __post_init__(self) -> None:
        k = self.num_classes
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 2:
            raise ValueError(f"num_classes must be an integer >= 2, got {k!r}")
        object.__setattr__(self, "num_classes", int(k))
        cap = default_class_capacity(int(k)) if self.capacity is None else self.capacity
        object.__setattr__(self, "capacity", ScoreDistributionLayout(cap).capacity)

    @property
    def columns(self) -> int:
        """Score columns (one canonical distribution each): K."""
        return self.num_classes

    @property
    def width(self) -> int:
        """Weights per bin: one per true class, K."""
        return self.num_classes


class ClassScoreDistributionState(State):
    """Per class column k of an (N, K) score matrix: a canonical score distribution of
    ``y_score[:, k]`` whose bins hold the summed weight of every true class.

    This is what one-vs-rest (class k against the others) and one-vs-one (class j against class
    k, Hand & Till) ROC AUC and average precision need. Each column is binned exactly like
    :class:`ScoreDistributionState` (same keys, levels and canonical merge), independently.

    Fields:
        levels: (K,) int64, the level of each column.
        offsets: (K + 1,) int64, column k's bins are ``offsets[k]:offsets[k + 1]``.
        keys: (M,) int64, the bin keys of all columns, ascending within each column.
        weights: (M * K,) float64, row-major (M, K): summed weight per bin and true class.

    Raises:
        ValueError: arrays that break the invariants (corrupted bytes); merging states of another
            ``num_classes`` or ``capacity``; a batch without an (N, K) score matrix.
    """

    kind = "class_score_distribution"
    Layout = ClassScoreDistributionLayout
    _WHAT = "one-vs-rest / one-vs-one metrics"
    FIELDS = (("levels", "int64"), ("offsets", "int64"), ("keys", "int64"), ("weights", "float64"))
    COUNTS = ("weights",)
    NONNEGATIVE = ("levels", "offsets")
    EXACT = ("weights",)

    def __init__(self, layout: ClassScoreDistributionLayout, arrays: dict[str, np.ndarray], _trusted: bool = False):
        super().__init__(layout, arrays)
        if _trusted:
            return
        k, width, cap = layout.columns, layout.width, layout.capacity
        a = self.arrays
        levels, offsets, keys, weights = a["levels"], a["offsets"], a["keys"], a["weights"]
        problems = []
        if levels.shape != (k,) or offsets.shape != (k + 1,):
            problems.append(f"levels/offsets must have {k}/{k + 1} entries")
        elif offsets[0] != 0 or offsets[-1] != keys.shape[0] or np.any(np.diff(offsets) < 0):
            problems.append("offsets do not partition the keys")
        elif weights.shape[0] != keys.shape[0] * width:
            problems.append(f"weights must have {width} entries per key")
        else:
            w = weights.reshape(-1, width)
            if not (np.all(w >= 0) and np.all(w.sum(axis=1) > 0)):  # inf: an exact sum past float64 (see above)
                problems.append("weights must be >= 0 (exact sums), and positive per bin")
            for c in range(k):
                kc, lv, m = keys[offsets[c] : offsets[c + 1]], int(levels[c]), int(offsets[c + 1] - offsets[c])
                if not 0 <= lv <= MAX_LEVEL or m > cap or (lv > 0 and 2 * m <= cap):
                    problems.append(f"column {c}: level {lv} with {m} bins is not canonical for capacity {cap}")
                elif m > 1 and not bool(np.all(kc[1:] > kc[:-1])):
                    problems.append(f"column {c}: keys are not strictly increasing")
                elif m and (int(kc[0]) < -(KEY_MAX_FINITE >> lv) - 1 or int(kc[-1]) > KEY_MAX_FINITE >> lv):
                    problems.append(f"column {c}: keys outside the range of finite scores")
        if problems:
            raise ValueError(f"invalid {self.kind} state: " + "; ".join(problems))

    @classmethod
    def shape(cls, layout: ClassScoreDistributionLayout, field: str) -> tuple[int, ...] | None:
        if field == "levels":
            return (layout.columns,)
        if field == "offsets":
            return (layout.columns + 1,)
        return None

    @classmethod
    def layout_for(cls, requirements: list[Any], task: Any) -> ClassScoreDistributionLayout:
        """The task's K and the largest requested capacity (None = the default for K)."""
        default = default_class_capacity(task.num_classes)
        caps = [default if r is None else int(r) for r in requirements]
        return ClassScoreDistributionLayout(task.num_classes, max(caps) if caps else default)

    @classmethod
    def _from_columns(cls, layout: ClassScoreDistributionLayout, columns: list[tuple], exact: "list[Any] | None" = None) -> "ClassScoreDistributionState":
        """From per-column ``(keys, weights, level)``; with ``exact``, the weights are the exact
        sums those give (``(state or None, score, y, w)`` sources, see :meth:`_exact_weights`)."""
        keys = [c[0] for c in columns]
        offsets = np.concatenate(([0], np.cumsum([x.size for x in keys]))).astype(np.int64)
        levels = np.array([c[2] for c in columns], dtype=np.int64)
        if exact is None:
            weights: Any = np.concatenate([np.asarray(c[1], dtype=np.float64).reshape(-1) for c in columns])
        else:
            weights = cls._exact_weights(layout, keys, levels, offsets, exact)
        return cls(
            layout,
            {"levels": levels, "offsets": offsets, "keys": np.concatenate(keys).astype(np.int64, copy=False), "weights": weights},
            _trusted=True,
        )

    @classmethod
    def _exact_weights(cls, layout: Any, keys: list, levels: np.ndarray, offsets: np.ndarray, sources: list) -> ExactSums:
        """Exact (M * width,) weights of the new bins from ``sources``: states (their exact weights
        regrouped into the new bins) and ``(score, y, w)`` example tuples."""
        k, width = layout.columns, layout.width
        size = int(offsets[-1]) * width
        total = ExactSums.zeros((size,))
        for src in sources:
            if isinstance(src, ClassScoreDistributionState):
                a = src.arrays
                if a["keys"].size == 0:
                    continue
                to = np.concatenate(
                    [
                        offsets[c] + np.searchsorted(keys[c], a["keys"][a["offsets"][c] : a["offsets"][c + 1]] >> np.int64(levels[c] - a["levels"][c]))
                        for c in range(k)
                    ]
                )
                total = total + src.exact["weights"].regroup((to[:, None] * width + np.arange(width)[None, :]).ravel(), size)
            else:
                score, y, w = src
                at = np.concatenate(
                    [offsets[c] + np.searchsorted(keys[c], score_keys(np.ascontiguousarray(score[:, c])) >> np.int64(levels[c])) for c in range(k)]
                )
                ww = np.ones(score.shape[0] * k) if w is None else np.tile(w, k)
                labels = np.concatenate([cls._column_labels(y, c) for c in range(k)])
                total = total + exact_sum(ww, index=at * width + labels, size=size)
        return total

    @staticmethod
    def _column_labels(y: np.ndarray, c: int) -> np.ndarray:
        """The (N,) labels that column ``c``'s bins count: the true class of every example."""
        return y

    def _counts_only(self) -> bool:
        """Integer weights with a total below 2**52: the float binning is exact."""
        return self.arrays["weights.limbs"].size == 0 and _small_counts(self.arrays["weights"])

    @classmethod
    def zero(cls, layout: ClassScoreDistributionLayout) -> "ClassScoreDistributionState":
        empty = (np.zeros(0, np.int64), np.zeros((0, layout.width)), 0)
        return cls._from_columns(layout, [empty] * layout.columns)

    @classmethod
    def from_batch(cls, layout: ClassScoreDistributionLayout, batch: Batch) -> "ClassScoreDistributionState":
        """Bin every column of ``batch.y_score`` ((N, K) float64) by true class ``batch.y_true``.

        Raises:
            ValueError: the batch has no (N, K) score matrix.
        """
        k, width = layout.columns, layout.width
        score = batch.y_score
        if score is None or score.ndim != 2 or score.shape[1] != k:
            got = "none" if score is None else f"shape {score.shape}"
            raise ValueError(f"{cls._WHAT} need an (N, {k}) score matrix, got {got}")
        score, y, w = _drop_zero_weight(score, batch.y_true.astype(np.int64, copy=False), batch.sample_weight)
        if score.shape[0] == 0:
            return cls.zero(layout)
        cols = [bin_scores(np.ascontiguousarray(score[:, c], dtype=np.float64), cls._column_labels(y, c), w, layout.capacity, width) for c in range(k)]
        return cls._from_columns(layout, cols, None if w is None else [(score, y, w)])

    def fold(self, batch: Batch) -> "ClassScoreDistributionState":
        """``self.merge(from_batch(layout, batch))``, binning each column at its current level
        (see :func:`fold_bins`).

        Raises:
            ValueError: as :meth:`from_batch`.
        """
        k, width = self.layout.columns, self.layout.width
        score = batch.y_score
        if score is None or score.ndim != 2 or score.shape[1] != k:
            return self.merge(type(self).from_batch(self.layout, batch))  # raises the error
        score, y, w = _drop_zero_weight(score, batch.y_true.astype(np.int64, copy=False), batch.sample_weight)
        if score.shape[0] == 0:
            return self
        cap = self.layout.capacity
        cols = [fold_bins(self.column(c), np.ascontiguousarray(score[:, c], dtype=np.float64), self._column_labels(y, c), w, cap, width) for c in range(k)]
        if w is None and self._counts_only() and _small_counts(*(c[1] for c in cols)):
            return self._from_columns(self.layout, cols)  # integer counts: already exact
        return self._from_columns(self.layout, cols, [self, (score, y, w)])

    def column(self, c: int) -> tuple[np.ndarray, np.ndarray, int]:
        """``(keys, weights, level)`` of class column ``c``: (m,) keys ascending, (m, K) weights
        ((m, 2) weights of labels 0 and 1 for a :class:`LabelScoreDistributionState`)."""
        a, k = self.arrays, self.layout.width
        lo, hi = int(a["offsets"][c]), int(a["offsets"][c + 1])
        return a["keys"][lo:hi], a["weights"][lo * k : hi * k].reshape(-1, k), int(a["levels"][c])

    def merge(self, other: "State") -> "ClassScoreDistributionState":
        """Column by column canonical merge (see :meth:`ScoreDistributionState.merge`).

        Raises:
            ValueError: another kind, ``num_classes`` or ``capacity`` (named in the message).
        """
        if type(other) is not type(self):
            raise ValueError(f"cannot merge state {getattr(other, 'kind', type(other).__name__)!r} into {self.kind!r}")
        if other.layout != self.layout:
            raise ValueError(f"cannot merge {self.kind} states: {_layout_diff(self.layout, other.layout)}")
        if other.arrays["keys"].size == 0:
            return self
        if self.arrays["keys"].size == 0:
            return other  # type: ignore[return-value]
        cap = self.layout.capacity
        cols = [merge_bins(self.column(c), other.column(c), cap) for c in range(self.layout.columns)]  # type: ignore[attr-defined]
        if self._counts_only() and other._counts_only() and _small_counts(*(c[1] for c in cols)):  # type: ignore[attr-defined]
            return self._from_columns(self.layout, cols)  # integer counts: already exact
        return self._from_columns(self.layout, cols, [self, other])

    __add__ = merge

    @property
    def is_exact(self) -> bool:
        """True when every column holds every distinct score (all levels 0)."""
        return bool(np.all(self.arrays["levels"] == 0))

    def class_totals(self) -> np.ndarray:
        """(K,) summed weight per true class (from column 0; every column sees every example)."""
        return self.column(0)[1].sum(axis=0)

    def __repr__(self) -> str:
        a = self.arrays
        return (
            f"ClassScoreDistributionState(num_classes={self.layout.num_classes}, capacity={self.layout.capacity}, "
            f"levels={a['levels'].tolist()}, bins={np.diff(a['offsets']).tolist()})"
        )


# ---------------------------------------------------------------------------------------------
def default_label_capacity(num_labels: int) -> int:
    """Default bins per label column of a :class:`LabelScoreDistributionState`: each bin stores a
    key and two weights (8 B each), so ``24 L capacity`` stays near 1 MiB; clipped to
    [16, 40,000] (L = 5: 8,738 bins per column; L = 100: 436)."""
    return int(min(DEFAULT_CAPACITY, max(16, (1 << 20) // (24 * num_labels))))


@dataclass(frozen=True)
class LabelScoreDistributionLayout:
    """Configuration of a per-label score distribution (multilabel-indicator targets).

    Attributes:
        num_labels: L >= 1 (the (N, L) indicator targets and score matrix have L columns).
        capacity: bins per label column (int in [2, 2**26]); None picks
            :func:`default_label_capacity` (about 1 MiB per state).
    """

    num_labels: int
    capacity: int | None = None

    def __post_init__(self) -> None:
        n = self.num_labels
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise ValueError(f"num_labels must be an integer >= 1, got {n!r}")
        object.__setattr__(self, "num_labels", int(n))
        cap = default_label_capacity(int(n)) if self.capacity is None else self.capacity
        object.__setattr__(self, "capacity", ScoreDistributionLayout(cap).capacity)

    @property
    def columns(self) -> int:
        """Score columns (one canonical distribution each): L."""
        return self.num_labels

    @property
    def width(self) -> int:
        """Weights per bin: of label value 0 and of label value 1."""
        return 2


class LabelScoreDistributionState(ClassScoreDistributionState):
    """Per label column j of multilabel-indicator data: the canonical score distribution of
    ``y_score[:, j]`` with the summed weight of ``y_true[:, j] == 0`` and ``== 1`` per bin.

    Column j is exactly the binary :class:`ScoreDistributionState` of ``(y_true[:, j],
    y_score[:, j])`` (same keys, levels and canonical merge), which is what scikit-learn's
    per-label ``roc_auc_score`` / ``average_precision_score`` on indicator targets read.

    Fields: as :class:`ClassScoreDistributionState` with K = L columns and ``weights`` (M * 2,),
    row-major (M, 2): weight of label value 0, then of label value 1, per bin.

    Raises:
        ValueError: arrays that break the invariants (corrupted bytes); merging states of another
            ``num_labels`` or ``capacity``; a batch without an (N, L) score matrix.
    """

    kind = "label_score_distribution"
    Layout = LabelScoreDistributionLayout
    _WHAT = "multilabel ranking metrics"

    @classmethod
    def layout_for(cls, requirements: list[Any], task: Any) -> LabelScoreDistributionLayout:
        """The task's L and the largest requested capacity (None = the default for L)."""
        default = default_label_capacity(task.num_classes)
        caps = [default if r is None else int(r) for r in requirements]
        return LabelScoreDistributionLayout(task.num_classes, max(caps) if caps else default)

    @staticmethod
    def _column_labels(y: np.ndarray, c: int) -> np.ndarray:
        """Column ``c`` of the (N, L) 0/1 indicators."""
        return np.ascontiguousarray(y[:, c])

    def label_totals(self) -> np.ndarray:
        """(L,) summed weight of the positive examples (``y_true[:, j] == 1``) of each label."""
        return np.array([self.column(c)[1][:, 1].sum() for c in range(self.layout.num_labels)])

    def class_totals(self) -> np.ndarray:  # pragma: no cover - the multiclass accessor
        raise TypeError("a label score distribution has per-label totals: use label_totals()")

    def __repr__(self) -> str:
        a = self.arrays
        return (
            f"LabelScoreDistributionState(num_labels={self.layout.num_labels}, capacity={self.layout.capacity}, "
            f"levels={a['levels'].tolist()}, bins={np.diff(a['offsets']).tolist()})"
        )


# ---------------------------------------------------------------------------------------------
def row_ranking_values(y: np.ndarray, score: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row of (N, L) 0/1 indicators and scores: ROC AUC and average precision of the row's
    labels ranked by the row's scores (every label counts once), vectorised over rows.

    ROC AUC ``= sum_g pos_g (neg_below_g + neg_g / 2) / (P N)`` over the row's groups of tied
    scores (NaN when the row has no positive or no negative label); average precision ``= sum_g
    (pos_g / P) (A_g + pos_g) / (A_g + B_g + pos_g + neg_g)`` with ``A_g``/``B_g`` the positives/
    negatives scored above group g (scikit-learn's step formula; 0.0 without positive labels).
    Both are exact rationals rounded once (scikit-learn's curves round differently: the values
    agree to about 1e-16 relative).

    Returns:
        ``(roc_auc, average_precision)``: two (N,) float64 arrays.
    """
    n, L = score.shape
    if n == 0:
        return np.zeros(0), np.zeros(0)
    order = np.argsort(-score, axis=1, kind="stable")
    s = np.take_along_axis(score, order, axis=1)
    yy = np.take_along_axis(y, order, axis=1).astype(np.float64)
    start = np.ones((n, L), dtype=bool)
    start[:, 1:] = s[:, 1:] != s[:, :-1]
    flat = start.ravel()
    gid = np.cumsum(flat) - 1
    g = int(gid[-1]) + 1
    pos = np.bincount(gid, yy.ravel(), g)
    neg = np.bincount(gid, None, g) - pos
    row = np.repeat(np.arange(n), L)[flat]
    first = gid[::L]  # first group of each row
    cp, cn = np.cumsum(pos), np.cumsum(neg)
    A = cp - pos - (cp - pos)[first][row]
    B = cn - neg - (cn - neg)[first][row]
    P = yy.sum(axis=1)
    N = L - P
    auc_num = np.bincount(row, pos * (N[row] - B - neg / 2.0), n)
    with np.errstate(divide="ignore", invalid="ignore"):
        auc = np.where((P > 0) & (N > 0), auc_num / (P * N), np.nan)
        ap_terms = pos * (A + pos) / (A + B + pos + neg)
        ap = np.where(P > 0, np.bincount(row, ap_terms, n) / np.where(P > 0, P, 1.0), 0.0)
    return auc, ap


@dataclass(frozen=True)
class LabelRankingSamplesLayout:
    """Configuration of :class:`LabelRankingSamplesState`: the number of labels L >= 1."""

    num_labels: int

    def __post_init__(self) -> None:
        n = self.num_labels
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise ValueError(f"num_labels must be an integer >= 1, got {n!r}")
        object.__setattr__(self, "num_labels", int(n))


#: the per-row values a :class:`LabelRankingSamplesState` sums, in field order
ROW_RANKING_METRICS = ("roc_auc", "average_precision")


class LabelRankingSamplesState(State):
    """Sums of per-row ranking values for scikit-learn's ``average="samples"`` on multilabel
    indicator targets: each row's own ROC AUC and average precision over its L labels
    (:func:`row_ranking_values`), then their sample-weighted mean. A row carries its whole label
    vector, so the per-row value is known at fold time and the mean is a ratio of sums.

    Fields, each (2,) float64 indexed by :data:`ROW_RANKING_METRICS`: ``sum_w`` weighted sum of the
    defined row values, ``def_w`` those rows' weight, ``sum_n`` / ``def_n`` the same unweighted
    (for scikit-learn's fallback to the plain mean when the weights sum to 0); ``count`` () int64
    the rows. The float fields are exact sums
    (:mod:`mergeable_metrics._util.exact`), so every split and merge order gives the same state bit for bit.
    """

    kind = "label_ranking_samples"
    Layout = LabelRankingSamplesLayout
    FIELDS = (("sum_w", "float64"), ("def_w", "float64"), ("sum_n", "float64"), ("def_n", "float64"), ("count", "int64"))
    COUNTS = ("def_w", "def_n", "count")
    NONNEGATIVE = ("sum_w", "sum_n")
    EXACT = ("sum_w", "def_w", "sum_n", "def_n")

    @classmethod
    def shape(cls, layout: LabelRankingSamplesLayout, field: str) -> tuple[int, ...]:
        return () if field == "count" else (len(ROW_RANKING_METRICS),)

    @classmethod
    def layout_for(cls, requirements: list[Any], task: Any) -> LabelRankingSamplesLayout:
        return LabelRankingSamplesLayout(task.num_classes)

    @classmethod
    def from_batch(cls, layout: LabelRankingSamplesLayout, batch: Batch) -> "LabelRankingSamplesState":
        """Per-row values of ``batch.y_true`` ((N, L) 0/1) ranked by ``batch.y_score`` ((N, L)).

        Raises:
            ValueError: the batch has no (N, L) score matrix.
        """
        L = layout.num_labels
        score = batch.y_score
        if score is None or score.ndim != 2 or score.shape[1] != L:
            got = "none" if score is None else f"shape {score.shape}"
            raise ValueError(f"multilabel ranking metrics need an (N, {L}) score matrix, got {got}")
        w = batch.sample_weight
        values = row_ranking_values(batch.y_true, np.asarray(score, dtype=np.float64))
        out: dict[str, list] = {f: [] for f, _ in cls.FIELDS if f != "count"}
        for v in values:
            d = ~np.isnan(v)
            v0 = np.where(d, v, 0.0)
            out["sum_w"].append(exact_sum(v0, w))
            out["def_w"].append(np.float64(d.sum()) if w is None else exact_sum(w[d]))
            out["sum_n"].append(exact_sum(v0))
            out["def_n"].append(np.float64(d.sum()))
        arrays: dict[str, Any] = {f: ExactSums.stack(v, (len(ROW_RANKING_METRICS),)) for f, v in out.items()}
        arrays["count"] = np.int64(batch.y_true.shape[0])
        return cls(layout, arrays)

    def mean(self, metric: str) -> float:
        """The samples average of ``metric`` (one of :data:`ROW_RANKING_METRICS`): the weighted
        mean of the defined row values, the unweighted mean if their weights sum to 0, NaN
        without a defined row (scikit-learn's ``np.average`` with the sample weights; rows whose
        value is undefined are left out, where scikit-learn raises)."""
        i = ROW_RANKING_METRICS.index(metric)
        a = self.arrays
        if a["def_w"][i] > 0:
            return float(a["sum_w"][i] / a["def_w"][i])
        if a["def_n"][i] > 0:
            return float(a["sum_n"][i] / a["def_n"][i])
        return float("nan")

    def undefined(self, metric: str) -> bool:
        """Whether some rows' ``metric`` is undefined (left out of :meth:`mean`)."""
        return bool(self.arrays["def_n"][ROW_RANKING_METRICS.index(metric)] < self.arrays["count"])
