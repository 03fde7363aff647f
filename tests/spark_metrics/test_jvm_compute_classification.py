"""``compute_metrics`` folds classification plans with JVM ports on the JVM aggregates (issue 26, item 2: "uses the
JVM path by default where it applies"), not only regression: binary roc_auc / average_precision / f1 / log_loss
sliced by a column equal the local engine bit for bit and scikit-learn per slice; the groups' states are merged and
finished on the driver (the result is a local DataFrame: no second stage of Python tasks); an invalid label, a NaN
score, a probability out of [0, 1] or a negative weight is reported with the Arrow path's message (the same text,
naming the column, value, row and partition, and core's two-class hint); plans the native SQL path takes keep it."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import average_precision_score, f1_score, log_loss, roc_auc_score

from mergeable_metrics import Evaluation

pytestmark = pytest.mark.filterwarnings("ignore::mergeable_metrics.metrics.base.UndefinedMetricWarning")

METRICS = ["roc_auc", "average_precision", "f1", "log_loss", "example_count"]


def _bits(x: float) -> int:
    return int(np.float64(x).view(np.uint64))


def _frame(seed: int = 3, n: int = 3000) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    g = rng.choice(["a", "b", "c"], n)
    y = rng.integers(0, 2, n)
    p = np.clip(0.35 * y + rng.random(n) * 0.65, 0.0, 1.0)
    p[::7] = np.round(p[::7], 2)  # ties
    w = rng.choice([0.5, 1.0, 1.0, 2.0, 1 / 3, 0.0, 7.25], n)
    return pd.DataFrame({"g": g, "y": y.astype(np.int64), "p": p, "w": w})


def _spy(monkeypatch) -> list:
    from mergeable_metrics.spark import jvm_path

    taken: list = []
    real = jvm_path.compute_jvm
    monkeypatch.setattr(jvm_path, "compute_jvm", lambda *a: taken.append(1) or real(*a))
    return taken


@pytest.mark.parametrize("weight_col,layout", [(None, "wide"), ("w", "long")])
def test_compute_metrics_binary_folds_in_the_jvm_and_equals_the_local_engine_and_sklearn(jvm_spark, monkeypatch, weight_col, layout):
    from mergeable_metrics.spark import collect_results, compute_metrics

    pdf = _frame()
    ev = Evaluation(label_col="y", score_col="p", weight_col=weight_col, metrics=METRICS, slices=["g"])
    taken = _spy(monkeypatch)
    df = jvm_spark.createDataFrame(pdf).repartition(3)
    result = compute_metrics(df, evaluation=ev, layout=layout)
    assert taken == [1]
    plan = result._jdf.queryExecution().analyzed().toString()
    assert "LocalRelation" in plan and "Python" not in plan and "Arrow" not in plan, plan[:2000]  # merged and finished on the driver
    got = collect_results(result, ev)
    want = ev.evaluate([pdf])
    arrow = collect_results(compute_metrics(df, evaluation=ev, native=False, layout=layout), ev)
    assert taken == [1]  # native=False: the Arrow path
    for other in (want, arrow):
        assert [s.key for s in got] == [s.key for s in other]
        for a, b in zip(got, other):
            assert a.n == b.n and _bits(a.weight) == _bits(b.weight) and sorted(a.metrics) == sorted(b.metrics)
            for k in a.metrics:
                assert _bits(a.metrics[k]) == _bits(b.metrics[k]), (a.key, k)
    for name in ("a", "b", "c"):
        part = pdf[pdf.g == name]
        sw = None if weight_col is None else part.w
        m = got[(("g", name),)].metrics
        assert m["roc_auc"] == pytest.approx(roc_auc_score(part.y, part.p, sample_weight=sw), rel=1e-12)
        assert m["average_precision"] == pytest.approx(average_precision_score(part.y, part.p, sample_weight=sw), rel=1e-12)
        assert m["f1"] == pytest.approx(f1_score(part.y, part.p >= 0.5, sample_weight=sw), rel=1e-12)
        assert m["log_loss"] == pytest.approx(log_loss(part.y, part.p, sample_weight=sw, labels=[0, 1]), rel=1e-12)
        assert m["example_count"] == len(part)
    assert got[()].metrics["roc_auc"] == pytest.approx(roc_auc_score(pdf.y, pdf.p, sample_weight=None if weight_col is None else pdf.w), rel=1e-12)
    empty = jvm_spark.createDataFrame(pdf.iloc[:0], "g string, y long, p double, w double")
    none = collect_results(compute_metrics(empty, evaluation=ev), ev)
    assert taken == [1, 1]
    assert len(none) == 1 and none[()].n == 0 and math.isnan(none[()].metrics["roc_auc"]) and none[()].metrics["example_count"] == 0


def test_compute_metrics_count_plans_keep_the_native_sql_path(jvm_spark, monkeypatch):
    """Plans the native SQL path takes (counts and confusion states only) keep it: it is checked first."""
    from mergeable_metrics.spark import collect_results, compute_metrics

    rng = np.random.default_rng(11)
    n = 1500
    pdf = pd.DataFrame({"g": rng.choice(["x", "y"], n), "t": rng.integers(0, 3, n), "q": rng.integers(0, 3, n)})
    ev = Evaluation(label_col="t", prediction_col="q", task="multiclass", num_classes=3, metrics=["f1@macro", "accuracy"], slices=["g"])
    taken = _spy(monkeypatch)
    df = jvm_spark.createDataFrame(pdf).repartition(2)
    got = collect_results(compute_metrics(df, evaluation=ev), ev)
    assert taken == []  # counts only: the native SQL path
    want = ev.evaluate([pdf])
    for a, b in zip(got, want):
        assert a.key == b.key and _bits(a.metrics["f1@macro"]) == _bits(b.metrics["f1@macro"])
    part = pdf[pdf.g == "x"]
    assert got[(("g", "x"),)].metrics["f1@macro"] == pytest.approx(f1_score(part.t, part.q, average="macro"), rel=1e-12)


def _error_text(run) -> str:
    with pytest.raises(Exception) as info:
        run()
    text = str(info.value)
    start = text.index("column '")
    end = text.index("rows are counted from 0 within the partition]", start)
    return text[start:end]


@pytest.mark.parametrize(
    "column,value,rule",
    [
        ("y", float("nan"), "labels must be 0 or 1"),
        ("y", 0.5, "labels must be 0 or 1"),
        ("y", None, "labels must be 0 or 1"),
        ("p", float("nan"), "scores must be finite (no NaN or inf)"),
        ("p", float("inf"), "scores must be finite (no NaN or inf)"),
        ("p", 1.5, "probabilities must be in [0, 1]"),
        ("p", -0.25, "probabilities must be in [0, 1]"),
        ("w", -2.0, "weights must be finite and >= 0"),
        ("w", float("nan"), "weights must be finite and >= 0"),
    ],
)
def test_compute_metrics_binary_invalid_value_has_the_arrow_paths_message(jvm_spark, monkeypatch, column, value, rule):
    """The JVM job's check finds the invalid value (column and value only); compute_metrics then returns the Arrow
    path's DataFrame, whose action raises naming the column, the value, the row within its partition and the
    partition: the very text of native=False."""
    from mergeable_metrics.spark import collect_results, compute_metrics

    pdf = _frame(n=200)
    rows = [[r.g, float(r.y), float(r.p), float(r.w)] for r in pdf.itertuples(index=False)]
    rows[41][["g", "y", "p", "w"].index(column)] = value  # a real NaN (pandas through Arrow would make it a null)
    df = jvm_spark.createDataFrame(rows, "g string, y double, p double, w double").coalesce(1)
    ev = Evaluation(label_col="y", score_col="p", weight_col="w", metrics=METRICS, slices=["g"])
    taken = _spy(monkeypatch)
    jvm_text = _error_text(lambda: collect_results(compute_metrics(df, evaluation=ev), ev))
    assert taken == [1]
    arrow_text = _error_text(lambda: collect_results(compute_metrics(df, evaluation=ev, native=False), ev))
    assert jvm_text == arrow_text
    assert jvm_text.startswith(f"column '{column}': invalid value ")
    assert f" at row 41: {rule}" in jvm_text and "[Spark partition 0;" in jvm_text


def test_compute_metrics_binary_integer_label_gets_the_two_class_hint(jvm_spark, monkeypatch):
    """An invalid label that is a class id (2 among 0/1) gets core's hint (task='multiclass', num_classes=3) on the
    Arrow path; compute_metrics (native=None) tries the JVM path first and gives the same text, hint included."""
    from mergeable_metrics.spark import collect_results, compute_metrics

    pdf = _frame(n=200)
    rows = [[r.g, float(r.y), float(r.p), float(r.w)] for r in pdf.itertuples(index=False)]
    rows[41][1] = 2.0
    df = jvm_spark.createDataFrame(rows, "g string, y double, p double, w double").coalesce(1)
    ev = Evaluation(label_col="y", score_col="p", weight_col="w", metrics=METRICS, slices=["g"])
    with pytest.raises(ValueError) as info:
        ev.evaluate([pd.DataFrame(rows, columns=["g", "y", "p", "w"])])  # the local engine: one batch, row 41
    local = str(info.value)
    assert "num_classes=3" in local
    arrow_text = _error_text(lambda: collect_results(compute_metrics(df, evaluation=ev, native=False), ev))
    assert arrow_text.startswith(local + " [Spark partition 0;")  # core's hint, as the local engine gives it
    taken = _spy(monkeypatch)
    assert _error_text(lambda: collect_results(compute_metrics(df, evaluation=ev), ev)) == arrow_text
    assert taken == [1]  # the JVM path was tried first


def test_compute_metrics_weighted_multiclass_predictions_fold_in_the_jvm(jvm_spark, monkeypatch):
    """A weighted multiclass plan of predictions (not the native SQL path's by default: weights) folds on the JVM
    aggregates, equal to the local engine bit for bit and scikit-learn; an invalid prediction gets the Arrow path's
    message."""
    from mergeable_metrics.spark import collect_results, compute_metrics

    rng = np.random.default_rng(11)
    n = 1500
    pdf = pd.DataFrame({"g": rng.choice(["x", "y"], n), "t": rng.integers(0, 3, n), "q": rng.integers(0, 3, n), "w": rng.choice([0.5, 1.0, 1 / 3, 2.0], n)})
    ev = Evaluation(label_col="t", prediction_col="q", weight_col="w", task="multiclass", num_classes=3, metrics=["f1@macro", "accuracy"], slices=["g"])
    taken = _spy(monkeypatch)
    df = jvm_spark.createDataFrame(pdf).repartition(2)
    got = collect_results(compute_metrics(df, evaluation=ev), ev)
    assert taken == [1]
    want = ev.evaluate([pdf])
    assert [s.key for s in got] == [s.key for s in want]
    for a, b in zip(got, want):
        for k in ("f1@macro", "accuracy"):
            assert _bits(a.metrics[k]) == _bits(b.metrics[k]), (a.key, k)
    part = pdf[pdf.g == "x"]
    assert got[(("g", "x"),)].metrics["f1@macro"] == pytest.approx(f1_score(part.t, part.q, average="macro", sample_weight=part.w), rel=1e-12)
    rows = [[r.g, int(r.t), int(r.q), float(r.w)] for r in pdf.iloc[:100].itertuples(index=False)]
    rows[17][2] = 3
    bad = jvm_spark.createDataFrame(rows, "g string, t long, q long, w double").coalesce(1)
    jvm_text = _error_text(lambda: collect_results(compute_metrics(bad, evaluation=ev), ev))
    assert taken == [1, 1]
    assert jvm_text == _error_text(lambda: collect_results(compute_metrics(bad, evaluation=ev, native=False), ev))
    assert jvm_text.startswith("column 'q': invalid value 3.0 at row 17: predictions must be integers in [0, 3)")


def test_compute_metrics_multiclass_score_rows_fold_in_the_jvm(jvm_spark, monkeypatch):
    """Score rows (array<double> of K class probabilities per row) take the JVM path of compute_metrics too (they
    kept the Arrow path while the lazy JVM path checked values in a projection): roc_auc (one-vs-rest and one-vs-one) and
    average_precision per slice equal the local engine bit for bit and scikit-learn; an invalid row (a NaN entry)
    gives the Arrow path's message text (column, value, row, entry, partition)."""
    from pyspark.sql import types as T
    from sklearn.preprocessing import label_binarize

    from mergeable_metrics.spark import collect_results, compute_metrics

    rng = np.random.default_rng(5)
    n, k = 1200, 3
    p = rng.dirichlet(np.ones(k), size=n)
    p[::5, :2] = np.round(p[::5, :2], 1)  # ties, rows still summing to 1 within scikit-learn's check
    p[::5, 2] = 1.0 - p[::5, 0] - p[::5, 1]
    p = np.clip(p, 0.0, 1.0)
    pdf = pd.DataFrame({"g": rng.choice(["a", "b"], n), "y": rng.integers(0, k, n), "p": list(p), "w": rng.choice([0.5, 1.0, 2.0, 1 / 3], n)})
    metrics = ["roc_auc", "average_precision@macro", "roc_auc@multi_class=ovo", "example_count"]
    ev = Evaluation(label_col="y", score_col="p", weight_col="w", task="multiclass", num_classes=k, metrics=metrics, slices=["g"])
    taken = _spy(monkeypatch)
    schema = T.StructType(
        [
            T.StructField("g", T.StringType()),
            T.StructField("y", T.LongType()),
            T.StructField("p", T.ArrayType(T.DoubleType())),
            T.StructField("w", T.DoubleType()),
        ]
    )
    rows = [[r.g, int(r.y), [float(x) for x in r.p], float(r.w)] for r in pdf.itertuples(index=False)]
    df = jvm_spark.createDataFrame(rows, schema).repartition(3)
    got = collect_results(compute_metrics(df, evaluation=ev), ev)
    assert taken == [1]
    want = ev.evaluate([pdf])
    assert [s.key for s in got] == [s.key for s in want]
    for a, b in zip(got, want):
        assert a.n == b.n and _bits(a.weight) == _bits(b.weight)
        for key in [m.key for m in ev.plan.metrics]:
            assert _bits(a.metrics[key]) == _bits(b.metrics[key]), (a.key, key)
    part = pdf[pdf.g == "a"]
    scores = np.stack(part.p.to_numpy())
    m = got[(("g", "a"),)].metrics
    assert m["roc_auc"] == pytest.approx(roc_auc_score(part.y, scores, multi_class="ovr", sample_weight=part.w), rel=1e-12)
    assert m["average_precision@macro"] == pytest.approx(
        average_precision_score(label_binarize(part.y, classes=range(k)), scores, average="macro", sample_weight=part.w), rel=1e-12
    )
    bad_rows = [list(r) for r in rows[:100]]
    bad_rows[23][2] = [0.2, float("nan"), 0.8]
    bad = jvm_spark.createDataFrame(bad_rows, schema).coalesce(1)
    jvm_text = _error_text(lambda: collect_results(compute_metrics(bad, evaluation=ev), ev))
    assert taken == [1, 1]
    assert jvm_text == _error_text(lambda: collect_results(compute_metrics(bad, evaluation=ev, native=False), ev))
    assert jvm_text.startswith("column 'p': invalid value nan at row 23, entry 1: scores must be finite")
