"""ComputeMetrics inside Beam windows (fixed, sliding, sessions) and under early/late triggers:
per-window, per-slice results carrying the window bounds, equal to a core Evaluation on each
window's rows; the final pane of an accumulating trigger equals the batch answer."""

from __future__ import annotations

import datetime as dt
import warnings

import numpy as np
import pytest

beam = pytest.importorskip("apache_beam")
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions  # noqa: E402
from apache_beam.testing.test_stream import TestStream  # noqa: E402
from apache_beam.transforms import trigger, window  # noqa: E402
from apache_beam.utils.windowed_value import PaneInfoTiming  # noqa: E402

from mergeable_metrics.beam import ComputeMetrics  # noqa: E402
from mergeable_metrics import Evaluation, Results, WindowedEvaluation  # noqa: E402
from tests._helpers.windows import EPOCH, OPTIONS, assert_same_windows, reference, timed_rows  # noqa: E402

_SEEN: dict[str, list] = {}


class _Collect(beam.DoFn):
    def __init__(self, name: str):
        self.name = name

    def process(self, sr, pane=beam.DoFn.PaneInfoParam):
        _SEEN.setdefault(self.name, []).append((pane.index, pane.timing, pane.is_last, sr))


def _rows(cols):
    return [{k: (v[i].item() if hasattr(v[i], "item") else v[i]) for k, v in cols.items()} for i in range(len(cols["ts"]))]


_STEPS: dict[str, list[str]] = {}


def _run(cols, windowfn, name, **options):
    _SEEN.pop(name, None)
    with beam.Pipeline(runner="DirectRunner") as p:
        _ = (
            p
            | beam.Create([window.TimestampedValue(r, r["ts"]) for r in _rows(cols)])
            | beam.WindowInto(windowfn)
            | ComputeMetrics(**{**OPTIONS, **options}, batch_size=7)
            | beam.ParDo(_Collect(name))
        )
    _STEPS[name] = [t.unique_name for t in p.to_runner_api().components.transforms.values()]
    return Results.from_slices([x[3] for x in _SEEN[name]], spec_order=[("g",)])


def _took_the_per_slice_path(name):
    steps = _STEPS[name]
    return any(s.endswith("ComputeMetrics/MergePerSlice") for s in steps) and not any("CombinePerWindow" in s for s in steps)


@pytest.mark.parametrize("size,slide", [(3600, None), (3600, 1200), (5400, 3600)])
def test_fixed_and_sliding_windows_equal_the_batch_answer_per_window(size, slide):
    cols = timed_rows(n=240, hours=4, seed=3)
    fn = window.FixedWindows(size) if slide is None else window.SlidingWindows(size, slide)
    got = _run(cols, fn, f"w{size}-{slide}")
    want = reference(cols, size, slide)
    assert_same_windows(got, want)
    assert got.windows and all(isinstance(w[0], dt.datetime) and w[0].tzinfo is not None for w in got.windows)
    assert _took_the_per_slice_path(f"w{size}-{slide}")  # CombinePerKey keyed by (window, slice)
    # and the local engine gives the same results
    assert_same_windows(WindowedEvaluation(("ts", size, slide), **OPTIONS).evaluate(cols), got)


@pytest.mark.parametrize("slide", [None, 1800])
def test_windows_with_max_slices_carry_the_window_bounds(slide):
    """The counting pass (max_slices) runs per window: each window's results equal a core
    Evaluation with the same max_slices on the window's rows, and carry the window's bounds."""
    cols = timed_rows(n=200, hours=3, seed=11)
    opts = dict(slices=["g;max_slices=1"], min_slice_size=5)
    fn = window.FixedWindows(3600) if slide is None else window.SlidingWindows(3600, slide)
    got = _run(cols, fn, f"max_slices-{slide}", **opts)
    want = reference(cols, 3600, slide, **opts)
    assert_same_windows(got, want)
    assert len(got.windows) == len(want.windows) >= 3 and all(s.window_start is not None and s.window_end is not None for s in got)
    assert any(s.slice == (("g", "__other__"),) for s in got) and _took_the_per_slice_path(f"max_slices-{slide}")
    assert all(s.window_end - s.window_start == dt.timedelta(hours=1) for s in got)
    assert [s.folded_values for s in got] == [s.folded_values for s in want] and any(s.folded_values for s in got)


def test_windows_with_quantile_slices_are_bucketed_per_window():
    cols = timed_rows(n=150, hours=2, seed=12)
    got = _run(cols, window.FixedWindows(3600), "quantiles", slices=["s:quantiles=3"])
    want = reference(cols, 3600, slices=["s:quantiles=3"])
    assert_same_windows(got, want)
    assert len(got.windows) == 2 and sum(1 for s in got if s.slice) == 6 and all(s.window_start is not None for s in got)


def test_sessions_with_max_slices_are_refused():
    with pytest.raises(ValueError, match="max_slices and quantile slices are not supported under Sessions"):
        _run(timed_rows(n=20, hours=1), window.Sessions(600), "sessions-max", slices=["g;max_slices=1"])


def test_session_windows():
    cols = timed_rows(n=60, hours=6, seed=5)
    gap = 900
    got = _run(cols, window.Sessions(gap), "sessions")
    ts = cols["ts"]
    breaks = np.flatnonzero(np.diff(ts) >= gap) + 1  # sessions by hand: a new one after a gap of >= 15 min
    want = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for part in np.split(np.arange(len(ts)), breaks):
            rows = {k: v[part] for k, v in cols.items()}
            w0, w1 = EPOCH + dt.timedelta(seconds=int(ts[part[0]])), EPOCH + dt.timedelta(seconds=int(ts[part[-1]]) + gap)
            want += [s.with_window(w0, w1) for s in Evaluation(**OPTIONS).evaluate(rows)]
    assert len(breaks) >= 3
    assert_same_windows(got, Results(want))


def test_early_and_late_panes_accumulating_final_pane_equals_the_batch_answer():
    cols = timed_rows(n=90, hours=2, seed=9)
    rows = _rows(cols)
    late = rows[::10]  # arrive after the watermark passed their window: late panes
    on_time = [r for i, r in enumerate(rows) if i % 10]
    stream = TestStream().advance_watermark_to(int(cols["ts"][0]) - 1)
    for chunk in np.array_split(np.arange(len(on_time)), 6):
        stream = stream.add_elements([window.TimestampedValue(on_time[i], on_time[i]["ts"]) for i in chunk]).advance_processing_time(30)
    stream = stream.advance_watermark_to(int(cols["ts"][-1]) + 3601)
    stream = stream.add_elements([window.TimestampedValue(r, r["ts"]) for r in late]).advance_watermark_to_infinity()
    options = PipelineOptions()
    options.view_as(StandardOptions).streaming = True
    _SEEN.pop("panes", None)
    with beam.Pipeline(runner="DirectRunner", options=options) as p:
        _ = (
            p
            | stream
            | beam.WindowInto(
                window.FixedWindows(3600),
                trigger=trigger.AfterWatermark(early=trigger.AfterCount(10), late=trigger.AfterCount(1)),
                accumulation_mode=trigger.AccumulationMode.ACCUMULATING,
                allowed_lateness=36000,
            )
            | ComputeMetrics(**OPTIONS)
            | beam.ParDo(_Collect("panes"))
        )
    seen = _SEEN["panes"]
    timings = {t for _, t, _, _ in seen}
    assert PaneInfoTiming.EARLY in timings and PaneInfoTiming.LATE in timings
    # the last pane of every window: the batch answer on all its rows (late ones included)
    last: dict = {}
    for index, _, _, sr in seen:
        key = (sr.window, sr.slice)
        if key not in last or index > last[key][0]:
            last[key] = (index, sr)
    got = Results.from_slices([sr for _, sr in last.values()], spec_order=[("g",)])
    assert_same_windows(got, reference(cols, 3600))
    # an early pane holds fewer rows than the final one: the panes accumulate
    overall = sorted((i, sr.n) for i, _, _, sr in seen if sr.slice == () and sr.window == got.windows[0])
    assert overall[0][1] < overall[-1][1] and [n for _, n in overall] == sorted(n for _, n in overall)


def test_result_coder_keeps_the_window():
    from mergeable_metrics.beam.results_io import SliceResultCoder

    r = WindowedEvaluation(("ts", "1h", "30m"), **OPTIONS, min_slice_size=20).evaluate(timed_rows(n=50, hours=2))
    coder = SliceResultCoder()
    assert [coder.decode(coder.encode(s)) for s in r] == r.slices
    assert any(s.suppressed for s in r) and all(s.window_start is not None for s in r)
