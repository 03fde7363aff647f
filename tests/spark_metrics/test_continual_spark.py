"""mergeable_metrics.spark.continual: one native groupBy().count(), then core's exact ContinualEvaluation."""

from __future__ import annotations

import pytest

from mergeable_metrics import ContinualEvaluation

pytest.importorskip("pyspark")


def test_spark_native_counts_equal_core(spark):
    from mergeable_metrics.spark.continual import continual_evaluation

    rows = [(0, None, 0, 1, 1), (0, None, 1, 0, 1), (0, 0, 0, 1, 0), (1, None, 0, 1, 1), (1, None, 1, 0, 0), (1, 0, 1, 1, 1)] * 50
    df = spark.createDataFrame(rows, "trained_task long, step long, evaluated_task long, label long, prediction long").repartition(3)
    ev = continual_evaluation(df, 2, 2, 1)
    want = ContinualEvaluation(2, 2, 1)
    want.fold_events({k: [r[i] for r in rows] for i, k in enumerate(("trained_task", "step", "evaluated_task", "label", "prediction"))})
    assert ev == want
    bad = spark.createDataFrame([(0, 0, 0, 5)], "trained_task long, evaluated_task long, label long, prediction long")
    with pytest.raises(ValueError, match="column 'prediction': invalid value 5 .*grouped event counts"):
        continual_evaluation(bad, 2, 2)
