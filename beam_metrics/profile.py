"""The counting pass on Beam: slices with ``max_slices`` or quantile buckets.

When an evaluation :attr:`~mergeable_metrics.Evaluation.needs_profile`, :class:`~mergeable_metrics.beam.ComputeMetrics`
expands to::

    summary  = pcoll | CombineGlobally(SliceProfileCombineFn(evaluation))     # exact counts, merged
    results  = pcoll | the steps of mergeable_metrics.beam.per_slice, folding each bundle with
                       evaluation.with_profile(summary) (an AsSingleton side input) and
                       reporting folded_values of the __other__ slices

The counting combine is lifted (partial combining before the shuffle); only small, bounded states cross
the shuffles: per spec at most ``2 * max_slices + 1`` slices, whatever the number of distinct values.
The profile accumulator itself grows with the number of distinct values (about 25 bytes each, see
:mod:`mergeable_metrics.evaluation.profile`) and is resolved into a small :class:`~mergeable_metrics.evaluation.profile.ProfileSummary`
(the kept keys and quantile edges) before it is broadcast. All math is core's; no pickle crosses a
shuffle (profiles and accumulators use core's versioned codecs, summaries JSON).
"""

from __future__ import annotations

from typing import Any

import apache_beam as beam
from apache_beam.transforms.window import GlobalWindows

from mergeable_metrics.beam.combine import DEFAULT_BATCH_SIZE, MetricsAccumulator, MetricsAccumulatorCoder, MetricsCombineFn
from mergeable_metrics.engine import Evaluation, ProfileSummary, SliceProfiler

__all__ = ["ProfileSummaryCoder", "SliceProfileCoder", "SliceProfileCombineFn", "profile_summary"]


class SliceProfileCoder(MetricsAccumulatorCoder):
    """Accumulator coder of :class:`SliceProfileCombineFn`: core's slice-profile codec (no pickle);
    buffered rows are counted into a copy first, as in :class:`MetricsAccumulatorCoder`."""

    def __init__(self, profiler: SliceProfiler):  # noqa: D107 - no super().__init__: no Evaluation here
        if not isinstance(profiler, SliceProfiler):
            raise TypeError(f"profiler must be a mergeable_metrics.evaluation.profile.SliceProfiler, got {type(profiler).__name__}")
        self.evaluation = profiler

    def encode(self, value: MetricsAccumulator) -> bytes:
        acc = value.acc
        if value.pending:
            acc = value.fold_pending(self.evaluation, self.evaluation.zero().merge(acc))
        return self.evaluation.encode(acc)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and [str(s) for s in other.evaluation.slices] == [str(s) for s in self.evaluation.slices]

    def __hash__(self) -> int:
        return hash((type(self), tuple(str(s) for s in self.evaluation.slices)))

    def __repr__(self) -> str:
        return f"SliceProfileCoder(slices={[str(s) for s in self.evaluation.slices]})"


class SliceProfileCombineFn(MetricsCombineFn):
    """The counting pass as a ``CombineFn``: rows and batches are folded into a
    :class:`mergeable_metrics.evaluation.profile.SliceProfile` (same element kinds and row buffering as
    :class:`MetricsCombineFn`); the output is the resolved
    :class:`mergeable_metrics.evaluation.profile.ProfileSummary`.

    Args:
        evaluation: the :class:`mergeable_metrics.Evaluation` whose specs need a profile.
        batch_size: rows buffered before a vectorised fold.

    Raises:
        TypeError: ``evaluation`` is not a :class:`mergeable_metrics.Evaluation`.
    """

    def __init__(self, evaluation: Evaluation, batch_size: int = DEFAULT_BATCH_SIZE):
        super().__init__(evaluation, batch_size)
        self.evaluation = evaluation.profiler()  # the accumulator vocabulary of the counting pass
        self._columns = list(self.evaluation.columns)

    def extract_output(self, accumulator: MetricsAccumulator) -> ProfileSummary:
        self._flush(accumulator)
        return self.evaluation.finish(accumulator.acc)

    def get_accumulator_coder(self) -> SliceProfileCoder:
        return SliceProfileCoder(self.evaluation)

    def display_data(self) -> dict[str, Any]:
        return {"slices": "; ".join(str(s) for s in self.evaluation.slices), "batch_size": self.batch_size}


class ProfileSummaryCoder(beam.coders.Coder):
    """:class:`mergeable_metrics.evaluation.profile.ProfileSummary` as canonical JSON (deterministic, no pickle)."""

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


def profile_summary(pcoll: beam.PCollection, evaluation: Evaluation, batch_size: int) -> beam.PCollection:
    """The counting pass of ``ComputeMetrics``: the resolved :class:`~mergeable_metrics.evaluation.profile.ProfileSummary`
    of ``pcoll`` (one per window), for an ``AsSingleton`` side input (see the module docstring)."""
    profile = beam.CombineGlobally(SliceProfileCombineFn(evaluation, batch_size))
    if not isinstance(pcoll.windowing.windowfn, GlobalWindows):
        profile = profile.without_defaults()
    return pcoll | "SliceProfile" >> profile
