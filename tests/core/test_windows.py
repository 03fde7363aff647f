"""mergeable_metrics.time.windows: per-window results equal a core Evaluation on each window's rows; results carry
window bounds through JSON, long rows and pandas; merges of windowed accumulators are exact."""

from __future__ import annotations

import datetime as dt
import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st
from sklearn.metrics import accuracy_score

from mergeable_metrics import Results, TimeWindows, WindowedEvaluation
from mergeable_metrics.time.windows import parse_duration, to_micros, window_slice_values
from tests._helpers.windows import EPOCH, OPTIONS, T0, assert_same_windows, reference, timed_rows

UTC = dt.timezone.utc


@pytest.mark.parametrize("size,slide", [(3600, None), (3600, 900), (5400, 3600), (7200, 2700)])
def test_windows_equal_evaluation_on_each_windows_rows(size, slide):
    cols = timed_rows()
    got = WindowedEvaluation(("ts", size, slide), **OPTIONS).evaluate(cols)
    assert_same_windows(got, reference(cols, size, slide))
    assert got.config["window"] == TimeWindows("ts", size, slide).to_config()


def test_hourly_accuracy_against_sklearn_and_datetime_inputs():
    cols = timed_rows(n=200, hours=3)
    hour = (cols["ts"] - T0) // 3600
    as_dt = pd.to_datetime(cols["ts"], unit="s", utc=True)
    for ts in (cols["ts"], cols["ts"].astype(float), as_dt, as_dt.tz_localize(None), np.asarray(as_dt.tz_localize(None)), [t.isoformat() for t in as_dt]):
        r = WindowedEvaluation(("ts", "1h"), label_col="y", score_col="s", metrics=["accuracy"]).evaluate({**cols, "ts": ts})
        assert r.windows == [(dt.datetime(2013, 1, 1, h, tzinfo=UTC), dt.datetime(2013, 1, 1, h + 1, tzinfo=UTC)) for h in range(3)]
        for h, (w0, _) in enumerate(r.windows):
            want = accuracy_score(cols["y"][hour == h], cols["s"][hour == h] >= 0.5)
            assert r.window(w0).overall.metrics["accuracy"] == pytest.approx(want, rel=1e-15)


def test_sorted_input_empty_batches_and_three_batch_kinds():
    cols = timed_rows()
    ordered = np.argsort(-cols["ts"], kind="stable")  # reverse time order: windows reopen across batches
    rev = {k: v[ordered] for k, v in cols.items()}
    parts = [{k: v[:120] for k, v in rev.items()}, {k: v[:0] for k, v in rev.items()}, pa.table({k: list(v[120:250]) for k, v in rev.items()}),
             pd.DataFrame({k: v[250:] for k, v in rev.items()})]  # fmt: skip
    got = WindowedEvaluation(("ts", "1h", "20m"), **OPTIONS).evaluate(parts)
    assert_same_windows(got, reference(cols, 3600, 1200))
    rows = [dict(zip(cols, vals)) for vals in zip(*cols.values())]
    assert_same_windows(WindowedEvaluation(("ts", "1h"), **OPTIONS).evaluate([rows[:7], rows[7:]]), reference(cols, 3600))
    assert len(WindowedEvaluation(("ts", "1h"), **OPTIONS).evaluate({k: v[:0] for k, v in cols.items()})) == 0


@settings(max_examples=25, deadline=None)
@given(st.data())
def test_any_sharding_and_merge_order_gives_the_same_states(data):
    cols = timed_rows(n=data.draw(st.integers(1, 120)), hours=3, seed=data.draw(st.integers(0, 10_000)))
    n = len(cols["ts"])
    we = WindowedEvaluation(("ts", "1h", "30m"), **OPTIONS)
    whole = we.fold(we.zero(), cols)
    cuts = sorted(data.draw(st.lists(st.integers(0, n), max_size=5)))  # empty shards included
    perm = np.random.default_rng(data.draw(st.integers(0, 99))).permutation(n)
    shards = [we.fold(we.zero(), {k: v[perm][a:b] for k, v in cols.items()}) for a, b in zip([0, *cuts], [*cuts, n])]
    order = data.draw(st.permutations(range(len(shards))))
    acc = we.zero()
    for i in order:
        acc = we.merge(acc, shards[i]) if data.draw(st.booleans()) else we.merge(shards[i], acc)
    assert acc.keys() == whole.keys()
    for k in whole:
        assert we.evaluation.encode(acc[k]) == we.evaluation.encode(whole[k])
    # merge leaves its inputs unchanged
    before = {k: we.evaluation.encode(v) for k, v in shards[0].items()}
    we.merge(shards[0], whole)
    assert {k: we.evaluation.encode(v) for k, v in shards[0].items()} == before


def test_round_trips_json_rows_pandas():
    cols = timed_rows(n=80, hours=2)
    r = WindowedEvaluation(("ts", "1h"), **OPTIONS, min_slice_size=15).evaluate(cols)
    d = json.loads(r.to_json())
    first = d["slices"][0]
    assert first["slice"] == {} and first["window_start"] == "2013-01-01T00:00:00+00:00" and first["window_end"] == "2013-01-01T01:00:00+00:00"
    assert list(first)[:3] == ["slice", "window_start", "window_end"]
    assert Results.from_dict(d).slices == r.slices
    rows = r.to_rows()
    assert rows[0]["window_start"] == dt.datetime(2013, 1, 1, tzinfo=UTC) and rows[0]["window_end"] == dt.datetime(2013, 1, 1, 1, tzinfo=UTC)
    shuffled = [rows[i] for i in np.random.default_rng(0).permutation(len(rows))]
    assert Results.from_rows(shuffled, r.config, [("g",)], OPTIONS["metrics"]).slices == r.slices
    # rows through pandas/parquet-like values: pandas Timestamps and ISO strings read back the same
    iso = [{**x, "window_start": x["window_start"].isoformat(), "window_end": pd.Timestamp(x["window_end"])} for x in rows]
    assert Results.from_rows(iso, r.config, [("g",)], OPTIONS["metrics"]).slices == r.slices
    long = r.to_pandas()
    assert list(long.columns[:4]) == ["slice", "window_start", "window_end", "n"] and long.loc[0, "slice"] == "{}"
    wide = r.to_pandas(wide=True)
    assert list(wide.columns[:3]) == ["slice", "window_start", "window_end"] and len(wide) == len(r)
    # results outside windows keep their shape: no window keys anywhere
    plain = WindowedEvaluation(("ts", "1h"), **OPTIONS).evaluation.evaluate(cols)
    assert "window_start" not in plain.to_dict()["slices"][0] and "window_start" not in plain.to_rows()[0]
    assert "window_start" not in plain.to_pandas().columns and plain.windows == []


def test_lookups_in_windowed_results():
    cols = timed_rows(n=60, hours=2)
    r = WindowedEvaluation(("ts", "1h"), **OPTIONS).evaluate(cols)
    w1 = dt.datetime(2013, 1, 1, 1, tzinfo=UTC)
    one = r.window(w1)
    assert one.overall.window_start == w1 and one["g=a"].slice == (("g", "a"),)
    assert r.window("2013-01-01T01:00:00Z").slices == one.slices == r.window(w1.replace(tzinfo=None)).slices
    assert r[one["g=a"]] is one["g=a"] and r[0].window_start == EPOCH + dt.timedelta(seconds=T0)
    assert list(r.by_window()) == r.windows
    with pytest.raises(KeyError, match="in 2 windows"):
        r["g=a"]
    with pytest.raises(KeyError, match="in 2 windows"):
        _ = r.overall
    with pytest.raises(KeyError, match="no window starting at 2013-01-01T05"):
        r.window("2013-01-01T05:00:00")
    assert "2013-01-01T00:00:00+00:00/2013-01-01T01:00:00+00:00" in r.format_table()
    assert json.loads(r.to_json())["skipped"] == 0


def test_durations_and_specs():
    assert parse_duration("1h") == parse_duration("1 hour") == parse_duration("60 minutes") == parse_duration(3600) == 3_600_000_000
    assert parse_duration("1h30m") == parse_duration(dt.timedelta(minutes=90)) == 5_400_000_000
    assert parse_duration("15m") == parse_duration("15 minutes") == 900_000_000
    for bad in ("0s", "1 fortnight", "", "-1h", "h", "-5", float("inf"), "nan"):
        with pytest.raises(ValueError, match="duration|must be > 0"):
            parse_duration(bad)
    assert parse_duration("45") == parse_duration(45) == 45_000_000 and parse_duration("1.5") == 1_500_000
    assert parse_duration("0s", allow_zero=True) == parse_duration(0, allow_zero=True) == 0
    with pytest.raises(ValueError, match="delay must be >= 0"):
        parse_duration("-1", "delay", allow_zero=True)
    assert TimeWindows.of("sched_dep:1h") == TimeWindows("sched_dep", "1h")
    assert TimeWindows.of("ts:1h:15m") == TimeWindows("ts", "60m", "900s")
    assert TimeWindows.of("a:b:1h") == TimeWindows("a:b", "1h")  # a ':' in the column name
    assert str(TimeWindows.of("ts:1h:15m")) == "ts:1h:15m" and TimeWindows.of(TimeWindows("ts", "1d").to_config()) == TimeWindows("ts", "1d")
    with pytest.raises(ValueError, match="longer than the window size"):
        TimeWindows("ts", "15m", "1h")
    with pytest.raises(ValueError, match="COL:DURATION"):
        TimeWindows.of("ts")
    with pytest.raises(ValueError, match="max_slices"):
        WindowedEvaluation(("ts", "1h"), label_col="y", prediction_col="p", slices=["g:max_slices=2"])


def test_bad_times_name_the_column_value_and_row():
    cols = timed_rows(n=10)
    we = WindowedEvaluation(("ts", "1h"), **OPTIONS)
    for bad, shown in ((None, "None"), ("yesterday", "'yesterday'"), (float("nan"), "nan")):
        ts = list(cols["ts"].astype(object))
        ts[7] = bad
        with pytest.raises(ValueError, match=rf"column 'ts': invalid value {shown} at row 17"):
            we.fold(we.zero(), {**cols, "ts": ts}, row_offset=10)
    with pytest.raises(ValueError, match="missing column 'ts'"):
        we.fold(we.zero(), {k: v for k, v in cols.items() if k != "ts"})
    with pytest.raises(ValueError, match=r"column 'ts': invalid value NaT at row 1"):
        to_micros(np.array(["2013-01-01", "NaT"], dtype="datetime64[s]"), "ts")
    # a bad label in a later window names its row in the batch, not in the window's rows
    y = cols["y"].astype(object)
    y[9] = "x"
    with pytest.raises((ValueError, TypeError), match="row 9"):
        we.fold(we.zero(), {**cols, "y": y})
    skipping = WindowedEvaluation(("ts", "1h"), **OPTIONS, on_invalid="skip").evaluate({**cols, "y": y})
    assert sum(s.skipped for s in skipping if s.slice == ()) == 1


def test_window_slice_values_hand_computed():
    h = 3_600_000_000
    t0 = 1_372_636_800_000_000  # 2013-07-01T00:00:00Z in microseconds
    times = np.array([t0, t0 + h - 1, t0 + h, np.nan, t0 - 1], dtype=np.float64)
    start, end = window_slice_values(TimeWindows("t", "1h"), times)
    assert start.tolist() == ["2013-07-01T00:00:00", "2013-07-01T00:00:00", "2013-07-01T01:00:00", None, "2013-06-30T23:00:00"]
    assert end.tolist() == ["2013-07-01T01:00:00", "2013-07-01T01:00:00", "2013-07-01T02:00:00", None, "2013-07-01T00:00:00"]
    with pytest.raises(ValueError, match="tumbling"):
        window_slice_values(TimeWindows("t", "1h", "30m"), times)
