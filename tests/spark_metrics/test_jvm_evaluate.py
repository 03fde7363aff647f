"""evaluate(df, ...) takes the JVM path by default where every state of the plan is ported: each slice's
states folded in Java (one groupBy of the slice columns), merged per spec and finished on the driver by core;
the Results equal the local engine's exactly. Other plans keep the other paths, saying why in one line."""

from __future__ import annotations

import logging
import math

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import f1_score, roc_auc_score

from mergeable_metrics import Evaluation
from mergeable_metrics.spark import evaluate, jvm_path

pytestmark = pytest.mark.filterwarnings("ignore::mergeable_metrics.metrics.base.UndefinedMetricWarning")
METRICS = ["roc_auc", "average_precision", "f1", "log_loss", "accuracy", "example_count", "brier_score"]


def _flights(n: int = 5000, fractional: bool = False) -> pd.DataFrame:
    """The flights-like data of test_compute_metrics (carrier with nulls, origin), plus fractional weights."""
    rng = np.random.default_rng(20240601)
    y = rng.integers(0, 2, n)
    score = np.clip(0.35 * y + rng.random(n) * 0.75, 0, 1)
    carrier = rng.choice(np.array(["AA", "B6", "DL", "UA", None], dtype=object), n, p=[0.3, 0.25, 0.2, 0.15, 0.1])
    origin = rng.choice(np.array(["EWR", "JFK", "LGA"]), n)
    w = rng.choice([0.0, 0.1, 1 / 3, 1.0, 2.5, 1e-300, 1e12], n) if fractional else rng.integers(0, 4, n).astype(np.float64)
    return pd.DataFrame({"y": y, "score": score, "carrier": carrier, "origin": origin, "w": w, "day": rng.integers(1, 4, n)})


def _same(a, b) -> bool:
    return a == b or (isinstance(a, float) and math.isnan(a) and math.isnan(b))


def _assert_equal_results(got, want, metrics):
    assert [s.key for s in got] == [s.key for s in want]
    for a, b in zip(got, want):
        assert a.n == b.n and a.weight == b.weight, a.key
        for k in metrics:
            assert _same(a.metrics[k], b.metrics[k]), (a.key, k, a.metrics[k], b.metrics[k])


@pytest.mark.parametrize("weight_col,fractional", [(None, False), ("w", False), ("w", True)])
def test_evaluate_takes_the_jvm_path_and_equals_the_local_engine(jvm_spark, monkeypatch, weight_col, fractional):
    pdf = _flights(fractional=fractional)
    ev = Evaluation(label_col="y", score_col="score", weight_col=weight_col, metrics=METRICS, slices=["carrier", "origin", "carrier,origin", "day"])
    taken = []
    real = jvm_path.evaluate_jvm
    monkeypatch.setattr(jvm_path, "evaluate_jvm", lambda *a: taken.append(1) or real(*a))
    got = evaluate(jvm_spark.createDataFrame(pdf).repartition(4), evaluation=ev)
    assert taken == [1]
    want = ev.evaluate([pdf])
    _assert_equal_results(got, want, METRICS)
    part = pdf[pdf.carrier == "B6"]
    w = None if weight_col is None else part.w
    b6 = got[(("carrier", "B6"),)].metrics
    assert b6["roc_auc"] == pytest.approx(roc_auc_score(part.y, part.score, sample_weight=w), rel=1e-12)
    assert b6["f1"] == pytest.approx(f1_score(part.y, part.score >= 0.5, sample_weight=w), rel=1e-12)
    assert got[(("carrier", None),)].n == int(pdf.carrier.isna().sum())


def test_evaluate_without_slices_and_of_an_empty_frame(jvm_spark):
    pdf = _flights(300)
    ev = Evaluation(label_col="y", score_col="score", metrics=METRICS)
    _assert_equal_results(evaluate(jvm_spark.createDataFrame(pdf), evaluation=ev), ev.evaluate([pdf]), METRICS)
    empty = jvm_spark.createDataFrame(pdf.iloc[:0], "y long, score double, carrier string, origin string, w double, day long")
    sliced = Evaluation(label_col="y", score_col="score", metrics=METRICS, slices=["carrier"])
    got = evaluate(empty, evaluation=sliced)
    _assert_equal_results(got, sliced.evaluate([pdf.iloc[:0]]), METRICS)
    assert len(got) == 1 and got[()].n == 0 and math.isnan(got[()].metrics["roc_auc"])


def test_unported_plans_keep_the_other_paths_saying_why(jvm_spark, caplog):
    pdf = _flights(400)
    ev = Evaluation(label_col="y", score_col="score", metrics=["f1"], slices=["carrier;max_slices=2"])
    spec, why = jvm_path.jvm_blocker(jvm_spark.createDataFrame(pdf), ev)
    assert spec is None and "max_slices" in why
    with caplog.at_level(logging.INFO, logger="mergeable_metrics.spark.compute"):
        got = evaluate(jvm_spark.createDataFrame(pdf), evaluation=ev)
    assert any("not the JVM path" in r.getMessage() and "max_slices" in r.getMessage() for r in caplog.records)
    assert got[()].metrics["f1"] == ev.evaluate([pdf])[()].metrics["f1"]


def test_an_invalid_value_is_named_with_its_row_by_the_other_paths(jvm_spark):
    pdf = _flights(200)
    pdf.loc[17, "score"] = 1.5
    ev = Evaluation(label_col="y", score_col="score", metrics=["log_loss"], slices=["carrier"])
    with pytest.raises(Exception, match=r"1\.5") as info:
        evaluate(jvm_spark.createDataFrame(pdf).coalesce(1), evaluation=ev)
    assert "17" in str(info.value)
