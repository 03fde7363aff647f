"""Issue 26 round 6: unweighted count kinds on the JVM path fold as Spark's own SQL sums (one per cell, code
generated, no object per row) packed into core's states by ``mergeablemetrics.CountCells``: the same bytes as
the Python fold and as the typed Aggregator, the same errors for invalid values."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import f1_score, precision_score

from mergeable_metrics import Evaluation
from mergeable_metrics.engine import State
from mergeable_metrics.spark import finish_metric_states, jvm, metric_state_column

pytestmark = pytest.mark.filterwarnings("ignore::mergeable_metrics.metrics.base.UndefinedMetricWarning")


def _python_bytes(pdf: pd.DataFrame, ev: Evaluation) -> list[bytes]:
    acc = ev.fold(ev.zero(), {c: pdf[c].to_numpy() for c in pdf.columns})
    return [s.encode() for s in acc.states(())]


def _jvm(spark, df, ev: Evaluation) -> tuple[list[bytes], str]:
    spec, why = jvm.evaluation_spec(ev)
    assert spec is not None, why
    q = df.agg(jvm.evaluation_column(spark, ev, spec).alias("s"))
    return jvm.unpack(q.collect()[0]["s"], len(ev.plan.state_types)), q._jdf.queryExecution().executedPlan().toString()


_CASES = [
    dict(label_col="y", score_col="p", metrics=["f1"]),
    dict(label_col="y", score_col="p", metrics=["example_count", "precision", "recall", "f1"], threshold=0.3),
    dict(label_col="y", score_col="p", metrics=["example_count"] + [f"recall@threshold={t}" for t in (0.0, 0.25, 0.5, 1.0)], threshold_rule=">"),
    dict(label_col="y", prediction_col="q", metrics=["f1", "accuracy", "example_count"]),
    dict(label_col="c", prediction_col="d", metrics=["accuracy", "f1@macro", "example_count"], num_classes=3),
]


def _frame(n: int = 3000) -> pd.DataFrame:
    rng = np.random.default_rng(26)
    p = rng.choice([0.0, -0.0, 0.25, 0.3, 0.5, 1.0, 1e-300, -3.5, 7.0], n) + rng.choice([0.0, 0.01], n)
    return pd.DataFrame({"y": rng.integers(0, 2, n), "p": p, "q": rng.integers(0, 2, n), "c": rng.integers(0, 3, n).astype(float), "d": rng.integers(0, 3, n)})


@pytest.mark.parametrize("case", range(len(_CASES)))
def test_count_kinds_fold_as_spark_sums_with_the_python_folds_bytes(jvm_spark, monkeypatch, case):
    pdf = _frame()
    ev = Evaluation(**_CASES[case])
    df = jvm_spark.createDataFrame(pdf, "y long, p double, q long, c double, d long").repartition(3)
    got, plan = _jvm(jvm_spark, df, ev)
    assert "partial_sum(" in plan and "StateAggregator" not in plan, plan  # Spark's own sums, no typed Aggregator
    assert got == _python_bytes(pdf, ev)
    monkeypatch.setattr(jvm, "NATIVE_COUNTS", False)  # the typed Aggregator: the same bytes
    got2, plan2 = _jvm(jvm_spark, df, ev)
    assert "StateAggregator" in plan2 and got2 == got


def test_groups_empty_input_and_sklearn_values(jvm_spark):
    pdf = _frame(1000)
    pdf["g"] = np.arange(len(pdf)) % 4
    df = jvm_spark.createDataFrame(pdf)
    args = dict(label_col="y", score_col="p")
    rows = df.groupBy("g").agg(metric_state_column(["f1", "precision"], **args)).collect()
    out = finish_metric_states(rows, ["f1", "precision"], **args)
    for r in out:
        part = pdf[pdf.g == r["g"]]
        assert r["f1"] == f1_score(part.y, part.p >= 0.5) and r["precision"] == precision_score(part.y, part.p >= 0.5)
    empty = df.limit(0).agg(metric_state_column(["f1"], **args)).collect()  # no rows: the zero states
    ev = Evaluation(metrics=["f1"], **args)
    assert jvm.unpack(empty[0]["mm_states"], len(ev.plan.state_types)) == _python_bytes(pdf.iloc[:0], ev)


def test_weighted_keeps_the_typed_aggregator(jvm_spark):
    pdf = _frame(200)
    ev = Evaluation(label_col="y", score_col="p", weight_col="c", metrics=["f1"])
    got, plan = _jvm(jvm_spark, jvm_spark.createDataFrame(pdf), ev)
    assert "StateAggregator" in plan and got == _python_bytes(pdf, ev)


@pytest.mark.parametrize(
    "schema,rows,match",
    [
        ("y long, p double", [(0, 0.1), (2, 0.2)], r"column 'y': invalid value 2.0 .*labels must be 0 or 1"),
        ("y double, p double", [(0.0, 0.1), (0.5, 0.2)], r"column 'y': invalid value 0.5 "),
        ("y long, p double", [(0, 0.1), (1, float("inf"))], r"column 'p': invalid value inf "),
        ("y long, p double", [(0, 0.1), (1, float("-inf"))], r"column 'p': invalid value -inf "),
        ("y long, p double", [(0, 0.1), (1, float("nan"))], r"column 'p': invalid value nan "),
        ("y double, p double", [(0.0, 0.1), (float("nan"), 0.2)], r"column 'y': invalid value nan "),
        ("y double, p double", [(0.0, 0.1), (-1.0, 0.2)], r"column 'y': invalid value -1.0 "),
        ("y long, p double", [(0, 0.1), (None, 0.3)], r"column 'y': invalid value null "),
        ("y string, p double", [("1", 0.1), ("x", 0.3)], r"column 'y': value 'x' in a row of this group is not a number"),
    ],
)
def test_invalid_values_raise_the_java_checks_error(jvm_spark, schema, rows, match):
    df = jvm_spark.createDataFrame(rows, schema)
    with pytest.raises(Exception, match=match):
        df.agg(metric_state_column(["f1"], label_col="y", score_col="p")).collect()


def test_a_string_label_column_of_numbers_folds(jvm_spark):
    pdf = pd.DataFrame({"y": ["1", "0", "1", "1"], "p": [0.9, 0.8, 0.1, 0.6]})
    rows = jvm_spark.createDataFrame(pdf).agg(metric_state_column(["f1"], label_col="y", score_col="p")).collect()
    assert finish_metric_states(rows, ["f1"], label_col="y", score_col="p")[0]["f1"] == f1_score([1, 0, 1, 1], [1, 1, 0, 1])


def test_the_cell_limit_keeps_the_typed_aggregator_beyond_it(jvm_spark):
    pdf = _frame(300)
    many = Evaluation(label_col="y", score_col="p", metrics=["example_count"] + [f"recall@threshold={t / 40}" for t in range(40)])
    got, plan = _jvm(jvm_spark, jvm_spark.createDataFrame(pdf), many)  # 2 x 41 cells > 64: the Aggregator
    assert "StateAggregator" in plan and got == _python_bytes(pdf, many)
    eight = Evaluation(label_col="c", prediction_col="d", metrics=["accuracy", "example_count"], num_classes=8)  # 64 cells: SQL sums
    got, plan = _jvm(jvm_spark, jvm_spark.createDataFrame(pdf), eight)
    assert "StateAggregator" not in plan and got == _python_bytes(pdf, eight)


def test_negative_zero_labels_and_predictions_are_class_zero(jvm_spark):
    rng = np.random.default_rng(6)
    n = 400
    y = rng.integers(0, 20, n).astype(float)
    y[::7] = -0.0
    q = rng.integers(0, 3, n).astype(float)
    q[::5] = -0.0
    pdf = pd.DataFrame({"y": y, "q": q, "b": np.where(np.arange(n) % 3 == 0, -0.0, (y > 9).astype(float))})
    df = jvm_spark.createDataFrame(pdf, "y double, q double, b double").repartition(2)
    for ev in (
        Evaluation(label_col="y", prediction_col="q", metrics=["example_count"], num_classes=20, task="multiclass"),  # 20 classes: no IN list
        Evaluation(label_col="q", prediction_col="q", metrics=["accuracy", "example_count"], num_classes=3),
        Evaluation(label_col="b", score_col="q", metrics=["f1", "example_count"]),
    ):
        got, plan = _jvm(jvm_spark, df, ev)
        assert "StateAggregator" not in plan and got == _python_bytes(pdf, ev)


def test_binary_confusion_lowers_to_one_comparison_per_sum(jvm_spark):
    """Issue 26 round 7: binary_confusion at T thresholds folds as 1 + 2T sums of one comparison each (rows of label
    1; per threshold, rows passing it and rows of label 1 passing it), not 2(T + 1) sums of a cell expression; the
    bytes stay core's, and the counts scikit-learn's."""
    from sklearn.metrics import confusion_matrix

    pdf = _frame(2000)
    df = jvm_spark.createDataFrame(pdf, "y long, p double, q long, c double, d long").repartition(3)
    for thresholds in ([0.5], [0.0, 0.25, 0.3, 1.0]):
        metrics = ["example_count"] + [f"recall@threshold={t}" for t in thresholds]
        ev = Evaluation(label_col="y", score_col="p", metrics=metrics)
        got, plan = _jvm(jvm_spark, df, ev)
        at = plan.index("partial_")
        partial = plan[at : plan.index("output=", at)]  # the partial aggregate's functions in the final plan
        assert partial.count("partial_sum(") == 1 + 2 * len(thresholds), plan
        assert got == _python_bytes(pdf, ev)
        state = next(s for s in (State.decode(b) for b in got) if s.kind == "binary_confusion")
        for j, t in enumerate(thresholds):
            tn, fp, fn, tp = confusion_matrix(pdf["y"], (pdf["p"] >= t).astype(int), labels=[0, 1]).ravel()
            assert (state["tp"][j], state["fp"][j], state["tn"][j], state["fn"][j]) == (tp, fp, tn, fn)
