"""Threshold-free binary metrics from a score distribution: ROC AUC, average precision, curves.

Every metric here reads one :class:`~mergeable_metrics.states.score_distribution.ScoreDistributionState` (shared by all
of them in a plan) and has two regimes:

* **exact state** (every distinct score has its own bin; always the case while the distinct scores
  of a slice fit the ``capacity``): the value is computed with scikit-learn's own formulas on the
  same cumulative counts, so it equals scikit-learn bit for bit with unit or integer weights (and to
  float64 rounding with fractional weights). The metric returns a float (curves: an array).
* **compressed state**: the value comes with certified bounds, returned as
  :class:`mergeable_metrics.metrics.base.Interval` ``(value, lower, upper)`` with ``lower <= exact <= upper``. Bin
  boundaries are exact operating points; the only unknown is the order of the examples inside one
  bin, and the bounds take the worst and best such order (derivations in each function). Bounds are
  widened by 1e-12 to absorb float64 rounding. Curves of a compressed state are exact points of the
  exact curve (a subset of them, at bin boundaries), so they are returned without an interval.

Whether a value is exact is therefore visible per result: approximate values carry ``bounds``
(``SliceResult.bounds``, ``lower``/``upper`` in long-format rows); :meth:`RankingMetric.is_exact`
answers it for a given state.

Parameters common to every metric here:
    capacity: bins of the shared score distribution (default 40,000; the plan uses the largest
        requested). A slice with more distinct scores is compressed.
    pos_label: 1 (default) or 0: which label is the positive class. The ranking is by the scores
        *of the positive class*: column ``pos_label`` of a binary score given as two columns (N, 2)
        (``predict_proba`` output), or the single score column as given (scikit-learn's
        ``pos_label`` for one score column). ``pos_label=0`` metrics read a
        :class:`~mergeable_metrics.states.score_distribution.Class0ScoreDistributionState`.

Undefined values (the policies of the project's reference cases): ROC AUC, Gini, KS, partial AUC
and the ``*_at_*`` metrics are NaN when a class is absent or has zero total weight; average
precision and the trapezoidal PR area are 0.0 with negatives but no positives; everything is NaN
(curves are empty ``(0, 3)`` arrays) for an empty slice.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from mergeable_metrics._util.public import public
from mergeable_metrics.metrics.base import AVERAGES, AVERAGINGS, Interval, Metric, get_averaging, nanaverage, record_undefined
from mergeable_metrics.states.score_distribution import (
    Class0ScoreDistributionState,
    ClassScoreDistributionState,
    LabelRankingSamplesState,
    LabelScoreDistributionState,
    ScoreDistributionState,
    bin_lower_scores,
    check_capacity,
    merge_bins,
)
from mergeable_metrics.states.base import State

_SLACK = 1e-12
#: the range of the largest bin weight outside which compressed bounds are computed on rescaled weights (_Dist.normalised)
_HUGE, _TINY = 2.0**300, 2.0**-300
_NAN = float("nan")


def _record_undefined() -> None:
    """Report an undefined (NaN) value to the plan's undefined-value recorder when there is one."""
    record_undefined()


# ---------------------------------------------------------------------------------------------
class _Dist:
    """Per-bin weights in *descending* score order with their cumulative sums (scikit-learn's
    ``tps`` / ``fps``), for one positive label."""

    def __init__(self, keys: np.ndarray, pos: np.ndarray, neg: np.ndarray, level: int):
        """From ascending bins: (m,) keys, positive and negative weights, and the level. Bins
        with neither positives nor negatives are dropped (they are not thresholds)."""
        if pos.shape[0] and not np.all(pos + neg > 0):
            keep = pos + neg > 0
            keys, pos, neg = keys[keep], pos[keep], neg[keep]
        self.keys, self.level = keys, level
        self.exact = level == 0
        self.pos, self.neg = pos[::-1], neg[::-1]
        self.tps = np.cumsum(self.pos)
        self.fps = np.cumsum(self.neg)
        self.m = self.pos.shape[0]
        self.P = float(self.tps[-1]) if self.m else 0.0
        self.N = float(self.fps[-1]) if self.m else 0.0

    @classmethod
    def of(cls, state: ScoreDistributionState, pos_label: int = 1) -> "_Dist":
        a = state.arrays
        pos, neg = (a["neg"], a["pos"]) if pos_label == 0 else (a["pos"], a["neg"])
        return cls(a["keys"], pos, neg, state.level)

    @property
    def thresholds(self) -> np.ndarray:
        """(m,) descending thresholds: the score of each bin (exact) or its lowest score."""
        return bin_lower_scores(self.keys, self.level)[::-1]

    def normalised(self) -> "_Dist":
        """This distribution with every weight multiplied by one power of two that brings the largest bin
        into [0.5, 1), when that bin lies outside [2**-300, 2**300] (else ``self``). The metrics here are
        ratios of weights, unchanged by a common factor, and a power of two scales normal floats exactly:
        inside that range the values are the same bits; outside it, the compressed bounds' products and
        ``P N`` overflow or underflow float64 (they gave bounds such as (0.43, 1e-12), or a division by zero)."""
        if self.m == 0:
            return self
        top = float(max(self.pos.max(), self.neg.max()))
        if _TINY <= top <= _HUGE:
            return self
        e = -math.frexp(top)[1]
        return _Dist(self.keys, np.ldexp(self.pos[::-1], e), np.ldexp(self.neg[::-1], e), self.level)

    def before(self) -> tuple[np.ndarray, np.ndarray]:
        """``(A, B)``: positive and negative weight strictly above each bin."""
        z = np.zeros(1)
        return np.concatenate((z, self.tps[:-1])), np.concatenate((z, self.fps[:-1]))


def _overflows(d: _Dist) -> bool:
    """Whether the positives' or the negatives' total weight overflows float64 (weights summing beyond
    1.8e308): the rates and precisions are then inf / inf or finite / inf, so the value would be NaN or a
    wrong number (0.0 through ``max(0.0, nan)``); it is reported as undefined (NaN) instead."""
    if math.isfinite(d.P) and math.isfinite(d.N):
        return False
    _record_undefined()
    return True


def _interval(value: float, lower: float, upper: float, bounds: tuple[float, float] = (0.0, 1.0)) -> Interval:
    lo = max(bounds[0], float(lower) - _SLACK)
    hi = min(bounds[1], float(upper) + _SLACK)
    return Interval(min(max(float(value), lo), hi), lo, hi)


def _g(x: np.ndarray, upper: bool) -> np.ndarray:
    """``x - log1p(x)`` for x >= 0, accurately; a lower (``upper=False``) or upper bound of it for
    tiny x (alternating series truncated after a negative or a positive term)."""
    x = np.asarray(x, dtype=np.float64)
    small = x < 1e-4
    with np.errstate(divide="ignore", invalid="ignore"):
        direct = x - np.log1p(x)
    series = x * x / 2 - x**3 / 3 + (x**4 / 4 if upper else 0.0)
    return np.where(small, series, direct)


def _trapezoid(y: np.ndarray, x: np.ndarray) -> float:
    """``scipy.integrate.trapezoid(y, x)`` (what scikit-learn's ``auc`` calls), same operations."""
    d = x[1:] - x[:-1]
    return float(np.sum(d * (y[1:] + y[:-1]) / 2.0))


def _dot(a: np.ndarray, b: np.ndarray) -> float:
    """``sum(a * b)`` of two (m,) float64 arrays by ``np.einsum`` (numpy's own loop): ``np.dot``
    goes to BLAS, whose thread start-up cost ~20 ms per call for a 30,000-bin state on the
    shared 2-core box (about 1,000x the product itself)."""
    return float(np.einsum("i,i->", a, b))


def _sk_auc(x: np.ndarray, y: np.ndarray) -> float:
    """``sklearn.metrics.auc``: trapezoidal area, x monotonic in either direction."""
    direction = 1
    dx = np.diff(x)
    if np.any(dx < 0):
        if np.all(dx <= 0):
            direction = -1
        else:  # pragma: no cover - our curves are monotonic
            raise ValueError(f"x is neither increasing nor decreasing: {x}")
    return float(direction * _trapezoid(y, x))


# ---------------------------------------------------------------------------------------------
# Curves (scikit-learn's formulas on the per-bin cumulative counts)
def roc_curve_arrays(d: _Dist, drop_intermediate: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(fpr, tpr, thresholds)`` as ``sklearn.metrics.roc_curve`` (first threshold ``inf``;
    NaN rates for an absent class)."""
    fps, tps, thr = d.fps, d.tps, d.thresholds
    if drop_intermediate and fps.shape[0] > 2:
        keep = np.where(np.r_[True, np.logical_or(np.diff(fps, 2), np.diff(tps, 2)), True])[0]
        fps, tps, thr = fps[keep], tps[keep], thr[keep]
    tps = np.r_[0.0, tps]
    fps = np.r_[0.0, fps]
    thr = np.r_[np.inf, thr]
    fpr = np.full(fps.shape, np.nan) if fps[-1] <= 0 else fps / fps[-1]
    tpr = np.full(tps.shape, np.nan) if tps[-1] <= 0 else tps / tps[-1]
    return fpr, tpr, thr


def pr_curve_arrays(d: _Dist, drop_intermediate: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(precision, recall, thresholds)`` as ``sklearn.metrics.precision_recall_curve``
    (precision and recall have one more point than thresholds: (1, 0) at the end; recall is 1
    everywhere when there are no positives)."""
    fps, tps, thr = d.fps, d.tps, d.thresholds
    if drop_intermediate and fps.shape[0] > 2:
        keep = np.where(np.r_[True, np.logical_or(np.diff(tps[:-1]), np.diff(tps[1:])), True])[0]
        fps, tps, thr = fps[keep], tps[keep], thr[keep]
    ps = tps + fps
    precision = np.divide(tps, ps, out=np.zeros_like(tps), where=ps != 0)
    recall = np.ones_like(tps) if tps[-1] == 0 else tps / tps[-1]
    return np.r_[precision[::-1], 1.0], np.r_[recall[::-1], 0.0], thr[::-1]


# ---------------------------------------------------------------------------------------------
# Scalar metrics: functions of a _Dist returning float or Interval
def roc_auc_value(d: _Dist) -> float | Interval:
    """ROC AUC = P(score+ > score-) + 1/2 P(score+ == score-), weighted.

    Exact: ``auc(fpr, tpr)`` on ``roc_curve`` (scikit-learn's ``roc_auc_score``). Compressed:
    the same trapezoid on the bin-boundary curve counts pairs tied inside a bin as 1/2; they are
    the only unknown pairs, so ``lower`` counts them 0 and ``upper`` 1:
    ``lower = sum_b pos_b * neg_below_b / (P N)``, ``upper = lower + sum_b pos_b neg_b / (P N)``.
    NaN when a class is absent or has zero weight, and when a class's total weight overflows float64.
    """
    if d.P <= 0 or d.N <= 0:
        return _NAN
    if _overflows(d):
        return _NAN
    fpr, tpr, _ = roc_curve_arrays(d, True)
    value = _sk_auc(fpr, tpr)
    if d.exact:
        return value
    d = d.normalised()  # the same bits unless the weights would overflow or underflow below
    below = d.N - d.fps
    lower = _dot(d.pos, below)
    ties = _dot(d.pos, d.neg)
    pn = d.P * d.N
    return _interval(value, lower / pn, (lower + ties) / pn)


def partial_roc_auc_value(d: _Dist, max_fpr: float, standardize: bool = True) -> float | Interval:
    """Area under the ROC curve for FPR in [0, max_fpr].

    Exact: scikit-learn's ``roc_auc_score(max_fpr=...)`` (linear interpolation at ``max_fpr``,
    then, with ``standardize``, the McClish correction ``0.5 (1 + (A - m) / (M - m))`` with
    ``m = max_fpr**2 / 2``, ``M = max_fpr``); ``standardize=False`` gives the raw area in
    [0, max_fpr]. Compressed: inside a bin the ROC curve runs monotonically from the bin's upper
    corner to its lower one, so its TPR lies between the TPR before and after the bin: the raw area
    is bounded by ``sum_b TPR_before_b * w_b`` and ``sum_b TPR_after_b * w_b`` with ``w_b`` the bin's
    FPR width clipped to [0, max_fpr]; the McClish map is increasing.
    """
    if d.P <= 0 or d.N <= 0:
        return _NAN
    if max_fpr == 1:
        v = roc_auc_value(d)
        return v if standardize else v
    fpr, tpr, _ = roc_curve_arrays(d, True)
    stop = int(np.searchsorted(fpr, max_fpr, "right"))
    x_interp = [fpr[stop - 1], fpr[stop]]
    y_interp = [tpr[stop - 1], tpr[stop]]
    tpr_c = np.append(tpr[:stop], np.interp(max_fpr, x_interp, y_interp))
    fpr_c = np.append(fpr[:stop], max_fpr)
    raw = _sk_auc(fpr_c, tpr_c)
    min_area, max_area = 0.5 * max_fpr**2, max_fpr

    def mc(a: float) -> float:
        return 0.5 * (1 + (a - min_area) / (max_area - min_area)) if standardize else a

    if d.exact:
        return mc(raw)
    f_after = d.fps / d.N
    f_before = np.r_[0.0, f_after[:-1]]
    t_after = d.tps / d.P
    t_before = np.r_[0.0, t_after[:-1]]
    width = np.clip(np.minimum(f_after, max_fpr) - f_before, 0.0, None)
    lo, hi = _dot(t_before, width), _dot(t_after, width)
    lo, hi = lo - _SLACK, hi + _SLACK
    bounds = (0.0, 1.0) if standardize else (0.0, max_fpr)
    return _interval(mc(raw), mc(lo), mc(hi), bounds)


def _ap_bin_terms(d: _Dist) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per bin (descending): (lower, estimate, upper) of its share of ``AP * P``.

    With ``A``/``B`` the positive/negative weight above the bin and ``p``/``q`` the bin's own,
    scikit-learn's step formula gives each positive example (mass ``dt``) the precision of the
    threshold where it enters, ``(A + t)/(A + B + t + f)`` with ``t``, ``f`` the positives/
    negatives of the bin ranked at or above it.
      * upper: precision <= (A + p)/(A + B + p) for every positive -> ``p (A+p)/(A+B+p)``;
      * lower: precision >= (A + t)/(D + t), ``D = A + B + q``, an increasing function of the
        positive mass ``t`` already counted -> ``integral_0^p (A+t)/(D+t) dt
        = A p/D + (D - A) g(p/D)``, ``g(x) = x - log(1 + x)``;
      * estimate: positives and negatives evenly interleaved, ``f = t q/p``:
        ``integral_0^p (A+t)/(E + c t) dt = A p/E + (E/c - A) g(c p/E)/c``, ``E = A + B``,
        ``c = 1 + q/p``.
    """
    A, B = d.before()
    p, q = d.pos, d.neg
    E = A + B
    D = E + q
    with np.errstate(divide="ignore", invalid="ignore"):
        upper = np.where(p > 0, p * (A + p) / (E + p), 0.0)
        lower = np.where(D > 0, A * p / D + (D - A) * _g(p / D, upper=False), p)
        c = 1.0 + q / p
        est = np.where(E > 0, A * p / E + (E / c - A) * _g(c * p / E, upper=False) / c, p / c)
    est = np.where(p > 0, est, 0.0)
    lower = np.where(p > 0, lower, 0.0)
    return lower, est, upper


def average_precision_value(d: _Dist) -> float | Interval:
    """Average precision, scikit-learn's step formula ``sum_n (R_n - R_{n-1}) P_n`` over
    thresholds (``average_precision_score``). 0.0 with no positives (scikit-learn), NaN when
    empty, and when a class's total weight overflows float64. Compressed: bounds and estimate from
    :func:`_ap_bin_terms`."""
    if d.m == 0:
        return _NAN
    if d.P <= 0:
        return 0.0
    if _overflows(d):
        return _NAN
    if d.exact:
        precision, recall, _ = pr_curve_arrays(d)
        return float(max(0.0, -np.sum(np.diff(recall) * precision[:-1])))
    d = d.normalised()
    lo, est, hi = _ap_bin_terms(d)
    return _interval(est.sum() / d.P, lo.sum() / d.P, hi.sum() / d.P)


def pr_auc_trapezoid_value(d: _Dist) -> float | Interval:
    """Trapezoidal area under the precision-recall curve: ``auc(recall, precision)`` on
    ``precision_recall_curve`` (linear interpolation, known to be optimistic; prefer average
    precision). 0.0 with no positives (like average precision; ``auc`` of scikit-learn's
    degenerate curve would give 0.5), NaN when empty.

    Compressed: between two bin boundaries the exact curve is a polyline whose points have
    precision between ``lo(t) = (A+t)/(D+t)`` and ``hi(t) = (A+t)/(A+B+t)`` at recall
    ``(A+t)/P`` (notation of :func:`_ap_bin_terms`). Both are concave in ``t``, so the polyline lies
    above the chord of ``lo`` and below ``hi``: per bin, ``lower = p (lo(0) + lo(p)) / 2`` and
    ``upper = integral_0^p hi = A p/E + B g(p/E)`` (divided by P).
    """
    if d.m == 0:
        return _NAN
    if d.P <= 0:
        return 0.0
    if d.exact:
        precision, recall, _ = pr_curve_arrays(d)
        return _sk_auc(recall, precision)
    d = d.normalised()
    A, B = d.before()
    p = d.pos
    E, D = A + B, A + B + d.neg
    with np.errstate(divide="ignore", invalid="ignore"):
        lo0 = np.where(D > 0, A / D, 1.0)
        lo1 = np.where(D + p > 0, (A + p) / (D + p), 1.0)
        lower = p * (lo0 + lo1) / 2
        upper = np.where(E > 0, A * p / E + B * _g(p / E, upper=True), p)
    upper = np.where(p > 0, upper, 0.0)
    _, est, _ = _ap_bin_terms(d)
    return _interval(est.sum() / d.P, lower.sum() / d.P, upper.sum() / d.P)


def _points(d: _Dist) -> tuple[np.ndarray, np.ndarray]:
    """``(tp, fp)`` at each bin boundary (predict positive down to and including each bin)."""
    return d.tps, d.fps


def precision_at_recall_value(d: _Dist, recall: float) -> float | Interval:
    """Highest precision over thresholds whose recall is >= ``recall`` (Keras/TFMA
    ``PrecisionAtRecall``). NaN without positives or when empty. Compressed: ``lower`` is the best
    bin boundary (an exact operating point, also the reported value); inside bin b a threshold can
    reach at most precision ``(A+p)/(A+B+p)`` and only if ``(A+p)/P >= recall``."""
    if d.P <= 0:
        return _NAN
    tp, fp = _points(d)
    ok = tp / d.P >= recall
    value = float(np.max((tp / (tp + fp))[ok])) if ok.any() else 0.0
    if d.exact:
        return value
    A, B = d.before()
    with np.errstate(divide="ignore", invalid="ignore"):
        cand = np.nan_to_num((A + d.pos) / (A + B + d.pos))  # 0/0 -> 0: a first bin of negatives
    upper = max(value, float(np.max(cand[ok]))) if ok.any() else value
    return _interval(value, value, upper)


def recall_at_precision_value(d: _Dist, precision: float) -> float | Interval:
    """Highest recall over thresholds whose precision is >= ``precision`` (Keras/TFMA
    ``RecallAtPrecision``); 0.0 if no threshold reaches it; NaN without positives or when empty.
    Compressed: inside bin b, precision ``>= precision`` at recall ``(A+p)/P`` is reachable only
    if ``(A+p)/(A+B+p) >= precision``."""
    if d.P <= 0:
        return _NAN
    tp, fp = _points(d)
    ok = tp / (tp + fp) >= precision
    value = float(np.max(tp[ok] / d.P)) if ok.any() else 0.0
    if d.exact:
        return value
    A, B = d.before()
    with np.errstate(divide="ignore", invalid="ignore"):
        reach = (A + d.pos) / (A + B + d.pos) >= precision
    upper = max(value, float(np.max(tp[reach] / d.P))) if reach.any() else value
    return _interval(value, value, upper)


def sensitivity_at_specificity_value(d: _Dist, specificity: float) -> float | Interval:
    """Highest TPR over thresholds (including "nothing positive") whose TNR ``(N - fp)/N`` is
    >= ``specificity`` (Keras/TFMA ``SensitivityAtSpecificity``). NaN if a class is absent.
    Compressed: inside bin b, TPR ``(A+p)/P`` is reachable only if ``(N - B)/N >= specificity``."""
    if d.P <= 0 or d.N <= 0:
        return _NAN
    tp, fp = _points(d)
    ok = (d.N - fp) / d.N >= specificity
    value = max(0.0, float(np.max(tp[ok] / d.P))) if ok.any() else 0.0
    if d.exact:
        return value
    _, B = d.before()
    reach = (d.N - B) / d.N >= specificity
    upper = max(value, float(np.max(tp[reach] / d.P))) if reach.any() else value
    return _interval(value, value, upper)


def specificity_at_sensitivity_value(d: _Dist, sensitivity: float) -> float | Interval:
    """Highest TNR over thresholds whose TPR is >= ``sensitivity`` (Keras/TFMA
    ``SpecificityAtSensitivity``). NaN if a class is absent. Compressed: inside bin b, TNR
    ``(N - B)/N`` is reachable only if ``(A+p)/P >= sensitivity``."""
    if d.P <= 0 or d.N <= 0:
        return _NAN
    tp, fp = _points(d)
    ok = tp / d.P >= sensitivity
    value = float(np.max((d.N - fp[ok]) / d.N)) if ok.any() else 0.0
    if sensitivity <= 0:
        value = 1.0  # predicting nothing positive has TPR 0 >= 0 and TNR 1
    if d.exact:
        return value
    _, B = d.before()
    upper = max(value, float(np.max((d.N - B[ok]) / d.N))) if ok.any() else value
    return _interval(value, value, upper)


def ks_value(d: _Dist) -> float | Interval:
    """Kolmogorov-Smirnov statistic ``max |TPR - FPR|`` over thresholds: the largest distance
    between the (weighted) score distributions of positives and negatives (``scipy.stats.ks_2samp``
    statistic). NaN if a class is absent. Compressed: inside bin b, TPR and FPR each move
    monotonically between their values before and after the bin, so ``|TPR - FPR| <=
    max(TPR_after - FPR_before, FPR_after - TPR_before)``."""
    if d.P <= 0 or d.N <= 0:
        return _NAN
    tpr, fpr = d.tps / d.P, d.fps / d.N
    value = max(0.0, float(np.max(np.abs(tpr - fpr))))
    if d.exact:
        return value
    tb, fb = np.r_[0.0, tpr[:-1]], np.r_[0.0, fpr[:-1]]
    upper = max(value, float(np.max(np.maximum(tpr - fb, fpr - tb))))
    return _interval(value, value, upper)


# ---------------------------------------------------------------------------------------------
# Multiclass: one-vs-rest and one-vs-one from a ClassScoreDistributionState
MULTI_CLASS = ("ovr", "ovo")
MC_AVERAGES = ("macro", "weighted", "micro", None)


def ovr_dist(state: ClassScoreDistributionState, c: int) -> _Dist:
    """Class ``c`` against the rest: column ``c``'s bins, positives = class ``c``."""
    keys, w, level = state.column(c)
    return _Dist(keys, w[:, c], np.delete(w, c, axis=1).sum(axis=1), level)


def ovo_dist(state: ClassScoreDistributionState, a: int, b: int) -> _Dist:
    """Class ``a`` against class ``b`` on column ``a``: positives = class ``a``, negatives =
    class ``b`` (examples of other classes do not take part)."""
    keys, w, level = state.column(a)
    return _Dist(keys, w[:, a], w[:, b], level)


def micro_dist(state: ClassScoreDistributionState) -> _Dist:
    """All (example, class) pairs as one binary problem (scikit-learn's ``average="micro"``):
    the canonical merge of every column's one-vs-rest bins."""
    k = state.layout.num_classes
    acc = (np.zeros(0, np.int64), np.zeros((0, 2)), 0)
    for c in range(k):
        keys, w, level = state.column(c)
        pos = w[:, c]
        acc = merge_bins(acc, (keys, np.stack((np.delete(w, c, axis=1).sum(axis=1), pos), axis=1), level), state.layout.capacity)
    keys, w, level = acc
    return _Dist(keys, w[:, 1], w[:, 0], level)


def _combine(values: list, weights: np.ndarray | None) -> float | Interval:
    """Average of per-class (or per-pair) values, NaN ones left out (the project's macro policy);
    intervals average their bounds with the same non-negative weights (still certified)."""
    v = np.array([x.value if isinstance(x, Interval) else x for x in values], dtype=np.float64)
    value = nanaverage(v, weights)
    if not any(isinstance(x, Interval) for x in values) or math.isnan(value):
        return value
    lo = np.array([x.lower if isinstance(x, Interval) else x for x in values], dtype=np.float64)
    hi = np.array([x.upper if isinstance(x, Interval) else x for x in values], dtype=np.float64)
    return _interval(value, nanaverage(lo, weights), nanaverage(hi, weights))


def multiclass_value(state: ClassScoreDistributionState, fn, multi_class: str, average: str | None) -> Any:
    """A binary ranking metric ``fn(_Dist)`` over classes (``ovr``: each class against the rest;
    ``ovo``: every pair of present classes, ``(fn(a|b) + fn(b|a)) / 2``), then averaged:
    ``macro`` (mean), ``weighted`` (class weight for ovr, pair weight share for ovo), ``micro``
    (ovr only: one binary problem over all pairs), None (ovr only: the (K,) per-class values)."""
    k = state.layout.num_classes
    totals = state.class_totals()
    if state.arrays["keys"].size == 0:
        return np.full(k, np.nan) if average is None else _NAN
    if multi_class == "ovr":
        if average == "micro":
            return fn(micro_dist(state))
        values = [fn(ovr_dist(state, c)) for c in range(k)]
        if average is None or average not in MC_AVERAGES:
            per_class = np.array([x.value if isinstance(x, Interval) else x for x in values], dtype=np.float64)
            return per_class if average is None else get_averaging(average).reduce(per_class, totals)
        return _combine(values, totals if average == "weighted" else None)
    present = [c for c in range(k) if totals[c] > 0]
    pairs, prevalence = [], []
    for i, a in enumerate(present):
        for b in present[i + 1 :]:
            va, vb = fn(ovo_dist(state, a, b)), fn(ovo_dist(state, b, a))
            if isinstance(va, Interval) or isinstance(vb, Interval):
                ia = va if isinstance(va, Interval) else Interval(va, va, va)
                ib = vb if isinstance(vb, Interval) else Interval(vb, vb, vb)
                pairs.append(Interval((ia.value + ib.value) / 2, (ia.lower + ib.lower) / 2, (ia.upper + ib.upper) / 2))
            else:
                pairs.append((va + vb) / 2)
            prevalence.append((totals[a] + totals[b]) / totals.sum())
    if not pairs:
        return _NAN
    return _combine(pairs, np.array(prevalence) if average == "weighted" else None)


# ---------------------------------------------------------------------------------------------
# Multilabel indicator targets: one binary distribution per label from a LabelScoreDistributionState
ML_AVERAGES = ("macro", "weighted", "micro", "samples", None)


def label_dist(state: LabelScoreDistributionState, j: int) -> _Dist:
    """Label ``j``: the binary distribution of ``(y_true[:, j], y_score[:, j])``."""
    keys, w, level = state.column(j)
    return _Dist(keys, w[:, 1], w[:, 0], level)


def label_micro_dist(state: LabelScoreDistributionState) -> _Dist:
    """Every (row, label) pair as one binary problem (scikit-learn's ``average="micro"`` ravels
    the indicator and score matrices): the canonical merge of every label column's bins."""
    acc = (np.zeros(0, np.int64), np.zeros((0, 2)), 0)
    for j in range(state.layout.num_labels):
        acc = merge_bins(acc, state.column(j), state.layout.capacity)
    keys, w, level = acc
    return _Dist(keys, w[:, 1], w[:, 0], level)


def multilabel_value(state: LabelScoreDistributionState, fn, average: str | None) -> Any:
    """A binary ranking metric ``fn(_Dist)`` per label of multilabel-indicator data, averaged as
    scikit-learn's ``_average_binary_score``: ``macro`` (mean over labels), ``weighted`` (by each
    label's positive weight), ``micro`` (one binary problem over all (row, label) pairs), None
    (the (L,) per-label values). Labels whose value is NaN are left out of averages."""
    L = state.layout.num_labels
    if state.arrays["keys"].size == 0:
        return np.full(L, np.nan) if average is None else _NAN
    if average == "micro":
        return fn(label_micro_dist(state))
    values = [fn(label_dist(state, j)) for j in range(L)]
    if average is None:
        return np.array([x.value if isinstance(x, Interval) else x for x in values], dtype=np.float64)
    return _combine(values, state.label_totals() if average == "weighted" else None)


def _configure_multilabel(metric: "RankingMetric") -> None:
    """``average`` for multilabel-indicator tasks (``macro`` default)."""
    for name in ("multi_class", "max_fpr", "pos_label"):
        if name in metric.given and not (name == "max_fpr" and metric.name == "roc_auc"):
            raise ValueError(f"metric {metric.name!r}: {name} does not apply to multilabel tasks")
    avg = metric.p["average"] if "average" in metric.given else "macro"
    if avg not in ML_AVERAGES:
        raise ValueError(f"metric {metric.name!r}: average must be one of {ML_AVERAGES} for multilabel tasks, got {avg!r}")
    if avg == "samples" and metric.p.get("max_fpr") is not None:
        raise ValueError(
            f"metric {metric.name!r}: max_fpr (partial AUC) with average='samples' is not available "
            "(the per-row state keeps each row's full AUC); use average macro, weighted, micro or none"
        )
    if avg == "samples" and metric.p["capacity"] is not None:
        raise ValueError(f"metric {metric.name!r}: capacity does not apply to average='samples' (per-row values are exact)")
    metric.p["average"] = avg


# ---------------------------------------------------------------------------------------------
@public("mergeable_metrics.metrics")
class RankingMetric(Metric):
    """Base of the metrics read from a :class:`~mergeable_metrics.states.score_distribution.ScoreDistributionState`.

    Class attributes (beyond :class:`mergeable_metrics.metrics.base.Metric`):
        exact: False: these metrics are exact only for an exact state; see :meth:`is_exact`.
        exact_when: when the value is exact.
    """

    params: ClassVar[dict[str, Any]] = {"capacity": None, "pos_label": 1}
    tasks = ("binary",)
    exact = False
    exact_when: ClassVar[str] = "the slice's distinct scores fit in the state's capacity (level 0)"

    def configure(self) -> None:
        self.p["capacity"] = check_capacity(self.p["capacity"], self.name)
        pl = self.p["pos_label"]
        if isinstance(pl, bool) or pl not in (0, 1):
            raise ValueError(f"metric {self.name!r}: pos_label must be 0 or 1, got {pl!r}")
        self.p["pos_label"] = int(pl)
        self.configure_metric()

    def configure_metric(self) -> None:
        """Validate metric-specific parameters (subclasses)."""

    def requires(self) -> list[tuple[type[State], Any]]:
        if self.task.kind == "multiclass":
            return [(ClassScoreDistributionState, self.p["capacity"])]
        if self.task.kind == "multilabel":
            if self.p["average"] == "samples":
                return [(LabelRankingSamplesState, None)]
            return [(LabelScoreDistributionState, self.p["capacity"])]
        return [(self._state_type(), self.p["capacity"])]

    def _state_type(self) -> type[ScoreDistributionState]:
        return Class0ScoreDistributionState if self.p["pos_label"] == 0 else ScoreDistributionState

    def needs(self) -> frozenset[str]:
        """Labels and scores: binary (N,) scores (hard 0/1 predictions also do: they are used as
        scores); multiclass an (N, K) score matrix; multilabel an (N, L) score matrix."""
        return frozenset({"target", "score_matrix" if self.task.kind in ("multiclass", "multilabel") else "score"})

    def dist(self, states: dict[str, State]) -> _Dist:
        return _Dist.of(states[self._state_type().kind], self.p["pos_label"])  # type: ignore[arg-type]

    def is_exact(self, states: dict[str, State]) -> bool:
        """True when the value computed from ``states`` is exact (no interval)."""
        if self.task.kind == "multilabel":
            if self.p["average"] == "samples":
                return True
            return states["label_score_distribution"].is_exact  # type: ignore[attr-defined]
        kind = "class_score_distribution" if self.task.kind == "multiclass" else self._state_type().kind
        return states[kind].is_exact  # type: ignore[attr-defined]

    def compute(self, states: dict[str, State]) -> Any:
        if self.task.kind == "multilabel":
            v = self.multilabel(states)
        elif self.task.kind == "multiclass":
            v = multiclass_value(
                states["class_score_distribution"],
                self.value,
                self.p["multi_class"],
                self.p["average"],  # type: ignore[arg-type]
            )
        else:
            v = self.value(self.dist(states))
        if isinstance(v, float) and math.isnan(v):
            _record_undefined()
        return v

    def value(self, d: _Dist) -> Any:
        raise NotImplementedError

    #: the per-row value of :class:`~mergeable_metrics.states.score_distribution.LabelRankingSamplesState` that is
    #: this metric's ``average="samples"`` (multilabel), or None
    row_metric: ClassVar[str | None] = None

    def multilabel(self, states: dict[str, State]) -> Any:
        """The value on multilabel-indicator targets (see :func:`multilabel_value`; ``samples``:
        the weighted mean of the per-row values, rows whose value is undefined left out)."""
        if self.p["average"] == "samples":
            st = states["label_ranking_samples"]
            if st.undefined(self.row_metric):  # type: ignore[attr-defined]
                _record_undefined()
            return st.mean(self.row_metric)  # type: ignore[attr-defined]
        return multilabel_value(states["label_score_distribution"], self.value, self.p["average"])  # type: ignore[arg-type]


def _configure_multiclass(metric: "RankingMetric", allow_ovo: bool) -> None:
    """``multi_class`` / ``average`` for multiclass tasks (binary tasks take neither)."""
    p, given = metric.p, metric.given
    if metric.task.kind == "multilabel":
        return _configure_multilabel(metric)
    if metric.task.kind != "multiclass":
        for name in ("multi_class", "average"):
            if name in given:
                raise ValueError(f"metric {metric.name!r}: {name} applies to multiclass tasks only")
        return
    if "pos_label" in given:
        raise ValueError(f"metric {metric.name!r}: pos_label applies to binary tasks only")
    mc = p["multi_class"] if p["multi_class"] is not None else "ovr"
    if mc not in MULTI_CLASS or (mc == "ovo" and not allow_ovo):
        raise ValueError(f"metric {metric.name!r}: multi_class must be one of {MULTI_CLASS if allow_ovo else ('ovr',)}, got {mc!r}")
    avg = p["average"] if "average" in given else "macro"
    if avg not in MC_AVERAGES:
        user = AVERAGINGS.get(avg) if isinstance(avg, str) else None
        if user is None or user.pooled or avg in AVERAGES or mc != "ovr" or "multiclass" not in user.tasks:
            raise ValueError(f"metric {metric.name!r}: average must be one of {MC_AVERAGES} (or a user Averaging with multi_class='ovr'), got {avg!r}")
        avg = user.name
    if mc == "ovo" and avg not in ("macro", "weighted"):
        raise ValueError(f"metric {metric.name!r}: multi_class='ovo' supports average 'macro' or 'weighted', got {avg!r}")
    p["multi_class"], p["average"] = mc, avg


def _unit(metric: Metric, name: str, lo: float = 0.0, hi: float = 1.0, closed_lo: bool = True) -> float:
    v = metric.p[name]
    try:
        v = float(v)
    except (TypeError, ValueError):
        raise ValueError(f"metric {metric.name!r}: {name} must be a number, got {v!r}") from None
    if not (lo <= v <= hi) or (not closed_lo and v == lo) or math.isnan(v):
        raise ValueError(f"metric {metric.name!r}: {name} must be in {'[' if closed_lo else '('}{lo}, {hi}], got {v!r}")
    return v


class RocAuc(RankingMetric):
    """Area under the ROC curve; ties count one half. Source: ``sklearn.metrics.roc_auc_score``.

    Binary params: ``max_fpr`` (None, or in (0, 1]: scikit-learn's standardized partial AUC, see
    :class:`PartialRocAuc`; also on multilabel tasks, per label then averaged, except
    ``average=samples``; refused on multiclass tasks, as scikit-learn refuses it), ``pos_label``. Multiclass tasks (an (N, K) score matrix) take
    ``multi_class`` (``"ovr"``: each class against the rest, default; ``"ovo"``: Hand & Till's
    average over pairs of present classes) and ``average`` (``macro`` default, ``weighted``,
    ``micro`` and ``none`` for per-class values with ovr), e.g. ``roc_auc@weighted@multi_class=ovo``.
    Multilabel-indicator tasks ((N, L) 0/1 targets and (N, L) scores) take ``average``: ``macro``
    (default: mean of the per-label AUCs of ``y[:, j]`` vs ``score[:, j]``), ``weighted`` (by each
    label's positive weight), ``micro`` (all (row, label) pairs as one binary problem), ``none``
    (the (L,) per-label values) and ``samples`` (each row's AUC over its labels, averaged with the
    sample weights; rows without a positive or a negative label are left out, where
    scikit-learn's mean would be NaN), as ``roc_auc_score`` with indicator targets.
    Value in [0, 1]; NaN when a class is absent or has zero weight; classes (pairs) whose value is
    NaN are left out of averages (scikit-learn would return NaN). One-vs-one accepts weights
    (scikit-learn refuses them): each pair's weight share replaces its prevalence. Compressed
    states: :class:`~mergeable_metrics.metrics.base.Interval` (pairs tied inside a bin are the only unknown; see
    :func:`roc_auc_value`; averages of intervals for multiclass, none for per-class arrays).

    Example:
        >>> from mergeable_metrics import MetricCollection
        >>> mc = MetricCollection("roc_auc", "average_precision")
        >>> mc.update([0, 0, 1, 1], y_score=[0.1, 0.4, 0.35, 0.8])
        >>> mc.compute()
        {'roc_auc': 0.75, 'average_precision': 0.8333333333333333}
    """

    name = "roc_auc"
    full_name = "ROC AUC"
    aliases = ("auc", "auroc", "roc_auc_score")
    params = {**RankingMetric.params, "max_fpr": None, "multi_class": None, "average": None}
    positional = "average"
    tasks = ("binary", "multiclass", "multilabel")
    row_metric = "roc_auc"
    sklearn = "sklearn.metrics.roc_auc_score"

    def configure_metric(self) -> None:
        if self.p["max_fpr"] is not None:
            if self.task.kind == "multiclass":
                raise ValueError(
                    "metric 'roc_auc': max_fpr (partial AUC) is not available for multiclass tasks, as in scikit-learn "
                    "(roc_auc_score refuses it: 'Partial AUC computation not available in multiclass setting'); "
                    "binary and multilabel tasks take it"
                )
            self.p["max_fpr"] = _unit(self, "max_fpr", closed_lo=False)
        _configure_multiclass(self, allow_ovo=True)

    def value(self, d: _Dist) -> Any:
        if self.p["max_fpr"] is None:
            return roc_auc_value(d)
        return partial_roc_auc_value(d, self.p["max_fpr"], True)


class PartialRocAuc(RankingMetric):
    """ROC area for FPR in [0, ``max_fpr``] (required, in (0, 1]).

    ``standardize=True`` (default): McClish-corrected to [0.5, 1] for non-worse-than-random
    models, exactly ``roc_auc_score(max_fpr=...)``; ``standardize=False``: the raw area in
    [0, max_fpr]. NaN when a class is absent.
    """

    name = "partial_roc_auc"
    full_name = "Partial ROC AUC (standardized)"
    aliases = ("partial_auc",)
    params = {**RankingMetric.params, "max_fpr": None, "standardize": True}
    positional = "max_fpr"
    sklearn = "sklearn.metrics.roc_auc_score"

    def configure_metric(self) -> None:
        if self.p["max_fpr"] is None:
            raise ValueError("metric 'partial_roc_auc' needs max_fpr, e.g. partial_roc_auc@max_fpr=0.1")
        self.p["max_fpr"] = _unit(self, "max_fpr", closed_lo=False)
        st = self.p["standardize"]
        if isinstance(st, str):
            st = {"true": True, "false": False, "1": True, "0": False}.get(st.lower(), st)
        if st not in (True, False, 0, 1):
            raise ValueError(f"metric 'partial_roc_auc': standardize must be true or false, got {st!r}")
        self.p["standardize"] = bool(st)
        if not self.p["standardize"]:
            self.bounds = (0.0, self.p["max_fpr"])  # type: ignore[misc]

    def value(self, d: _Dist) -> Any:
        return partial_roc_auc_value(d, self.p["max_fpr"], self.p["standardize"])


class Gini(RankingMetric):
    """Gini coefficient (Somers' D) ``2 * roc_auc - 1`` in [-1, 1]; NaN when a class is absent.
    Source: ``2 * sklearn.metrics.roc_auc_score(...) - 1``."""

    name = "gini"
    full_name = "Gini coefficient"
    aliases = ("gini_coefficient", "somers_d")
    bounds = (-1.0, 1.0)
    sklearn = "sklearn.metrics.roc_auc_score"

    def value(self, d: _Dist) -> Any:
        v = roc_auc_value(d)
        if isinstance(v, Interval):
            return Interval(2 * v.value - 1, 2 * v.lower - 1, 2 * v.upper - 1)
        return 2 * v - 1


class AveragePrecision(RankingMetric):
    """Average precision ``sum_n (R_n - R_{n-1}) P_n`` (step formula, no interpolation).
    Source: ``sklearn.metrics.average_precision_score``. 0.0 with no positives, NaN when empty.
    Multiclass tasks: one-vs-rest per class with ``average`` ``macro`` (default), ``weighted``,
    ``micro`` or ``none``, as scikit-learn with an (N, K) score matrix. Multilabel-indicator tasks:
    per label with ``average`` ``macro`` (default), ``weighted``, ``micro``, ``none`` or
    ``samples`` (each row's AP over its labels, 0.0 for a row without positive labels), as
    ``average_precision_score`` with indicator targets. Compressed states: :class:`~mergeable_metrics.metrics.base.Interval` (see :func:`_ap_bin_terms`)."""

    name = "average_precision"
    full_name = "Average precision"
    aliases = ("ap", "average_precision_score")
    params = {**RankingMetric.params, "multi_class": None, "average": None}
    positional = "average"
    tasks = ("binary", "multiclass", "multilabel")
    row_metric = "average_precision"
    sklearn = "sklearn.metrics.average_precision_score"

    def configure_metric(self) -> None:
        _configure_multiclass(self, allow_ovo=False)

    def value(self, d: _Dist) -> Any:
        return average_precision_value(d)


class PrAucTrapezoid(RankingMetric):
    """Trapezoidal area under the precision-recall curve (optimistic; prefer average precision).
    Source: ``sklearn.metrics.auc(recall, precision)`` on ``precision_recall_curve``. 0.0 with no
    positives, NaN when empty."""

    name = "pr_auc_trapezoid"
    full_name = "PR AUC (trapezoidal)"
    aliases = ("auc_pr_trapezoid",)
    sklearn = "sklearn.metrics.auc"

    def value(self, d: _Dist) -> Any:
        return pr_auc_trapezoid_value(d)


class _AtConstraint(RankingMetric):
    """Best value of one rate among thresholds where another rate meets a required minimum.

    Subclasses name the constraint parameter (``constraint``, also the positional parameter; a
    number in [0, 1], required) and the value function ``fn(dist, minimum)``.
    """

    constraint: ClassVar[str] = ""
    fn: ClassVar[Any] = None

    def configure_metric(self) -> None:
        c = self.constraint
        if self.p[c] is None:
            raise ValueError(f"metric {self.name!r} needs {c}, e.g. {self.name}@{c}=0.8")
        self.p[c] = _unit(self, c)

    def value(self, d: _Dist) -> Any:
        return type(self).fn(d, self.p[self.constraint])


class PrecisionAtRecall(_AtConstraint):
    """Best precision among thresholds with recall >= ``recall`` (required, in [0, 1]),
    e.g. ``precision_at_recall@0.8``. NaN without positives."""

    name = "precision_at_recall"
    full_name = "Precision at recall"
    params = {**RankingMetric.params, "recall": None}
    positional = constraint = "recall"
    fn = staticmethod(precision_at_recall_value)


class RecallAtPrecision(_AtConstraint):
    """Best recall among thresholds with precision >= ``precision`` (required, in [0, 1]); 0.0
    if none reaches it, NaN without positives."""

    name = "recall_at_precision"
    full_name = "Recall at precision"
    params = {**RankingMetric.params, "precision": None}
    positional = constraint = "precision"
    fn = staticmethod(recall_at_precision_value)


class SensitivityAtSpecificity(_AtConstraint):
    """Best sensitivity (TPR) among thresholds with specificity (TNR) >= ``specificity``
    (required, in [0, 1]). NaN when a class is absent."""

    name = "sensitivity_at_specificity"
    full_name = "Sensitivity at specificity"
    aliases = ("tpr_at_tnr",)
    params = {**RankingMetric.params, "specificity": None}
    positional = constraint = "specificity"
    fn = staticmethod(sensitivity_at_specificity_value)


class SpecificityAtSensitivity(_AtConstraint):
    """Best specificity (TNR) among thresholds with sensitivity (TPR) >= ``sensitivity``
    (required, in [0, 1]). NaN when a class is absent."""

    name = "specificity_at_sensitivity"
    full_name = "Specificity at sensitivity"
    aliases = ("tnr_at_tpr",)
    params = {**RankingMetric.params, "sensitivity": None}
    positional = constraint = "sensitivity"
    fn = staticmethod(specificity_at_sensitivity_value)


class KsStatistic(RankingMetric):
    """Kolmogorov-Smirnov statistic ``max_t |TPR(t) - FPR(t)|`` in [0, 1]: the two-sample KS
    distance between positive and negative scores (``scipy.stats.ks_2samp(...).statistic``, here
    with weights). NaN when a class is absent."""

    name = "ks_statistic"
    full_name = "Kolmogorov-Smirnov statistic"
    aliases = ("ks", "kolmogorov_smirnov")
    sklearn = None

    def value(self, d: _Dist) -> Any:
        return ks_value(d)


class _Curve(RankingMetric):
    """Base of the curve metrics: binary tasks give one ``(n_points, 3)`` curve; multiclass tasks
    give every class's one-vs-rest curve (class ``c``'s scores, positives = class ``c``), as a
    ``(K, n_points, 3)`` array whose class ``c`` rows are the binary curve of ``y == c`` and
    ``score[:, c]``, padded to the longest class's curve with rows that are NaN in all three
    columns: drop those (a curve's own rows never are: an absent class's rows have NaN in one
    rate only, as in scikit-learn, and an ``inf`` threshold stays non-NaN in memory; JSON writes
    it as null)."""

    tasks = ("binary", "multiclass")

    def configure_metric(self) -> None:
        self.p["drop_intermediate"] = _flag(self, "drop_intermediate")
        if self.task.kind == "multiclass" and self.p["pos_label"] != 1:
            raise ValueError(f"metric {self.name!r}: pos_label applies to binary tasks only (multiclass curves are one-vs-rest per class)")

    def compute(self, states: dict[str, State]) -> Any:
        if self.task.kind != "multiclass":
            return self.value(self.dist(states))
        state = states["class_score_distribution"]
        curves = [self.value(ovr_dist(state, c)) for c in range(state.layout.num_classes)]  # type: ignore[attr-defined]
        out = np.full((len(curves), max((c.shape[0] for c in curves), default=0), 3), np.nan)
        for i, c in enumerate(curves):
            out[i, : c.shape[0]] = c
        return out


class RocCurve(_Curve):
    """ROC curve as a ``(n_points, 3)`` float64 array of columns ``fpr, tpr, threshold``
    (``sklearn.metrics.roc_curve``: first row ``(0, 0, inf)``, thresholds decreasing; NaN rates
    for an absent class; ``(0, 3)`` when empty). Param ``drop_intermediate`` (default True, as
    scikit-learn). Compressed: the rows are the exact curve's points at bin boundaries, with the
    bin's lowest score as threshold. Multiclass: ``(K, n_points, 3)``, one-vs-rest per class
    (see :class:`_Curve`)."""

    name = "roc_curve"
    full_name = "ROC curve"
    params = {**RankingMetric.params, "drop_intermediate": True}
    higher_is_better = None
    bounds = (-math.inf, math.inf)
    sklearn = "sklearn.metrics.roc_curve"
    nan_entries_undefined = False  # a curve is not per-class: an absent class is reported once

    def value(self, d: _Dist) -> np.ndarray:
        if d.m == 0:
            _record_undefined()
            return np.zeros((0, 3))
        if d.P <= 0 or d.N <= 0:
            _record_undefined()  # NaN rates for the absent class, as scikit-learn
        return np.stack(roc_curve_arrays(d, self.p["drop_intermediate"]), axis=1)


class PrecisionRecallCurve(_Curve):
    """Precision-recall curve as a ``(n_points, 3)`` float64 array of columns ``precision,
    recall, threshold`` in scikit-learn's order (``sklearn.metrics.precision_recall_curve``:
    thresholds increasing, then the final point ``(1, 0)`` whose threshold is ``inf``; ``(0, 3)``
    when empty). Param ``drop_intermediate`` (default False, as scikit-learn). Multiclass:
    ``(K, n_points, 3)``, one-vs-rest per class (see :class:`_Curve`)."""

    name = "precision_recall_curve"
    full_name = "Precision-recall curve"
    aliases = ("pr_curve",)
    params = {**RankingMetric.params, "drop_intermediate": False}
    higher_is_better = None
    bounds = (-math.inf, math.inf)
    sklearn = "sklearn.metrics.precision_recall_curve"
    nan_entries_undefined = False  # a curve is not per-class: an absent class is reported once

    def value(self, d: _Dist) -> np.ndarray:
        if d.m == 0:
            _record_undefined()
            return np.zeros((0, 3))
        precision, recall, thr = pr_curve_arrays(d, self.p["drop_intermediate"])
        return np.stack([precision, recall, np.r_[thr, np.inf]], axis=1)


def _flag(metric: Metric, name: str) -> bool:
    v = metric.p[name]
    if isinstance(v, str):
        v = {"true": True, "false": False, "1": True, "0": False}.get(v.lower(), v)
    if v not in (True, False, 0, 1) or isinstance(v, float):
        raise ValueError(f"metric {metric.name!r}: {name} must be true or false, got {v!r}")
    return bool(v)
