"""``ComputeMetrics``: a PTransform from rows or batches to per-slice results."""

from __future__ import annotations

from typing import Any, Iterable

import apache_beam as beam
from apache_beam.transforms.window import GlobalWindows

from beam_metrics.combine import DEFAULT_BATCH_SIZE, MetricsCombineFn
from core.evaluation import Evaluation, resolve_evaluation
from core.results import Results, SliceResult

__all__ = ["ComputeMetrics"]


def _slices(results: Results) -> Iterable[SliceResult]:
    return results.slices


class ComputeMetrics(beam.PTransform):
    """Sliced metrics over a PCollection: one :class:`core.SliceResult` per slice.

    Input elements: row dicts ``{column: scalar}``, ``pyarrow.RecordBatch`` / ``Table``,
    ``pandas.DataFrame``, dicts of column arrays (every value a list / ``np.ndarray`` / pyarrow
    Array), or lists of row dicts; kinds may be mixed (see :class:`MetricsCombineFn`).

    Output: a PCollection of :class:`core.SliceResult` (encoded with
    :class:`~beam_metrics.results_io.SliceResultCoder`), one per slice seen, in no particular
    order; the overall slice (``slice == ()``) is always present, with ``n == 0`` and NaN metrics
    for empty input. ``evaluation.collect(slices=...)`` sorts collected results into a
    :class:`core.Results`; :func:`~beam_metrics.slice_result_to_json` writes them as JSON lines.

    Implementation: ``CombineGlobally(MetricsCombineFn(evaluation))`` then a ``FlatMap`` over
    ``results.slices``. All slices share one accumulator (a dict of small fixed-size states per
    slice), so the final merge happens on one worker; this is cheap unless the slice cardinality
    is very large. All metric math is core's. Under non-global windowing the combine runs per
    window ``without_defaults()``: windows without elements produce no output.

    Slice specs with ``max_slices`` or ``quantiles`` (``evaluation.needs_profile``) add an exact
    counting pass over the same PCollection (``CombineGlobally`` of a
    :class:`~beam_metrics.profile.SliceProfileCombineFn`), passed as an ``AsSingleton`` side input
    to the folding step (see :mod:`beam_metrics.profile`); the ``__other__`` results carry
    ``folded_values``. The input is then read twice.

    Args:
        evaluation: a :class:`core.Evaluation`; if None, one is built from ``evaluation_kwargs``.
        batch_size: rows buffered before a vectorised fold (see :class:`MetricsCombineFn`).
        **evaluation_kwargs: ``core.Evaluation`` options when ``evaluation`` is None (any of
            :data:`core.options.OPTIONS`, e.g. ``label_col``, ``score_col``, ``slices``).

    Raises:
        ValueError: a bad configuration (from ``core.Evaluation``); at run time, invalid data
            (column, value and row in the message; Beam may wrap the exception) unless
            ``on_invalid="skip"``.
        TypeError: both ``evaluation`` and ``evaluation_kwargs`` given, ``evaluation`` is not a
            ``core.Evaluation``, or an unsupported element type.

    Example:
        >>> import apache_beam as beam
        >>> rows = [{"y": 1, "s": 0.9, "g": "a"}, {"y": 0, "s": 0.7, "g": "b"}]
        >>> with beam.Pipeline(runner="DirectRunner") as p:  # doctest: +SKIP
        ...     results = (p | beam.Create(rows)
        ...                  | ComputeMetrics(label_col="y", score_col="s", slices=["g"]))
    """

    def __init__(
        self, evaluation: Evaluation | None = None, *, batch_size: int = DEFAULT_BATCH_SIZE, label: str | None = None, **evaluation_kwargs: Any
    ):
        super().__init__(label)
        self.evaluation = evaluation = resolve_evaluation(evaluation, evaluation_kwargs)
        self.combine_fn = MetricsCombineFn(evaluation, batch_size=batch_size)

    def expand(self, pcoll: beam.PCollection) -> beam.PCollection:
        if self.evaluation.needs_profile:  # max_slices / quantile buckets: a counting pass first
            from beam_metrics.profile import expand_profiled

            return expand_profiled(pcoll, self.evaluation, self.combine_fn.batch_size)
        combine = beam.CombineGlobally(self.combine_fn)
        if not isinstance(pcoll.windowing.windowfn, GlobalWindows):
            combine = combine.without_defaults()
        return (
            pcoll
            | "CombineMetrics" >> combine
            | "PerSlice" >> beam.FlatMap(_slices).with_output_types(SliceResult)
        )
