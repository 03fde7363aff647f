"""Event-time windows on Spark: ``compute_metrics(df, ..., window=("ts", "1 hour"[, "15 minutes"]))``.

Batch plan (DataFrame API only)::

    df.select(evaluation.columns, ts)
      .mapInArrow(read the times (mergeable_metrics.to_micros), assign each row its windows (mergeable_metrics.TimeWindows; sliding: several),
                  fold each partition's rows into one accumulator per window,
                  emit (window_start_us, window_end_us, slice_key, states))
      .groupBy(window_start_us, window_end_us, slice_key)
      .applyInArrow(merge one slice's partial states of one window, compute its metric rows)

Structured Streaming (``df.isStreaming``; the time column needs ``withWatermark``): the rows are
grouped by window and ``applyInPandasWithState`` folds each micro-batch's rows of a window into
that window's accumulator, kept (core-codec bytes) as the group's state; ``output_mode="update"``
emits the window's complete results after every micro-batch that touched it, ``"append"`` once,
when the watermark passes the window's end (an event-time timeout), and drops the state. A
micro-batch whose rows of a window come after the watermark passed the window's end (late files)
decides that window at once (its results emitted in both modes, the state dropped); rows of the
window that come in a later micro-batch still give another result row for it (counted, not dropped). Neither
path uses ``monotonically_increasing_id`` or unions the stream with a batch DataFrame (both are
rejected on streams). Windows are aligned to the epoch, as :mod:`mergeable_metrics.time.windows` and Beam's, so the
three engines give the same windows and results.

Times: Spark timestamps, or numbers (seconds since the epoch, microsecond precision); other
types are cast to timestamp by Spark (strings without an offset in the session time zone). In
batch, the windows of each row are assigned by core (:meth:`mergeable_metrics.TimeWindows.assign`, the same
code as the local engine) and a null time raises, naming the column and row; on a stream Spark's
``window`` assigns them and drops rows with a null time, so a nullable time column warns.
"""

from __future__ import annotations

import datetime as _dt
import warnings
from typing import TYPE_CHECKING, Any, Callable, Iterator

from mergeable_metrics.engine import slice_key_from_json, slice_key_to_json
from mergeable_metrics.engine import invalid_value_message
from mergeable_metrics.engine import Evaluation
from mergeable_metrics.engine import UndefinedMetricWarning
from mergeable_metrics.engine import WINDOW_COLUMNS, Results
from mergeable_metrics.engine import TimeWindows, WindowedEvaluation, take_rows, to_micros, window_from_micros
from mergeable_metrics.spark._frames import ResultLayout, fold_partition_batches, prepare_columns, quote

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa
    from pyspark.sql import DataFrame

__all__ = ["OUTPUT_MODES", "collect_window_results", "compute_window_metrics", "window_result_schema"]

#: Structured Streaming output modes of windowed metrics
OUTPUT_MODES = ("update", "append")
_WS, _WE = "_mm_window_start", "_mm_window_end"


def window_result_schema(evaluation: Evaluation | None = None, layout: str = "long"):
    """``compute_metrics(..., window=...)``'s result schema: the layout's columns with
    ``window_start`` / ``window_end`` (timestamp) after ``slice``."""
    return ResultLayout(evaluation, layout=layout, windowed=True).spark_schema()


def _spark_duration(us: int) -> str:
    return f"{us // 1_000_000} seconds" if us % 1_000_000 == 0 else f"{us} microseconds"


def _windowed_input(df: "DataFrame", evaluation: Evaluation, window: TimeWindows, stream: bool) -> tuple["DataFrame", list[str]]:
    """The input columns under positional names (``_mm0, ...``, see :func:`arrow_input`) and the
    event time (``_mm_t``: numbers of seconds and timestamps as given, read on the executors by
    :func:`mergeable_metrics.time.windows.to_micros` as on the local engine; other types cast to timestamp); on a stream also the window bounds (Spark's
    ``window``: a sliding window puts a row in each of its windows) and the time itself (the
    watermark's column)."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    if window.time_col not in df.columns:
        raise ValueError(f"column {window.time_col!r} (window time column) not found in the DataFrame; available columns: {list(df.columns)}")
    dtype = next(f.dataType for f in df.schema.fields if f.name == window.time_col)
    t = F.col(quote(window.time_col))
    if isinstance(dtype, T.IntegralType):
        t = F.timestamp_seconds(t)
    elif isinstance(dtype, T.NumericType):
        t = F.timestamp_micros(F.round(t.cast("double") * 1_000_000).cast("long"))
    elif not isinstance(dtype, T.TimestampType):
        t = t.cast("timestamp")
    names = list(evaluation.columns)
    cols = [e.alias(f"_mm{i}") for i, e in enumerate(prepare_columns(df, evaluation))]
    if not stream:
        # numbers and timestamps as they are: core's to_micros reads them on the executors, as the
        # local engine does (seconds never wrap around int64; a time out of range names its value)
        raw = F.col(quote(window.time_col)) if isinstance(dtype, (T.IntegralType, T.FloatType, T.DoubleType, T.TimestampType)) else t
        return df.select(*cols, raw.alias("_mm_t")), names
    size = _spark_duration(window.size_us)
    w = F.window(t, size, _spark_duration(window.slide_us)) if window.sliding else F.window(t, size)
    out = df.select(*cols, w.alias("_mm_w"), F.col(quote(window.time_col)))
    return out.select(
        *[f"_mm{i}" for i in range(len(names))],
        F.unix_micros(F.col("_mm_w.start")).alias(_WS),
        F.unix_micros(F.col("_mm_w.end")).alias(_WE),
        F.col(quote(window.time_col)),
    ), names


def _null_time_error(window: TimeWindows, row: int) -> ValueError:
    return ValueError(invalid_value_message(window.time_col, None, row, "a row needs an event time to be in a window (null times are not dropped)"))


def _fold_windows_fn(we: WindowedEvaluation, names: list[str]) -> Callable[[Iterator["pa.RecordBatch"]], Iterator["pa.RecordBatch"]]:
    """``mapInArrow``: one accumulator per window of the partition, one row per (window, slice)."""
    ev = we.evaluation

    def fold(acc: dict, batch: "pa.RecordBatch", row_offset: int = 0) -> dict:
        import numpy as np

        t = batch.column("_mm_t")
        if t.null_count:
            raise _null_time_error(we.window, row_offset + int(np.flatnonzero(t.is_null().to_numpy(zero_copy_only=False))[0]))
        rows, starts = we.window.assign(to_micros(t, we.window.time_col, row_offset, we.window))
        values = batch.select(names)
        for start in np.unique(starts):
            idx = rows[starts == start]
            we.fold_window(acc, we.window_of(start), values if len(idx) == batch.num_rows else take_rows(values, idx), row_offset)
        return acc

    def fold_partition(batches: Iterator["pa.RecordBatch"]) -> Iterator["pa.RecordBatch"]:
        import pyarrow as pa

        acc = fold_partition_batches(batches, we.zero(), fold, [*names, "_mm_t"])
        ws, wend, keys, states = [], [], [], []
        for (start, end), per_slice in acc.items():
            for key, st in per_slice.items():
                ws.append(start)
                wend.append(end)
                keys.append(slice_key_to_json(key))
                states.append(ev.slice_codec.encode(st))
        yield pa.RecordBatch.from_arrays(
            [pa.array(ws, pa.int64()), pa.array(wend, pa.int64()), pa.array(keys, pa.string()), pa.array(states, pa.binary())],
            names=[_WS, _WE, "slice_key", "states"],
        )

    return fold_partition


def _states_schema():
    from pyspark.sql import types as T

    return T.StructType(
        [
            T.StructField(_WS, T.LongType()),
            T.StructField(_WE, T.LongType()),
            T.StructField("slice_key", T.StringType()),
            T.StructField("states", T.BinaryType()),
        ]
    )


def _window_rows(results: Results, start_us: int, end_us: int) -> list[dict]:
    start, end = window_from_micros(start_us), window_from_micros(end_us)
    return Results([s.with_window(start, end) for s in results]).to_rows()


def _merge_window_slice_fn(evaluation: Evaluation, layout: ResultLayout) -> Callable[["pa.Table"], "pa.Table"]:
    plan = evaluation.plan

    def merge(table: "pa.Table") -> "pa.Table":
        key = slice_key_from_json(table.column("slice_key")[0].as_py())
        merged = plan.merge_all(evaluation.slice_codec.decode(b) for b in table.column("states").to_pylist())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            result = evaluation.finish({key: merged}, add_overall=False)[key]
        return layout.table(_window_rows(Results([result]), table.column(_WS)[0].as_py(), table.column(_WE)[0].as_py()))

    return merge


def _stream_fn(we: WindowedEvaluation, names: list[str], output_mode: str, layout: ResultLayout) -> Callable:
    """``applyInPandasWithState``: the group is one window; its state the window's accumulator."""
    ev = we.evaluation

    def step(key: tuple, pdfs: Iterator[Any], state: Any) -> Iterator[Any]:
        import pandas as pd

        start, end = int(key[0]), int(key[1])
        acc = ev.decode(state.get[0]) if state.exists else ev.zero()
        if state.hasTimedOut:  # the watermark passed the window's end: final results, state dropped
            state.remove()
            if output_mode == "append":
                yield _frame(ev, acc, start, end, layout)
            return
        for pdf in pdfs:
            if pdf[_WS].isna().any():  # pragma: no cover - null times have no window group
                raise _null_time_error(we.window, int(pdf[_WS].isna().to_numpy().nonzero()[0][0]))
            we.fold_window({(start, end): acc}, (start, end), pd.DataFrame({c: pdf[f"_mm{i}"] for i, c in enumerate(names)}))
        if end // 1000 < state.getCurrentWatermarkMs():
            # a micro-batch that came after the watermark passed the window's end (late files, a
            # slow source): no timeout can be set in the past; the window is decided at once
            state.remove()
            yield _frame(ev, acc, start, end, layout)
            return
        state.update((ev.encode(acc),))
        state.setTimeoutTimestamp(end // 1000)  # ms; fires once the watermark is past the window's end
        if output_mode == "update":
            yield _frame(ev, acc, start, end, layout)

    return step


def _frame(ev: Evaluation, acc: Any, start: int, end: int, layout: ResultLayout) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        rows = _window_rows(ev.finish(acc), start, end)
    return layout.table(rows).to_pandas()


def compute_window_metrics(df: "DataFrame", we: WindowedEvaluation, output_mode: str | None = None, layout: ResultLayout | None = None) -> "DataFrame":
    """Per-window, per-slice metric rows of a batch or streaming DataFrame (see the module
    docstring; :func:`mergeable_metrics.spark.compute_metrics` with ``window=`` calls it).

    Args:
        df: the input; a streaming DataFrame needs a watermark on the time column
            (``df.withWatermark(time_col, "10 minutes")``).
        we: the :class:`mergeable_metrics.WindowedEvaluation`.
        output_mode: streaming only: ``"update"`` (default) or ``"append"``; the query's
            ``writeStream.outputMode`` must be the same.
        layout: the result rows' layout (default: long, windowed).

    Raises:
        ValueError: a missing column, a bad output mode, or ``output_mode`` for a batch DataFrame.
    """

    layout = layout or ResultLayout(we.evaluation, layout="long", windowed=True)
    inp, names = _windowed_input(df, we.evaluation, we.window, df.isStreaming)
    if not df.isStreaming:
        if output_mode is not None:
            raise ValueError("output_mode is for streaming DataFrames (df.isStreaming); a batch DataFrame has one answer")
        partial = inp.mapInArrow(_fold_windows_fn(we, names), _states_schema())
        return partial.groupBy(_WS, _WE, "slice_key").applyInArrow(_merge_window_slice_fn(we.evaluation, layout), layout.spark_schema())
    from pyspark.sql import types as T
    from pyspark.sql.streaming.state import GroupStateTimeout

    mode = output_mode or "update"
    if mode not in OUTPUT_MODES:
        raise ValueError(f"output_mode must be one of {OUTPUT_MODES}, got {output_mode!r}")
    _null_time_check(df, we.window)
    state = T.StructType([T.StructField("accumulator", T.BinaryType())])
    return inp.groupBy(_WS, _WE).applyInPandasWithState(
        _stream_fn(we, names, mode, layout), layout.spark_schema(), state, mode, GroupStateTimeout.EventTimeTimeout
    )


def _null_time_check(df: "DataFrame", window: TimeWindows) -> None:
    """Streams: Spark's ``window`` gives a null window to a null time, which would drop the row
    silently; the time column must not be nullable."""
    field = next(f for f in df.schema.fields if f.name == window.time_col)
    if field.nullable:
        warnings.warn(
            f"window time column {window.time_col!r} is nullable: on a stream, rows with a null time have no window and are not counted; "
            "filter or fill them first (df.where(F.col(...).isNotNull()))",
            UserWarning,
            stacklevel=4,
        )


def collect_window_results(result_df: "DataFrame", we: WindowedEvaluation, layout: ResultLayout | None = None) -> Results:
    """Collect a windowed result table (batch) into :class:`mergeable_metrics.Results` (windows in time
    order, each through ``evaluation.collect``). Window bounds come back as UTC ``datetime``."""
    layout = layout or ResultLayout(we.evaluation, layout="long", windowed=True)
    return we.collect(rows=layout.core_rows(window_row(r.asDict()) for r in result_df.collect()))


def window_row(row: dict) -> dict:
    """A collected result row with its window bounds as UTC ``datetime``: PySpark gives
    timestamps as naive local-time ``datetime`` (the Python process's time zone)."""
    for c in WINDOW_COLUMNS:
        v = row.get(c)
        if isinstance(v, _dt.datetime) and v.tzinfo is None:
            row[c] = v.astimezone(_dt.timezone.utc)
    return row
