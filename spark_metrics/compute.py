"""``compute_metrics``: sliced metrics of a Spark DataFrame, with partial aggregation per partition.

Plan of the Spark job (DataFrame API only, so it also runs over Spark Connect)::

    df.select(evaluation.columns)
      .mapInArrow(fold each partition's Arrow batches into ONE accumulator,
                  emit one row per slice: (slice_key JSON, core-codec bytes of its states))
      .union(one row: ("[]", zero states of the overall slice))      # empty input -> Overall row
      .groupBy("slice_key")
      .applyInArrow(merge the partial states of one slice, compute its metric rows)

Raw rows never leave their executor and are never collected to the driver: only the small,
fixed-size partial states cross the shuffle (at most one row per slice and partition), and only
the small long-format result table is collected by :func:`collect_results`. When the partial
states are small (``driver_merge_bytes``), :func:`collect_results` persists them, collects them
and runs the per-slice merge on the driver instead (no shuffle, no second stage of Python tasks).
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator

from mergeable_metrics.states import codec
from mergeable_metrics.evaluation.evaluation import Evaluation, resolve_evaluation
from mergeable_metrics.metrics.base import UndefinedMetricWarning
from mergeable_metrics.results.results import ROW_COLUMNS, Results
from mergeable_metrics.slicing.assign import OVERALL
from mergeable_metrics.spark.aggregator import MetricsAggregator
from mergeable_metrics.spark.session import check_workers

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa
    from pyspark.sql import DataFrame

#: Columns of the result DataFrame, in order: exactly the keys of :meth:`mergeable_metrics.Results.to_rows`.
RESULT_COLUMNS = tuple(ROW_COLUMNS)

# Spark SQL / Arrow type of every long-format column core may emit
_COLUMN_TYPES = {
    "slice": "string",
    "slice_key": "string",
    "n": "bigint",
    "weight": "double",
    "skipped": "bigint",
    "metric": "string",
    "index": "string",
    "value": "double",
    "lower": "double",
    "upper": "double",
    "ci_lower": "double",
    "ci_upper": "double",
    "baseline_value": "double",
    "delta": "double",
    "delta_lower": "double",
    "delta_upper": "double",
    "verdict": "string",
    "comparison_reason": "string",
}


def _column_types() -> list[tuple[str, str]]:
    unknown = [c for c in RESULT_COLUMNS if c not in _COLUMN_TYPES]
    if unknown:  # core added a long-format column this adapter does not know yet
        raise RuntimeError(f"mergeable_metrics.spark has no Spark type for core result column(s) {unknown}; update _COLUMN_TYPES")
    return [(c, _COLUMN_TYPES[c]) for c in RESULT_COLUMNS]


def result_schema():
    """The ``pyspark.sql.types.StructType`` of :func:`compute_metrics` results (``RESULT_COLUMNS``
    with types string / bigint / double, all nullable)."""
    from pyspark.sql import types as T

    spark_types = {"string": T.StringType(), "bigint": T.LongType(), "double": T.DoubleType()}
    return T.StructType([T.StructField(c, spark_types[t]) for c, t in _column_types()])


def _states_schema():
    from pyspark.sql import types as T

    return T.StructType([T.StructField("slice_key", T.StringType()), T.StructField("states", T.BinaryType())])


def _arrow_result_schema() -> "pa.Schema":
    import pyarrow as pa

    arrow_types = {"string": pa.string(), "bigint": pa.int64(), "double": pa.float64()}
    return pa.schema([(c, arrow_types[t]) for c, t in _column_types()])


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _numeric_like(dt: Any) -> bool:
    """Numbers, booleans and nulls, or (nested) arrays of them (e.g. per-class score vectors)."""
    from pyspark.sql import types as T

    if isinstance(dt, T.ArrayType):
        return _numeric_like(dt.elementType)
    return isinstance(dt, (T.NumericType, T.BooleanType, T.NullType))


def _has_decimal(dt: Any) -> bool:
    from pyspark.sql import types as T

    return _has_decimal(dt.elementType) if isinstance(dt, T.ArrayType) else isinstance(dt, T.DecimalType)


def _decimal_to_double(dt: Any) -> Any:
    from pyspark.sql import types as T

    if isinstance(dt, T.ArrayType):
        return T.ArrayType(_decimal_to_double(dt.elementType), dt.containsNull)
    return T.DoubleType() if isinstance(dt, T.DecimalType) else dt


def _prepare_columns(df: "DataFrame", evaluation: Evaluation) -> list:
    """Check the input columns on the driver (no job runs) and return the select expressions.

    Value columns (label, score(s), prediction, weight, measure ...) must be numeric or boolean,
    or arrays of them; decimals are cast to double. Columns used only for slicing may have any
    atomic type; dates, timestamps and decimals reach core as Arrow values and are sliced by
    core's text of them (:func:`mergeable_metrics.slicing.assign.canonical_value`, the same in every engine);
    intervals by Spark's string form.

    Raises:
        ValueError: a column is missing (named, with the available columns listed).
        TypeError: a value column is not numeric/boolean, or a slice column is not atomic.
    """
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    available = list(df.columns)
    missing = [c for c in evaluation.columns if c not in available]
    if missing:
        what = f"column {missing[0]!r}" if len(missing) == 1 else f"columns {missing}"
        raise ValueError(f"{what} not found in the DataFrame; available columns: {available}")
    types = {f.name: f.dataType for f in df.schema.fields}
    slice_cols = {c for spec in evaluation.slices for c in spec.columns}
    value_cols = {
        c
        for c in (evaluation.label_col, evaluation.prediction_col, evaluation.weight_col, getattr(evaluation, "measure_col", None))
        if isinstance(c, str)
    }
    score = evaluation.score_col
    value_cols |= {score} if isinstance(score, str) else set(score or ())
    value_cols |= set(evaluation.columns) - slice_cols  # any other input column core reads
    value_cols -= {getattr(evaluation, "query_col", None)}  # query ids: ints or strings
    exprs = []
    for name in evaluation.columns:
        dt = types[name]
        col = F.col(_quote(name))
        labels = getattr(evaluation, "classes", None) is not None and name in (evaluation.label_col, evaluation.prediction_col, evaluation.inputs.baseline_prediction_col)
        if name in value_cols:
            if labels and isinstance(dt, T.StringType):
                pass  # class values (classes=): core maps them to class indices
            elif not _numeric_like(dt):
                raise TypeError(
                    f"column {name!r} must be numeric or boolean (or an array of them), got Spark type "
                    f"{dt.simpleString()}; cast it first, e.g. df.withColumn({name!r}, F.col({name!r}).cast('double'))"
                )
            if _has_decimal(dt):
                col = col.cast(_decimal_to_double(dt))
        elif isinstance(dt, T.AtomicType) and not isinstance(
            dt, (T.StringType, T.BooleanType, T.BinaryType, T.IntegralType, T.FractionalType, T.DateType, T.TimestampType, T.TimestampNTZType)
        ):
            col = col.cast("string")  # intervals and other atomic types: slice by their text
        elif isinstance(dt, T.ArrayType) and isinstance(
            dt.elementType, (T.StringType, T.BooleanType, T.BinaryType, T.IntegralType, T.FractionalType, T.NullType)
        ):
            pass  # a list-valued slice column: a row is in the slice of each of its values
        elif not isinstance(dt, (T.AtomicType, T.NullType)):
            raise TypeError(
                f"slice column {name!r} must have an atomic type (string, number, boolean, date ...), "
                f"got Spark type {dt.simpleString()}"
            )
        exprs.append(col.alias(name))
    return exprs


def partition_note(partition: int | None) -> str:
    """The suffix naming the Spark partition of an invalid value (both paths add it)."""
    return f"[Spark partition {partition}; rows are counted from 0 within the partition]"


def _with_partition(exc: Exception, partition: int | None) -> Exception:
    msg = f"{exc} {partition_note(partition)}"
    try:
        return type(exc)(msg)
    except Exception:  # exotic constructor signature
        return ValueError(msg) if isinstance(exc, ValueError) else TypeError(msg)


def arrow_input(df: "DataFrame", exprs: list) -> "DataFrame":
    """The selected input columns under plain positional names ``_mm0, _mm1, ...`` for
    ``mapInArrow`` (PySpark's ``mapInArrow`` cannot resolve column names holding a backtick);
    :func:`fold_partition_batches` gives the batches their real names back."""
    return df.select(*exprs).toDF(*[f"_mm{i}" for i in range(len(exprs))])


def fold_partition_batches(batches: Iterator["pa.RecordBatch"], acc: Any, fold: Callable[..., Any], names: list[str]) -> Any:
    """Fold one partition's record batches (from :func:`arrow_input`, columns renamed to
    ``names``) into ``acc`` with ``fold(acc, batch, row_offset=...)``; errors name the Spark
    partition (rows are counted from 0 within it)."""
    from pyspark import TaskContext

    ctx = TaskContext.get()
    partition = ctx.partitionId() if ctx is not None else None
    offset = 0
    for batch in batches:
        batch = batch.rename_columns(names)
        try:
            fold(acc, batch, row_offset=offset)
        except (ValueError, TypeError) as e:
            raise _with_partition(e, partition) from None
        offset += batch.num_rows
    return acc


def _fold_partition_fn(evaluation: Evaluation) -> Callable[[Iterator["pa.RecordBatch"]], Iterator["pa.RecordBatch"]]:
    """The ``mapInArrow`` function: one accumulator per partition, one output row per slice."""
    aggregator = MetricsAggregator(evaluation)

    def fold_partition(batches: Iterator["pa.RecordBatch"]) -> Iterator["pa.RecordBatch"]:
        import pyarrow as pa

        acc = fold_partition_batches(batches, aggregator.zero(), aggregator.reduce, evaluation.columns)
        items = acc.items()
        keys = [codec.slice_key_to_json(k) for k, _ in items]
        states = [evaluation.encode_states(s) for _, s in items]
        yield pa.RecordBatch.from_arrays(
            [pa.array(keys, pa.string()), pa.array(states, pa.binary())], names=["slice_key", "states"]
        )

    return fold_partition


def _slice_rows(evaluation: Evaluation, key_json: str, blobs: Iterable[bytes]) -> list[dict[str, Any]]:
    """One slice's long-format result rows from its encoded partial states (merged, finished):
    the executors' per-slice merge and :func:`collect_results`' merge on the driver both run it."""
    key = codec.slice_key_from_json(key_json)
    merged = evaluation.plan.merge_all(evaluation.decode_states(b) for b in blobs)
    # Warnings raised on an executor never reach the user: undefined values are NaN in the rows
    # (collect_results warns once, from the rows).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        result = evaluation.finish({key: merged}, add_overall=False)[key]
    return Results([result]).to_rows()


def _merge_slice_fn(evaluation: Evaluation) -> Callable[["pa.Table"], "pa.Table"]:
    """The grouped ``applyInArrow`` function: merge one slice's partial states, compute its rows."""

    def merge_slice(table: "pa.Table") -> "pa.Table":
        import pyarrow as pa

        rows = _slice_rows(evaluation, table.column("slice_key")[0].as_py(), table.column("states").to_pylist())
        return pa.Table.from_pylist(rows, schema=_arrow_result_schema())

    return merge_slice


#: Why a weighted evaluation does not take the native path by default.
WEIGHTED_NATIVE = "a weight column (Spark SQL sums float weights in its own order; the Arrow path sums them exactly)"


def compute_metrics(
    df: "DataFrame",
    *,
    evaluation: Evaluation | None = None,
    native: bool | None = None,
    window: Any = None,
    output_mode: str | None = None,
    **evaluation_kwargs: Any,
) -> "DataFrame":
    """Per-slice metrics of a Spark DataFrame, as a long-format Spark DataFrame.

    Each partition's Arrow record batches are folded into one accumulator of sufficient-statistic
    states (``mapInArrow``; partial aggregation per partition, before the shuffle). Only those
    small states, one row per (partition, slice), cross the shuffle; ``groupBy("slice_key")``
    then merges them per slice (``applyInArrow``) and computes the metric rows from the merged
    states. Raw rows are never collected to the driver. Because states merge exactly, the result
    does not depend on the partitioning (bit-for-bit for integer-valued weights). The DataFrame is
    lazy: nothing runs until an action (e.g. :func:`collect_results`). DataFrame API only, so it
    works over Spark Connect too (workers must be able to import ``core`` and ``mergeable_metrics.spark``).

    Slice specs with ``max_slices`` or ``quantiles`` (``evaluation.needs_profile``) first run an
    exact counting job, eagerly, here (:func:`mergeable_metrics.spark.profile_evaluation`: partial profiles
    per partition, merged per spec with ``groupBy``; only the resolved top-N keys and quantile
    edges reach the driver); the metric job then folds with the profiled evaluation. List-valued
    (array) slice columns put a row in the slice of each of its values.

    Args:
        df: the input DataFrame. Only ``evaluation.columns`` are read:

            * label: numeric or boolean; 0/1 (binary) or integers in [0, K) (multiclass).
            * score (binary tasks): numeric, finite; or prediction: numeric, 0/1 or [0, K).
            * weight (optional): numeric, finite, >= 0.
            * slice columns: string, integer, floating, boolean, binary (UTF-8 text), decimal,
              date or timestamp, sliced by core's canonical values
              (:func:`mergeable_metrics.slicing.assign.canonical_value`: ``-0.0`` is ``0``, decimals and timestamps
              their text as in every engine); null/NaN is its own slice value (``null`` in
              ``slice_key``).

            Value columns may also be arrays of numbers where the evaluation expects vectors
            (e.g. per-class scores); decimal value columns are cast to double. Any other type
            raises ``TypeError`` before a job runs.
        evaluation: a :class:`mergeable_metrics.Evaluation`; or give its constructor arguments as keywords
            (``label_col=..., score_col=..., slices=[...], metrics=[...]``), not both.
        native: None (default): run as native Spark SQL aggregates when the plan allows it
            (:mod:`mergeable_metrics.spark.native`: count and confusion states of plain columns sliced by
            plain string/integer/boolean columns; no Python on the row path, one job for every
            spec), else fold Arrow batches in Python. With a weight column the default is the
            Arrow path, whose exact sums (:mod:`mergeable_metrics._util.exact`) make every result bit-identical for
            any partitioning; the native job sums weights in Spark SQL's float64 order (exact for
            integer weights, last bits vary with fractional ones). True: require the native job
            (raises ``ValueError`` saying why not). False: always the Arrow path.
        window: event-time windows: ``("ts", "1 hour")`` (tumbling), ``("ts", "1 hour", "15
            minutes")`` (sliding: a row is in each of its windows), ``"ts:1h:15m"`` or a
            :class:`mergeable_metrics.TimeWindows`; the result rows then carry ``window_start`` /
            ``window_end`` (timestamp, after ``slice_key``), one set of slices per window (see
            :mod:`mergeable_metrics.spark.windows`). Works on batch DataFrames and on Structured
            Streaming DataFrames with a watermark (``withWatermark``); ``native`` is ignored.
        output_mode: streaming windows only: ``"update"`` (default: a window's complete results
            after each micro-batch that touched it) or ``"append"`` (once, when the watermark
            passes the window's end); use the same ``writeStream.outputMode``.
        **evaluation_kwargs: :class:`mergeable_metrics.Evaluation` options when ``evaluation`` is None (any of
            :data:`mergeable_metrics.evaluation.options.OPTIONS`).

    Returns:
        A DataFrame with one row per (slice, metric, array cell), in no particular order
        (:func:`collect_results` gives the canonical order), schema::

            slice      string  display name, "Overall" for the overall slice
            slice_key  string  JSON list of [column, value] pairs (mergeable_metrics.states.codec.slice_key_to_json);
                               "[]" for the overall slice
            n          long    valid rows folded into the slice
            weight     double  sum of their weights (= n unweighted)
            skipped    long    invalid rows skipped (on_invalid="skip"), else 0
            metric     string  canonical metric key, e.g. "f1@macro"
            index      string  null for scalars; "i" or "i,j" for per-class values and matrices
            value      double  NaN where the metric is undefined
            lower      double  certified lower bound of a metric computed from an approximate
                               state; null when the value is exact
            upper      double  certified upper bound, likewise
            ci_lower   double  lower end of the confidence interval (``ci=``; per cell for
                               per-class values); null without one, NaN where undefined
            ci_upper   double  upper end, likewise

        These are exactly the keys of :meth:`mergeable_metrics.Results.to_rows` (``RESULT_COLUMNS``).
        Undefined values are NaN rows; no ``UndefinedMetricWarning`` is raised on the executors
        (it could not reach the caller). An empty input gives the
        overall slice only, with ``n == 0`` and NaN metrics.

    Raises:
        ValueError: on the driver, before any job runs: a column is missing (the message names
            it and lists the available columns), or the configuration is invalid.
        TypeError: on the driver, before any job runs: a label/score/prediction/weight column is
            not numeric/boolean, or a slice column is not atomic; ``evaluation`` is not a
            :class:`mergeable_metrics.Evaluation` or is given together with keyword arguments.
        mergeable_metrics.spark.session.SparkSetupError: the session's Python workers cannot import this
            package (checked once per session, :func:`mergeable_metrics.spark.session.check_workers`).
        pyspark.errors.PythonException: raised when an action runs, if an executor finds an
            invalid value (with ``on_invalid="raise"``, the default); its text carries core's
            message naming the column, the value and the row position within the partition,
            plus the Spark partition id.
    """
    evaluation = resolve_evaluation(evaluation, evaluation_kwargs)
    check_workers(df.sparkSession)
    if window is not None:
        from mergeable_metrics.time.windows import WindowedEvaluation
        from mergeable_metrics.spark.windows import compute_window_metrics

        we = WindowedEvaluation(window, evaluation)
        out = compute_window_metrics(df, we, output_mode)
        out._mm_windowed_evaluation = we  # lets collect_results order and protect each window
        return out
    if output_mode is not None:
        raise ValueError("output_mode is for windowed metrics of a streaming DataFrame (window=...)")
    if df.isStreaming:
        raise ValueError(
            "compute_metrics of a streaming DataFrame needs event-time windows: window=(time_col, size[, slide]) "
            "and a watermark (df.withWatermark(time_col, delay)); a stream has no single overall answer"
        )

    exprs = _prepare_columns(df, evaluation)
    if native is not False:
        from mergeable_metrics.spark.native import compute_native, lowering_blocker

        blocker = lowering_blocker(df, evaluation)
        if blocker is None and native is None and evaluation.weight_col is not None:
            blocker = WEIGHTED_NATIVE  # the Arrow path sums weights exactly, in any partitioning
        if blocker is None:
            return compute_native(df, exprs, evaluation, result_schema(), _arrow_result_schema)
        if native:
            raise ValueError(f"native=True, but this evaluation cannot run as native Spark aggregates: {blocker}")
    if evaluation.needs_profile:  # max_slices / quantile buckets: an (eager) counting job first
        from mergeable_metrics.spark.profile import profile_evaluation

        evaluation = profile_evaluation(df, evaluation)
    partial = arrow_input(df, exprs).mapInArrow(_fold_partition_fn(evaluation), _states_schema())
    zero = df.sparkSession.createDataFrame(
        [(codec.slice_key_to_json(OVERALL), evaluation.encode_states(evaluation.plan.zero()))], _states_schema()
    )
    out = partial.unionByName(zero).groupBy("slice_key").applyInArrow(_merge_slice_fn(evaluation), result_schema())
    if evaluation.profile is not None:
        out._mm_profiled_evaluation = evaluation  # lets collect_results report folded_values
    out._mm_partial = (partial, evaluation)  # lets collect_results merge small partial states on the driver
    return out


#: Largest total size (bytes) of the encoded partial states that :func:`collect_results` merges
#: on the driver; above it, the per-slice merge runs on the executors (after the shuffle).
DRIVER_MERGE_BYTES = 64 * 2**20


def _merge_on_driver(result_df: "DataFrame", partial: "DataFrame", evaluation: Evaluation, limit: int) -> list[dict[str, Any]]:
    """The result rows of ``result_df`` (compute_metrics' Arrow path), with the per-slice merge on
    the driver when the partial states are small.

    The partial states (one row per partition and slice) are persisted by one job that also sums
    their sizes; at most ``limit`` bytes are collected and merged here by :func:`_slice_rows` (the
    executors' function; merges are exact in any order, so the rows are the same), which saves the
    shuffle and the merge stage. Otherwise ``result_df`` runs over the persisted states.
    """
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    partial.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        size = partial.select(F.sum(F.length("states")).alias("bytes")).first()["bytes"] or 0
        if size > limit:
            return [r.asDict() for r in result_df.collect()]
        table = partial.toArrow()
    finally:
        partial.unpersist()
    blobs: dict[str, list[bytes]] = {}
    for key_json, states in zip(table.column("slice_key").to_pylist(), table.column("states").to_pylist()):
        blobs.setdefault(key_json, []).append(states)
    blobs.setdefault(codec.slice_key_to_json(OVERALL), []).append(evaluation.encode_states(evaluation.plan.zero()))
    return [row for key_json, parts in blobs.items() for row in _slice_rows(evaluation, key_json, parts)]


def collect_results(result_df: "DataFrame", evaluation: Any, *, driver_merge_bytes: int = DRIVER_MERGE_BYTES) -> Results:
    """Collect the (small) result table of :func:`compute_metrics` into :class:`mergeable_metrics.Results`.

    Args:
        result_df: the DataFrame returned by :func:`compute_metrics` (columns as documented there).
        evaluation: the same evaluation (gives the canonical slice and metric order); for
            windowed results the :class:`mergeable_metrics.WindowedEvaluation`, or the evaluation when
            ``result_df`` is the very DataFrame ``compute_metrics(..., window=...)`` returned.
        driver_merge_bytes: merge the partial states on the driver when they total at most this
            many bytes (see below); 0: always on the executors.

    Returns:
        ``evaluation.collect(rows=...)``: slices overall first, then in spec and value order;
        array metrics (``f1@none``, ``confusion_matrix``) rebuilt as numpy arrays from their
        ``index`` cells.

    For the very DataFrame that ``compute_metrics`` returned on its Arrow path, the per-slice
    merge runs on the driver when the encoded partial states (one row per partition and slice)
    total at most ``driver_merge_bytes`` (default 64 MiB; 0 turns it off): one job folds the
    partitions and persists their states, the driver merges them (the same results, without a
    shuffle and a second stage of Python tasks); larger states are merged per slice on the
    executors, from the persisted states.

    Slices of specs with ``max_slices`` report ``folded_values`` on their ``__other__`` slice
    when ``evaluation`` carries the profile (:func:`mergeable_metrics.spark.profile_evaluation`), or when
    ``result_df`` is the very DataFrame ``compute_metrics`` returned for it.

    Raises:
        ValueError: ``driver_merge_bytes`` is not an integer >= 0.
        pyspark.errors.PythonException: an executor failed (e.g. an invalid value, see
            :func:`compute_metrics`).
    """
    if isinstance(driver_merge_bytes, bool) or not isinstance(driver_merge_bytes, int) or driver_merge_bytes < 0:
        raise ValueError(f"driver_merge_bytes must be an integer >= 0 (0: merge on the executors), got {driver_merge_bytes!r}")
    if "window_start" in result_df.columns:  # compute_metrics(..., window=...)
        from mergeable_metrics.time.windows import WindowedEvaluation
        from mergeable_metrics.spark.windows import collect_window_results

        we = evaluation if isinstance(evaluation, WindowedEvaluation) else getattr(result_df, "_mm_windowed_evaluation", None)
        if we is None:
            raise ValueError("windowed results: pass the mergeable_metrics.WindowedEvaluation (WindowedEvaluation(window, evaluation)) to collect them")
        return collect_window_results(result_df, we)
    profiled = getattr(result_df, "_mm_profiled_evaluation", None)
    if profiled is not None and evaluation.needs_profile and profiled.to_config() == evaluation.to_config():
        evaluation = profiled
    partial, folded = getattr(result_df, "_mm_partial", (None, None))
    if partial is not None and driver_merge_bytes > 0 and folded.to_config() == evaluation.to_config():
        return evaluation.collect(rows=_merge_on_driver(result_df, partial, folded, driver_merge_bytes))
    return evaluation.collect(rows=[r.asDict() for r in result_df.collect()])
