"""The one-pass, mergeable Poisson bootstrap of ``Evaluation(ci="bootstrap")``.

What is resampled: every row falls in one of ``B`` (``ci_buckets``) *hash buckets*, from a stable
64-bit hash of its ``id_col`` value (or, without one, of its content: the validated label, score,
prediction, weight and measure values and its slice keys). The fold keeps, per slice, the states of
each bucket (buckets are one more slice dimension of the one-pass fold, see :class:`BucketedPlan`);
the slice's point states are the merge of its buckets, so point values are those without ``ci``,
bit for bit. At ``finish``, replicate ``r`` of a slice is the sum of its bucket states weighted by
Poisson(1) integers ``w[r, b]`` (:func:`replicate_weights`), which depend on ``(ci_seed, r, b)``
only: the replicates are the same on any engine and partitioning, and *paired* across slices and
models (the same rows get the same weights). This is a random-group bootstrap (Chamandy et al.
2012's one-pass Poisson bootstrap with the weights drawn per group of rows); with ``B >= ~100``
non-empty buckets it behaves as the row bootstrap, and a slice with fewer rows than buckets is a
row bootstrap (each row its own bucket, barring hash collisions).

Intervals are percentile intervals of the replicate values at ``ci_level`` (NaN replicates, e.g.
a replicate without positives, are left out). Caveat: a slice with very few rows (or rows in very
few buckets) has few distinct replicates, and its percentile interval is too narrow.

Without ``id_col``, rows of identical content share a bucket and are resampled together: give an
``id_col`` when rows repeat (e.g. hard 0/1 predictions without scores).
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any, Sequence

import numpy as np

from core.codec import slice_key_to_json
from core.ids import _combine, _digest, _hash_numeric, _hash_scalar, hash_column, mix64  # noqa: F401  (hash_column, mix64 re-exported)
from core.metrics import Interval, recording_undefined
from core.plan import Plan
from core.score_distribution import ScoreDistributionState
from core.states import State

__all__ = [
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
        batch: the validated :class:`~core._inputs.Batch`.
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


# -- the bucketed plan ----------------------------------------------------------------------------
class BucketedPlan(Plan):
    """A :class:`~core.plan.Plan` whose state tuple per slice holds the plan's states of each of
    ``buckets`` hash buckets, bucket-major: ``states[b * S + i]`` is state ``i`` of bucket ``b``.

    ``zero``, ``merge``, ``merge_all``, ``encode``, ``decode`` and ``check`` are the plan's over
    the longer tuple (engines carry it unchanged); :meth:`point` merges the buckets into the
    plan's own states, and ``compute`` / ``compute_detailed`` compute from them, so values equal
    those of the plan without buckets. Folding goes through :meth:`core.Evaluation.fold` (it
    needs each row's bucket).

    Args:
        plan: the evaluation's plan.
        buckets: B.
    """

    def __init__(self, plan: Plan, buckets: int):  # noqa: D107 - a view of ``plan``
        self.__dict__.update(plan.__dict__)
        self.base = plan
        self.buckets = int(buckets)
        self.state_types = plan.state_types * self.buckets

    def groups(self, states: tuple[State, ...]) -> list[tuple[State, ...]]:
        """The B tuples of the plan's states, one per bucket."""
        s = len(self.base.state_types)
        if len(states) != s * self.buckets:
            raise ValueError(f"expected {s * self.buckets} bucketed states ({self.buckets} buckets of {s}), got {len(states)}")
        return [tuple(states[b * s : (b + 1) * s]) for b in range(self.buckets)]

    def point(self, states: tuple[State, ...]) -> tuple[State, ...]:
        """The merge of every bucket: the plan's states of the slice."""
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
        raise TypeError("bucketed states are folded by Evaluation.fold (every row needs its bootstrap bucket)")

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


def replicate_states(
    plan: BucketedPlan, states: tuple[State, ...], weights: np.ndarray, kinds: Sequence[str] | None = None
) -> list[tuple[State, ...]]:
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


def replicate_values(
    plan: BucketedPlan, states: tuple[State, ...], weights: np.ndarray, keys: Sequence[str] | None = None
) -> dict[str, np.ndarray]:
    """``{metric key: (R, ...) float64 array}``: each metric of ``plan`` (or of ``keys`` only)
    over the R replicates of one slice (an object array (R,) when the shapes differ, e.g. curves).

    The comparison of two models folded over the same rows uses it with the same ``weights`` for
    both (:func:`core.comparison.paired_bootstrap`): ``delta_r = candidate_r - baseline_r`` is
    the paired bootstrap.
    """
    base = plan.base
    sub = _subplan(base, tuple(base.keys if keys is None else keys))
    if sub is not None:  # the metrics asked for, vectorised over the replicates where they can be
        reps = replicate_states(plan, states, weights, [cls.kind for cls, _ in sub.state_types])
        many = sub.compute_many(reps)
        return {k: np.asarray(v) for k, v in many.values.items()}
    reps = replicate_states(plan, states, weights)
    metrics = [m for m in base.metrics if keys is None or m.key in keys]
    out = {}
    for m in metrics:
        vals = []
        for r in reps:
            with recording_undefined():  # undefined replicates are NaN, left out of the interval
                v = m.compute({s.kind: s for s in r})
            vals.append(v.value if isinstance(v, Interval) else v)
        out[m.key] = _stack(vals)
    return out


def percentile_interval(values: np.ndarray, level: float) -> tuple[Any, Any] | None:
    """The percentile bootstrap interval ``(lower, upper)`` at ``level`` of (R, ...) replicate
    values (NaN replicates left out; NaN where none is defined); None for ragged values."""
    v = np.asarray(values)
    if v.dtype == object or v.dtype.kind not in "biuf":
        return None
    alpha = (1.0 - level) / 2.0
    v = v.astype(np.float64)
    with np.errstate(invalid="ignore"):
        ok = ~np.isnan(v)
        if not ok.any():
            nan = np.full(v.shape[1:], np.nan)
            return (float("nan"), float("nan")) if v.ndim == 1 else (nan, nan.copy())
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN entries of per-class values
            lo, hi = np.nanquantile(v, [alpha, 1.0 - alpha], axis=0)
    if v.ndim == 1:
        return float(lo), float(hi)
    return lo, hi


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
