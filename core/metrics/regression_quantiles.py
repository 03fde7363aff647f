"""Median absolute error and quantiles of the absolute error, from a bounded quantile state.

:class:`AbsoluteErrorDistributionState` is the score distribution of :mod:`mergeable_metrics.states.score_distribution`
with the absolute error ``|y_pred - y_true|`` of each row as its score: the same canonical bins
(:mod:`mergeable_metrics.states.score_bins`: order-preserving float keys, a level chosen from the configuration and
the data only), the same exact weight sums, the same merge, codec and slice-vectorised fold. So it
is **exact** (one bin per distinct absolute error, with its summed weight) while a slice's distinct
errors fit the ``capacity``, and beyond it holds coarser bins whose edges depend on the capacity
only; any batching, partitioning and merge order gives the same state bit for bit.

An error that overflows float64 (``|1e308 - (-1e308)|``) is ``inf`` for scikit-learn. It is kept,
not dropped: its weight is held as the state's ``pos`` weight of the bin of the largest finite
float (``neg`` holds the finite errors), so it sorts above every finite error.

Quantile rule: scikit-learn's weighted median (``sklearn.utils.stats._weighted_percentile`` with
``average=True``, the "averaged inverted CDF"; ``np.median`` without weights). With the distinct
errors ``x_1 < x_2 < ...`` of positive weight and their cumulative weights ``C_i`` (total ``W``),
the ``q`` quantile is ``x_i`` for the first ``i`` with ``C_i >= q W``, or ``(x_i + x_{i+1}) / 2``
when ``C_i == q W`` exactly (``x_i`` when there is no ``x_{i+1}``). The comparisons are exact
(rational arithmetic on the exact weight sums; ``q`` is read as the decimal it is written as, so
``q = 0.9`` is ``9/10``); scikit-learn compares float cumulative sums with a tolerance of one
``eps``, so with fractional weights a cumulative weight within about 1e-16 of ``q W`` can differ.

A compressed state knows each bin's total weight but not where its errors lie inside the bin: the
rank ``q W`` falls in one bin (or on the boundary between two), and the value is certified to lie
in the bin's ``[lowest, highest]`` float (on a boundary, half the sum of the two bins' lowest and
highest floats: float rounding of ``(a + b) / 2`` is monotone, so the bounds hold for the rounded
value too). Such values are :class:`mergeable_metrics.metrics.base.Interval` ``(value, lower, upper)`` (``bounds``
in results); ``value`` is the middle of the bounds.

Multioutput regression (``num_outputs=D``, (N, D) targets and predictions):
:class:`OutputAbsoluteErrorDistributionState` holds one such canonical distribution per output
column (the per-column machinery of :class:`~mergeable_metrics.states.score_distribution.ClassScoreDistributionState`,
with the overflow flag of each entry as the column's label), and
:meth:`~OutputAbsoluteErrorDistributionState.output` gives output ``j`` as exactly the
single-output state of column ``j``. The metrics take scikit-learn's ``multioutput``:
``uniform_average`` (default: the mean of the D per-output values; intervals average their
bounds, still certified) or ``raw_values`` (the (D,) per-output values; for a compressed state the
middle of each output's bounds, the metric then is not exact).

Metrics (regression tasks; NaN when the total weight is 0): ``median_absolute_error``
(scikit-learn's) and ``quantile_absolute_error@q=Q``.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np

from dataclasses import dataclass

from mergeable_metrics.metrics.regression import batch_outputs, configure_multioutput
from mergeable_metrics.inputs.validation import Batch
from mergeable_metrics._util.exact import ExactSums
from mergeable_metrics._util.limits import MAX_NUM_OUTPUTS, check_count
from mergeable_metrics.metrics.base import Interval, Metric, record_undefined
from mergeable_metrics.states.score_distribution import (
    KEY_MAX_FINITE,
    ClassScoreDistributionState,
    ScoreDistributionLayout,
    ScoreDistributionState,
    bin_lower_scores,
    bin_upper_scores,
    check_capacity,
    default_label_capacity,
)
from mergeable_metrics.states.base import State

__all__ = [
    "AbsoluteErrorDistributionState",
    "MedianAbsoluteError",
    "OutputAbsoluteErrorDistributionLayout",
    "OutputAbsoluteErrorDistributionState",
    "QuantileAbsoluteError",
    "error_quantile",
]

_MAX = float(np.finfo(np.float64).max)


class AbsoluteErrorDistributionState(ScoreDistributionState):
    """Summed weight per bin of absolute errors ``|y_pred - y_true|``: exact per distinct error up
    to the layout's ``capacity`` (a :class:`~mergeable_metrics.states.score_distribution.ScoreDistributionLayout`).

    Fields (those of :class:`~mergeable_metrics.states.score_distribution.ScoreDistributionState`): ``level``, ``keys``
    (m,) ascending bin keys of the errors (>= 0), ``neg`` (m,) the summed weight of the finite
    errors per bin, ``pos`` (m,) the weight of errors that overflowed to ``inf`` (nonzero only
    in the bin of the largest finite float). Zero-weight rows leave no trace (as in
    scikit-learn's weighted median, which skips them).

    Raises:
        ValueError: a batch without targets and predictions; on construction (decoded bytes),
            negative error keys or overflow weight outside the top bin; on merge, another
            ``capacity``.
    """

    kind = "absolute_error_distribution"

    def __init__(self, layout: ScoreDistributionLayout, arrays: dict[str, np.ndarray], _trusted: bool = False):
        super().__init__(layout, arrays, _trusted)
        if _trusted:
            return
        a = self.arrays
        keys, level = a["keys"], int(a["level"])
        problems = []
        if keys.size and int(keys[0]) < 0:
            problems.append("keys of negative absolute errors")
        if keys.size and np.any(a["pos"][keys != (KEY_MAX_FINITE >> level)] != 0):
            problems.append("overflowed (inf) errors outside the bin of the largest finite float")
        if problems:
            raise ValueError(f"invalid {self.kind} state: " + "; ".join(problems))

    @classmethod
    def _inputs(cls, batch: Batch) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """``(|y_pred - y_true|, overflowed, w)``: an error that overflows to ``inf`` is placed at
        the largest finite float with label 1 (see the class docstring)."""
        if batch.y_true is None or batch.y_pred is None:
            raise ValueError("median_absolute_error needs targets and predictions")
        e, inf = _abs_errors(np.asarray(batch.y_true, dtype=np.float64), np.asarray(batch.y_pred, dtype=np.float64))
        return e, inf, batch.sample_weight

    def total_weight(self) -> float:
        """The summed weight of the rows (finite and overflowed errors)."""
        return sum(self.totals())


def _abs_errors(y: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(|p - y|, overflowed)`` of (n,) or (n, D) arrays: an error that overflows to ``inf`` is
    placed at the largest finite float, with the int64 flag 1."""
    with np.errstate(over="ignore"):
        e = np.abs(p - y)
    inf = np.isinf(e)
    if inf.any():
        e = np.where(inf, _MAX, e)
    return e, inf.astype(np.int64)


@dataclass(frozen=True)
class OutputAbsoluteErrorDistributionLayout:
    """Configuration of :class:`OutputAbsoluteErrorDistributionState` (multioutput regression).

    Attributes:
        num_outputs: D >= 1 (the (N, D) targets and predictions have D columns; at most
            :data:`mergeable_metrics._util.limits.MAX_NUM_OUTPUTS`).
        capacity: bins per output column (int in [2, 2**26]); None picks
            :func:`~mergeable_metrics.states.score_distribution.default_label_capacity` (each bin stores a key and
            two weights: about 1 MiB per state; D = 1: 40,000 bins, as the single-output state).
    """

    num_outputs: int
    capacity: int | None = None

    def __post_init__(self) -> None:
        d = check_count(self.num_outputs, "num_outputs", 1, MAX_NUM_OUTPUTS, "absolute error layout")
        object.__setattr__(self, "num_outputs", d)
        cap = default_label_capacity(d) if self.capacity is None else self.capacity
        object.__setattr__(self, "capacity", ScoreDistributionLayout(cap).capacity)

    @property
    def columns(self) -> int:
        """Error columns (one canonical distribution each): D."""
        return self.num_outputs

    @property
    def width(self) -> int:
        """Weights per bin: of finite errors (label 0) and of overflowed errors (label 1)."""
        return 2


class OutputAbsoluteErrorDistributionState(ClassScoreDistributionState):
    """Per output column j of multioutput regression: the canonical distribution of the absolute
    errors ``|y_pred[:, j] - y_true[:, j]|``, exact per distinct error up to the layout's
    ``capacity`` per column, coarser canonical bins beyond (the binning, merge, exact weights and
    codec of :class:`~mergeable_metrics.states.score_distribution.ClassScoreDistributionState`, column by column).

    Fields: as :class:`~mergeable_metrics.states.score_distribution.ClassScoreDistributionState` with K = D columns
    and ``weights`` (M * 2,), row-major (M, 2): per bin the summed weight of the finite errors,
    then of the errors that overflowed to ``inf`` (nonzero only in the bin of the largest finite
    float). Column j is bit for bit the single-output :class:`AbsoluteErrorDistributionState` of
    output j (:meth:`output`). Zero-weight rows leave no trace.

    Raises:
        ValueError: a batch whose targets or predictions are not (N, D); on construction
            (decoded bytes), broken invariants; merging or decoding states of another
            ``num_outputs`` or ``capacity`` (named in the message).
    """

    kind = "output_absolute_error_distribution"
    Layout = OutputAbsoluteErrorDistributionLayout
    _WHAT = "multioutput median absolute error"

    def __init__(self, layout: OutputAbsoluteErrorDistributionLayout, arrays: dict[str, np.ndarray], _trusted: bool = False):
        super().__init__(layout, arrays, _trusted)
        if _trusted:
            return
        a = self.arrays
        keys, levels, offsets = a["keys"], a["levels"], a["offsets"]
        w = a["weights"].reshape(-1, 2)
        problems = []
        if keys.size and int(keys.min()) < 0:
            problems.append("keys of negative absolute errors")
        top = np.repeat(KEY_MAX_FINITE >> levels, np.diff(offsets))
        if np.any(w[:, 1][keys != top] != 0):
            problems.append("overflowed (inf) errors outside the bin of the largest finite float")
        if problems:
            raise ValueError(f"invalid {self.kind} state: " + "; ".join(problems))

    @classmethod
    def layout_for(cls, requirements: list[Any], task: Any) -> OutputAbsoluteErrorDistributionLayout:
        """The task's ``num_outputs`` and the largest requested capacity (None = the default)."""
        d = task.num_outputs
        default = default_label_capacity(d)
        caps = [default if r is None else int(r) for r in requirements]
        return OutputAbsoluteErrorDistributionLayout(d, max(caps) if caps else default)

    @staticmethod
    def _column_labels(y: np.ndarray, c: int) -> np.ndarray:
        """Column ``c`` of the (N, D) overflow flags."""
        return np.ascontiguousarray(y[:, c])

    @classmethod
    def _error_batch(cls, layout: OutputAbsoluteErrorDistributionLayout, batch: Batch) -> Batch:
        """The batch as the per-column machinery reads it: (N, D) errors as scores, (N, D)
        overflow flags as labels."""
        y, p = batch_outputs(batch, layout.num_outputs)
        e, inf = _abs_errors(y, p)
        return Batch(inf, e, None, batch.sample_weight)

    @classmethod
    def from_batch(cls, layout: OutputAbsoluteErrorDistributionLayout, batch: Batch) -> "OutputAbsoluteErrorDistributionState":  # type: ignore[override]
        """The canonical state of one validated batch ((N, D) ``y_true`` and ``y_pred``).

        Raises:
            ValueError: no targets or predictions, or not (N, D) (naming ``num_outputs``).
        """
        return super().from_batch(layout, cls._error_batch(layout, batch))  # type: ignore[return-value]

    def fold(self, batch: Batch) -> "OutputAbsoluteErrorDistributionState":  # type: ignore[override]
        """``self.merge(from_batch(layout, batch))``, binning each column at its current level."""
        return super().fold(self._error_batch(self.layout, batch))  # type: ignore[return-value]

    def output(self, j: int) -> AbsoluteErrorDistributionState:
        """Output ``j``'s single-output state (capacity: this layout's), exactly."""
        a = self.arrays
        lo, hi = int(a["offsets"][j]), int(a["offsets"][j + 1])
        w = self.exact["weights"]
        neg, pos = w.take(np.arange(2 * lo, 2 * hi, 2)), w.take(np.arange(2 * lo + 1, 2 * hi, 2))
        return AbsoluteErrorDistributionState._make(  # type: ignore[return-value]
            ScoreDistributionLayout(self.layout.capacity), a["keys"][lo:hi], pos, neg, int(a["levels"][j])
        )

    def outputs(self) -> list[AbsoluteErrorDistributionState]:
        """The D single-output states (:meth:`output`)."""
        return [self.output(j) for j in range(self.layout.num_outputs)]

    def class_totals(self) -> np.ndarray:  # pragma: no cover - the multiclass accessor
        raise TypeError("an output absolute error distribution has per-output states: use output(j)")

    def __repr__(self) -> str:
        a = self.arrays
        return (
            f"OutputAbsoluteErrorDistributionState(num_outputs={self.layout.num_outputs}, capacity={self.layout.capacity}, "
            f"levels={a['levels'].tolist()}, bins={np.diff(a['offsets']).tolist()})"
        )


def _entries(state: AbsoluteErrorDistributionState) -> tuple[np.ndarray, np.ndarray, ExactSums]:
    """``(lower, upper, cumulative)``: per ascending entry (a bin of finite errors, then the
    overflowed errors), the lowest and highest error it can hold and the exact cumulative weight."""
    a = state.arrays
    keys, level = a["keys"], state.level
    finite = a["neg"] > 0
    lo, hi = bin_lower_scores(keys[finite], level), bin_upper_scores(keys[finite], level)
    parts: list[Any] = [state.exact["neg"].take(np.flatnonzero(finite))]
    if a["pos"].any():
        lo, hi = np.append(lo, np.inf), np.append(hi, np.inf)
        parts.append(state.exact["pos"].regroup(np.zeros(keys.shape[0], dtype=np.int64), 1))
    w = ExactSums.stack(parts, (lo.shape[0],)) if len(parts) > 1 else parts[0]
    return lo, hi, w.cumsum()


def _at(cum: ExactSums, i: int) -> Fraction:
    return cum.take(np.array([i])).fraction()


def error_quantile(state: AbsoluteErrorDistributionState, q: Fraction) -> float | Interval:
    """The ``q`` quantile of the absolute errors (see the module docstring for the rule).

    Args:
        state: the merged state.
        q: the quantile level in [0, 1], exact.

    Returns:
        A float (exact state), an :class:`~mergeable_metrics.metrics.base.Interval` with certified bounds
        (compressed state, unless the bounds meet), or NaN with no weight.
    """
    lo, hi, cum = _entries(state)
    m = lo.shape[0]
    if m == 0:
        return math.nan
    total = _at(cum, m - 1)
    if total == 0:  # pragma: no cover - every entry has positive weight
        return math.nan
    t = q * total
    a, b = 0, m - 1  # the first entry with C >= t (C at m - 1 is the total, >= t)
    while a < b:
        mid = (a + b) // 2
        if _at(cum, mid) >= t:
            b = mid
        else:
            a = mid + 1
    i = a
    if _at(cum, i) == t and i + 1 < m:  # on the boundary: the mean of this error and the next
        with np.errstate(over="ignore"):
            lower = float((np.float64(lo[i]) + np.float64(lo[i + 1])) / 2)
            upper = float((np.float64(hi[i]) + np.float64(hi[i + 1])) / 2)
    else:
        lower, upper = float(lo[i]), float(hi[i])
    if lower == upper:
        return lower
    return Interval(lower / 2 + upper / 2, lower, upper)


def _decimal(x: float) -> Fraction:
    """A float read as the shortest decimal that rounds to it (``0.9`` is ``9/10``)."""
    return Fraction(repr(float(x)))


class QuantileAbsoluteError(Metric):
    """The ``q`` quantile of the absolute errors ``|y_pred - y_true|`` (weighted; ``q`` in [0, 1],
    default 0.5), by scikit-learn's weighted-median rule (averaged inverted CDF; ``q = 0.5`` is
    :class:`MedianAbsoluteError`). Exact while a slice's distinct errors fit ``capacity``
    (default 40,000 bins); beyond, certified bounds. NaN with no examples (total weight 0).
    Multioutput regression (``num_outputs=D``): ``multioutput="uniform_average"`` (default, the
    mean of the per-output values) or ``"raw_values"`` (the (D,) values), per output column of an
    :class:`OutputAbsoluteErrorDistributionState`.
    Reference: ``numpy.quantile(|e|, q, method="averaged_inverted_cdf")`` (unweighted),
    ``sklearn.utils.stats._weighted_percentile(|e|, w, 100 q, average=True)`` (weighted)."""

    name = "quantile_absolute_error"
    full_name = "Quantile absolute error"
    aliases = ("absolute_error_quantile",)
    params: ClassVar[dict[str, Any]] = {"q": 0.5, "capacity": None, "multioutput": "uniform_average"}
    positional = "q"
    tasks = ("regression",)
    higher_is_better = False
    bounds = (0.0, math.inf)
    exact = False
    exact_when: ClassVar[str] = "the slice's distinct absolute errors fit in the state's capacity (level 0)"
    reference = "numpy.quantile(abs(y_pred - y_true), q, method='averaged_inverted_cdf')"
    undefined = "no examples (total weight 0)"

    def configure(self) -> None:
        q = self.p["q"]
        if isinstance(q, bool) or not isinstance(q, (int, float, np.integer, np.floating)) or not 0.0 <= float(q) <= 1.0:
            raise ValueError(f"metric {self.name!r}: q must be a number in [0, 1], got {q!r}")
        self.p["q"] = float(q)
        self.p["capacity"] = check_capacity(self.p["capacity"], self.name)
        configure_multioutput(self, ("raw_values", "uniform_average"))

    def level(self) -> Fraction:
        return _decimal(self.p["q"])

    def _state_type(self) -> type[State]:
        multi = getattr(self.task, "num_outputs", None) is not None
        return OutputAbsoluteErrorDistributionState if multi else AbsoluteErrorDistributionState

    def requires(self) -> list[tuple[type[State], Any]]:
        return [(self._state_type(), self.p["capacity"])]

    def needs(self) -> frozenset[str]:
        return frozenset({"target", "prediction"})

    def is_exact(self, states: dict[str, State]) -> bool:
        """True when the value computed from ``states`` is exact (no interval)."""
        return states[self._state_type().kind].is_exact  # type: ignore[attr-defined]

    def compute(self, states: dict[str, State]) -> Any:
        st = states[self._state_type().kind]
        if isinstance(st, OutputAbsoluteErrorDistributionState):
            return self._multioutput([error_quantile(o, self.level()) for o in st.outputs()])
        v = error_quantile(st, self.level())  # type: ignore[arg-type]
        if isinstance(self.p["multioutput"], str) and self.p["multioutput"] == "raw_values":  # (1,), as scikit-learn's for 1-D targets
            return self._multioutput([v])
        if isinstance(v, float) and math.isnan(v):
            record_undefined()
        return v

    def _multioutput(self, values: list[float | Interval]) -> Any:
        """scikit-learn's ``multioutput`` over the per-output values: ``raw_values`` a (D,)
        array (a compressed output gives the middle of its bounds), ``uniform_average`` their
        ``np.average`` (an interval averaging the bounds when some output is compressed). Every
        output has the same total weight: all are NaN (undefined) or none."""
        mid = np.array([v.value if isinstance(v, Interval) else v for v in values], dtype=np.float64)
        how = self.p["multioutput"]
        raw = isinstance(how, str) and how == "raw_values"
        weights = np.array(how) if isinstance(how, tuple) else None  # an array of output weights (>= 0)
        for j in np.flatnonzero(np.isnan(mid)) if raw else ([None] if np.isnan(mid).any() else []):
            record_undefined(None if j is None else (int(j),))
        if raw:
            return mid
        value = float(np.average(mid, weights=weights))
        if not any(isinstance(v, Interval) for v in values) or math.isnan(value):
            return value
        lo = np.array([v.lower if isinstance(v, Interval) else v for v in values], dtype=np.float64)
        hi = np.array([v.upper if isinstance(v, Interval) else v for v in values], dtype=np.float64)
        lower, upper = float(np.average(lo, weights=weights)), float(np.average(hi, weights=weights))
        return lower if lower == upper else Interval(value, lower, upper)


class MedianAbsoluteError(QuantileAbsoluteError):
    """Median absolute error (weighted): the median of ``|y_pred - y_true|``, scikit-learn's rule
    (``np.median`` without weights; with weights its weighted percentile with ``average=True``).
    Exact while a slice's distinct errors fit ``capacity`` (default 40,000 bins); beyond,
    certified bounds. NaN with no examples (total weight 0). Multioutput regression:
    ``multioutput="uniform_average"`` (default) or ``"raw_values"``, as scikit-learn's. Source:
    ``sklearn.metrics.median_absolute_error``."""

    name = "median_absolute_error"
    full_name = "Median absolute error"
    aliases = ("medae", "median_ae")
    params: ClassVar[dict[str, Any]] = {"capacity": None, "multioutput": "uniform_average"}
    positional = None
    reference = None
    sklearn = "sklearn.metrics.median_absolute_error"

    def configure(self) -> None:
        self.p["q"] = 0.5
        super().configure()
