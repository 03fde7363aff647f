"""Spark adapter: sliced, exactly mergeable metrics of Spark DataFrames.

* :class:`MetricsAggregator`: Spark's Aggregator vocabulary (``zero``, ``reduce``, ``merge``,
  ``finish``, ``encode``/``decode``) mapped one-to-one onto :class:`core.Evaluation`.
* :func:`compute_metrics`: ``DataFrame -> DataFrame`` of per-slice results in long format, with
  partial aggregation per partition before the shuffle (DataFrame API only).
* :func:`collect_results`: the result DataFrame as :class:`core.Results`.
* :func:`profile_evaluation`: the counting pass behind ``max_slices`` and quantile buckets.
* :func:`get_spark`: a configured SparkSession (checks for Java 17+ first); :func:`check_workers`:
  whether a session's Python workers can import this package (``compute_metrics`` checks it).
* :func:`metric_columns`: count and confusion metrics as aggregate Columns for a user's own
  ``df.groupBy(...).agg(*metric_columns([...], label_col=..., score_col=...))``.
* :class:`MetricsEvaluator`: any registered metric as a ``pyspark.ml`` Evaluator (``metricName``,
  ``isLargerBetter``), e.g. inside ``CrossValidator`` (imported lazily, with pyspark).

Importing this package neither imports pyspark nor starts Spark.
"""

from spark_metrics.aggregator import MetricsAggregator
from spark_metrics.columns import metric_columns
from spark_metrics.compute import RESULT_COLUMNS, collect_results, compute_metrics, result_schema
from spark_metrics.profile import profile_evaluation
from spark_metrics.session import SparkSetupError, check_java, check_workers, get_spark



def __getattr__(name: str):
    # MetricsEvaluator subclasses pyspark.ml's Evaluator, so it is imported (with pyspark) on first use
    if name == "MetricsEvaluator":
        from spark_metrics.evaluator import MetricsEvaluator

        return MetricsEvaluator
    raise AttributeError(f"module 'spark_metrics' has no attribute {name!r}")


__all__ = [
    "MetricsAggregator",
    "MetricsEvaluator",
    "RESULT_COLUMNS",
    "SparkSetupError",
    "check_java",
    "check_workers",
    "collect_results",
    "compute_metrics",
    "get_spark",
    "metric_columns",
    "profile_evaluation",
    "result_schema",
]
