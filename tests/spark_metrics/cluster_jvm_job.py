"""The driver of the JVM-only standalone-cluster test (tests/spark_metrics/test_cluster.py): executors whose
Python cannot run at all (``PYSPARK_PYTHON`` is a path that does not exist), so nothing of this package runs
there; the JVM aggregates (their jar shipped with ``ADD JAR``) fold every state::

    python -m tests.spark_metrics.cluster_jvm_job spark://127.0.0.1:PORT INPUT.parquet OUT.json

It runs ``df.groupBy("carrier").agg(metric_state_column(METRICS, ...))`` with the driver-side finish
(:func:`mergeable_metrics.spark.finish_metric_states`), and ``evaluate(df, slices=["carrier"])`` (the JVM path
of the dispatcher), and regression ``metric_columns`` (folded and finished in Java), the Java finishes of the regression terms and of
multiclass probability rows (``metric_columns``) and the states finished by core on the driver (error quantiles, class
score distributions), and writes the values as ``float.hex`` (exact) JSON; as a control, it records the error of a plain Python
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
#: the Java finishes of issue 26 rounds 7-8, by metric_columns (no Python UDF): regression terms (targets ``t`` and
#: predictions ``q`` positive, so every deviance is defined), multiclass log_loss and brier_score from probability rows
TERMS = ["msle", "rmsle", "mean_pinball_loss", "mean_poisson_deviance", "mean_gamma_deviance"]
TERMS_ARGS = dict(label_col="t", score_col="q", weight_col="w", task="regression")
PROBABILITIES = ["log_loss", "brier_score"]
PROBABILITY_ARGS = dict(label_col="k", score_col="p", weight_col="w", task="multiclass", num_classes=4)
#: folded in Java, finished by core on the driver (finish_metric_states): the absolute error distribution and the
#: class score distribution (multiclass roc_auc one-vs-rest and one-vs-one, calibration of probability rows)
QUANTILES = ["median_absolute_error", "d2_tweedie_score@power=1"]
CLASS_SCORES = ["roc_auc", "roc_auc@multi_class=ovo", "average_precision", "ece"]


def with_derived(frame: Any) -> Any:
    """The input's derived columns, the same IEEE operations in Spark and pandas: ``t = k + 1``, ``q = score +
    0.25`` and ``p``, four class probabilities per row ``[s/2, (1-s)/2, s/2, (1-s)/2]`` (summing to 1 within
    core's tolerance)."""
    if hasattr(frame, "withColumn"):
        from pyspark.sql import functions as F

        s = F.col("score")
        return frame.withColumn("t", F.col("k") + F.lit(1.0)).withColumn("q", s + F.lit(0.25)).withColumn("p", F.array(s / 2, (1 - s) / 2, s / 2, (1 - s) / 2))
    import numpy as np

    s = frame.score.to_numpy(dtype=np.float64)
    return frame.assign(t=frame.k + 1.0, q=s + 0.25, p=list(np.stack([s / 2, (1 - s) / 2, s / 2, (1 - s) / 2], axis=1)))


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
    derived = with_derived(df)
    java_finished = {}
    for metrics, args in ((TERMS, TERMS_ARGS), (PROBABILITIES, PROBABILITY_ARGS)):
        got = derived.groupBy("carrier").agg(*metric_columns(metrics, engine="jvm", **args)).collect()
        for r in got:
            java_finished.setdefault(str(r["carrier"]), {}).update({k: _hex(r[k]) for k in metrics})
    driver_finished = {}
    for metrics, args in ((QUANTILES, TERMS_ARGS), (CLASS_SCORES, PROBABILITY_ARGS)):
        got = derived.groupBy("carrier").agg(metric_state_column(metrics, **args)).collect()
        keys = [m.key for m in Evaluation(metrics=metrics, **args).plan.metrics]
        for r in finish_metric_states(got, metrics, **args):
            driver_finished.setdefault(str(r["carrier"]), {}).update({k: _hex(r[k]) for k in keys})
    executors = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1
    try:  # the control: a Python UDF cannot run on these executors
        df.select(F.udf(lambda v: v, "double")("score")).collect()
        python_error = None
    except Exception as e:
        python_error = str(e)[:2000]
    spark.stop()
    Path(out_path).write_text(
        json.dumps(
            {
                "group_by": grouped,
                "evaluate": evaluated,
                "regression": regression,
                "java_finished": java_finished,
                "driver_finished": driver_finished,
                "executors": executors,
                "python_udf_error": python_error,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
