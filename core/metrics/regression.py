"""Regression metrics from one state of exact raw sums.

:class:`RegressionMomentsState` holds, over the folded rows (weights ``w``, targets ``y``,
predictions ``p``, errors ``e = p - y``): the row count, the weight ``W`` and the *exact* sums
(:mod:`mergeable_metrics._util.exact`) ``sum w y``, ``sum w p``, ``sum w y^2``, ``sum w p^2``, ``sum w y p`` (every
product exact too; ``sum w e`` and ``sum w e^2`` follow exactly), ``sum w |e|`` and
``sum w |e| / max(|y|, eps)`` (``|e|`` rounded per row, as scikit-learn does), plus ``max |e|``
over rows of positive weight.

The state merges by fieldwise addition (``max`` for ``max |e|``), which is exact: any batching,
partitioning and merge order gives the same state bit for bit. The centred quantities are
computed at the end, exactly, with rational arithmetic (``M2_y = sum w y^2 - (sum w y)^2 / W``,
...), and rounded once, so R² stays right where a float ``sum y^2 - (sum y)^2 / n`` loses every
digit (targets around 1e8 with unit spread give R² to 1e-15).

Metrics (all weighted; NaN when the total weight is 0): ``mse``, ``rmse``, ``mae``, ``mape``,
``r2``, ``explained_variance``, ``mean_error`` (mean of ``p - y``), ``max_error``, ``pearson``,
``mean_label``, ``mean_prediction``.

Multioutput regression (``Task(kind="regression", num_outputs=D)``, (N, D) targets and
predictions): the layout's ``num_outputs`` gives every sum a leading (D,) output axis (count and
weight are per row); :meth:`RegressionMomentsState.output` is one output's single-output state,
exactly. ``mse``, ``rmse``, ``mae``, ``mape``, ``r2`` and ``explained_variance`` take
scikit-learn's ``multioutput``: ``uniform_average`` (default: the mean of the per-output values),
``raw_values`` (the (D,) per-output values, as the per-class values of ``@none``) and, for ``r2``
and ``explained_variance``, ``variance_weighted`` (weighted by each output's target variance);
e.g. ``"r2@multioutput=raw_values"``. The others (``max_error``, ``mean_error``, ``pearson``; no
``multioutput`` in scikit-learn either) refuse a multioutput task.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np

from mergeable_metrics.inputs.formats import REGRESSION_SUMS
from mergeable_metrics.inputs.validation import Batch, BatchRowError
from mergeable_metrics._util import exact_kernels as _kernels
from mergeable_metrics._util.exact import ExactSums, exact_sum, exact_sum_products, fraction_to_float, known_weight_sum, remember_weight_sum
from mergeable_metrics._util.limits import MAX_NUM_OUTPUTS, check_count
from mergeable_metrics.metrics.base import Metric, record_undefined, recording_undefined
from mergeable_metrics.states.base import State, checked_add

_EPS = float(np.finfo(np.float64).eps)
_SUMS = ("sum_y", "sum_p", "sum_yy", "sum_pp", "sum_yp", "sum_abs_e", "sum_ape")


@dataclass(frozen=True)
class RegressionLayout:
    """One moments state serves every regression metric of a task.

    Attributes:
        num_outputs: None for (N,) targets (scalar sums); D for multioutput regression: every
            sum and ``max_abs_e`` has a leading (D,) output axis (``count`` and ``weight`` stay
            scalars: a row holds all D outputs). Bytes of the releases before multioutput lack
            the setting and read as None, unchanged.
    """

    num_outputs: int | None = None

    def __post_init__(self) -> None:
        if self.num_outputs is not None:
            object.__setattr__(self, "num_outputs", check_count(self.num_outputs, "num_outputs", 1, MAX_NUM_OUTPUTS, "regression layout"))


def output_shape(num_outputs: int | None) -> tuple[int, ...]:
    """``()`` for a single output, ``(D,)`` for D outputs: the shape of a per-output field."""
    return () if num_outputs is None else (int(num_outputs),)


def batch_outputs(batch: Batch, num_outputs: int | None) -> tuple[np.ndarray, np.ndarray]:
    """``(y, p)`` of a batch as float64 arrays of shape (n,) or (n, D), checked against the layout.

    Raises:
        ValueError: no targets or predictions, or their shape does not fit ``num_outputs``.
    """
    if batch.y_true is None or batch.y_pred is None:
        raise ValueError("regression metrics need targets and predictions")
    y = np.asarray(batch.y_true, dtype=np.float64)
    p = np.asarray(batch.y_pred, dtype=np.float64)
    want = (y.shape[0],) + output_shape(num_outputs)
    if y.size == 0 and num_outputs is not None:
        y, p = y.reshape(0, num_outputs), p.reshape(0, num_outputs)
    for what, a in (("targets", y), ("predictions", p)):
        if a.shape != want:
            raise ValueError(f"regression state with num_outputs={num_outputs!r}: {what} of shape {a.shape}, expected {want}")
    return y, p


def upgrade_single_output(cls: type[State], version: int, layout: Any, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """:meth:`State.upgrade` of the regression kinds: kind version 1 (the releases before
    multioutput) holds single-output states, whose fields are those of a layout without
    ``num_outputs``, unchanged; any other older version raises as :meth:`State.upgrade`."""
    if version == 1 and layout.num_outputs is None:
        return arrays
    return State.upgrade.__func__(cls, version, layout, arrays)  # type: ignore[attr-defined]


def per_output_sum(x: np.ndarray, w: np.ndarray | None, *more: np.ndarray):
    """Exact ``sum w x (more...)`` over rows: a scalar sum for (n,) arrays, (D,) sums for (n, D)."""
    factors = [x, *more]
    if x.ndim == 1:
        return exact_sum_products(factors + ([] if w is None else [w]))
    n, d = x.shape
    ws = [] if w is None else [np.repeat(np.asarray(w, dtype=np.float64), d)]
    return exact_sum_products([f.ravel() for f in factors] + ws, index=np.tile(np.arange(d), n), size=d)


class RegressionMomentsState(State):
    """Count, weight and exact raw sums of targets, predictions and errors.

    Fields (float64 scalars but ``count``): ``count`` (int64 rows, including zero-weight ones),
    ``weight``, ``sum_y``, ``sum_p``, ``sum_yy``, ``sum_pp``, ``sum_yp``, ``sum_abs_e``,
    ``sum_ape`` (all exact sums) and ``max_abs_e``; ``sum w (p - y)`` and ``sum w (p - y)^2``
    follow exactly (:meth:`fr`). See the module docstring.
    """

    kind = "regression_moments"
    Layout = RegressionLayout
    FIELDS = (("count", "int64"), ("weight", "float64")) + tuple((n, "float64") for n in _SUMS) + (("max_abs_e", "float64"),)
    EXACT = ("weight",) + _SUMS
    MAXED = ("max_abs_e",)
    CODEC_V1 = False  # version 1 held Chan's centred moments, which do not give the exact sums
    COUNTS = ("count", "weight")
    NONNEGATIVE = ("sum_yy", "sum_pp", "sum_abs_e", "sum_ape", "max_abs_e")
    VERSION = 2  # 2: the layout's num_outputs (multioutput regression); version 1 bytes are single-output
    upgrade = classmethod(upgrade_single_output)

    @classmethod
    def shape(cls, layout: RegressionLayout, field: str) -> tuple[int, ...]:
        return () if field in ("count", "weight") else output_shape(layout.num_outputs)

    @classmethod
    def layout_for(cls, requirements: list[Any], task: Any) -> RegressionLayout:
        return RegressionLayout(getattr(task, "num_outputs", None))

    @classmethod
    def from_batch(cls, layout: RegressionLayout, batch: Batch) -> "RegressionMomentsState":
        """The exact sums of one validated batch ((n,) or, with ``num_outputs``, (n, D) values).

        Raises:
            ValueError: the batch lacks targets or predictions, or their shape does not fit, or
                an error ``|p - y|`` or a percentage error overflows float64 (named by its row).
        """
        y, p = batch_outputs(batch, layout.num_outputs)
        w = batch.sample_weight
        if layout.num_outputs is None and 0 < y.shape[0] <= _kernels.CHUNK and _kernels.ready():
            fused = cls._fused(y, p, w, batch)
            if fused is not None:  # else a value, |e| or ape is not finite: the path below raises
                weight, stack, max_abs_e = fused
                return cls._of_stack(layout, np.array(y.shape[0], dtype=np.int64), weight, stack, np.array(max_abs_e, dtype=np.float64))
        with np.errstate(over="ignore"):
            abs_e = np.abs(p - y)
            ape = abs_e / np.maximum(np.abs(y), _EPS)
        if not (np.isfinite(abs_e).all() and np.isfinite(ape).all()):
            bad = np.flatnonzero(~(np.isfinite(abs_e) & np.isfinite(ape)).reshape(abs_e.shape[0], -1).all(axis=1))[0]
            raise BatchRowError(
                f"regression: the error of row {int(bad)} of the batch overflows float64 (target {np.asarray(y[bad]).tolist()!r}, "
                f"prediction {np.asarray(p[bad]).tolist()!r}: |prediction - target| or |prediction - target| / |target| is inf); "
                "the exact sums of mse, mae and r2 need finite errors",
                int(bad),
            )
        positive = abs_e if w is None else abs_e[w > 0]
        shape = output_shape(layout.num_outputs)
        a = {
            "count": np.int64(y.shape[0]),
            "weight": np.float64(y.shape[0]) if w is None else exact_sum(w),
            "sum_y": per_output_sum(y, w),
            "sum_p": per_output_sum(p, w),
            "sum_yy": per_output_sum(y, w, y),
            "sum_pp": per_output_sum(p, w, p),
            "sum_yp": per_output_sum(y, w, p),
            "sum_abs_e": per_output_sum(abs_e, w),
            "sum_ape": per_output_sum(ape, w),
            "max_abs_e": positive.max(axis=0).astype(np.float64) if positive.shape[0] else np.zeros(shape),
        }
        return cls(layout, a)

    @staticmethod
    def _presummed(batch: Batch, y: np.ndarray, p: np.ndarray, w: np.ndarray | None) -> Any:
        """The kernel's result that the validation computed for these very arrays
        (:attr:`Batch.sums`, see :func:`mergeable_metrics.inputs.formats.make_batch`), or None."""
        pre = batch.sums
        if pre is None or pre[0] is not REGRESSION_SUMS or pre[1] is not y or pre[2] is not p or pre[3] is not w:
            return None
        return pre[4]

    @classmethod
    def _fused(cls, y: np.ndarray, p: np.ndarray, w: np.ndarray | None, batch: Batch | None = None) -> tuple[Any, tuple[np.ndarray, int], float] | None:
        """``(weight, (D, exp), max_abs_e)`` of one single-output batch through the compiled fused
        kernel (:func:`mergeable_metrics._util.exact_kernels.regression_stacked`: the raw sums of
        ``_SUMS`` as the rows of ``D``), or None (a value, ``|e|`` or ape is not finite)."""
        known = None if w is None else known_weight_sum(w)  # the example count's, in a plan's fold
        fused = None if batch is None else cls._presummed(batch, y, p, w)
        if fused is None:
            fused = _kernels.regression_stacked(y, p, w, known is None)
        if fused is None:
            return None
        wraw, stack, max_abs_e = fused
        weight: Any = ExactSums.of_count(y.shape[0]) if w is None else (known if known is not None else ExactSums.lazy(*wraw, ()))
        if w is not None and known is None:
            remember_weight_sum(w, weight)
        return weight, stack, max_abs_e

    @classmethod
    def _of_stack(
        cls, layout: RegressionLayout, count: np.ndarray, weight: ExactSums, stack: tuple[np.ndarray, int], max_abs_e: np.ndarray
    ) -> "RegressionMomentsState":
        """A single-output state whose ``_SUMS`` are the rows of the raw matrix ``stack`` (the exact
        sums of the reference path below, so the same state bit for bit once rounded); the state
        keeps ``stack`` so that :meth:`fold` adds a batch's seven sums in one compiled call."""
        D, e = stack
        a: dict[str, Any] = {"count": count, "weight": weight}
        for k, name in enumerate(_SUMS):
            a[name] = ExactSums.lazy(D[k : k + 1], e, ())
        a["max_abs_e"] = max_abs_e
        out = cls._of_sums(layout, a)  # every field has its dtype and shape: no constructor checks
        object.__setattr__(out, "_stack", stack)
        return out

    def fold(self, batch: Batch) -> "RegressionMomentsState":
        """:meth:`State.fold`; a single-output state from the fused kernel adds the batch's seven
        raw sums to its own in one compiled call (the same exact sums as the fieldwise merge)."""
        stack = self.__dict__.get("_stack")
        if stack is not None and self.layout.num_outputs is None and batch.row_of is None:
            y, p = batch_outputs(batch, None)
            w = batch.sample_weight
            if 0 < y.shape[0] <= _kernels.CHUNK and y.ndim == 1 and p.ndim == 1:
                fused = self._fused(y, p, w, batch)
                if fused is not None:
                    weight, (D, e), max_abs_e = fused
                    A, ea = stack
                    if A.shape[1] == 0:
                        total = (D, e)
                    elif D.shape[1] == 0:
                        total = (A, ea)
                    else:
                        Dn, en = _kernels.add_canonical(A, ea, D, e)
                        total = (Dn, int(en))
                    return self._of_stack(
                        self.layout,
                        checked_add(self.arrays["count"], np.array(y.shape[0], dtype=np.int64), f"{self.kind}.count"),
                        self.exact["weight"] + weight,
                        total,
                        np.maximum(self.arrays["max_abs_e"], np.array(max_abs_e, dtype=np.float64)),
                    )
        return super().fold(batch)

    def validate(self, integral: bool = False) -> "RegressionMomentsState":
        """:meth:`State.validate`, and: no weight means zero weighted sums (every term is
        ``w * ...``), no rows means a zero state.

        Raises:
            ValueError: naming the field.
        """
        super().validate(integral)
        a = self.arrays
        if float(a["weight"]) == 0 or int(a["count"]) == 0:
            names = [n for n, _ in self.FIELDS if n not in ("count", "weight")] if int(a["count"]) == 0 else list(_SUMS)
            bad = next((n for n in names if np.any(a[n] != 0)), None)
            if bad is None and int(a["count"]) == 0 and float(a["weight"]) != 0:
                bad = "weight"
            if bad is not None:
                v = a[bad].tolist()
                raise ValueError(f"invalid {self.kind} state: {bad} = {v!r} with count {int(a['count'])} and weight {float(a['weight'])!r} (must be 0)")
        return self

    @property
    def num_outputs(self) -> int | None:
        """The layout's ``num_outputs`` (None: a single output, scalar sums)."""
        return self.layout.num_outputs

    def output(self, j: int) -> "RegressionMomentsState":
        """The single-output state of output ``j`` (exact: its sums are taken, not recomputed);
        a single-output state is its own output 0."""
        if self.layout.num_outputs is None:
            if j != 0:
                raise IndexError(f"output {j} of a single-output regression state")
            return self
        a: dict[str, Any] = {"count": self.arrays["count"], "weight": self.exact["weight"], "max_abs_e": self.arrays["max_abs_e"][j]}
        for n in _SUMS:
            a[n] = self.exact[n].take(slice(j, j + 1), ())
        return type(self)(RegressionLayout(), a)

    def outputs(self) -> list["RegressionMomentsState"]:
        """The single-output states of every output (one for a single-output state)."""
        return [self.output(j) for j in range(self.layout.num_outputs or 1)]

    # -- exact derived quantities ------------------------------------------------------------
    def mean(self, field: str) -> float:
        """``sum / weight`` of a sum field, correctly rounded (the weight must be nonzero)."""
        return fraction_to_float(self.fr(field) / self.fr("weight"))

    def fr(self, field: str) -> Fraction:
        """The exact value of one sum field, or of ``sum_e = sum w (p - y)`` and ``sum_ee = sum w
        (p - y)^2``, derived exactly from the others."""
        if field == "sum_e":
            return self.fr("sum_p") - self.fr("sum_y")
        if field == "sum_ee":
            return self.fr("sum_pp") - 2 * self.fr("sum_yp") + self.fr("sum_yy")
        return self.exact[field].fraction()

    def centred(self, a: str, b: str) -> Fraction:
        """Exact ``sum w (a - mean a)(b - mean b) = sum w a b - sum w a sum w b / W``, with ``a``,
        ``b`` in ``y``, ``p`` or both ``e`` (``e = p - y``)."""
        prod = "sum_" + "".join(sorted((a, b), key="ype".index))
        return self.fr(prod) - self.fr(f"sum_{a}") * self.fr(f"sum_{b}") / self.fr("weight")

    @property
    def sum_sq_e(self) -> float:
        """``sum w (p - y)^2`` (the residual sum of squares), correctly rounded."""
        return fraction_to_float(self.fr("sum_ee"))


#: scikit-learn's ``multioutput`` strings: one value per output, their mean, or their mean
#: weighted by each output's target variance (R² and explained variance only)
MULTIOUTPUT = ("raw_values", "uniform_average", "variance_weighted")


def configure_multioutput(metric: Metric, options: tuple[str, ...]) -> None:
    """Check a regression metric's ``multioutput`` against ``options``; a metric without the
    parameter (scikit-learn's has none) refuses a multioutput task.

    Raises:
        ValueError: naming the metric, the setting and the accepted values.
    """
    d = getattr(metric.task, "num_outputs", None)
    if "multioutput" not in metric.params:
        if d is not None:
            raise ValueError(
                f"metric {metric.name!r} has no multioutput form (no multioutput parameter, as in scikit-learn): "
                f"it cannot be computed for a multioutput regression task (num_outputs={d})"
            )
        return
    m = metric.p["multioutput"]
    if isinstance(m, (list, tuple, np.ndarray)) or (isinstance(m, str) and "|" in m) or (isinstance(m, (int, float)) and not isinstance(m, bool)):
        metric.p["multioutput"], text = output_weights(metric, m, 1 if d is None else d)
        metric.given["multioutput"] = text
        return
    if m not in options:
        raise ValueError(
            f"metric {metric.name!r}: multioutput must be one of {', '.join(options)}; got {m!r} (or an array of output weights: multioutput=0.3|0.7)"
        )


def output_weights(metric: Metric, value: Any, d: int) -> tuple[tuple[float, ...], str]:
    """scikit-learn's ``multioutput`` as an array of output weights: ``(weights, canonical text)``
    from ``"0.3|0.7"`` (metric strings), a number (one output) or a sequence.

    Raises:
        ValueError: a weight that is not a finite number >= 0, weights summing to 0, or not one
            weight per output (naming the metric, the weights and the number of outputs).
    """
    items = [x.strip() for x in value.split("|")] if isinstance(value, str) else (list(np.ravel(value)) if not isinstance(value, (int, float)) else [value])
    try:
        w = tuple(float(x) for x in items)
    except (TypeError, ValueError):
        raise ValueError(f"metric {metric.name!r}: multioutput weights must be numbers, got {value!r}") from None
    if len(w) != d:
        raise ValueError(f"metric {metric.name!r}: there must be as many multioutput weights ({len(w)}) as outputs ({d}), as in scikit-learn")
    if not all(math.isfinite(x) and x >= 0 for x in w) or sum(w) <= 0:
        raise ValueError(f"metric {metric.name!r}: multioutput weights must be finite numbers >= 0 with a positive sum, got {list(w)}")
    return w, "|".join(repr(int(x)) if x.is_integer() and abs(x) < 1e15 else repr(x) for x in w)


def combine_outputs(metric: Metric, states: list[Any], value_of: Any, weight_of: Any = None) -> Any:
    """A metric's value over outputs, as scikit-learn's ``multioutput``: ``value_of(state)`` of
    each output's single-output state, then ``raw_values`` (a (D,) array), ``uniform_average``
    (their ``np.average``; the value itself for one output), a tuple of output weights (their
    ``np.average`` with those weights) or ``variance_weighted``
    (``np.average`` weighted by ``weight_of(state)``, uniform when every weight is 0). An
    output's undefined value is recorded for that output (``raw_values``) or for the value."""
    how = metric.p.get("multioutput", "uniform_average")
    raw = isinstance(how, str) and how == "raw_values"
    vals = np.empty(len(states))
    for j, st in enumerate(states):
        with recording_undefined() as events:
            vals[j] = value_of(st)
        for e in events:
            record_undefined((j,) if raw else None, e.fill)
    if raw:
        return vals
    with np.errstate(invalid="ignore"):  # -inf (force_finite=false) times a zero weight: NaN, as scikit-learn
        if isinstance(how, tuple):  # an array of output weights
            return float(np.average(vals, weights=np.array(how)))
        if how == "variance_weighted":
            w = np.array([float(weight_of(st)) for st in states])
            if w.any():
                return float(np.average(vals, weights=w))
        return float(np.average(vals))


class _Regression(Metric):
    """A metric of the regression moments state (regression tasks). Metrics with a
    ``multioutput`` parameter list the values they accept in ``multioutput_options``."""

    tasks = ("regression",)
    params: ClassVar[dict[str, Any]] = {}
    multioutput_options: ClassVar[tuple[str, ...]] = ("raw_values", "uniform_average")
    higher_is_better = False
    bounds = (0.0, math.inf)
    undefined = "no examples (total weight 0)"

    def configure(self) -> None:
        configure_multioutput(self, self.multioutput_options)

    def requires(self) -> list[tuple[type[State], Any]]:
        return [(RegressionMomentsState, None)]

    def needs(self) -> frozenset[str]:
        return frozenset({"target", "prediction"})

    def compute(self, states: dict[str, State]) -> Any:
        st = states["regression_moments"]
        if "multioutput" not in self.params:
            return self.one(st)
        return combine_outputs(self, st.outputs(), self.one, self.output_weight)

    def one(self, st: RegressionMomentsState) -> float:
        """The value of one output (a single-output state)."""
        if float(st["weight"]) == 0:
            record_undefined()
            return float("nan")
        return float(self.value(st))

    def output_weight(self, st: RegressionMomentsState) -> float:
        """An output's weight in ``variance_weighted``: its weighted target sum of squares (0 without weight:
        then every output's is 0 and the average is uniform, of undefined values)."""
        if float(st["weight"]) == 0:
            return 0.0
        return fraction_to_float(st.centred("y", "y"))

    def value(self, st: RegressionMomentsState) -> float:
        raise NotImplementedError


class MeanSquaredError(_Regression):
    """Mean squared error ``sum w (y - p)^2 / sum w``. Source: ``sklearn.metrics.mean_squared_error``."""

    name = "mse"
    full_name = "Mean squared error"
    aliases = ("mean_squared_error",)
    sklearn = "sklearn.metrics.mean_squared_error"

    params = {"multioutput": "uniform_average"}

    def value(self, st: RegressionMomentsState) -> float:
        return fraction_to_float(st.fr("sum_ee") / st.fr("weight"))


class RootMeanSquaredError(_Regression):
    """Root mean squared error ``sqrt(mse)``. Source: ``sklearn.metrics.root_mean_squared_error``."""

    name = "rmse"
    full_name = "Root mean squared error"
    aliases = ("root_mean_squared_error",)
    sklearn = "sklearn.metrics.root_mean_squared_error"

    params = {"multioutput": "uniform_average"}

    def value(self, st: RegressionMomentsState) -> float:
        return math.sqrt(fraction_to_float(st.fr("sum_ee") / st.fr("weight")))


class MeanAbsoluteError(_Regression):
    """Mean absolute error ``sum w |y - p| / sum w``. Source: ``sklearn.metrics.mean_absolute_error``."""

    name = "mae"
    full_name = "Mean absolute error"
    aliases = ("mean_absolute_error",)
    sklearn = "sklearn.metrics.mean_absolute_error"

    params = {"multioutput": "uniform_average"}

    def value(self, st: RegressionMomentsState) -> float:
        return st.mean("sum_abs_e")


class MeanAbsolutePercentageError(_Regression):
    """Mean absolute percentage error ``sum w |y - p| / max(|y|, eps) / sum w`` (a fraction, not
    percent; ``eps`` is float64 machine epsilon, so ``y == 0`` gives huge values, as in
    scikit-learn). Source: ``sklearn.metrics.mean_absolute_percentage_error``."""

    name = "mape"
    full_name = "Mean absolute percentage error"
    aliases = ("mean_absolute_percentage_error",)
    sklearn = "sklearn.metrics.mean_absolute_percentage_error"

    params = {"multioutput": "uniform_average"}

    def value(self, st: RegressionMomentsState) -> float:
        return st.mean("sum_ape")


class _Explained(_Regression):
    """Shared ``force_finite`` handling (scikit-learn's): with a constant target the ratio is 0/0
    or x/0; ``force_finite=true`` (default) gives 1.0 for perfect predictions and 0.0 otherwise,
    ``false`` gives NaN or -inf."""

    params = {"force_finite": True, "multioutput": "uniform_average"}
    multioutput_options = MULTIOUTPUT
    higher_is_better = True
    bounds = (-math.inf, 1.0)

    def configure(self) -> None:
        super().configure()
        f = self.p["force_finite"]
        if f not in (True, False, 0, 1):
            raise ValueError(f"metric {self.name!r}: force_finite must be true or false, got {f!r}")
        self.p["force_finite"] = bool(f)
        if "force_finite" in self.given:
            self.given["force_finite"] = bool(f)

    def ratio(self, num: Fraction, den: Fraction) -> float:
        """``1 - num / den`` (exact, rounded once) or the ``force_finite`` value."""
        if den != 0 and num != 0:
            return fraction_to_float(1 - num / den)
        if self.p["force_finite"]:
            return 1.0 if num == 0 else 0.0
        if den == 0 and num == 0:
            record_undefined()
            return float("nan")
        return fraction_to_float(1 - num / den) if den != 0 else -math.inf


class R2(_Explained):
    """Coefficient of determination ``1 - SS_res / SS_tot`` with ``SS_res = sum w (y - p)^2`` and
    ``SS_tot = M2_y`` (centred, exactly, from the exact sums). Constant targets follow ``force_finite``.
    NaN with fewer than 2 rows (as scikit-learn). Source: ``sklearn.metrics.r2_score``."""

    name = "r2"
    full_name = "R² (coefficient of determination)"
    aliases = ("r2_score", "r_squared", "coefficient_of_determination")
    sklearn = "sklearn.metrics.r2_score"
    undefined = "fewer than 2 rows, or total weight 0"

    def value(self, st: RegressionMomentsState) -> float:
        if int(st["count"]) < 2:
            record_undefined()
            return float("nan")
        return self.ratio(st.fr("sum_ee"), st.centred("y", "y"))


class ExplainedVariance(_Explained):
    """Explained variance ``1 - Var(y - p) / Var(y)`` (weighted, centred). Constant targets follow
    ``force_finite``. Source: ``sklearn.metrics.explained_variance_score``."""

    name = "explained_variance"
    full_name = "Explained variance"
    aliases = ("explained_variance_score",)
    sklearn = "sklearn.metrics.explained_variance_score"

    def value(self, st: RegressionMomentsState) -> float:
        return self.ratio(st.centred("e", "e"), st.centred("y", "y"))


class MeanError(_Regression):
    """Mean signed error (bias) ``sum w (p - y) / sum w``: positive when predictions are too high.
    Source: ``numpy.average(y_pred - y_true, weights=sample_weight)``."""

    name = "mean_error"
    full_name = "Mean error (bias)"
    aliases = ("bias", "mean_signed_error")
    higher_is_better = None
    bounds = (-math.inf, math.inf)
    reference = "numpy.average(y_pred - y_true, weights=sample_weight)"

    def value(self, st: RegressionMomentsState) -> float:
        return fraction_to_float(st.fr("sum_e") / st.fr("weight"))


class MaxError(_Regression):
    """Largest absolute error ``max |y - p|`` over rows of positive weight (weights only select
    rows). Source: ``sklearn.metrics.max_error`` (unweighted)."""

    name = "max_error"
    full_name = "Max error"
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
    full_name = "Pearson correlation"
    aliases = ("pearson_r", "pearson_correlation", "pearsonr")
    higher_is_better = True
    bounds = (-1.0, 1.0)
    reference = "scipy.stats.pearsonr"
    undefined = "constant targets or predictions, or total weight 0"

    def value(self, st: RegressionMomentsState) -> float:
        den = st.centred("y", "y") * st.centred("p", "p")
        if den <= 0:
            record_undefined()
            return float("nan")
        c = st.centred("y", "p")
        # the sign of c itself: copysign(x, c) would convert c to a float, which overflows past 1.8e308
        return max(-1.0, min(1.0, math.copysign(math.sqrt(fraction_to_float(c * c / den)), -1.0 if c < 0 else 1.0)))


__all__ = [
    "MULTIOUTPUT",
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
