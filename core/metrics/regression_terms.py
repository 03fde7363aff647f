"""Regression metrics that average a per-row term: squared log error, pinball loss, Tweedie
deviances, and the D² score of a Tweedie deviance.

:class:`RegressionTermsState` holds, for each term its metrics ask for (its layout, a sorted
tuple of term names such as ``"sle"``, ``"pinball:0.9"``, ``"tweedie:1.5"``): the exact sum
(:mod:`mergeable_metrics._util.exact`) over rows of ``w * term(y, p)``, and the number of rows outside the term's
domain (``y <= -1`` for the squared log error, ``y_pred <= 0`` for a Poisson deviance, ...), plus
the row count and the weight. Each row's term is computed in float64 (rounded once per row, as
scikit-learn does) and summed exactly, so the state merges by fieldwise addition, bit for bit the
same in any batching, partitioning and merge order. Its logs and powers are fdlibm's
(:mod:`mergeable_metrics._util.portable_log`, :mod:`mergeable_metrics._util.portable_pow`: Java's
``StrictMath.log`` / ``log1p`` / ``pow``), not the platform's libm (``np.log``, ``np.power``), so the
bytes are the same on every machine and in the JVM fold.

A row outside a term's domain is counted, not summed: the metric is then undefined (NaN, listed
with the count), where scikit-learn raises on the whole array; every other metric of the same
evaluation is unaffected (the squared error of a target of -3 is well defined). A row inside the
domain whose term overflows (a Poisson deviance of ``y = 1e300``, ``p = 1e-300``) is counted by
the sign of its infinity, so the metric is what scikit-learn's float arithmetic gives: ``inf``
(NaN for ``inf - inf`` terms, or infinities of both signs).

Metrics (weighted; NaN when the total weight is 0): ``msle``, ``rmsle``,
``mean_pinball_loss@alpha=A``, ``mean_tweedie_deviance@power=P``, ``mean_poisson_deviance``,
``mean_gamma_deviance``, ``d2_tweedie_score@power=P``. The D² score's null model is the weighted
mean target ``ybar`` (as scikit-learn's): its deviance is a function of ``ybar`` and of one more
per-row sum of ``y`` alone (``sum w y log y`` for Poisson, ``sum w log y`` for Gamma,
``sum w y^(2-P)`` otherwise; the squared error's is the exact centred ``M2_y`` of
:class:`mergeable_metrics.metrics.regression.RegressionMomentsState`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from mergeable_metrics.inputs.validation import Batch
from mergeable_metrics._util.exact import ExactSums, exact_column_sums, exact_sum, fraction_to_float
from mergeable_metrics._util.portable_log import log as _log, log1p as _log1p
from mergeable_metrics._util.portable_pow import pow as _pow
from mergeable_metrics._util.limits import MAX_NUM_OUTPUTS, check_count
from mergeable_metrics.metrics.base import Metric, record_undefined
from mergeable_metrics.metrics.regression import RegressionMomentsState, batch_outputs, combine_outputs, configure_multioutput, output_shape
from mergeable_metrics.states.base import State

__all__ = [
    "D2TweedieScore",
    "MeanGammaDeviance",
    "MeanPinballLoss",
    "MeanPoissonDeviance",
    "MeanSquaredLogError",
    "MeanTweedieDeviance",
    "RegressionTermsLayout",
    "RegressionTermsState",
    "RootMeanSquaredLogError",
]


def _number(x: float) -> str:
    return repr(float(x))


def _xlogy(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``x * log(y)``, 0 where ``x == 0`` (scipy's ``xlogy``)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(x == 0, 0.0, x * _log(np.where(x == 0, 1.0, y)))


def _tweedie(q: float, y: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-row unit deviance of Tweedie power ``q`` and its domain (scikit-learn's formulas)."""
    if q < 0:
        valid = p > 0
        pp = np.where(valid, p, 1.0)
        v = 2 * (_pow(np.where(y > 0, y, 0.0), 2 - q) / ((1 - q) * (2 - q)) - y * _pow(pp, 1 - q) / (1 - q) + _pow(pp, 2 - q) / (2 - q))
    elif q == 0:
        valid = np.ones(y.shape, dtype=bool)
        v = (y - p) ** 2
    else:
        valid = (p > 0) & ((y >= 0) if q < 2 else (y > 0))
        yy, pp = np.where(valid, y, 1.0), np.where(valid, p, 1.0)
        if q == 1:
            v = 2 * (_xlogy(yy, yy / pp) - yy + pp)
        elif q == 2:
            v = 2 * (_log(pp / yy) + yy / pp - 1)
        else:
            v = 2 * (_pow(yy, 2 - q) / ((1 - q) * (2 - q)) - yy * _pow(pp, 1 - q) / (1 - q) + _pow(pp, 2 - q) / (2 - q))
    return v, valid


def _null_term(q: float, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The per-row sum of ``y`` alone that the null model's Tweedie deviance needs (see the module
    docstring), and its domain."""
    if q < 0:
        return _pow(np.where(y > 0, y, 0.0), 2 - q), np.ones(y.shape, dtype=bool)
    valid = (y >= 0) if q < 2 else (y > 0)
    yy = np.where(valid, y, 1.0)
    if q == 1:
        return _xlogy(yy, yy), valid
    if q == 2:
        return _log(yy), valid
    return _pow(yy, 2 - q), valid


def term_rows(term: str, y: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(values, inside)``: one term's per-row float64 values as scikit-learn's formula gives
    them (``+-inf`` where it overflows, NaN for ``inf - inf``; 0 outside the domain) and the rows
    inside its domain."""
    name, _, arg = term.partition(":")
    with np.errstate(all="ignore"):
        if name == "sle":
            valid = (y > -1) & (p > -1)
            v = (_log1p(np.where(valid, y, 0.0)) - _log1p(np.where(valid, p, 0.0))) ** 2
        elif name == "pinball":
            a, d = float(arg), y - p
            sign = (d >= 0).astype(np.float64)
            v, valid = a * sign * d - (1 - a) * (1 - sign) * d, np.ones(y.shape, dtype=bool)
        elif name == "tweedie":
            v, valid = _tweedie(float(arg), y, p)
        elif name == "null":
            v, valid = _null_term(float(arg), y)
        else:
            raise ValueError(f"unknown regression term {term!r}")
    return np.where(valid, v, 0.0), valid


@dataclass(frozen=True)
class RegressionTermsLayout:
    """The terms summed, sorted (e.g. ``("pinball:0.9", "sle")``), and ``num_outputs`` (None:
    (N,) targets; D: multioutput, ``sums`` and ``outside`` are (D, T)). Bytes of the releases
    before multioutput lack ``num_outputs`` and read as None."""

    terms: tuple[str, ...] = ()
    num_outputs: int | None = None

    def __post_init__(self) -> None:
        if self.num_outputs is not None:
            object.__setattr__(self, "num_outputs", check_count(self.num_outputs, "num_outputs", 1, MAX_NUM_OUTPUTS, "regression terms layout"))
        terms = tuple(sorted(set(str(t) for t in self.terms)))
        for t in terms:
            if t.partition(":")[0] not in ("sle", "pinball", "tweedie", "null"):
                raise ValueError(f"unknown regression term {t!r}")
        object.__setattr__(self, "terms", terms)

    def index(self, term: str) -> int:
        return self.terms.index(term)


_NONFINITE = ("posinf", "neginf", "nan")


class RegressionTermsState(State):
    """``count`` (int64 rows), ``weight``, ``sums`` (T,) exact ``sum w term`` over the rows inside
    each term's domain with a finite term, ``outside`` (T,) int64 rows outside it, and (T,) int64
    rows inside it whose term is not finite: ``posinf`` / ``neginf`` (the term overflowed, e.g. a
    Poisson deviance of ``y = 1e300``, ``p = 1e-300``; weight > 0), ``nan`` (``inf - inf``, or an
    infinite term of weight 0: scikit-learn's ``np.average`` gives NaN for both). See the module
    docstring.

    Kind version 2 added ``posinf``, ``neginf`` and ``nan``; version-1 bytes (where such rows
    were counted in ``outside``) are read with zeros there."""

    kind = "regression_terms"
    Layout = RegressionTermsLayout
    FIELDS = (("count", "int64"), ("weight", "float64"), ("sums", "float64"), ("outside", "int64")) + tuple((n, "int64") for n in _NONFINITE)
    OLD_FIELDS = {1: (("count", "int64"), ("weight", "float64"), ("sums", "float64"), ("outside", "int64"))}
    # 2: the layout's num_outputs (multioutput regression) and the posinf / neginf / nan counts;
    # version 1 bytes are single-output, without those counts
    VERSION = 2
    EXACT = ("weight", "sums")
    COUNTS = ("count", "weight", "outside") + _NONFINITE

    @classmethod
    def upgrade(cls, version: int, layout: RegressionTermsLayout, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Version 1 had no ``posinf`` / ``neginf`` / ``nan`` counts: zeros (its ``outside``
        counted those rows, so its metrics stay undefined, as they were)."""
        if version != 1 or layout.num_outputs is not None:
            return super().upgrade(version, layout, arrays)
        t = len(layout.terms)
        return {**arrays, **{n: np.zeros(t, dtype=np.int64) for n in _NONFINITE}}

    @classmethod
    def shape(cls, layout: RegressionTermsLayout, field: str) -> tuple[int, ...]:
        return () if field in ("count", "weight") else output_shape(layout.num_outputs) + (len(layout.terms),)

    @classmethod
    def layout_for(cls, requirements: list[Any], task: Any) -> RegressionTermsLayout:
        return RegressionTermsLayout(tuple(t for r in requirements for t in r), getattr(task, "num_outputs", None))

    @classmethod
    def from_batch(cls, layout: RegressionTermsLayout, batch: Batch) -> "RegressionTermsState":
        y, p = batch_outputs(batch, layout.num_outputs)
        w = batch.sample_weight
        T = len(layout.terms)
        d = layout.num_outputs or 1
        n = y.shape[0]
        vals = np.zeros((n, d, T))
        counts = {k: np.zeros((d, T), dtype=np.int64) for k in ("outside",) + _NONFINITE}
        positive = np.ones(n, dtype=bool) if w is None else np.asarray(w) > 0
        positive = np.repeat(positive, d).reshape(n, d)
        for j, t in enumerate(layout.terms):
            v, inside = term_rows(t, y, p)
            v, inside = v.reshape(n, d), inside.reshape(n, d)
            vals[:, :, j] = np.where(np.isfinite(v), v, 0.0)
            infinite = inside & np.isinf(v)
            counts["outside"][:, j] = n - np.count_nonzero(inside, axis=0)
            counts["posinf"][:, j] = np.count_nonzero(infinite & (v > 0) & positive, axis=0)
            counts["neginf"][:, j] = np.count_nonzero(infinite & (v < 0) & positive, axis=0)
            counts["nan"][:, j] = np.count_nonzero(inside & np.isnan(v), axis=0) + np.count_nonzero(infinite & ~positive, axis=0)
        shape = cls.shape(layout, "sums")
        return cls(
            layout,
            {
                "count": np.int64(n),
                "weight": np.float64(n) if w is None else exact_sum(w),
                "sums": ExactSums.stack([exact_column_sums(vals.reshape(n, d * T), w)], shape),
                **{k: c.reshape(shape) for k, c in counts.items()},
            },
        )

    def output(self, j: int) -> "RegressionTermsState":
        """The single-output state of output ``j`` (exact); a single-output state is its own
        output 0."""
        if self.layout.num_outputs is None:
            if j != 0:
                raise IndexError(f"output {j} of a single-output regression terms state")
            return self
        t = len(self.layout.terms)
        return type(self)(
            RegressionTermsLayout(self.layout.terms),
            {
                "count": self.arrays["count"],
                "weight": self.exact["weight"],
                "sums": self.exact["sums"].take(slice(j * t, (j + 1) * t), (t,)),
                **{k: self.arrays[k][j] for k in ("outside",) + _NONFINITE},
            },
        )

    def outputs(self) -> list["RegressionTermsState"]:
        """The single-output states of every output (one for a single-output state)."""
        return [self.output(j) for j in range(self.layout.num_outputs or 1)]

    def nonfinite(self, term: str) -> float | None:
        """What rows of a non-finite term make ``sum w term`` (and its mean), as scikit-learn's
        float arithmetic gives it: NaN (a NaN row, or both signs of infinity), ``+-inf``, or
        None when every row's term is finite (a single-output state)."""
        j = self.layout.index(term)
        a = self.arrays
        pos, neg, nan = int(a["posinf"][j]), int(a["neginf"][j]), int(a["nan"][j])
        if nan or (pos and neg):
            return math.nan
        if pos or neg:
            return math.inf if pos else -math.inf
        return None

    def mean(self, term: str) -> float:
        """``sum w term / sum w``, correctly rounded (weight nonzero); ``+-inf`` or NaN with
        non-finite rows (:meth:`nonfinite`)."""
        bad = self.nonfinite(term)
        return fraction_to_float(self._sum(term) / self.exact["weight"].fraction()) if bad is None else bad

    def total(self, term: str) -> float:
        """``sum w term``, correctly rounded; ``+-inf`` or NaN with non-finite rows."""
        bad = self.nonfinite(term)
        return fraction_to_float(self._sum(term)) if bad is None else bad

    def _sum(self, term: str) -> Any:
        return self.exact["sums"].fractions()[self.layout.index(term)]


class _TermMetric(Metric):
    """A weighted mean of one per-row term (regression tasks)."""

    tasks = ("regression",)
    params: ClassVar[dict[str, Any]] = {}
    higher_is_better = False
    bounds = (0.0, math.inf)
    undefined = "no examples (total weight 0), or rows outside the metric's domain"
    domain: ClassVar[str] = ""
    multioutput_options: ClassVar[tuple[str, ...]] = ("raw_values", "uniform_average")

    def configure(self) -> None:
        configure_multioutput(self, self.multioutput_options)

    def term(self) -> str:
        raise NotImplementedError

    def terms(self) -> tuple[str, ...]:
        return (self.term(),)

    def requires(self) -> list[tuple[type[State], Any]]:
        return [(RegressionTermsState, self.terms())]

    def needs(self) -> frozenset[str]:
        return frozenset({"target", "prediction"})

    def defined(self, st: RegressionTermsState) -> bool:
        """False (recording why) with no weight or rows outside the domain."""
        if float(st["weight"]) == 0:
            record_undefined()
            return False
        bad = {t: int(st["outside"][st.layout.index(t)]) for t in self.terms()}
        if any(bad.values()):
            record_undefined()
            return False
        return True

    def compute(self, states: dict[str, State]) -> Any:
        st = states["regression_terms"]
        if "multioutput" not in self.params:
            return self.one(st)
        return combine_outputs(self, st.outputs(), self.one)

    def one(self, st: RegressionTermsState) -> float:
        """The value of one output (a single-output state)."""
        if not self.defined(st):
            return float("nan")
        v = st.mean(self.term())
        if math.isnan(v):  # a NaN term (inf - inf) of a row in the domain, as scikit-learn's
            record_undefined()
        return v


class MeanSquaredLogError(_TermMetric):
    """Mean squared logarithmic error ``sum w (log1p(y) - log1p(p))^2 / sum w``; rows with
    ``y <= -1`` or ``p <= -1`` make it undefined. Source: ``sklearn.metrics.mean_squared_log_error``."""

    name = "msle"
    full_name = "Mean squared log error"
    aliases = ("mean_squared_log_error",)
    sklearn = "sklearn.metrics.mean_squared_log_error"
    params = {"multioutput": "uniform_average"}
    domain = "targets and predictions > -1"
    undefined = "no examples (total weight 0), or rows outside its domain (targets and predictions > -1)"

    def term(self) -> str:
        return "sle"


class RootMeanSquaredLogError(MeanSquaredLogError):
    """``sqrt(msle)``. Source: ``sklearn.metrics.root_mean_squared_log_error``."""

    name = "rmsle"
    full_name = "Root mean squared log error"
    aliases = ("root_mean_squared_log_error",)
    sklearn = "sklearn.metrics.root_mean_squared_log_error"

    def one(self, st: RegressionTermsState) -> float:
        v = super().one(st)
        return math.sqrt(v) if math.isfinite(v) else v


class MeanPinballLoss(_TermMetric):
    """Mean pinball (quantile) loss at ``alpha`` in [0, 1] (default 0.5: half the MAE):
    ``alpha (y - p)`` where ``y >= p``, else ``(1 - alpha) (p - y)``. Source:
    ``sklearn.metrics.mean_pinball_loss``."""

    name = "mean_pinball_loss"
    full_name = "Mean pinball loss"
    aliases = ("pinball_loss", "quantile_loss")
    params = {"alpha": 0.5, "multioutput": "uniform_average"}
    positional = "alpha"
    sklearn = "sklearn.metrics.mean_pinball_loss"

    def configure(self) -> None:
        super().configure()
        a = self.p["alpha"]
        if isinstance(a, bool) or not isinstance(a, (int, float)) or not 0.0 <= float(a) <= 1.0:
            raise ValueError(f"metric {self.name!r}: alpha must be a number in [0, 1], got {a!r}")
        self.p["alpha"] = float(a)

    def term(self) -> str:
        return f"pinball:{_number(self.p['alpha'])}"


def _check_power(metric: Metric, q: Any) -> float:
    if isinstance(q, bool) or not isinstance(q, (int, float)) or not math.isfinite(float(q)) or 0.0 < float(q) < 1.0:
        raise ValueError(f"metric {metric.name!r}: power must be <= 0 or >= 1 (Tweedie deviance is not defined between), got {q!r}")
    return float(q)


def _domain(q: float) -> str:
    if q < 0:
        return "predictions > 0"
    if q == 0:
        return "any values"
    return "targets >= 0 and predictions > 0" if q < 2 else "targets and predictions > 0"


class MeanTweedieDeviance(_TermMetric):
    """Mean Tweedie deviance of power ``P`` (``<= 0`` or ``>= 1``; 0: squared error, 1: Poisson,
    2: Gamma), scikit-learn's unit deviances; rows outside the power's domain (e.g. ``p <= 0``)
    make it undefined. Source: ``sklearn.metrics.mean_tweedie_deviance``."""

    name = "mean_tweedie_deviance"
    full_name = "Mean Tweedie deviance"
    aliases = ("tweedie_deviance",)
    params = {"power": 0.0}
    positional = "power"
    sklearn = "sklearn.metrics.mean_tweedie_deviance"
    fixed_power: ClassVar[float | None] = None

    def configure(self) -> None:
        super().configure()
        if self.fixed_power is not None:
            self.p["power"] = self.fixed_power
        self.p["power"] = _check_power(self, self.p["power"])
        self.domain = _domain(self.p["power"])
        self.undefined = f"{type(self).undefined}; domain of power {self.p['power']!r}: {self.domain}"

    def term(self) -> str:
        return f"tweedie:{_number(self.p['power'])}"


class MeanPoissonDeviance(MeanTweedieDeviance):
    """Mean Poisson deviance (Tweedie power 1). Source: ``sklearn.metrics.mean_poisson_deviance``."""

    name = "mean_poisson_deviance"
    full_name = "Mean Poisson deviance"
    aliases = ("poisson_deviance",)
    params: ClassVar[dict[str, Any]] = {}
    positional = None
    sklearn = "sklearn.metrics.mean_poisson_deviance"
    fixed_power = 1.0


class MeanGammaDeviance(MeanTweedieDeviance):
    """Mean Gamma deviance (Tweedie power 2). Source: ``sklearn.metrics.mean_gamma_deviance``."""

    name = "mean_gamma_deviance"
    full_name = "Mean Gamma deviance"
    aliases = ("gamma_deviance",)
    params: ClassVar[dict[str, Any]] = {}
    positional = None
    sklearn = "sklearn.metrics.mean_gamma_deviance"
    fixed_power = 2.0


class D2TweedieScore(MeanTweedieDeviance):
    """D² score of a Tweedie deviance: ``1 - D(y, p) / D(y, ybar)``, the share of the null model's
    deviance explained (power 0 is R²); the null model predicts the weighted mean target ``ybar``.
    NaN with fewer than 2 rows (as scikit-learn) or rows outside the domain; ``-inf`` when the null
    deviance is 0 and the model's is not. Source: ``sklearn.metrics.d2_tweedie_score``."""

    name = "d2_tweedie_score"
    full_name = "D² Tweedie score"
    aliases = ("d2_tweedie",)
    params = {"power": 0.0}
    positional = "power"
    higher_is_better = True
    bounds = (-math.inf, 1.0)
    sklearn = "sklearn.metrics.d2_tweedie_score"
    fixed_power = None
    undefined = "fewer than 2 rows, total weight 0, or rows outside the metric's domain"

    def terms(self) -> tuple[str, ...]:
        q = self.p["power"]
        return (self.term(),) if q == 0 else (self.term(), f"null:{_number(q)}")

    def requires(self) -> list[tuple[type[State], Any]]:
        return [(RegressionTermsState, self.terms()), (RegressionMomentsState, None)]

    def compute(self, states: dict[str, State]) -> float:
        st, mom = states["regression_terms"], states["regression_moments"]
        if int(st["count"]) < 2 and float(st["weight"]) != 0:
            record_undefined()
            return float("nan")
        if not self.defined(st):
            return float("nan")
        num = st.total(self.term())
        W, Sy = mom.fr("weight"), mom.fr("sum_y")
        q = self.p["power"]
        if q == 0:
            den = fraction_to_float(mom.centred("y", "y"))
        else:
            ybar, w, sy, s = fraction_to_float(Sy / W), fraction_to_float(W), fraction_to_float(Sy), st.total(f"null:{_number(q)}")
            if q == 1:
                den = 2 * (s - sy * math.log(ybar)) if ybar > 0 else math.nan
            elif q == 2:
                den = 2 * (w * math.log(ybar) - s)
            else:
                den = 2 * (s / ((1 - q) * (2 - q)) - sy * ybar ** (1 - q) / (1 - q) + w * ybar ** (2 - q) / (2 - q))
        with np.errstate(all="ignore"):  # scikit-learn's float arithmetic: 1 - inf / x = -inf, 1 - x / inf = 1, ...
            v = float(1.0 - np.float64(num) / np.float64(den))
        if math.isnan(v):
            record_undefined()
        return v
