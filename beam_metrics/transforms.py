"""``ComputeMetrics``: a PTransform from rows or batches to per-slice results."""

from __future__ import annotations

from typing import Any

import apache_beam as beam
from apache_beam.transforms.window import GlobalWindows

from mergeable_metrics.beam.combine import DEFAULT_BATCH_SIZE, MetricsCombineFn
from mergeable_metrics.beam.per_slice import expand_per_slice, needs_one_grouping
from mergeable_metrics.engine import Evaluation, resolve_evaluation

__all__ = ["ComputeMetrics", "DEFAULT_HOT_KEY_FANOUT"]

#: Default ``hot_key_fanout`` of :class:`ComputeMetrics`: the overall slice's partial states (one
#: per bundle) are merged over this many shard keys first.
DEFAULT_HOT_KEY_FANOUT = 4


class ComputeMetrics(beam.PTransform):
    """Sliced metrics over a PCollection: one :class:`mergeable_metrics.SliceResult` per slice.

    Input elements: row dicts ``{column: scalar}``, ``pyarrow.RecordBatch`` / ``Table``,
    ``pandas.DataFrame``, dicts of column arrays (every value a list / ``np.ndarray`` / pyarrow
    Array), or lists of row dicts; kinds may be mixed (see :class:`MetricsCombineFn`).

    Output: a PCollection of :class:`mergeable_metrics.SliceResult` (encoded with
    :class:`~mergeable_metrics.beam.results_io.SliceResultCoder`), one per slice seen, in no particular
    order; the overall slice (``slice == ()``) is always present, with ``n == 0`` and NaN metrics
    for empty input. ``evaluation.collect(slices=...)`` sorts collected results into a
    :class:`mergeable_metrics.Results`; :func:`~mergeable_metrics.beam.slice_result_to_json` writes them as JSON lines.

    Implementation (:mod:`mergeable_metrics.beam.per_slice`): a ``ParDo`` folds each bundle's elements into
    one accumulator (rows buffered and folded ``batch_size`` at a time with core's vectorised
    fold) and emits one ``(slice key, encoded states)`` element per slice; a ``CombinePerKey`` by
    slice key merges each slice's partial states (so the final merge of many slices is spread
    over workers; the overall slice, which every bundle emits, with hot-key fanout) and finishes
    the slice; the small per-slice results are then gathered once, for the canonical order and
    complementary suppression (``evaluation.collect``). All metric math is core's. Under fixed
    and sliding windows the same steps run per window (``CombinePerKey`` by window and slice),
    every result carries ``window_start`` / ``window_end``, and windows without elements produce
    no output; under sessions, triggers or allowed lateness the states of a window and pane are
    combined in one ``CombineGlobally`` (see :mod:`mergeable_metrics.beam.per_slice`). Undefined metrics are NaN, without ``UndefinedMetricWarning`` (raised on workers,
    it could not reach the caller).

    Slice specs with ``max_slices`` or ``quantiles`` (``evaluation.needs_profile``) add an exact
    counting pass over the same PCollection (``CombineGlobally`` of a
    :class:`~mergeable_metrics.beam.profile.SliceProfileCombineFn`), passed as an ``AsSingleton`` side input
    to the folding step (see :mod:`mergeable_metrics.beam.profile`); the ``__other__`` results carry
    ``folded_values``. The input is then read twice. Under windowing the counting pass is per
    window (fixed and sliding windows only).

    Args:
        evaluation: a :class:`mergeable_metrics.Evaluation`; if None, one is built from ``evaluation_kwargs``.
        batch_size: rows buffered before a vectorised fold (see :class:`MetricsCombineFn`).
        hot_key_fanout: shard keys the overall slice's partial states are spread over in the
            per-slice ``CombinePerKey`` (one shard per bundle); the merged shards are merged once
            more when the results are gathered (1 or less: no shards).
        **evaluation_kwargs: ``mergeable_metrics.Evaluation`` options when ``evaluation`` is None (any of
            :data:`mergeable_metrics.evaluation.options.OPTIONS`, e.g. ``label_col``, ``score_col``, ``slices``).

    Raises:
        ValueError: a bad configuration (from ``mergeable_metrics.Evaluation``); at run time, invalid data
            (column, value and row in the message; Beam may wrap the exception) unless
            ``on_invalid="skip"``.
        TypeError: both ``evaluation`` and ``evaluation_kwargs`` given, ``evaluation`` is not a
            ``mergeable_metrics.Evaluation``, or an unsupported element type.

    Example:
        >>> import apache_beam as beam
        >>> rows = [{"y": 1, "s": 0.9, "g": "a"}, {"y": 0, "s": 0.7, "g": "b"}]
        >>> with beam.Pipeline(runner="DirectRunner") as p:  # doctest: +SKIP
        ...     results = (p | beam.Create(rows)
        ...                  | ComputeMetrics(label_col="y", score_col="s", slices=["g"]))
    """

    def __init__(
        self,
        evaluation: Evaluation | None = None,
        *,
        batch_size: int = DEFAULT_BATCH_SIZE,
        hot_key_fanout: int = DEFAULT_HOT_KEY_FANOUT,
        label: str | None = None,
        **evaluation_kwargs: Any,
    ):
        super().__init__(label)
        self.evaluation = evaluation = resolve_evaluation(evaluation, evaluation_kwargs)
        self.combine_fn = MetricsCombineFn(evaluation, batch_size=batch_size)  # checks batch_size
        if isinstance(hot_key_fanout, bool) or not isinstance(hot_key_fanout, int):
            raise TypeError(f"hot_key_fanout must be an int, got {type(hot_key_fanout).__name__}")
        self.hot_key_fanout = hot_key_fanout

    def expand(self, pcoll: beam.PCollection) -> beam.PCollection:
        summary = None
        if self.evaluation.needs_profile and not isinstance(pcoll.windowing.windowfn, GlobalWindows) and needs_one_grouping(pcoll.windowing):
            raise ValueError(
                "max_slices and quantile slices are not supported under Sessions, triggers or allowed lateness (their counting pass is a side input per window and pane)"
            )
        if self.evaluation.needs_profile:  # max_slices / quantile buckets: a counting pass first
            from mergeable_metrics.beam.profile import profile_summary

            summary = beam.pvalue.AsSingleton(profile_summary(pcoll, self.evaluation, self.combine_fn.batch_size))
        return expand_per_slice(pcoll, self.evaluation, self.combine_fn.batch_size, self.hot_key_fanout, summary)
