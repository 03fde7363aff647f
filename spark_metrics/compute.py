"""``compute_metrics``: the dispatcher of the Spark adapter, and the collection of its results.

``compute_metrics(df, ...)`` checks the input columns on the driver (:mod:`._frames`), then runs
one of the adapter's paths, each a lazy DataFrame of result rows (:class:`._frames.ResultLayout`):

* :mod:`.sql_path`: count and confusion states as native Spark SQL aggregates (no Python on the
  row path), when the plan allows it;
* :mod:`.arrow_path`: every other plan, folded per partition in Python (``mapInArrow``) and
  merged per slice (``applyInArrow``), after the counting pass of :mod:`.profile` when slices
  need one (``max_slices``, quantile buckets);
* :mod:`.windows`: event-time windows (``window=``), batch or Structured Streaming.

:func:`collect_results` turns a result DataFrame (either layout) into
:class:`mergeable_metrics.Results`; :func:`evaluate` computes the Results in one call, merging
small partial states on the driver (no shuffle, no second stage of Python tasks).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from mergeable_metrics.engine import Evaluation, resolve_evaluation
from mergeable_metrics.engine import Results
from mergeable_metrics.engine import WindowedEvaluation
from mergeable_metrics.spark import arrow_path, jvm_path, sql_path
from mergeable_metrics.spark._frames import RESULT_COLUMNS, ResultLayout, prepare_columns, result_schema
from mergeable_metrics.spark.profile import profile_evaluation
from mergeable_metrics.spark.session import check_workers
from mergeable_metrics.spark.windows import collect_window_results, compute_window_metrics

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame

__all__ = ["DRIVER_MERGE_BYTES", "RESULT_COLUMNS", "WEIGHTED_NATIVE", "collect_results", "compute_metrics", "evaluate", "result_schema"]

_log = logging.getLogger(__name__)

#: Why a weighted evaluation does not take the native path by default.
WEIGHTED_NATIVE = "a weight column (Spark SQL sums float weights in its own order; the Arrow path sums them exactly)"

#: Largest total size (bytes) of the encoded partial states that :func:`evaluate` merges on the
#: driver; above it, the per-slice merge runs on the executors (after the shuffle).
DRIVER_MERGE_BYTES = 64 * 2**20


def _path(df: "DataFrame", evaluation: Evaluation, native: bool | None) -> tuple[str | None, list]:
    """``(why not native, checked select expressions)``: why not the native SQL path (None: take it)."""
    exprs = prepare_columns(df, evaluation)
    if native is False:
        return "native=False", exprs
    blocker = sql_path.lowering_blocker(df, evaluation)
    if blocker is None and native is None and evaluation.weight_col is not None:
        blocker = WEIGHTED_NATIVE  # the Arrow path sums weights exactly, in any partitioning
    if blocker is not None and native:
        raise ValueError(f"native=True, but this evaluation cannot run as native Spark aggregates: {blocker}")
    return blocker, exprs


def _on_jvm(df: "DataFrame", evaluation: Evaluation, caller: str, run: Any) -> Any:
    """``run(spec)`` when the JVM path can take ``evaluation`` (:func:`mergeable_metrics.spark.jvm_path.jvm_blocker`),
    else None (one info line says why). An invalid value found in the JVM (or a regression error past float64) gives
    None too: the Arrow path then reports it naming its row and partition, with core's own message and hints."""
    spec, why = jvm_path.jvm_blocker(df, evaluation)
    if spec is None:
        _log.info("mergeable_metrics.spark.%s: not the JVM path: %s", caller, why)
        return None
    try:
        return run(spec)
    except Exception as e:
        if "invalid value" not in str(e) and "overflows float64" not in str(e):
            raise
        _log.info("mergeable_metrics.spark.%s: an invalid value on the JVM path; the Arrow path names its row", caller)
        return None


def _check_batch(df: "DataFrame", output_mode: str | None) -> None:
    if output_mode is not None:
        raise ValueError("output_mode is for windowed metrics of a streaming DataFrame (window=...)")
    if df.isStreaming:
        raise ValueError(
            "compute_metrics of a streaming DataFrame needs event-time windows: window=(time_col, size[, slide]) "
            "and a watermark (df.withWatermark(time_col, delay)); a stream has no single overall answer"
        )


def compute_metrics(
    df: "DataFrame",
    *,
    evaluation: Evaluation | None = None,
    native: bool | None = None,
    window: Any = None,
    output_mode: str | None = None,
    layout: str = "wide",
    **evaluation_kwargs: Any,
) -> "DataFrame":
    """Per-slice metrics of a Spark DataFrame, as a Spark DataFrame: one row per slice.

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
              ``slice``).

            Value columns may also be arrays of numbers where the evaluation expects vectors
            (e.g. per-class scores); decimal value columns are cast to double. Any other type
            raises ``TypeError`` before a job runs.
        evaluation: a :class:`mergeable_metrics.Evaluation`; or give its constructor arguments as keywords
            (``label_col=..., score_col=..., slices=[...], metrics=[...]``), not both.
        native: None (default): run as native Spark SQL aggregates when the plan allows it
            (:mod:`mergeable_metrics.spark.sql_path`: count and confusion states of plain columns sliced by
            plain string/integer/boolean columns; no Python on the row path, one job for every
            spec); else, when a JDK is there and every state of the plan has a JVM port (plain columns and
            slices: :func:`mergeable_metrics.spark.jvm_path.jvm_blocker`), fold on the JVM aggregates
            (:func:`mergeable_metrics.spark.jvm_path.compute_jvm`: one job, run when this function is called,
            folds the rows in Java; the driver merges and finishes the groups' small states as :func:`evaluate`
            does, and the result is a local DataFrame of those rows; the states are core's bytes, so the rows
            equal the Arrow path's; an invalid value found by the Java checks makes this function return the
            Arrow path's DataFrame instead, whose action raises core's message naming the row and partition);
            else fold Arrow batches in Python (lazy). With a weight column
            the native job is not the default: the Arrow and JVM paths' exact sums
            (:mod:`mergeable_metrics._util.exact`) make every result bit-identical for any partitioning; the
            native job sums weights in Spark SQL's float64 order (exact for integer weights, last bits vary
            with fractional ones).
            True: require the native job
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
        layout: ``"wide"`` (default): one row per slice, a column per metric; ``"long"``: one
            row per slice and metric (cell), as :meth:`mergeable_metrics.Results.to_rows`.
        **evaluation_kwargs: :class:`mergeable_metrics.Evaluation` options when ``evaluation`` is None (any of
            :data:`mergeable_metrics.evaluation.options.OPTIONS`).

    Returns:
        A DataFrame in no particular order (:func:`collect_results` gives the canonical order).
        ``layout="wide"``: one row per slice (and window), columns::

            slice      string  the slice as metrics.json's "slice": a JSON object of column to
                               value, e.g. {"country":"US"}; "{}" for the overall slice
            n          long    valid rows folded into the slice
            weight     double  sum of their weights (= n unweighted)
            skipped    long    invalid rows skipped (on_invalid="skip"), else 0
            <metric>   double  one column per metric under its key, e.g. "f1@macro" (NaN where
                               undefined); array<double> / array<array<double>> for per-class
                               values and matrices (e.g. "f1@none", "confusion_matrix")

        followed, when the evaluation computes them, by ``"<metric>:ci_lower"`` /
        ``":ci_upper"`` (``ci=``), ``":lower"`` / ``":upper"`` (certified bounds of approximate
        states), the comparison with a baseline (``":baseline_value"``, ``":delta"``, ...,
        ``":verdict"``) and ``suppressed_slices`` (``min_slice_size``): see
        :class:`mergeable_metrics.spark._frames.ResultLayout`; :func:`result_schema` gives the schema.
        ``layout="long"``: one row per (slice, metric, array cell), columns ``RESULT_COLUMNS``:
        ``slice``, ``n``, ``weight``, ``skipped``, ``metric``, ``index`` (null for scalars, "i"
        or "i,j" for cells), ``value``, ``lower``, ``upper``, ``ci_lower``, ``ci_upper`` and the
        comparison columns: the keys of :meth:`mergeable_metrics.Results.to_rows` with the slice
        as above. Windowed results carry ``window_start`` / ``window_end`` (timestamp) after
        ``slice``. Undefined values are NaN; no ``UndefinedMetricWarning`` is raised on the
        executors (it could not reach the caller). An empty input gives the overall slice only,
        with ``n == 0`` and NaN metrics.

    Raises:
        ValueError: on the driver, before any job runs: a column is missing (the message names
            it and lists the available columns), or the configuration is invalid.
        TypeError: on the driver, before any job runs: a label/score/prediction/weight column is
            not numeric/boolean, or a slice column is not atomic; ``evaluation`` is not a
            :class:`mergeable_metrics.Evaluation` or is given together with keyword arguments.
        ValueError: ``layout`` is not ``"wide"`` or ``"long"``.
        mergeable_metrics.spark.session.SparkSetupError: a path that runs Python on the executors (not
            the JVM path) and the session's Python workers cannot import this package (checked once
            per session, :func:`mergeable_metrics.spark.session.check_workers`).
        pyspark.errors.PythonException: raised when an action runs, if an executor finds an
            invalid value (with ``on_invalid="raise"``, the default); its text carries core's
            message naming the column, the value and the row position within the partition,
            plus the Spark partition id.
    """
    evaluation = resolve_evaluation(evaluation, evaluation_kwargs)
    if layout not in ("wide", "long"):
        raise ValueError(f'layout must be "wide" (one row per slice) or "long" (one row per slice and metric), got {layout!r}')
    if window is not None:
        check_workers(df.sparkSession)
        we = WindowedEvaluation(window, evaluation)
        return compute_window_metrics(df, we, output_mode, ResultLayout(evaluation, layout=layout, windowed=True))
    _check_batch(df, output_mode)
    blocker, exprs = _path(df, evaluation, native)
    if blocker is None:
        check_workers(df.sparkSession)
        return sql_path.compute_native(df, exprs, evaluation, ResultLayout(evaluation, layout=layout))
    if native is None:  # the rows folded in the JVM (one job, now); the driver merges and finishes the groups' states
        result = _on_jvm(
            df, evaluation, "compute_metrics", lambda spec: jvm_path.compute_jvm(df, exprs, evaluation, spec, ResultLayout(evaluation, layout=layout))
        )
        if result is not None:  # no Python on the executors
            return result
    check_workers(df.sparkSession)
    evaluation = profile_evaluation(df, evaluation)  # max_slices / quantile buckets: an (eager) counting job first
    return arrow_path.compute_arrow(arrow_path.partial_states(df, exprs, evaluation), evaluation, ResultLayout(evaluation, layout=layout))


def _layout_of(result_df: "DataFrame", evaluation: Evaluation, windowed: bool) -> ResultLayout:
    """The layout of a result DataFrame: long when it has the long columns, else wide."""
    long = {"metric", "index", "value"} <= set(result_df.columns)
    return ResultLayout(evaluation, layout="long" if long else "wide", windowed=windowed)


def collect_results(result_df: "DataFrame", evaluation: Any) -> Results:
    """Collect the (small) result table of :func:`compute_metrics` into :class:`mergeable_metrics.Results`.

    Args:
        result_df: the DataFrame returned by :func:`compute_metrics`, either layout (wide or
            long; columns as documented there).
        evaluation: the evaluation it was computed with (gives the canonical slice and metric
            order, and the wide layout's columns); for windowed results the
            :class:`mergeable_metrics.WindowedEvaluation`. Slices of specs with ``max_slices``
            report ``folded_values`` on their ``__other__`` slice when ``evaluation`` carries the
            profile (:func:`mergeable_metrics.spark.profile_evaluation`; :func:`evaluate` does it
            for you).

    Returns:
        ``evaluation.collect(rows=...)``: slices overall first, then in spec and value order;
        array metrics (``f1@none``, ``confusion_matrix``) as numpy arrays.

    Raises:
        ValueError: windowed results with an evaluation that is not a ``WindowedEvaluation``; a
            ``slice`` value that is not a JSON object.
        pyspark.errors.PythonException: an executor failed (e.g. an invalid value, see
            :func:`compute_metrics`).
    """
    if "window_start" in result_df.columns:  # compute_metrics(..., window=...)
        if not isinstance(evaluation, WindowedEvaluation):
            raise ValueError("windowed results: pass the mergeable_metrics.WindowedEvaluation (WindowedEvaluation(window, evaluation)) to collect them")
        return collect_window_results(result_df, evaluation, _layout_of(result_df, evaluation.evaluation, True))
    layout = _layout_of(result_df, evaluation, False)
    return evaluation.collect(rows=layout.core_rows(r.asDict() for r in result_df.collect()))


def evaluate(
    df: "DataFrame",
    *,
    evaluation: Evaluation | None = None,
    native: bool | None = None,
    window: Any = None,
    driver_merge_bytes: int = DRIVER_MERGE_BYTES,
    **evaluation_kwargs: Any,
) -> Results:
    """``collect_results(compute_metrics(df, ...), evaluation)`` in one call: the
    :class:`mergeable_metrics.Results` of a (batch) DataFrame.

    Arguments as :func:`compute_metrics`, plus ``driver_merge_bytes``: on the Arrow path, the
    per-slice merge runs on the driver when the encoded partial states (one row per partition
    and slice) total at most this many bytes (default 64 MiB; 0: always on the executors): one
    job folds the partitions and persists their states, the driver merges them (the same
    results, without a shuffle and a second stage of Python tasks); larger states are merged per
    slice on the executors, from the persisted states. Slices of specs with ``max_slices``
    report ``folded_values`` (the profiled evaluation is kept).

    Raises:
        ValueError: ``driver_merge_bytes`` is not an integer >= 0; as :func:`compute_metrics`.
    """
    if isinstance(driver_merge_bytes, bool) or not isinstance(driver_merge_bytes, int) or driver_merge_bytes < 0:
        raise ValueError(f"driver_merge_bytes must be an integer >= 0 (0: merge on the executors), got {driver_merge_bytes!r}")
    evaluation = resolve_evaluation(evaluation, evaluation_kwargs)
    if window is not None:
        we = WindowedEvaluation(window, evaluation)
        return collect_results(compute_metrics(df, evaluation=evaluation, window=window, layout="long"), we)
    _check_batch(df, None)
    if native is None:
        results = _on_jvm(df, evaluation, "evaluate", lambda spec: jvm_path.evaluate_jvm(df, prepare_columns(df, evaluation), evaluation, spec))
        if results is not None:  # no Python on the executors
            return results
    check_workers(df.sparkSession)
    blocker, exprs = _path(df, evaluation, native)
    layout = ResultLayout(evaluation, layout="long")
    if blocker is None:
        return collect_results(sql_path.compute_native(df, exprs, evaluation, layout), evaluation)
    profiled = profile_evaluation(df, evaluation)
    partial = arrow_path.partial_states(df, exprs, profiled)
    if driver_merge_bytes == 0:
        return collect_results(arrow_path.compute_arrow(partial, profiled, layout), profiled)
    return profiled.collect(rows=arrow_path.merge_on_driver(partial, profiled, layout, driver_merge_bytes))
