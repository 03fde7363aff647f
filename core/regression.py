"""Regression metrics from one moments state merged with Chan's parallel formulas.

:class:`RegressionMomentsState` holds, over the folded rows (weights ``w``, targets ``y``,
predictions ``p``, errors ``e = p - y``): the row count, the weight ``W``, the weighted means of
``y``, ``p`` and ``e``, the centred sums of squares ``M2_y``, ``M2_p``, ``M2_e``, the co-moment
``C_yp``, ``sum w |e|``, ``sum w |e| / max(|y|, eps)`` and ``max |e|`` over rows of positive
weight.

Merging is *not* a fieldwise sum: the moments combine with the pairwise update of Chan, Golub and
LeVeque (1979), "Updating formulae and a pairwise algorithm for computing sample variances"::

    W = Wa + Wb;  d = mean_b - mean_a;  mean = mean_a + d Wb / W
    M2 = M2a + M2b + d^2 Wa Wb / W;     C = Ca + Cb + d_y d_p Wa Wb / W

Centred sums keep R² accurate when targets sit far from zero with a small spread (targets around
1e8 with unit spread still give R² to 1e-9; a naive ``sum y^2 - (sum y)^2 / n`` state loses every
digit there). Within a batch the means are computed in two passes. The merge is exactly
commutative (the two operands are put in a canonical order first) and associative up to rounding
(about 1e-15 relative); ``max |e|`` merges with ``max``.

Metrics (all weighted; NaN when the total weight is 0): ``mse``, ``rmse``, ``mae``, ``mape``,
``r2``, ``explained_variance``, ``mean_error`` (mean of ``p - y``), ``max_error``, ``pearson``,
``mean_label``, ``mean_prediction``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from core._inputs import Batch
from core.metrics import Metric, record_undefined
from core.states import State, _layout_diff

_EPS = float(np.finfo(np.float64).eps)
_MOMENTS = ("mean_y", "mean_p", "mean_e", "m2_y", "m2_p", "m2_e", "c_yp")
#: rows per chunk of a large batch; the temporaries live in one scratch buffer reused by every chunk
#: (fresh 512 KiB temporaries per chunk would be mmap'd and page-faulted each time)
_CHUNK = 1 << 16


@dataclass(frozen=True)
class RegressionLayout:
    """No configuration: one moments state serves every regression metric."""


def _dot(a: np.ndarray, b: np.ndarray) -> float:
    """``sum(a * b)`` of two 1-D float64 arrays with numpy's own SIMD loop (``einsum``), not BLAS:
    on chunk-sized vectors BLAS threads cost more CPU than they save (and contend on a shared
    machine)."""
    return float(np.einsum("i,i->", a, b))


def _mean(x: np.ndarray, w: np.ndarray | None, total: float, tmp: np.ndarray) -> float:
    """Weighted mean in two passes (exact for constant inputs); ``tmp``: (n,) scratch."""
    if x.shape[0] == 0 or total == 0:
        return 0.0
    lo, hi = x.min(), x.max()
    if lo == hi:
        return float(lo)
    m = float(x.sum() / total) if w is None else _dot(w, x) / total
    r = np.subtract(x, m, out=tmp)
    m += float(r.sum() / total) if w is None else _dot(w, r) / total
    return m


class RegressionMomentsState(State):
    """Count, weight, means and centred (co)moments of targets, predictions and errors.

    Fields (all float64 scalars but ``count``): ``count`` (int64 rows, including zero-weight
    ones), ``weight``, ``mean_y``, ``mean_p``, ``mean_e``, ``m2_y``, ``m2_p``, ``m2_e``,
    ``c_yp``, ``sum_abs_e``, ``sum_ape``, ``max_abs_e``. See the module docstring for the merge.
    """

    kind = "regression_moments"
    Layout = RegressionLayout
    FIELDS = (
        ("count", "int64"),
        ("weight", "float64"),
        ("mean_y", "float64"),
        ("mean_p", "float64"),
        ("mean_e", "float64"),
        ("m2_y", "float64"),
        ("m2_p", "float64"),
        ("m2_e", "float64"),
        ("c_yp", "float64"),
        ("sum_abs_e", "float64"),
        ("sum_ape", "float64"),
        ("max_abs_e", "float64"),
    )
    COUNTS = ("count", "weight")
    NONNEGATIVE = ("m2_y", "m2_p", "m2_e", "sum_abs_e", "sum_ape", "max_abs_e")

    @classmethod
    def layout_for(cls, requirements: list[Any], task: Any) -> RegressionLayout:
        return RegressionLayout()

    @classmethod
    def from_batch(cls, layout: RegressionLayout, batch: Batch) -> "RegressionMomentsState":
        """The moments of one validated batch: per chunk of ``_CHUNK`` rows (the temporaries stay
        in cache, in one scratch buffer), chunks merged with Chan's formulas.

        Raises:
            ValueError: the batch lacks targets or predictions.
        """
        if batch.y_true is None or batch.y_pred is None:
            raise ValueError("regression metrics need targets and predictions")
        y = np.asarray(batch.y_true, dtype=np.float64)
        p = np.asarray(batch.y_pred, dtype=np.float64)
        w = batch.sample_weight
        n = y.shape[0]
        scratch = np.empty((5, min(n, _CHUNK)))
        out = None
        for i in range(0, max(n, 1), _CHUNK):
            part = cls._from_arrays(layout, y[i : i + _CHUNK], p[i : i + _CHUNK], None if w is None else w[i : i + _CHUNK], scratch)
            out = part if out is None else out.merge(part)
        return out  # type: ignore[return-value]

    @classmethod
    def _from_arrays(
        cls, layout: RegressionLayout, y: np.ndarray, p: np.ndarray, w: np.ndarray | None, scratch: np.ndarray
    ) -> "RegressionMomentsState":
        """The moments of one chunk; every temporary is a row of ``scratch`` ((5, >= n))."""
        n = y.shape[0]
        t = [scratch[j, :n] for j in range(5)]
        e = np.subtract(p, y, out=t[0])
        total = float(n) if w is None else float(w.sum())
        my, mp, me = _mean(y, w, total, t[1]), _mean(p, w, total, t[1]), _mean(e, w, total, t[1])
        if w is None:
            dot = _dot
        else:

            def dot(a: np.ndarray, b: np.ndarray) -> float:
                return _dot(np.multiply(w, a, out=t[4]), b)

        dy, dp, de = np.subtract(y, my, out=t[1]), np.subtract(p, mp, out=t[2]), np.subtract(e, me, out=t[3])
        moments = (dot(dy, dy), dot(dp, dp), dot(de, de), dot(dy, dp)) if total else (0.0,) * 4
        abs_e = np.abs(e, out=t[1])  # dy, dp and de are spent
        ape = np.abs(y, out=t[2])
        np.maximum(ape, _EPS, out=ape)
        np.divide(abs_e, ape, out=ape)
        positive = abs_e if w is None else abs_e[w > 0]
        a = {
            "count": np.int64(n),
            "weight": np.float64(total),
            "mean_y": my,
            "mean_p": mp,
            "mean_e": me,
            "m2_y": moments[0],
            "m2_p": moments[1],
            "m2_e": moments[2],
            "c_yp": moments[3],
            "sum_abs_e": float(abs_e.sum()) if w is None else _dot(w, abs_e),
            "sum_ape": float(ape.sum()) if w is None else _dot(w, ape),
            "max_abs_e": float(positive.max()) if positive.size else 0.0,
        }
        return cls(layout, {k: np.asarray(v, dtype=d) for (k, d), v in zip(cls.FIELDS, a.values())})

    def validate(self, integral: bool = False) -> "RegressionMomentsState":
        """:meth:`State.validate`, and: no weight means zero means and moments (every real state
        has them; :meth:`merge` relies on it), no rows means a zero state.

        Raises:
            ValueError: naming the field.
        """
        super().validate(integral)
        a = self.arrays
        if float(a["weight"]) == 0 or int(a["count"]) == 0:
            names = [n for n, _ in self.FIELDS if n not in ("count", "weight")] if int(a["count"]) == 0 else list(_MOMENTS)
            bad = next((n for n in names if float(a[n]) != 0), None)
            if bad is None and int(a["count"]) == 0 and float(a["weight"]) != 0:
                bad = "weight"
            if bad is not None:
                raise ValueError(f"invalid {self.kind} state: {bad} = {float(a[bad])!r} with count {int(a['count'])} and weight {float(a['weight'])!r} (must be 0)")
        return self

    def _key(self) -> tuple:
        return tuple(float(self.arrays[n]) for n, _ in self.FIELDS)

    def merge(self, other: "State") -> "RegressionMomentsState":
        """Chan et al. (1979) pairwise merge (see the module docstring).

        Raises:
            ValueError: ``other`` is another kind of state.
        """
        if type(other) is not type(self):
            raise ValueError(f"cannot merge state {other.kind!r} into {self.kind!r}")
        if other.layout != self.layout:
            raise ValueError(f"cannot merge {self.kind} states: {_layout_diff(self.layout, other.layout)}")
        a, b = (self, other) if self._key() <= other._key() else (other, self)  # exact commutativity
        A, B = a.arrays, b.arrays
        wa, wb = float(A["weight"]), float(B["weight"])
        out: dict[str, Any] = {
            "count": A["count"] + B["count"],
            "weight": np.float64(wa + wb),
            "sum_abs_e": A["sum_abs_e"] + B["sum_abs_e"],
            "sum_ape": A["sum_ape"] + B["sum_ape"],
            "max_abs_e": np.maximum(A["max_abs_e"], B["max_abs_e"]),
        }
        if wb == 0:
            out.update({k: A[k] for k in _MOMENTS})
        elif wa == 0:
            out.update({k: B[k] for k in _MOMENTS})
        else:
            total = wa + wb
            fb = wb / total
            cross = wa * fb  # = wa wb / W
            d = {k: float(B[f"mean_{k}"]) - float(A[f"mean_{k}"]) for k in ("y", "p", "e")}
            for k in ("y", "p", "e"):
                out[f"mean_{k}"] = float(A[f"mean_{k}"]) + d[k] * fb
                out[f"m2_{k}"] = float(A[f"m2_{k}"]) + float(B[f"m2_{k}"]) + d[k] * d[k] * cross
            out["c_yp"] = float(A["c_yp"]) + float(B["c_yp"]) + d["y"] * d["p"] * cross
        return type(self)(self.layout, {k: np.asarray(out[k], dtype=dt) for k, dt in self.FIELDS})

    __add__ = merge

    # -- derived quantities ----------------------------------------------------------------
    @property
    def sum_sq_e(self) -> float:
        """``sum w e^2 = M2_e + W mean_e^2`` (the residual sum of squares)."""
        a = self.arrays
        return float(a["m2_e"]) + float(a["weight"]) * float(a["mean_e"]) ** 2


class _Regression(Metric):
    """A metric of the regression moments state (regression tasks)."""

    tasks = ("regression",)
    params: ClassVar[dict[str, Any]] = {}
    higher_is_better = False
    bounds = (0.0, math.inf)
    undefined = "no examples (total weight 0)"

    def requires(self) -> list[tuple[type[State], Any]]:
        return [(RegressionMomentsState, None)]

    def needs(self) -> frozenset[str]:
        return frozenset({"target", "prediction"})

    def compute(self, states: dict[str, State]) -> float:
        st = states["regression_moments"]
        if float(st["weight"]) == 0:
            record_undefined()
            return float("nan")
        return float(self.value(st))

    def value(self, st: RegressionMomentsState) -> float:
        raise NotImplementedError


class MeanSquaredError(_Regression):
    """Mean squared error ``sum w (y - p)^2 / sum w``. Source: ``sklearn.metrics.mean_squared_error``."""

    name = "mse"
    aliases = ("mean_squared_error",)
    sklearn = "sklearn.metrics.mean_squared_error"

    def value(self, st: RegressionMomentsState) -> float:
        return st.sum_sq_e / float(st["weight"])


class RootMeanSquaredError(_Regression):
    """Root mean squared error ``sqrt(mse)``. Source: ``sklearn.metrics.root_mean_squared_error``."""

    name = "rmse"
    aliases = ("root_mean_squared_error",)
    sklearn = "sklearn.metrics.root_mean_squared_error"

    def value(self, st: RegressionMomentsState) -> float:
        return math.sqrt(st.sum_sq_e / float(st["weight"]))


class MeanAbsoluteError(_Regression):
    """Mean absolute error ``sum w |y - p| / sum w``. Source: ``sklearn.metrics.mean_absolute_error``."""

    name = "mae"
    aliases = ("mean_absolute_error",)
    sklearn = "sklearn.metrics.mean_absolute_error"

    def value(self, st: RegressionMomentsState) -> float:
        return float(st["sum_abs_e"]) / float(st["weight"])


class MeanAbsolutePercentageError(_Regression):
    """Mean absolute percentage error ``sum w |y - p| / max(|y|, eps) / sum w`` (a fraction, not
    percent; ``eps`` is float64 machine epsilon, so ``y == 0`` gives huge values, as in
    scikit-learn). Source: ``sklearn.metrics.mean_absolute_percentage_error``."""

    name = "mape"
    aliases = ("mean_absolute_percentage_error",)
    sklearn = "sklearn.metrics.mean_absolute_percentage_error"

    def value(self, st: RegressionMomentsState) -> float:
        return float(st["sum_ape"]) / float(st["weight"])


class _Explained(_Regression):
    """Shared ``force_finite`` handling (scikit-learn's): with a constant target the ratio is 0/0
    or x/0; ``force_finite=true`` (default) gives 1.0 for perfect predictions and 0.0 otherwise,
    ``false`` gives NaN or -inf."""

    params = {"force_finite": True}
    higher_is_better = True
    bounds = (-math.inf, 1.0)

    def configure(self) -> None:
        f = self.p["force_finite"]
        if f not in (True, False, 0, 1):
            raise ValueError(f"metric {self.name!r}: force_finite must be true or false, got {f!r}")
        self.p["force_finite"] = bool(f)
        if "force_finite" in self.given:
            self.given["force_finite"] = bool(f)

    def ratio(self, num: float, den: float) -> float:
        if den != 0 and num != 0:
            return 1.0 - num / den
        if self.p["force_finite"]:
            return 1.0 if num == 0 else 0.0
        if den == 0 and num == 0:
            record_undefined()
            return float("nan")
        return 1.0 - num / den if den != 0 else -math.inf


class R2(_Explained):
    """Coefficient of determination ``1 - SS_res / SS_tot`` with ``SS_res = sum w (y - p)^2`` and
    ``SS_tot = M2_y`` (centred, from Chan's merge). Constant targets follow ``force_finite``.
    NaN with fewer than 2 rows (as scikit-learn). Source: ``sklearn.metrics.r2_score``."""

    name = "r2"
    aliases = ("r2_score", "r_squared", "coefficient_of_determination")
    sklearn = "sklearn.metrics.r2_score"
    undefined = "fewer than 2 rows, or total weight 0"

    def value(self, st: RegressionMomentsState) -> float:
        if int(st["count"]) < 2:
            record_undefined()
            return float("nan")
        return self.ratio(st.sum_sq_e, float(st["m2_y"]))


class ExplainedVariance(_Explained):
    """Explained variance ``1 - Var(y - p) / Var(y)`` (weighted, centred). Constant targets follow
    ``force_finite``. Source: ``sklearn.metrics.explained_variance_score``."""

    name = "explained_variance"
    aliases = ("explained_variance_score",)
    sklearn = "sklearn.metrics.explained_variance_score"

    def value(self, st: RegressionMomentsState) -> float:
        w = float(st["weight"])
        return self.ratio(float(st["m2_e"]) / w, float(st["m2_y"]) / w)


class MeanError(_Regression):
    """Mean signed error (bias) ``sum w (p - y) / sum w``: positive when predictions are too high.
    Source: ``numpy.average(y_pred - y_true, weights=sample_weight)``."""

    name = "mean_error"
    aliases = ("bias", "mean_signed_error")
    higher_is_better = None
    bounds = (-math.inf, math.inf)
    reference = "numpy.average(y_pred - y_true, weights=sample_weight)"

    def value(self, st: RegressionMomentsState) -> float:
        return float(st["mean_e"])


class MaxError(_Regression):
    """Largest absolute error ``max |y - p|`` over rows of positive weight (weights only select
    rows). Source: ``sklearn.metrics.max_error`` (unweighted)."""

    name = "max_error"
    aliases = ("max_absolute_error",)
    sklearn = "sklearn.metrics.max_error"

    def value(self, st: RegressionMomentsState) -> float:
        return float(st["max_abs_e"])


class Pearson(_Regression):
    """Pearson correlation of targets and predictions ``C_yp / sqrt(M2_y M2_p)`` (weighted).

    Undefined (constant targets or predictions) -> NaN. Source: ``scipy.stats.pearsonr``
    (unweighted); weighted: ``numpy.cov(y, p, aweights=w)``.
    """

    name = "pearson"
    aliases = ("pearson_r", "pearson_correlation", "pearsonr")
    higher_is_better = True
    bounds = (-1.0, 1.0)
    reference = "scipy.stats.pearsonr"
    undefined = "constant targets or predictions, or total weight 0"

    def value(self, st: RegressionMomentsState) -> float:
        den = float(st["m2_y"]) * float(st["m2_p"])
        if den <= 0:
            record_undefined()
            return float("nan")
        return max(-1.0, min(1.0, float(st["c_yp"]) / math.sqrt(den)))


__all__ = [
    "ExplainedVariance",
    "MaxError",
    "MeanAbsoluteError",
    "MeanAbsolutePercentageError",
    "MeanError",
    "MeanSquaredError",
    "Pearson",
    "R2",
    "RegressionLayout",
    "RegressionMomentsState",
    "RootMeanSquaredError",
]
