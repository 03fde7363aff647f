"""The one-pass, mergeable Poisson bootstrap of ``Evaluation(ci="bootstrap")``.

What is resampled: every row falls in one of ``B`` (``ci_buckets``) *hash buckets*, from a stable
64-bit hash of its ``id_col`` value (or, without one, of its content: the validated label, score,
prediction, weight and measure values and its slice keys). Each row carries its bucket through
the fold (:attr:`mergeable_metrics.inputs.validation.Batch.bucket`). Every slice keeps its own states, folded as without
``ci`` (point values bit for bit those without ``ci``), and each of them *per bucket* in one
bucket-stacked state with a leading bucket axis (:class:`BucketedPlan`, the stacked form):
:class:`BucketCellsState` ((B, cells) counts and exact weight sums of the cell kinds),
the :data:`SUM_KINDS` ((B, ...) exact sums of the probability sums and calibration bins, folded
for all slices and buckets at once by :class:`BucketSumStack`), and
:class:`BucketDistributionState` (per-bucket weights of the score distribution under ONE binning
shared by the buckets: the slice's own bins). At ``finish``, replicate ``r`` of a slice is the sum
of its buckets weighted by Poisson(1) integers ``w[r, b]`` (:func:`replicate_weights`), which
depend on ``(ci_seed, r, b)`` only: the replicates are the same on any engine and partitioning,
and *paired* across slices and models (the same rows get the same weights). They are computed for
all R replicates at once: ``W (R, B) @ buckets (B, ...)``, then the metrics over the replicate
axis (the confusion-derived metrics by :func:`mergeable_metrics.collection.stacked.compute_cells`, ROC AUC, AP, log loss,
Brier score and ECE here; any other metric from R replicate states). ROC AUC and AP of a slice
with more than :data:`REPLICATE_BINS` bins resample groups of consecutive bins (see
:class:`_Replicates`). This is a random-group bootstrap (Chamandy et al. 2012's one-pass Poisson
bootstrap with the weights drawn per group of rows); with ``B >= ~100`` non-empty buckets it
behaves as the row bootstrap, and a slice with fewer rows than buckets is a row bootstrap (each
row its own bucket, barring hash collisions). A plan with a state kind that has no
bucket-stacked form (:func:`stacked_type` is None: moments, per-class score distributions ...)
takes the *slot* form: every bucket's states as one more slice dimension of the fold, the point
states their merge.

Intervals are percentile intervals of the replicate values at ``ci_level`` (NaN replicates, e.g.
a replicate without positives, are left out). Caveat: a slice with very few rows (or rows in very
few buckets) has few distinct replicates, and its percentile interval is too narrow.

Without ``id_col``, rows of identical content share a bucket and are resampled together: give an
``id_col`` when rows repeat (e.g. hard 0/1 predictions without scores).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable, Sequence

import numpy as np

from mergeable_metrics.inputs.validation import Batch
from mergeable_metrics.metrics.calibration import BrierScore, CalibrationBinsState, ExpectedCalibrationError, LogLoss, ProbabilitySumsState
from mergeable_metrics.states.codec import STATE_KINDS, layout_from_json, layout_to_json, slice_key_to_json
from mergeable_metrics._util.exact import ExactSums, exact_sum, raw_regroup
from mergeable_metrics.slicing.grouped import Stack
from mergeable_metrics._util.ids import _combine, _digest, _hash_numeric, hash_column, mix64  # noqa: F401  (hash_column, mix64 re-exported)
from mergeable_metrics.metrics.base import Interval, recording_undefined
from mergeable_metrics.collection.plan import Plan
from mergeable_metrics.metrics.ranking import AveragePrecision, PrecisionRecallCurve, RocAuc, RocCurve, _g
from mergeable_metrics.states.score_bins import bin_scores, merge_bins, score_keys
from mergeable_metrics.states.score_distribution import ScoreDistributionState, _small_counts
from mergeable_metrics.collection.stacked import CELL_KINDS, is_cell_metric
from mergeable_metrics.metrics.thresholds import MetricAtThresholds
from mergeable_metrics.states.base import ExampleCountState, State, _layout_diff

__all__ = [
    "BucketCellsState",
    "BucketDistributionState",
    "BucketLayout",
    "BucketedPlan",
    "bootstrap_ci",
    "DEFAULT_BUCKETS",
    "MAX_BUCKETS",
    "element_buckets",
    "fixed_shape_keys",
    "hash_column",
    "percentile_interval",
    "replicate_intervals",
    "replicate_states",
    "replicate_values",
    "replicate_weights",
]

#: default number of hash buckets of ``ci="bootstrap"`` (``ci_buckets``)
DEFAULT_BUCKETS = 128
#: largest ``ci_buckets``
MAX_BUCKETS = 1024
#: most bins of a replicate score distribution (ROC AUC, average precision): a slice with more
#: bins resamples groups of consecutive bins of about equal weight (see :class:`_Replicates`)
REPLICATE_BINS = 128

_U = np.uint64


def _hash_field(a: np.ndarray) -> np.ndarray:
    """(n,) uint64 hash of each element's entries of a validated batch array ((n,) or (n, ...))."""
    if a.ndim == 1:
        return _hash_numeric(a)
    flat = a.reshape(a.shape[0], -1)
    h = np.zeros(a.shape[0], dtype=np.uint64)
    for j in range(flat.shape[1]):
        h = _combine(h, _hash_numeric(flat[:, j]))
    return h


def element_buckets(
    buckets: int,
    batch: Any,
    n: int,
    invalid: np.ndarray | None,
    *,
    ids: np.ndarray | None = None,
    id_col: str | None = None,
    slice_codes: Sequence[tuple[np.ndarray, Sequence[tuple]]] = (),
    row_offset: int = 0,
) -> np.ndarray:
    """(batch.n,) int64 bucket in ``[0, buckets)`` of each element of a validated batch.

    Args:
        buckets: B.
        batch: the validated :class:`~mergeable_metrics.inputs.validation.Batch`.
        n: input rows of the batch (valid and invalid).
        invalid: (n,) bool rows skipped as invalid, or None.
        ids: (n,) values of ``id_col`` (None: hash the content).
        id_col: the id column's name (messages).
        slice_codes: ``(codes, keys)`` of the slice specs with one slice per row: (n,) slice index
            of each input row and the slice keys (hashed into the content).
        row_offset: position of the batch's first row in the input (messages).

    Raises:
        ValueError: a missing id; label maps (elements are pixels) without ``id_col``.
    """
    valid = None if invalid is None or not invalid.any() else ~invalid
    if ids is not None:
        at = np.arange(n) if valid is None else np.flatnonzero(valid)
        h = hash_column(np.asarray(ids)[at] if valid is not None else ids, id_col or "id", at + row_offset)
    else:
        if batch.row_of is not None and batch.row_of.size > 1 and bool(np.any(np.diff(batch.row_of) == 0)):
            raise ValueError('ci="bootstrap" of label maps (several elements per row) needs id_col: the bootstrap resamples whole rows')
        h = np.zeros(n, dtype=np.uint64)
        for codes, keys in slice_codes:
            kh = np.array([_digest(b"k" + slice_key_to_json(k).encode("utf-8")) for k in keys], dtype=np.uint64)
            h = _combine(h, kh[codes] if kh.size else np.zeros(n, dtype=np.uint64))
        h = h if valid is None else h[valid]
        if batch.row_of is not None:
            h = h[batch.row_of]
        for name in ("y_true", "y_score", "y_pred", "sample_weight", "values", "y_score_class0"):
            a = getattr(batch, name)
            if a is not None:
                h = _combine(h, _hash_field(np.asarray(a)))
        return (mix64(h) % _U(buckets)).astype(np.int64)
    if batch.row_of is not None:
        h = h[batch.row_of]
    return (mix64(h) % _U(buckets)).astype(np.int64)


# -- replicate weights ----------------------------------------------------------------------------
def _poisson1_cdf() -> np.ndarray:
    p, out, c = math.exp(-1.0), [], 0.0
    for k in range(24):
        c += p / math.factorial(k)
        out.append(c)
    out[-1] = 1.0
    return np.array(out)


_POISSON1_CDF = _poisson1_cdf()


@lru_cache(maxsize=32)
def _weights(seed: int, replicates: int, buckets: int) -> np.ndarray:
    r = np.arange(replicates, dtype=np.uint64)[:, None]
    b = np.arange(buckets, dtype=np.uint64)[None, :]
    h = mix64(_combine(_combine(mix64(np.array([seed], dtype=np.uint64) ^ _U(0x626F6F74)), r), b))
    u = (h >> _U(11)).astype(np.float64) * 2.0**-53
    w = np.searchsorted(_POISSON1_CDF, u, side="right").astype(np.int64)
    w.flags.writeable = False
    return w


def replicate_weights(seed: int, replicates: int, buckets: int) -> np.ndarray:
    """(R, B) int64 Poisson(1) weights; ``w[r, b]`` depends on ``(seed, r, b)`` only (a hash of
    them mapped through the Poisson(1) inverse CDF), so it is the same on every machine, for any
    R and B that contain ``r`` and ``b``. Read-only."""
    return _weights(int(seed), int(replicates), int(buckets))


# -- bucket-stacked states ------------------------------------------------------------------------
@dataclass(frozen=True)
class BucketLayout:
    """Layout of a bucket-stacked state: ``buckets`` (B) and the kind and layout (its canonical
    JSON, :func:`mergeable_metrics.states.codec.layout_to_json`) of the plan state it holds per bucket."""

    buckets: int = DEFAULT_BUCKETS
    kind: str = ""
    layout: str = "{}"

    def __post_init__(self) -> None:
        b = self.buckets
        if isinstance(b, bool) or not isinstance(b, int) or not 1 <= b <= MAX_BUCKETS:
            raise ValueError(f"ci_buckets must be an int in [1, {MAX_BUCKETS}], got {b!r}")


@lru_cache(maxsize=512)
def _base(layout: BucketLayout) -> tuple[type[State], Any]:
    """The plan state's class and layout that a bucket-stacked state of ``layout`` holds."""
    cls = STATE_KINDS.get(layout.kind)
    if cls is None:
        raise ValueError(f"bucket-stacked state of unknown kind {layout.kind!r}")
    return cls, layout_from_json(cls.Layout, layout.layout)


def _buckets_of(batch: Batch) -> np.ndarray:
    if batch.bucket is None:
        raise TypeError("bucket-stacked states are folded by Evaluation.fold (every row needs its bootstrap bucket)")
    return np.asarray(batch.bucket, dtype=np.int64)


class BucketCellsState(State):
    """The cells (:meth:`mergeable_metrics.states.base.State.cells`) of a cell kind per bootstrap bucket.

    Fields: ``counts`` (B, C) int64 rows per bucket and cell; ``weights`` (B, C) their exact
    weight sums (the counts when the rows are unweighted). Merged by adding.
    """

    kind = "bucket_cells"
    Layout = BucketLayout
    FIELDS = (("counts", "int64"), ("weights", "float64"))
    COUNTS = ("counts", "weights")
    EXACT = ("weights",)

    @classmethod
    def shape(cls, layout: BucketLayout, field: str) -> tuple[int, ...]:
        base, bl = _base(layout)
        return (layout.buckets, base.num_cells(bl))

    @classmethod
    def from_batch(cls, layout: BucketLayout, batch: Batch) -> "BucketCellsState":
        base, bl = _base(layout)
        b = _buckets_of(batch)
        B, C = layout.buckets, base.num_cells(bl)
        w = batch.sample_weight
        if base is ExampleCountState and batch.row_of is not None:  # maps: images, each in its first element's bucket
            first = np.flatnonzero(np.r_[True, np.diff(batch.row_of) != 0]) if batch.n else np.zeros(0, np.int64)
            index, w = b[first], None if w is None else w[first]
        else:
            index = b * C + base.cells(bl, batch)
        counts = np.bincount(index, minlength=B * C).reshape(B, C).astype(np.int64)
        weights = counts.astype(np.float64) if w is None else exact_sum(w, index=index, size=B * C, shape=(B, C))
        return cls(layout, {"counts": counts, "weights": weights})


class BucketSumStack(Stack):
    """Every slot's bucket-stacked sums (a :data:`SUM_KINDS` state) of a slice block in one
    table: per field, the flat exact sums of entry ``(slot * B + bucket) * k + j`` (``k``
    entries per bucket), filled by one ``grouped_fields`` per batch over ``slot * B + bucket``."""

    def __init__(self, cls: type[State], layout: BucketLayout):
        super().__init__(cls, layout)
        self.base, self.bl = _base(layout)
        self.B = layout.buckets
        self.width = {name: int(np.prod(self.base.shape(self.bl, name), dtype=np.int64)) for name, _ in cls.FIELDS}
        self.slots = 0
        self.sums: dict[str, ExactSums] = {}
        #: per field, the flat exact sums of entry ``slot * k + j``: the plan state of each slot
        #: (:meth:`point_stack`), folded alongside (one more grouped sum per batch, not a sum
        #: over B buckets per slot at the end)
        self.point: dict[str, ExactSums] = {}

    @staticmethod
    def _flat(v: Any) -> ExactSums:
        if not isinstance(v, ExactSums):
            return ExactSums.of_floats(np.asarray(v, dtype=np.float64).reshape(-1))
        return ExactSums(v.values.reshape(-1), v.exp, v.limbs)

    @staticmethod
    def _add(table: dict[str, ExactSums], name: str, v: ExactSums, n: int) -> None:
        old = table.get(name)
        old = ExactSums.zeros((n,)) if old is None else (old.regroup(np.arange(old.shape[0]), n) if old.shape[0] < n else old)
        table[name] = old + (v.regroup(np.arange(v.shape[0]), n) if v.shape[0] < n else v)

    def fold(self, batch: Batch, pos: np.ndarray | None, slots: np.ndarray, size: int, cache: dict) -> None:
        sub = batch if pos is None else batch.take(pos)
        fields = self.base.grouped_fields(self.bl, sub, slots * self.B + _buckets_of(sub), size * self.B)
        point = self.base.grouped_fields(self.bl, sub, slots, size)
        for name, _ in self.cls.FIELDS:
            k = self.width[name]
            self._add(self.sums, name, self._flat(fields[name]), size * self.B * k)
            self._add(self.point, name, self._flat(point[name]), size * k)
        self.slots = max(self.slots, size)

    def merge(self, other: Stack, slots: np.ndarray, size: int) -> None:
        assert isinstance(other, BucketSumStack)
        if not other.sums:
            return
        rows = np.arange(other.slots * self.B)
        to = slots[rows // self.B] * self.B + rows % self.B
        for name, v in other.sums.items():
            k = self.width[name]
            index = (to[:, None] * k + np.arange(k)).reshape(-1)
            self._add(self.sums, name, v.regroup(index[: v.shape[0]], size * self.B * k), size * self.B * k)
            index = (slots[: other.slots, None] * k + np.arange(k)).reshape(-1)
            p = other.point[name]
            self._add(self.point, name, p.regroup(index[: p.shape[0]], size * k), size * k)
        self.slots = max(self.slots, size)

    def state(self, slot: int) -> State:
        if slot >= self.slots or not self.sums:
            return self.cls.zero(self.layout)
        out = {}
        for name, _ in self.cls.FIELDS:
            k = self.width[name]
            out[name] = self.sums[name].take(np.arange(slot * self.B * k, (slot + 1) * self.B * k), (self.B,) + tuple(self.base.shape(self.bl, name)))
        return self.cls(self.layout, out)

    @property
    def sums_of(self) -> tuple[type[State], Any]:
        """The plan state (class, layout) this stack holds per bucket."""
        return self.base, self.bl

    def point_stack(self) -> Stack:
        """A stack of the plan state itself, read from this stack's per-slot table (exact sums:
        the state the slot's rows fold to, bit for bit)."""
        return _SumOfBuckets(self.base, self.bl, self)

    def empty(self) -> "BucketSumStack":
        return BucketSumStack(self.cls, self.layout)

    def copy(self) -> "BucketSumStack":
        out = BucketSumStack(self.cls, self.layout)
        out.slots, out.sums, out.point = self.slots, dict(self.sums), dict(self.point)
        return out


class _SumOfBuckets(Stack):
    """The plan's own sum state of each slot, read from the table of a :class:`BucketSumStack`
    (see :meth:`BucketSumStack.point_stack`); that stack folds and merges the rows."""

    def __init__(self, cls: type[State], layout: Any, source: BucketSumStack):
        super().__init__(cls, layout)
        self.source = source

    def fold(self, batch: Batch, pos: np.ndarray | None, slots: np.ndarray, size: int, cache: dict) -> None:
        pass  # the source folds the rows

    def merge(self, other: Stack, slots: np.ndarray, size: int) -> None:
        pass  # the source merges them

    def state(self, slot: int) -> State:
        src = self.source
        if slot >= src.slots or not src.sums:
            return self.cls.zero(self.layout)
        out = {}
        for name, _ in self.cls.FIELDS:
            k = src.width[name]
            out[name] = src.point[name].take(np.arange(slot * k, (slot + 1) * k), tuple(self.cls.shape(self.layout, name)))
        return self.cls(self.layout, out)

    def empty(self) -> "_SumOfBuckets":
        return _SumOfBuckets(self.cls, self.layout, self.source)

    def copy(self) -> "_SumOfBuckets":
        return _SumOfBuckets(self.cls, self.layout, self.source)


def _sums_kind(base: type[State]) -> type[State]:
    """The bucket-stacked kind of a sum kind with ``grouped_fields`` (probability sums,
    calibration bins): the base kind's fields with a leading bucket axis, merged by adding."""

    def shape(cls: type, layout: BucketLayout, field: str) -> tuple[int, ...]:
        b, bl = _base(layout)
        return (layout.buckets,) + tuple(b.shape(bl, field))

    def from_batch(cls: type, layout: BucketLayout, batch: Batch) -> State:
        b, bl = _base(layout)
        return cls(layout, b.grouped_fields(bl, batch, _buckets_of(batch), layout.buckets))

    doc = f"The fields of :class:`{base.__module__}.{base.__name__}` per bootstrap bucket (leading axis B), merged by adding."
    attrs = dict(
        kind="bucket_" + base.kind, Layout=BucketLayout, FIELDS=base.FIELDS, COUNTS=base.COUNTS, NONNEGATIVE=base.NONNEGATIVE,
        EXACT=base.EXACT, BASE=base, STACK=BucketSumStack, shape=classmethod(shape), from_batch=classmethod(from_batch), __module__=__name__, __doc__=doc,
    )  # fmt: skip
    return type(f"Bucket{base.__name__}", (State,), attrs)


#: plan state class -> its bucket-stacked kind (sum kinds)
SUM_KINDS: dict[type[State], type[State]] = {c: _sums_kind(c) for c in (ProbabilitySumsState, CalibrationBinsState)}
# module attributes, so that the classes pickle by reference (engines ship the plan to workers)
BucketProbabilitySumsState = SUM_KINDS[ProbabilitySumsState]
BucketCalibrationBinsState = SUM_KINDS[CalibrationBinsState]


class BucketDistributionState(State):
    """A score distribution per bootstrap bucket, under ONE binning shared by the buckets.

    ``level`` and ``keys`` are the binning of the union of the buckets' scores, the one
    :class:`~mergeable_metrics.states.score_distribution.ScoreDistributionState` of the same rows has (canonical:
    the same for any batching and merge order); ``cell`` (k,) int64 strictly increasing entries
    ``bin * B + bucket`` of the (bin, bucket) pairs that hold rows, with their exact positive
    and negative weights ``pos``, ``neg`` (k,). The sum over the buckets is the plan's score
    distribution, so a replicate's bins are those of the point state (full resolution while the
    scores fit the capacity).
    """

    kind = "bucket_score_distribution"
    Layout = BucketLayout
    FIELDS = (("level", "int64"), ("keys", "int64"), ("cell", "int64"), ("pos", "float64"), ("neg", "float64"))
    COUNTS = ("pos", "neg")
    NONNEGATIVE = ("level",)
    EXACT = ("pos", "neg")

    def __init__(self, layout: BucketLayout, arrays: dict[str, Any], _trusted: bool = False):
        super().__init__(layout, arrays)
        if _trusted:
            return
        base = _base(layout)[0]
        if not issubclass(base, ScoreDistributionState):
            raise ValueError(f"invalid {self.kind} state: its layout's kind {layout.kind!r} is not a score distribution")
        a = self.arrays
        keys, cell, pos, neg = a["keys"], a["cell"], a["pos"], a["neg"]
        m, k = keys.shape[0], cell.shape[0]
        problems = []
        if pos.shape[0] != k or neg.shape[0] != k:
            problems.append(f"cell, pos, neg have lengths {k}, {pos.shape[0]}, {neg.shape[0]}")
        if m > _base(layout)[1].capacity:
            problems.append(f"{m} bins exceed capacity {_base(layout)[1].capacity}")
        if m > 1 and not bool(np.all(keys[1:] > keys[:-1])):
            problems.append("keys are not strictly increasing")
        if k and (not bool(np.all(cell[1:] > cell[:-1])) or cell[0] < 0 or cell[-1] >= m * layout.buckets):
            problems.append("cells are not strictly increasing bin * buckets + bucket entries")
        if not problems and k and not bool(np.all(pos + neg > 0)):
            problems.append("every cell must hold a positive weight")
        if problems:
            raise ValueError(f"invalid {self.kind} state: " + "; ".join(problems))

    @classmethod
    def shape(cls, layout: BucketLayout, field: str) -> tuple[int, ...] | None:
        return () if field == "level" else None

    @classmethod
    def _make(cls, layout: BucketLayout, level: int, keys: np.ndarray, cell: np.ndarray, pos: Any, neg: Any) -> "BucketDistributionState":
        arrays = {
            "level": np.int64(level),
            "keys": np.ascontiguousarray(keys, dtype=np.int64),
            "cell": np.ascontiguousarray(cell, dtype=np.int64),
            "pos": pos,
            "neg": neg,
        }
        return cls(layout, arrays, _trusted=True)

    @classmethod
    def zero(cls, layout: BucketLayout) -> "BucketDistributionState":
        e = np.zeros(0, dtype=np.int64)
        return cls._make(layout, 0, e, e, np.zeros(0), np.zeros(0))

    @classmethod
    def from_batch(cls, layout: BucketLayout, batch: Batch) -> "BucketDistributionState":
        base, bl = _base(layout)
        b = _buckets_of(batch)
        score, y, w = base._inputs(batch)
        if w is not None and not bool(np.all(w > 0)):  # zero-weight rows leave no trace (as in the point state)
            keep = w > 0
            score, y, w, b = score[keep], y[keep], w[keep], b[keep]
        if score.shape[0] == 0:
            return cls.zero(layout)
        score = np.ascontiguousarray(score, dtype=np.float64)
        keys, _, level = bin_scores(score, y, w, bl.capacity)
        j = np.searchsorted(keys, score_keys(score) >> np.int64(level))
        u, inv = np.unique(j * layout.buckets + b, return_inverse=True)
        inv = inv.reshape(-1)
        if w is None:  # integer counts, exact
            pos = np.bincount(inv, weights=y, minlength=u.shape[0])
            neg = np.bincount(inv, minlength=u.shape[0]) - pos
        else:
            one = y == 1
            pos = exact_sum(w[one], index=inv[one], size=u.shape[0])
            neg = exact_sum(w[~one], index=inv[~one], size=u.shape[0])
        return cls._make(layout, level, keys, u, pos, neg)

    def _totals(self) -> np.ndarray:
        """(m, 2) weights of labels (0, 1) per bin, summed over the buckets."""
        a = self.arrays
        j, m = a["cell"] // self.layout.buckets, a["keys"].shape[0]
        return np.stack([np.bincount(j, a["neg"], minlength=m), np.bincount(j, a["pos"], minlength=m)], axis=1)

    def _cells_in(self, keys: np.ndarray, level: int) -> np.ndarray:
        a = self.arrays
        B = self.layout.buckets
        to = np.searchsorted(keys, a["keys"] >> np.int64(level - int(a["level"])))
        return to[a["cell"] // B] * B + a["cell"] % B

    def _counts_only(self) -> bool:
        a = self.arrays
        return not a["pos.limbs"].size and not a["neg.limbs"].size and _small_counts(a["pos"], a["neg"])

    def merge(self, other: State) -> "BucketDistributionState":
        """The bucket distributions of the union of both states' rows (the binning of the
        plan's score distribution merge: the larger level, the union of the bins, the level
        raised while they exceed the capacity; each bucket's weights regrouped into it)."""
        if type(other) is not type(self):
            raise ValueError(f"cannot merge state {getattr(other, 'kind', type(other).__name__)!r} into {self.kind!r}")
        if other.layout != self.layout:
            raise ValueError(f"cannot merge {self.kind} states: {_layout_diff(self.layout, other.layout)}")
        a, b = self.arrays, other.arrays
        if b["cell"].size == 0:
            return self
        if a["cell"].size == 0:
            return other  # type: ignore[return-value]
        cap = _base(self.layout)[1].capacity
        keys, _, level = merge_bins((a["keys"], self._totals(), int(a["level"])), (b["keys"], other._totals(), int(b["level"])), cap)  # type: ignore[attr-defined]
        ca, cb = self._cells_in(keys, level), other._cells_in(keys, level)  # type: ignore[attr-defined]
        u, inv = np.unique(np.concatenate([ca, cb]), return_inverse=True)
        inv = inv.reshape(-1)
        k, na = u.shape[0], ca.shape[0]
        if self._counts_only() and other._counts_only():  # type: ignore[attr-defined]
            pos = np.bincount(inv, np.concatenate([a["pos"], b["pos"]]), minlength=k)
            neg = np.bincount(inv, np.concatenate([a["neg"], b["neg"]]), minlength=k)
            if _small_counts(pos, neg):
                return self._make(self.layout, level, keys, u, pos, neg)
        sums = []
        for name in ("pos", "neg"):
            D, exp = raw_regroup([(self.exact[name], inv[:na]), (other.exact[name], inv[na:])], k)
            if D.shape[1] == 0:
                D = np.zeros((k, 1), dtype=np.int64)
            sums.append(ExactSums.from_limbs(D, exp, (k,)))
        return self._make(self.layout, level, keys, u, sums[0], sums[1])

    def dense(self) -> tuple[np.ndarray, np.ndarray]:
        """``(pos, neg)``: (B, m) float64 weights per bucket and bin."""
        a = self.arrays
        B, m = self.layout.buckets, a["keys"].shape[0]
        at = (a["cell"] % B) * m + a["cell"] // B
        return (np.bincount(at, a["pos"], minlength=B * m).reshape(B, m), np.bincount(at, a["neg"], minlength=B * m).reshape(B, m))


def stacked_type(cls: type[State], layout: Any, buckets: int) -> tuple[type[State], BucketLayout] | None:
    """The bucket-stacked state (class, layout) of a plan state, or None for kinds without one."""
    if cls.num_cells(layout) is not None:
        target: type[State] | None = BucketCellsState
    elif cls is ScoreDistributionState:
        target = BucketDistributionState
    else:
        target = SUM_KINDS.get(cls)
    return None if target is None else (target, BucketLayout(int(buckets), cls.kind, layout_to_json(layout)))


# -- the bucketed plan ----------------------------------------------------------------------------
class BucketedPlan(Plan):
    """A :class:`~mergeable_metrics.collection.plan.Plan` whose state tuple per slice also holds each state per hash
    bucket.

    *Stacked* form (:attr:`stacked`; every state kind of the plan has a bucket-stacked kind,
    :func:`stacked_type`: cell kinds, the binary score distribution, probability sums and
    calibration bins): ``states[:S]`` are the plan's own states of the slice, folded as
    without ``ci`` (point values bit for bit those without ``ci``), and ``states[S + i]`` is
    state ``i`` per bucket with a leading bucket axis (:class:`BucketCellsState`,
    :class:`BucketDistributionState`, the ``SUM_KINDS``). *Slot* form (any other kind, e.g.
    moments or per-class score distributions): ``states[b * S + i]`` is state ``i`` of bucket
    ``b``, and the point states are the merge of the buckets.

    ``zero``, ``merge``, ``merge_all``, ``encode``, ``decode`` and ``check`` are the plan's over
    the longer tuple (engines carry it unchanged); :meth:`point` gives the plan's own states, and
    ``compute`` / ``compute_detailed`` compute from them. Folding goes through
    :meth:`mergeable_metrics.Evaluation.fold` (it gives each row its bucket).

    Args:
        plan: the evaluation's plan.
        buckets: B.
    """

    def __init__(self, plan: Plan, buckets: int):  # noqa: D107 - a view of ``plan``
        self.__dict__.update(plan.__dict__)
        self.base = plan
        self.buckets = int(buckets)
        stacked = [stacked_type(cls, layout, self.buckets) for cls, layout in plan.state_types]
        #: True: the stacked form (see the class docstring); False: one slot per bucket
        self.stacked = all(t is not None for t in stacked)
        roles = getattr(plan, "roles", None)
        if self.stacked:
            self.state_types = plan.state_types + tuple(stacked)  # type: ignore[operator]
            #: the model each state folds (the plan's roles, twice), or None
            self.roles = None if roles is None else tuple(roles) + tuple(roles)
        else:
            self.state_types = plan.state_types * self.buckets

    def groups(self, states: tuple[State, ...]) -> list[tuple[State, ...]]:
        """The B tuples of the plan's states, one per bucket (slot form)."""
        s = len(self.base.state_types)
        if len(states) != s * self.buckets:
            raise ValueError(f"expected {s * self.buckets} bucketed states ({self.buckets} buckets of {s}), got {len(states)}")
        return [tuple(states[b * s : (b + 1) * s]) for b in range(self.buckets)]

    def point(self, states: tuple[State, ...]) -> tuple[State, ...]:
        """The plan's states of the slice (the merge of every bucket)."""
        if self.stacked:
            return tuple(states[: len(self.base.state_types)])
        cache = self.__dict__.setdefault("_points", {})
        cached = cache.get(id(states))
        if cached is not None and cached[0] is states:
            return cached[1]
        parts = self.groups(states)
        while len(parts) > 1:  # a balanced tree of merges (exact states: any order gives the same)
            parts = [self.base.merge(parts[i], parts[i + 1]) if i + 1 < len(parts) else parts[i] for i in range(0, len(parts), 2)]
        if len(cache) >= 4096:  # finish asks twice per slice (values, then replicates)
            cache.clear()
        cache[id(states)] = (states, parts[0])
        return parts[0]

    def fold(self, states: tuple[State, ...], batch: Any) -> tuple[State, ...]:
        """Fold a batch whose elements carry their buckets (:attr:`mergeable_metrics.inputs.validation.Batch.bucket`,
        set by :meth:`mergeable_metrics.Evaluation.fold`); stacked form only."""
        if not self.stacked or getattr(batch, "bucket", None) is None:
            raise TypeError("bucketed states are folded by Evaluation.fold (every row needs its bootstrap bucket)")
        if batch.n == 0:
            return states
        s = len(self.base.state_types)
        roles = self.roles[s:] if self.roles is not None else (None,) * s
        own = self.base.fold(tuple(states[:s]), batch)
        return own + tuple(x.fold(batch.baseline if r == "baseline" else batch) for x, r in zip(states[s:], roles))

    def compute_detailed(self, states: tuple[State, ...]) -> Any:
        return self.base.compute_detailed(self.point(states) if len(states) != len(self.base.state_types) else states)

    def compute_many(self, states_list: Sequence[tuple[State, ...]]) -> Any:
        return self.base.compute_many([self.point(s) if len(s) != len(self.base.state_types) else s for s in states_list])

    def describe(self) -> dict[str, Any]:
        return self.base.describe()


# -- replicates -----------------------------------------------------------------------------------
def _linear(cls: type[State], layout: Any) -> bool:
    """Whether states of this kind merge by adding (or max-ing) fixed-shape fields."""
    return cls.merge is State.merge and all(cls.shape(layout, n) is not None for n, _ in cls.FIELDS)


def _field(s: State, name: str) -> np.ndarray:
    return s.exact[name].values if name in s.exact else s.arrays[name]


def _linear_replicates(cls: type[State], layout: Any, states: list[State], w: np.ndarray) -> list[State]:
    out: dict[str, np.ndarray] = {}
    for name, dtype in cls.FIELDS:
        x = np.stack([_field(s, name) for s in states])  # (B, ...)
        if name in cls.MAXED:  # the max over the buckets a replicate draws
            used = (w > 0).reshape(w.shape + (1,) * (x.ndim - 1))
            y = np.max(np.where(used, x[None], -np.inf), axis=1, initial=-np.inf)
            y = np.where(np.isfinite(y), y, 0.0).astype(dtype)
        elif np.dtype(dtype).kind == "i":
            y = np.tensordot(w, x, axes=1).astype(np.int64)
        else:
            y = np.tensordot(w.astype(np.float64), x, axes=1)
        out[name] = y
    return [cls(layout, {name: out[name][r] for name, _ in cls.FIELDS}) for r in range(w.shape[0])]


def _distribution_replicates(cls: type[ScoreDistributionState], layout: Any, states: list[State], point: State, w: np.ndarray) -> list[State]:
    """Replicates of score distributions over the point state's bins (its level and keys): each
    bucket's bins regrouped into them, weighted, summed; bins of weight 0 dropped."""
    pa = point.arrays
    keys, level = pa["keys"], int(pa["level"])
    m, nb = keys.shape[0], len(states)
    at, pos, neg = [], [], []
    for b, s in enumerate(states):
        a = s.arrays
        if a["keys"].size:
            at.append(b * m + np.searchsorted(keys, a["keys"] >> np.int64(level - int(a["level"]))))
            pos.append(a["pos"])
            neg.append(a["neg"])
    if at:
        idx = np.concatenate(at)
        P = np.bincount(idx, np.concatenate(pos), minlength=nb * m).reshape(nb, m)
        N = np.bincount(idx, np.concatenate(neg), minlength=nb * m).reshape(nb, m)
    else:
        P = N = np.zeros((nb, m))
    wf = w.astype(np.float64)
    rp, rn = wf @ P, wf @ N
    out = []
    for r in range(w.shape[0]):
        keep = (rp[r] + rn[r]) > 0
        out.append(cls._make(layout, keys[keep], rp[r][keep], rn[r][keep], level))
    return out


def _merged_replicates(states: list[State], w: np.ndarray) -> list[State]:
    """Integer-weighted merges (any state kind): ``w[r, b]`` copies of bucket ``b``, by doubling."""
    zero = type(states[0]).zero(states[0].layout)
    out = []
    powers: dict[int, list[State]] = {}
    for r in range(w.shape[0]):
        acc = zero
        for b in np.flatnonzero(w[r]).tolist():
            k, p = int(w[r, b]), powers.setdefault(b, [states[b]])
            i = 0
            while k:
                if i == len(p):
                    p.append(p[-1].merge(p[-1]))
                if k & 1:
                    acc = acc.merge(p[i])
                k >>= 1
                i += 1
        out.append(acc)
    return out


def replicate_states(plan: BucketedPlan, states: tuple[State, ...], weights: np.ndarray, kinds: Sequence[str] | None = None) -> list[tuple[State, ...]]:
    """The R replicate state tuples (of ``plan.base``) of one slice's bucketed states:
    replicate ``r`` is ``sum_b weights[r, b] * bucket_b``.

    Args:
        plan: the evaluation's :class:`BucketedPlan`.
        states: the slice's bucketed states (``plan.state_types``).
        weights: (R, B) integer weights (:func:`replicate_weights`).
        kinds: only the states of these kinds (in plan order); None: every state.
    """
    groups = plan.groups(states)
    point = plan.point(states)
    w = np.asarray(weights)
    columns = []
    for i, (cls, layout) in enumerate(plan.base.state_types):
        if kinds is not None and cls.kind not in kinds:
            continue
        col = [g[i] for g in groups]
        if _linear(cls, layout):
            columns.append(_linear_replicates(cls, layout, col, w))
        elif issubclass(cls, ScoreDistributionState):
            columns.append(_distribution_replicates(cls, layout, col, point[i], w))
        else:
            columns.append(_merged_replicates(col, w))
    return [tuple(c[r] for c in columns) for r in range(w.shape[0])]


def _subplan(base: Plan, keys: tuple[str, ...]) -> Plan | None:
    """The plan of ``keys`` alone when its states are the base plan's (same kinds and layouts,
    in base order), else None."""
    cache = base.__dict__.setdefault("_bootstrap_subplans", {})
    if keys not in cache:
        sub = Plan([m for m in base.metrics if m.key in keys], base.task)
        have = {cls.kind: (cls, layout) for cls, layout in base.state_types}
        order = [cls.kind for cls, _ in base.state_types]
        same = all(have.get(cls.kind) == (cls, layout) for cls, layout in sub.state_types)
        same = same and [k for k in order if k in {c.kind for c, _ in sub.state_types}] == [c.kind for c, _ in sub.state_types]
        cache[keys] = sub if same and hasattr(sub, "compute_many") else None
    return cache[keys]


def _stack(values: list[Any]) -> np.ndarray:
    try:
        return np.asarray(np.stack([np.asarray(v, dtype=np.float64) for v in values]))
    except (ValueError, TypeError):  # ragged (curves) or non-numeric
        out = np.empty(len(values), dtype=object)
        out[:] = values
        return out


def replicate_values(plan: BucketedPlan, states: tuple[State, ...], weights: np.ndarray, keys: Sequence[str] | None = None) -> dict[str, np.ndarray]:
    """``{metric key: (R, ...) float64 array}``: each metric of ``plan`` (or of ``keys`` only)
    over the R replicates of one slice; metrics without a fixed shape (:func:`resampled`:
    curves) are left out.

    The comparison of two models folded over the same rows uses it with the same ``weights`` for
    both (:func:`mergeable_metrics.uncertainty.comparison.paired_bootstrap`): ``delta_r = candidate_r - baseline_r`` is
    the paired bootstrap.
    """
    if plan.stacked:
        return _stacked_replicate_values(plan, states, weights, keys)
    base = plan.base
    keys = [m.key for m in base.metrics if (keys is None or m.key in keys) and resampled(m)]
    if not keys:
        return {}
    sub = _subplan(base, tuple(keys))
    if sub is not None:  # the metrics asked for, vectorised over the replicates where they can be
        reps = replicate_states(plan, states, weights, [cls.kind for cls, _ in sub.state_types])
        many = sub.compute_many(reps)
        return {k: np.asarray(v) for k, v in many.values.items()}
    reps = replicate_states(plan, states, weights)
    metrics = [m for m in base.metrics if m.key in keys]
    out = {}
    for m in metrics:
        vals = []
        for r in reps:
            with recording_undefined():  # undefined replicates are NaN, left out of the interval
                v = m.compute({s.kind: s for s in r})
            vals.append(v.value if isinstance(v, Interval) else v)
        out[m.key] = _stack(vals)
    return out


# -- replicates of the stacked form: W (R, B) @ buckets (B, ...), metrics over the replicate axis
def _times(w: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``w (R, B) @ x (B, ...)`` by ``np.einsum`` (its own loop: no BLAS threads, whose start-up
    and spinning cost more CPU than these small products, and one summation order)."""
    x = np.asarray(x, dtype=np.float64)
    return np.einsum("rb,bk->rk", w, x.reshape(x.shape[0], -1)).reshape((w.shape[0],) + x.shape[1:])


class _Replicates:
    """The replicate fields of one slice's bucket-stacked states, computed on demand per kind:
    replicate ``r`` of a field is ``sum_b w[r, b] * field[b]``."""

    def __init__(self, base: Plan, stacked: Sequence[State], w: np.ndarray):
        self.types = {cls.kind: (cls, layout) for cls, layout in base.state_types}
        self.of_kind = {cls.kind: s for (cls, _), s in zip(base.state_types, stacked)}
        self.w = np.asarray(w, dtype=np.float64)
        self.r = self.w.shape[0]
        self._done: dict[str, Any] = {}
        self._states: dict[str, list[State]] = {}

    def fields(self, kind: str) -> Any:
        """Cell kinds: (R, C) weights; sum kinds: ``{field: (R, ...)}``; the score distribution:
        ``(keys, level, (R, m) pos, (R, m) neg)``."""
        got = self._done.get(kind)
        if got is None:
            s = self.of_kind[kind]
            if isinstance(s, BucketCellsState):
                got = _times(self.w, s.arrays["weights"])
            elif isinstance(s, BucketDistributionState):
                got = self._distribution(s)
            else:
                got = {name: _times(self.w, s.arrays[name]) for name, _ in s.FIELDS}
            self._done[kind] = got
        return got

    def _distribution(self, s: "BucketDistributionState") -> tuple:
        """``(keys, level, (R, G) pos, (R, G) neg, shift)`` of the replicate distributions over
        G <= :data:`REPLICATE_BINS` groups of consecutive bins (of about equal weight; the bins
        themselves when there are at most that many), and ``shift(f)``: for a function ``f`` of
        (n, bins) weights, ``f`` of the slice's own bins minus ``f`` of its groups (0 without
        grouping), the correction added to the grouped replicate values."""
        a = s.arrays
        B, m = s.layout.buckets, a["keys"].shape[0]
        j, b = a["cell"] // B, a["cell"] % B
        if m <= REPLICATE_BINS:
            group, g = j, m
        else:  # bins in groups of about equal total weight, from the (canonical) bins' totals
            tot = np.bincount(j, a["pos"], minlength=m) + np.bincount(j, a["neg"], minlength=m)
            before = np.cumsum(tot) - tot
            _, of_bin = np.unique(
                np.minimum((before * (REPLICATE_BINS / before[-1] if before[-1] > 0 else 0.0)).astype(np.int64), REPLICATE_BINS - 1), return_inverse=True
            )
            group, g = of_bin.reshape(-1)[j], int(of_bin.max()) + 1
        at = b * g + group
        pos = np.bincount(at, a["pos"], minlength=B * g).reshape(B, g)
        neg = np.bincount(at, a["neg"], minlength=B * g).reshape(B, g)
        if g == m:
            shift: Callable = lambda f: 0.0  # noqa: E731 - full resolution
        else:
            fine = (np.bincount(j, a["pos"], minlength=m)[None], np.bincount(j, a["neg"], minlength=m)[None])
            coarse = (pos.sum(axis=0)[None], neg.sum(axis=0)[None])
            shift = lambda f: float(f(*fine, int(a["level"]) == 0)[0] - f(*coarse, False)[0])  # noqa: E731
        return a["keys"], int(a["level"]), _times(self.w, pos), _times(self.w, neg), shift, g == m

    def states(self, kind: str) -> list[State]:
        """The R replicate states of a kind (for metrics without a replicate-axis form)."""
        got = self._states.get(kind)
        if got is None:
            cls, layout = self.types[kind]
            f = self.fields(kind)
            if cls.num_cells(layout) is not None:
                s = self.of_kind[kind]
                counts = np.tensordot(self.w.astype(np.int64), s.arrays["counts"], axes=1)
                got = [cls.from_cells(layout, counts[r], ExactSums.of_floats(f[r])) for r in range(self.r)]
            elif cls is ScoreDistributionState:
                keys, level, rp, rn, _, full = f
                if not full:  # replicate states need the bins themselves
                    pos, neg = self.of_kind[kind].dense()
                    rp, rn = _times(self.w, pos), _times(self.w, neg)
                got = []
                for r in range(self.r):
                    keep = (rp[r] + rn[r]) > 0
                    got.append(cls._make(layout, keys[keep], rp[r][keep], rn[r][keep], level))
            else:
                dt = dict(cls.FIELDS)
                got = [cls(layout, {n: v[r] if dt[n] == "float64" else np.rint(v[r]).astype(np.int64) for n, v in f.items()}) for r in range(self.r)]
            self._states[kind] = got
        return got


def _nan_where(ok: np.ndarray, num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(ok, num / np.where(ok, den, 1.0), np.nan)


def _roc_auc_rows(pos: np.ndarray, neg: np.ndarray) -> np.ndarray:
    """(R,) ROC AUC of (R, m) ascending bin weights: ``sum_b pos_b (neg below b + neg_b / 2) /
    (P N)`` (ties, and pairs inside a compressed bin, count one half: the value of
    :func:`mergeable_metrics.metrics.ranking.roc_auc_value`); NaN when a class has no weight."""
    P, N = pos.sum(axis=1), neg.sum(axis=1)
    below = np.cumsum(neg, axis=1) - neg
    return _nan_where((P > 0) & (N > 0), np.sum(pos * (below + 0.5 * neg), axis=1), P * N)


def _average_precision_rows(pos: np.ndarray, neg: np.ndarray, exact: bool) -> np.ndarray:
    """(R,) average precision of (R, m) ascending bin weights (:func:`mergeable_metrics.metrics.ranking.average_precision_value`:
    the step formula when ``exact``, else the estimate of :func:`mergeable_metrics.metrics.ranking._ap_bin_terms`);
    0.0 without positives, NaN without weight (also with no bins: an empty or weightless slice)."""
    if pos.shape[1] == 0:
        return np.full(pos.shape[0], np.nan)
    p, q = pos[:, ::-1], neg[:, ::-1]
    tps, fps = np.cumsum(p, axis=1), np.cumsum(q, axis=1)
    P, total = tps[:, -1], tps[:, -1] + fps[:, -1]
    with np.errstate(divide="ignore", invalid="ignore"):
        if exact:
            d = tps + fps
            terms = p * np.where(d > 0, tps / np.where(d > 0, d, 1.0), 0.0)
        else:
            A, Bn = tps - p, fps - q
            E = A + Bn
            c = 1.0 + q / p
            est = np.where(E > 0, A * p / E + (E / c - A) * _g(c * p / E, upper=False) / c, p / c)
            terms = np.where(p > 0, est, 0.0)
        v = np.clip(_nan_where(P > 0, terms.sum(axis=1), P), 0.0, 1.0)
    return np.where(total > 0, np.where(P > 0, v, 0.0), np.nan)


def _v_roc_auc(m: Any, reps: _Replicates) -> np.ndarray | None:
    if type(m) is not RocAuc or m.task.kind != "binary" or m.p.get("max_fpr") is not None or m.p.get("pos_label", 1) != 1:
        return None
    _, _, rp, rn, shift, _ = reps.fields(ScoreDistributionState.kind)
    return _roc_auc_rows(rp, rn) + shift(lambda p, n, exact: _roc_auc_rows(p, n))


def _v_average_precision(m: Any, reps: _Replicates) -> np.ndarray | None:
    if type(m) is not AveragePrecision or m.task.kind != "binary" or m.p.get("pos_label", 1) != 1:
        return None
    _, level, rp, rn, shift, full = reps.fields(ScoreDistributionState.kind)
    return _average_precision_rows(rp, rn, level == 0 and full) + shift(_average_precision_rows)


def _v_log_loss(m: Any, reps: _Replicates) -> np.ndarray | None:
    f = reps.fields(ProbabilitySumsState.kind)
    i = reps.types[ProbabilitySumsState.kind][1].eps.index(m.p["eps"])
    return _nan_where(f["weight"] != 0, f["log_loss"][:, i], f["weight"])


def _v_brier(m: Any, reps: _Replicates) -> np.ndarray | None:
    f = reps.fields(ProbabilitySumsState.kind)
    layout = reps.types[ProbabilitySumsState.kind][1]
    return _nan_where(f["weight"] != 0, f["brier"], f["weight"]) * m.scale(layout)  # scikit-learn's scale_by_half


def _v_ece(m: Any, reps: _Replicates) -> np.ndarray | None:
    layout = reps.types[CalibrationBinsState.kind][1]
    if layout.multiclass:  # (R, K + 1, cells): one replicate at a time (the fallback)
        return None
    f = reps.fields(CalibrationBinsState.kind)
    o, nb = layout.offset(m.p["n_bins"]), m.p["n_bins"]
    count, ss, sl = f["count"][:, o : o + nb], f["sum_score"][:, o : o + nb], f["sum_label"][:, o : o + nb]
    total = count.sum(axis=1)
    return _nan_where(total != 0, np.abs(sl - ss).sum(axis=1), total)


#: metric class -> its replicate-axis form (None when the metric's parameters have none)
_REPLICATE_AXIS: dict[type, Callable[[Any, _Replicates], np.ndarray | None]] = {
    RocAuc: _v_roc_auc, AveragePrecision: _v_average_precision, LogLoss: _v_log_loss, BrierScore: _v_brier, ExpectedCalibrationError: _v_ece,
}  # fmt: skip


#: metrics whose replicate values have no fixed shape (curves: one point per bin): no interval
_RAGGED = (RocCurve, PrecisionRecallCurve)


def resampled(m: Any) -> bool:
    """Whether ``ci="bootstrap"`` gives metric ``m`` an interval: every metric but those whose
    value has one entry per distinct score (curves, ``metric_at_thresholds`` at the data's own
    thresholds), which no two replicates share."""
    return not (isinstance(m, _RAGGED) or (isinstance(m, MetricAtThresholds) and m.p["thresholds"] is None))


def _cell_subplan(base: Plan, keys: tuple[str, ...]) -> Plan | None:
    """The plan of the cell metrics ``keys`` when its cell states are the base plan's."""
    cache = base.__dict__.setdefault("_bootstrap_cell_subplans", {})
    if keys not in cache:
        sub = Plan([m for m in base.metrics if m.key in keys], base.task)
        have = set(base.state_types)
        cache[keys] = sub if all((cls, layout) in have for cls, layout in sub.state_types) else None
    return cache[keys]


def _stacked_replicate_values(plan: BucketedPlan, states: tuple[State, ...], weights: np.ndarray, keys: Sequence[str] | None) -> dict[str, np.ndarray]:
    base = plan.base
    s = len(base.state_types)
    reps = _Replicates(base, states[s:], weights)
    metrics = [m for m in base.metrics if (keys is None or m.key in keys) and resampled(m)]
    out: dict[str, np.ndarray] = {}
    cells = tuple(m.key for m in metrics if is_cell_metric(m) and all(c.kind in CELL_KINDS for c, _ in m.requires()))
    sub = _cell_subplan(base, cells) if cells else None
    if sub is not None:  # the confusion-derived metrics from (R, cells) replicate cells
        many = sub.compute_cells({cls.kind: reps.fields(cls.kind) for cls, _ in sub.state_types if cls.kind in CELL_KINDS})
        out.update({k: np.asarray(v) for k, v in many.values.items()})
    for m in metrics:
        if m.key in out:
            continue
        f = _REPLICATE_AXIS.get(type(m))
        v = None if f is None else f(m, reps)
        if v is None:  # one replicate at a time, from replicate states
            kinds = {c.kind for c, _ in m.requires()}
            by_kind = [dict(zip(kinds, r)) for r in zip(*(reps.states(k) for k in kinds))]
            vals = []
            for st in by_kind:
                with recording_undefined():  # undefined replicates are NaN, left out of the interval
                    x = m.compute(st)
                vals.append(x.value if isinstance(x, Interval) else x)
            v = _stack(vals)
        out[m.key] = v
    return {m.key: out[m.key] for m in metrics}


def percentile_interval(values: np.ndarray, level: float) -> tuple[Any, Any] | None:
    """The percentile bootstrap interval ``(lower, upper)`` at ``level`` of (R, ...) replicate
    values (NaN replicates left out; NaN where none is defined); None for ragged values."""
    v = np.asarray(values)
    if v.dtype == object or v.dtype.kind not in "biuf":
        return None
    alpha = (1.0 - level) / 2.0
    v = v.astype(np.float64)
    if v.shape[0] == 0 or not (~np.isnan(v)).any():
        nan = np.full(v.shape[1:], np.nan)
        return (float("nan"), float("nan")) if v.ndim == 1 else (nan, nan.copy())
    flat = v.reshape(v.shape[0], -1)
    lo, hi = (q.reshape(v.shape[1:]) for q in _nanquantiles(flat, (alpha, 1.0 - alpha)))
    if v.ndim == 1:
        return float(lo), float(hi)
    return lo, hi


def _nanquantiles(v: np.ndarray, qs: Sequence[float]) -> list[np.ndarray]:
    """``np.nanquantile(v, q, axis=0)`` (the default "linear" method, numpy's interpolation
    formula) of (R, M) values for each ``q``, all columns at once; NaN for all-NaN columns."""
    s = np.sort(v, axis=0)  # NaN last
    n = (~np.isnan(v)).sum(axis=0)
    cols = np.arange(v.shape[1])
    out = []
    for q in qs:
        at = q * (np.maximum(n, 1) - 1)
        i = np.floor(at).astype(np.int64)
        j = np.minimum(i + 1, np.maximum(n - 1, 0))
        t = at - i
        a, b = s[i, cols], s[j, cols]
        with np.errstate(invalid="ignore"):
            d = b - a
            x = np.where(t >= 0.5, b - d * (1 - t), a + d * t)
        out.append(np.where(n > 0, x, np.nan))
    return out


def _fixed_shape(v: Any) -> bool:
    try:
        a = np.asarray(v)
    except (ValueError, TypeError):
        return False
    return a.dtype.kind in "biuf"


def bootstrap_ci(
    plan: BucketedPlan, states: tuple[State, ...], level: float, replicates: int, seed: int, values: dict[str, Any] | None = None
) -> dict[str, Any]:
    """``{metric key: (lower, upper)}`` of one slice: percentile intervals at ``level`` of
    ``replicates`` Poisson bootstrap replicates drawn with ``seed`` (arrays for per-class
    metrics; metrics whose values have no fixed shape, e.g. curves, get none).

    Raises:
        ValueError: ``states`` are not bucketed (the evaluation was not folded with
            ``ci="bootstrap"``).
    """
    if not isinstance(plan, BucketedPlan):
        raise ValueError('ci="bootstrap" needs the bucketed states of an evaluation folded with ci="bootstrap"')
    reps = replicate_values(plan, states, replicate_weights(seed, replicates, plan.buckets), fixed_shape_keys(values))
    return replicate_intervals(reps, level)


#: a slice's largest bootstrap bucket holding more than this many times its even share of the
#: rows (with at least ``_REPEAT_MIN_ROWS`` rows per bucket on average) means rows repeat
_REPEAT_SHARE = 4.0
_REPEAT_MIN_ROWS = 8
REPEATED_ROWS_WARNING = (
    'ci="bootstrap" without id_col: rows repeat (one bootstrap bucket holds several times its share of a '
    "slice's rows), and identical rows share a bucket and are resampled together, so the intervals come out "
    "too wide; give id_col (a unique id per row)"
)


def bucket_rows(plan: BucketedPlan, states: tuple[State, ...]) -> np.ndarray | None:
    """(B,) input rows per bootstrap bucket of one slice, read from its first bucket-stacked
    count state; None when the plan keeps no such state (slot form, or no count kind)."""
    if not plan.stacked:
        return None
    for st in states[len(plan.base.state_types) :]:
        if isinstance(st, BucketCellsState):
            return np.asarray(st.arrays["counts"]).sum(axis=1)
    return None


def warn_repeated_rows(plan: Any, states: tuple[State, ...]) -> None:
    """Warn (:data:`REPEATED_ROWS_WARNING`) when a slice's rows were hashed into very uneven
    buckets: without ``id_col`` the bucket of a row is a hash of its content, so repeated rows
    (hard 0/1 predictions, few distinct scores) land together. Distinct rows spread evenly: with
    ``n >= 8 B`` rows, the largest bucket holds about ``2 n / B``."""
    if not isinstance(plan, BucketedPlan):
        return
    rows = bucket_rows(plan, states)
    if rows is None:
        return
    n = int(rows.sum())
    if n >= _REPEAT_MIN_ROWS * rows.size and int(rows.max()) * rows.size > _REPEAT_SHARE * n:
        warnings.warn(REPEATED_ROWS_WARNING, UserWarning, stacklevel=3)


def fixed_shape_keys(values: dict[str, Any] | None) -> list[str] | None:
    """The keys of the metric values that have a fixed numeric shape (curves have none); None
    for None (every metric)."""
    return None if values is None else [k for k, v in values.items() if _fixed_shape(v)]


def replicate_intervals(reps: dict[str, np.ndarray], level: float) -> dict[str, Any]:
    """``{metric key: (lower, upper)}``: :func:`percentile_interval` of each metric's replicate
    values (metrics of ragged values get none)."""
    out = {}
    for key, v in reps.items():
        iv = percentile_interval(v, level)
        if iv is not None:
            out[key] = iv
    return out
