"""The driver of the JVM-only standalone-cluster test (tests/spark_metrics/test_cluster.py): executors whose
Python cannot run at all (``PYSPARK_PYTHON`` is a path that does not exist), so nothing of this package runs
there; the JVM aggregates (their jar shipped with ``ADD JAR``) fold every state::

    python -m tests.spark_metrics.cluster_jvm_job spark://127.0.0.1:PORT INPUT.parquet OUT.json

It runs ``df.groupBy("carrier").agg(metric_state_column(METRICS, ...))`` with the driver-side finish
(:func:`mergeable_metrics.spark.finish_metric_states`), and ``evaluate(df, slices=["carrier"])`` (the JVM path
of the dispatcher), and regression ``metric_columns`` (folded and finished in Java), and writes the values as ``float.hex`` (exact) JSON; as a control, it records the error of a plain Python
UDF on the same executors.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tests.spark_metrics.cluster_job import _wait_for_executors

METRICS = ["roc_auc", "average_precision", "f1", "log_loss"]
ARGS = dict(label_col="y", score_col="score")
#: regression (issue 26 round 5): metric_columns folded and finished in Java, weighted
REGRESSION = ["r2", "mse", "mae", "pearson"]
REGRESSION_ARGS = dict(label_col="k", score_col="score", weight_col="w", task="regression")


def _hex(v: Any) -> Any:
    return float(v).hex() if isinstance(v, float) else v


def main(argv: list[str]) -> int:
    master, data, out_path = argv
    from pyspark.sql import functions as F

    from mergeable_metrics import Evaluation
    from mergeable_metrics.spark import evaluate, finish_metric_states, get_spark, metric_columns, metric_state_column

    spark = get_spark(
        "mergeable-metrics-cluster-jvm-test",
        master,
        shuffle_partitions=4,
        config={
            "spark.driver.bindAddress": "127.0.0.1",
            "spark.driver.host": "127.0.0.1",
            "spark.local.dir": str(Path(out_path).parent / "driver-local"),
            "spark.executor.memory": "512m",
            "spark.executor.cores": "1",
            "spark.cores.max": "2",
            "spark.task.maxFailures": "1",
        },
    )
    spark.sparkContext.setLogLevel("ERROR")
    _wait_for_executors(spark, 2)
    df = spark.read.parquet(data).repartition(4)
    rows = df.groupBy("carrier").agg(metric_state_column(METRICS, **ARGS)).collect()
    grouped = {str(r["carrier"]): {k: _hex(r[k]) for k in METRICS} for r in finish_metric_states(rows, METRICS, **ARGS)}
    results = evaluate(df, evaluation=Evaluation(metrics=METRICS, slices=["carrier"], **ARGS))
    evaluated = {json.dumps(s.key): {k: _hex(s.metrics[k]) for k in METRICS} for s in results}
    reg = df.groupBy("carrier").agg(*metric_columns(REGRESSION, engine="jvm", **REGRESSION_ARGS)).collect()
    regression = {str(r["carrier"]): {k: _hex(r[k]) for k in REGRESSION} for r in reg}
    executors = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1
    try:  # the control: a Python UDF cannot run on these executors
        df.select(F.udf(lambda v: v, "double")("score")).collect()
        python_error = None
    except Exception as e:
        python_error = str(e)[:2000]
    spark.stop()
    Path(out_path).write_text(
        json.dumps({"group_by": grouped, "evaluate": evaluated, "regression": regression, "executors": executors, "python_udf_error": python_error})
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
