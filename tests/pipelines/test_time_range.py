"""Event times out of range (issue 28, item 10): a time whose window does not fit in the
timestamp range 0001-01-01 .. 9999-12-31T23:59:59.999999 UTC (Python's and Spark's) raises a
ValueError naming the column, the value and the row, the same on the local, Beam and Spark
engines; integer seconds never wrap around int64 into 1970."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from mergeable_metrics import WindowedEvaluation
from mergeable_metrics.time.latelabels import LabelJoin, classify
from mergeable_metrics.pipelines.evaluate import main

RULE = "event times must lie within 0001-01-01T00:00:00 .. 9999-12-31T23:59:59.999999 UTC"


def _ev():
    return WindowedEvaluation(("ts", "1h"), label_col="y", prediction_col="p", metrics=["accuracy"])


@pytest.mark.parametrize("bad, shown", [
    (2**62, "4611686018427387904"),  # int64 seconds: * 1e6 wrapped into the 1970-01-01T00:00 window
    (1_700_000_000_000_000_000, "1700000000000000000"),  # nanoseconds given as seconds
    (1_700_000_000_000, "1700000000000"),  # milliseconds given as seconds (year ~55,800)
    (1e13, "10000000000000.0"),
    (-1e12, "-1000000000000.0"),
    ("9999-12-31T23:59:59Z", "'9999-12-31T23:59:59Z'"),  # its window ends in the year 10000
    (2**70, "1180591620717411303424"),  # beyond int64 (an object column)
    (np.datetime64("20000-01-01", "s"), "20000-01-01T00:00:00"),
])  # fmt: skip
def test_local_windows_name_column_value_and_row(bad, shown):
    ts = [0, bad, 7200] if not isinstance(bad, str) else ["1970-01-01T00:00:00Z", bad, "1970-01-01T02:00:00Z"]
    if isinstance(bad, np.datetime64):
        ts = np.array([np.datetime64(0, "s"), bad, np.datetime64(7200, "s")])
    with pytest.raises(ValueError) as e:
        _ev().evaluate({"ts": ts, "y": [1, 0, 1], "p": [1, 1, 1]})
    assert str(e.value).startswith(f"column 'ts': invalid value {shown} at row 1: {RULE}") or str(e.value).startswith(
        f"column 'ts': invalid value {shown!s} at row 1"
    )
    assert RULE in str(e.value)


def test_the_last_whole_window_and_the_first_are_in_range():
    # 9999-12-31T22:00 .. 23:00 and 0001-01-01T00:00 .. 01:00 are windows (hand-computed bounds)
    last = (dt.datetime(9999, 12, 31, 22, 30, tzinfo=dt.timezone.utc) - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)).total_seconds()
    first = (dt.datetime(1, 1, 1, 0, 30, tzinfo=dt.timezone.utc) - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)).total_seconds()
    r = _ev().evaluate({"ts": np.array([int(first), int(last)]), "y": [1, 0], "p": [1, 1]})
    assert [s.window_start for s in r if not s.slice] == [dt.datetime(1, 1, 1, tzinfo=dt.timezone.utc), dt.datetime(9999, 12, 31, 22, tzinfo=dt.timezone.utc)]


@pytest.mark.parametrize("bad", [2**62, 1e13])
def test_late_label_times_name_column_value_and_row(bad):
    join = LabelJoin("id", "y", "pt", "lt", "1h", window="1h")
    with pytest.raises(ValueError, match=rf"prediction column 'pt': invalid value {bad!r} at row 2: {RULE}"):
        classify(pa.table({"id": [1, 2, 3], "pt": [0, 1, bad]}), pa.table({"id": [1], "lt": [1], "y": [1]}), join)


ENGINES = ["local", "beam", "spark"]


@pytest.mark.parametrize("engine", ENGINES)
def test_window_flag_out_of_range_on_every_engine(tmp_path, capsys, engine):
    path = tmp_path / "t.parquet"
    pd.DataFrame({"ts": np.array([0, 60, 2**62, 120], dtype=np.int64), "y": [1, 0, 1, 1], "s": [0.9, 0.2, 0.8, 0.7]}).to_parquet(path, index=False)
    code = main(["--input", str(path), "--label", "y", "--score", "s", "--metrics", "accuracy", "--window", "ts:1h", "--engine", engine,
                 "--output", str(tmp_path / "o"), "--quiet"])  # fmt: skip
    assert code == 1
    assert f"column 'ts': invalid value 4611686018427387904 at row 2: {RULE}" in capsys.readouterr().err


@pytest.mark.parametrize("engine", ENGINES)
def test_late_label_join_out_of_range_on_every_engine(tmp_path, capsys, engine):
    pd.DataFrame({"id": [1, 2], "pt": np.array([0, 2**62], dtype=np.int64), "s": [0.9, 0.2]}).to_parquet(tmp_path / "p.parquet", index=False)
    pd.DataFrame({"id": [1, 2], "lt": np.array([60, 60], dtype=np.int64), "y": [1, 0]}).to_parquet(tmp_path / "l.parquet", index=False)
    code = main(["--input", str(tmp_path / "p.parquet"), "--labels", str(tmp_path / "l.parquet"), "--id", "id", "--label", "y", "--score", "s",
                 "--prediction-time", "pt", "--label-time", "lt", "--max-label-delay", "1h", "--metrics", "accuracy", "--engine", engine,
                 "--output", str(tmp_path / "o"), "--quiet"])  # fmt: skip
    assert code == 1
    assert f"prediction column 'pt': invalid value 4611686018427387904 at row 1: {RULE}" in capsys.readouterr().err


def test_beam_join_late_labels_out_of_range_names_column_and_value():
    beam = pytest.importorskip("apache_beam")
    from mergeable_metrics.beam import JoinLateLabels

    with pytest.raises(Exception, match=rf"prediction column 'pt': invalid value 4611686018427387904 in a prediction row: {RULE}"):
        with beam.Pipeline(runner="DirectRunner") as p:
            preds = p | "P" >> beam.Create([{"id": 1, "pt": 0}, {"id": 2, "pt": 2**62}])
            labels = p | "L" >> beam.Create([{"id": 1, "lt": 60, "y": 1}])
            _ = {"predictions": preds, "labels": labels} | JoinLateLabels(
                max_label_delay="1h", id_col="id", label_col="y", prediction_time_col="pt", label_time_col="lt"
            )
