"""Probabilistic metrics as additive sums: log loss, Brier score, calibration error, mean label.

States (both merge by fieldwise addition of exact sums, :mod:`mergeable_metrics._util.exact`, so they are exact
commutative monoids: bit for bit the same for any batching and merge order):

* :class:`ProbabilitySumsState`: weight, ``sum w y``, ``sum w p``, the Brier sum and the log-loss
  sum at each clipping ``eps``. Binary tasks read (N,) positive-class scores ``p``; multiclass
  tasks read (N, K) probability rows.
* :class:`CalibrationBinsState`: per equal-width bin of the positive-class probability, the
  weight, ``sum w p`` and ``sum w y`` (reliability-diagram data), for one or more bin counts;
  multiclass tasks: the same per class one-vs-rest and for the top label (a class axis).

Log loss clips probabilities to ``[eps, 1 - eps]`` (``eps`` = float64 machine epsilon by
default, as scikit-learn >= 1.5 does for float64) and uses the natural log. Calibration bins are
``[i/B, (i+1)/B)``, the last one closed at 1.0 (scikit-learn's ``calibration_curve`` puts a
probability exactly on an inner edge in the lower bin; elsewhere they agree). Multiclass
calibration errors keep the probabilities exactly 1.0 in a bin of their own, as torchmetrics'
``MulticlassCalibrationError``; multiclass reliability diagrams close the last bin again.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from mergeable_metrics.inputs.validation import Batch
from mergeable_metrics._util.limits import MAX_N_BINS, MAX_NUM_CLASSES, check_at_most, check_count
from mergeable_metrics._util import exact_kernels as _kernels
from mergeable_metrics._util.exact import ExactSums, exact_column_sums, exact_sum, known_weight_sum, remember_weight_sum
from mergeable_metrics._util.portable_log import log as _log
from mergeable_metrics.metrics.base import Metric, record_undefined
from mergeable_metrics.metrics.regression import RegressionMomentsState
from mergeable_metrics.states.base import State

DEFAULT_EPS = float(np.finfo(np.float64).eps)


@dataclass(frozen=True)
class ProbabilitySumsLayout:
    """``binary``: (N,) positive-class scores, else (N, K) probability rows; ``num_classes`` K
    (the number of labels L when ``multilabel``); ``eps``: sorted distinct log-loss clipping
    values; ``multilabel``: (N, L) 0/1 indicator targets with (N, L) per-label probabilities."""

    binary: bool = True
    num_classes: int = 2
    eps: tuple[float, ...] = (DEFAULT_EPS,)
    multilabel: bool = False

    def __post_init__(self) -> None:
        e = tuple(float(x) for x in self.eps)
        if not e or any(not (0 < x < 0.5) for x in e) or list(e) != sorted(set(e)):
            raise ValueError(f"eps must be sorted distinct values in (0, 0.5), got {self.eps!r}")
        object.__setattr__(self, "eps", e)
        object.__setattr__(self, "num_classes", int(self.num_classes))
        object.__setattr__(self, "binary", bool(self.binary))
        object.__setattr__(self, "multilabel", bool(self.multilabel))
        if self.multilabel and self.binary:
            raise ValueError("a multilabel probability-sums layout is not binary")


def _group_sum(x: np.ndarray, w: np.ndarray | None, index: np.ndarray | None, size: int) -> ExactSums:
    """Exact ``sum w x`` (``sum x`` unweighted) of the rows of ``x`` ((n,) or (n, c)): () or
    (c,) sums without ``index``; per group ``index`` ((n,) ints in ``[0, size)``) (size,) or
    (size, c) sums."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim == 1:
        return exact_sum(x, w) if index is None else exact_sum(x, w, index=index, size=size)
    if index is None:
        return exact_column_sums(x, w)
    n, c = x.shape
    ww = None if w is None else np.repeat(np.asarray(w, dtype=np.float64), c)
    return exact_sum(x.ravel(), ww, index=(np.asarray(index)[:, None] * c + np.arange(c)).ravel(), size=size * c, shape=(size, c))


class ProbabilitySumsState(State):
    """Sums for log loss, Brier score, mean label and mean score.

    Fields (float64): ``weight`` (), ``sum_label`` () and ``sum_score`` () (binary only, else 0),
    ``brier`` () (``sum w (p - y)^2``; multiclass ``sum w ||p - onehot(y)||^2``), ``log_loss``
    (E,) (``sum w -ln(clip(p_true, eps, 1 - eps))`` per eps).
    """

    kind = "probability_sums"
    Layout = ProbabilitySumsLayout
    FIELDS = (
        ("weight", "float64"),
        ("sum_label", "float64"),
        ("sum_score", "float64"),
        ("brier", "float64"),
        ("log_loss", "float64"),
    )
    COUNTS = ("weight", "sum_label")
    NONNEGATIVE = ("sum_score", "brier", "log_loss")
    EXACT = ("weight", "sum_label", "sum_score", "brier", "log_loss")

    @classmethod
    def shape(cls, layout: ProbabilitySumsLayout, field: str) -> tuple[int, ...]:
        return (len(layout.eps),) if field == "log_loss" else ()

    @classmethod
    def layout_for(cls, requirements: list[Any], task: Any) -> ProbabilitySumsLayout:
        eps = sorted({float(r) for r in requirements if r is not None} or {DEFAULT_EPS})
        return ProbabilitySumsLayout(task.kind == "binary", task.num_classes, tuple(eps), task.kind == "multilabel")

    @classmethod
    def from_batch(cls, layout: ProbabilitySumsLayout, batch: Batch) -> "ProbabilitySumsState":
        return cls(layout, cls.grouped_fields(layout, batch))

    @classmethod
    def grouped_fields(cls, layout: ProbabilitySumsLayout, batch: Batch, index: np.ndarray | None = None, size: int = 1) -> dict[str, Any]:
        """Every field's exact sums over the batch's elements, per group ``index`` ((n,) ints in
        ``[0, size)``; fields of shape ``(size,) + shape``), or of all of them (``index`` None:
        the fields of :meth:`from_batch`)."""
        w = batch.sample_weight
        y = batch.y_true
        n = y.shape[0]
        eps = np.asarray(layout.eps)
        if layout.multilabel:
            return cls._from_indicators(layout, batch, index, size)
        if layout.binary:
            p = batch.y_score if batch.y_score is not None else batch.y_pred
            p = np.zeros(n) if p is None else np.asarray(p, dtype=np.float64)
            if index is None and len(eps) == 1 and 0 < n <= _kernels.CHUNK and _kernels.ready():
                fused = cls._fused_fields(y, p, w, float(eps[0]))
                if fused is not None:
                    return fused
            yf = y.astype(np.float64)
            pos = y == 1
            # sklearn: column 1 is p, column 0 is 1 - p; each clipped, natural log of the true one
            q = np.where(pos, p, 1.0 - p)
            ll = -_log(np.clip(q[:, None], eps[None, :], 1 - eps[None, :]))
            arrays = {
                "sum_label": _group_sum(yf if w is None else w * yf, None, index, size),  # w * y is exact
                "sum_score": _group_sum(p, w, index, size),
                "brier": _group_sum((p - yf) ** 2, w, index, size),
            }
        else:
            if batch.y_score is None or batch.y_score.ndim != 2:
                raise ValueError("multiclass log loss and Brier score need (N, K) probability rows")
            P = batch.y_score
            p_true = P[np.arange(n), y]
            diff = P.copy()
            diff[np.arange(n), y] -= 1.0
            ll = -_log(np.clip(p_true[:, None], eps[None, :], 1 - eps[None, :]))
            zero = np.float64(0.0) if index is None else np.zeros(size)
            # every (row, class) term summed exactly (no per-row float sum whose order could vary)
            k = P.shape[1]
            arrays = {
                "sum_label": zero, "sum_score": zero.copy(),
                "brier": _group_sum((diff**2).ravel(), None if w is None else np.repeat(w, k), None if index is None else np.repeat(index, k), size),
            }  # fmt: skip
        if w is None:
            arrays["weight"] = np.float64(n) if index is None else np.bincount(index, minlength=size).astype(np.float64)
        else:
            arrays["weight"] = _group_sum(w, None, index, size)
        arrays["log_loss"] = _group_sum(ll, w, index, size)
        return arrays

    @staticmethod
    def _fused_fields(y: np.ndarray, p: np.ndarray, w: np.ndarray | None, eps: float) -> dict[str, Any] | None:
        """The binary fields of one batch at one ``eps`` through the compiled kernel
        (:func:`mergeable_metrics._util.exact_kernels.probability_moments`: the per-row fdlibm
        log, branch-free and vectorised, and every exact sum in one call; the same exact sums as
        the numpy expressions of :meth:`grouped_fields`), or None when a value is outside its
        domain (the numpy path then runs)."""
        known = None if w is None else known_weight_sum(w)  # the weight's sum, when another state has it
        got = _kernels.probability_moments(y, p, w, eps, known is None)
        if got is None:
            return None
        raws, npos = got
        if w is None:
            weight: Any = np.float64(y.shape[0])
            label: Any = ExactSums.of_count(npos)
        else:
            weight = known if known is not None else ExactSums.lazy(*raws[4], ())
            if known is None:
                remember_weight_sum(w, weight)
            label = ExactSums.lazy(*raws[0], ())
        return {
            "sum_label": label,
            "sum_score": ExactSums.lazy(*raws[1], ()),
            "brier": ExactSums.lazy(*raws[2], ()),
            "weight": weight,
            "log_loss": ExactSums.lazy(*raws[3], (1,)),
        }

    @classmethod
    def _from_indicators(cls, layout: ProbabilitySumsLayout, batch: Batch, index: np.ndarray | None = None, size: int = 1) -> dict[str, Any]:
        """Multilabel rows as scikit-learn's ``log_loss`` / ``brier_score_loss`` read an (N, L)
        indicator matrix: per row ``-sum_j y_j ln(clip(p_j, eps, 1 - eps))`` (only the positive
        labels' terms: scikit-learn one-hot-encodes the indicator columns as classes) and
        ``sum_j (y_j - p_j)^2``. With L = 1 scikit-learn reads the column as binary, and so does
        this: ``-ln`` of the clipped probability of the true value, and ``(p - y)^2``."""
        w = batch.sample_weight
        Y = batch.y_true
        n, L = Y.shape
        P = batch.y_score if batch.y_score is not None else batch.y_pred
        if P is None or np.ndim(P) != 2 or P.shape[1] != L:
            raise ValueError(f"multilabel log loss and Brier score need (N, {L}) probabilities")
        P = np.asarray(P, dtype=np.float64)
        eps = np.asarray(layout.eps)
        Yf = Y.astype(np.float64)
        clipped = np.clip(P.reshape(-1)[:, None], eps[None, :], 1 - eps[None, :])  # (N L, E)
        if L == 1:
            q = np.where(Yf.reshape(-1)[:, None] == 1, clipped, 1.0 - clipped)
            ll = -_log(q)
        else:
            ll = -Yf.reshape(-1)[:, None] * _log(clipped)  # 0 where y = 0 (scikit-learn's xlogy)
        ww = None if w is None else np.repeat(w, L)
        at = None if index is None else np.repeat(np.asarray(index), L)  # each (row, label) term in its row's group
        zero = np.float64(0.0) if index is None else np.zeros(size)
        # every (row, label) term summed exactly (no per-row float sum whose order could vary)
        weight = (np.float64(n) if index is None else np.bincount(index, minlength=size).astype(np.float64)) if w is None else _group_sum(w, None, index, size)
        return {
            "sum_label": zero,
            "sum_score": zero.copy(),
            "brier": _group_sum(((P - Yf) ** 2).reshape(-1), ww, at, size),
            "weight": weight,
            "log_loss": _group_sum(ll, ww, at, size),
        }


@dataclass(frozen=True)
class CalibrationBinsLayout:
    """Sorted distinct numbers of equal-width bins (each >= 1) and ``num_classes``: 0 for a
    binary task (the positive-class probability only), else the number of classes K >= 2 of a
    multiclass task ((N, K) probability rows; see :class:`CalibrationBinsState`)."""

    bins: tuple[int, ...] = (10,)
    num_classes: int = 0

    def __post_init__(self) -> None:
        b = tuple(check_count(x, "n_bins", 1, MAX_N_BINS) for x in self.bins)
        if not b or list(b) != sorted(set(b)):
            raise ValueError(f"bins must be sorted distinct integers >= 1, got {self.bins!r}")
        object.__setattr__(self, "bins", b)
        k = self.num_classes
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or (k != 0 and not 2 <= k <= MAX_NUM_CLASSES):
            raise ValueError(f"num_classes must be 0 (binary) or an integer in [2, {MAX_NUM_CLASSES}], got {k!r}")
        object.__setattr__(self, "num_classes", int(k))
        if k:
            check_calibration_size(int(k), self.cells - 1, "calibration bins layout")

    @property
    def multiclass(self) -> bool:
        return self.num_classes > 0

    def width(self, n_bins: int) -> int:
        """Cells of the ``n_bins`` histogram: ``n_bins``, plus (multiclass) one cell of the
        probabilities exactly 1.0."""
        return n_bins + (1 if self.multiclass else 0)

    def offset(self, n_bins: int) -> int:
        """Start of the ``n_bins`` histogram in the concatenated fields."""
        if n_bins not in self.bins:
            raise KeyError(f"n_bins {n_bins} is not in this state's bins {self.bins}")
        return sum(self.width(b) for b in self.bins if b < n_bins)

    @property
    def cells(self) -> int:
        """Length of the concatenated histograms (the last axis of every field)."""
        return sum(self.width(b) for b in self.bins)


def bin_index(p: np.ndarray, n_bins: int, one_apart: bool = False) -> np.ndarray:
    """Bin of each probability: ``[i/B, (i+1)/B)``, the last bin closed at 1.0; with
    ``one_apart`` (torchmetrics' binning: ``torch.bucketize(p, linspace(0, 1, B + 1), right=True)
    - 1``) the last bin is open and 1.0 falls in bin ``B`` of its own. Edges are ``i/B``
    correctly rounded."""
    edges = np.arange(1, n_bins + (1 if one_apart else 0), dtype=np.float64) / n_bins
    return np.searchsorted(edges, p, side="right")


class CalibrationBinsState(State):
    """Per-bin weight ``count``, ``sum_score`` and ``sum_label`` (float64 exact sums), for every
    bin count of the layout (histograms concatenated along the last axis).

    Binary layout (``num_classes`` 0): fields of shape (sum of bins,), bins of the
    positive-class probability ``p`` with label ``y``; bins ``[i/B, (i+1)/B)``, the last closed
    at 1.0 (as ``sklearn.calibration.calibration_curve``).

    Multiclass layout (K classes): fields of shape (K + 1, sum of (bins + 1)). Row ``k < K`` is
    class ``k`` one-vs-rest (probability ``P[:, k]``, label ``y == k``); row ``K`` is the top
    label (confidence ``max_k P[:, k]``, label ``argmax_k P[:, k] == y``, the first maximum on
    ties). Each histogram has ``B + 1`` cells: ``[i/B, (i+1)/B)`` for ``i < B`` and the cell of
    probabilities exactly 1.0, as torchmetrics' calibration error bins (merging the last two
    cells gives scikit-learn's closed last bin).

    Kind version 2 (multiclass layouts); version-1 bytes are binary layouts, read unchanged.
    """

    kind = "calibration_bins"
    Layout = CalibrationBinsLayout
    FIELDS = (("count", "float64"), ("sum_score", "float64"), ("sum_label", "float64"))
    COUNTS = ("count", "sum_label")
    NONNEGATIVE = ("sum_score",)
    EXACT = ("count", "sum_score", "sum_label")
    VERSION = 2

    @classmethod
    def upgrade(cls, version: int, layout: CalibrationBinsLayout, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Version 1 (binary layouts only, the same fields): read unchanged."""
        if version == 1 and not layout.multiclass:
            return arrays
        return super().upgrade(version, layout, arrays)

    @classmethod
    def shape(cls, layout: CalibrationBinsLayout, field: str) -> tuple[int, ...]:
        return (layout.num_classes + 1, layout.cells) if layout.multiclass else (layout.cells,)

    @classmethod
    def layout_for(cls, requirements: list[Any], task: Any) -> CalibrationBinsLayout:
        k = task.num_classes if task.kind == "multiclass" else 0
        return CalibrationBinsLayout(tuple(sorted({int(r) for r in requirements})), k)

    @classmethod
    def from_batch(cls, layout: CalibrationBinsLayout, batch: Batch) -> "CalibrationBinsState":
        return cls(layout, cls.grouped_fields(layout, batch))

    @classmethod
    def grouped_fields(cls, layout: CalibrationBinsLayout, batch: Batch, index: np.ndarray | None = None, size: int = 1) -> dict[str, Any]:
        """Every field's exact sums over the batch's elements, per group ``index`` ((n,) ints in
        ``[0, size)``; fields of shape ``(size,) + shape``), or of all of them (``index``
        None: the fields of :meth:`from_batch`)."""
        p = batch.y_score if batch.y_score is not None else batch.y_pred
        if p is None:
            raise ValueError("calibration bins need scores")
        p = np.asarray(p, dtype=np.float64)
        w = batch.sample_weight
        if layout.multiclass:
            k = layout.num_classes
            if batch.y_score is None:
                raise ValueError(f"multiclass calibration bins need (N, {k}) probability rows, got predicted labels only")
            if p.size == 0:  # an empty batch (its scores may come as (0,))
                p = p.reshape(0, k)
            if p.ndim != 2 or p.shape[1] != k:
                raise ValueError(f"multiclass calibration bins need (N, {k}) probability rows, got shape {p.shape}")
            n = p.shape[0]
            y = np.asarray(batch.y_true)
            top = np.argmax(p, axis=1) if n else np.zeros(0, dtype=np.intp)
            # (n, K + 1) probabilities and 0/1 labels: one-vs-rest per class, then the top label
            q = np.concatenate([p, p[np.arange(n), top][:, None]], axis=1)
            lab = np.concatenate([y[:, None] == np.arange(k)[None, :], (top == y)[:, None]], axis=1)
            rows = k + 1
        else:
            q, lab, rows = p[:, None], (batch.y_true != 0)[:, None], 1
        nc = layout.cells
        one = layout.multiclass
        # cell of each (element, row, bin count): row * nc + offset + bin
        idx = np.concatenate([bin_index(q, b, one) + (np.arange(rows) * nc)[None, :] + layout.offset(b) for b in layout.bins], axis=1)
        reps = len(layout.bins)
        total, shape = rows * nc, ((rows, nc) if one else None)
        if index is not None:  # group-major: entry group * rows * nc + cell
            idx = idx + np.asarray(index, dtype=np.int64)[:, None] * (rows * nc)
            total, shape = size * rows * nc, (size,) + ((rows, nc) if one else (nc,))
        idx = idx.ravel()
        qq = np.tile(q, reps).ravel()
        ll = np.tile(lab, reps).ravel()
        ww = None if w is None else np.repeat(w, rows * reps)
        if w is None:  # integer counts, exact in float64
            count = np.bincount(idx, minlength=total).astype(np.float64)
            sum_label = np.bincount(idx[ll], minlength=total).astype(np.float64)
            if shape is not None:
                count, sum_label = count.reshape(shape), sum_label.reshape(shape)
        else:
            count = exact_sum(ww, index=idx, size=total, shape=shape)
            sum_label = exact_sum(np.where(ll, ww, 0.0), index=idx, size=total, shape=shape)  # w * y is exact (y in {0, 1})
        return {"count": count, "sum_score": exact_sum(qq, ww, index=idx, size=total, shape=shape), "sum_label": sum_label}

    def bins_of(self, n_bins: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(count, sum_score, sum_label)`` of the ``n_bins`` histogram: each (n_bins,) for a
        binary layout, (K + 1, n_bins + 1) for a multiclass one (see the class docstring)."""
        o, wd = self.layout.offset(n_bins), self.layout.width(n_bins)
        a = self.arrays
        return a["count"][..., o : o + wd], a["sum_score"][..., o : o + wd], a["sum_label"][..., o : o + wd]


# -- metrics -------------------------------------------------------------------------------------
def _eps_param(metric: Metric) -> None:
    e = metric.p.get("eps")
    e = DEFAULT_EPS if e is None else float(e)
    if not (0 < e < 0.5):
        raise ValueError(f"metric {metric.name!r}: eps must be in (0, 0.5), got {metric.p['eps']!r}")
    metric.p["eps"] = e


class LogLoss(Metric):
    """Log loss (cross-entropy) ``-sum w ln(clip(p_true, eps, 1 - eps)) / sum w``, natural log.

    Binary: (N,) probabilities of class 1 (hard 0/1 predictions also work); multiclass: (N, K)
    probability rows. Scores must be probabilities (in [0, 1]; rows summing to 1), else ValueError
    at fold. Multilabel ((N, L) 0/1 indicators, (N, L) per-label probabilities, no row-sum
    check): scikit-learn's reading of an indicator matrix, ``-sum_j y_j ln(clip(p_j))`` per row
    (the negative labels' ``ln(1 - p_j)`` terms do not count: it is not the mean per-label binary
    cross-entropy), averaged over rows; with L = 1 the binary log loss. NaN with no examples.
    Source: ``sklearn.metrics.log_loss`` (``eps`` = float64 machine epsilon, as scikit-learn
    >= 1.5 for float64 input).
    """

    name = "log_loss"
    full_name = "Log loss"
    aliases = ("logloss", "cross_entropy", "binary_crossentropy", "categorical_crossentropy")
    params = {"eps": None}
    tasks = ("binary", "multiclass", "multilabel")
    higher_is_better = False
    bounds = (0.0, math.inf)
    sklearn = "sklearn.metrics.log_loss"
    undefined = "no examples (total weight 0)"

    def configure(self) -> None:
        _eps_param(self)

    def requires(self) -> list[tuple[type[State], Any]]:
        return [(ProbabilitySumsState, self.p["eps"])]

    def needs(self) -> frozenset[str]:
        extra = "score" if self.task.kind == "binary" else "score_matrix"
        return frozenset({"target", extra, "probability"})

    def compute(self, states: dict[str, State]) -> float:
        st = states["probability_sums"]
        i = st.layout.eps.index(self.p["eps"])
        return _mean_or_nan(float(st["weight"]), lambda: float(st["log_loss"][i]) / float(st["weight"]))


class BrierScore(Metric):
    """Brier score: mean squared difference between probabilities and outcomes.

    Binary: ``sum w (p - y)^2 / sum w``; multiclass: ``sum w ||p - onehot(y)||^2 / sum w``
    (halved for K = 2, as scikit-learn's ``scale_by_half="auto"``); multilabel: ``sum w ||p -
    y||^2 / sum w`` over the (N, L) indicators (halved for L = 2 too, as scikit-learn). The
    positive class is 1 from the task, never inferred from the labels seen. NaN with no examples. Source:
    ``sklearn.metrics.brier_score_loss``.

    ``scale_by_half`` is scikit-learn's: ``"auto"`` (default) halves the sum over the classes for
    binary tasks (the value is then ``sum w (p - y)^2 / sum w``, in [0, 1]) and for two columns,
    ``true`` always halves it, ``false`` never does (binary values in [0, 2]), e.g.
    ``brier_score@scale_by_half=false``.
    """

    name = "brier_score"
    full_name = "Brier score"
    aliases = ("brier_score_loss", "brier")
    tasks = ("binary", "multiclass", "multilabel")
    higher_is_better = False
    bounds = (0.0, 2.0)
    sklearn = "sklearn.metrics.brier_score_loss"
    undefined = "no examples (total weight 0)"
    params = {"scale_by_half": "auto"}

    def configure(self) -> None:
        sbh = self.p["scale_by_half"]
        if isinstance(sbh, str) and sbh.lower() in ("auto", "true", "false"):
            sbh = {"auto": "auto", "true": True, "false": False}[sbh.lower()]
        if sbh not in ("auto", True, False) or (sbh in (0, 1) and not isinstance(sbh, bool)):
            raise ValueError(f"metric 'brier_score': scale_by_half must be auto, true or false (scikit-learn's), got {self.p['scale_by_half']!r}")
        self.p["scale_by_half"] = sbh
        if "scale_by_half" in self.given:
            if sbh == "auto":
                del self.given["scale_by_half"]  # the default: the same key as brier_score
            else:
                self.given["scale_by_half"] = sbh
        binary = self.task.kind == "binary"
        full = float(max(2, self.task.num_classes)) if self.task.kind == "multilabel" else 2.0  # a row's largest sum over the classes
        self.bounds = (0.0, full * (0.5 if self._halved(binary, 2 if binary else self.task.num_classes) else 1.0))  # type: ignore[misc]

    def _halved(self, binary: bool, k: int) -> bool:
        sbh = self.p["scale_by_half"]
        return (binary or k == 2) if sbh == "auto" else bool(sbh)

    def _factor(self, binary: bool, k: int) -> float:
        """What multiplies ``sum w ||p - y||^2 / sum w`` (binary: the state holds the one-column
        sum ``sum w (p - y)^2``, half the two-class sum)."""
        half = self._halved(binary, k)
        return (1.0 if half else 2.0) if binary else (0.5 if half else 1.0)

    def scale(self, layout: Any) -> float:
        """The factor of this metric's value over the state's ``brier / weight``."""
        return self._factor(layout.binary, layout.num_classes)

    def requires(self) -> list[tuple[type[State], Any]]:
        return [(ProbabilitySumsState, None)]

    def needs(self) -> frozenset[str]:
        extra = "score" if self.task.kind == "binary" else "score_matrix"
        return frozenset({"target", extra, "probability"})

    def compute(self, states: dict[str, State]) -> float:
        st = states["probability_sums"]
        return _mean_or_nan(float(st["weight"]), lambda: float(st["brier"]) / float(st["weight"]) * self.scale(st.layout))


#: the ``average`` values of the multiclass calibration metrics
CALIBRATION_AVERAGES = ("top_label", "none", "macro")


class _Calibration(Metric):
    """Shared ``n_bins`` and ``average`` handling of the equal-width calibration metrics.

    Multiclass tasks read (N, K) probability rows; ``average`` says which calibration:
    ``"top_label"`` (the default: confidence ``max_k p_k``, correct ``argmax_k p_k == y``, as
    torchmetrics' ``MulticlassCalibrationError``), ``None`` (``@none``: the (K,) one-vs-rest
    values per class, class ``k``'s probability ``p_k`` against ``y == k``) or ``"macro"`` (their
    unweighted mean, the classwise calibration error of Kull et al., 2019).
    """

    params = {"n_bins": 10, "average": "top_label"}
    positional = "average"
    tasks = ("binary", "multiclass")
    higher_is_better = False
    bounds = (0.0, 1.0)
    undefined = "no examples (total weight 0)"

    def configure(self) -> None:
        b = self.p["n_bins"]
        if isinstance(b, bool) or not isinstance(b, int) or b < 1:
            raise ValueError(f"metric {self.name!r}: n_bins must be an integer >= 1, got {b!r}")
        check_at_most(b, MAX_N_BINS, "n_bins", f"metric {self.name!r}")
        avg = "none" if self.p["average"] is None else self.p["average"]
        if "average" in self.given and self.task.kind != "multiclass":
            raise ValueError(f"metric {self.name!r}: average applies to multiclass tasks only, got average={self.given['average']!r}")
        if avg not in CALIBRATION_AVERAGES:
            raise ValueError(f"metric {self.name!r}: average must be one of {CALIBRATION_AVERAGES} (none: per class), got {self.p['average']!r}")
        self.p["average"] = avg
        if self.task.kind == "multiclass":
            check_calibration_size(self.task.num_classes, b, f"metric {self.name!r}")

    def _show_positional(self) -> bool:
        return self.p["average"] != "top_label"  # "ece@top_label" is "ece"

    def requires(self) -> list[tuple[type[State], Any]]:
        return [(CalibrationBinsState, self.p["n_bins"])]

    def needs(self) -> frozenset[str]:
        extra = "score_matrix" if self.task.kind == "multiclass" else "score"
        return frozenset({"target", extra, "probability"})

    def bins(self, states: dict[str, State]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Binary: the (n_bins,) histogram. Multiclass: the (K + 1, n_bins + 1) histograms
        (rows: the classes one-vs-rest, then the top label; see :class:`CalibrationBinsState`)."""
        return states["calibration_bins"].bins_of(self.p["n_bins"])

    def compute(self, states: dict[str, State]) -> Any:
        count, ss, sl = self.bins(states)
        if count.ndim == 1:
            return self.error(count, ss, sl)
        k = count.shape[0] - 1
        if self.p["average"] == "top_label":
            return self.error(count[k], ss[k], sl[k])
        per_class = np.array([self.error(count[c], ss[c], sl[c], record=False) for c in range(k)])
        if np.isnan(per_class).all():
            record_undefined()
        return per_class if self.p["average"] == "none" else (float(per_class.mean()) if k else float("nan"))

    def error(self, count: np.ndarray, ss: np.ndarray, sl: np.ndarray, record: bool = True) -> float:
        """The calibration error of one histogram (per-cell weight, score sum, label sum)."""
        raise NotImplementedError


def check_calibration_size(num_classes: int, n_bins: int, what: str) -> None:
    """Raise ``ValueError`` (naming ``what``, n_bins and num_classes) when a multiclass
    calibration histogram would exceed :data:`MAX_CALIBRATION_CELLS` cells per field."""
    cells = (num_classes + 1) * (n_bins + 1)  # n_bins: all bin counts of a layout (each with its cell of 1.0)
    if cells > MAX_CALIBRATION_CELLS:
        raise ValueError(
            f"{what}: n_bins={n_bins} with num_classes={num_classes} needs {cells} calibration cells per field, "
            f"more than {MAX_CALIBRATION_CELLS} (lower n_bins)"
        )


#: at most this many cells per field of a multiclass calibration-bins state ((K + 1) x (B + 1))
MAX_CALIBRATION_CELLS = 1_000_000


class ExpectedCalibrationError(_Calibration):
    """Expected calibration error with ``n_bins`` equal-width bins:
    ``sum_b (w_b / W) |frac_pos_b - mean_score_b| = sum_b |sum_label_b - sum_score_b| / W``.
    NaN with no examples.

    Binary: bins of the positive-class probability ``[i/B, (i+1)/B)``, the last closed (as
    ``sklearn.calibration.calibration_curve(strategy="uniform")``). Multiclass (``average``, see
    :class:`_Calibration`): the top-label error of torchmetrics'
    ``MulticlassCalibrationError(n_bins, norm="l1")`` (its bins: ``[i/B, (i+1)/B)`` and a bin of
    the probabilities exactly 1.0), weighted rows allowed; ``@none`` the (K,) one-vs-rest
    errors (each torchmetrics' ``BinaryCalibrationError`` of ``p_k`` against ``y == k``),
    ``@macro`` their mean. Bin edges are ``i/B`` correctly rounded (torchmetrics' float
    ``linspace`` edges can differ by an ulp, so a probability exactly on an inner edge such as
    0.3 may fall in the neighbouring bin there). Source: Naeini et al. (2015); Guo et al. (2017).
    """

    name = "ece"
    full_name = "Expected calibration error"
    aliases = ("expected_calibration_error", "calibration_error")
    reference = "sklearn.calibration.calibration_curve(strategy='uniform'); torchmetrics MulticlassCalibrationError(norm='l1')"

    def error(self, count: np.ndarray, ss: np.ndarray, sl: np.ndarray, record: bool = True) -> float:
        total = float(count.sum())
        if total == 0:
            if record:
                record_undefined()
            return float("nan")
        return float(np.abs(sl - ss).sum() / total)


class MaximumCalibrationError(_Calibration):
    """Maximum calibration error: the largest ``|frac_pos_b - mean_score_b|`` over non-empty
    equal-width bins (the bins of :class:`ExpectedCalibrationError`; multiclass top label:
    torchmetrics' ``MulticlassCalibrationError(norm="max")``; ``@none`` / ``@macro`` per class
    one-vs-rest). NaN with no examples. Source: Naeini et al. (2015)."""

    name = "mce"
    full_name = "Maximum calibration error"
    aliases = ("maximum_calibration_error", "max_calibration_error")
    reference = "sklearn.calibration.calibration_curve(strategy='uniform'); torchmetrics MulticlassCalibrationError(norm='max')"

    def error(self, count: np.ndarray, ss: np.ndarray, sl: np.ndarray, record: bool = True) -> float:
        full = count > 0
        if not full.any():
            if record:
                record_undefined()
            return float("nan")
        return float((np.abs(sl[full] - ss[full]) / count[full]).max())


class ReliabilityDiagram(_Calibration):
    """Reliability-diagram data: an (n_bins, 3) array, one row per equal-width bin
    ``[i/B, (i+1)/B)`` (last closed), columns ``weight, mean_score, fraction_positive``; empty bins
    have weight 0 and NaN means (not reported as undefined). Source: the non-empty rows equal
    ``sklearn.calibration.calibration_curve(strategy="uniform")`` (``prob_pred``, ``prob_true``).

    Multiclass: a (K + 1, n_bins, 3) array: row ``k < K`` is class ``k`` one-vs-rest (its
    non-empty bins equal ``calibration_curve(y == k, P[:, k], n_bins=n_bins)``), row ``K`` the
    top label (confidence ``max_k p_k``, fraction of rows whose argmax is the label). The last
    bin is closed at 1.0 here as in scikit-learn (the calibration errors keep 1.0 apart, as
    torchmetrics). ``average`` does not apply.
    """

    name = "reliability_diagram"
    full_name = "Reliability diagram"
    aliases = ("calibration_curve", "reliability_curve")
    higher_is_better = None
    bounds = (0.0, math.inf)
    undefined = "empty bins have NaN means"
    nan_entries_undefined: ClassVar[bool] = False
    sklearn = "sklearn.calibration.calibration_curve"

    def configure(self) -> None:
        if "average" in self.given:
            raise ValueError(f"metric {self.name!r}: average does not apply (multiclass diagrams hold every class and the top label)")
        super().configure()

    def compute(self, states: dict[str, State]) -> np.ndarray:
        count, ss, sl = self.bins(states)
        if count.ndim == 2:  # multiclass: the cell of 1.0 joins the last bin (scikit-learn's closed bin)
            count, ss, sl = (np.concatenate([a[:, :-2], a[:, -2:-1] + a[:, -1:]], axis=1) for a in (count, ss, sl))
        safe = np.where(count > 0, count, 1.0)
        mean_score = np.where(count > 0, ss / safe, np.nan)
        frac = np.where(count > 0, sl / safe, np.nan)
        return np.stack([count, mean_score, frac], axis=-1)


class MeanLabel(Metric):
    """Weighted mean of the labels: binary, the fraction of positives; regression, the mean
    target. NaN with no examples. Source: ``numpy.average(y_true, weights=sample_weight)``
    (TFMA's ``mean_label``)."""

    name = "mean_label"
    full_name = "Mean label"
    aliases = ("label_mean",)
    tasks = ("binary", "regression")
    higher_is_better = None
    bounds = (-math.inf, math.inf)
    reference = "numpy.average(y_true, weights=sample_weight)"
    undefined = "no examples (total weight 0)"

    def requires(self) -> list[tuple[type[State], Any]]:
        if self.task.kind == "regression":
            return [(RegressionMomentsState, None)]
        return [(ProbabilitySumsState, None)]

    def needs(self) -> frozenset[str]:
        return frozenset({"target", "prediction"}) if self.task.kind == "regression" else frozenset({"target"})

    def compute(self, states: dict[str, State]) -> float:
        if self.task.kind == "regression":
            st = states["regression_moments"]
            if st.num_outputs is not None:  # (D,): the mean of each output
                return np.array([_mean_or_nan(float(st["weight"]), lambda s=s: s.mean("sum_y")) for s in st.outputs()])
            return _mean_or_nan(float(st["weight"]), lambda: st.mean("sum_y"))
        st = states["probability_sums"]
        return _mean_or_nan(float(st["weight"]), lambda: float(st["sum_label"]) / float(st["weight"]))


class MeanPrediction(Metric):
    """Weighted mean of the scores (binary; probabilities or any score) or predictions
    (regression). NaN with no examples. Source: ``numpy.average(y_score, weights=sample_weight)``
    (TFMA's ``mean_prediction``)."""

    name = "mean_prediction"
    full_name = "Mean prediction"
    aliases = ("mean_score", "prediction_mean")
    tasks = ("binary", "regression")
    higher_is_better = None
    bounds = (-math.inf, math.inf)
    reference = "numpy.average(y_score, weights=sample_weight)"
    undefined = "no examples (total weight 0)"

    requires = MeanLabel.requires

    def needs(self) -> frozenset[str]:
        return frozenset({"target", "prediction"}) if self.task.kind == "regression" else frozenset({"target", "score"})

    def compute(self, states: dict[str, State]) -> float:
        if self.task.kind == "regression":
            st = states["regression_moments"]
            if st.num_outputs is not None:  # (D,): the mean of each output
                return np.array([_mean_or_nan(float(st["weight"]), lambda s=s: s.mean("sum_p")) for s in st.outputs()])
            return _mean_or_nan(float(st["weight"]), lambda: st.mean("sum_p"))
        st = states["probability_sums"]
        return _mean_or_nan(float(st["weight"]), lambda: float(st["sum_score"]) / float(st["weight"]))


def _mean_or_nan(weight: float, value: Any) -> float:
    """``value()``, or NaN (recorded as undefined) for a total weight of 0 or one that overflows float64
    (a finite sum over an infinite weight would be a wrong 0.0)."""
    if weight == 0 or not math.isfinite(weight):
        record_undefined()
        return float("nan")
    return float(value())


__all__ = [
    "BrierScore",
    "CalibrationBinsLayout",
    "CalibrationBinsState",
    "ExpectedCalibrationError",
    "LogLoss",
    "MaximumCalibrationError",
    "MeanLabel",
    "MeanPrediction",
    "ProbabilitySumsLayout",
    "ProbabilitySumsState",
    "ReliabilityDiagram",
    "bin_index",
    "check_calibration_size",
]
