"""SQL value functions mm_roc_auc, mm_average_precision, mm_log_loss, mm_brier_score (and the count ones) with
and without a weight, per group: scikit-learn's values and the local engine's bit for bit; metric_columns
finishes these metrics in Java (no Python UDF in the plan)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import average_precision_score, brier_score_loss, f1_score, log_loss, roc_auc_score

from mergeable_metrics import Evaluation
from mergeable_metrics.spark import metric_columns, register_sql_functions

pytestmark = pytest.mark.filterwarnings("ignore::mergeable_metrics.metrics.base.UndefinedMetricWarning")

CARRIERS = ["AA", "B6", "DL", "UA", "WN", "ZZ"]
FLOAT_METRICS = ["roc_auc", "average_precision", "log_loss", "brier_score"]


def _frame(seed: int = 17, n: int = 6000) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    c = rng.choice(CARRIERS[:-1], n)
    y = rng.integers(0, 2, n)
    p = np.where(rng.random(n) < 0.5, np.round(np.clip(0.3 * y + 0.7 * rng.random(n), 0, 1), 3), rng.random(n))  # ties and not
    w = rng.choice([0.5, 1.0, 1.0, 2.0, 1 / 3], n)
    pdf = pd.DataFrame({"carrier": c, "y": y, "p": p, "w": w})
    # a carrier with one class only: roc_auc undefined (NaN), average_precision 0.0
    return pd.concat([pdf, pd.DataFrame({"carrier": ["ZZ"] * 3, "y": [0, 0, 0], "p": [0.2, 0.4, 0.9], "w": [1.0, 2.0, 1.0]})], ignore_index=True)


def _same(a: float, b: float) -> bool:
    return np.float64(a).view(np.uint64) == np.float64(b).view(np.uint64)


@pytest.mark.parametrize("weighted", [False, True])
def test_sql_value_functions_per_group_equal_sklearn_and_the_local_engine(jvm_spark, weighted):
    names = register_sql_functions(jvm_spark)
    assert {"mm_roc_auc", "mm_average_precision", "mm_log_loss", "mm_brier_score", "mm_f1", "mm_roc_auc_state"} <= set(names)
    pdf = _frame()
    jvm_spark.createDataFrame(pdf).repartition(4).createOrReplaceTempView("mm_rank_t")
    w = ", w" if weighted else ""
    rows = jvm_spark.sql(
        f"SELECT carrier, mm_roc_auc(y, p{w}) AS roc_auc, mm_average_precision(y, p{w}) AS average_precision, "
        f"mm_log_loss(y, p{w}) AS log_loss, mm_brier_score(y, p{w}) AS brier_score, mm_f1(y, p{w}) AS f1 "
        "FROM mm_rank_t GROUP BY carrier"
    ).collect()
    got = {r["carrier"]: r.asDict() for r in rows}
    assert sorted(got) == CARRIERS
    ev = Evaluation(label_col="y", score_col="p", metrics=FLOAT_METRICS + ["f1"], slices=["carrier"], weight_col="w" if weighted else None)
    want = ev.evaluate([pdf])
    for c, row in got.items():
        ref = want[(("carrier", c),)].metrics
        for k in FLOAT_METRICS + ["f1"]:
            assert _same(row[k], ref[k]), (c, k, row[k], ref[k])
        part = pdf[pdf.carrier == c]
        sw = part.w if weighted else None
        if c == "ZZ":
            assert np.isnan(row["roc_auc"]) and row["average_precision"] == 0.0
        else:
            assert row["roc_auc"] == pytest.approx(roc_auc_score(part.y, part.p, sample_weight=sw), rel=1e-13)
            assert row["average_precision"] == pytest.approx(average_precision_score(part.y, part.p, sample_weight=sw), rel=1e-13)
        assert row["log_loss"] == pytest.approx(log_loss(part.y, part.p, sample_weight=sw, labels=[0, 1]), rel=1e-12)
        assert row["brier_score"] == pytest.approx(brier_score_loss(part.y, part.p, sample_weight=sw, pos_label=1), rel=1e-12)
        assert row["f1"] == pytest.approx(f1_score(part.y, part.p >= 0.5, sample_weight=sw, zero_division=0), rel=1e-13)


def test_sql_value_function_arity_and_invalid_values(jvm_spark):
    register_sql_functions(jvm_spark)
    jvm_spark.createDataFrame(pd.DataFrame({"y": [1, 0], "p": [0.9, 1.5]})).createOrReplaceTempView("mm_rank_bad")
    with pytest.raises(Exception, match="mm_roc_auc takes"):
        jvm_spark.sql("SELECT mm_roc_auc(y) FROM mm_rank_bad").collect()
    with pytest.raises(Exception, match=r"probabilities must be in \[0, 1\]"):
        jvm_spark.sql("SELECT mm_log_loss(y, p) FROM mm_rank_bad").collect()
    got = jvm_spark.sql("SELECT mm_roc_auc(y, p) AS a FROM mm_rank_bad").collect()[0]["a"]  # any finite score ranks
    assert got == roc_auc_score([1, 0], [0.9, 1.5]) == 0.0


@pytest.mark.parametrize("weighted", [False, True])
def test_metric_columns_finish_ranking_and_probability_metrics_in_java(jvm_spark, weighted):
    pdf = _frame(seed=29, n=3000)
    df = jvm_spark.createDataFrame(pdf).repartition(3)
    wc = "w" if weighted else None
    q = df.groupBy("carrier").agg(*metric_columns(FLOAT_METRICS, label_col="y", score_col="p", weight_col=wc, engine="jvm"))
    plan = q._jdf.queryExecution().executedPlan().toString()
    assert "EvalPython" not in plan and "BatchEvalPython" not in plan, plan  # no Python on the executors
    analyzed = q._jdf.queryExecution().analyzed().toString()
    assert analyzed.count("mm_metric(") == len(FLOAT_METRICS) and "finish(" not in analyzed, analyzed  # the Java finish, per metric
    want = Evaluation(label_col="y", score_col="p", metrics=FLOAT_METRICS, slices=["carrier"], weight_col=wc).evaluate([pdf])
    rows = q.collect()
    assert sorted(r["carrier"] for r in rows) == CARRIERS
    for r in rows:
        ref = want[(("carrier", r["carrier"]),)].metrics
        for k in FLOAT_METRICS:
            assert _same(r[k], ref[k]), (r["carrier"], k, r[k], ref[k])
