"""Prequential (test-then-train) metrics on Spark: :func:`prequential_metrics`.

The window (``floor(position / window_size)``) is a Spark SQL column; each partition's Arrow
batches are folded by core's sliced fold (``mapInArrow``, one row of encoded states per window
and partition), and the driver merges the small per-window states and computes the windowed and
cumulative metrics (:class:`mergeable_metrics.time.prequential.PrequentialResults`), equal to the local engine's.
"""

from __future__ import annotations

from typing import Any

from mergeable_metrics.spark._frames import arrow_input, fold_partition_fn, prepare_columns, states_schema
from mergeable_metrics.engine import WINDOW_COLUMN, PrequentialEvaluation, PrequentialResults

__all__ = ["prequential_metrics"]


def prequential_metrics(df: Any, window_size: int, position_col: str, **options: Any) -> PrequentialResults:
    """Windowed and cumulative metrics of a DataFrame holding a stream's rows.

    Args:
        df: the rows, with ``position_col`` (0-based stream positions, integers >= 0) and the
            evaluation's columns.
        window_size: examples per tumbling window.
        **options: :class:`mergeable_metrics.Evaluation` options.

    Raises:
        ValueError: a missing column, a position column that is not of an integer type, a negative or null position, or invalid values (core's messages).
    """
    from pyspark.sql import functions as F

    from mergeable_metrics.engine import slice_key_from_json
    from mergeable_metrics.engine import Accumulator
    from mergeable_metrics.engine import OVERALL

    pe = PrequentialEvaluation(window_size, position_col=position_col, **options)
    if position_col not in df.columns:
        raise ValueError(f"missing column {position_col!r} (position_col); columns: {df.columns}")
    kind = dict(df.dtypes)[position_col]
    if kind not in ("tinyint", "smallint", "int", "bigint"):  # a double 1.5 would be floored into a window
        raise ValueError(f"column {position_col!r}: positions must be integers in [0, 2**63), got a {kind} column")
    bad = df.filter(F.col(position_col).isNull() | (F.col(position_col) < 0)).select(position_col).limit(1).collect()
    if bad:
        raise ValueError(f"column {position_col!r}: invalid value {bad[0][0]!r}: positions must be integers in [0, 2**63)")
    ev = pe.evaluation
    df = df.withColumn(WINDOW_COLUMN, F.floor(F.col(position_col) / F.lit(pe.window_size)).cast("long"))
    parts = arrow_input(df, prepare_columns(df, ev)).mapInArrow(fold_partition_fn(ev), states_schema()).toArrow()
    merged = {OVERALL: ev.plan.zero()}
    for key_json, data in zip(parts.column("slice_key").to_pylist(), parts.column("states").to_pylist()):
        key = slice_key_from_json(key_json)
        states = ev.slice_codec.decode(data)
        merged[key] = ev.plan.merge(merged[key], states) if key in merged else states
    return pe.finish(Accumulator(merged, ev.fingerprint))
