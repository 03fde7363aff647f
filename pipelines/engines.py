"""Run one :class:`mergeable_metrics.Evaluation` over a file or directory on an engine: local, beam or spark.

No metric math here: the local engine streams Arrow record batches into ``Evaluation.fold``; the
Beam engine reads record batches and applies ``mergeable_metrics.beam.ComputeMetrics``; the Spark engine
reads a DataFrame and applies ``mergeable_metrics.spark.compute_metrics``. All return a ``mergeable_metrics.Results``.
"""

from __future__ import annotations

import glob
import logging
import os
import shutil
import tempfile
from typing import Any, Sequence

import pyarrow as pa

from mergeable_metrics import Evaluation, Results, TimeWindows, WindowedEvaluation
from mergeable_metrics.pipelines import io
from mergeable_metrics.pipelines.progress import Progress, stage

log = logging.getLogger("pipelines")

ENGINES = ("local", "beam", "spark")


def _slice_counts(results: Results) -> str:
    """``44 slices (+11 suppressed)``: the slices with values and those withheld below their
    ``min_slice_size``, counted as the run's summary and report count them (one ``__suppressed__``
    entry stands for all it counts)."""
    from mergeable_metrics.pipelines.report import slice_counts  # noqa: PLC0415 - the one count of the summary and the report

    published, withheld = slice_counts(results)
    return f"{published} slices" + (f" (+{withheld} suppressed)" if withheld else "")


def _number_columns(evaluation: Evaluation) -> list[str]:
    """The value columns that hold numbers: with text class values (``classes=["cat", ...]``) the
    label and prediction columns hold text, mapped by :func:`mergeable_metrics.inputs.labels.encode_labels`."""
    cols = list(evaluation.value_columns)
    if evaluation.classes is not None and any(isinstance(v, str) for v in evaluation.classes):
        text = {evaluation.label_col, evaluation.prediction_col, evaluation.inputs.baseline_prediction_col}
        cols = [c for c in cols if c not in text]
    return cols


def _label_columns(evaluation: Evaluation) -> tuple[str, ...]:
    """The columns of class labels (the label column first), when the task has classes: text in
    them is class names (the error names ``--classes``)."""
    if evaluation.plan.task.kind not in ("binary", "multiclass"):
        return ()
    cols = (evaluation.label_col, evaluation.prediction_col, evaluation.inputs.baseline_prediction_col)
    return tuple(c for c in cols if c is not None)


def input_schema(evaluation: Evaluation, path: str, fmt: str | None = None) -> io.InputSchema:
    """The input's schema for ``evaluation`` (:func:`mergeable_metrics.pipelines.io.input_schema`), the same for
    every engine; with ``on_invalid="raise"``, text that is not a number in a value column is an
    error here, naming the value and its row, before any engine starts.

    Raises:
        ValueError: a column is missing from a file, or files give a column incompatible types.
        TypeError: a value column holds text that is not a number (``on_invalid="raise"``).
    """
    schema = io.input_schema(path, fmt, list(evaluation.columns), _number_columns(evaluation))
    if evaluation.on_invalid == "raise":
        schema.check_text_values(_label_columns(evaluation))
    return schema


def _window_columns(evaluation: Evaluation, window: Any) -> list[str]:
    """The columns to read: the evaluation's, plus the window's time column."""
    columns = list(evaluation.columns)
    return columns + [window.time_col] if window is not None and window.time_col not in columns else columns


def _schema(evaluation: Evaluation, path: str, fmt: str | None, window: Any) -> io.InputSchema:
    if window is None:
        return input_schema(evaluation, path, fmt)
    schema = io.input_schema(path, fmt, _window_columns(evaluation, window), _number_columns(evaluation))
    if evaluation.on_invalid == "raise":
        schema.check_text_values(_label_columns(evaluation))
    return schema


def run_local(evaluation: Evaluation, path: str, fmt: str | None = None, batch_size: int = 65536, progress: bool = False, window: Any = None) -> Results:
    """Fold the input's record batches one at a time (memory stays flat); no engine needed.

    With ``progress=True`` a bar on stderr shows rows and files processed and the rate
    (:class:`mergeable_metrics.pipelines.progress.Progress`). With ``window`` (a :class:`mergeable_metrics.TimeWindows`) the
    batches fold into a :class:`mergeable_metrics.WindowedEvaluation`: per-window results.
    """
    data = io.dataset(path, fmt)
    columns = _window_columns(evaluation, window)
    io.check_columns(data, columns, path)
    schema = _schema(evaluation, path, fmt, window)
    total = data.count_rows() if progress and io.detect_format(path, fmt) == "parquet" else None
    if evaluation.needs_profile:  # max_slices / quantile buckets: an exact counting pass over the input first
        profiler = evaluation.profiler()
        evaluation = evaluation.with_profile(profiler.profile(io.iter_batches(path, profiler.columns, fmt, batch_size, schema)))
        log.info("local: profiled the slices (%s)", ", ".join(str(s) for s in evaluation.slices if s.needs_profile))
    folder = evaluation if window is None else WindowedEvaluation(window, evaluation)
    acc = folder.zero()
    offset = 0
    with Progress(total, len(data.files), enabled=progress, desc="local") as bar:
        for file in data.files:  # file by file, without pre-buffering (flat memory)
            for batch in io.iter_batches(file, columns, io.detect_format(path, fmt), batch_size, schema):
                folder.fold(acc, batch, row_offset=offset)
                offset += batch.num_rows
                bar.update(batch.num_rows)
            bar.file_done()
    log.info("local: folded %d rows", offset)
    return folder.finish(acc)


def _read_file_batches(path: str, fmt: str, columns: Sequence[str], batch_size: int, schema: io.InputSchema | None = None):
    yield from io.iter_batches(path, columns, fmt, batch_size, schema)


def run_beam(
    evaluation: Evaluation,
    path: str,
    fmt: str | None = None,
    beam_args: Sequence[str] = (),
    batch_size: int = 65536,
    window: Any = None,
) -> Results:
    """Run ``ComputeMetrics`` on Beam (DirectRunner unless ``beam_args`` name another runner).

    Parquet is read with ``ReadAllFromParquetBatched`` (Arrow record batches, split by row
    groups); CSV and JSON Lines files are read per file with pyarrow. Per-slice results are written
    as JSON lines to a temporary directory and read back.

    Raises:
        ImportError: apache-beam is not installed (``pip install 'mergeable-metrics[beam]'``).
    """
    try:
        import apache_beam as beam
        from apache_beam.options.pipeline_options import PipelineOptions
    except ImportError as e:  # pragma: no cover - depends on the install
        raise ImportError("the beam engine needs apache-beam: pip install 'mergeable-metrics[beam]'") from e
    from mergeable_metrics.beam import ComputeMetrics, slice_result_from_json, slice_result_to_json

    fmt = io.detect_format(path, fmt)
    files = io.list_files(path, fmt)
    columns = _window_columns(evaluation, window)
    io.check_columns(io.dataset(path, fmt), columns, path)
    schema = _schema(evaluation, path, fmt, window)
    args = list(beam_args)
    if not any(a.startswith("--runner") for a in args):
        args.append("--runner=DirectRunner")
    tmp = tempfile.mkdtemp(prefix="mm-beam-")
    stage("beam", "reading %d %s file(s) from %s", len(files), fmt, path)
    stage("beam", "running ComputeMetrics (%s; partial states per bundle, merged per slice)", next(a for a in args if a.startswith("--runner")))
    try:
        with beam.Pipeline(options=PipelineOptions(args)) as p:
            names = p | "Files" >> beam.Create(files)
            if fmt == "parquet":
                batches = names | "Read" >> beam.io.ReadAllFromParquetBatched(columns=list(columns))
                if schema.file_types:  # files of different types: the common type (mergeable_metrics.pipelines.io)
                    batches = batches | "Conform" >> beam.Map(io.conform, schema)
            else:
                batches = names | "Read" >> beam.FlatMap(_read_file_batches, fmt, list(columns), batch_size, schema)
            if window is not None:  # event-time windows: Beam's, on pieces of batches that share their windows
                from apache_beam.transforms import window as beam_window

                windowfn = (
                    beam_window.SlidingWindows(window.size_us / 1e6, window.slide_us / 1e6)
                    if window.sliding
                    else beam_window.FixedWindows(window.size_us / 1e6)
                )
                batches = batches | "Timestamp" >> beam.FlatMap(timestamped_pieces, window) | "Window" >> beam.WindowInto(windowfn)
            (
                batches
                | "Metrics" >> ComputeMetrics(evaluation)
                | "ToJson" >> beam.Map(slice_result_to_json)
                | "Write" >> beam.io.WriteToText(os.path.join(tmp, "slices"), file_name_suffix=".jsonl")
            )
        lines = []
        for f in sorted(glob.glob(os.path.join(tmp, "slices*.jsonl"))):
            with open(f) as fh:
                lines += [ln for ln in fh.read().splitlines() if ln.strip()]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if window is not None:
        stage("beam", "collected %d slice results", len(lines))
        return WindowedEvaluation(window, evaluation).collect(slices=[slice_result_from_json(ln) for ln in lines])
    results = evaluation.collect(slices=[slice_result_from_json(ln) for ln in lines])
    stage("beam", "collected %s", _slice_counts(results))
    return results


def timestamped_pieces(batch: Any, window: Any) -> Any:
    """A record batch cut into pieces whose rows share their windows, each timestamped (Beam
    ``TimestampedValue``, seconds) at its piece's start: rows with times in one bucket of
    ``gcd(size, slide)`` (window starts are multiples of the slide, ends of the slide plus the
    size) are in the same windows, so Beam's ``FixedWindows`` / ``SlidingWindows`` put every row
    exactly where :meth:`mergeable_metrics.TimeWindows.assign` does."""
    import math

    import numpy as np
    from apache_beam.transforms.window import TimestampedValue
    from apache_beam.utils.timestamp import Timestamp

    from mergeable_metrics.time.windows import take_rows, to_micros

    t = to_micros(batch.column(window.time_col), window.time_col)
    step = math.gcd(window.size_us, window.slide_us)
    bucket = t // step
    for b in np.unique(bucket):
        idx = np.flatnonzero(bucket == b)
        piece = batch if len(idx) == batch.num_rows else take_rows(batch, idx)
        yield TimestampedValue(piece, Timestamp(micros=int(b) * step))


def run_spark(evaluation: Evaluation, path: str, fmt: str | None = None, master: str = "local[2]", window: Any = None) -> Results:
    """Run ``compute_metrics`` on Spark (``master`` e.g. ``local[2]`` or ``spark://host:7077``).

    Raises:
        ImportError: pyspark is not installed (``pip install 'mergeable-metrics[spark]'``).
        RuntimeError: no Java runtime (Spark needs JDK 17+).
    """
    try:
        import pyspark  # noqa: F401
    except ImportError as e:  # pragma: no cover
        raise ImportError("the spark engine needs pyspark: pip install 'mergeable-metrics[spark]'") from e
    from mergeable_metrics.spark import evaluate, get_spark

    fmt = io.detect_format(path, fmt)
    columns = _window_columns(evaluation, window)
    io.check_columns(io.dataset(path, fmt), columns, path)
    schema = _schema(evaluation, path, fmt, window)
    stage("spark", "starting Spark (master %s)", master)
    from mergeable_metrics.pipelines.errors import engine_stderr

    with engine_stderr():  # a JVM started here logs to the CLI's log file
        spark = get_spark(master=master)
    path = os.path.abspath(path)
    stage("spark", "reading %s input %s", fmt, path)
    df = read_spark(spark, path, schema, columns)
    if window is not None:
        stage("spark", "computing per-window metrics (%s)", window)
        return evaluate(df, evaluation=evaluation, window=window)
    if evaluation.needs_profile:
        stage("spark", "counting slice values (max_slices / quantile buckets)")
    stage("spark", "computing metrics (partial states per partition, merged per slice)")
    results = evaluate(df, evaluation=evaluation)
    stage("spark", "collected %s", _slice_counts(results))
    return results


def read_spark(spark: Any, path: str, schema: io.InputSchema, columns: Sequence[str]) -> Any:
    """The input as a Spark DataFrame with the types the other engines read (``schema``).

    CSV is read as text (no ``inferSchema``) and each column cast by the rules of
    :mod:`mergeable_metrics.pipelines.io`, files with different headers separately (Spark would otherwise apply the
    first file's header to all). Parquet files of different types are read group by group and
    cast to the common type. JSON Lines is read as Spark infers it.
    """
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import from_arrow_type

    def quoted(c: str) -> Any:
        return F.col("`" + c.replace("`", "``") + "`")

    if schema.fmt == "json":
        if not schema.files:  # no records (mergeable_metrics.pipelines.io.dataset): no rows, the columns typed as for CSV
            from pyspark.sql import types as T

            return spark.createDataFrame([], T.StructType([T.StructField(c, from_arrow_type(schema.types[c]), True) for c in columns]))
        return spark.read.json(path)
    if schema.fmt == "parquet":
        if not schema.file_types:
            return spark.read.parquet(path)
        groups: dict[tuple, list[str]] = {}
        for f in schema.files:
            own = schema.file_types.get(f, schema.types)
            groups.setdefault(tuple(str(own[c]) for c in columns), []).append(f)
        parts = [spark.read.parquet(*files).select(*[quoted(c).cast(from_arrow_type(schema.types[c])).alias(c) for c in columns]) for files in groups.values()]
        out = parts[0]
        for part in parts[1:]:
            out = out.unionByName(part)
        return out
    spark_types = {pa.int64(): "bigint", pa.float64(): "double", pa.bool_(): "boolean", pa.string(): "string"}
    pattern = "(?i)" + io.NUMBER_PATTERN
    exprs = []
    for c in columns:
        col = quoted(c)
        if c in schema.text_values:  # skip mode: text that is not a number is null (then skipped)
            exprs.append(F.when(col.rlike(pattern), col.cast("double")).alias(c))
        else:
            exprs.append(col.cast(spark_types[schema.types[c]]).alias(c))
    headers: dict[tuple, list[str]] = {}
    for f in schema.files:
        headers.setdefault(tuple(io.csv_header(f)), []).append(f)
    # RFC 4180 quoting as pyarrow reads it ("" inside quotes is a quote); a malformed row fails, as in pyarrow
    reader = spark.read.option("escape", '"')
    parts = [reader.csv(files, header=True, inferSchema=False, mode="FAILFAST").select(*exprs) for files in headers.values()]
    out = parts[0]
    for part in parts[1:]:
        out = out.unionByName(part)
    return out


def run(engine: str, evaluation: Evaluation, path: str, fmt: str | None = None, **options: Any) -> Results:
    """Dispatch to :func:`run_local`, :func:`run_beam` or :func:`run_spark`.

    Raises:
        ValueError: unknown engine.
    """
    window = options.get("window")
    if window is not None:
        window = TimeWindows.of(window)
    if engine == "local":
        return run_local(evaluation, path, fmt, batch_size=options.get("batch_size", 65536), progress=options.get("progress", False), window=window)
    if engine == "beam":
        return run_beam(evaluation, path, fmt, beam_args=options.get("beam_args", ()), batch_size=options.get("batch_size", 65536), window=window)
    if engine == "spark":
        return run_spark(evaluation, path, fmt, master=options.get("spark_master", "local[2]"), window=window)
    raise ValueError(f"--engine must be one of {ENGINES}, got {engine!r}")
