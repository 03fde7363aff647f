"""The steps of :class:`~mergeable_metrics.beam.ComputeMetrics`: fold per bundle, merge per slice key.

::

    pcoll | ParDo(FoldPerSlice)        # each bundle (per window) folded into one accumulator;
                                       # finish_bundle emits one (slice key, encoded states)
                                       # element per slice; the overall slice under one of
                                       # hot_key_fanout shard keys
          | CombinePerKey(MergeSliceStatesFn)
                                       # states of one slice (or overall shard) merged (core's
                                       # plan.merge); the extract step finishes the slice ->
                                       # (RESULT, SliceResult JSON), or passes an overall
                                       # shard's merged states on -> (PARTIAL, states bytes)
          | Values()
          | Flatten with Impulse | Map(_NO_SLICES)   # global window: one marker element, so
                                                    # empty input still reaches the gather
          | Map(key 0) | GroupByKey() | Values()    # the small per-slice results, gathered
          | ParDo(AssembleResults)     # the overall shards' states merged and finished, then
                                       # evaluation.collect: canonical order, suppression,
                                       # folded_values -> SliceResults

Under fixed and sliding windows (default trigger) the same steps run per window: the fold keeps
one accumulator per window of the bundle (:class:`WindowedFoldPerSlice`), ``CombinePerKey``
groups by (window, slice key) as Beam does for keyed, windowed input, the gather is one group
per window, and :class:`AssembleResults` reads the window (``beam.DoFn.WindowParam``) and sets
``window_start`` / ``window_end`` on every result (also with a counting pass: ``max_slices`` /
quantile slices, profiled per window by the side input). Windows without elements produce no
output.

Under merging windows (sessions), non-default triggers or allowed lateness
(:func:`needs_one_grouping`) ``expand_merging_windows`` runs instead: one
``CombineGlobally(MetricsCombineFn)`` per window (partial combining per bundle), so sessions are
defined by all rows (not per slice key) and each pane comes from one grouping;
``SessionResults`` sets the window bounds. With early / late panes use
``AccumulationMode.ACCUMULATING``: each pane's results are then those of all the window's rows so
far, and the final pane equals the batch answer on the window's rows (``DISCARDING``: each
pane's results are of its new rows only). A counting pass is not supported there (ValueError).

Only small, fixed-size states cross the first shuffle, keyed by slice, so the merge of many slices
is spread over workers; no accumulator holds more than one slice after the bundle. The overall
slice is the one key every bundle emits: its partial states are spread over ``hot_key_fanout``
shard keys (a hot-key fanout), and the at most ``hot_key_fanout`` merged shards are merged once
more in the gather. The gather is a ``GroupByKey`` on one key, not a ``CombineGlobally``: it
holds only finished per-slice results (a few hundred bytes each) and the overall shards'
states, and costs one stage instead of ``CombineGlobally``'s several (its default value for
empty input, a side input, is replaced by the ``Impulse`` marker); suppression of complements
(:mod:`mergeable_metrics.evaluation.suppression`) needs every slice of an evaluation at once. No pickle crosses a
shuffle: states use core's versioned codec, results JSON.
"""

from __future__ import annotations

import random
import struct
import typing
import warnings
from typing import Any, Iterable

import apache_beam as beam
from apache_beam.metrics import Metrics
from apache_beam.transforms.window import GlobalWindow, GlobalWindows
from apache_beam.utils.windowed_value import WindowedValue

from mergeable_metrics.beam.combine import EvaluationCoder, MetricsAccumulator, MetricsCombineFn
from mergeable_metrics.beam.results_io import slice_result_from_json, slice_result_to_json
from mergeable_metrics.engine import (
    OVERALL,
    Evaluation,
    Results,
    SliceResult,
    State,
    UndefinedMetricWarning,
    slice_key_from_json,
    slice_key_to_json,
    window_from_micros,
)

__all__ = [
    "FoldPerSlice",
    "MergeSliceStatesFn",
    "OVERALL_KEY",
    "PARTIAL",
    "ProfiledAssembleResults",
    "ProfiledFoldPerSlice",
    "RESULT",
    "SliceStates",
    "SessionResults",
    "SliceStatesCoder",
    "WindowMetricsCombineFn",
    "WindowedFoldPerSlice",
    "AssembleResults",
    "assemble_results",
    "expand_per_slice",
    "needs_one_grouping",
]

#: The slice key (JSON, :func:`mergeable_metrics.states.slice_key_to_json`) of the overall slice.
OVERALL_KEY = slice_key_to_json(OVERALL)

#: Beam metrics namespace of the adapter's counters and distributions.
METRICS_NAMESPACE = "mergeable_metrics.beam"

#: Kinds of :class:`MergeSliceStatesFn`'s outputs ``(kind, payload)``: a finished slice's
#: :class:`mergeable_metrics.SliceResult` as UTF-8 JSON, or an overall shard's merged states (core's codec).
RESULT, PARTIAL = "result", "partial"
_NO_SLICES = ("none", b"")  # the gather's marker element (global window): never a slice


#: Elements a :class:`FoldPerSlice` collects before adding them to its accumulator at once.
ELEMENT_CHUNK = 1024


def overall_shard_key(shard: int) -> str:
    """The ``CombinePerKey`` key of the overall slice's shard ``shard`` (not a slice key JSON)."""
    return f"{OVERALL_KEY}#{shard}"


# -- per-bundle fold ----------------------------------------------------------------------------
class FoldPerSlice(beam.DoFn):
    """Fold a bundle's elements into one accumulator (rows buffered and folded ``batch_size`` at
    a time, batches folded as they come: :class:`~mergeable_metrics.beam.MetricsCombineFn`'s ``add_input``);
    at the end of the bundle emit one ``(slice key JSON, (slice key JSON, encoded states))``
    element per slice (``evaluation.slice_codec.encode``), in the global window (see
    :class:`WindowedFoldPerSlice` and :class:`ProfiledFoldPerSlice` for other windows and the
    counting pass' side input).

    Args:
        evaluation: the :class:`mergeable_metrics.Evaluation`.
        batch_size: rows buffered before a vectorised fold.
        hot_key_fanout: with more than 1, the overall slice's element of a bundle is keyed by
            one of ``hot_key_fanout`` shard keys (:func:`overall_shard_key`, one shard per
            bundle, in turn from a random start) instead of the overall slice key.
    """

    def __init__(self, evaluation: Evaluation, batch_size: int, hot_key_fanout: int = 0):
        self.evaluation = evaluation
        self.batch_size = batch_size
        self.hot_key_fanout = hot_key_fanout
        self._shard = -1
        self._cache: tuple[str | None, MetricsCombineFn] | None = None
        self._open: dict = {}
        self._global: tuple[MetricsCombineFn, MetricsAccumulator] | None = None
        self._elements: list = []

    def _fn(self, summary: Any) -> MetricsCombineFn:
        text = None if summary is None else summary.to_json()
        if self._cache is None or self._cache[0] != text:
            ev = self.evaluation if summary is None else self.evaluation.with_profile(summary)
            self._cache = (text, MetricsCombineFn(ev, self.batch_size))
        return self._cache[1]

    def _entry(self, window: Any, summary: Any) -> tuple[MetricsCombineFn, MetricsAccumulator]:
        entry = self._open.get(window)
        if entry is None:
            fn = self._fn(summary)
            entry = self._open[window] = (fn, fn.create_accumulator())
        return entry

    def start_bundle(self) -> None:
        self._open = {}
        self._global = None
        self._elements = []
        if self.hot_key_fanout > 1:
            self._shard = random.randrange(self.hot_key_fanout) if self._shard < 0 else (self._shard + 1) % self.hot_key_fanout

    def process(self, element: Any) -> None:
        # elements wait in a list (nothing else per element) and join the accumulator
        # ELEMENT_CHUNK at a time, in order (MetricsCombineFn.add_elements)
        elements = self._elements
        elements.append(element)
        if len(elements) >= ELEMENT_CHUNK:
            self._add_elements()

    def _add_elements(self) -> None:
        entry = self._global
        if entry is None:  # one accumulator per bundle, in the global window
            entry = self._global = self._entry(GlobalWindow(), None)
        elements, self._elements = self._elements, []
        entry[0].add_elements(entry[1], elements)

    def finish_bundle(self) -> Iterable[WindowedValue]:
        if self._elements:
            self._add_elements()
        for window, (fn, acc) in self._open.items():
            fn.compact(acc)
            ev = fn.evaluation
            ts = window.max_timestamp()
            for key, states in acc.acc.items():
                key_json = slice_key_to_json(key)
                group = overall_shard_key(self._shard) if key == OVERALL and self.hot_key_fanout > 1 else key_json
                yield WindowedValue((group, (key_json, ev.slice_codec.encode(states))), ts, [window])
        self._open = {}
        self._global = None
        self._elements = []


class WindowedFoldPerSlice(FoldPerSlice):
    """:class:`FoldPerSlice` for non-global windowing: one accumulator per window of the bundle."""

    def process(self, element: Any, window: Any = beam.DoFn.WindowParam) -> None:
        fn, acc = self._entry(window, None)
        fn._add(acc, element)


class ProfiledFoldPerSlice(FoldPerSlice):
    """:class:`FoldPerSlice` with the counting pass' summary as a side input (any windowing)."""

    def process(self, element: Any, summary: Any, window: Any = beam.DoFn.WindowParam) -> None:
        fn, acc = self._entry(window, summary)
        fn._add(acc, element)


# -- per-slice merge -------------------------------------------------------------------------------
class SliceStates:
    """Accumulator of :class:`MergeSliceStatesFn`: one slice's merged states.

    Attributes:
        key: the slice key JSON (None until the first input).
        states: the slice's tuple of states (``evaluation.plan``'s kinds).
        keys: every slice key merged into this accumulator (its inputs' and merged accumulators'):
            exactly ``{key}`` under ``CombinePerKey``; reported as a Beam distribution
            (``slices_per_accumulator``) when a slice is finished.
    """

    __slots__ = ("key", "states", "keys")

    def __init__(self, key: str | None, states: tuple, keys: frozenset | None = None):
        self.key = key
        self.states = states
        self.keys = frozenset(() if key is None else (key,)) if keys is None else keys

    def __reduce__(self) -> tuple:
        # Beam's hot-key fanout path pickles accumulators: through core's codec, never the objects.
        return (_slice_states_from_bytes, (self.key, sorted(self.keys), [s.encode() for s in self.states]))

    def __repr__(self) -> str:
        return f"SliceStates(key={self.key!r}, keys={len(self.keys)})"


def _slice_states_from_bytes(key: str | None, keys: list, blobs: list) -> SliceStates:
    return SliceStates(key, tuple(State.decode(b) for b in blobs), frozenset(keys))


class SliceStatesCoder(EvaluationCoder):
    """:class:`SliceStates` as bytes: the slice keys (JSON) and ``evaluation.slice_codec.encode``
    (core's versioned, checksummed codec; no pickle); decoding checks the states as
    ``evaluation.slice_codec.decode`` does.

    Args:
        evaluation: the :class:`mergeable_metrics.Evaluation` the states belong to.
    """

    def encode(self, value: SliceStates) -> bytes:
        keys = sorted(value.keys)
        parts = [struct.pack("<I", len(keys))]
        for k in keys:
            b = k.encode("utf-8")
            parts += [struct.pack("<I", len(b)), b]
        key = b"" if value.key is None else value.key.encode("utf-8")
        parts += [struct.pack("<I", len(key)), key, self.evaluation.slice_codec.encode(value.states)]
        return b"".join(parts)

    def decode(self, encoded: bytes) -> SliceStates:
        data = memoryview(bytes(encoded))
        try:
            pos = 0

            def read() -> str:
                nonlocal pos
                (n,) = struct.unpack_from("<I", data, pos)
                text = bytes(data[pos + 4 : pos + 4 + n]).decode("utf-8")
                if len(text.encode("utf-8")) != n:
                    raise ValueError("truncated")
                pos += 4 + n
                return text

            (count,) = struct.unpack_from("<I", data, pos)
            pos += 4
            if count > len(data):
                raise ValueError("bad key count")
            keys = frozenset(read() for _ in range(count))
            key = read() or None
        except (struct.error, UnicodeDecodeError, ValueError) as e:
            raise ValueError(f"corrupted slice-state bytes: {e}") from None
        return SliceStates(key, self.evaluation.slice_codec.decode(bytes(data[pos:])), keys)

    def to_type_hint(self) -> type:
        return SliceStates


class MergeSliceStatesFn(beam.CombineFn):
    """Merges one slice's encoded partial states (values ``(slice key JSON, state bytes)`` of
    :class:`FoldPerSlice`, under ``CombinePerKey`` by slice key) with ``evaluation.plan.merge``,
    then finishes the slice: the output is ``(RESULT, its SliceResult as UTF-8 JSON)``
    (:func:`~mergeable_metrics.beam.slice_result_to_json`). With ``finish_overall=False`` (the overall
    slice spread over shard keys) the overall slice's output is ``(PARTIAL, its merged states)``
    (``evaluation.slice_codec.encode``), finished by :func:`assemble_results`.

    Undefined metrics are NaN; no ``UndefinedMetricWarning`` is raised (on a worker, per slice,
    it could not reach the caller), as in the Spark adapter.

    Raises:
        ValueError: states of two different slices reach one accumulator, or bytes of another
            configuration (from ``evaluation.slice_codec.decode``).
    """

    def __init__(self, evaluation: Evaluation, finish_overall: bool = True):
        self.evaluation = evaluation
        self.finish_overall = finish_overall
        self._slices_per_accumulator = Metrics.distribution(METRICS_NAMESPACE, "slices_per_accumulator")

    def create_accumulator(self) -> SliceStates:
        return SliceStates(None, self.evaluation.plan.zero())

    def _merge_into(self, acc: SliceStates, key: str | None, keys: frozenset, states: tuple) -> SliceStates:
        if key is not None:
            if acc.key is None:
                acc.key = key
            elif key != acc.key:
                raise ValueError(f"cannot merge the states of slice {key} into those of slice {acc.key}")
        acc.states = self.evaluation.plan.merge(acc.states, states)
        acc.keys = acc.keys | keys
        return acc

    def add_input(self, mutable_accumulator: SliceStates, element: tuple[str, bytes]) -> SliceStates:
        key, data = element
        return self._merge_into(mutable_accumulator, key, frozenset((key,)), self.evaluation.slice_codec.decode(data))

    def merge_accumulators(self, accumulators: Iterable[SliceStates]) -> SliceStates:
        it = iter(accumulators)
        first = next(it, None)
        if first is None:
            return self.create_accumulator()
        for other in it:
            self._merge_into(first, other.key, other.keys, other.states)
        return first

    def extract_output(self, accumulator: SliceStates) -> tuple[str, bytes]:
        if accumulator.key is None:  # pragma: no cover - CombinePerKey never finishes an empty key
            raise ValueError("no slice key: nothing was merged")
        if accumulator.key == OVERALL_KEY and not self.finish_overall:
            return PARTIAL, self.evaluation.slice_codec.encode(accumulator.states)
        self._slices_per_accumulator.update(len(accumulator.keys))
        return RESULT, _finish(self.evaluation, accumulator.key, accumulator.states).encode("utf-8")

    def get_accumulator_coder(self) -> SliceStatesCoder:
        return SliceStatesCoder(self.evaluation)


# -- results ------------------------------------------------------------------------------------
def _finish(evaluation: Evaluation, key_json: str, states: tuple) -> str:
    """One slice's :class:`mergeable_metrics.SliceResult` as JSON (undefined metrics NaN, no warning)."""
    key = slice_key_from_json(key_json)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        result = evaluation.finish({key: states}, add_overall=False)[key]
    return slice_result_to_json(result)


def _gather_key(part: tuple[str, bytes]) -> tuple[int, tuple[str, bytes]]:
    return 0, part


def _no_slices(_: Any) -> tuple[str, bytes]:
    return _NO_SLICES


def assemble_results(parts: Iterable[tuple[str, bytes]], evaluation: Evaluation, summary: Any = None) -> list[SliceResult]:
    """Every slice's :class:`mergeable_metrics.SliceResult` from the gathered outputs of
    :class:`MergeSliceStatesFn` (``(RESULT, JSON)`` of finished slices, ``(PARTIAL, states)`` of
    the overall slice's shards, merged here with ``evaluation.plan.merge`` and finished; other
    kinds, the gather's marker, are ignored): ``evaluation.collect`` (canonical order,
    complementary suppression; with the counting pass' ``summary``, ``folded_values`` of the
    ``__other__`` slices). The overall slice (zero states: ``n == 0``, NaN metrics) is added when
    absent, i.e. for empty input."""
    ev = evaluation if summary is None else evaluation.with_profile(summary)
    slices, overall = [], None
    for kind, payload in parts:
        if kind == RESULT:
            slices.append(slice_result_from_json(payload))
        elif kind == PARTIAL:  # decoded, merged and finished as MergeSliceStatesFn does
            states = evaluation.slice_codec.decode(payload)
            overall = states if overall is None else evaluation.plan.merge(overall, states)
    if overall is not None:
        Metrics.distribution(METRICS_NAMESPACE, "slices_per_accumulator").update(1)
        slices.append(slice_result_from_json(_finish(evaluation, OVERALL_KEY, overall)))
    if not any(s.slice == OVERALL for s in slices):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            slices += ev.finish({OVERALL: ev.plan.zero()}, add_overall=False).slices
    return ev.collect(slices=slices).slices


class WindowMetricsCombineFn(MetricsCombineFn):
    """:class:`~mergeable_metrics.beam.MetricsCombineFn` whose finish raises no ``UndefinedMetricWarning``
    (on a worker it could not reach the caller; undefined values are NaN and listed per slice)."""

    def extract_output(self, accumulator: MetricsAccumulator) -> Results:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            return super().extract_output(accumulator)


def _with_bounds(results: Iterable[SliceResult], window: Any) -> Iterable[SliceResult]:
    """``results`` carrying the Beam ``window``'s bounds (``window_start`` / ``window_end``)."""
    start, end = window_from_micros(window.start.micros), window_from_micros(window.end.micros)
    for s in results:
        yield s.with_window(start, end)


class SessionResults(beam.DoFn):
    """The :class:`mergeable_metrics.Results` of one merged window (a session) as its slices, each carrying
    the window's bounds."""

    def __init__(self, evaluation: Evaluation):
        self.evaluation = evaluation

    def process(self, results: Results, window: Any = beam.DoFn.WindowParam) -> Iterable[SliceResult]:
        yield from _with_bounds(results, window)


class AssembleResults(beam.DoFn):
    """:func:`assemble_results` of one gathered group (one per window); under non-global
    windowing every result carries its window's bounds.

    Args:
        evaluation: the :class:`mergeable_metrics.Evaluation`.
        windowed: set ``window_start`` / ``window_end`` from the element's window.
    """

    def __init__(self, evaluation: Evaluation, windowed: bool):
        self.evaluation, self.windowed = evaluation, windowed

    def process(self, parts: Iterable[tuple[str, bytes]], window: Any = beam.DoFn.WindowParam) -> Iterable[SliceResult]:
        yield from self._assemble(parts, None, window)

    def _assemble(self, parts: Iterable[tuple[str, bytes]], summary: Any, window: Any) -> Iterable[SliceResult]:
        results = assemble_results(parts, self.evaluation, summary)
        return _with_bounds(results, window) if self.windowed else results


class ProfiledAssembleResults(AssembleResults):
    """:class:`AssembleResults` with the counting pass' summary as a side input."""

    def process(self, parts: Iterable[tuple[str, bytes]], summary: Any, window: Any = beam.DoFn.WindowParam) -> Iterable[SliceResult]:
        yield from self._assemble(parts, summary, window)


def needs_one_grouping(windowing: Any) -> bool:
    """True for merging windows (``Sessions``), a trigger other than the default one, or
    allowed lateness: then every slice is combined in one grouping per window and pane
    (:func:`expand_merging_windows`); sessions are defined by all the rows, not per slice key,
    and panes come from one grouping (a second one would re-trigger on the first one's panes)."""
    from apache_beam.transforms.trigger import DefaultTrigger

    return bool(windowing.windowfn.is_merging() or not isinstance(windowing.triggerfn, DefaultTrigger) or windowing.allowed_lateness.micros > 0)


def expand_merging_windows(pcoll: beam.PCollection, evaluation: Evaluation, batch_size: int) -> beam.PCollection:
    """``ComputeMetrics`` under merging windows (``Sessions``), triggers or allowed lateness
    (:func:`needs_one_grouping`): the states of every slice are combined in one accumulator per
    window and pane (``CombineGlobally(MetricsCombineFn)``, partial combining per bundle), then
    finished per window, each result carrying the window's bounds."""
    if evaluation.needs_profile:
        raise ValueError("max_slices and quantile slices are not supported under Sessions, triggers or allowed lateness")
    return (
        pcoll
        | "CombinePerWindow" >> beam.CombineGlobally(WindowMetricsCombineFn(evaluation, batch_size)).without_defaults().with_output_types(Results)
        | "PerSlice" >> beam.ParDo(SessionResults(evaluation)).with_output_types(SliceResult)
    )


def expand_per_slice(pcoll: beam.PCollection, evaluation: Evaluation, batch_size: int, hot_key_fanout: int, summary: Any = None) -> beam.PCollection:
    """``ComputeMetrics``' steps (see the module docstring); ``summary``: the counting pass'
    ``AsSingleton`` side input, or None."""
    windowed = not isinstance(pcoll.windowing.windowfn, GlobalWindows)
    if windowed and needs_one_grouping(pcoll.windowing):
        return expand_merging_windows(pcoll, evaluation, batch_size)
    # fixed and sliding windows (default trigger), with or without a counting pass: the
    # per-slice path, keyed by slice within each window (Beam groups per window); the gather is
    # per window, and its results carry the window's bounds
    side = () if summary is None else (summary,)
    kind = ProfiledFoldPerSlice if summary is not None else WindowedFoldPerSlice if windowed else FoldPerSlice
    fanout = hot_key_fanout if hot_key_fanout > 1 else 0
    part = typing.Tuple[str, bytes]
    parts = (
        pcoll
        | "FoldPerBundle" >> beam.ParDo(kind(evaluation, batch_size, fanout), *side).with_output_types(typing.Tuple[str, typing.Tuple[str, bytes]])
        | "MergePerSlice" >> beam.CombinePerKey(MergeSliceStatesFn(evaluation, finish_overall=not fanout))
        | "SliceResults" >> beam.Values().with_output_types(part)
    )
    if not windowed:  # one element whatever the input, so empty input still gives the overall slice
        start = pcoll.pipeline | "Start" >> beam.Impulse() | "NoSlices" >> beam.Map(_no_slices).with_output_types(part)
        parts = (parts, start) | "WithMarker" >> beam.Flatten().with_output_types(part)
    return (
        parts
        | "OneKey" >> beam.Map(_gather_key).with_output_types(typing.Tuple[int, part])
        | "Gather" >> beam.GroupByKey()
        | "Gathered" >> beam.Values()
        | "PerSlice" >> beam.ParDo((ProfiledAssembleResults if side else AssembleResults)(evaluation, windowed), *side).with_output_types(SliceResult)
    )
