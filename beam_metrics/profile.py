"""The counting pass on Beam: slices with ``max_slices`` or quantile buckets.

When an evaluation :attr:`~core.Evaluation.needs_profile`, :class:`~beam_metrics.ComputeMetrics`
expands to::

    summary  = pcoll | CombineGlobally(SliceProfileCombineFn(evaluation))     # exact counts, merged
    partials = pcoll | ParDo(fold each bundle with evaluation.with_profile(summary),
                             summary as an AsSingleton side input)               # encoded accumulators
    results  = partials | CombineGlobally(merge the accumulators) | per-slice results (+ folded_values)

Both combines are lifted (partial combining before the shuffle); only small, bounded states cross
the shuffle: per spec at most ``2 * max_slices + 1`` slices, whatever the number of distinct values.
The profile accumulator itself grows with the number of distinct values (about 25 bytes each, see
:mod:`core.slice_profile`) and is resolved into a small :class:`~core.slice_profile.ProfileSummary`
(the kept keys and quantile edges) before it is broadcast. All math is core's; no pickle crosses a
shuffle (profiles and accumulators use core's versioned codecs, summaries JSON).
"""

from __future__ import annotations

from typing import Any, Iterable

import apache_beam as beam
from apache_beam.transforms.window import GlobalWindows
from apache_beam.utils.windowed_value import WindowedValue

from beam_metrics.combine import DEFAULT_BATCH_SIZE, MetricsAccumulator, MetricsAccumulatorCoder, MetricsCombineFn
from core.evaluation import Evaluation
from core.results import Results, SliceResult
from core.slice_profile import ProfileSummary, SliceProfiler

__all__ = ["ProfileSummaryCoder", "SliceProfileCoder", "SliceProfileCombineFn", "expand_profiled"]


class SliceProfileCoder(MetricsAccumulatorCoder):
    """Accumulator coder of :class:`SliceProfileCombineFn`: core's slice-profile codec (no pickle);
    buffered rows are counted into a copy first, as in :class:`MetricsAccumulatorCoder`."""

    def __init__(self, profiler: SliceProfiler):  # noqa: D107 - no super().__init__: no Evaluation here
        if not isinstance(profiler, SliceProfiler):
            raise TypeError(f"profiler must be a core.slice_profile.SliceProfiler, got {type(profiler).__name__}")
        self.evaluation = profiler

    def encode(self, value: MetricsAccumulator) -> bytes:
        acc = value.acc
        if value.buffer:
            acc = self.evaluation.fold(self.evaluation.zero().merge(acc), value.buffer, row_offset=value.buffer_start)
        return self.evaluation.encode_accumulator(acc)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and [str(s) for s in other.evaluation.slices] == [str(s) for s in self.evaluation.slices]

    def __hash__(self) -> int:
        return hash((type(self), tuple(str(s) for s in self.evaluation.slices)))

    def __repr__(self) -> str:
        return f"SliceProfileCoder(slices={[str(s) for s in self.evaluation.slices]})"


class SliceProfileCombineFn(MetricsCombineFn):
    """The counting pass as a ``CombineFn``: rows and batches are folded into a
    :class:`core.slice_profile.SliceProfile` (same element kinds and row buffering as
    :class:`MetricsCombineFn`); the output is the resolved
    :class:`core.slice_profile.ProfileSummary`.

    Args:
        evaluation: the :class:`core.Evaluation` whose specs need a profile.
        batch_size: rows buffered before a vectorised fold.

    Raises:
        TypeError: ``evaluation`` is not a :class:`core.Evaluation`.
    """

    def __init__(self, evaluation: Evaluation, batch_size: int = DEFAULT_BATCH_SIZE):
        super().__init__(evaluation, batch_size)
        self.evaluation = evaluation.profiler()  # the accumulator vocabulary of the counting pass

    def extract_output(self, accumulator: MetricsAccumulator) -> ProfileSummary:
        self._flush(accumulator)
        return self.evaluation.finish(accumulator.acc)

    def get_accumulator_coder(self) -> SliceProfileCoder:
        return SliceProfileCoder(self.evaluation)

    def display_data(self) -> dict[str, Any]:
        return {"slices": "; ".join(str(s) for s in self.evaluation.slices), "batch_size": self.batch_size}


class ProfileSummaryCoder(beam.coders.Coder):
    """:class:`core.slice_profile.ProfileSummary` as canonical JSON (deterministic, no pickle)."""

    def encode(self, value: ProfileSummary) -> bytes:
        return value.to_json().encode("utf-8")

    def decode(self, encoded: bytes) -> ProfileSummary:
        try:
            return ProfileSummary.from_json(bytes(encoded).decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            raise ValueError(f"corrupted ProfileSummary bytes: {e}") from None

    def is_deterministic(self) -> bool:
        return True

    def to_type_hint(self) -> type:
        return ProfileSummary

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self)

    def __hash__(self) -> int:
        return hash(type(self))


beam.coders.registry.register_coder(ProfileSummary, ProfileSummaryCoder)


class _FoldWithProfile(beam.DoFn):
    """Fold each bundle (per window) with the profiled evaluation; emit its encoded accumulator."""

    def __init__(self, evaluation: Evaluation, batch_size: int):
        self.evaluation = evaluation
        self.batch_size = batch_size
        self._cache: tuple[str, MetricsCombineFn] | None = None
        self._open: dict = {}

    def _fn(self, summary: ProfileSummary) -> MetricsCombineFn:
        text = summary.to_json()
        if self._cache is None or self._cache[0] != text:
            self._cache = (text, MetricsCombineFn(self.evaluation.with_profile(summary), self.batch_size))
        return self._cache[1]

    def start_bundle(self) -> None:
        self._open = {}

    def process(self, element: Any, summary: ProfileSummary, window: Any = beam.DoFn.WindowParam) -> None:
        entry = self._open.get(window)
        if entry is None:
            fn = self._fn(summary)
            entry = self._open[window] = (fn, fn.create_accumulator())
        fn, acc = entry
        fn.add_input(acc, element)

    def finish_bundle(self) -> Iterable[WindowedValue]:
        for window, (fn, acc) in self._open.items():
            fn.compact(acc)
            yield WindowedValue(fn.evaluation.encode_accumulator(acc.acc), window.max_timestamp(), [window])
        self._open = {}


class _MergeAccumulatorsFn(MetricsCombineFn):
    """Merges the encoded accumulators of :class:`_FoldWithProfile` (core's codec)."""

    def _add(self, a: MetricsAccumulator, element: Any) -> None:
        self.evaluation.merge_into(a.acc, self.evaluation.decode_accumulator(element))


def _annotated(results: Results, evaluation: Evaluation, summary: ProfileSummary) -> list[SliceResult]:
    return evaluation.with_profile(summary).collect(slices=results.slices).slices


def expand_profiled(pcoll: beam.PCollection, evaluation: Evaluation, batch_size: int) -> beam.PCollection:
    """``ComputeMetrics`` for an evaluation that needs a counting pass (see the module docstring)."""
    windowed = not isinstance(pcoll.windowing.windowfn, GlobalWindows)
    profile = beam.CombineGlobally(SliceProfileCombineFn(evaluation, batch_size))
    merge = beam.CombineGlobally(_MergeAccumulatorsFn(evaluation, batch_size))
    if windowed:
        profile, merge = profile.without_defaults(), merge.without_defaults()
    summary = pcoll | "SliceProfile" >> profile
    side = beam.pvalue.AsSingleton(summary)
    return (
        pcoll
        | "FoldSliced" >> beam.ParDo(_FoldWithProfile(evaluation, batch_size), side).with_output_types(bytes)
        | "CombineMetrics" >> merge
        | "PerSlice" >> beam.FlatMap(_annotated, evaluation, side).with_output_types(SliceResult)
    )
