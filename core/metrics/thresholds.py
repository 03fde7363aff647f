"""Threshold choice from one score distribution: the best threshold, thresholds at a target, and
any confusion metric at a list of thresholds.

Every metric here reads the binary :class:`~mergeable_metrics.states.score_distribution.ScoreDistributionState` that
ROC AUC and the curves share (:mod:`mergeable_metrics.metrics.ranking`), so a plan with ``roc_auc``, ``best_threshold``
and ``metric_at_thresholds`` folds one state per slice. Predictions are ``score >= t``
(scikit-learn's rule in ``roc_curve`` and ``metric_at_thresholds``), also in a task whose
``threshold_rule`` is ``">"`` (that rule applies to the metrics at the task's ``threshold``).

Operating points: "predict nothing" (threshold ``inf``) and, for every distinct score ``s`` (every
bin of a compressed state, at its lowest score), "predict positive every score >= s", in
descending threshold order. Ties between operating points of equal value go to the **highest**
threshold (the fewest positive predictions), as ``np.argmax`` over scikit-learn's descending
``roc_curve`` order. ``best_threshold`` compares its criteria exactly (rationals of the counts, as
exact prefix sums of the bins' weights, and the parameters), so a tie is decided by the counts,
never by float rounding (Youden's J of 1/3 at 1.0, 0.6 and 0.2 picks 1.0).

* **exact state**: the values are exact (the brute force over every distinct score, tested
  against scikit-learn).
* **compressed state**: bin boundaries are exact operating points, so the reported value is the
  best boundary; the examples inside one bin are in an unknown order, so inside bin ``b`` an
  operating point has ``tp`` in ``[A, A + p]`` and ``fp`` in ``[B, B + q]`` (``A``/``B``: the
  positive/negative weight above the bin, ``p``/``q``: the bin's own). Every criterion here is
  increasing in ``tp`` and decreasing in ``fp`` (the cost the other way round), so
  ``crit(A + p, B)`` bounds it over the bin: the exact best value lies in
  ``[best boundary, max(best boundary, max_b crit(A + p, B))]``, and the exact best threshold lies
  in the score range of the bins whose bound reaches the best boundary value. Both come as
  :class:`~mergeable_metrics.metrics.base.Interval` (``SliceResult.bounds``).

Metrics:
    ``best_threshold@criterion=C``: the threshold maximising ``C``: ``f1``, ``fbeta`` (``beta=``),
        ``youden`` (Youden's J ``tpr - fpr``) or ``cost`` (minimising ``cost_fp * fp + cost_fn *
        fn``; ``cost_fp=``, ``cost_fn=``, default 1). ``inf`` when predicting nothing is best.
    ``best_threshold_score@criterion=C``: the criterion's value there (scikit-learn's
        ``TunedThresholdClassifierCV.best_score_``); for ``cost`` the *mean* cost per unit of
        weight, ``(cost_fp * fp + cost_fn * fn) / (P + N)``, lower is better.
    ``threshold_at_recall@recall=R``: the threshold of ``precision_at_recall@recall=R`` (the best
        precision among thresholds with recall >= R).
    ``threshold_at_precision@precision=Q``: the threshold of ``recall_at_precision@precision=Q``
        (``inf``, predicting nothing, when no threshold reaches ``Q``: ``recall_at_precision`` is
        0.0 there).
    ``metric_at_thresholds@metric=M[@thresholds=t1|t2|...]``: scikit-learn 1.9's
        ``metric_at_thresholds(y_true, y_score, metric_func)`` for any binary confusion metric
        ``M`` (``f1``, ``precision``, ``mcc``, ``balanced_accuracy``, ...). A ``(n, 4)`` array of
        columns ``threshold, value, lower, upper``: by default at every operating point except
        "predict nothing" (scikit-learn's thresholds, descending); with ``thresholds=`` at those
        (in the order given). ``lower``/``upper`` equal ``value`` where it is exact; a threshold
        strictly inside a bin of a compressed state gets the metric's range over the bin's
        ``(tp, fp)`` box (certified for the metrics monotone in ``tp`` and ``fp``, the metric's
        declared bounds otherwise).

Undefined: NaN (``null`` in JSON) with no examples; F-scores without positives; Youden's J
without one of the classes; ``threshold_at_*`` without positives.
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import partial
from typing import Any, ClassVar

import numpy as np

from mergeable_metrics._util.limits import MAX_BETA, MAX_THRESHOLDS, check_at_most
from mergeable_metrics.metrics.base import Interval, Metric, recording_undefined, resolve
from mergeable_metrics.metrics.ranking import RankingMetric, _AtConstraint, _Dist, _record_undefined
from mergeable_metrics.states.score_distribution import bin_upper_scores
from mergeable_metrics.states.base import BinaryConfusionState, ExampleCountState

_SLACK = 1e-12
_NAN = float("nan")
CRITERIA = ("f1", "fbeta", "youden", "cost")

# binary confusion metrics that are monotone in tp and in fp separately (fixed P, N): their range
# over a box of (tp, fp) is reached at its corners
_MONOTONE = frozenset(
    {"precision", "recall", "f1", "fbeta", "accuracy", "specificity", "npv", "fpr", "fnr", "tp", "fp", "tn", "fn",
     "balanced_accuracy", "iou", "dice", "fowlkes_mallows", "prevalence"}
)  # fmt: skip


def _points(d: _Dist) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(tp, fp, threshold)`` at the ``m + 1`` operating points, descending thresholds: predict
    nothing (``inf``), then down to and including each bin."""
    return np.r_[0.0, d.tps], np.r_[0.0, d.fps], np.r_[np.inf, d.thresholds]


def _uppers(d: _Dist) -> np.ndarray:
    """(m,) highest score of each bin, descending (equal to the thresholds in an exact state)."""
    return bin_upper_scores(d.keys, d.level)[::-1]


def criterion_values(criterion: str, tp: np.ndarray, fp: np.ndarray, P: float, N: float, beta: float = 1.0,
                     cost_fp: float = 1.0, cost_fn: float = 1.0) -> np.ndarray:  # fmt: skip
    """The criterion at operating points ``(tp, fp)``, oriented so that higher is better (the cost
    is negated); NaN where undefined.

    ``f1`` / ``fbeta``: ``(1 + b^2) tp / (b^2 P + tp + fp)`` (scikit-learn's formula; ``beta=inf``
    is recall; NaN without positives); ``youden``: ``tp / P - fp / N``; ``cost``: ``-(cost_fp fp + cost_fn (P - tp))``.
    """
    tp, fp = np.asarray(tp, dtype=np.float64), np.asarray(fp, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        if criterion in ("f1", "fbeta"):
            b = 1.0 if criterion == "f1" else beta
            if P <= 0:  # no positives: every F-score is 0 or undefined, no threshold is better
                return np.full(tp.shape, np.nan)
            if math.isinf(b):
                return tp / P
            b2 = b * b
            return (1 + b2) * tp / (b2 * P + tp + fp)
        if criterion == "youden":
            if P <= 0 or N <= 0:
                return np.full(tp.shape, np.nan)
            return tp / P - fp / N
    return -(cost_fp * fp + cost_fn * (P - tp))


def _argbest(values: np.ndarray) -> int:
    """First index of the maximum (the highest threshold among ties); -1 if all are NaN."""
    if values.size == 0 or np.all(np.isnan(values)):
        return -1
    return int(np.nanargmax(values))


def _exact_prefix(w: np.ndarray) -> Any:
    """The exact prefix sums ``[0, w0, w0 + w1, ...]`` of float weights (``>= 0``), indexable
    (``prefix[j]``: a Fraction), or None when the float ``cumsum`` already is exact (integer
    weights below 2**53)."""
    if np.all(w == np.floor(w)) and float(np.sum(w)) < 2.0**53:
        return None
    mant, exp = np.frexp(w)  # w = mant * 2**exp: integers n * 2**k with n < 2**53
    n, k = (mant * 2.0**53).astype(np.int64), exp.astype(np.int64) - 53
    k_min = int(k[n != 0].min()) if np.any(n != 0) else 0
    shift = np.where(n != 0, k - k_min, 0)
    if 53 + int(shift.max(initial=0)) + int(w.shape[0]).bit_length() < 63:  # int64 sums cannot overflow
        ints = np.r_[0, np.cumsum(n << shift)]
        unit = Fraction(2) ** k_min
        return _Scaled(ints, unit)
    big = n.astype(object) << shift.astype(object)  # wide exponents: Python integers
    return _Scaled(np.r_[np.array([0], dtype=object), np.cumsum(big)], Fraction(2) ** k_min)


class _Scaled:
    """Exact prefix sums held as integer multiples (int64 or Python ints) of one power of two."""

    def __init__(self, ints: np.ndarray, unit: Fraction):
        self.ints, self.unit = ints, unit

    def __getitem__(self, j: int) -> Fraction:
        return int(self.ints[j]) * self.unit


def exact_criterion(criterion: str, tp: Any, fp: Any, P: Any, N: Any, beta: float = 1.0, cost_fp: float = 1.0,
                    cost_fn: float = 1.0) -> Fraction | None:  # fmt: skip
    """:func:`criterion_values` at one operating point as an exact rational (the counts and the
    parameters are read as the exact numbers they are); None where undefined."""
    tp, fp, P, N = (Fraction(x) for x in (tp, fp, P, N))
    if criterion in ("f1", "fbeta"):
        b = 1.0 if criterion == "f1" else beta
        if P <= 0:
            return None
        if math.isinf(b):
            return tp / P
        b2 = Fraction(b) ** 2
        den = b2 * P + tp + fp
        return None if den == 0 else (1 + b2) * tp / den
    if criterion == "youden":
        return None if P <= 0 or N <= 0 else tp / P - fp / N
    return -(Fraction(cost_fp) * fp + Fraction(cost_fn) * (P - tp))


def _argbest_exact(d: _Dist, criterion: str, v: np.ndarray, kw: dict[str, float]) -> tuple[int, Fraction | None, Fraction]:
    """``(index, exact value, exact total weight)`` of the best operating point, comparing the criterion exactly on
    the counts (``tp``, ``fp`` as exact prefix sums of the bins' weights), the highest threshold
    among exact ties; index -1 and value None when every point is undefined. The float values ``v`` only
    pick the candidates: the points within their rounding error of the float maximum."""
    i = _argbest(v)
    if i < 0:
        return -1, None, Fraction(0)
    top = float(v[i])
    scale = 1.0 + abs(top) + (kw.get("cost_fp", 1.0) * d.N + kw.get("cost_fn", 1.0) * d.P if criterion == "cost" else 1.0)
    tol = (d.m + 16) * 2.0**-48 * scale  # far above the float error of the sums and the formula
    cand = np.flatnonzero(v >= top - tol)
    tps, fps = _exact_prefix(d.pos), _exact_prefix(d.neg)
    P = tps[-1] if tps is not None else d.P
    N = fps[-1] if fps is not None else d.N
    tp, fp, _ = _points(d)
    best_i, best = -1, None
    for j in cand:  # ascending index: descending thresholds, so a tie keeps the highest
        x = exact_criterion(criterion, tp[j] if tps is None else tps[j], fp[j] if fps is None else fps[j], P, N, **kw)
        if x is not None and (best is None or x > best):
            best_i, best = int(j), x
    return best_i, best, Fraction(P) + Fraction(N)


def _threshold_interval(value: float, lows: np.ndarray, highs: np.ndarray) -> Interval:
    """``value`` with the range ``[min(lows), max(highs)]`` of the candidate bins' scores."""
    return Interval(value, float(np.min(np.r_[value, lows])), float(np.max(np.r_[value, highs])))


def best_threshold_values(d: _Dist, criterion: str, per_weight: bool = False, **kw: float) -> tuple[float | Interval, float | Interval]:
    """``(threshold, criterion value)`` of the best operating point (value oriented as
    :func:`criterion_values`, i.e. the negated total cost for ``cost``; ``per_weight``: divided by
    the total weight ``P + N``); intervals for a compressed state (see the module docstring). NaN
    when undefined. The criterion is compared exactly on the counts, so exact ties go to the
    highest threshold whatever the float rounding, and the value is its correctly rounded float."""
    if d.m == 0:
        return _NAN, _NAN
    tp, fp, thr = _points(d)
    v = criterion_values(criterion, tp, fp, d.P, d.N, **kw)
    i, exact, weight = _argbest_exact(d, criterion, v, kw)
    if i < 0 or exact is None or per_weight and weight <= 0:
        return _NAN, _NAN
    best, t, total = float(exact), float(thr[i]), d.P + d.N
    if d.exact:
        return t, float(exact / weight) if per_weight else best
    A, B = d.before()
    ub = criterion_values(criterion, A + d.pos, B, d.P, d.N, **kw)  # (m,) per bin, descending
    cand = ub >= best - _SLACK * max(1.0, abs(best))
    lows, highs = d.thresholds[cand], _uppers(d)[cand]
    if i == 0:  # predicting nothing is among the best (the highest threshold wins a tie)
        highs = np.r_[highs, np.inf]
    top = max(best, float(np.nanmax(ub))) if np.any(~np.isnan(ub)) else best
    if per_weight:
        return _threshold_interval(t, lows, highs), Interval(best / total, best / total, top / total)
    return _threshold_interval(t, lows, highs), Interval(best, best, top)


def threshold_at_target(d: _Dist, minimum: float, target: str) -> float | Interval:
    """The threshold of ``precision_at_recall`` (``target="recall"``: best precision among
    boundaries with recall >= minimum) or of ``recall_at_precision`` (``target="precision"``: best
    recall among boundaries with precision >= minimum); the highest threshold among ties; ``inf``
    (predict nothing) when no threshold meets the precision target. NaN without positives.
    Compressed: the score range of the bins inside which a point could beat the reported one
    (bounds of :mod:`mergeable_metrics.metrics.ranking`)."""
    if d.P <= 0:
        return _NAN
    tp, fp, thr = d.tps, d.fps, d.thresholds
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = tp / (tp + fp)
    recall = tp / d.P
    if target == "recall":
        ok, objective = recall >= minimum, precision
    else:
        ok, objective = precision >= minimum, recall
    if ok.any():
        i = _argbest(np.where(ok, objective, -np.inf))
        best, t = float(objective[i]), float(thr[i])
    else:  # only the precision target can be out of reach: predict nothing, recall 0
        best, t = 0.0, math.inf
    if d.exact:
        return t
    A, B = d.before()
    with np.errstate(divide="ignore", invalid="ignore"):
        p_hi = np.nan_to_num((A + d.pos) / (A + B + d.pos))  # the best precision inside each bin
    r_hi = (A + d.pos) / d.P  # the best recall inside each bin
    if target == "recall":
        cand = (r_hi >= minimum) & (p_hi >= best - _SLACK)
    else:
        cand = (p_hi >= minimum) & (r_hi >= best - _SLACK)
    if not cand.any():
        return t
    return _threshold_interval(t, thr[cand], _uppers(d)[cand])


class _ThresholdMetric(RankingMetric):
    """Binary metrics of the score distribution's operating points (predictions ``score >= t``,
    as scikit-learn's curves, whatever the task's ``threshold_rule``)."""

    higher_is_better = None
    bounds = (-math.inf, math.inf)


class _Criterion(_ThresholdMetric):
    """``criterion`` (positional), ``beta``, ``cost_fp``, ``cost_fn``."""

    params = {**RankingMetric.params, "criterion": "f1", "beta": 1.0, "cost_fp": 1.0, "cost_fn": 1.0}
    positional = "criterion"
    output: ClassVar[int] = 0

    def configure_metric(self) -> None:
        p = self.p
        if p["criterion"] not in CRITERIA:
            raise ValueError(f"metric {self.name!r}: criterion must be one of {CRITERIA}, got {p['criterion']!r}")
        for name in ("beta", "cost_fp", "cost_fn"):
            if name in self.given:
                used = name == "beta" and p["criterion"] == "fbeta" or name != "beta" and p["criterion"] == "cost"
                if not used:
                    raise ValueError(f"metric {self.name!r}: {name} does not apply to criterion={p['criterion']!r}")
            try:
                v = float(p[name])
            except (TypeError, ValueError):
                raise ValueError(f"metric {self.name!r}: {name} must be a number, got {p[name]!r}") from None
            if math.isnan(v) or v < 0 or (name != "beta" and math.isinf(v)):
                raise ValueError(f"metric {self.name!r}: {name} must be {'>= 0' if name == 'beta' else 'finite and >= 0'}, got {p[name]!r}")
            if name == "beta" and not math.isinf(v):
                check_at_most(v, MAX_BETA, "a finite beta", f"metric {self.name!r}")
            p[name] = v
        if p["criterion"] == "cost" and p["cost_fp"] == 0 and p["cost_fn"] == 0:
            raise ValueError(f"metric {self.name!r}: cost_fp and cost_fn are both 0")

    def _show_positional(self) -> bool:
        return True

    def _kw(self) -> dict[str, float]:
        return {"beta": self.p["beta"], "cost_fp": self.p["cost_fp"], "cost_fn": self.p["cost_fn"]}


class BestThreshold(_Criterion):
    """The threshold maximising F1 (default), F-beta, Youden's J or minimising a cost:
    ``best_threshold@criterion=youden``, ``best_threshold@criterion=cost@cost_fp=1@cost_fn=5``.
    Predictions ``score >= threshold``; ties go to the highest threshold; ``inf`` when predicting
    nothing is best. Reference: the brute force of ``sklearn.metrics.metric_at_thresholds`` /
    ``roc_curve`` over every distinct score. Compressed: the certified range of the exact best
    threshold."""

    name = "best_threshold"
    full_name = "Best threshold"
    aliases = ("optimal_threshold",)
    reference = "argmax over sklearn.metrics.metric_at_thresholds (roc_curve for youden)"

    def value(self, d: _Dist) -> Any:
        return best_threshold_values(d, self.p["criterion"], **self._kw())[0]


class BestThresholdScore(_Criterion):
    """The criterion's value at :class:`BestThreshold`: the maximum F1 / F-beta / Youden's J, or
    the minimum mean cost ``(cost_fp fp + cost_fn fn) / weight`` (scikit-learn's
    ``TunedThresholdClassifierCV.best_score_``). Compressed: certified bounds."""

    name = "best_threshold_score"
    full_name = "Best threshold score"
    aliases = ("max_criterion",)
    reference = "max over sklearn.metrics.metric_at_thresholds"

    def value(self, d: _Dist) -> Any:
        cost = self.p["criterion"] == "cost"
        v = best_threshold_values(d, self.p["criterion"], per_weight=cost, **self._kw())[1]
        if not cost:
            return v
        if isinstance(v, Interval):
            return Interval(-v.value, -v.upper, -v.lower)
        return -v if not math.isnan(v) else _NAN


class ThresholdAtRecall(_AtConstraint):
    """The threshold of ``precision_at_recall@recall=R``: the best precision among thresholds with
    recall >= ``recall`` (required, in [0, 1]), the highest threshold among ties; NaN without
    positives."""

    name = "threshold_at_recall"
    full_name = "Threshold at recall"
    params = {**RankingMetric.params, "recall": None}
    positional = constraint = "recall"
    reference = "sklearn.metrics.precision_recall_curve"
    higher_is_better = None
    bounds = (-math.inf, math.inf)
    fn = staticmethod(partial(threshold_at_target, target="recall"))


class ThresholdAtPrecision(_AtConstraint):
    """The threshold of ``recall_at_precision@precision=Q``: the best recall among thresholds with
    precision >= ``precision`` (required, in [0, 1]), the highest threshold among ties; ``inf``
    (predict nothing) if no threshold reaches it; NaN without positives."""

    name = "threshold_at_precision"
    full_name = "Threshold at precision"
    params = {**RankingMetric.params, "precision": None}
    positional = constraint = "precision"
    reference = "sklearn.metrics.precision_recall_curve"
    higher_is_better = None
    bounds = (-math.inf, math.inf)
    fn = staticmethod(partial(threshold_at_target, target="precision"))


def _thresholds_param(metric: Metric, v: Any) -> tuple[float, ...] | None:
    """``thresholds``: None, a number, a sequence of numbers or the text ``"t1|t2|..."``."""
    if v is None:
        return None
    if isinstance(v, str):
        v = [x for x in v.split("|")]
    elif not isinstance(v, (list, tuple, np.ndarray)):
        v = [v]
    out = []
    for x in v:
        try:
            t = float(x)
        except (TypeError, ValueError):
            raise ValueError(f"metric {metric.name!r}: thresholds must be numbers separated by '|', got {x!r}") from None
        if not math.isfinite(t):
            raise ValueError(f"metric {metric.name!r}: thresholds must be finite, got {x!r}")
        out.append(t)
    if not out:
        raise ValueError(f"metric {metric.name!r}: thresholds is empty")
    check_at_most(len(out), MAX_THRESHOLDS, "the number of thresholds", f"metric {metric.name!r}")
    return tuple(out)


class MetricAtThresholds(_ThresholdMetric):
    """Any binary confusion metric at every threshold, as scikit-learn 1.9's
    ``metric_at_thresholds``: a ``(n, 4)`` array of columns ``threshold, value, lower, upper``.

    Params: ``metric`` (positional; a metric name reading the binary confusion counts, through
    their ``counts`` / ``confusion_matrix``, default ``f1``), ``thresholds`` (default: every distinct score, descending, as scikit-learn; or
    ``t1|t2|...`` / a list in Python, in the order given), and ``beta`` / ``zero_division``
    passed to the metric. ``lower``/``upper`` equal ``value`` where it is exact (always for an
    exact state and at the default thresholds); see the module docstring for compressed states.
    ``(0, 4)`` for an empty slice.
    """

    name = "metric_at_thresholds"
    full_name = "Metric at thresholds"
    params = {**RankingMetric.params, "metric": "f1", "thresholds": None, "beta": None, "zero_division": None}
    positional = "metric"
    sklearn = "sklearn.metrics.metric_at_thresholds"
    nan_entries_undefined = False  # NaN values are reported once, as the undefined metric

    def configure_metric(self) -> None:
        p = self.p
        if not isinstance(p["metric"], str):
            raise ValueError(f"metric {self.name!r}: metric must be a metric name, got {p['metric']!r}")
        self.p["thresholds"] = _thresholds_param(self, p["thresholds"])
        inner_params = {k: p[k] for k in ("beta", "zero_division") if k in self.given}
        try:
            inner = resolve(p["metric"], self.task)
            inner = type(inner)(self.task, **{**inner.given, **inner_params})
        except ValueError as e:
            raise ValueError(f"metric {self.name!r}: {e}") from None
        reads = {c for c, _ in inner.requires()} - {ExampleCountState}
        if reads != {BinaryConfusionState}:
            raise ValueError(f"metric {self.name!r}: {p['metric']!r} does not read binary confusion counts (it reads {sorted(c.kind for c in reads)})")
        self._inner = inner
        if np.ndim(self._confusion_value(1.0, 0.0, 1.0, 1.0)) != 0:
            raise ValueError(f"metric {self.name!r}: {p['metric']!r} is not a scalar metric")
        self._monotone = inner.name in _MONOTONE

    def _confusion_value(self, tp: float, fp: float, tn: float, fn: float) -> Any:
        with recording_undefined():  # per-threshold events are not the result's: NaN values are recorded once
            return self._inner.compute({"binary_confusion": _CountsAt(float(tp), float(fp), float(tn), float(fn))})

    def _value_at(self, tp: float, fp: float, d: _Dist) -> float:
        return float(self._confusion_value(tp, fp, d.N - fp, d.P - tp))

    def value(self, d: _Dist) -> np.ndarray:
        if d.m == 0:
            _record_undefined()
            return np.zeros((0, 4))
        if self.p["thresholds"] is None:
            thr, tp_lo, fp_lo = d.thresholds, d.tps, d.fps
            tp_hi, fp_hi = tp_lo, fp_lo
        else:
            thr = np.asarray(self.p["thresholds"], dtype=np.float64)
            tp_lo, fp_lo, tp_hi, fp_hi = _counts_at(d, thr)
        n = thr.shape[0]
        out = np.empty((n, 4))
        out[:, 0] = thr
        lo_b, hi_b = type(self._inner).bounds
        for i in range(n):
            v = self._value_at(tp_lo[i], fp_lo[i], d)
            if tp_lo[i] == tp_hi[i] and fp_lo[i] == fp_hi[i]:
                out[i, 1:] = v
                continue
            if self._monotone:
                corners = [self._value_at(a, b, d) for a in (tp_lo[i], tp_hi[i]) for b in (fp_lo[i], fp_hi[i])]
                lo, hi = float(np.nanmin(corners)), float(np.nanmax(corners))
            else:
                lo, hi = lo_b, hi_b
            mid = self._value_at((tp_lo[i] + tp_hi[i]) / 2, (fp_lo[i] + fp_hi[i]) / 2, d)
            out[i, 1:] = (min(max(mid, lo), hi), lo, hi)
        if np.isnan(out[:, 1]).any():
            _record_undefined()
        return out


class _CountsAt:
    """The binary confusion counts of one operating point, read as a
    :class:`~mergeable_metrics.states.base.BinaryConfusionState` at the metric's threshold (its ``counts`` and
    ``confusion_matrix``): a state object per threshold would cost more than the metric."""

    kind = "binary_confusion"
    confusion_matrix = BinaryConfusionState.confusion_matrix

    def __init__(self, tp: float, fp: float, tn: float, fn: float):
        self._counts = (tp, fp, tn, fn)

    def counts(self, threshold: float) -> tuple[float, float, float, float]:
        return self._counts


def _counts_at(d: _Dist, thr: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(tp_lo, fp_lo, tp_hi, fp_hi)`` of predictions ``score >= t`` at each threshold: bins whose
    lowest score is >= t are in, bins whose highest score is < t out, and the one bin that holds
    ``t`` strictly above its lowest score (compressed states only) is anywhere between."""
    low, high = d.thresholds[::-1], _uppers(d)[::-1]  # ascending
    pos, neg = d.pos[::-1], d.neg[::-1]
    # suffix sums over ascending bins: weight in bins >= j
    tp_suffix, fp_suffix = np.r_[np.cumsum(pos[::-1])[::-1], 0.0], np.r_[np.cumsum(neg[::-1])[::-1], 0.0]
    first_in = np.searchsorted(low, thr, side="left")  # first bin with lowest score >= t
    first_touch = np.searchsorted(high, thr, side="left")  # first bin with highest score >= t
    return tp_suffix[first_in], fp_suffix[first_in], tp_suffix[first_touch], fp_suffix[first_touch]
