"""mergeable_metrics.pipelines.latelabels.stream_join: predictions and late labels as two Structured Streaming
inputs (files read with readStream), joined by id within the maximum label delay; the matched
rows' windowed streaming metrics and the outcome counts equal the batch join (classify) on the
same rows."""

from __future__ import annotations

import os

import numpy as np
import pytest

pd = pytest.importorskip("pandas")
pytest.importorskip("pyspark")
pa = pytest.importorskip("pyarrow")

from mergeable_metrics import WindowedEvaluation  # noqa: E402
from mergeable_metrics.pipelines.latelabels import LabelJoin, join_batches, stream_join  # noqa: E402
from mergeable_metrics.spark import compute_metrics  # noqa: E402
from mergeable_metrics.spark._frames import ResultLayout  # noqa: E402
from mergeable_metrics.spark.windows import window_row  # noqa: E402
from tests._helpers.windows import OPTIONS, T0, assert_same_windows, reference  # noqa: E402

DELAY = 1800  # seconds


def _rows(seed: int = 5, n: int = 200):
    """Predictions over 4 hours; labels: most within the delay, some late, some before their
    prediction, some never; a few orphan labels (ids without a prediction)."""
    rng = np.random.default_rng(seed)
    ids = np.arange(n, dtype=np.int64)
    pt = T0 + np.sort(rng.integers(0, 4 * 3600, n))
    y = rng.integers(0, 2, n)
    s = np.round(np.clip(0.35 * y + 0.65 * rng.random(n), 0, 1), 3)
    g = rng.choice(np.array(["a", "b", "c"], dtype=object), n)
    kind = rng.choice(4, n, p=[0.7, 0.12, 0.06, 0.12])  # within, late, before, never
    delay = np.where(kind == 0, rng.integers(0, DELAY + 1, n), np.where(kind == 1, rng.integers(DELAY + 1, 3 * DELAY, n), -rng.integers(1, 600, n)))
    has = kind != 3
    lid = np.concatenate([ids[has], np.arange(1000, 1008)])
    lt = np.concatenate([pt[has] + delay[has], T0 + rng.integers(0, 4 * 3600, 8)])
    ly = np.concatenate([y[has], rng.integers(0, 2, 8)])
    preds = pd.DataFrame({"id": ids, "pt": pd.to_datetime(pt, unit="s", utc=True), "s": s, "g": list(g)})
    labels = pd.DataFrame({"id": lid, "lt": pd.to_datetime(lt, unit="s", utc=True), "y": ly})
    assert (kind == 0).sum() > 100 and (kind == 1).sum() > 10 and (kind == 2).sum() > 5 and (kind == 3).sum() > 10
    return preds, labels, {"ts": pt, "y": y, "s": s, "g": g}


def _write(frame, col, d, far_id):
    """Two files split in event time, then one far-future row (moves the watermark past every
    window; its id matches nothing, and it is never emitted)."""
    d.mkdir()
    cut = pd.Timestamp(T0 + 2 * 3600, unit="s", tz="UTC")
    far = frame.head(1).copy()
    far["id"], far[col] = far_id, pd.Timestamp(T0 + 100 * 3600, unit="s", tz="UTC")
    for i, part in enumerate([frame[frame[col] < cut], frame[frame[col] >= cut], far]):
        f = d / f"part-{i}.parquet"
        part.to_parquet(f, index=False, coerce_timestamps="us", allow_truncated_timestamps=False)
        os.utime(f, (1_700_000_000 + 10 * i, 1_700_000_000 + 10 * i))  # read in this order (one file per micro-batch)


def _run(query_df, mode, ck):
    got: list = []
    q = (
        query_df.writeStream.outputMode(mode)
        .foreachBatch(lambda b, i: got.extend(b.collect()))
        .option("checkpointLocation", str(ck))
        .trigger(availableNow=True)
        .start()
    )
    q.awaitTermination(120)
    assert q.exception() is None
    return got


def test_stream_join_equals_the_batch_join(spark, tmp_path):
    preds, labels, cols = _rows()
    _write(preds, "pt", tmp_path / "p", 99_999)
    _write(labels, "lt", tmp_path / "l", 99_998)
    pschema, lschema = spark.createDataFrame(preds.head(1)).schema, spark.createDataFrame(labels.head(1)).schema
    ps = spark.readStream.schema(pschema).option("maxFilesPerTrigger", 1).parquet(str(tmp_path / "p"))
    ls = spark.readStream.schema(lschema).option("maxFilesPerTrigger", 1).parquet(str(tmp_path / "l"))
    joined = stream_join(ps, ls, "id", "pt", "lt", "30m", label_col="y", watermark_delay="10 minutes")
    assert joined.isStreaming

    # the batch join on the same rows (the one classify every engine uses)
    join = LabelJoin(id_col="id", label_col="y", prediction_time_col="pt", label_time_col="lt", max_delay=DELAY)
    matched_ref, counts = join_batches(pa.Table.from_pandas(preds, preserve_index=False), pa.Table.from_pandas(labels, preserve_index=False), join, [])
    want = counts.get()

    rows = _run(joined, "append", tmp_path / "ck-join")
    by = {o: sorted(r["id"] for r in rows if r["outcome"] == o) for o in ("matched", "no_label_within_delay", "unmatched_label")}
    assert len(rows) == sum(len(v) for v in by.values())
    assert by["matched"] == sorted(matched_ref.column("id").to_pylist()) and len(by["matched"]) == want["matched"]
    assert len(by["no_label_within_delay"]) == want["no_label_within_delay"]
    assert len(by["unmatched_label"]) == want["late"] + want["label_before_prediction"] + want["orphan_labels"]
    m = next(r for r in rows if r["outcome"] == "matched")
    lab = labels.set_index("id").loc[m["id"]]
    assert m["y"] == lab["y"] and pd.Timestamp(m["lt"]).tz_localize("UTC") == lab["lt"]

    # windowed streaming metrics on the matched rows == per-window batch metrics of the batch join's matched rows
    we = WindowedEvaluation(("pt", "1h"), **OPTIONS)
    with pytest.warns(UserWarning, match="'pt' is nullable"):  # the outer join makes it nullable
        metrics = compute_metrics(joined.where("outcome = 'matched'"), evaluation=we.evaluation, window=("pt", "1h"), output_mode="append")
    layout = ResultLayout(we.evaluation, windowed=True)
    got = we.collect(rows=layout.core_rows(window_row(r.asDict()) for r in _run(metrics, "append", tmp_path / "ck-metrics")))
    keep = np.isin(np.arange(len(cols["ts"])), matched_ref.column("id").to_numpy())
    assert_same_windows(got, reference({k: np.asarray(v)[keep] for k, v in cols.items()}, 3600))


def test_stream_join_refuses_batch_inputs_and_non_timestamp_times(spark):
    rate = spark.readStream.format("rate").load().withColumnRenamed("value", "id")
    labels = rate.withColumnRenamed("timestamp", "lt").withColumn("y", rate.id % 2)
    with pytest.raises(ValueError, match="predictions DataFrame is not streaming"):
        stream_join(spark.range(3), labels, "id", "pt", "lt", "1h", label_col="y")
    with pytest.raises(ValueError, match=r"time column 'id' of the predictions must be a timestamp.*bigint"):
        stream_join(rate.withColumn("k", rate.id), labels, "k", "id", "lt", "1h", label_col="y")
    with pytest.raises(ValueError, match=r"column 'y' is not in the labels stream"):
        stream_join(rate.withColumnRenamed("timestamp", "pt"), labels.drop("y"), "id", "pt", "lt", "1h", label_col="y")
    with pytest.raises(ValueError, match="max_label_delay 'soon': expected e.g. '1h'"):
        stream_join(rate.withColumnRenamed("timestamp", "pt"), labels, "id", "pt", "lt", "soon", label_col="y")
