"""Spark adapter: sliced, exactly mergeable metrics of Spark DataFrames.

* :class:`MetricsAggregator`: Spark's Aggregator vocabulary (``zero``, ``reduce``, ``merge``,
  ``finish``, ``encode``/``decode``) mapped one-to-one onto :class:`mergeable_metrics.Evaluation`.
* :func:`compute_metrics`: ``DataFrame -> DataFrame`` of per-slice results (one row per slice, a
  column per metric; ``layout="long"``: one row per slice and metric), with partial aggregation
  per partition before the shuffle (DataFrame API only).
* :func:`collect_results`: the result DataFrame (either layout) as :class:`mergeable_metrics.Results`;
  :func:`evaluate`: both in one call (small partial states merged on the driver).
* :func:`profile_evaluation`: the counting pass behind ``max_slices`` and quantile buckets.
* :func:`get_spark`: a configured SparkSession (checks for Java 17+ first); :func:`check_workers`:
  whether a session's Python workers can import this package (``compute_metrics`` checks it).
* :func:`metric_columns`: count and confusion metrics as aggregate Columns for a user's own
  ``df.groupBy(...).agg(*metric_columns([...], label_col=..., score_col=...))``.
* :class:`MetricsEvaluator`: any registered metric as a ``pyspark.ml`` Evaluator (``metricName``,
  ``isLargerBetter``), e.g. inside ``CrossValidator`` (imported lazily, with pyspark).

A slice is one shape in every layout: the ``slice`` column holds it as ``metrics.json`` writes
it, a JSON object of column to value (``{"country":"US"}``; ``{}`` for the overall slice).

Layout of the package (no import cycle): :mod:`._frames` (a leaf: columns, schemas, Arrow input,
the partition fold) <- :mod:`.arrow_path`, :mod:`.sql_path`, :mod:`.profile`, :mod:`.windows`,
:mod:`.prequential` <- :mod:`.compute` (the dispatcher).

Importing this package neither imports pyspark nor starts Spark.
"""

from mergeable_metrics.spark.aggregator import MetricsAggregator
from mergeable_metrics.spark.columns import finish_metric_states, metric_columns, metric_state_column
from mergeable_metrics.spark.jvm_finish import register_sql_functions
from mergeable_metrics.spark.compute import RESULT_COLUMNS, collect_results, compute_metrics, evaluate, result_schema
from mergeable_metrics.spark.profile import profile_evaluation
from mergeable_metrics.spark.session import SparkSetupError, check_java, check_workers, get_spark


def __getattr__(name: str):
    # MetricsEvaluator subclasses pyspark.ml's Evaluator, so it is imported (with pyspark) on first use
    if name == "MetricsEvaluator":
        from mergeable_metrics.spark.evaluator import MetricsEvaluator

        return MetricsEvaluator
    raise AttributeError(f"module 'mergeable_metrics.spark' has no attribute {name!r}")


__all__ = [
    "MetricsAggregator",
    "MetricsEvaluator",
    "RESULT_COLUMNS",
    "SparkSetupError",
    "check_java",
    "check_workers",
    "collect_results",
    "compute_metrics",
    "evaluate",
    "finish_metric_states",
    "get_spark",
    "metric_columns",
    "metric_state_column",
    "profile_evaluation",
    "register_sql_functions",
    "result_schema",
]
