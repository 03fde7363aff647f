"""The counting pass on Spark: slices with ``max_slices`` or quantile buckets.

Plan (DataFrame API only)::

    df.select(evaluation.columns)
      .mapInArrow(count each partition into one core SliceProfile; one row per part:
                  (part name, core-codec bytes))                     # partial profiles
      .groupBy("part")
      .applyInArrow(merge one part's partial profiles, resolve it:  # exact top-N / quantile edges
                    (part name, small JSON summary))
      .collect()                                                    # N keys per spec, k-1 edges

Only the resolved summaries reach the driver (``2 * max_slices`` keys per spec, ``k - 1`` edges per
quantile column), never raw rows nor the per-value counts; the profiled evaluation is then shipped
to the executors with the metric job's closure.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Callable, Iterator

from mergeable_metrics.engine import Evaluation
from mergeable_metrics.engine import KeyCounts, ProfileSummary, SliceProfile, summarize_part
from mergeable_metrics.spark._frames import arrow_input, fold_partition_batches, prepare_columns
from mergeable_metrics.spark.session import check_workers

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa
    from pyspark.sql import DataFrame

__all__ = ["profile_evaluation"]


def _schema(value_type: str):
    from pyspark.sql import types as T

    vt = T.BinaryType() if value_type == "binary" else T.StringType()
    return T.StructType([T.StructField("part", T.StringType()), T.StructField("data", vt)])


def _profile_partition_fn(evaluation: Evaluation) -> Callable[[Iterator["pa.RecordBatch"]], Iterator["pa.RecordBatch"]]:
    profiler = evaluation.profiler()

    def profile_partition(batches: Iterator["pa.RecordBatch"]) -> Iterator["pa.RecordBatch"]:
        import pyarrow as pa

        acc = fold_partition_batches(batches, profiler.zero(), profiler.fold, evaluation.columns)
        names = sorted(acc.parts)
        data = [SliceProfile({n: acc.parts[n]}).encode() for n in names]
        yield pa.RecordBatch.from_arrays([pa.array(names, pa.string()), pa.array(data, pa.binary())], names=["part", "data"])

    return profile_partition


def _resolve_part_fn(evaluation: Evaluation) -> Callable[["pa.Table"], "pa.Table"]:
    slices = evaluation.slices

    def resolve_part(table: "pa.Table") -> "pa.Table":
        import pyarrow as pa

        name = table.column("part")[0].as_py()
        parts = [SliceProfile.decode(b).parts[name] for b in table.column("data").to_pylist()]
        if isinstance(parts[0], KeyCounts):
            merged = KeyCounts.merge_all(parts)
        else:
            merged = parts[0]
            for p in parts[1:]:
                merged = merged.merge(p)
        summary = json.dumps(summarize_part(name, merged, slices), sort_keys=True)
        return pa.table({"part": pa.array([name], pa.string()), "data": pa.array([summary], pa.string())})

    return resolve_part


def profile_evaluation(df: "DataFrame", evaluation: Evaluation) -> Evaluation:
    """Run the counting pass of ``evaluation`` over ``df`` and return the profiled evaluation.

    Runs one Spark job now (eagerly). Returns ``evaluation`` itself when it needs no profile
    (no ``max_slices`` or ``quantiles``, or a profile is already attached). Pass the returned
    evaluation to :func:`~mergeable_metrics.spark.compute_metrics` and
    :func:`~mergeable_metrics.spark.collect_results` (``compute_metrics`` calls this itself when given an
    evaluation that needs a profile).

    Args:
        df: the input DataFrame (the same one the metrics are computed on).
        evaluation: a :class:`mergeable_metrics.Evaluation`.

    Returns:
        ``evaluation.with_profile(summary)``: its folds map values outside each spec's top
        ``max_slices`` to ``__other__`` and numbers to quantile buckets, identically on every
        executor and in every engine.

    Raises:
        ValueError / TypeError: missing or mistyped columns (on the driver, before the job).
        pyspark.errors.PythonException: a slice column holds values core rejects (e.g. a
            non-number in a bucketed column), with the partition id.
    """
    if not evaluation.needs_profile:
        return evaluation
    check_workers(df.sparkSession)
    exprs = prepare_columns(df, evaluation)
    partial = arrow_input(df, exprs).mapInArrow(_profile_partition_fn(evaluation), _schema("binary"))
    rows = partial.groupBy("part").applyInArrow(_resolve_part_fn(evaluation), _schema("string")).collect()
    got = {r["part"]: json.loads(r["data"]) for r in rows}
    profiler = evaluation.profiler()
    empty = profiler.finish(profiler.zero()).parts  # parts of an empty DataFrame (no partition emitted them)
    return evaluation.with_profile(ProfileSummary({name: got.get(name, empty[name]) for name in empty}))
