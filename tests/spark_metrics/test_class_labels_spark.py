"""Spark: class values (``classes=``), requested metric names and display names (issue 16).

References: scikit-learn on the original label values."""

from __future__ import annotations

import numpy as np
import pytest

pd = pytest.importorskip("pandas")
pytest.importorskip("pyspark")
sklearn_metrics = pytest.importorskip("sklearn.metrics")

import mergeable_metrics  # noqa: E402
from mergeable_metrics.spark import collect_results, compute_metrics  # noqa: E402

ANIMALS = ["cat", "dog", "bird"]


def test_spark_maps_string_classes_and_answers_requested_names(spark):
    rng = np.random.default_rng(7)
    y = rng.choice(ANIMALS, 120)
    p = np.where(rng.random(120) < 0.6, y, rng.choice(ANIMALS, 120))
    g = rng.choice(["a", "b"], 120)
    df = spark.createDataFrame(pd.DataFrame({"y": y, "p": p, "g": g})).repartition(3)
    ev = mergeable_metrics.Evaluation(label_col="y", prediction_col="p", classes=ANIMALS, slices=["g"], metrics=["f1", "f1@none", ("acc", "accuracy")])
    got = collect_results(compute_metrics(df, evaluation=ev), ev)
    for s in got:
        m = np.ones(120, bool) if not s.slice else g == s.slice[0][1]
        assert s.metrics["f1"] == pytest.approx(sklearn_metrics.f1_score(y[m], p[m], labels=ANIMALS, average="macro"), abs=1e-12)
        assert s.metrics["acc"] == pytest.approx(sklearn_metrics.accuracy_score(y[m], p[m]), abs=1e-12)
    assert got.per_class("f1@none") == pytest.approx(dict(zip(ANIMALS, sklearn_metrics.f1_score(y, p, labels=ANIMALS, average=None))), abs=1e-12)
    assert got.resolved_names == {"f1": "f1@macro", "acc": "accuracy"}
    with pytest.raises(ValueError, match="classes="):
        compute_metrics(df, evaluation=ev, native=True)  # the native SQL path cannot map class values


def test_spark_binary_minus_one_plus_one(spark):
    rng = np.random.default_rng(8)
    y = rng.choice([-1, 1], 100)
    s = rng.random(100)
    df = spark.createDataFrame(pd.DataFrame({"y": y, "s": s}))
    ev = mergeable_metrics.Evaluation(label_col="y", score_col="s", classes=[-1, 1], metrics=["precision", "roc_auc"])
    got = collect_results(compute_metrics(df, evaluation=ev), ev)
    pred = np.where(s >= 0.5, 1, -1)
    assert got.overall.metrics["precision"] == pytest.approx(sklearn_metrics.precision_score(y, pred), abs=1e-12)
    assert got.overall.metrics["roc_auc"] == pytest.approx(sklearn_metrics.roc_auc_score(y, s), abs=1e-12)
