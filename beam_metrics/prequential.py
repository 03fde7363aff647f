"""Prequential (test-then-train) metrics on Beam: :class:`ComputePrequentialMetrics`.

Elements are rows or batches of a stream that carry each example's 0-based stream position
(``position_col``: on a distributed runner there is no other order). Each element gets its window
(``position // window_size``, core's :meth:`mergeable_metrics.PrequentialEvaluation.with_window`) and is
folded by core's sliced fold (:class:`~mergeable_metrics.beam.MetricsCombineFn` of the prequential
evaluation's inner :class:`mergeable_metrics.Evaluation`); the merged window states give the windowed and
cumulative metrics (:class:`mergeable_metrics.time.prequential.PrequentialResults`), equal to the local engine's.
"""

from __future__ import annotations

from typing import Any

import apache_beam as beam

from mergeable_metrics.beam.combine import MetricsCombineFn
from mergeable_metrics.engine import WINDOW_COLUMN, PrequentialEvaluation, PrequentialResults

__all__ = ["ComputePrequentialMetrics", "PrequentialCombineFn"]


class PrequentialCombineFn(MetricsCombineFn):
    """``MetricsCombineFn`` of a :class:`mergeable_metrics.PrequentialEvaluation` whose elements already carry
    the window column; ``extract_output`` gives :class:`mergeable_metrics.time.prequential.PrequentialResults`."""

    def __init__(self, prequential: PrequentialEvaluation, **kw: Any):
        super().__init__(prequential.evaluation, **kw)
        self.prequential = prequential

    def extract_output(self, accumulator: Any) -> PrequentialResults:
        self._flush(accumulator)
        return self.prequential.finish(accumulator.acc)


class ComputePrequentialMetrics(beam.PTransform):
    """Stream elements -> one :class:`mergeable_metrics.time.prequential.PrequentialResults`.

    Args:
        window_size: examples per tumbling window.
        position_col: the column of 0-based stream positions (required on Beam).
        **options: :class:`mergeable_metrics.Evaluation` options (``label_col``, ``prediction_col``, ``metrics``, ...).
    """

    def __init__(self, window_size: int, position_col: str, **options: Any):
        super().__init__()
        if not position_col:
            raise ValueError("ComputePrequentialMetrics needs position_col: elements of a PCollection have no stream order")
        self.prequential = PrequentialEvaluation(window_size, position_col=position_col, **options)

    def expand(self, pcoll: Any) -> Any:
        pe = self.prequential

        def add_window(element: Any) -> Any:
            if isinstance(element, dict) and not any(hasattr(v, "__len__") and not isinstance(v, (str, bytes)) for v in element.values()):
                batch = pe.with_window({k: [v] for k, v in element.items()})  # checks the position
                return {**element, WINDOW_COLUMN: int(batch[WINDOW_COLUMN][0])}
            return pe.with_window(element)

        return (
            pcoll
            | "Window" >> beam.Map(add_window)
            | "NonEmpty" >> beam.Filter(lambda e: e is not None)
            | "Fold" >> beam.CombineGlobally(PrequentialCombineFn(pe))
        )
