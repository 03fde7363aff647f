"""Mean of a measure: the weighted running mean of any per-sample or per-batch value (a loss).

:class:`MeanMeasureState` holds the row count, the weight and ``sum w v`` (exact sums,
:mod:`core.exact`); it merges by fieldwise addition, bit for bit the same in any order. For per-batch values (a batch's mean loss), fold one row per batch with the batch size
as its weight, and the result is the mean over all examples, exactly as if computed in one pass.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from core._inputs import Batch
from core.exact import exact_ratio, exact_sum
from core.metrics import TASK_KINDS, Metric, record_undefined
from core.states import State


@dataclass(frozen=True)
class MeanMeasureLayout:
    """No configuration."""


class MeanMeasureState(State):
    """``count`` (int64 rows), ``weight`` (float64) and ``total`` (float64 ``sum w v``)."""

    kind = "mean_measure"
    Layout = MeanMeasureLayout
    FIELDS = (("count", "int64"), ("weight", "float64"), ("total", "float64"))
    COUNTS = ("count", "weight")
    EXACT = ("weight", "total")

    @classmethod
    def layout_for(cls, requirements: list[Any], task: Any) -> MeanMeasureLayout:
        return MeanMeasureLayout()

    @classmethod
    def from_batch(cls, layout: MeanMeasureLayout, batch: Batch) -> "MeanMeasureState":
        if batch.values is None:
            raise ValueError("mean_measure needs a measure column")
        v, w = batch.values, batch.sample_weight
        return cls(
            layout,
            {
                "count": np.int64(v.shape[0]),
                "weight": np.float64(v.shape[0]) if w is None else exact_sum(w),
                "total": exact_sum(v, w),
            },
        )


class MeanMeasure(Metric):
    """Weighted mean of a measure column (a per-example loss, or per-batch values weighted by
    batch size): ``sum w v / sum w``. Works with any task. NaN with no examples. Source:
    ``numpy.average(values, weights=sample_weight)`` (torchmetrics' ``MeanMetric``, Keras'
    ``Mean``)."""

    name = "mean_measure"
    full_name = "Mean of measure"
    aliases = ("mean_metric", "mean_loss", "running_mean")
    tasks = TASK_KINDS
    higher_is_better = None
    bounds = (-math.inf, math.inf)
    reference = "numpy.average(values, weights=sample_weight)"
    undefined = "no examples (total weight 0)"

    def requires(self) -> list[tuple[type[State], Any]]:
        return [(MeanMeasureState, None)]

    def needs(self) -> frozenset[str]:
        return frozenset({"measure"})

    def compute(self, states: dict[str, State]) -> float:
        st = states["mean_measure"]
        w = float(st["weight"])
        if w == 0:
            record_undefined()
            return float("nan")
        # the exact quotient of the exact sums, correctly rounded: finite even where the sum
        # ``total`` rounds to +-inf (e.g. 1e300 with weight 1e8)
        return exact_ratio(st.exact["total"].fraction(), st.exact["weight"].fraction())


__all__ = ["MeanMeasure", "MeanMeasureLayout", "MeanMeasureState"]
