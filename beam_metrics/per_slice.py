"""The steps of :class:`~beam_metrics.ComputeMetrics`: fold per bundle, merge per slice key.

::

    pcoll | ParDo(FoldPerSlice)        # each bundle (per window) folded into one accumulator;
                                       # finish_bundle emits one (slice key, encoded states)
                                       # element per slice
          | CombinePerKey(MergeSliceStatesFn).with_hot_key_fanout(overall slice -> n)
                                       # states of one slice merged (core's plan.merge); the
                                       # extract step finishes the slice -> SliceResult JSON
          | Values()
          | CombineGlobally(GatherSlicesFn)    # the small per-slice results, gathered
          | FlatMap(assemble_results)          # evaluation.collect: canonical order,
                                               # suppression, folded_values -> SliceResults

Under non-global windowing (fixed, sliding windows) every step runs per window; the finished
lines are tagged with their pane index (``TagPane``) and the last step
(``AssembleWindowResults``, reading the window with ``beam.DoFn.WindowParam``) keeps the latest
pane of each slice and sets ``window_start`` / ``window_end`` on every result. Merging windows
(``Sessions``: defined by all rows, not per slice key), triggers and allowed lateness take
``expand_merging_windows``: one ``CombineGlobally(MetricsCombineFn)`` per window, so each pane
comes from one grouping. With early / late panes use ``AccumulationMode.ACCUMULATING``: each
pane's results are then those of all the window's rows so far, and the final pane equals the
batch answer on the window's rows (``DISCARDING``: each pane's results are of its new rows only).

Only small, fixed-size states cross the first shuffle, keyed by slice, so the merge of many slices
is spread over workers; no accumulator holds more than one slice after the bundle. The overall
slice is the one key every bundle emits: it fans out over ``hot_key_fanout`` intermediate keys.
The last step gathers only finished per-slice results (a few hundred bytes each): suppression of
complements (:mod:`core.suppression`) needs every slice of an evaluation at once. No pickle
crosses a shuffle: states use core's versioned codec, results JSON.
"""

from __future__ import annotations

import struct
import typing
import warnings
from typing import Any, Iterable

import apache_beam as beam
from apache_beam.metrics import Metrics
from apache_beam.transforms.trigger import DefaultTrigger
from apache_beam.transforms.window import GlobalWindow, GlobalWindows
from apache_beam.utils.windowed_value import WindowedValue

from beam_metrics.combine import EvaluationCoder, MetricsAccumulator, MetricsCombineFn
from beam_metrics.results_io import slice_result_from_json, slice_result_to_json
from core import codec
from core.windows import window_from_micros
from core.evaluation import Evaluation
from core.metrics import UndefinedMetricWarning
from core.results import Results, SliceResult
from core.slicing import OVERALL

__all__ = [
    "FoldPerSlice",
    "GatherSlicesFn",
    "MergeSliceStatesFn",
    "OVERALL_KEY",
    "ProfiledAssembleWindowResults",
    "ProfiledFoldPerSlice",
    "SliceStates",
    "SessionResults",
    "SliceStatesCoder",
    "AssembleWindowResults",
    "TagPane",
    "WindowMetricsCombineFn",
    "WindowedFoldPerSlice",
    "assemble_results",
    "expand_per_slice",
    "overall_fanout",
]

#: The slice key (JSON, :func:`core.codec.slice_key_to_json`) of the overall slice.
OVERALL_KEY = codec.slice_key_to_json(OVERALL)

#: Beam metrics namespace of the adapter's counters and distributions.
METRICS_NAMESPACE = "beam_metrics"


# -- per-bundle fold ----------------------------------------------------------------------------
class FoldPerSlice(beam.DoFn):
    """Fold a bundle's elements into one accumulator (rows buffered and folded ``batch_size`` at
    a time, batches folded as they come: :class:`~beam_metrics.MetricsCombineFn`'s ``add_input``);
    at the end of the bundle emit one ``(slice key JSON, (slice key JSON, encoded states))``
    element per slice (``evaluation.encode_states``), in the global window (see
    :class:`WindowedFoldPerSlice` and :class:`ProfiledFoldPerSlice` for other windows and the
    counting pass' side input).

    Args:
        evaluation: the :class:`core.Evaluation`.
        batch_size: rows buffered before a vectorised fold.
    """

    def __init__(self, evaluation: Evaluation, batch_size: int):
        self.evaluation = evaluation
        self.batch_size = batch_size
        self._cache: tuple[str | None, MetricsCombineFn] | None = None
        self._open: dict = {}
        self._global: tuple[MetricsCombineFn, MetricsAccumulator] | None = None

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

    def process(self, element: Any) -> None:
        entry = self._global
        if entry is None:  # one accumulator per bundle, in the global window
            fn, acc = self._entry(GlobalWindow(), None)
            entry = self._global = (fn._add, acc)
        entry[0](entry[1], element)

    def finish_bundle(self) -> Iterable[WindowedValue]:
        for window, (fn, acc) in self._open.items():
            fn.compact(acc)
            ev = fn.evaluation
            ts = window.max_timestamp()
            for key, states in acc.acc.items():
                key_json = codec.slice_key_to_json(key)
                yield WindowedValue((key_json, (key_json, ev.encode_states(states))), ts, [window])
        self._open = {}
        self._global = None


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
        return (_slice_states_from_bytes, (self.key, sorted(self.keys), codec.encode_accumulator({OVERALL: self.states}, None)))

    def __repr__(self) -> str:
        return f"SliceStates(key={self.key!r}, keys={len(self.keys)})"


def _slice_states_from_bytes(key: str | None, keys: list, data: bytes) -> SliceStates:
    acc, _, _ = codec.read_accumulator(data)
    return SliceStates(key, acc[OVERALL], frozenset(keys))


class SliceStatesCoder(EvaluationCoder):
    """:class:`SliceStates` as bytes: the slice keys (JSON) and ``evaluation.encode_states``
    (core's versioned, checksummed codec; no pickle); decoding checks the states as
    ``evaluation.decode_states`` does.

    Args:
        evaluation: the :class:`core.Evaluation` the states belong to.
    """

    def encode(self, value: SliceStates) -> bytes:
        keys = sorted(value.keys)
        parts = [struct.pack("<I", len(keys))]
        for k in keys:
            b = k.encode("utf-8")
            parts += [struct.pack("<I", len(b)), b]
        key = b"" if value.key is None else value.key.encode("utf-8")
        parts += [struct.pack("<I", len(key)), key, self.evaluation.encode_states(value.states)]
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
        return SliceStates(key, self.evaluation.decode_states(bytes(data[pos:])), keys)

    def to_type_hint(self) -> type:
        return SliceStates


class MergeSliceStatesFn(beam.CombineFn):
    """Merges one slice's encoded partial states (values ``(slice key JSON, state bytes)`` of
    :class:`FoldPerSlice`, under ``CombinePerKey`` by slice key) with ``evaluation.plan.merge``,
    then finishes the slice: the output is its :class:`core.SliceResult` as JSON
    (:func:`~beam_metrics.slice_result_to_json`).

    Undefined metrics are NaN; no ``UndefinedMetricWarning`` is raised (on a worker, per slice,
    it could not reach the caller), as in the Spark adapter.

    Raises:
        ValueError: states of two different slices reach one accumulator, or bytes of another
            configuration (from ``evaluation.decode_states``).
    """

    def __init__(self, evaluation: Evaluation):
        self.evaluation = evaluation
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
        return self._merge_into(mutable_accumulator, key, frozenset((key,)), self.evaluation.decode_states(data))

    def merge_accumulators(self, accumulators: Iterable[SliceStates]) -> SliceStates:
        it = iter(accumulators)
        first = next(it, None)
        if first is None:
            return self.create_accumulator()
        for other in it:
            self._merge_into(first, other.key, other.keys, other.states)
        return first

    def extract_output(self, accumulator: SliceStates) -> str:
        if accumulator.key is None:  # pragma: no cover - CombinePerKey never finishes an empty key
            raise ValueError("no slice key: nothing was merged")
        self._slices_per_accumulator.update(len(accumulator.keys))
        key = codec.slice_key_from_json(accumulator.key)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            result = self.evaluation.finish({key: accumulator.states}, add_overall=False)[key]
        return slice_result_to_json(result)

    def get_accumulator_coder(self) -> SliceStatesCoder:
        return SliceStatesCoder(self.evaluation)


class overall_fanout:  # noqa: N801 - a picklable function
    """``with_hot_key_fanout`` degree per slice key: ``fanout`` for the overall slice (the key
    every bundle emits), none for the others."""

    def __init__(self, fanout: int):
        self.fanout = fanout

    def __call__(self, key: str) -> int:
        return self.fanout if key == OVERALL_KEY else 0


# -- results ------------------------------------------------------------------------------------
class GatherSlicesFn(beam.CombineFn):
    """Gathers the finished per-slice results (JSON lines, a few hundred bytes each) into one
    list, for :func:`assemble_results`; the accumulator is a list of strings
    (``ListCoder(StrUtf8Coder())``, no pickle)."""

    def create_accumulator(self) -> list[str]:
        return []

    def add_input(self, mutable_accumulator: list[str], element: str) -> list[str]:
        mutable_accumulator.append(element)
        return mutable_accumulator

    def merge_accumulators(self, accumulators: Iterable[list[str]]) -> list[str]:
        out: list[str] = []
        for a in accumulators:
            out += a
        return out

    def extract_output(self, accumulator: list[str]) -> list[str]:
        return accumulator

    def get_accumulator_coder(self) -> beam.coders.Coder:
        return beam.coders.ListCoder(beam.coders.StrUtf8Coder())


def assemble_results(lines: list[str], evaluation: Evaluation, summary: Any = None) -> list[SliceResult]:
    """Every slice's :class:`core.SliceResult` from :class:`GatherSlicesFn`'s JSON lines:
    ``evaluation.collect`` (canonical order, complementary suppression; with the counting pass'
    ``summary``, ``folded_values`` of the ``__other__`` slices). The overall slice (zero states:
    ``n == 0``, NaN metrics) is added when absent, i.e. for empty input."""
    ev = evaluation if summary is None else evaluation.with_profile(summary)
    slices = [slice_result_from_json(s) for s in lines]
    if not any(s.slice == OVERALL for s in slices):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            slices += ev.finish({OVERALL: ev.plan.zero()}, add_overall=False).slices
    return ev.collect(slices=slices).slices


class TagPane(beam.DoFn):
    """Prefix a finished slice's JSON line with its pane index (``"<index>\\t<json>"``), so the
    gathering step keeps the latest pane of each slice under triggers."""

    def process(self, line: str, pane: Any = beam.DoFn.PaneInfoParam) -> Iterable[str]:
        yield f"{pane.index}\t{line}"


class AssembleWindowResults(beam.DoFn):
    """:func:`assemble_results` for one window (pane) of gathered lines: the latest pane of each
    slice (under accumulating triggers every pane holds all of the window's rows so far), every
    result carrying the window's bounds (``window_start`` / ``window_end`` from
    ``beam.DoFn.WindowParam``: ``IntervalWindow`` start and end, microsecond exact)."""

    def __init__(self, evaluation: Evaluation):
        self.evaluation = evaluation

    def process(self, lines: list[str], window: Any = beam.DoFn.WindowParam) -> Iterable[SliceResult]:
        return self._assemble(lines, None, window)

    def _assemble(self, lines: list[str], summary: Any, window: Any) -> Iterable[SliceResult]:
        latest: dict[str, tuple[int, str]] = {}
        for tagged in lines:
            index, line = tagged.split("\t", 1)
            key = codec.slice_key_to_json(slice_result_from_json(line).slice)
            if key not in latest or int(index) > latest[key][0]:
                latest[key] = (int(index), line)
        slices = assemble_results([line for _, line in latest.values()], self.evaluation, summary)
        if not hasattr(window, "start"):  # pragma: no cover - a custom window without bounds
            yield from slices
            return
        start, end = window_from_micros(window.start.micros), window_from_micros(window.end.micros)
        for s in slices:
            yield s.with_window(start, end)


class ProfiledAssembleWindowResults(AssembleWindowResults):
    """:class:`AssembleWindowResults` with the counting pass' summary as a side input."""

    def process(self, lines: list[str], summary: Any, window: Any = beam.DoFn.WindowParam) -> Iterable[SliceResult]:
        return self._assemble(lines, summary, window)


class WindowMetricsCombineFn(MetricsCombineFn):
    """:class:`~beam_metrics.MetricsCombineFn` whose finish raises no ``UndefinedMetricWarning``
    (on a worker it could not reach the caller; undefined values are NaN and listed per slice)."""

    def extract_output(self, accumulator: MetricsAccumulator) -> Results:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            return super().extract_output(accumulator)


class SessionResults(beam.DoFn):
    """The :class:`core.Results` of one merged window (a session) as its slices, each carrying
    the window's bounds."""

    def __init__(self, evaluation: Evaluation):
        self.evaluation = evaluation

    def process(self, results: Results, window: Any = beam.DoFn.WindowParam) -> Iterable[SliceResult]:
        start, end = window_from_micros(window.start.micros), window_from_micros(window.end.micros)
        for s in results:
            yield s.with_window(start, end)


def expand_merging_windows(pcoll: beam.PCollection, evaluation: Evaluation, batch_size: int) -> beam.PCollection:
    """``ComputeMetrics`` under merging windows (``Sessions``), triggers or allowed lateness.

    Sessions are defined by all the rows, not per slice key, and a trigger's panes must come
    from one grouping (a second one would re-trigger on the first one's panes): the states of
    every slice are combined in one accumulator per window and pane
    (``CombineGlobally(MetricsCombineFn)``, partial combining per bundle), then finished per
    window, each result carrying the window's bounds."""
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
    if windowed and (pcoll.windowing.windowfn.is_merging() or not isinstance(pcoll.windowing.triggerfn, DefaultTrigger) or pcoll.windowing.allowed_lateness):
        return expand_merging_windows(pcoll, evaluation, batch_size)
    side = () if summary is None else (summary,)
    kind = ProfiledFoldPerSlice if summary is not None else WindowedFoldPerSlice if windowed else FoldPerSlice
    fold = kind(evaluation, batch_size)
    merge = beam.CombinePerKey(MergeSliceStatesFn(evaluation))
    if hot_key_fanout > 1:
        merge = merge.with_hot_key_fanout(overall_fanout(hot_key_fanout))
    gather = beam.CombineGlobally(GatherSlicesFn())
    if windowed:
        gather = gather.without_defaults()
    per_slice = (
        pcoll
        | "FoldPerBundle" >> beam.ParDo(fold, *side).with_output_types(typing.Tuple[str, typing.Tuple[str, bytes]])
        | "MergePerSlice" >> merge
        | "SliceResults" >> beam.Values().with_output_types(str)
    )
    if windowed:  # results carry their window; under triggers, each pane the latest of every slice
        return (
            per_slice
            | "TagPane" >> beam.ParDo(TagPane()).with_output_types(str)
            | "Gather" >> gather.with_output_types(typing.List[str])
            | "PerSlice" >> beam.ParDo((ProfiledAssembleWindowResults if side else AssembleWindowResults)(evaluation), *side).with_output_types(SliceResult)
        )
    return (
        per_slice
        | "Gather" >> gather.with_output_types(typing.List[str])
        | "PerSlice" >> beam.FlatMap(assemble_results, evaluation, *side).with_output_types(SliceResult)
    )
