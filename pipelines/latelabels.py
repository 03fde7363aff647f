"""Late labels on the engines: join predictions and labels that arrive as two inputs keyed by an
example id, then evaluate the matched examples.

The join's math (each row's outcome, the matched examples, the outcome counts per slice) is
:mod:`mergeable_metrics.time.latelabels` (:func:`~mergeable_metrics.time.latelabels.join_batches`, :class:`~mergeable_metrics.time.latelabels.JoinCounts`,
:data:`~mergeable_metrics.time.latelabels.COUNT_NAMES`; re-exported here); this module runs it on an engine and puts
the counts into ``metrics.json`` (:func:`attach_counts`).

Times: Arrow timestamps (any unit; time-zone-aware ones as UTC instants) or dates, or numbers
(seconds). Engines: local (:func:`run_local`: an in-memory join, both inputs' used columns held in
memory), Beam (:func:`run_beam`: ids hashed to buckets, ``CoGroupByKey`` per bucket in the global
window, each bucket classified at once), Spark (:func:`run_spark`: both inputs repartitioned by id,
each partition classified in ``mapInArrow``). They give identical counts and metrics. Spark
Structured Streaming: :func:`stream_join` (a stream-stream join with watermarks; unique ids).
"""

from __future__ import annotations

import json
from typing import Any, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from mergeable_metrics.time.latelabels import (  # noqa: F401  (re-exported: the join's names)
    COUNT_NAMES,
    Classified,
    JoinCounts,
    LabelJoin,
    bucket_of,
    canonical_ids,
    classify,
    count_outcomes,
    count_specs,
    invalid_rows,
    join_batches,
    matched_table,
    slice_types,
    time_micros,
)
from mergeable_metrics.time.windows import parse_duration

__all__ = [
    "COUNT_NAMES", "LabelJoin", "JoinCounts", "classify", "count_specs", "count_outcomes", "attach_counts", "join_batches", "matched_table",
    "check_inputs", "run_local", "run_beam", "run_spark", "run_join", "stream_join",
]  # fmt: skip


def attach_counts(doc: dict[str, Any], counts: JoinCounts, join: LabelJoin) -> dict[str, Any]:
    """Put the join's counts into a ``metrics.json`` document: a top-level ``join`` block (the
    settings and the overall counts, and ``slices_without_matches``: counts of slices that have no
    matched example, hence no metrics) and a ``join`` object in each slice."""
    seen = set()
    for s in doc["slices"]:
        key = tuple(s["slice"].items())
        seen.add(key)
        s["join"] = counts.get(key)
    others = [{"slice": dict(k), "join": counts.get(k)} for k in sorted(counts.counts, key=lambda k: json.dumps(k)) if k not in seen]
    doc["join"] = {**join.config(), "counts": counts.get(()), "slices_without_matches": others}
    return doc


# ----------------------------------------------------------------------------------------- engines
def _input_columns(evaluation: Any, join: LabelJoin, labels_names: Sequence[str]) -> tuple[list[str], list[str]]:
    """Columns read from the predictions and from the labels."""
    skip = {join.label_col, *join.window_columns}
    pcols = [join.id_col, join.prediction_time_col] + [c for c in evaluation.columns if c not in skip and c not in (join.id_col, join.prediction_time_col)]
    spec_cols = {c for spec in count_specs(evaluation) for c in spec}
    lcols = [join.id_col, join.label_time_col, join.label_col] + sorted(
        c for c in spec_cols if c in labels_names and c not in (join.id_col, join.label_time_col, join.label_col, *join.window_columns)
    )
    return pcols, lcols


def _read_all(path: str, columns: Sequence[str], fmt: str | None) -> pa.Table:
    from mergeable_metrics.pipelines import io

    fmt = io.detect_format(path, fmt)
    data = io.dataset(path, fmt)
    io.check_columns(data, columns, path)
    schema = io.input_schema(path, fmt, list(columns))
    batches = list(io.iter_batches(path, columns, fmt, 65536, schema))
    if not batches:
        return pa.Table.from_batches([], schema=pa.schema([(c, schema.types[c]) for c in columns]))
    return pa.Table.from_batches(batches)


def check_inputs(
    pred_path: str, labels_path: str, evaluation: Any, join: LabelJoin, fmt: str | None = None, labels_fmt: str | None = None
) -> tuple[pa.Table, pa.Table]:
    """Read both inputs' used columns (local engine, and the checks before Beam and Spark start:
    a null id or time raises here naming its row, with ``on_invalid="raise"``)."""
    from mergeable_metrics.pipelines import io

    if join.label_col in io.dataset(pred_path, fmt).schema.names:
        raise ValueError(f"the label column {join.label_col!r} is in the predictions input too: labels come from --labels")
    pcols, lcols = _input_columns(evaluation, join, io.dataset(labels_path, labels_fmt).schema.names)
    preds, labels = _read_all(pred_path, pcols, fmt), _read_all(labels_path, lcols, labels_fmt)
    classify(preds.slice(0, 0), labels.slice(0, 0), join)  # types of ids and times
    canonical_ids(preds, labels, join.id_col)  # the id rule, with the rows of the whole inputs
    slice_types(preds.schema, labels.schema, count_specs(evaluation))
    pt = time_micros(preds.column(join.prediction_time_col), join.prediction_time_col, "prediction")  # times out of range raise here
    lt = time_micros(labels.column(join.label_time_col), join.label_time_col, "label")
    if join.on_invalid == "raise":
        invalid_rows(preds, join.id_col, join.prediction_time_col, "prediction", "raise", 0, pt)
        invalid_rows(labels, join.id_col, join.label_time_col, "label", "raise", 0, lt)
    return preds, labels


def run_local(evaluation: Any, join: LabelJoin, preds: pa.Table, labels: pa.Table) -> tuple[Any, JoinCounts]:
    """The in-memory join: both inputs' used columns are held in memory (a few columns: the
    flights stream's 168,000 predictions take about 10 MB); then the matched rows are folded."""
    matched, counts = join_batches(preds, labels, join, count_specs(evaluation))
    acc = evaluation.zero()
    for i, batch in enumerate(matched.to_batches(max_chunksize=65536)):
        evaluation.fold(acc, batch, row_offset=i * 65536)
    return evaluation.finish(acc), counts


def _split_buckets(table: pa.Table, id_col: str, n: int) -> list[tuple[int, pa.Table]]:
    b = bucket_of(table.column(id_col), n)
    return [(int(k), table.take(pa.array(np.flatnonzero(b == k), pa.int64()))) for k in np.unique(b)]


def _join_bucket(item: tuple[int, dict[str, list]], join: LabelJoin, specs: list, pschema: pa.Schema, lschema: pa.Schema):
    _, groups = item
    preds = pa.concat_tables(list(groups["p"])) if groups["p"] else pschema.empty_table()
    labels = pa.concat_tables(list(groups["l"])) if groups["l"] else lschema.empty_table()
    matched, counts = join_batches(preds, labels, join, specs)
    for batch in matched.to_batches():
        yield ("m", batch)
    yield ("c", counts.to_lines())


def run_beam(evaluation: Any, join: LabelJoin, preds: pa.Table, labels: pa.Table, buckets: int = 16, beam_args: Sequence[str] = ()) -> tuple[Any, JoinCounts]:
    """Beam: prediction and label batches keyed by id bucket, ``CoGroupByKey`` (global window), each
    bucket joined by :func:`join_batches`; the matched batches go to ``ComputeMetrics``, the counts
    are summed. The inputs are the tables :func:`check_inputs` read (created as a PCollection)."""
    import glob
    import os
    import shutil
    import tempfile

    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions

    from mergeable_metrics.beam import ComputeMetrics, slice_result_from_json, slice_result_to_json

    specs = count_specs(evaluation)
    args = list(beam_args)
    if not any(a.startswith("--runner") for a in args):
        args.append("--runner=DirectRunner")
    tmp = tempfile.mkdtemp(prefix="mm-latelabels-")
    try:
        with beam.Pipeline(options=PipelineOptions(args)) as p:
            pb = p | "Predictions" >> beam.Create(list(preds.to_batches(max_chunksize=20000))) | "PTables" >> beam.Map(lambda b: pa.Table.from_batches([b]))
            lb = p | "Labels" >> beam.Create(list(labels.to_batches(max_chunksize=20000))) | "LTables" >> beam.Map(lambda b: pa.Table.from_batches([b]))
            pk = pb | "PBuckets" >> beam.FlatMap(_split_buckets, join.id_col, buckets)
            lk = lb | "LBuckets" >> beam.FlatMap(_split_buckets, join.id_col, buckets)
            out = {"p": pk, "l": lk} | "Join" >> beam.CoGroupByKey() | "Classify" >> beam.FlatMap(_join_bucket, join, specs, preds.schema, labels.schema)
            matched = out | "Matched" >> beam.FlatMap(lambda kv: [kv[1]] if kv[0] == "m" else [])
            (
                matched
                | "Metrics" >> ComputeMetrics(evaluation)
                | "ToJson" >> beam.Map(slice_result_to_json)
                | "WriteSlices" >> beam.io.WriteToText(os.path.join(tmp, "slices"), file_name_suffix=".jsonl")
            )
            (
                out
                | "Counts" >> beam.FlatMap(lambda kv: kv[1] if kv[0] == "c" else [])
                | "WriteCounts" >> beam.io.WriteToText(os.path.join(tmp, "counts"), file_name_suffix=".jsonl")
            )

        def lines(prefix: str) -> list[str]:
            got = []
            for f in sorted(glob.glob(os.path.join(tmp, prefix + "*.jsonl"))):
                with open(f) as fh:
                    got += [ln for ln in fh.read().splitlines() if ln.strip()]
            return got

        slices, counts = lines("slices"), JoinCounts.from_lines(lines("counts"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if not counts.counts:
        counts = join_batches(preds.slice(0, 0), labels.slice(0, 0), join, specs)[1]
    return evaluation.collect(slices=[slice_result_from_json(ln) for ln in slices]), counts


def run_spark(
    evaluation: Any,
    join: LabelJoin,
    pred_path: str,
    labels_path: str,
    preds: pa.Table,
    labels: pa.Table,
    fmt: str | None = None,
    labels_fmt: str | None = None,
    master: str = "local[2]",
    partitions: int = 4,
) -> tuple[Any, JoinCounts]:
    """Spark (batch): both inputs read as DataFrames, unioned with a side column, repartitioned by
    id (every row of an id in one partition), each partition joined by :func:`join_batches` in
    ``mapInArrow``; the matched rows go to ``compute_metrics``, the counts are summed on the
    driver. ``preds`` / ``labels`` (from :func:`check_inputs`) give the schemas."""
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import from_arrow_schema

    from mergeable_metrics.pipelines import engines, io
    from mergeable_metrics.spark import evaluate, get_spark

    specs = count_specs(evaluation)
    from mergeable_metrics.pipelines.errors import engine_stderr

    with engine_stderr():  # a JVM started here logs to the CLI's log file
        spark = get_spark(master=master)
    frames = []
    for side, path, table, f in (("p", pred_path, preds, fmt), ("l", labels_path, labels, labels_fmt)):
        f = io.detect_format(path, f)
        schema = io.input_schema(path, f, table.column_names)
        df = engines.read_spark(spark, __import__("os").path.abspath(path), schema, table.column_names).select(*table.column_names)
        df = df.toDF(*[f"{side}_{i}" for i in range(len(table.column_names))])
        frames.append(df.withColumn("__side", F.lit(side)).withColumn("__id", _spark_id_key(F.col(f"{side}_0"), table.schema.field(0).type)))
    union = frames[0].unionByName(frames[1], allowMissingColumns=True).repartition(partitions, "__id")
    pnames, lnames = preds.column_names, labels.column_names
    pschema, lschema = preds.schema, labels.schema

    def tables(batches):
        got = [pa.Table.from_batches([b]) for b in batches]
        whole = pa.concat_tables(got) if got else None
        if whole is None or whole.num_rows == 0:
            return pschema.empty_table(), lschema.empty_table()
        side = whole.column("__side")
        p = whole.filter(pc.equal(side, "p")).select([f"p_{i}" for i in range(len(pnames))]).rename_columns(pnames).cast(pschema)
        lt = whole.filter(pc.equal(side, "l")).select([f"l_{i}" for i in range(len(lnames))]).rename_columns(lnames).cast(lschema)
        return p, lt

    mschema = matched_table(preds.slice(0, 0), labels.slice(0, 0), join, classify(preds.slice(0, 0), labels.slice(0, 0), join)).schema

    def matched_fn(batches):
        p, lt = tables(batches)
        m = join_batches(p, lt, join, [])[0].cast(mschema)
        yield from m.to_batches()

    def counts_fn(batches):
        p, lt = tables(batches)
        lines_ = join_batches(p, lt, join, specs)[1].to_lines()
        yield pa.record_batch([pa.array(lines_, pa.string())], names=["line"])

    union = union.cache()
    try:
        matched = union.mapInArrow(matched_fn, from_arrow_schema(mschema))
        results = evaluate(matched, evaluation=evaluation)
        lines = [r["line"] for r in union.mapInArrow(counts_fn, "line string").collect()]
    finally:
        union.unpersist()
    counts = JoinCounts.from_lines(lines)
    if not counts.counts:
        counts = join_batches(preds.slice(0, 0), labels.slice(0, 0), join, specs)[1]
    return results, counts


def _spark_id_key(col: Any, arrow_type: pa.DataType) -> Any:
    """The partition key of an id on Spark: its canonical text (the id rule of
    :func:`mergeable_metrics.time.latelabels.canonical_ids`: a whole float as its integer, ``1.0 -> "1"``, as
    :func:`mergeable_metrics.time.latelabels.bucket_of`), so equal ids of two number types meet in one partition."""
    from pyspark.sql import functions as F

    if pa.types.is_floating(arrow_type) or pa.types.is_decimal(arrow_type):
        whole = (col == F.floor(col)) & (F.abs(col) < F.lit(2.0**63))
        return F.when(whole, F.floor(col).cast("long").cast("string")).otherwise(col.cast("string"))
    return col.cast("string")


def run_join(
    engine: str, evaluation: Any, join: LabelJoin, pred_path: str, labels_path: str, fmt: str | None = None, labels_fmt: str | None = None, **options: Any
) -> tuple[Any, JoinCounts]:
    """Join and evaluate on ``engine`` (local, beam or spark): ``(mergeable_metrics.Results, JoinCounts)``.

    Raises:
        ValueError: a missing column, a null id or time (``on_invalid="raise"``), bad settings.
    """
    preds, labels = check_inputs(pred_path, labels_path, evaluation, join, fmt, labels_fmt)
    if engine == "local":
        res, counts = run_local(evaluation, join, preds, labels)
    elif engine == "beam":
        res, counts = run_beam(evaluation, join, preds, labels, beam_args=options.get("beam_args", ()))
    elif engine == "spark":
        res, counts = run_spark(evaluation, join, pred_path, labels_path, preds, labels, fmt, labels_fmt, master=options.get("spark_master", "local[2]"))
    else:
        raise ValueError(f"engine must be local, beam or spark, got {engine!r}")
    res.config["join"] = join.config()
    return res, counts


# ------------------------------------------------------------------------ Spark Structured Streaming
#: the ``outcome`` values of :func:`stream_join`'s rows
STREAM_OUTCOMES = ("matched", "no_label_within_delay", "unmatched_label")


def stream_join(
    predictions: Any,
    labels: Any,
    id_col: str,
    prediction_time_col: str,
    label_time_col: str,
    max_label_delay: str | float,
    label_col: str = "label",
    watermark_delay: str | float = 0,
) -> Any:
    """Join a predictions stream and a labels stream (Spark Structured Streaming) by id, with
    ``prediction_time <= label_time <= prediction_time + max_label_delay``: a full outer
    stream-stream join with watermarks, so the join's state is bounded by the delay.

    Each output row has every prediction column, ``label_col``, ``label_time_col`` and ``outcome``:

    * ``matched``: a prediction and its label within the delay (emitted as soon as both came);
    * ``no_label_within_delay``: a prediction whose label did not come within the delay (batch
      :func:`classify`'s ``late`` + ``label_before_prediction`` + ``never``), emitted once the
      watermark passes ``prediction_time + max_label_delay``; label columns null;
    * ``unmatched_label``: a label that matched no prediction (batch ``orphan_labels`` and the
      labels of ``late`` / ``label_before_prediction`` predictions), emitted once the watermark
      passes it; prediction columns null except ``id_col``.

    Feed ``out.where("outcome = 'matched'")`` to ``mergeable_metrics.spark.compute_metrics(...,
    window=(prediction_time_col, ...), output_mode="append")`` for windowed metrics on the matched
    examples (the prediction time keeps its watermark through the join; the join makes it
    nullable, hence ``compute_metrics``' warning, moot here: matched rows have a time). Ids must be unique within
    each stream: a stream join keeps no "earliest row per id", so a duplicate id gives one row per
    pair within the delay (the batch join counts duplicates; use it when ids repeat).

    Args:
        predictions: a streaming DataFrame with ``id_col`` and ``prediction_time_col`` (a timestamp).
        labels: a streaming DataFrame with ``id_col``, ``label_time_col`` (a timestamp) and ``label_col``.
        max_label_delay: the maximum delay (:func:`mergeable_metrics.time.windows.parse_duration`: ``6h``, ``90 minutes``, seconds; 0 allowed).
        watermark_delay: how late (in event time) a row may arrive and still be joined; applied
            with ``withWatermark`` to both time columns.

    Raises:
        ValueError: a batch DataFrame, a missing column, a time column that is not a timestamp,
            clashing column names or a bad duration (naming it).
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import TimestampNTZType, TimestampType

    delay_us = parse_duration(max_label_delay, "max_label_delay", allow_zero=True)
    late_us = parse_duration(watermark_delay, "watermark_delay", allow_zero=True)
    for what, df, cols in (("predictions", predictions, (id_col, prediction_time_col)), ("labels", labels, (id_col, label_time_col, label_col))):
        if not df.isStreaming:
            raise ValueError(f"stream_join: the {what} DataFrame is not streaming (use run_join for batch inputs)")
        for c in cols:
            if c not in df.columns:
                raise ValueError(f"stream_join: column {c!r} is not in the {what} stream (columns: {df.columns})")
        t = cols[1]
        if not isinstance(df.schema[t].dataType, (TimestampType, TimestampNTZType)):
            raise ValueError(f"stream_join: time column {t!r} of the {what} must be a timestamp for a watermark, got {df.schema[t].dataType.simpleString()}")
    clash = sorted({label_col, label_time_col, "outcome", "__lid"} & set(predictions.columns))
    if clash:
        raise ValueError(f"stream_join: the predictions stream has columns {clash} that the join adds")
    p = predictions.withWatermark(prediction_time_col, f"{late_us} microseconds")
    lab = labels.select(F.col(id_col).alias("__lid"), label_time_col, label_col).withWatermark(label_time_col, f"{late_us} microseconds")
    cond = (
        (F.col("__lid") == F.col(id_col))
        & (F.col(label_time_col) >= F.col(prediction_time_col))
        & (F.col(label_time_col) <= F.col(prediction_time_col) + F.expr(f"INTERVAL {delay_us} MICROSECONDS"))
    )
    joined = p.join(lab, cond, "full_outer")
    outcome = F.when(F.col(id_col).isNull(), F.lit("unmatched_label")).when(F.col("__lid").isNull(), F.lit("no_label_within_delay")).otherwise(F.lit("matched"))
    cols = [F.coalesce(F.col(id_col), F.col("__lid")).alias(id_col) if c == id_col else F.col(c) for c in predictions.columns]
    return joined.select(*cols, F.col(label_col), F.col(label_time_col), outcome.alias("outcome"))
