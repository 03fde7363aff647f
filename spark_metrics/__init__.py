"""Spark adapter: sliced, exactly mergeable metrics of Spark DataFrames.

* :class:`MetricsAggregator`: Spark's Aggregator vocabulary (``zero``, ``reduce``, ``merge``,
  ``finish``, ``encode``/``decode``) mapped one-to-one onto :class:`core.Evaluation`.
* :func:`compute_metrics`: ``DataFrame -> DataFrame`` of per-slice results in long format, with
  partial aggregation per partition before the shuffle (DataFrame API only).
* :func:`collect_results`: the result DataFrame as :class:`core.Results`.
* :func:`get_spark`: a configured SparkSession (checks for Java 17+ first).

Importing this package neither imports pyspark nor starts Spark.
"""

from spark_metrics.aggregator import MetricsAggregator
from spark_metrics.compute import RESULT_COLUMNS, collect_results, compute_metrics, result_schema
from spark_metrics.session import check_java, get_spark

__all__ = [
    "MetricsAggregator",
    "RESULT_COLUMNS",
    "check_java",
    "collect_results",
    "compute_metrics",
    "get_spark",
    "result_schema",
]
