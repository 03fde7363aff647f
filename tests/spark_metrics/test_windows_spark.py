"""compute_metrics(df, ..., window=...) on Spark: batch (tumbling and sliding windows) and
Structured Streaming with a watermark (update and append output modes), each window equal to a
core Evaluation on that window's rows."""

from __future__ import annotations

import datetime as dt
import os

import pytest

pd = pytest.importorskip("pandas")
pytest.importorskip("pyspark")

from mergeable_metrics import WindowedEvaluation  # noqa: E402
from mergeable_metrics.spark import collect_results, compute_metrics, evaluate  # noqa: E402
from mergeable_metrics.spark._frames import ResultLayout  # noqa: E402
from mergeable_metrics.spark.windows import window_row  # noqa: E402
from tests._helpers.windows import OPTIONS, T0, assert_same_windows, reference, timed_rows  # noqa: E402


def _frame(cols, as_timestamp=False):
    pdf = pd.DataFrame({k: (list(v) if v.dtype == object else v) for k, v in cols.items()})
    if as_timestamp:
        pdf["ts"] = pd.to_datetime(pdf["ts"], unit="s", utc=True)
    return pdf


@pytest.mark.parametrize("window,size,slide", [(("ts", "1 hour"), 3600, None), (("ts", "1 hour", "15 minutes"), 3600, 900), ("ts:90m:1h", 5400, 3600)])
def test_batch_windows_equal_the_batch_answer_per_window(spark, window, size, slide):
    cols = timed_rows(n=300, hours=5, seed=11)
    df = spark.createDataFrame(_frame(cols)).repartition(3)
    got = collect_results(compute_metrics(df, window=window, **OPTIONS), WindowedEvaluation(window, **OPTIONS))
    assert evaluate(df, window=window, **OPTIONS).to_json() == got.to_json()
    want = reference(cols, size, slide)
    assert_same_windows(got, want)
    assert got.config["window"]["time_col"] == "ts"
    # a timestamp column gives the same windows; the local engine the same results
    ts_df = spark.createDataFrame(_frame(cols, as_timestamp=True)).repartition(2)
    we = WindowedEvaluation(window, **OPTIONS)
    assert_same_windows(collect_results(compute_metrics(ts_df, evaluation=we.evaluation, window=window), we), want)
    assert_same_windows(we.evaluate(cols), got)


def test_batch_null_time_raises_and_streams_need_windows(spark):
    cols = timed_rows(n=20, seed=1)
    pdf = _frame(cols)
    pdf["ts"] = pdf["ts"].astype("Int64")
    pdf.loc[13, "ts"] = pd.NA
    df = spark.createDataFrame(pdf).coalesce(1)
    with pytest.raises(Exception, match=r"column 'ts': invalid value None at row 13"):
        compute_metrics(df, window=("ts", "1h"), **OPTIONS).collect()
    with pytest.raises(ValueError, match="window time column"):
        compute_metrics(df.drop("ts"), window=("ts", "1h"), **OPTIONS)
    with pytest.raises(ValueError, match="output_mode is for streaming"):
        compute_metrics(df, window=("ts", "1h"), output_mode="append", **OPTIONS)
    stream = spark.readStream.format("rate").load()
    with pytest.raises(ValueError, match="needs event-time windows"):
        compute_metrics(stream, label_col="value", prediction_col="value")


def _stream_run(spark, tmp_path, cols, mode, late=False):
    """Files written into a directory, read with readStream one file per micro-batch (in the
    order written: their modification times 10 s apart); in append mode two more files hold one
    late-in-time row each, to move the watermark past every window (a micro-batch's watermark is
    the previous one's latest time). ``late``: the first row at 20 h is in the first file, so the
    second file's rows all arrive after the watermark has passed their windows' ends."""
    src = tmp_path / f"in-{mode}"
    src.mkdir()
    pdf = _frame(cols, as_timestamp=True)
    schema = spark.createDataFrame(pdf.head(1)).schema
    advance = pdf.head(1).copy()
    parts = [pdf.iloc[:150], pdf.iloc[150:]]
    for h in (20, 40) if mode == "append" or late else ():
        a = advance.copy()
        a["ts"] = pd.Timestamp(T0 + h * 3600, unit="s", tz="UTC")
        parts.append(a)
    if late:
        parts = [pd.concat([parts[0], parts[2]]), parts[1], parts[3]]
    for i, part in enumerate(parts):
        f = src / f"part-{i}.parquet"
        part.to_parquet(f, index=False, coerce_timestamps="us", allow_truncated_timestamps=False)
        os.utime(f, (1_700_000_000 + 10 * i, 1_700_000_000 + 10 * i))
    stream = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(str(src)).withWatermark("ts", "0 seconds")
    we = WindowedEvaluation(("ts", "1h"), **OPTIONS)
    out = compute_metrics(stream, evaluation=we.evaluation, window=("ts", "1h"), output_mode=mode)
    assert out.isStreaming
    batches: list = []
    query = (
        out.writeStream.outputMode(mode)
        .foreachBatch(lambda b, i: batches.append((i, [window_row(r.asDict()) for r in b.collect()])))
        .option("checkpointLocation", str(tmp_path / f"ck-{mode}"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    assert query.exception() is None
    return we, batches


def _latest_per_window(batches):
    latest: dict = {}
    for _, rows in sorted(batches, key=lambda b: b[0]):
        by_w: dict = {}
        for r in rows:
            by_w.setdefault(r["window_start"], []).append(r)
        latest.update(by_w)  # a window's rows of its latest micro-batch
    return latest


@pytest.mark.parametrize("late", [False, True], ids=["in_order", "behind_watermark"])
@pytest.mark.parametrize("mode", ["update", "append"])
def test_structured_streaming_windows(spark, tmp_path, mode, late):
    """Every window equals core's Evaluation on its rows. ``behind_watermark`` (issue 28 item 15):
    the first micro-batch moves the watermark to 20 h; the second holds the rows of hours 2-4,
    whose windows ended before it; those windows are decided at once (before:
    INVALID_TIMEOUT_TIMESTAMP, a timeout earlier than the watermark)."""
    cols = timed_rows(n=300, hours=4, seed=13)
    we, batches = _stream_run(spark, tmp_path, cols, mode, late=late)
    want = reference(cols, 3600)
    latest = _latest_per_window(batches)
    data_windows = {w for w, _ in want.windows}
    assert data_windows <= set(latest)
    layout = ResultLayout(we.evaluation, windowed=True)  # the default: one row per slice and window
    got = we.collect(rows=layout.core_rows(r for w, rows in latest.items() if w in data_windows for r in rows))
    assert_same_windows(got, want)
    emitted = [r["window_start"] for _, rows in batches for r in rows if r["slice"] == "{}"]
    if late:  # the second file's rows are all of windows that end before 20 h
        assert max(cols["ts"][150:]) < T0 + 19 * 3600
    if mode == "append":  # once per window, and only windows the watermark passed
        assert sorted(emitted) == sorted(set(emitted)) and set(emitted) == data_windows | {dt.datetime.fromtimestamp(T0 + 20 * 3600, dt.timezone.utc)}
    else:  # the window cut by the first two files is emitted twice: after each micro-batch that touched it
        assert len(emitted) > len(set(emitted))
