"""The Arrow path of ``compute_metrics``: fold each partition in Python, merge each slice.

Plan of the Spark job (DataFrame API only, so it also runs over Spark Connect)::

    df.select(evaluation.columns)
      .mapInArrow(fold each partition's Arrow batches into ONE accumulator,
                  emit one row per slice: (slice_key JSON, core-codec bytes of its states))
      .union(one row: ("[]", zero states of the overall slice))      # empty input -> Overall row
      .groupBy("slice_key")
      .applyInArrow(merge the partial states of one slice, compute its result row(s))

Raw rows never leave their executor and are never collected to the driver: only the small,
fixed-size partial states cross the shuffle (at most one row per slice and partition).
:func:`merge_on_driver` instead collects the partial states when they are small and runs the
per-slice merge on the driver (no shuffle, no second stage of Python tasks):
:func:`mergeable_metrics.spark.evaluate` does when it computes :class:`mergeable_metrics.Results`.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any, Callable, Iterable

from mergeable_metrics.engine import Evaluation
from mergeable_metrics.engine import UndefinedMetricWarning
from mergeable_metrics.engine import Results
from mergeable_metrics.engine import OVERALL
from mergeable_metrics.spark._frames import ResultLayout, arrow_input, fold_partition_fn, states_schema
from mergeable_metrics.engine import slice_key_from_json, slice_key_to_json

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa
    from pyspark.sql import DataFrame


def slice_rows(evaluation: Evaluation, key_json: str, blobs: Iterable[bytes]) -> list[dict[str, Any]]:
    """One slice's long-format rows (:meth:`mergeable_metrics.Results.to_rows`) from its encoded
    partial states (merged, finished): the executors' per-slice merge and
    :func:`merge_on_driver` both run it."""
    key = slice_key_from_json(key_json)
    merged = evaluation.plan.merge_all(evaluation.slice_codec.decode(b) for b in blobs)
    # Warnings raised on an executor never reach the user: undefined values are NaN in the rows
    # (collect_results warns once, from the rows).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        result = evaluation.finish({key: merged}, add_overall=False)[key]
    return Results([result]).to_rows()


def _merge_slice_fn(evaluation: Evaluation, layout: ResultLayout) -> Callable[["pa.Table"], "pa.Table"]:
    """The grouped ``applyInArrow`` function: merge one slice's partial states, compute its rows."""

    def merge_slice(table: "pa.Table") -> "pa.Table":
        return layout.table(slice_rows(evaluation, table.column("slice_key")[0].as_py(), table.column("states").to_pylist()))

    return merge_slice


def partial_states(df: "DataFrame", exprs: list, evaluation: Evaluation) -> "DataFrame":
    """The encoded partial states, one row per (partition, slice) (``slice_key``, ``states``)."""
    return arrow_input(df, exprs).mapInArrow(fold_partition_fn(evaluation), states_schema())


def compute_arrow(partial: "DataFrame", evaluation: Evaluation, layout: ResultLayout) -> "DataFrame":
    """The result DataFrame of the partial states: merged per slice on the executors (lazy)."""
    zero = partial.sparkSession.createDataFrame([(slice_key_to_json(OVERALL), evaluation.slice_codec.encode(evaluation.plan.zero()))], states_schema())
    return partial.unionByName(zero).groupBy("slice_key").applyInArrow(_merge_slice_fn(evaluation, layout), layout.spark_schema())


def merge_on_driver(partial: "DataFrame", evaluation: Evaluation, layout: ResultLayout, limit: int) -> list[dict[str, Any]]:
    """Core's long rows of every slice, merged on the driver when the partial states are small.

    The partial states (one row per partition and slice) are persisted by one job that also sums
    their sizes; at most ``limit`` bytes are collected and merged here by :func:`slice_rows` (the
    executors' function; merges are exact in any order, so the rows are the same). Larger states
    are merged per slice on the executors (:func:`compute_arrow`), from the persisted states.
    """
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    partial.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        size = partial.select(F.sum(F.length("states")).alias("bytes")).first()["bytes"] or 0
        if size > limit:
            return layout.core_rows(r.asDict() for r in compute_arrow(partial, evaluation, layout).collect())
        table = partial.toArrow()
    finally:
        partial.unpersist()
    blobs: dict[str, list[bytes]] = {}
    for key_json, states in zip(table.column("slice_key").to_pylist(), table.column("states").to_pylist()):
        blobs.setdefault(key_json, []).append(states)
    blobs.setdefault(slice_key_to_json(OVERALL), []).append(evaluation.slice_codec.encode(evaluation.plan.zero()))
    return [row for key_json, parts in blobs.items() for row in slice_rows(evaluation, key_json, parts)]
