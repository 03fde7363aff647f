"""Aggregating the results of several runs, cross-validation folds or seeds: :func:`aggregate`.

Four registered aggregators (``mergeable_metrics.aggregation.AGGREGATORS``), per slice and metric:

* ``pooled``: merge the runs' *states* and compute each metric once over all examples (the only
  method that gives the metric of the union; it needs states: accumulators with their
  ``evaluation=``, :class:`~mergeable_metrics.collection.plan.MetricCollection` objects, or state tuples with ``plan=``).
* ``mean``: the unweighted mean of the runs' values, their sample standard deviation
  (``ddof=1``) and a **Student-t** interval ``mean +- t_{k-1} * std / sqrt(k)`` over ``k`` runs.
* ``fixed_effect``: the inverse-variance weighted mean ``sum(w y) / sum(w)``, ``w = 1 / v``, with
  the normal interval ``mu +- z / sqrt(sum(w))`` and Cochran's ``Q``.
* ``random_effects``: DerSimonian and Laird (1986): between-run variance
  ``tau2 = max(0, (Q - (k - 1)) / (sum(w) - sum(w^2) / sum(w)))``, weights ``1 / (v + tau2)``,
  normal interval, and Higgins' ``I2 = max(0, (Q - (k - 1)) / Q)``; with
  ``paule_mandel_heterogeneity=True`` Paule and Mandel's ``tau2``, with
  ``hksj_sampling_distribution=True`` the Hartung-Knapp-Sidik-Jonkman t interval; Bowden's
  generalised ``i2_generalised`` with ``within_variance`` and ``between_variance``.

Intervals are clipped to the metric's ``bounds``. Runs given as accumulators with their
``evaluation=`` are meta-analysed through their Dirichlet posteriors (see :func:`aggregate`).

The per-run variance ``v`` of ``fixed_effect`` and ``random_effects`` comes from the run's
confidence interval when it has one (``SliceResult.ci``: ``v = ((upper - lower) / (2 z))^2``
at the run's ``ci`` level), else from an analytic variance: ``p (1 - p) / n`` for proportions
(accuracy over the slice's rows; binary precision, recall, specificity, NPV, FPR, FNR and
prevalence over their denominators, read from the run's ``tp``/``fp``/``tn``/``fn`` values), and
Hanley and McNeil (1982) for binary ROC AUC (positives and negatives from the same counts or from
``prevalence``). Otherwise :func:`aggregate` raises ``ValueError`` naming the metric.

Users add aggregators by subclassing :class:`Aggregator` with a ``name`` (as metrics subclass
:class:`~mergeable_metrics.metrics.base.Metric`), modelled on prob_conf_mat's ``ExperimentAggregator``.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import warnings
from dataclasses import dataclass, field
from typing import Any, ClassVar, Iterable, Mapping, Sequence

import numpy as np

from mergeable_metrics._util.public import public
from mergeable_metrics.metrics.base import REGISTRY, register_named
from mergeable_metrics.collection.plan import MetricCollection, Plan
from mergeable_metrics.collection.tracker import merge
from mergeable_metrics.uncertainty.intervals import draw_seed, normal_quantile
from mergeable_metrics._util.quantiles import t_ppf
from mergeable_metrics.results.results import Results, SliceResult, jsonable, window_bound, window_label
from mergeable_metrics.slicing.assign import slice_name

AGGREGATORS: dict[str, type["Aggregator"]] = {}


# ---------------------------------------------------------------------------------------------
def check_level(level: Any) -> float:
    """``level`` as a float in (0, 1).

    Raises:
        ValueError: not a number strictly between 0 and 1.
    """
    try:
        lv = float(level)
    except (TypeError, ValueError):
        raise ValueError(f"level must be a number in (0, 1), got {level!r}") from None
    if not 0.0 < lv < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    return lv


# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Aggregate:
    """One aggregated value.

    Attributes:
        value: the aggregate (NaN when no run has a finite value).
        ci: ``(lower, upper)`` at ``level`` (NaN bounds when undefined, e.g. ``mean`` of one run).
        details: method details, JSON-ready: ``runs`` (how many runs entered), and per method
            ``std``, ``se``, ``interval`` (``"t"`` or ``"normal"``), ``df``, ``weights`` (normalised,
            in run order), ``q``, ``tau2``, ``i2``, ``variance_source`` (per run: ``"ci"`` or
            the analytic formula's name).
    """

    value: float
    ci: tuple[float, float]
    details: dict[str, Any] = field(default_factory=dict)
    #: (num_samples,) pooled draws (runs aggregated from posterior samples), else None
    samples: np.ndarray | None = None


def truncated_draws(loc: float, scale: float, bounds: tuple[float, float], num: int, rng: np.random.Generator, df: int | None = None) -> np.ndarray:
    """(num,) draws of ``loc + scale * Z`` (Z standard normal, or Student-t with ``df``) truncated
    to ``bounds`` (rejection; a point mass at ``loc`` clipped into bounds when ``scale`` is 0 or
    the bounds hold almost no mass)."""
    lo, hi = float(bounds[0]), float(bounds[1])
    if not (scale > 0 and math.isfinite(scale)):
        return np.full(num, min(max(loc, lo), hi))
    out = np.empty(0)
    for _ in range(100):
        z = rng.standard_t(df, num) if df else rng.standard_normal(num)
        x = loc + scale * z
        out = np.concatenate([out, x[(x >= lo) & (x <= hi)]])
        if out.size >= num:
            return out[:num]
    return np.clip(np.concatenate([out, np.full(num - out.size, loc)]), lo, hi)


def metric_bounds(key: str) -> tuple[float, float]:
    """The ``bounds`` of the metric class of a key (``(-inf, inf)`` for an unknown name)."""
    name, _ = _canonical(key)
    cls = REGISTRY.get(name)
    return tuple(float(b) for b in cls.bounds) if cls is not None else (-math.inf, math.inf)  # type: ignore[return-value]


def _clip_ci(ci: tuple[float, float], bounds: tuple[float, float]) -> tuple[float, float]:
    lo, hi = ci
    return (min(max(lo, bounds[0]), bounds[1]) if math.isfinite(lo) else lo, max(min(hi, bounds[1]), bounds[0]) if math.isfinite(hi) else hi)


class Aggregator:
    """Base class of the ways to combine the runs' values. Subclasses set ``name`` to register.

    Class attributes:
        name: canonical name (registry key, ``aggregate(method=name)``).
        aliases: other names that find it; a clash with a registered name raises at definition.
        full_name: human-readable name for tables and reports.
        needs_variance: True: :meth:`aggregate` receives each run's variance.
        needs_states: True: the runs' states are merged instead (``pooled``); :meth:`aggregate`
            is not called.

    Subclasses implement :meth:`aggregate` (from each run's value and variance) or, as
    prob_conf_mat's ``ExperimentAggregator``, :meth:`aggregate_samples` (from each run's posterior
    samples: a (num_samples, num_experiments) array, the metric's ``bounds`` and a seeded
    ``rng``; it returns (num_samples,) pooled draws). Parameters are keyword arguments of
    ``__init__``: ``aggregate(runs, "random_effects", paule_mandel_heterogeneity=True)``.
    """

    name: ClassVar[str] = ""
    aliases: ClassVar[tuple[str, ...]] = ()
    full_name: ClassVar[str] = ""
    needs_variance: ClassVar[bool] = False
    needs_states: ClassVar[bool] = False

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        register_named(AGGREGATORS, cls, "aggregator")

    def aggregate(self, values: np.ndarray, variances: np.ndarray | None, level: float) -> Aggregate:
        """Combine ``values``, the (k,) finite values of one metric in one slice over ``k >= 1``
        runs (``variances``: their (k,) sampling variances when :attr:`needs_variance`, else None)
        into an :class:`Aggregate` with an interval at ``level``."""
        raise NotImplementedError

    def aggregate_samples(self, samples: np.ndarray, bounds: tuple[float, float], rng: np.random.Generator) -> np.ndarray:
        """(num_samples,) pooled draws from (num_samples, num_experiments) posterior ``samples``
        (override it for an aggregator of samples; the built-ins pool the runs' posterior means
        and variances with :meth:`aggregate` instead and draw from the pooled normal, or
        Student-t, truncated to ``bounds``)."""
        raise NotImplementedError

    def from_samples(self, samples: np.ndarray, bounds: tuple[float, float], rng: np.random.Generator, level: float) -> Aggregate:
        """The :class:`Aggregate` of (num_samples, num_experiments) posterior samples: a
        subclass's :meth:`aggregate_samples` draws summarised (mean, equal-tailed interval at
        ``level`` clipped to ``bounds``); else :meth:`aggregate` of the runs' posterior means and variances (``ddof=1``;
        ``variance_source`` ``"posterior"``), its interval clipped to ``bounds``, with pooled draws
        of its normal (``interval == "t"``: Student-t) truncated to ``bounds``."""
        x = np.asarray(samples, dtype=np.float64)
        if type(self).aggregate_samples is not Aggregator.aggregate_samples:
            draws = np.asarray(self.aggregate_samples(x, bounds, rng), dtype=np.float64).reshape(-1)
            ok = draws[np.isfinite(draws)]
            if not ok.size:
                return Aggregate(float("nan"), _NAN_CI, {"runs": x.shape[1], "interval": "samples"}, draws)
            lo, hi = np.quantile(ok, [(1 - level) / 2, (1 + level) / 2])
            return Aggregate(float(np.mean(ok)), _clip_ci((float(lo), float(hi)), bounds), {"runs": x.shape[1], "interval": "samples"}, draws)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            means, variances = np.nanmean(x, axis=0), np.nanvar(x, axis=0, ddof=1)
        a = self.aggregate(means, variances if self.needs_variance else None, level)
        se = float(a.details.get("se", float("nan")))
        df = a.details.get("df") if a.details.get("interval") == "t" else None
        draws = truncated_draws(a.value, se, bounds, x.shape[0], rng, df or None) if math.isfinite(se) else None
        details = {**a.details, **({"variance_source": "posterior"} if self.needs_variance else {})}
        return Aggregate(a.value, _clip_ci(a.ci, bounds), details, draws)

    def __repr__(self) -> str:
        return f"<aggregator {self.name}>"


def get_aggregator(method: "str | Aggregator", **params: Any) -> Aggregator:
    """The aggregator of a name or alias (or ``method`` itself), built with the keyword
    ``params`` (``get_aggregator("random_effects", hksj_sampling_distribution=True)``).

    Raises:
        ValueError: unknown name (listing the known ones), or parameters the aggregator does not
            take (naming them and the accepted ones).
        TypeError: neither a string nor an :class:`Aggregator`.
    """
    if isinstance(method, Aggregator):
        if params:
            raise ValueError(f"aggregator {method.name!r} is already built: give its parameters to its constructor, not {sorted(params)}")
        return method
    if isinstance(method, type) and issubclass(method, Aggregator):
        return _build(method, params)
    if not isinstance(method, str):
        raise TypeError(f"method must be an aggregator name or an Aggregator, got {type(method).__name__}")
    cls = AGGREGATORS.get(method) or AGGREGATORS.get(method.lower())
    if cls is None:
        raise ValueError(f"unknown aggregation method {method!r}; known: {sorted(AGGREGATORS)}")
    return _build(cls, params)


def _build(cls: type[Aggregator], params: dict[str, Any]) -> Aggregator:
    import inspect

    accepted = [p.name for p in list(inspect.signature(cls.__init__).parameters.values())[1:] if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)]
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        raise ValueError(f"aggregator {cls.name!r}: unknown parameter(s) {unknown}; accepted: {accepted}")
    return cls(**params)


_NAN_CI = (float("nan"), float("nan"))


def _normal_interval(mu: float, se: float, level: float) -> tuple[float, float]:
    z = normal_quantile(0.5 + level / 2.0)
    return (mu - z * se, mu + z * se)


class Pooled(Aggregator):
    """Merge the runs' states and compute each metric once over all their examples."""

    name = "pooled"
    aliases = ("merged", "micro")
    full_name = "Pooled (merged states)"
    needs_states = True


class Mean(Aggregator):
    """Unweighted mean of the runs' values, sample standard deviation (``ddof=1``) and a
    Student-t interval ``mean +- t_{k-1, (1 + level) / 2} * std / sqrt(k)`` (NaN for one run)."""

    name = "mean"
    aliases = ("average", "arithmetic_mean")
    full_name = "Mean over runs"

    def aggregate(self, values: np.ndarray, variances: np.ndarray | None, level: float) -> Aggregate:
        k = values.shape[0]
        mu = float(np.mean(values))
        if k < 2:
            return Aggregate(mu, _NAN_CI, {"runs": k, "std": float("nan"), "se": float("nan"), "interval": "t", "df": 0})
        std = float(np.std(values, ddof=1))
        se = std / math.sqrt(k)
        t = t_ppf(0.5 + level / 2.0, k - 1)
        return Aggregate(mu, (mu - t * se, mu + t * se), {"runs": k, "std": std, "se": se, "interval": "t", "df": k - 1})


def _check_variances(variances: np.ndarray | None, what: str) -> np.ndarray:
    if variances is None:
        raise ValueError(f"{what} needs each run's variance")
    v = np.asarray(variances, dtype=np.float64)
    if not np.all(v > 0) or not np.all(np.isfinite(v)):
        bad = int(np.flatnonzero(~(v > 0) | ~np.isfinite(v))[0])
        raise ValueError(
            f"{what}: run {bad} has variance {float(v[bad])!r}; inverse-variance weights need finite variances > 0 "
            "(a proportion of 0 or 1 has analytic variance 0: give the runs a ci or use method='mean' or 'pooled')"
        )
    return v


def _q_statistic(values: np.ndarray, w: np.ndarray) -> tuple[float, float]:
    """Inverse-variance mean and Cochran's ``Q = sum(w (y - mu)^2)``."""
    mu = float(np.sum(w * values) / np.sum(w))
    return mu, float(np.sum(w * (values - mu) ** 2))


def _i2(q: float, df: int) -> float:
    # one run (df 0) has no heterogeneity, also when rounding leaves Q a few ulps above 0
    return max(0.0, (q - df) / q) if q > 0 and df > 0 else 0.0


class FixedEffect(Aggregator):
    """Inverse-variance (fixed-effect, common-effect) mean: weights ``1 / v``, standard error
    ``1 / sqrt(sum(w))``, normal interval; reports Cochran's ``Q`` and ``I2``."""

    name = "fixed_effect"
    aliases = ("fixed_effects", "inverse_variance", "common_effect")
    full_name = "Fixed effect (inverse variance)"
    needs_variance = True

    def between_run_variance(self, q: float, w: np.ndarray) -> float | None:
        """The between-run variance ``tau2`` added to every run's variance (None: none)."""
        return None

    hksj_sampling_distribution = False

    def between_run_variance_of(self, values: np.ndarray, v: np.ndarray, q: float, w: np.ndarray) -> float | None:
        """The between-run variance ``tau2`` of the runs' ``values`` and variances ``v``."""
        return self.between_run_variance(q, w)

    def aggregate(self, values: np.ndarray, variances: np.ndarray | None, level: float) -> Aggregate:
        v = _check_variances(variances, self.name)
        w = 1.0 / v
        mu, q = _q_statistic(values, w)
        tau2 = self.between_run_variance_of(values, v, q, w)
        if tau2 is not None:
            w = 1.0 / (v + tau2)
            mu = float(np.sum(w * values) / np.sum(w))
        se = math.sqrt(1.0 / float(np.sum(w)))
        k = values.shape[0]
        within = float(np.mean(v))
        details = {"runs": k, "se": se, "interval": "normal", "weights": (w / w.sum()).tolist(), "q": q, "df": k - 1, "i2": _i2(q, k - 1)}
        details["within_variance"] = within
        if tau2 is not None:
            details["tau2"] = details["between_variance"] = tau2
            details["i2_generalised"] = tau2 / (tau2 + within) if tau2 + within > 0 else 0.0  # Bowden et al. (2011)
        ci = _normal_interval(mu, se, level)
        if self.hksj_sampling_distribution and k > 1:  # Hartung-Knapp-Sidik-Jonkman: weighted residual variance, t_{k-1}
            se = math.sqrt(float(np.sum(w * (values - mu) ** 2)) / ((k - 1) * float(np.sum(w))))
            t = t_ppf(0.5 + level / 2.0, k - 1)
            ci = (mu - t * se, mu + t * se)
            details.update(se=se, interval="t", hksj=True)
        return Aggregate(mu, ci, details)


class RandomEffects(FixedEffect):
    """Random effects: weights ``1 / (v + tau2)``, standard error ``1 / sqrt(sum(w*))``, normal
    interval, Higgins' ``I2`` (from the fixed-effect ``Q``) and Bowden's generalised
    ``i2_generalised = tau2 / (tau2 + mean(v))`` with ``within_variance = mean(v)`` and
    ``between_variance = tau2``.

    Keyword parameters (prob_conf_mat's names):
        paule_mandel_heterogeneity: False (default): DerSimonian and Laird's method-of-moments
            ``tau2 = max(0, (Q - (k - 1)) / (sum(w) - sum(w^2) / sum(w)))`` with ``w = 1 / v``;
            True: Paule and Mandel's, the root in ``tau2 >= 0`` of the generalised
            ``Q(tau2) = sum((y - mu(tau2))^2 / (v + tau2)) = k - 1`` (0 when ``Q(0) <= k - 1``),
            found by bisection from the DerSimonian-Laird value.
        hksj_sampling_distribution: True: the Hartung-Knapp-Sidik-Jonkman interval
            ``mu +- t_{k-1} se``, ``se^2 = sum(w* (y - mu)^2) / ((k - 1) sum(w*))`` (metafor's
            ``test="knha"``).
    """

    name = "random_effects"
    aliases = ("random_effect", "dersimonian_laird", "dl")
    full_name = "Random effects (DerSimonian-Laird)"

    def __init__(self, *, paule_mandel_heterogeneity: bool = False, hksj_sampling_distribution: bool = False) -> None:
        self.paule_mandel_heterogeneity = bool(paule_mandel_heterogeneity)
        self.hksj_sampling_distribution = bool(hksj_sampling_distribution)

    def between_run_variance(self, q: float, w: np.ndarray) -> float | None:
        k = w.shape[0]
        c = float(np.sum(w) - np.sum(w**2) / np.sum(w))
        return max(0.0, (q - (k - 1)) / c) if c > 0 else 0.0

    def between_run_variance_of(self, values: np.ndarray, v: np.ndarray, q: float, w: np.ndarray) -> float | None:
        dl = self.between_run_variance(q, w)
        return paule_mandel_tau2(values, v, dl) if self.paule_mandel_heterogeneity else dl


def paule_mandel_tau2(values: np.ndarray, variances: np.ndarray, start: float = 0.0) -> float:
    """Paule and Mandel's between-run variance: the ``tau2 >= 0`` where the generalised
    ``Q(tau2) = sum((y - mu(tau2))^2 / (v + tau2))`` equals ``k - 1`` (``mu(tau2)`` the weighted
    mean); 0 when ``Q(0) <= k - 1``. ``Q`` decreases in ``tau2``: bisection on a bracket grown
    from ``start`` (the DerSimonian-Laird value), to a relative width of 1e-14."""
    y, v = np.asarray(values, dtype=np.float64), np.asarray(variances, dtype=np.float64)
    k = y.shape[0]

    def excess(t: float) -> float:
        w = 1.0 / (v + t)
        mu = float(np.sum(w * y) / np.sum(w))
        return float(np.sum(w * (y - mu) ** 2)) - (k - 1)

    if k < 2 or excess(0.0) <= 0:
        return 0.0
    lo, hi = 0.0, max(start, float(np.var(y)), 1e-300)
    if start > 0 and excess(start) > 0:
        lo = start
    while excess(hi) > 0:
        lo, hi = hi, hi * 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if excess(mid) > 0:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-14 * hi:
            break
    return (lo + hi) / 2


# ---------------------------------------------------------------------------------------------
# per-run variances
_DENOMINATORS = {  # binary proportion -> the confusion counts of its denominator
    "precision": ("tp", "fp"),
    "recall": ("tp", "fn"),
    "specificity": ("tn", "fp"),
    "npv": ("tn", "fn"),
    "fpr": ("fp", "tn"),
    "fnr": ("fn", "tp"),
}


def _canonical(key: str) -> tuple[str, str]:
    """``(canonical metric name, parameter suffix)`` of a metric key (``"ppv@threshold=0.7"`` ->
    ``("precision", "@threshold=0.7")``)."""
    name, _, rest = key.partition("@")
    cls = REGISTRY.get(name)
    return (cls.name if cls is not None else name), ("@" + rest if rest else "")


def _count(s: SliceResult, name: str, suffix: str) -> float | None:
    v = s.metrics.get(name + suffix)
    return float(v) if v is not None and np.ndim(v) == 0 and math.isfinite(float(v)) else None


def analytic_variance(key: str, value: float, s: SliceResult) -> tuple[float, str] | None:
    """``(variance, formula)`` of one run's value of metric ``key`` in slice ``s``, or None.

    Proportions: ``p (1 - p) / n`` (accuracy: ``n`` the slice's rows; binary precision, recall,
    specificity, NPV, FPR, FNR: their denominator from the slice's ``tp``/``fp``/``tn``/``fn``
    values at the same parameters; prevalence: the rows). Binary ROC AUC: Hanley and McNeil
    (1982) with the positives and negatives from the counts or from ``prevalence``.
    """
    name, suffix = _canonical(key)
    if name == "accuracy" and s.n:
        return value * (1 - value) / s.n, "p(1-p)/n"
    if name == "prevalence" and s.n and suffix == "":
        return value * (1 - value) / s.n, "p(1-p)/n"
    if name in _DENOMINATORS and not any(a in suffix for a in ("@macro", "@micro", "@weighted", "@none")):
        a, b = (_count(s, c, suffix) for c in _DENOMINATORS[name])
        if a is not None and b is not None and a + b > 0:
            return value * (1 - value) / (a + b), "p(1-p)/n"
        return None
    if name == "roc_auc" and suffix == "":
        counts = [_count(s, c, "") for c in ("tp", "fn", "tn", "fp")]
        if all(c is not None for c in counts):
            n1, n2 = counts[0] + counts[1], counts[2] + counts[3]  # type: ignore[operator]
        else:
            prev = _count(s, "prevalence", "")
            if prev is None or not s.n:
                return None
            n1, n2 = prev * s.n, (1 - prev) * s.n
        if n1 <= 0 or n2 <= 0:
            return None
        q1, q2 = value / (2 - value), 2 * value**2 / (1 + value)
        var = (value * (1 - value) + (n1 - 1) * (q1 - value**2) + (n2 - 1) * (q2 - value**2)) / (n1 * n2)
        return var, "hanley_mcneil"
    return None


def _ci_level(results: Results) -> float:
    ci = results.config.get("ci") if isinstance(results.config, dict) else None
    level = ci.get("level") if isinstance(ci, dict) else None
    return float(level) if level is not None else 0.95


def run_variance(key: str, value: float, s: SliceResult, level: float) -> tuple[float, str] | None:
    """``(variance, source)`` of one run's value: from its confidence interval (``s.ci``, at
    ``level``) when present, else :func:`analytic_variance`, else None."""
    ci = getattr(s, "ci", None) or {}
    bounds = ci.get(key)
    if bounds is not None and np.ndim(bounds[0]) == 0:
        lo, hi = float(bounds[0]), float(bounds[1])
        if math.isfinite(lo) and math.isfinite(hi):
            z = normal_quantile(0.5 + level / 2.0)
            return ((hi - lo) / (2 * z)) ** 2, "ci"
    return analytic_variance(key, value, s)


# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class AggregateSlice:
    """The aggregates of one slice.

    Attributes:
        slice: the slice key (``()`` = overall).
        runs: how many runs have this slice (not suppressed).
        n: the rows summed over those runs.
        metrics: ``{metric key: aggregate value}`` (NaN where no run has a finite value).
        ci: ``{metric key: (lower, upper)}`` at the results' ``level``.
        details: ``{metric key: method details}`` (see :class:`Aggregate`).
        window_start, window_end: the event-time window of windowed runs (each window's slices
            are aggregated over the runs on their own), None outside windows.
    """

    slice: tuple
    runs: int
    n: int
    metrics: dict[str, float]
    ci: dict[str, tuple[float, float]] = field(default_factory=dict)
    details: dict[str, dict[str, Any]] = field(default_factory=dict)
    window_start: Any = None
    window_end: Any = None
    #: ``{metric key: (num_samples,) pooled draws}`` (meta-analysis of posteriors with ``samples=True``)
    samples: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return slice_name(self.slice)

    @property
    def window(self) -> tuple[Any, Any] | None:
        """``(window_start, window_end)``, or None outside windows."""
        return None if self.window_start is None else (self.window_start, self.window_end)

    def _window_dict(self) -> dict[str, Any]:
        if self.window_start is None:
            return {}
        return {"window_start": self.window_start.isoformat(), "window_end": None if self.window_end is None else self.window_end.isoformat()}

    def to_dict(self) -> dict[str, Any]:
        return {
            "slice": {c: v for c, v in self.slice},
            **self._window_dict(),
            "runs": int(self.runs),
            "n": int(self.n),
            "metrics": {k: jsonable(v) for k, v in self.metrics.items()},
            "ci": {k: jsonable(list(v)) for k, v in self.ci.items()},
            "details": {k: jsonable_details(d) for k, d in self.details.items()},
        }


def jsonable_details(d: dict[str, Any]) -> dict[str, Any]:
    return {k: (v if isinstance(v, str) or (isinstance(v, list) and v and isinstance(v[0], str)) else jsonable(v)) for k, v in d.items()}


@dataclass(frozen=True)
class AggregateResults:
    """:func:`aggregate`'s result: per slice (overall first) the aggregate values and intervals.

    Attributes:
        slices: list of :class:`AggregateSlice`.
        method: the aggregator's canonical name.
        level: the interval level.
        runs: how many runs were aggregated.
        not_aggregated: ``{metric key: reason}`` of metrics left out (array values such as
            per-class metrics or curves: aggregate them with ``pooled``).
    """

    slices: list[AggregateSlice]
    method: str
    level: float
    runs: int
    not_aggregated: dict[str, str] = field(default_factory=dict)

    __getitem__ = Results.__getitem__  # by key tuple, display name, dict or position
    windows = Results.windows  # the (window_start, window_end) pairs of windowed runs, in order

    def window(self, start: Any, end: Any = None) -> "AggregateResults":
        """The aggregates of one window (its slices, overall first).

        Raises:
            KeyError: no such window, or ``end`` is needed (several windows start at ``start``).
        """
        start, end = window_bound(start), window_bound(end)
        chosen = [w for w in self.windows if w[0] == start and (end is None or w[1] == end)]
        if len(chosen) != 1:
            what = "no window" if not chosen else f"{len(chosen)} windows"
            raise KeyError(f"{what} starting at {start.isoformat()}; windows: {[window_label(*w) for w in self.windows[:5]]}")
        return dataclasses.replace(self, slices=[s for s in self.slices if s.window == chosen[0]])

    def __iter__(self):
        return iter(self.slices)

    def __len__(self) -> int:
        return len(self.slices)

    @property
    def overall(self) -> AggregateSlice:
        return self[()]

    def to_dict(self) -> dict[str, Any]:
        """``{"method", "level", "runs", "slices": [{"slice", "runs", "n", "metrics", "ci",
        "details"}], "not_aggregated"}``; NaN becomes None."""
        return {
            "method": self.method,
            "level": self.level,
            "runs": self.runs,
            "slices": [s.to_dict() for s in self.slices],
            "not_aggregated": dict(self.not_aggregated),
        }

    def to_rows(self) -> list[dict[str, Any]]:
        """Long format: one row per (slice, metric) with ``slice``, ``runs``, ``n``, ``metric``,
        ``value``, ``ci_lower``, ``ci_upper`` and ``method`` (and ``window_start`` / ``window_end``
        after ``slice`` for windowed runs)."""
        rows = []
        for s in self.slices:
            for k, v in s.metrics.items():
                lo, hi = s.ci.get(k, _NAN_CI)
                rows.append(
                    {
                        "slice": s.name,
                        **s._window_dict(),
                        "runs": s.runs,
                        "n": s.n,
                        "metric": k,
                        "value": v,
                        "ci_lower": lo,
                        "ci_upper": hi,
                        "method": self.method,
                    }
                )
        return rows


# ---------------------------------------------------------------------------------------------
def _pooled_results(runs: Sequence[Any], evaluation: Any, plan: Plan | None) -> Results:
    """The finished results of the merged states of ``runs``."""
    first = runs[0]
    if isinstance(first, MetricCollection):
        for r in runs:
            if not isinstance(r, MetricCollection):
                raise TypeError(f"aggregate(method='pooled'): mix of MetricCollection and {type(r).__name__}")
        merged = merge(*runs)  # a new collection: the runs are left as they were
        plan = merged.plan
        states = merged.states
    elif evaluation is not None:  # an Evaluation, or a WindowedEvaluation (merged window by window)
        acc = evaluation.merge_all(runs) if hasattr(evaluation, "merge_all") else functools.reduce(evaluation.merge, runs)
        return evaluation.finish(acc)
    elif plan is not None:
        states = plan.merge_all([tuple(r) for r in runs])
    else:
        if isinstance(first, Results):
            raise TypeError(
                "aggregate(method='pooled') merges states, and Results hold values only: pass the runs' "
                "accumulators with evaluation=, their MetricCollections, or state tuples with plan= "
                "(or aggregate the Results with method='mean', 'fixed_effect' or 'random_effects')"
            )
        raise TypeError(f"aggregate(method='pooled'): give evaluation= (accumulators) or plan= (state tuples) for {type(first).__name__} runs")
    values, _, _ = plan.compute_detailed(states)
    count = states[0]
    slice_result = SliceResult((), int(count["count"]), float(count["weight"]), int(count["skipped"]), values)
    return Results([slice_result], {"metrics": list(plan.keys)})


def _note_metric(k: str, is_array: bool, metrics: Sequence[str] | None, keys: list[str], not_aggregated: dict[str, str]) -> None:
    """Add metric ``k`` of a run to ``keys`` (scalars) or ``not_aggregated`` (arrays), unless ``metrics`` leaves it out."""
    if metrics is not None and k not in metrics:
        return
    if is_array:
        not_aggregated.setdefault(k, "array value (per class or curve): aggregate it with method='pooled'")
    elif k not in keys:
        keys.append(k)


def _check_requested(metrics: Sequence[str] | None, keys: list[str], not_aggregated: dict[str, str], why: str) -> None:
    """ValueError for requested ``metrics`` found in no run (``why`` opens the reason)."""
    missing = [k for k in metrics if k not in keys and k not in not_aggregated] if metrics is not None else []
    if missing:
        raise ValueError(f"aggregate: metric(s) {missing} {why}the runs have {keys})")


def _check_aggregation(per_metric: Mapping[str, Aggregator], seen: Iterable[str]) -> None:
    """ValueError for keys of ``aggregation=`` that are no metric of any run (``seen``)."""
    names = list(dict.fromkeys(seen))
    missing = [k for k in per_metric if k not in names]
    if missing:
        raise ValueError(f"aggregate: aggregation= names metric(s) {missing} that no run has (the runs have {names})")


def _posterior_meta_analysis(
    runs: list[Any], evaluation: Any, agg: Aggregator, per_metric: dict[str, Aggregator], level: float, metrics: Sequence[str] | None, seed: int, keep: bool
) -> AggregateResults:
    """:func:`aggregate` of the runs' accumulators through their Dirichlet posteriors."""
    if not hasattr(evaluation, "posterior"):
        raise TypeError(f"aggregate: the meta-analysis of posteriors needs an Evaluation, got {type(evaluation).__name__}")
    posts, counts = [], []
    for acc in runs:
        posts.append(evaluation.posterior(acc, samples=True))
        counts.append({key: int(states[0]["count"]) for key, states in acc.items()})
    slices: list[tuple] = []
    keys: list[str] = []
    not_aggregated: dict[str, str] = {}
    for p in posts:
        for key, summaries in p.items():
            if key not in slices:
                slices.append(key)
            for k, summ in summaries.items():
                _note_metric(k, summ.samples is not None and summ.samples.ndim != 1, metrics, keys, not_aggregated)
    _check_requested(metrics, keys, not_aggregated, "have no posterior in any run (confusion-derived metrics only;")
    _check_aggregation(per_metric, (k for p in posts for summaries in p.values() for k in summaries))
    out = []
    for key in sorted(slices, key=lambda k: k != ()):
        members = [(i, p[key]) for i, p in enumerate(posts) if key in p]
        values: dict[str, float] = {}
        cis: dict[str, tuple[float, float]] = {}
        details: dict[str, dict[str, Any]] = {}
        draws: dict[str, np.ndarray] = {}
        for k in keys:
            agg_k = per_metric.get(k, agg)
            cols = [summ[k].samples for _, summ in members if k in summ]
            x = np.column_stack(cols)
            x = x[:, np.isfinite(x).sum(axis=0) >= 2]  # a run whose posterior is undefined (no examples) does not enter
            if not x.shape[1]:
                values[k], cis[k], details[k] = float("nan"), _NAN_CI, {"runs": 0}
                continue
            try:
                a = agg_k.from_samples(x, metric_bounds(k), draw_seed(seed, key, f"aggregate {k}"), level)
            except ValueError as e:
                raise ValueError(f"aggregate: metric {k!r} in slice {slice_name(key)!r}: {e}") from None
            values[k], cis[k] = float(a.value), (float(a.ci[0]), float(a.ci[1]))
            details[k] = {**a.details, **({"method": agg_k.name} if k in per_metric else {})}
            if keep and a.samples is not None:
                draws[k] = a.samples
        n = sum(c.get(key, 0) for c in counts)
        out.append(AggregateSlice(key, len(members), n, values, cis, details, samples=draws))
    return AggregateResults(out, agg.name, level, len(runs), not_aggregated)


@public("mergeable_metrics")
def aggregate(
    runs: Iterable[Any],
    method: "str | Aggregator" = "pooled",
    *,
    level: float = 0.95,
    metrics: Sequence[str] | None = None,
    evaluation: Any = None,
    plan: Plan | None = None,
    aggregation: "Mapping[str, str | Aggregator] | None" = None,
    seed: int = 0,
    samples: bool = False,
    **params: Any,
) -> AggregateResults:
    """Aggregate several runs (cross-validation folds, seeds, days) per slice and metric.

    Meta-analysis of posteriors (prob_conf_mat's experiment aggregation): give the runs'
    accumulators with their ``evaluation=`` and a method other than ``pooled``; each run's
    Dirichlet posterior is sampled per slice (:meth:`~mergeable_metrics.Evaluation.posterior`:
    ``ci_replicates`` samples, ``ci_prior``, ``ci_prevalence_prior``, ``ci_seed``) and the
    aggregator pools the runs' posterior means and variances (or, for an aggregator of samples,
    the (num_samples, num_experiments) samples themselves, with the metric's ``bounds`` and a
    generator seeded from ``seed``, the slice and the metric); the pooled draws are truncated to
    the metric's ``bounds`` and kept in ``AggregateSlice.samples`` with ``samples=True``.
    Every aggregated interval is clipped to the metric's ``bounds``.

    Args:
        runs: for ``mean``, ``fixed_effect`` and ``random_effects``: the runs'
            :class:`~mergeable_metrics.results.results.Results`; for ``pooled``: their accumulators (with
            ``evaluation=``), :class:`~mergeable_metrics.collection.plan.MetricCollection` objects, or state tuples (with
            ``plan=``).
        method: an aggregator name or alias (see :data:`AGGREGATORS`) or an :class:`Aggregator`.
        level: the interval level in (0, 1).
        metrics: the metric keys to aggregate (default: every scalar metric of the runs).
        evaluation: the :class:`~mergeable_metrics.evaluation.evaluation.Evaluation` whose accumulators ``runs`` are.
        plan: the :class:`~mergeable_metrics.collection.plan.Plan` whose state tuples ``runs`` are.
        aggregation: ``{metric key: method}`` per metric (names or built :class:`Aggregator`
            objects; a key that is no metric of any run raises ``ValueError``); the other
            metrics use ``method``.
        seed: the seed of the aggregators' generators (meta-analysis of posteriors).
        samples: keep the pooled draws (meta-analysis of posteriors).
        **params: keyword parameters of ``method`` (``paule_mandel_heterogeneity=True``,
            ``hksj_sampling_distribution=True`` of ``random_effects``).

    Returns:
        :class:`AggregateResults`. Slices are the union over the runs (suppressed slices do not
        take part); each metric aggregates the runs where its value is finite, and
        ``details["runs"]`` says how many. Windowed runs (:mod:`mergeable_metrics.time.windows`) are aggregated per
        window: a slice of a window aggregates that window's slice over the runs (its
        ``window_start`` / ``window_end`` say which), never the windows of one run as runs. ``pooled``: the merged result's values, with an
        interval from its ``ci`` when the evaluation computes one, else from its analytic
        variance (normal), else NaN.

    Raises:
        ValueError: no runs, an unknown method, a bad level, windowed runs mixed with runs
            outside windows (naming both), or (``fixed_effect``,
            ``random_effects``) a metric whose run has neither a ``ci`` nor an analytic
            variance (naming the metric, the slice and the run).
        TypeError: runs of the wrong kind for the method.

    Example:
        >>> from mergeable_metrics import Results, SliceResult, aggregate
        >>> runs = [Results([SliceResult((), 100, 100.0, 0, {"accuracy": a})]) for a in (0.8, 0.9)]
        >>> agg = aggregate(runs, "fixed_effect")
        >>> round(agg.overall.metrics["accuracy"], 4)  # weights 100/0.16 and 100/0.09
        0.864
    """
    agg = get_aggregator(method, **params)
    per_metric = {k: get_aggregator(m) for k, m in (aggregation or {}).items()}
    mixed = [k for k, a in per_metric.items() if a.needs_states != agg.needs_states]
    if mixed:
        raise ValueError(f"aggregate: aggregation= of {mixed} mixes 'pooled' (merged states) with methods of the runs' values; aggregate them in two calls")
    level = check_level(level)
    runs = list(runs)
    if not runs:
        raise ValueError("aggregate: no runs")
    if not agg.needs_states and evaluation is not None and not any(isinstance(r, Results) for r in runs):
        return _posterior_meta_analysis(runs, evaluation, agg, per_metric, level, metrics, seed, samples)
    if agg.needs_states:
        results = [_pooled_results(runs, evaluation, plan)]
    else:
        for i, r in enumerate(runs):
            if not isinstance(r, Results):
                raise TypeError(f"aggregate(method={agg.name!r}): run {i} is a {type(r).__name__}, not a mergeable_metrics.Results")
        results = runs
    windowed = [i for i, r in enumerate(results) if any(getattr(s, "window_start", None) is not None for s in r.slices)]
    if windowed and len(windowed) != len(results):
        plain = next(i for i in range(len(results)) if i not in windowed)
        raise ValueError(
            f"aggregate: run {windowed[0]} has event-time windows and run {plain} has none; windowed runs are "
            "aggregated window by window, so give runs of the same windowing"
        )
    keys: list[str] = []
    not_aggregated: dict[str, str] = {}
    by_slice: dict[tuple, list[tuple[int, SliceResult]]] = {}  # (window or None, slice key) -> runs' slices
    for i, r in enumerate(results):
        for s in r.slices:
            if s.suppressed:
                continue
            by_slice.setdefault((s.window, s.slice), []).append((i, s))
            for k, v in s.metrics.items():
                _note_metric(k, np.ndim(v) != 0 or isinstance(v, str), metrics, keys, not_aggregated)
    _check_requested(metrics, keys, not_aggregated, "are in no run (")
    _check_aggregation(per_metric, (k for r in results for s in r.slices if not s.suppressed for k in s.metrics))
    out = []
    # by window (outside windows first), then overall first, then first-seen order
    for window, key_tuple in sorted(by_slice, key=lambda k: ((0,) if k[0] is None else (1, *k[0]), k[1] != ())):
        members = by_slice[(window, key_tuple)]
        where = slice_name(key_tuple) + ("" if window is None else f" of window {window_label(*window)}")
        values: dict[str, float] = {}
        cis: dict[str, tuple[float, float]] = {}
        details: dict[str, dict[str, Any]] = {}
        for k in keys:
            agg_k = per_metric.get(k, agg)
            pairs = [(i, s, float(s.metrics[k])) for i, s in members if k in s.metrics and np.ndim(s.metrics[k]) == 0]
            pairs = [p for p in pairs if math.isfinite(p[2])]
            if not pairs:
                values[k], cis[k], details[k] = float("nan"), _NAN_CI, {"runs": 0}
                continue
            if agg.needs_states:  # one merged run: its own interval, if it has one
                i, s, v = pairs[0]
                values[k] = v
                var = run_variance(k, v, s, _ci_level(results[i]))
                if var is None or not var[0] > 0:
                    cis[k], details[k] = _NAN_CI, {"runs": len(runs), "interval": None}
                elif var[1] == "ci":
                    cis[k] = (float(s.ci[k][0]), float(s.ci[k][1]))  # type: ignore[attr-defined]
                    details[k] = {"runs": len(runs), "interval": "ci", "variance_source": "ci"}
                else:
                    cis[k] = _normal_interval(v, math.sqrt(var[0]), level)
                    details[k] = {"runs": len(runs), "interval": "normal", "variance_source": var[1]}
                continue
            vals = np.array([p[2] for p in pairs])
            variances = None
            sources: list[str] = []
            if agg_k.needs_variance:
                vs = []
                for i, s, v in pairs:
                    var = run_variance(k, v, s, _ci_level(results[i]))
                    if var is None:
                        raise ValueError(
                            f"aggregate(method={agg_k.name!r}): metric {k!r} in slice {where!r} of run {i} has no ci "
                            "and no analytic variance (proportions need their counts, e.g. tp/fp/fn metrics; ROC AUC "
                            "needs tp/fn/tn/fp or prevalence): evaluate the runs with ci=..., or use method='mean'"
                        )
                    if not (var[0] > 0 and math.isfinite(var[0])):
                        raise ValueError(
                            f"aggregate(method={agg_k.name!r}): metric {k!r} in slice {where!r} of run {i} (value {v!r}) has "
                            f"variance {float(var[0])!r} ({var[1]}); inverse-variance weights need finite variances > 0 "
                            "(a proportion of 0 or 1 has analytic variance 0: give the runs a ci or use method='mean' or 'pooled')"
                        )
                    vs.append(var[0])
                    sources.append(var[1])
                variances = np.array(vs)
            try:
                a = agg_k.aggregate(vals, variances, level)
            except ValueError as e:
                raise ValueError(f"aggregate: metric {k!r} in slice {where!r}: {e}") from None
            values[k], cis[k] = float(a.value), _clip_ci((float(a.ci[0]), float(a.ci[1])), metric_bounds(k))
            details[k] = {**a.details, **({"variance_source": sources} if sources else {}), **({"method": agg_k.name} if k in per_metric else {})}
        n = sum(int(s.n) for _, s in members)
        bounds = (None, None) if window is None else window
        out.append(AggregateSlice(key_tuple, len(members) if not agg.needs_states else len(runs), n, values, cis, details, *bounds))
    return AggregateResults(out, agg.name, level, len(runs), not_aggregated)


__all__ = [
    "AGGREGATORS",
    "Aggregate",
    "AggregateResults",
    "AggregateSlice",
    "Aggregator",
    "FixedEffect",
    "Mean",
    "Pooled",
    "RandomEffects",
    "aggregate",
    "analytic_variance",
    "get_aggregator",
    "run_variance",
]
