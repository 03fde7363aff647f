"""Multiclass ``roc_auc`` / ``average_precision`` (one-vs-rest and one-vs-one) from an ``array<double>`` column of
class scores on the JVM path: the rows are folded in Java into core's ``class_score_distribution`` state
(``mergeablemetrics.ClassScoreDistribution``, the canonical binning per class column; the bytes of core's
Python fold in any partitioning), the values equal the local engine's bit for bit and scikit-learn's."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.metrics import average_precision_score, roc_auc_score

from mergeable_metrics import Evaluation

pytestmark = pytest.mark.filterwarnings("ignore::mergeable_metrics.metrics.base.UndefinedMetricWarning")

K = 3
METRICS = ["roc_auc", "average_precision", "roc_auc@multi_class=ovo", "roc_auc@average=weighted", "example_count"]


def _bits(x: float) -> int:
    return int(np.float64(x).view(np.uint64))


def _frame(seed: int = 0, n: int = 900) -> pd.DataFrame:
    """Groups a, b, c of random class probabilities (half with two classes rounded to 2 decimals: ties
    within and across classes), weights with zeros; group ``tie`` scores every row alike (-0.0 and 0.0 included)."""
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(K), size=n)
    p[: n // 2, :2] = np.round(p[: n // 2, :2], 2)
    p[: n // 2, 2] = 1.0 - p[: n // 2, 0] - p[: n // 2, 1]  # ties, rows still summing to 1 within scikit-learn's check
    g = rng.choice(["a", "b", "c"], n)
    y = rng.integers(0, K, n)
    w = np.where(rng.random(n) < 0.1, 0.0, rng.random(n) * 3)
    tie = pd.DataFrame({"g": "tie", "y": [0, 1, 2, 1, 0, 2], "p": [[0.0, 0.5, 0.5], [-0.0, 0.5, 0.5]] * 3, "w": [1.0, 2.0, 0.5, 1.0, 1.0, 3.0]})
    return pd.concat([pd.DataFrame({"g": g, "y": y, "p": list(p), "w": w}), tie], ignore_index=True)


@pytest.mark.parametrize("weighted", [False, True])
def test_metric_columns_class_scores_per_group_equal_the_local_engine_and_sklearn(jvm_spark, weighted):
    from mergeable_metrics.spark import metric_columns

    pdf = _frame()
    df = jvm_spark.createDataFrame(pdf).repartition(3)
    wc = "w" if weighted else None
    q = df.groupBy("g").agg(*metric_columns(METRICS, label_col="y", score_col="p", weight_col=wc, task="multiclass", num_classes=K, engine="jvm"))
    plan = q._jdf.queryExecution().executedPlan().toString()
    assert "mm_state_" in plan, plan  # folded by the JVM aggregate (the finish is core's, in a Python UDF)
    rows = {r["g"]: r.asDict() for r in q.collect()}
    ev = Evaluation(label_col="y", score_col="p", weight_col=wc, metrics=METRICS, task="multiclass", num_classes=K, slices=["g"])
    want = ev.evaluate([pdf])
    assert sorted(rows) == ["a", "b", "c", "tie"]
    for g, row in rows.items():
        ref = want[(("g", g),)].metrics
        for key in [m.key for m in ev.plan.metrics]:
            assert _bits(row[key]) == _bits(ref[key]), (g, key, row[key], ref[key])
        part = pdf[pdf.g == g]
        if g == "tie":
            continue
        s, sw = np.stack(part.p.to_numpy()), (part.w.to_numpy() if weighted else None)
        assert row["roc_auc"] == pytest.approx(roc_auc_score(part.y, s, multi_class="ovr", sample_weight=sw), abs=1e-12)
        assert row["roc_auc@weighted"] == pytest.approx(roc_auc_score(part.y, s, multi_class="ovr", average="weighted", sample_weight=sw), abs=1e-12)
        onehot = np.eye(K)[part.y.to_numpy()]
        assert row["average_precision"] == pytest.approx(average_precision_score(onehot, s, sample_weight=sw), abs=1e-12)
        if not weighted:  # scikit-learn's one-vs-one takes no sample_weight
            assert row["roc_auc@multi_class=ovo"] == pytest.approx(roc_auc_score(part.y, s, multi_class="ovo"), abs=1e-12)
        assert row["example_count"] == len(part)
    assert rows["tie"]["roc_auc"] == 0.5


def _group_bytes(pdf: pd.DataFrame, ev: Evaluation) -> dict:
    out = {}
    for g, part in pdf.groupby("g"):
        acc = ev.fold(ev.zero(), {"y": part.y.to_numpy(), "p": np.stack(part.p.to_numpy()), "w": part.w.to_numpy()})
        out[g] = [s.encode() for s in acc.states(())]
    return out


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(partitions=st.integers(1, 6), weighted=st.booleans(), capacity=st.sampled_from([4, 16, None]), seed=st.integers(0, 2**32 - 1))
def test_class_score_state_bytes_equal_the_python_fold_in_any_partitioning(jvm_spark, partitions, weighted, capacity, seed):
    """The group's states (``example_count``, ``class_score_distribution``, compressed at capacities 4 and 16)
    are the bytes of core's fold of the group's rows, for any partitioning of the rows."""
    from mergeable_metrics.spark import jvm, metric_state_column

    pdf = _frame(seed=seed % 1000, n=400).sample(frac=1.0, random_state=seed % 1000).reset_index(drop=True)
    wc = "w" if weighted else None
    metrics = ["roc_auc" if capacity is None else f"roc_auc@capacity={capacity}"]
    ev = Evaluation(label_col="y", score_col="p", weight_col=wc, metrics=metrics, task="multiclass", num_classes=K)
    assert [cls.kind for cls, _ in ev.plan.state_types] == ["example_count", "class_score_distribution"]
    df = jvm_spark.createDataFrame(pdf).repartition(partitions)
    rows = df.groupBy("g").agg(metric_state_column(metrics, label_col="y", score_col="p", weight_col=wc, task="multiclass", num_classes=K)).collect()
    want = _group_bytes(pdf, ev)
    assert sorted(r["g"] for r in rows) == sorted(want)
    for r in rows:
        assert jvm.unpack(r["mm_states"], 2) == want[r["g"]], r["g"]


@pytest.mark.parametrize("weight_col", [None, "w"])
def test_evaluate_class_scores_takes_the_jvm_path_and_equals_the_local_engine(jvm_spark, monkeypatch, weight_col):
    from mergeable_metrics.spark import evaluate, jvm_path

    pdf = _frame(n=1500)
    pdf["h"] = np.arange(len(pdf)) % 2
    ev = Evaluation(label_col="y", score_col="p", weight_col=weight_col, metrics=METRICS, task="multiclass", num_classes=K, slices=["g", "h"])
    taken = []
    real = jvm_path.evaluate_jvm
    monkeypatch.setattr(jvm_path, "evaluate_jvm", lambda *a: taken.append(1) or real(*a))
    got = evaluate(jvm_spark.createDataFrame(pdf).repartition(4), evaluation=ev)
    assert taken == [1]
    want = ev.evaluate([pdf])
    assert [s.key for s in got] == [s.key for s in want]
    for a, b in zip(got, want):
        assert a.n == b.n and a.weight == b.weight
        for key in [m.key for m in ev.plan.metrics]:
            assert _bits(a.metrics[key]) == _bits(b.metrics[key]), (a.key, key)


@pytest.mark.parametrize(
    "scores, match",
    [
        ([[0.2, 0.3, 0.5], [0.1, float("nan"), 0.8]], r"column 'p'.*invalid value nan \(entry 1\).*scores must be finite"),
        ([[0.2, 0.3, 0.5], [0.1, 0.8]], r"column 'p'.*a row of 2 entries.*need 3 entries per row"),
        ([[0.2, 0.3, 0.5], None], r"column 'p'.*invalid value null"),
        ([[0.2, 0.3, 0.5], [0.1, float("inf"), 0.8]], r"column 'p'.*invalid value inf"),
    ],
)
def test_invalid_score_rows_raise_naming_the_column(jvm_spark, scores, match):
    from pyspark.sql import types as T

    from mergeable_metrics.spark import metric_columns

    schema = T.StructType([T.StructField("y", T.LongType()), T.StructField("p", T.ArrayType(T.DoubleType()))])
    bad = jvm_spark.createDataFrame([(0, scores[0]), (1, scores[1])], schema)
    with pytest.raises(Exception, match=match):
        bad.agg(*metric_columns(["roc_auc"], label_col="y", score_col="p", task="multiclass", num_classes=K, engine="jvm")).collect()
    # the local engine refuses the same rows
    with pytest.raises(ValueError):
        Evaluation(label_col="y", score_col="p", metrics=["roc_auc"], task="multiclass", num_classes=K).evaluate([{"y": np.array([0, 1]), "p": scores}])


def test_invalid_labels_raise_naming_the_column(jvm_spark):
    from mergeable_metrics.spark import metric_columns

    bad = jvm_spark.createDataFrame(pd.DataFrame({"y": [0.0, 3.0], "p": [[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]]}))
    with pytest.raises(Exception, match=r"column 'y'.*invalid value 3\.0.*labels must be integers in \[0, 3\)"):
        bad.agg(*metric_columns(["roc_auc"], label_col="y", score_col="p", task="multiclass", num_classes=K, engine="jvm")).collect()


def test_plans_with_other_states_keep_their_paths_and_say_why():
    from mergeable_metrics.spark import jvm

    spec, why = jvm.evaluation_spec(
        Evaluation(label_col="y", score_col="p", metrics=["roc_auc", "log_loss"], task="multiclass", num_classes=K, score_format="logits")
    )
    assert spec is None and "inputs need core's input formats" in why  # an input format: core's
    # probability rows are checked in the JVM as core checks them (tests/spark_metrics/test_jvm_probability_rows.py)
    spec, why = jvm.evaluation_spec(Evaluation(label_col="y", score_col="p", metrics=["roc_auc", "log_loss"], task="multiclass", num_classes=K))
    assert spec is not None and jvm.spec_kinds(spec) == ["example_count", "class_score_distribution", "probability_sums"]
    assert spec.split("\x1f")[1] == str(jvm.PROBABILITY_ROW_MODE)
    spec, why = jvm.evaluation_spec(Evaluation(label_col="y", score_col=["a", "b", "c"], metrics=["roc_auc"], task="multiclass", num_classes=K))
    assert spec is None and "per-class score columns" in why
    spec, _ = jvm.evaluation_spec(Evaluation(label_col="y", score_col="p", metrics=["roc_auc", "average_precision"], task="multiclass", num_classes=K))
    assert spec is not None and jvm.spec_kinds(spec) == ["example_count", "class_score_distribution"]


def test_empty_frame_gives_the_zero_state(jvm_spark):
    from mergeable_metrics.spark import jvm, metric_state_column

    ev = Evaluation(label_col="y", score_col="p", metrics=["roc_auc"], task="multiclass", num_classes=K)
    empty = jvm_spark.createDataFrame([], "y long, p array<double>")
    data = empty.agg(metric_state_column(["roc_auc"], label_col="y", score_col="p", task="multiclass", num_classes=K)).collect()[0]["mm_states"]
    assert jvm.unpack(data, 2) == [cls.zero(layout).encode() for cls, layout in ev.plan.state_types]
    assert math.isnan(ev.finish({(): tuple(cls.zero(layout) for cls, layout in ev.plan.state_types)}, add_overall=False)[()].metrics["roc_auc"])
