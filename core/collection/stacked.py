"""Metrics over a leading axis: the values of many states of one plan at once.

:meth:`mergeable_metrics.collection.plan.Plan.compute_many` computes the metrics of R state tuples of one plan (every
slice of an accumulator, bootstrap replicates, posterior samples of one slice) and returns each
metric's R values stacked on a leading axis. The metrics of the *cell* state kinds (example
counts, binary confusion counts, confusion matrices; see :meth:`mergeable_metrics.states.base.State.cells`) are
computed by array arithmetic over that axis; every other metric falls back to its own
:meth:`~mergeable_metrics.metrics.base.Metric.compute`, one element at a time, so the result is always that of
:meth:`~mergeable_metrics.collection.plan.Plan.compute_detailed` per element, bit for bit (values, NaN entries,
certified bounds and undefined entries).

Vectorised here (binary and multiclass tasks): precision, recall, F1, F-beta, IoU (Jaccard),
mIoU and Dice with every average (``binary``, ``micro``, ``macro``, ``weighted``, ``none``),
``zero_division``, ``ignore_index`` and ``labels``; accuracy, specificity, NPV, FPR, FNR, prevalence, MCC,
Cohen's kappa (all weights), the classification report, the confusion matrix, tp/fp/tn/fn, and
the example counts. Each is the same sequence of numpy operations as the scalar path on arrays
with one more (leading) axis, so every element rounds exactly as the scalar path does; where the
scalar path sums a subset of entries (weighted averages over the defined classes) the rows are
grouped by their subset; arrays are C-contiguous before a row sum (numpy sums a contiguous row
pairwise, as it sums a 1-D array, but an F-ordered array column by column); ``np.dot`` (BLAS,
whose summation order is its own) is called per row. Balanced accuracy and the metrics of other
state kinds (score distributions, moments, calibration, multilabel, top-k) take the fallback.

The cell-level entry point, :func:`compute_cells` (:meth:`mergeable_metrics.collection.plan.Plan.compute_cells`), takes
``{state kind: (R, num_cells) float64 array}`` in the cell order of
:meth:`~mergeable_metrics.states.base.State.cells` (``num_cells`` from :meth:`~mergeable_metrics.states.base.State.num_cells`):

* ``example_count``: (R, 1), the (weighted) number of rows;
* ``binary_confusion``: (R, 2 (T + 1)), cell ``label * (T + 1) + k`` where ``k`` is the number of
  the layout's T thresholds the score passes (so with one threshold: ``[tn, fp, fn, tp]``);
* ``confusion_matrix``: (R, K * K), cell ``true * K + predicted``.

The cells may hold any non-negative reals (e.g. Dirichlet samples of pseudo-counts for posterior
intervals); the metrics are computed from them exactly as from the counts of a state (the binary
counts at each threshold are running sums of the cells, as :meth:`~mergeable_metrics.states.base.State.from_cells`
builds them; ``example_count`` then reports the (float) cell total). Only the vectorised metrics
above can be computed from cells: others raise ``ValueError`` naming them.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from mergeable_metrics.metrics.classification import (
    ClassificationReport,
    CohenKappa,
    Dice,
    FalseNegativeRate,
    FalsePositiveRate,
    IoU,
    MatthewsCorrCoef,
    MeanIoU,
    NegativePredictiveValue,
    Prevalence,
    Specificity,
)
from mergeable_metrics.metrics.base import (
    F1,
    AVERAGES,
    Accuracy,
    ConfusionMatrix,
    ExampleCount,
    FalseNegatives,
    FalsePositives,
    FBeta,
    Interval,
    Metric,
    Precision,
    Recall,
    TrueNegatives,
    TruePositives,
    WeightedExampleCount,
    _Undefined,
    normalize_matrix,
    recording_undefined,
)
from mergeable_metrics.metrics.ranking import RocAuc
from mergeable_metrics.states.base import BinaryConfusionState, ConfusionMatrixState, ExampleCountState, State

__all__ = [
    "CELL_KINDS",
    "VECTORISE_FROM",
    "LazyStates",
    "ManyValues",
    "compute_cells",
    "compute_fields",
    "compute_many",
    "compute_one",
    "compute_shared",
    "is_cell_metric",
    "stack_fields",
    "undefined_entry",
]

#: The state kinds whose metrics compute over a leading axis (see the module docstring).
CELL_KINDS = (ExampleCountState.kind, BinaryConfusionState.kind, ConfusionMatrixState.kind)

Undefined = dict[str, tuple[tuple[int, ...] | None, Any]]


class ManyValues:
    """The metrics of R elements (state tuples of one plan), as returned by
    :meth:`mergeable_metrics.collection.plan.Plan.compute_many`.

    Attributes:
        values: ``{metric key: (R, ...) array}``: float64 (int64 for ``example_count``) with the
            element's value shape after the leading axis ((R,) for scalar metrics, (R, K) for
            per-class values); an object array (R,) when the elements' shapes differ (curves).
        bounds: per element, ``{metric key: (lower, upper)}``: the certified bounds of
            :meth:`~mergeable_metrics.collection.plan.Plan.compute_detailed` (approximate states only; not a confidence
            interval).
        undefined: per element, ``{metric key: (classes, fill)}`` as
            :meth:`~mergeable_metrics.collection.plan.Plan.compute_detailed`.

    Unpacks as ``values, bounds, undefined = plan.compute_many(states_list)``;
    :meth:`element` gives one element's ``compute_detailed`` triple.
    """

    def __init__(self, values: dict[str, np.ndarray], bounds: list[dict], undefined: list[Undefined], objects: dict[str, list]):
        self.values = values
        self.bounds = bounds
        self.undefined = undefined
        self._objects = objects  # the fallback metrics' own per-element values (exact types)
        self._scalars: dict[str, list] = {}  # (R,) numeric values as Python numbers (tolist)

    def __iter__(self) -> Iterator[Any]:
        return iter((self.values, self.bounds, self.undefined))

    @property
    def objects(self) -> dict[str, list]:
        """``{metric key: per-element values}`` of the metrics computed element by element (their
        own values, exact types; :meth:`element` reads these)."""
        return self._objects

    def __len__(self) -> int:
        return len(self.undefined)

    def element(self, i: int) -> tuple[dict[str, Any], dict[str, tuple[float, float]], Undefined]:
        """``(values, bounds, undefined)`` of element ``i``, equal to ``compute_detailed`` of
        its states (scalars as Python numbers, arrays as numpy arrays)."""
        out: dict[str, Any] = {}
        for key, v in self.values.items():
            objs = self._objects.get(key)
            if objs is not None:
                out[key] = objs[i]
            elif v.ndim == 1:
                scalars = self._scalars.get(key)
                if scalars is None:
                    scalars = self._scalars[key] = v.tolist()
                out[key] = scalars[i]
            else:
                out[key] = v[i].copy()
        return out, dict(self.bounds[i]), dict(self.undefined[i])


# ---------------------------------------------------------------------------------------------
def stack_fields(state_types: Sequence[tuple[type[State], Any]], states_list: Sequence[Sequence[State]]) -> dict[str, dict[str, np.ndarray]]:
    """``{kind: {field: (R, ...) array}}`` of the cell states of ``states_list`` (R tuples of
    states of ``state_types``), each field's arrays stacked on a new leading axis."""
    out: dict[str, dict[str, np.ndarray]] = {}
    for pos, (cls, _layout) in enumerate(state_types):
        if cls.kind not in CELL_KINDS:
            continue
        out[cls.kind] = {name: _stack([states[pos].arrays[name] for states in states_list], dtype) for name, dtype in cls.FIELDS}
    return out


def _stack(arrays: list[np.ndarray], dtype: str) -> np.ndarray:
    """``np.stack(arrays)`` of equally shaped arrays (one concatenation: faster for many small ones)."""
    if not arrays:
        return np.zeros((0,), dtype=dtype)
    shape = np.shape(arrays[0])
    if not shape:
        return np.array(arrays, dtype=dtype)
    return np.concatenate(arrays).reshape((len(arrays), *shape))


def fields_from_cells(state_types: Sequence[tuple[type[State], Any]], cells: dict[str, np.ndarray]) -> tuple[dict[str, dict[str, np.ndarray]], int]:
    """The stacked fields (as :func:`stack_fields`) of ``{kind: (R, num_cells)}`` cells, and R.

    Raises:
        ValueError: a kind that is not a cell state of the plan, a wrong shape, negative or
            non-finite cells, or kinds with different R.
    """
    layouts = {cls.kind: (cls, layout) for cls, layout in state_types}
    out: dict[str, dict[str, np.ndarray]] = {}
    sizes = set()
    for kind, c in cells.items():
        if kind not in CELL_KINDS or kind not in layouts:
            raise ValueError(f"cells of {kind!r}: not a cell state of this plan (its cell states: {[k for k in layouts if k in CELL_KINDS]})")
        cls, layout = layouts[kind]
        c = np.asarray(c, dtype=np.float64)
        width = cls.num_cells(layout)
        if c.ndim != 2 or c.shape[1] != width:
            raise ValueError(f"cells of {kind!r} must have shape (R, {width}), got {c.shape}")
        if not (np.isfinite(c).all() and (c >= 0).all()):
            raise ValueError(f"cells of {kind!r} must be finite and >= 0")
        sizes.add(c.shape[0])
        if kind == ExampleCountState.kind:
            out[kind] = {"count": c[:, 0].copy(), "weight": c[:, 0].copy(), "skipped": np.zeros(c.shape[0], dtype=np.int64)}
        elif kind == BinaryConfusionState.kind:
            t1 = len(layout.thresholds) + 1
            neg, pos = c[:, :t1], c[:, t1:]
            out[kind] = {
                "tp": np.ascontiguousarray(np.cumsum(pos[:, ::-1], axis=1)[:, ::-1][:, 1:]),
                "fp": np.ascontiguousarray(np.cumsum(neg[:, ::-1], axis=1)[:, ::-1][:, 1:]),
                "tn": np.ascontiguousarray(np.cumsum(neg, axis=1)[:, :-1]),
                "fn": np.ascontiguousarray(np.cumsum(pos, axis=1)[:, :-1]),
            }
        else:
            k = layout.num_classes
            out[kind] = {"matrix": np.ascontiguousarray(c.reshape(-1, k, k))}
    if len(sizes) > 1:
        raise ValueError(f"cells of the kinds have different numbers of elements: {sorted(sizes)}")
    return out, (sizes.pop() if sizes else 0)


class _Stacked:
    """The stacked fields of R elements, read as the metrics read one state."""

    def __init__(self, fields: dict[str, dict[str, np.ndarray]], state_types: Sequence[tuple[type[State], Any]], r: int):
        self.fields = fields
        self.layouts = {cls.kind: layout for cls, layout in state_types}
        self.r = r

    def counts(self, threshold: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(R,) ``tp, fp, tn, fn`` at one threshold of the binary confusion state."""
        j = self.layouts[BinaryConfusionState.kind].index(threshold)
        f = self.fields[BinaryConfusionState.kind]
        return f["tp"][:, j], f["fp"][:, j], f["tn"][:, j], f["fn"][:, j]

    def matrix(self, metric: Metric) -> np.ndarray:
        """(R, K, K) confusion matrices (``[[tn, fp], [fn, tp]]`` for binary), C-contiguous."""
        if metric.task.kind == "binary":
            tp, fp, tn, fn = self.counts(metric.p["threshold"])
            return np.stack([np.stack([tn, fp], axis=-1), np.stack([fn, tp], axis=-1)], axis=1)
        return np.ascontiguousarray(self.fields[ConfusionMatrixState.kind]["matrix"], dtype=np.float64)


def undefined_entry(events: list, value: Any, ignored: int | None, labels: Sequence[int] | None = None) -> tuple[tuple[int, ...] | None, Any] | None:
    """Summarise one metric's recorded undefined events (plus NaN values nobody recorded): the
    ``(classes, fill)`` entry of :meth:`mergeable_metrics.collection.plan.Plan.compute_detailed`, or None. ``labels``:
    the class of each entry of the value's first axis (a metric's ``labels=``; None: entry i is
    class i)."""
    classes: set[int] = set()
    scalar = False
    fills = []
    for e in events:
        fills.append(e.fill)
        if e.classes is None:
            scalar = True
        else:
            classes.update(c for c in e.classes if c != ignored)
    arr = np.asarray(value, dtype=np.float64) if not isinstance(value, str) else np.asarray(0.0)
    nan = np.isnan(arr)
    if nan.any():
        if arr.ndim == 0:
            scalar = True
            fills.append("nan")
        else:
            first_axis = {int(i) if labels is None else int(labels[i]) for i in np.flatnonzero(nan.reshape(nan.shape[0], -1).any(axis=1))} - {ignored}
            if first_axis - classes:
                fills.append("nan")
            classes |= first_axis
    if not scalar and not classes:
        return None
    fill = "nan" if "nan" in fills else "warn" if "warn" in fills else fills[0] if fills else "nan"
    return (None if scalar and not classes else tuple(sorted(classes)), fill)


# --- the scalar path's arithmetic with a leading axis ------------------------------------------
def _rows(a: np.ndarray) -> np.ndarray:
    """``a`` as a C-contiguous array: a reduction over its last axis then sums each row as numpy
    sums a 1-D array (pairwise), never column by column (what an F-ordered array gets)."""
    return np.ascontiguousarray(a)


def _fill(zero_division: Any) -> float:
    return np.nan if zero_division == "nan" else 0.0 if zero_division == "warn" else float(zero_division)


def _divide(num: np.ndarray, den: np.ndarray, zero_division: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(num / den with zero_division where den == 0, mask)``: :func:`mergeable_metrics.metrics.base._divide`
    element by element (its events are built from ``mask`` by the caller)."""
    num = np.asarray(num, dtype=np.float64)
    den = np.asarray(den, dtype=np.float64)
    mask = den == 0
    out = num / np.where(mask, 1.0, den)
    if mask.any():
        out = np.where(mask, _fill(zero_division), out)
    return out, mask


def _prf_values(which: str, tp: np.ndarray, pred: np.ndarray, true: np.ndarray, beta: float, zd: Any) -> tuple[np.ndarray, np.ndarray]:
    """:func:`mergeable_metrics.metrics.base.prf_values` on (R, k) arrays: ``(values, mask)``."""
    if which == "precision":
        return _divide(tp, pred, zd)
    if which == "recall":
        return _divide(tp, true, zd)
    if which == "jaccard":
        return _divide(tp, pred + true - tp, zd)
    if math.isinf(beta):
        return _divide(tp, true, zd)
    b2 = beta**2
    return _divide((1 + b2) * tp, b2 * true + pred, zd)


def _nanaverage(values: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """:func:`mergeable_metrics.metrics.base.nanaverage` of each row of (R, k) ``values`` (with (R, k) weights).

    Unweighted it is ``np.nanmean``'s arithmetic on the full rows; weighted, ``np.average``
    over each row's non-NaN entries, computed for the rows of one NaN pattern together (the same
    compressed arrays as the scalar path, so the same summation order)."""
    r = values.shape[0]
    keep = ~np.isnan(values)
    if weights is None:
        tot = np.sum(np.where(keep, values, 0.0), axis=1)
        cnt = np.sum(keep, axis=1, dtype=np.intp)
        with np.errstate(invalid="ignore", divide="ignore"):
            out = tot / cnt
        out[cnt == 0] = np.nan
        return out
    out = np.full(r, np.nan)
    if r == 0:
        return out
    patterns, inverse = np.unique(keep, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    for p, pattern in enumerate(patterns):
        if not pattern.any():
            continue
        rows = np.flatnonzero(inverse == p)
        v = _rows(values[np.ix_(rows, np.flatnonzero(pattern))])
        w = _rows(weights[np.ix_(rows, np.flatnonzero(pattern))])
        scl = w.sum(axis=1)
        zero = scl == 0
        res = np.empty(rows.size)
        if zero.any():
            res[zero] = np.mean(v[zero], axis=1)
        if not zero.all():
            nz = ~zero
            res[nz] = np.multiply(v[nz], w[nz]).sum(axis=1) / scl[nz]
        out[rows] = res
    return out


def _add_events(events: dict[int, list], mask: np.ndarray, zd: Any, classes: np.ndarray | None) -> None:
    """One :func:`mergeable_metrics.metrics.base.record_undefined` event per element with a masked entry."""
    m2 = mask.reshape(mask.shape[0], -1)
    for i in np.flatnonzero(m2.any(axis=1)).tolist():
        cls = None if classes is None else tuple(int(c) for c in np.atleast_1d(classes[m2[i]]))
        events.setdefault(i, []).append((cls, zd))


def _prf(m: Any, st: _Stacked, events: dict[int, list]) -> np.ndarray:
    """:meth:`mergeable_metrics.metrics.base._PRF.compute` over the leading axis."""
    mat = st.matrix(m)
    avg, zd = m.p["average"], m.p["zero_division"]
    tp, pred, true = np.diagonal(mat, axis1=1, axis2=2).copy(), mat.sum(axis=1), mat.sum(axis=2)
    classes: np.ndarray | None = np.arange(tp.shape[1])
    keep = m.kept_classes()
    lab = m.p.get("labels")
    if lab is not None:  # labels=: those classes, in their order (none is ignored)
        lab = list(lab)
        tp, pred, true, classes, keep = _rows(tp[:, lab]), _rows(pred[:, lab]), _rows(true[:, lab]), classes[lab], None
    elif keep is not None and avg != "binary":
        # (boolean indexing may give F-ordered arrays: row sums must run over contiguous rows,
        # as the scalar path's 1-D sums do)
        tp, pred, true, classes = _rows(tp[:, keep]), _rows(pred[:, keep]), _rows(true[:, keep]), classes[keep]
    if avg == "binary":
        tp, pred, true, classes = _rows(tp[:, 1:]), _rows(pred[:, 1:]), _rows(true[:, 1:]), None
    elif avg == "micro":
        tp, pred, true = tp.sum(axis=1, keepdims=True), pred.sum(axis=1, keepdims=True), true.sum(axis=1, keepdims=True)
        classes = None
    v, mask = _prf_values(m.which, tp, pred, true, m.beta(), zd)
    _add_events(events, mask, zd, classes)
    if avg is None:
        if keep is not None:
            full = np.full((v.shape[0], keep.shape[0]), np.nan)
            full[:, keep] = v
            return full
        return v
    if avg in ("binary", "micro"):
        return v[:, 0].copy()
    return _nanaverage(v, true if avg == "weighted" else None)


def _accuracy(m: Any, st: _Stacked, events: dict[int, list]) -> np.ndarray:
    mat = st.matrix(m)
    total = mat.reshape(mat.shape[0], -1).sum(axis=1)
    trace = np.trace(mat, axis1=1, axis2=2)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, trace / np.where(total > 0, total, 1.0), np.nan)


def _binary_rate(m: Any, st: _Stacked, events: dict[int, list]) -> np.ndarray:
    tp, fp, tn, fn = st.counts(m.p["threshold"])
    c = {"tp": tp, "fp": fp, "tn": tn, "fn": fn}
    den = c[m.den[0]]
    for d in m.den[1:]:
        den = den + c[d]
    v, mask = _divide(c[m.num], den, m.p["zero_division"])
    _add_events(events, mask, m.p["zero_division"], None)
    return v


def _prevalence(m: Any, st: _Stacked, events: dict[int, list]) -> np.ndarray:
    tp, fp, tn, fn = st.counts(m.p["threshold"])
    total = tp + fp + tn + fn
    zero = total == 0
    _add_events(events, zero, "nan", None)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(zero, np.nan, (tp + fn) / np.where(zero, 1.0, total))


def _rowdot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``np.dot`` of each row pair (BLAS's own summation order, as the scalar path)."""
    return np.array([np.dot(x, y) for x, y in zip(a, b)], dtype=np.float64).reshape(a.shape[0])


def _mcc(m: Any, st: _Stacked, events: dict[int, list]) -> np.ndarray:
    mat = st.matrix(m)
    t, p = mat.sum(axis=2), mat.sum(axis=1)
    c, s = np.trace(mat, axis1=1, axis2=2), p.sum(axis=1)
    cov_ytyp = c * s - _rowdot(t, p)
    cov_ypyp = (p * (s[:, None] - p)).sum(axis=1)  # as MatthewsCorrCoef.compute: s^2 - p.p, terms >= 0
    cov_ytyt = (t * (s[:, None] - t)).sum(axis=1)
    prod = cov_ypyp * cov_ytyt
    den = np.where(prod > 0, np.sqrt(np.where(prod > 0, prod, 0.0)), 0.0)
    v, mask = _divide(cov_ytyp, den, m.p["zero_division"])
    _add_events(events, mask, m.p["zero_division"], None)
    return v


def _kappa(m: Any, st: _Stacked, events: dict[int, list]) -> np.ndarray:
    mat = st.matrix(m)
    r, k = mat.shape[0], mat.shape[1]
    sum0, sum1 = mat.sum(axis=1), mat.sum(axis=2)
    total = sum0.sum(axis=1)
    zd = m.p["zero_division"]
    if m.p["weights"] is None:
        w = np.ones((k, k)) - np.eye(k)
    else:
        d = np.arange(k)[None, :] - np.arange(k)[:, None]
        w = np.abs(d).astype(np.float64) if m.p["weights"] == "linear" else (d**2).astype(np.float64)
    safe = np.where(total == 0, 1.0, total)
    expected = (sum0[:, :, None] * sum1[:, None, :]) / safe[:, None, None]
    den = (w * expected).reshape(r, -1).sum(axis=1)
    undefined = (total == 0) | (den == 0)
    num = (w * mat).reshape(r, -1).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        v = 1 - num / np.where(undefined, 1.0, den)
    v = np.where(undefined, _fill(zd), v)
    _add_events(events, undefined, zd, None)
    return v


def _report(m: Any, st: _Stacked, events: dict[int, list]) -> np.ndarray:
    mat = st.matrix(m)
    tp, pred, true = np.diagonal(mat, axis1=1, axis2=2).copy(), mat.sum(axis=1), mat.sum(axis=2)
    classes = np.arange(tp.shape[1])
    lab = m.p.get("labels")
    if lab is not None:  # labels=: one row per label, in their order
        lab = list(lab)
        tp, pred, true, classes = _rows(tp[:, lab]), _rows(pred[:, lab]), _rows(true[:, lab]), classes[lab]
    zd = m.p["zero_division"]
    cols = []
    for which in ("precision", "recall", "f1"):
        v, mask = _prf_values(which, tp, pred, true, 1.0, zd)
        _add_events(events, mask, zd, classes)
        cols.append(v)
    rows = np.stack(cols + [true], axis=-1)
    keep = m.kept_classes()
    if keep is not None and lab is None:
        rows[:, ~keep, :3] = np.nan
    return rows


def _confusion_matrix(m: Any, st: _Stacked, events: dict[int, list]) -> np.ndarray:
    mat = st.matrix(m)
    if m.p.get("labels") is not None:  # labels=: those rows and columns, in their order
        lab = list(m.p["labels"])
        mat = np.ascontiguousarray(mat[:, lab][:, :, lab])
    out = normalize_matrix(mat.copy(), m.p["normalize"])
    return np.ascontiguousarray(np.swapaxes(out, -1, -2)) if m.p["rows"] == "predicted" else out


def _count(m: Any, st: _Stacked, events: dict[int, list]) -> np.ndarray:
    return st.counts(m.p["threshold"])[m.index].copy()


def _example_count(m: Any, st: _Stacked, events: dict[int, list]) -> np.ndarray:
    c = st.fields[ExampleCountState.kind]["count"]
    return c.astype(np.int64) if c.dtype == np.int64 else c.copy()


def _weighted_example_count(m: Any, st: _Stacked, events: dict[int, list]) -> np.ndarray:
    return np.asarray(st.fields[ExampleCountState.kind]["weight"], dtype=np.float64).copy()


_PRF_TYPES = (Precision, Recall, F1, FBeta, IoU, MeanIoU, Dice)
_RATE_TYPES = (Specificity, NegativePredictiveValue, FalsePositiveRate, FalseNegativeRate)
_COUNT_TYPES = (TruePositives, FalsePositives, TrueNegatives, FalseNegatives)
#: metric class -> (task kinds, vectorised compute); exact classes only (a subclass may compute otherwise)
_VECTORISED: dict[type, tuple[tuple[str, ...], Callable]] = {
    **{t: (("binary", "multiclass"), _prf) for t in _PRF_TYPES},
    **{t: (("binary",), _binary_rate) for t in _RATE_TYPES},
    **{t: (("binary",), _count) for t in _COUNT_TYPES},
    Accuracy: (("binary", "multiclass"), _accuracy),
    Prevalence: (("binary",), _prevalence),
    MatthewsCorrCoef: (("binary", "multiclass"), _mcc),
    CohenKappa: (("binary", "multiclass"), _kappa),
    ClassificationReport: (("binary", "multiclass"), _report),
    ConfusionMatrix: (("binary", "multiclass"), _confusion_matrix),
    ExampleCount: (("binary", "multiclass", "multilabel", "regression"), _example_count),
    WeightedExampleCount: (("binary", "multiclass", "multilabel", "regression"), _weighted_example_count),
}


def _vectorised(m: Metric) -> Callable | None:
    """The leading-axis compute of a metric, or None (it falls back to its own compute)."""
    entry = _VECTORISED.get(type(m))
    if entry is None or m.task.kind not in entry[0]:
        return None
    if "average" in m.p and m.p["average"] not in AVERAGES:  # a user Averaging: its own reduce
        return None
    if any(cls.kind not in CELL_KINDS for cls, _ in m.requires()):
        return None
    return entry[1]


def _labels_of(m: Metric) -> Sequence[int] | None:
    """The classes of a metric's per-class entries when it has ``labels=`` (else None)."""
    p = getattr(m, "p", None)
    return p.get("labels") if isinstance(p, dict) else None


def compute_one(m: Metric, by_kind: dict[str, State], ignored: int | None) -> tuple[Any, tuple[float, float] | None, Any]:
    """One metric of one element, the scalar path: ``(value, bounds or None, undefined entry or
    None)`` (an :class:`~mergeable_metrics.metrics.base.Interval` gives its value and its certified bounds)."""
    return _detailed(m, lambda: m.compute(by_kind), ignored)


def _detailed(m: Metric, compute: Callable[[], Any], ignored: int | None) -> tuple[Any, tuple[float, float] | None, Any]:
    """``(value, bounds or None, undefined entry or None)`` of ``compute()``, the value of ``m``."""
    with recording_undefined() as events:
        v = compute()
    bound = None
    if isinstance(v, Interval):
        bound = (float(v.lower), float(v.upper))
        v = v.value
    return v, bound, undefined_entry(events, v if m.nan_entries_undefined or np.ndim(v) == 0 else 0.0, ignored, _labels_of(m))


def compute_shared(m: Metric, by_kind: dict[str, State], ignored: int | None, done: dict[str, tuple]) -> tuple[Any, tuple[float, float] | None, Any]:
    """:func:`compute_one` of one element, with metric-on-metric dependencies computed once per
    element (``done`` caches ``(value, bounds, undefined entry)`` by key) and passed to the
    dependent metric's ``compute_from`` (its undefined entry: its own events only)."""
    if m.key not in done:
        if m.dependencies:
            deps = {name: _plain(compute_shared(d, by_kind, ignored, done)[0]) for name, d in m.dependency_metrics().items()}
            done[m.key] = _detailed(m, lambda: m.compute_from(deps), ignored)
        else:
            done[m.key] = compute_one(m, by_kind, ignored)
    return done[m.key]


def is_cell_metric(m: Metric) -> bool:
    """True when :func:`compute_cells` can compute ``m`` (a vectorised metric of cell states)."""
    return _vectorised(m) is not None


def _entries(m: Metric, values: np.ndarray, events: dict[int, list], ignored: int | None, undefined: list[Undefined]) -> None:
    """Each element's undefined entry (:func:`undefined_entry` of its events and
    value), for the elements with an event or a NaN value."""
    r = values.shape[0]
    nan = np.isnan(values.reshape(r, -1)).any(axis=1) if values.dtype.kind == "f" else np.zeros(r, dtype=bool)
    key, labels = m.key, _labels_of(m)
    for i in sorted(set(np.flatnonzero(nan).tolist()) | set(events)):
        v = values[i]
        evs = [_Undefined(c, f) for c, f in events.get(i, ())]
        entry = undefined_entry(evs, v if m.nan_entries_undefined or v.ndim == 0 else 0.0, ignored, labels)
        if entry is not None:
            undefined[i][key] = entry


def _stack_objects(objs: list) -> np.ndarray:
    """The per-element values of a fallback metric on a leading axis (object array if ragged)."""
    try:
        arrs = [np.asarray(o) for o in objs]
        if arrs and all(a.shape == arrs[0].shape and a.dtype.kind in "biuf" for a in arrs):
            return np.stack(arrs)
    except (TypeError, ValueError):
        pass
    out = np.empty(len(objs), dtype=object)
    out[:] = objs
    return out


#: Below this many counts in all, every partial sum of an element's bin counts is an integer that
#: float64 holds exactly (so cumulative sums over many elements at once round nowhere).
_EXACT_TOTAL = float(2**52)


def _roc_auc_many(m: Metric, states_list: Sequence[Sequence[State]]) -> dict[int, float]:
    """``{element: roc_auc}`` of the elements whose value :func:`mergeable_metrics.metrics.ranking.roc_auc_value`
    computes exactly (a binary task, no ``max_fpr``, an exact score distribution with both
    classes present) and whose bin weights are whole numbers (unweighted rows), computed for all
    of them at once; each value equal, bit for bit, to the element's own.

    The scalar path's arithmetic on the concatenated bins: running counts (integers below 2**52:
    exact in any order), the kept points of ``drop_intermediate``, the rates and the trapezoid
    terms (elementwise operations round alike on any array) and, per element, ``np.sum`` of its
    own contiguous terms (numpy's pairwise sum of the same values). Elements left out (weights,
    compressed states, an absent class) take the scalar path."""
    if type(m) is not RocAuc or m.task.kind != "binary" or m.p["max_fpr"] is not None or len(states_list) < VECTORISE_FROM:
        return {}
    kind = m._state_type().kind
    swap = m.p["pos_label"] == 0
    elems, pos_parts, neg_parts = [], [], []
    read = getattr(states_list, "exact_bins", None)  # the bins read from tables, without the state objects
    bins = read(kind) if read is not None else [None] * len(states_list)
    for i, got in enumerate(bins):
        if got is None:
            st = next((x for x in states_list[i] if x.kind == kind), None)
            if st is None or not st.is_exact:
                continue
            got = st.arrays["pos"], st.arrays["neg"]
        pos, neg = (got[1], got[0]) if swap else got
        elems.append(i)
        pos_parts.append(pos[::-1])  # descending scores, as _Dist holds them
        neg_parts.append(neg[::-1])
    if not elems:
        return {}
    sizes = np.array([x.shape[0] for x in pos_parts], dtype=np.int64)
    pos, neg = np.concatenate(pos_parts), np.concatenate(neg_parts)
    if not (np.all(pos == np.floor(pos)) and np.all(neg == np.floor(neg)) and pos.sum() + neg.sum() < _EXACT_TOTAL and (pos >= 0).all() and (neg >= 0).all()):
        return {}
    seg = np.repeat(np.arange(len(elems)), sizes)
    keep = pos + neg > 0  # bins of neither class are no thresholds
    pos, neg, seg = pos[keep], neg[keep], seg[keep]
    sizes = np.bincount(seg, minlength=len(elems))
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    cum_t, cum_f = np.concatenate(([0.0], np.cumsum(pos))), np.concatenate(([0.0], np.cumsum(neg)))  # whole numbers: exact
    base_t, base_f = cum_t[starts], cum_f[starts]
    tps, fps = cum_t[1:] - np.repeat(base_t, sizes), cum_f[1:] - np.repeat(base_f, sizes)  # each element's own running sums
    big_p, big_n = cum_t[starts + sizes] - base_t, cum_f[starts + sizes] - base_f
    last = starts + sizes - 1
    ok = (big_p > 0) & (big_n > 0)
    if not ok.any():
        return {}
    # drop_intermediate (elements of more than two bins): keep the ends and the bends
    n = pos.size
    kept = np.ones(n, dtype=bool)
    if n > 2:
        d1f, d1t = fps[1:] - fps[:-1], tps[1:] - tps[:-1]
        bend = np.logical_or(d1f[1:] - d1f[:-1], d1t[1:] - d1t[:-1])  # second differences at 1 .. n-2
        kept[1:-1] = bend
        kept[starts[sizes > 0]] = True
        kept[last[sizes > 0]] = True
    small = np.repeat(sizes <= 2, sizes)
    kept |= small
    fps_k, tps_k, seg_k = fps[kept], tps[kept], seg[kept]
    sizes_k = np.bincount(seg_k, minlength=len(elems))
    starts_k = np.concatenate(([0], np.cumsum(sizes_k)[:-1]))
    # each element's curve starts at (0, 0)
    x = np.insert(fps_k, starts_k, 0.0)
    y = np.insert(tps_k, starts_k, 0.0)
    lengths = sizes_k + 1
    with np.errstate(divide="ignore", invalid="ignore"):  # elements without a class: never read
        fpr = x / np.repeat(big_n, lengths)
        tpr = y / np.repeat(big_p, lengths)
        terms = (fpr[1:] - fpr[:-1]) * (tpr[1:] + tpr[:-1]) / 2.0  # the term at an element's first point crosses two elements: never read
    first = np.concatenate(([0], np.cumsum(lengths)[:-1]))  # an element's terms: first .. first + size_k - 1
    out: dict[int, float] = {}
    for e in np.flatnonzero(ok).tolist():
        a = int(first[e])
        out[elems[e]] = float(np.sum(terms[a : a + int(sizes_k[e])]))
    return out


#: Fewer elements than this are computed element by element (the scalar path is faster for one or
#: two: about 0.1 against 0.25 ms for four binary metrics; from three on the stacked path is).
VECTORISE_FROM = 3


def _compute(plan: Any, st: _Stacked, states_list: Sequence[Sequence[State]] | None, vectorise: bool = True) -> ManyValues:
    r = st.r
    if r == 0:
        return ManyValues({m.key: np.zeros(0) for m in plan.metrics}, [], [], {})
    values: dict[str, np.ndarray] = {}
    objects: dict[str, list] = {}
    bounds: list[dict] = [{} for _ in range(r)]
    undefined: list[Undefined] = [{} for _ in range(r)]
    ignored = plan.task.ignored_class
    hidden: dict[str, np.ndarray] = {}  # values of dependencies that are not requested

    def stacked_values(d: Metric) -> np.ndarray:
        """(R, ...) values of a dependency: requested, or computed here once (no bookkeeping)."""
        if d.key in values:
            return values[d.key]
        if d.key not in hidden:
            fn = _vectorised(d) if vectorise else None  # the scalar path has no stacked fields
            if fn is not None and not d.dependencies:
                with np.errstate(invalid="ignore", divide="ignore"), recording_undefined():
                    hidden[d.key] = fn(d, st, {})
            else:
                hidden[d.key] = _stack_objects([_plain(x) for x in element_values(d)])
        return hidden[d.key]

    def element_values(d: Metric) -> list:
        """Per element: ``d``'s value (from its dependencies' stacked values, or its states)."""
        if d.dependencies:
            deps = {name: stacked_values(x) for name, x in d.dependency_metrics().items()}
            return [d.compute_from({name: _plain(v[i]) for name, v in deps.items()}) for i in range(r)]
        if states_list is None:
            raise ValueError(f"metric {d.key!r} cannot be computed from cells (cell metrics: confusion-derived and example counts)")
        return [d.compute({s.kind: s for s in states}) for states in states_list]

    for m in plan.metrics:
        fn = _vectorised(m) if vectorise else None
        if fn is not None:
            events: dict[int, list] = {}  # per element with one: its undefined events (classes, fill)
            with np.errstate(invalid="ignore", divide="ignore"):
                v = fn(m, st, events)
            values[m.key] = v
            _entries(m, v, events, ignored, undefined)
            continue
        if m.dependencies:  # from the dependencies' stacked values, each computed once
            deps = {name: stacked_values(x) for name, x in m.dependency_metrics().items()}

            def one(i: int, m: Metric = m, deps: dict = deps) -> Any:
                return m.compute_from({name: _plain(v[i]) for name, v in deps.items()})

        elif states_list is None:
            raise ValueError(f"metric {m.key!r} cannot be computed from cells (cell metrics: confusion-derived and example counts)")
        else:

            def one(i: int, m: Metric = m) -> Any:
                return m.compute({s.kind: s for s in states_list[i]})

        objs = []
        exact = _roc_auc_many(m, states_list) if states_list is not None and not m.dependencies else {}
        for i in range(r):
            if i in exact:  # computed for many elements at once: a finite value, no event
                objs.append(exact[i])
                continue
            with recording_undefined() as evs:
                x = one(i)
            bound = None
            if isinstance(x, Interval):
                bound = (float(x.lower), float(x.upper))
                x = x.value
            entry = undefined_entry(evs, x if m.nan_entries_undefined or np.ndim(x) == 0 else 0.0, ignored, _labels_of(m))
            objs.append(x)
            if bound is not None:
                bounds[i][m.key] = bound
            if entry is not None:
                undefined[i][m.key] = entry
        objects[m.key] = objs
        values[m.key] = _stack_objects(objs)
    return ManyValues(values, bounds, undefined, objects)


def _plain(x: Any) -> Any:
    """A dependency's value as :meth:`mergeable_metrics.metrics.base.Metric.compute_from` receives it: a float for
    a scalar (numpy scalars included), the value of an :class:`~mergeable_metrics.metrics.base.Interval`."""
    if isinstance(x, Interval):
        return x.value
    if isinstance(x, np.generic) or (isinstance(x, np.ndarray) and x.ndim == 0):
        return x.item()
    return x


def compute_many(plan: Any, states_list: Sequence[Sequence[State]], vectorise_from: int = VECTORISE_FROM) -> ManyValues:
    """The metrics of ``plan`` for R state tuples (see :meth:`mergeable_metrics.collection.plan.Plan.compute_many`);
    with fewer than ``vectorise_from`` elements every metric is computed element by element."""
    states_list = list(states_list)
    if len(states_list) < vectorise_from:
        return _compute(plan, _Stacked({}, plan.state_types, len(states_list)), states_list, vectorise=False)
    fields = stack_fields(plan.state_types, states_list)
    return _compute(plan, _Stacked(fields, plan.state_types, len(states_list)), states_list)


class LazyStates(Sequence):
    """R elements' state tuples, each built when read (``states(i)``), for the metrics that
    compute element by element beside the stacked cell fields (see :func:`compute_fields`);
    ``exact_bins(kind)``: per element, the ``(pos, neg)`` float64 bin totals in ascending key
    order of its exact score distribution of ``kind`` read without building its state (None: read
    the element's state), which :func:`_roc_auc_many` reads as it reads a state's arrays."""

    def __init__(self, r: int, states: Callable[[int], tuple], exact_bins: Callable[[str], list] | None = None):
        self._r = r
        self._states = states
        self._bins = exact_bins

    def __len__(self) -> int:
        return self._r

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self._states(j) for j in range(*i.indices(self._r))]
        if not -self._r <= i < self._r:
            raise IndexError(i)
        return self._states(i % self._r)

    def exact_bins(self, kind: str) -> list:
        return [None] * self._r if self._bins is None else self._bins(kind)


def compute_fields(plan: Any, fields: dict[str, dict[str, np.ndarray]], r: int, states_list: Sequence[Sequence[State]] | None = None) -> ManyValues:
    """The metrics of ``plan`` for R elements given as their stacked cell-state fields
    (``{kind: {field: (R, ...) array}}``, as :func:`stack_fields` stacks them: e.g.
    :meth:`mergeable_metrics.evaluation.accumulator.Accumulator.stacked`), bit for bit :func:`compute_many` of the states
    they stack, from ``VECTORISE_FROM`` elements on; every metric must be a cell metric
    (:func:`is_cell_metric`), unless ``states_list`` gives the elements' states (e.g. a
    :class:`LazyStates`) for the others.

    Raises:
        ValueError: a metric that is not computed from cell states, without ``states_list``."""
    return _compute(plan, _Stacked(fields, plan.state_types, r), states_list)


def compute_cells(plan: Any, cells: dict[str, np.ndarray]) -> ManyValues:
    """The metrics of ``plan`` from ``{kind: (R, num_cells)}`` cells (see the module docstring
    and :meth:`mergeable_metrics.collection.plan.Plan.compute_cells`)."""
    fields, r = fields_from_cells(plan.state_types, cells)
    for m in plan.metrics:
        missing = [cls.kind for cls, _ in m.requires() if cls.kind not in fields]
        if _vectorised(m) is not None and missing:
            raise ValueError(f"metric {m.key!r} needs the cells of {missing}")
    return _compute(plan, _Stacked(fields, plan.state_types, r), None)
