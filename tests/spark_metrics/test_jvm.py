"""The JVM path (mergeable_metrics.spark.jvm): Java aggregates fold core's own states, byte for byte the
Python fold's encoding, in any partitioning; metric_columns backed by them equals the local engine."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.metrics import accuracy_score, f1_score, precision_score, recall_score

from mergeable_metrics import Evaluation
from mergeable_metrics.spark import finish_metric_states, jvm, metric_columns, metric_state_column

pytestmark = pytest.mark.filterwarnings("ignore::mergeable_metrics.metrics.base.UndefinedMetricWarning")


def _jvm_bytes(spark, pdf: pd.DataFrame, ev: Evaluation, partitions: int) -> list[bytes]:
    spec, why = jvm.evaluation_spec(ev)
    assert spec is not None, why
    schema = ", ".join(f"{c} {'double' if pdf[c].dtype.kind == 'f' else 'long'}" for c in pdf.columns)
    df = spark.createDataFrame(pdf, schema).repartition(partitions)
    data = df.agg(jvm.evaluation_column(spark, ev, spec).alias("s")).collect()[0]["s"]
    return jvm.unpack(data, len(ev.plan.state_types))


def _python_bytes(pdf: pd.DataFrame, ev: Evaluation) -> list[bytes]:
    acc = ev.fold(ev.zero(), {c: pdf[c].to_numpy() for c in pdf.columns})
    return [s.encode() for s in acc.states(())]


_SCORES = st.sampled_from([0.0, -0.0, 0.25, 0.5, 0.5, 0.75, 1.0, 1e-300, -3.5, 7.0])  # ties, -0.0, thresholds themselves


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    rows=st.lists(st.tuples(st.integers(0, 1), _SCORES | st.floats(-2, 2, allow_nan=False)), min_size=0, max_size=60),
    thresholds=st.lists(st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0, 0.3]), min_size=1, max_size=4, unique=True),
    rule=st.sampled_from([">=", ">"]),
    partitions=st.integers(1, 5),
)
def test_binary_confusion_bytes_equal_the_python_fold(jvm_spark, rows, thresholds, rule, partitions):
    pdf = pd.DataFrame(rows or [(0, 0.0)], columns=["y", "p"]).iloc[: len(rows)].astype({"y": "int64", "p": "float64"})
    metrics = ["example_count"] + [f"recall@threshold={t}" for t in thresholds]
    ev = Evaluation(label_col="y", score_col="p", metrics=metrics, threshold_rule=rule)
    assert _jvm_bytes(jvm_spark, pdf, ev, partitions) == _python_bytes(pdf, ev)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    k=st.integers(2, 6),
    data=st.data(),
    partitions=st.integers(1, 5),
)
def test_confusion_matrix_bytes_equal_the_python_fold(jvm_spark, k, data, partitions):
    n = data.draw(st.integers(0, 50))
    y = data.draw(st.lists(st.integers(0, k - 1), min_size=n, max_size=n))
    q = data.draw(st.lists(st.integers(0, k - 1), min_size=n, max_size=n))
    pdf = pd.DataFrame({"y": np.array(y, dtype=np.int64), "q": np.array(q, dtype=np.int64)})
    ev = Evaluation(label_col="y", prediction_col="q", metrics=["accuracy", "f1@macro", "example_count"], num_classes=k)
    assert _jvm_bytes(jvm_spark, pdf, ev, partitions) == _python_bytes(pdf, ev)


def test_binary_predictions_bytes_equal_the_python_fold(jvm_spark):
    rng = np.random.default_rng(3)
    pdf = pd.DataFrame({"y": rng.integers(0, 2, 500), "q": rng.integers(0, 2, 500)})
    ev = Evaluation(label_col="y", prediction_col="q", metrics=["f1", "accuracy", "example_count"])
    for parts in (1, 3, 7):
        assert _jvm_bytes(jvm_spark, pdf, ev, parts) == _python_bytes(pdf, ev)


@pytest.mark.parametrize(
    "column,value,rows",
    [("y", "2.0", [(0, 0.1), (2, 0.2)]), ("p", "nan", [(0, 0.1), (1, float("nan"))]), ("p", "null", [(0, 0.1), (1, None)]), ("y", "null", [(None, 0.1)])],
)
def test_invalid_values_raise_naming_the_column_and_value(jvm_spark, column, value, rows):
    df = jvm_spark.createDataFrame(rows, "y long, p double")
    with pytest.raises(Exception, match=f"column '{column}': invalid value {value}"):
        df.agg(*metric_columns(["f1"], label_col="y", score_col="p", engine="jvm")).collect()


def test_metric_columns_jvm_equals_local_engine_and_sklearn(jvm_spark):
    rng = np.random.default_rng(1)
    n = 3000
    y = rng.integers(0, 2, n)
    pdf = pd.DataFrame({"y": y, "p": np.clip(0.3 * y + 0.7 * rng.random(n), 0, 1), "g": rng.choice(["a", "b", "c"], n)})
    metrics = ["precision", "recall", "f1", "accuracy", "mcc", "example_count", "recall@threshold=0.7"]
    df = jvm_spark.createDataFrame(pdf).repartition(4)
    cols = metric_columns(metrics, label_col="y", score_col="p", engine="jvm")
    got = {r["g"]: r.asDict() for r in df.groupBy("g").agg(*cols).collect()}
    want = Evaluation(label_col="y", score_col="p", metrics=metrics, slices=["g"]).evaluate([pdf])
    for g, row in got.items():
        ref = want[(("g", g),)].metrics
        for k in ref:
            assert row[k] == ref[k] or (math.isnan(row[k]) and math.isnan(ref[k])), (g, k)
        part = pdf[pdf.g == g]
        pred = (part.p >= 0.5).astype(int)
        assert row["f1"] == pytest.approx(f1_score(part.y, pred), rel=1e-12)
        assert row["precision"] == pytest.approx(precision_score(part.y, pred), rel=1e-12)
        assert row["recall@threshold=0.7"] == pytest.approx(recall_score(part.y, part.p >= 0.7), rel=1e-12)
        assert row["example_count"] == len(part)
    # the same through the driver-side finish (no Python on the executors)
    rows = df.groupBy("g").agg(metric_state_column(metrics, label_col="y", score_col="p")).collect()
    for r in finish_metric_states(rows, metrics, label_col="y", score_col="p"):
        assert r["f1"] == got[r["g"]]["f1"] and r["accuracy"] == pytest.approx(accuracy_score(pdf[pdf.g == r["g"]].y, pdf[pdf.g == r["g"]].p >= 0.5), rel=1e-12)


def test_sql_name_usable_from_sql(jvm_spark):
    ev = Evaluation(label_col="y", score_col="p", metrics=["f1"])
    spec, _ = jvm.evaluation_spec(ev)
    jvm.register(jvm_spark, "mm_test_f1_states", spec)
    jvm_spark.createDataFrame(pd.DataFrame({"y": [1, 0, 1], "p": [0.9, 0.8, 0.1]})).createOrReplaceTempView("jvm_t")
    data = jvm_spark.sql("SELECT mm_test_f1_states(cast(y as double), p) AS s FROM jvm_t").collect()[0]["s"]
    (conf,) = [s for s in jvm.decode_states(ev, data) if s.kind == "binary_confusion"]
    assert conf.counts(0.5) == (1.0, 1.0, 0.0, 1.0)  # tp, fp, tn, fn by hand


_WEIGHTS = st.sampled_from([0.0, 1.0, 2.0, 0.5, 0.1, 1 / 3, 5e-324, 1e-300, 1e300, 3.0]) | st.floats(0, 1e6)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    rows=st.lists(st.tuples(st.integers(0, 1), _SCORES, st.integers(0, 2), _WEIGHTS), min_size=1, max_size=50),
    partitions=st.integers(1, 5),
)
def test_weighted_count_kinds_bytes_equal_the_python_fold(jvm_spark, rows, partitions):
    """Weights 0, tiny, huge and fractional: binary confusion, K x K matrix and example counts folded in
    the JVM write core's bytes (exact weight sums per cell)."""
    pdf = pd.DataFrame(rows, columns=["y", "p", "k", "w"]).astype({"y": "int64", "p": "float64", "k": "int64", "w": "float64"})
    ev = Evaluation(label_col="y", score_col="p", weight_col="w", metrics=["example_count", "f1", "recall@threshold=0.25", "roc_auc"])
    assert _jvm_bytes(jvm_spark, pdf, ev, partitions) == _python_bytes(pdf, ev)
    mc = Evaluation(label_col="y", prediction_col="k", weight_col="w", metrics=["accuracy", "f1@macro", "example_count"], num_classes=3)
    assert _jvm_bytes(jvm_spark, pdf, mc, partitions) == _python_bytes(pdf, mc)


def test_weighted_metric_columns_equal_the_local_engine_and_sklearn(jvm_spark):
    rng = np.random.default_rng(5)
    n = 2000
    y = rng.integers(0, 2, n)
    w = rng.choice([0.0, 0.1, 1.0, 2.5, 1e-300, 1 / 3], n)
    pdf = pd.DataFrame({"y": y, "p": np.round(np.clip(0.3 * y + 0.7 * rng.random(n), 0, 1), 2), "w": w, "g": rng.choice(["a", "b"], n)})
    metrics = ["precision", "recall", "f1", "accuracy", "example_count", "roc_auc", "log_loss"]
    assert jvm.evaluation_spec(Evaluation(label_col="y", score_col="p", weight_col="w", metrics=metrics))[0] is not None
    df = jvm_spark.createDataFrame(pdf).repartition(3)
    rows = df.groupBy("g").agg(metric_state_column(metrics, label_col="y", score_col="p", weight_col="w")).collect()
    want = Evaluation(label_col="y", score_col="p", weight_col="w", metrics=metrics, slices=["g"]).evaluate([pdf])
    for r in finish_metric_states(rows, metrics, label_col="y", score_col="p", weight_col="w"):
        ref = want[(("g", r["g"]),)].metrics
        assert all(r[k] == ref[k] for k in metrics), (r, ref)
        part = pdf[pdf.g == r["g"]]
        assert r["f1"] == pytest.approx(f1_score(part.y, part.p >= 0.5, sample_weight=part.w), rel=1e-12)


def test_float_kinds_in_group_by_agg_equal_the_local_engine(jvm_spark):
    """roc_auc, average_precision and log_loss (score distribution and probability sums, folded in Java)
    with f1, per carrier: exactly the local engine's values, and scikit-learn's."""
    from sklearn.metrics import average_precision_score, log_loss, roc_auc_score

    rng = np.random.default_rng(7)
    n = 4000
    y = rng.integers(0, 2, n)
    p = np.round(np.clip(0.35 * y + 0.65 * rng.random(n), 0, 1), 3)  # ties
    pdf = pd.DataFrame({"y": y, "p": p, "carrier": rng.choice(["AA", "B6", "DL", "UA"], n)})
    metrics = ["roc_auc", "average_precision", "f1", "log_loss"]
    assert jvm.evaluation_spec(Evaluation(label_col="y", score_col="p", metrics=metrics))[0] is not None
    df = jvm_spark.createDataFrame(pdf).repartition(5)
    got = {r["carrier"]: r.asDict() for r in df.groupBy("carrier").agg(*metric_columns(metrics, label_col="y", score_col="p", engine="jvm")).collect()}
    want = Evaluation(label_col="y", score_col="p", metrics=metrics, slices=["carrier"]).evaluate([pdf])
    assert sorted(got) == ["AA", "B6", "DL", "UA"]
    for c, row in got.items():
        ref = want[(("carrier", c),)].metrics
        assert all(row[k] == ref[k] for k in metrics), (c, row, ref)
        part = pdf[pdf.carrier == c]
        assert row["roc_auc"] == pytest.approx(roc_auc_score(part.y, part.p), rel=1e-12)
        assert row["average_precision"] == pytest.approx(average_precision_score(part.y, part.p), rel=1e-12)
        assert row["log_loss"] == pytest.approx(log_loss(part.y, part.p), rel=1e-9)


def test_probability_rule_is_checked(jvm_spark):
    df = jvm_spark.createDataFrame([(1, 1.5), (0, 0.2)], "y long, p double")
    with pytest.raises(Exception, match=r"column 'p': invalid value 1.5 .*probabilities must be in \[0, 1\]"):
        df.agg(*metric_columns(["log_loss"], label_col="y", score_col="p", engine="jvm")).collect()


def test_metric_columns_finish_in_the_jvm_share_one_aggregate(jvm_spark):
    pdf = pd.DataFrame({"y": [1, 0, 1, 1, 0, 0], "p": [0.9, 0.8, 0.1, 0.6, 0.2, 0.4], "g": ["a", "a", "a", "b", "b", "b"]})
    df = jvm_spark.createDataFrame(pdf)
    metrics = ["example_count", "precision", "recall", "f1", "roc_auc", "mcc"]
    q = df.groupBy("g").agg(*metric_columns(metrics, label_col="y", score_col="p", engine="jvm"))
    plan = q._jdf.queryExecution().executedPlan().toString()
    # partial + final of ONE aggregate, read by every value column; only mcc's finish runs in Python
    assert plan.count("partial_mm_state_") == 1 and plan.count("mergeablemetrics.StateAggregator@") == 2, plan
    assert plan.count("EvalPython [") == 1 and plan.count("finish(") == 1, plan
    got = {r["g"]: r for r in q.collect()}
    part = pdf[pdf.g == "a"]
    assert got["a"]["f1"] == f1_score(part.y, part.p >= 0.5) and got["a"]["example_count"] == 3
    assert got["b"]["precision"] == precision_score(pdf[pdf.g == "b"].y, pdf[pdf.g == "b"].p >= 0.5)


def test_register_sql_functions(jvm_spark):
    from mergeable_metrics.spark import register_sql_functions
    from mergeable_metrics.spark.jvm_finish import finish_sql_state
    from sklearn.metrics import roc_auc_score

    names = register_sql_functions(jvm_spark)
    assert {"mm_f1", "mm_precision", "mm_recall", "mm_accuracy", "mm_roc_auc_state"} <= set(names)
    pdf = pd.DataFrame({"y": [1, 0, 1, 1, 0, 0, 1], "p": [0.9, 0.8, 0.1, 0.6, 0.2, 0.4, 0.7], "g": list("aaabbbb")})
    jvm_spark.createDataFrame(pdf).createOrReplaceTempView("mm_sql_t")
    rows = jvm_spark.sql(
        "SELECT g, mm_f1(y, p) AS f1, mm_precision(y, p) AS p, mm_recall(y, p) AS r, mm_accuracy(y, p) AS acc, "
        "mm_roc_auc_state(y, p) AS auc FROM mm_sql_t GROUP BY g"
    ).collect()
    for r in rows:
        part = pdf[pdf.g == r["g"]]
        pred = part.p >= 0.5
        assert (r["f1"], r["p"], r["r"]) == (f1_score(part.y, pred), precision_score(part.y, pred), recall_score(part.y, pred))
        assert r["acc"] == accuracy_score(part.y, pred)
        assert finish_sql_state("mm_roc_auc_state", r["auc"]) == pytest.approx(roc_auc_score(part.y, part.p), rel=1e-15)
