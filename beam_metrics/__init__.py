"""Apache Beam adapter for mergeable-metrics.

* :class:`MetricsCombineFn`: a ``beam.CombineFn`` over :class:`core.Evaluation` accumulators,
  for ``beam.CombineGlobally`` and ``beam.CombinePerKey``; outputs a :class:`core.Results`.
* :class:`MetricsAccumulatorCoder`: its accumulator coder (core's versioned codec, no pickle).
* :class:`ComputeMetrics`: a PTransform from rows / Arrow batches / column dicts to one
  :class:`core.SliceResult` per slice.
* :func:`slice_result_to_json` / :func:`slice_result_from_json`: JSON lines for results;
  :class:`SliceResultCoder`: the (registered) Beam coder for ``SliceResult``.

The adapter contains no metric math: it maps Beam calls one-to-one onto ``core``.
"""

from beam_metrics.combine import MetricsAccumulator, MetricsAccumulatorCoder, MetricsCombineFn, is_column_batch
from beam_metrics.results_io import SliceResultCoder, slice_result_from_json, slice_result_to_json
from beam_metrics.transforms import ComputeMetrics

__all__ = [
    "ComputeMetrics",
    "MetricsAccumulator",
    "MetricsAccumulatorCoder",
    "MetricsCombineFn",
    "SliceResultCoder",
    "is_column_batch",
    "slice_result_from_json",
    "slice_result_to_json",
]
