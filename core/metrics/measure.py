"""Mean of a measure: the weighted running mean of any per-sample or per-batch value (a loss).

:class:`MeanMeasureState` holds the row count, the weight and ``sum w v`` (exact sums,
:mod:`mergeable_metrics._util.exact`); it merges by fieldwise addition, bit for bit the same in any order. For
per-batch values (a batch's mean loss), fold one row per batch with the batch size as its weight,
and the result is the mean over all examples, exactly as if computed in one pass.

Several **named measures** share one state: its layout lists their names (sorted) and each field
holds one entry per name (``(M,)``); the plain ``mean_measure`` (one unnamed measure column) keeps
the scalar layout of the first release. A named measure's metric key is its name (``"loss"``):

* ``MetricCollection(MeanMeasure(fn, name="loss"))`` or ``MetricCollection(measures={"loss": fn})``:
  ``fn(y_true, y_pred)`` (``y_score`` when no ``y_pred`` is given) returns one value per sample
  (averaged over samples, weighted by ``sample_weight``) or one value per batch (averaged over
  batches weighted by their size: the value stands for every row of the batch, so the weight is
  the row count, or the sum of ``sample_weight`` when given), as OnlineMetrics' ``AverageMeasure``
  and torchmetrics' ``MeanMetric``;
* ``MetricCollection(measures=["loss", "mae"])`` with ``update(..., measure={"loss": v, "mae": u})``;
* ``Evaluation(measure_cols=["loss", "mae"])`` (or ``{"loss": "loss_column"}``) in every engine,
  and ``--measure loss=COL`` in the CLI.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from mergeable_metrics._util.public import public
from mergeable_metrics.inputs.validation import Batch
from mergeable_metrics._util.exact import ExactSums, exact_column_sums, exact_quotient, exact_sum, known_weight_sum, remember_weight_sum, weight_sum
from mergeable_metrics.metrics.base import TASK_KINDS, Metric, record_undefined
from mergeable_metrics.states.base import State, count_plus


@dataclass(frozen=True)
class MeanMeasureLayout:
    """``names``: the named measures, sorted (each field is then ``(M,)``); ``()``: the one
    unnamed measure column of ``mean_measure`` (scalar fields)."""

    names: tuple[str, ...] = ()


class MeanMeasureState(State):
    """``count`` (int64 rows), ``weight`` (float64) and ``total`` (float64 ``sum w v``): scalars
    for the unnamed measure, ``(M,)`` (one entry per name of the layout) for named measures."""

    kind = "mean_measure"
    Layout = MeanMeasureLayout
    FIELDS = (("count", "int64"), ("weight", "float64"), ("total", "float64"))
    COUNTS = ("count", "weight")
    EXACT = ("weight", "total")

    @classmethod
    def shape(cls, layout: MeanMeasureLayout, field: str) -> tuple[int, ...]:
        return (len(layout.names),) if layout.names else ()

    @classmethod
    def layout_for(cls, requirements: list[Any], task: Any) -> MeanMeasureLayout:
        """Requirements: None (the unnamed measure) or measure names.

        Raises:
            ValueError: the unnamed ``mean_measure`` together with named measures.
        """
        names = tuple(sorted({r for r in requirements if r is not None}))
        if names and None in requirements:
            raise ValueError(
                f"mean_measure (one unnamed measure column) cannot be combined with named measures {list(names)}: "
                "name that measure too (e.g. MeanMeasure(name='measure'), measure_cols=[...], --measure NAME=COL)"
            )
        return MeanMeasureLayout(names)

    @classmethod
    def from_batch(cls, layout: MeanMeasureLayout, batch: Batch) -> "MeanMeasureState":
        if batch.values is None:
            raise ValueError("mean_measure needs a measure column")
        v, w = batch.values, batch.sample_weight
        n = v.shape[0]
        m = len(layout.names)
        if m:
            if v.ndim != 2 or v.shape[1] != m:
                raise ValueError(f"named measures {list(layout.names)}: expected (N, {m}) values, got shape {v.shape}")
            return cls._of_sums(  # every field has its dtype and shape: no constructor checks
                layout,
                {
                    "count": np.full(m, n, dtype=np.int64),
                    # every column's weight is sum(w): one exact sum, its limbs repeated per column
                    "weight": ExactSums.of_floats(np.full(m, float(n))) if w is None else weight_sum(w).take(np.zeros(m, dtype=np.intp), shape=(m,)),
                    "total": exact_column_sums(v, w),
                },
            )
        return cls._of_sums(
            layout,
            {
                "count": np.array(n, dtype=np.int64),
                "weight": ExactSums.of_count(n) if w is None else weight_sum(w),
                "total": exact_sum(v, w),
            },
        )

    def fold(self, batch: Batch) -> "MeanMeasureState":
        """``self.merge(from_batch(self.layout, batch))``; a plain measure column's sums come
        from its validation (:attr:`Batch.sums`: the compiled pass that checked it), and no
        state of the batch alone is built."""
        pre = batch.sums
        m = len(self.layout.names)
        if pre is None or pre[0] is not batch.values or pre[1] is not batch.sample_weight or m > 1 or batch.values.ndim != (2 if m else 1):
            return super().fold(batch)
        n = batch.n
        shape = (m,) if m else ()
        w = batch.sample_weight
        if w is None:
            weight = ExactSums.of_count(n, shape)
        else:
            weight = known_weight_sum(w)
            if weight is None:
                weight = ExactSums.lazy(*pre[3], ())
                remember_weight_sum(w, weight)
            if m:  # every column's weight is sum(w)
                weight = weight.take(np.zeros(m, dtype=np.intp), shape=(m,))
        a = self.arrays
        return type(self)._of_sums(
            self.layout,
            {
                "count": count_plus(a["count"], n, "mean_measure.count"),
                "weight": self.exact["weight"] + weight,
                "total": self.exact["total"] + ExactSums.lazy(*pre[2], shape),
            },
        )


def _named(name: Any) -> str | None:
    if name is None:
        return None
    if not isinstance(name, str) or not name.strip() or any(c in name for c in "@=,"):
        raise ValueError(f"measure name must be a non-empty string without '@', '=' or ',', got {name!r}")
    return name.strip()


class MeanMeasureMetric(Metric):
    """Weighted mean of a measure (a per-example loss, or per-batch values weighted by batch
    size): ``sum w v / sum w``. Works with any task. NaN with no examples. ``name=``: a named
    measure (its key is the name; see the module's docstring). Source:
    ``numpy.average(values, weights=sample_weight)`` (torchmetrics' ``MeanMetric``, Keras'
    ``Mean``, OnlineMetrics' ``AverageMeasure``)."""

    name = "mean_measure"
    full_name = "Mean of measure"
    aliases = ("mean_metric", "mean_loss", "running_mean")
    params = {"name": None}
    tasks = TASK_KINDS
    higher_is_better = None
    bounds = (-math.inf, math.inf)
    reference = "numpy.average(values, weights=sample_weight)"
    undefined = "no examples (total weight 0)"
    #: the measure function of a :class:`MeanMeasure` (None: the values are given)
    fn: Callable[..., Any] | None = None

    def configure(self) -> None:
        self.p["name"] = _named(self.p["name"])

    @property
    def measure_name(self) -> str | None:
        """The measure's name (None: the one unnamed measure column)."""
        return self.p["name"]

    @property
    def key(self) -> str:
        return self.measure_name or super().key

    def requires(self) -> list[tuple[type[State], Any]]:
        return [(MeanMeasureState, self.measure_name)]

    def needs(self) -> frozenset[str]:
        return frozenset({"measure"})

    def counts(self, states: dict[str, State]) -> dict[str, Any]:
        """``n`` (rows) and ``weight`` (their weight sum) of this measure."""
        st = states["mean_measure"]
        i = st.layout.names.index(self.measure_name) if st.layout.names else ()
        return {"n": st["count"][i].item(), "weight": st["weight"][i].item()}

    def compute(self, states: dict[str, State]) -> float:
        st = states["mean_measure"]
        names = st.layout.names
        i = names.index(self.measure_name) if names else None
        w = float(st["weight"] if i is None else st["weight"][i])
        if w == 0:
            record_undefined()
            return float("nan")
        # the exact quotient of the exact sums, correctly rounded: finite even where the sum
        # ``total`` rounds to +-inf (e.g. 1e300 with weight 1e8)
        if i is None:
            return exact_quotient(st.exact["total"], st.exact["weight"])
        return exact_quotient(st.exact["total"], st.exact["weight"], i)


@public("mergeable_metrics.metrics")
class MeanMeasure:
    """A named measure for a :class:`~mergeable_metrics.collection.plan.MetricCollection` (or :class:`SingleMetric`):
    the weighted mean of ``fn(y_true, y_pred)`` over every batch folded (OnlineMetrics'
    ``AverageMeasure(measure, name)``, torchmetrics' ``MeanMetric``).

    Args:
        fn: ``fn(y_true, y_pred) -> (N,) values or one value`` (``y_score`` is passed when the
            batch has no ``y_pred``), called on the batch's inputs as given (numpy arrays); or
            None: the values are given to ``update(measure={name: values})``.
        name: the measure's name: its key in ``compute()`` and results.

    Per-sample values are averaged weighted by ``sample_weight``; a per-batch value (a scalar)
    stands for every row of its batch, so batches are weighted by their size (their weight sum
    with ``sample_weight``). The result is exactly the one-pass mean, however the data is batched.

    Example:
        >>> from mergeable_metrics import MetricCollection
        >>> mc = MetricCollection(MeanMeasure(lambda y, p: abs(y - p), name="mae"))
        >>> mc.update([1.0, 2.0], y_pred=[1.5, 2.0])
        >>> mc.update([0.0], y_pred=[3.0])
        >>> mc.compute()
        {'mae': 1.1666666666666667}
    """

    def __init__(self, fn: Callable[..., Any] | None = None, name: str = "measure"):
        if fn is not None and not callable(fn):
            raise TypeError(f"MeanMeasure: fn must be callable, got {type(fn).__name__}")
        self.fn = fn
        self.name = _named(name)

    def for_task(self, task: Any) -> MeanMeasureMetric:
        """The configured metric of this measure for ``task`` (see :func:`mergeable_metrics.metrics.base.resolve`)."""
        m = MeanMeasureMetric(task, name=self.name)
        m.fn = self.fn
        return m

    def __repr__(self) -> str:
        return f"MeanMeasure({getattr(self.fn, '__name__', self.fn)!r}, name={self.name!r})"


def measure_values(fn: Callable[..., Any], name: str, y_true: Any, y_pred: Any, n: int) -> np.ndarray:
    """``(n,)`` float64 values of one measure function on a batch of ``n`` rows: its per-sample
    values, or its one per-batch value repeated for every row.

    Raises:
        ValueError: the function returns neither one value nor ``n`` values.
    """
    out = np.asarray(fn(y_true, y_pred), dtype=np.float64)
    if out.ndim == 0 or out.size == 1 and n != 1:
        return np.full(n, float(out.reshape(())), dtype=np.float64)
    if out.shape != (n,):
        raise ValueError(f"measure {name!r}: the function returned shape {out.shape} for a batch of {n} rows; expected ({n},) or one value")
    return out


__all__ = ["MeanMeasure", "MeanMeasureLayout", "MeanMeasureMetric", "MeanMeasureState", "measure_values"]
