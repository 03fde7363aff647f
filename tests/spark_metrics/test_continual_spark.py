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


def test_spark_test_then_train_rows_equal_core_and_a_bad_position_is_named(spark):
    """Positions are grouped by window in Spark (max(position) kept per group); an invalid one
    stays its own group so that core names it."""
    from mergeable_metrics.spark.continual import continual_evaluation

    ttt = [(t, None, None, (i * 7) % 3, (i * 5) % 3, i) for i, t in enumerate([0] * 13 + [1] * 9)]
    evals = [(1, None, 0, 1, 1, None), (1, None, 1, 2, 0, None)] * 5
    rows = ttt + evals
    schema = "trained_task long, step long, evaluated_task long, label long, prediction long, position long"
    ev = continual_evaluation(spark.createDataFrame(rows, schema).repartition(3), 2, 3, 0, max_instances=30, eval_window_size=4)
    want = ContinualEvaluation(2, 3, 0, 30, 4)
    want.fold_events({k: [r[i] for r in rows] for i, k in enumerate(("trained_task", "step", "evaluated_task", "label", "prediction", "position"))})
    assert ev == want and ev.compute().boundaries.tolist() == [0, 13, 22]
    with pytest.raises(ValueError, match=r"column 'position': invalid value 30(\.0)? .*\[0, 30\).*grouped event counts"):
        continual_evaluation(spark.createDataFrame(rows + [(0, None, None, 0, 0, 30)], schema), 2, 3, 0, max_instances=30, eval_window_size=4)
