"""Metrics in Spark tests (issue 29, item 9): ``mergeable_metrics.spark.testing.assert_metrics`` on
compute_metrics' wide and long layouts and on metric_columns aggregates, passing and failing, with
the expected values from scikit-learn."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import accuracy_score, precision_score, recall_score

from mergeable_metrics.spark import compute_metrics, metric_columns
from mergeable_metrics.spark.testing import assert_metrics

RNG = np.random.default_rng(29)
N = 300
Y = RNG.integers(0, 2, N)
P = np.clip(0.3 * Y + 0.7 * RNG.random(N), 0, 1)
C = RNG.choice(["DE", "FR", "IT"], N)
FRAME = pd.DataFrame({"y": Y, "p": P, "country": C})
METRICS = ["accuracy", "precision", "recall"]


def _sk(fn, mask=None):
    m = np.ones(N, bool) if mask is None else mask
    return float(fn(Y[m], (P[m] >= 0.5).astype(int)))


ACC = _sk(accuracy_score)
REC = {c: _sk(recall_score, C == c) for c in ("DE", "FR", "IT")}
PREC = {c: _sk(precision_score, C == c) for c in ("DE", "FR", "IT")}


@pytest.fixture(scope="module")
def frames(spark):
    df = spark.createDataFrame(FRAME)
    wide = compute_metrics(df, label_col="y", score_col="p", slices=["country"], metrics=METRICS)
    long = compute_metrics(df, label_col="y", score_col="p", slices=["country"], metrics=METRICS, layout="long")
    grouped = df.groupBy("country").agg(*metric_columns(METRICS, label_col="y", score_col="p"))
    return {
        "wide": wide.collect(),
        "long": long.collect(),
        "grouped": grouped.collect(),
        "overall": df.agg(*metric_columns(METRICS, label_col="y", score_col="p")),
    }


@pytest.mark.parametrize("layout", ["wide", "long"])
def test_assert_metrics_passes_on_compute_metrics_with_sklearn_values(frames, layout):
    rows = frames[layout]
    assert_metrics(rows, equal={"accuracy": ACC, "recall": {f"country={c}": v for c, v in REC.items()}}, slices=["Overall", {"country": "FR"}])
    assert_metrics(rows, minimum={"precision": min(PREC.values())}, maximum={"precision": {"country=DE": PREC["DE"]}}, slice={"country": "IT"})


def test_assert_metrics_reads_metric_columns_aggregates(frames):
    assert_metrics(frames["grouped"], equal={"recall": {f"country={c}": v for c, v in REC.items()}, "precision": {"country=DE": PREC["DE"]}})
    assert_metrics(frames["overall"], equal={"accuracy": ACC})  # a Spark DataFrame, no groups: the overall slice
    with pytest.raises(AssertionError, match=r"country=IT: recall .* != expected"):
        assert_metrics(frames["grouped"], equal={"recall": {"country=IT": REC["IT"] + 0.01}}, by=["country"])


@pytest.mark.parametrize("layout", ["wide", "long"])
def test_assert_metrics_failures_name_slice_metric_value_and_bound(frames, layout):
    rows = frames[layout]
    bound = REC["FR"] + 0.05
    with pytest.raises(AssertionError) as e:
        assert_metrics(rows, minimum={"recall": {"country=FR": bound}}, maximum={"accuracy": ACC}, slices=["country=ES"])
    msg = str(e.value)
    assert msg.splitlines()[0] == "2 of 3 metric checks failed:"
    assert f"  country=FR: recall {REC['FR']:.6g} < minimum {bound:.6g}" in msg.splitlines()
    assert "country=ES: no such slice in the results" in msg
    with pytest.raises(AssertionError, match=rf"Overall: accuracy {ACC!r} != expected {ACC + 1e-4!r}"):
        assert_metrics(rows, equal={"accuracy": ACC + 1e-4})
    assert_metrics(rows, equal={"accuracy": ACC + 1e-9})  # within rtol=1e-5, as assertDataFrameEqual


def test_assert_metrics_applies_a_thresholds_file(frames, tmp_path):
    f = tmp_path / "thresholds.json"
    f.write_text('{"slices": [{"spec": "country", "metrics": {"recall": {"minimum": %r}}}]}' % (REC["IT"] + 1e-3), encoding="utf-8")
    low = [c for c, v in REC.items() if v < REC["IT"] + 1e-3]
    with pytest.raises(AssertionError) as e:
        assert_metrics(frames["wide"], thresholds=str(f))
    assert str(e.value).splitlines()[0] == f"{len(low)} of 3 metric checks failed:"
    assert f"  country=IT: recall {REC['IT']:.6g} < minimum {REC['IT'] + 1e-3:.6g}" in str(e.value).splitlines()
    assert_metrics(frames["long"], thresholds={"metrics": {"accuracy": {"minimum": 0.0, "maximum": 1.0}}})
