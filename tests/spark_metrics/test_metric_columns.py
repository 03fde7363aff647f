"""mergeable_metrics.spark.metric_columns inside a user's own ``groupBy(...).agg(...)``: the same values as
compute_metrics (and scikit-learn) per group, partial aggregation before the shuffle, clear
errors for metrics that cannot lower and for invalid values."""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import f1_score, matthews_corrcoef, precision_score, recall_score

from mergeable_metrics import Evaluation
from mergeable_metrics.spark import collect_results, compute_metrics, metric_columns

pytestmark = pytest.mark.filterwarnings("ignore::mergeable_metrics.metrics.base.UndefinedMetricWarning")

METRICS = ["precision", "recall", "f1", "accuracy", "mcc", "balanced_accuracy", "example_count", "recall@threshold=0.7", "selection_rate", "fowlkes_mallows"]


def _frame(n: int = 800, seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    return pd.DataFrame({
        "y": y, "p": np.clip(0.3 * y + 0.7 * rng.random(n), 0, 1), "country": rng.choice(["DE", "FR", "IT"], n),
        "day": rng.integers(1, 4, n), "w": rng.integers(0, 4, n).astype(float),
        "k": rng.integers(0, 3, n), "kp": rng.integers(0, 3, n),
    })  # fmt: skip


def _rows(df, cols, groups):
    return {tuple(r[g] for g in groups): r.asDict() for r in df.groupBy(*groups).agg(*cols).collect()}


def _same(a, b) -> bool:
    return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))


@pytest.mark.parametrize("weighted", [False, True])
def test_group_by_agg_equals_compute_metrics(spark, weighted):
    pdf = _frame()
    df = spark.createDataFrame(pdf).repartition(3)
    w = "w" if weighted else None
    got = _rows(df, metric_columns(METRICS, label_col="y", score_col="p", weight_col=w), ["country", "day"])
    ev = Evaluation(label_col="y", score_col="p", weight_col=w, slices=["country,day"], metrics=METRICS)
    # unweighted: Spark's compute_metrics; weighted: core itself (compute_metrics equals it, tested elsewhere)
    want = ev.evaluate([pdf]) if weighted else collect_results(compute_metrics(df, evaluation=ev), ev)
    keys = [m.key for m in ev.plan.metrics]
    assert len(got) == 9
    for (country, day), row in got.items():
        ref = want[(("country", country), ("day", int(day)))].metrics
        for k in keys:
            assert _same(row[k], ref[k]), (country, day, k, row[k], ref[k])  # integer weights: bit for bit
        part = pdf[(pdf.country == country) & (pdf.day == day)]
        sw = None if w is None else part.w
        pred = (part.p >= 0.5).astype(int)
        assert row["precision"] == pytest.approx(precision_score(part.y, pred, sample_weight=sw), rel=1e-12)
        assert row["f1"] == pytest.approx(f1_score(part.y, pred, sample_weight=sw), rel=1e-12)
        assert row["recall@threshold=0.7"] == pytest.approx(recall_score(part.y, (part.p >= 0.7).astype(int), sample_weight=sw), rel=1e-12)
        assert row["mcc"] == pytest.approx(matthews_corrcoef(part.y, pred, sample_weight=sw), rel=1e-9)
        assert row["example_count"] == len(part) and isinstance(row["example_count"], int)


def test_multiclass_predictions_and_plain_columns_alongside(spark):
    from pyspark.sql import functions as F

    pdf = _frame()
    df = spark.createDataFrame(pdf).repartition(2)
    cols = metric_columns(["accuracy", "f1@macro", "precision@weighted", "cohen_kappa"], label_col="k", prediction_col="kp", num_classes=3)
    got = {r["country"]: r.asDict() for r in df.groupBy("country").agg(F.count("*").alias("rows"), *cols).collect()}
    for country, row in got.items():
        part = pdf[pdf.country == country]
        assert row["rows"] == len(part)
        assert row["accuracy"] == pytest.approx(float(np.mean(part.k == part.kp)), rel=1e-12)
        assert row["f1@macro"] == pytest.approx(f1_score(part.k, part.kp, average="macro"), rel=1e-12)
        assert row["precision@weighted"] == pytest.approx(precision_score(part.k, part.kp, average="weighted"), rel=1e-12)


def test_partial_aggregation_before_the_shuffle(spark):
    df = spark.createDataFrame(_frame(200)).repartition(2)
    out = df.groupBy("country").agg(*metric_columns(["precision", "recall", "f1"], label_col="y", score_col="p", engine="sql"))
    text = out._jdf.queryExecution().executedPlan().toString()
    assert "partial_sum" in text
    assert text.count("partial_sum") <= 4 * 2  # the cells' sums are shared by the three metrics, not repeated per metric
    # the JVM path: unweighted count kinds fold as Spark's own sums (issue 26 round 6), shared by the three metric
    # columns: the input check (one max), the row count (example_count's too) and binary_confusion's 1 + 2T sums at
    # T = 1 threshold (round 7: rows of label 1, rows passing 0.5, rows of label 1 passing it)
    out = df.groupBy("country").agg(*metric_columns(["precision", "recall", "f1"], label_col="y", score_col="p", engine="jvm", spark=spark))
    text = out._jdf.queryExecution().executedPlan().toString()
    assert text.count("partial_sum(") == 3 and text.count("partial_count(") == 1 and text.count("partial_max(") == 1, text
    assert "partial_mm_state_" not in text, text
    # weighted: one partial aggregate of the states (the typed Aggregator), shared by the three metric columns
    out = df.groupBy("country").agg(*metric_columns(["precision", "recall", "f1"], label_col="y", score_col="p", weight_col="p", engine="jvm", spark=spark))
    text = out._jdf.queryExecution().executedPlan().toString()
    assert text.count("partial_mm_state_") == 1, text


def test_metrics_that_cannot_lower_point_to_compute_metrics():
    for metrics, what in ((["f1", "roc_auc"], "roc_auc"), (["log_loss"], "log_loss"), (["best_threshold"], "best_threshold")):
        with pytest.raises(ValueError, match=f"{what}.*compute_metrics"):  # the SQL lowering (the JVM one folds them)
            metric_columns(metrics, label_col="y", score_col="p", engine="sql")
    with pytest.raises(ValueError, match="arrays.*compute_metrics"):
        metric_columns(["f1@none"], label_col="k", prediction_col="kp", num_classes=3)
    with pytest.raises(ValueError, match="slices.*compute_metrics"):
        metric_columns(["f1"], label_col="y", score_col="p", slices=["country"])
    with pytest.raises(ValueError, match="unknown metric"):
        metric_columns(["nosuch"], label_col="y", score_col="p")


def test_invalid_values_name_the_column_and_value(spark):
    pdf = _frame(100)
    pdf.loc[7, "p"] = float("nan")
    df = spark.createDataFrame(pdf).repartition(2)
    with pytest.raises(Exception, match=r"column 'p': invalid value null in (1 row|a row)"):  # pandas' NaN is a null in Spark
        df.groupBy("country").agg(*metric_columns(["precision"], label_col="y", score_col="p")).collect()
    pdf = _frame(100)
    pdf["y"] = pdf["y"].astype(float)
    pdf.loc[3, "y"] = 2.0
    with pytest.raises(Exception, match=r"column 'y': invalid value 2.0"):
        spark.createDataFrame(pdf).groupBy("day").agg(*metric_columns(["f1"], label_col="y", score_col="p")).collect()


@pytest.mark.parametrize("column", ["y", "p", "w"])
def test_a_value_that_does_not_cast_names_the_column_and_the_value(spark, column):
    # issue 28 item 22: text that is not a number used to raise Spark's raw CAST_INVALID_INPUT
    pdf = _frame(60)
    pdf[column] = pdf[column].astype(str)
    pdf.loc[5, column] = "abc"
    df = spark.createDataFrame(pdf)
    with pytest.raises(Exception) as e:
        df.groupBy("country").agg(*metric_columns(["precision"], label_col="y", score_col="p", weight_col="w")).collect()
    msg = str(e.value)
    # the SQL path counts the group's bad rows; the JVM aggregate stops at the first one
    assert re.search(rf"column {column!r}: value 'abc' in (1 row\(s\)|a row) of this group is not a number", msg), msg[-2000:]
    assert "CAST_INVALID_INPUT" not in msg
    # the numbers written as text still cast and give the numeric result (scikit-learn's precision)
    pdf.loc[5, column] = str(_frame(60)[column][5])
    got = {
        r["country"]: r["precision"]
        for r in spark.createDataFrame(pdf).groupBy("country").agg(*metric_columns(["precision"], label_col="y", score_col="p", weight_col="w")).collect()
    }
    ref = _frame(60)
    for c, g in ref.groupby("country"):
        assert got[c] == pytest.approx(precision_score(g["y"], g["p"] >= 0.5, sample_weight=g["w"], zero_division=np.nan), nan_ok=True)
