"""Apache Beam adapter for mergeable-metrics.

* :class:`MetricsCombineFn`: a ``beam.CombineFn`` over :class:`mergeable_metrics.Evaluation` accumulators,
  for ``beam.CombineGlobally`` and ``beam.CombinePerKey``; outputs a :class:`mergeable_metrics.Results`.
* :class:`MetricsAccumulatorCoder`: its accumulator coder (core's versioned codec, no pickle).
* :class:`ComputeMetrics`: a PTransform from rows / Arrow batches / column dicts to one
  :class:`mergeable_metrics.SliceResult` per slice.
* :func:`slice_result_to_json` / :func:`slice_result_from_json`: JSON lines for results;
  :class:`SliceResultCoder`: the (registered) Beam coder for ``SliceResult``.
* :class:`JoinLateLabels`: the streaming late-label join (a stateful ``DoFn`` with event-time
  timers, keyed by example id) of a predictions and a labels PCollection, with the batch join's
  outcome counts (:class:`JoinCountsCombineFn` sums them); see :mod:`mergeable_metrics.beam.latelabels`.
* :class:`ValidateMetrics`: the checks of a ``pipelines.validate`` thresholds file over ``ComputeMetrics``'
  output, one element per check; its matcher and those of single metrics for ``assert_that`` are in
  :mod:`mergeable_metrics.beam.testing`.
* :class:`SliceProfileCombineFn`: the exact counting pass behind ``max_slices`` and quantile
  buckets (``ComputeMetrics`` runs it itself; see :mod:`mergeable_metrics.beam.profile`).

The adapter contains no metric math: it maps Beam calls one-to-one onto ``core``.
"""

from mergeable_metrics.beam.combine import MetricsAccumulator, MetricsAccumulatorCoder, MetricsCombineFn, is_column_batch
from mergeable_metrics.beam.latelabels import JoinCountsCombineFn, JoinLateLabels
from mergeable_metrics.beam.profile import ProfileSummaryCoder, SliceProfileCombineFn
from mergeable_metrics.beam.results_io import SliceResultCoder, slice_result_from_json, slice_result_to_json
from mergeable_metrics.beam.testing import ValidateMetrics
from mergeable_metrics.beam.transforms import ComputeMetrics

__all__ = [
    "ComputeMetrics",
    "JoinCountsCombineFn",
    "JoinLateLabels",
    "MetricsAccumulator",
    "MetricsAccumulatorCoder",
    "MetricsCombineFn",
    "ProfileSummaryCoder",
    "SliceProfileCombineFn",
    "SliceResultCoder",
    "ValidateMetrics",
    "is_column_batch",
    "slice_result_from_json",
    "slice_result_to_json",
]
