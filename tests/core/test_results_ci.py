"""Confidence intervals and certified bounds in results: JSON, long rows, round trips (issue 13)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from mergeable_metrics.results.results import ROW_COLUMNS, Results, SliceResult


def _results() -> Results:
    overall = SliceResult(
        (), 10, 10.0, 0,
        {"accuracy": 0.6, "recall@none": np.array([0.5, np.nan]), "roc_auc@capacity=4": 0.7},
        bounds={"roc_auc@capacity=4": (0.65, 0.75)},
        ci={"accuracy": (0.3, 0.85), "recall@none": (np.array([0.1, np.nan]), np.array([0.9, np.nan]))},
    )  # fmt: skip
    de = SliceResult(
        (("country", "DE"),),
        4,
        4.0,
        0,
        {"accuracy": 0.5, "recall@none": np.array([1.0, 0.0]), "roc_auc@capacity=4": 0.5},
        ci={"accuracy": (float("nan"), float("nan"))},
    )
    return Results([overall, de], {"ci": {"method": "analytic", "level": 0.95, "replicates": 200, "seed": 0}})


def _same_ci(a: dict, b: dict) -> None:
    assert set(a) == set(b)
    for k in a:
        for x, y in zip(a[k], b[k]):
            np.testing.assert_array_equal(np.asarray(x, dtype=float), np.asarray(y, dtype=float))


def test_json_names_bounds_and_ci_apart():
    d = _results().to_dict()
    s = d["slices"][0]
    assert s["bounds"] == {"roc_auc@capacity=4": [0.65, 0.75]} and "intervals" not in s
    assert s["ci"] == {"accuracy": [0.3, 0.85], "recall@none": [[0.1, None], [0.9, None]]}
    assert d["slices"][1]["ci"] == {"accuracy": [None, None]} and "bounds" not in d["slices"][1]
    json.dumps(d, allow_nan=False)


def test_from_dict_round_trip_keeps_bounds_and_ci():
    r = _results()
    back = Results.from_dict(json.loads(r.to_json()))
    for a, b in zip(r, back):
        assert a.bounds == b.bounds
        _same_ci(a.ci, b.ci)
    assert back.config["ci"]["method"] == "analytic"


def test_from_dict_reads_older_metrics_json_with_intervals():
    old = {
        "slices": [
            {"slice": {}, "n": 3, "weight": 3.0, "skipped": 0, "metrics": {"roc_auc@capacity=4": 0.5}, "intervals": {"roc_auc@capacity=4": [0.25, None]}}
        ]
    }
    s = Results.from_dict(old).overall
    assert s.bounds["roc_auc@capacity=4"][0] == 0.25 and np.isnan(s.bounds["roc_auc@capacity=4"][1]) and s.ci == {}


def test_long_rows_carry_ci_per_cell_and_read_back():
    r = _results()
    rows = r.to_rows()
    assert all(list(row) == ROW_COLUMNS for row in rows)
    by = {(row["slice"], row["metric"], row["index"]): row for row in rows}
    acc = by[("{}", "accuracy", None)]
    assert (acc["ci_lower"], acc["ci_upper"], acc["lower"], acc["upper"]) == (0.3, 0.85, None, None)
    auc = by[("{}", "roc_auc@capacity=4", None)]
    assert (auc["lower"], auc["upper"], auc["ci_lower"], auc["ci_upper"]) == (0.65, 0.75, None, None)
    assert (by[("{}", "recall@none", "0")]["ci_lower"], by[("{}", "recall@none", "0")]["ci_upper"]) == (0.1, 0.9)
    assert np.isnan(by[("{}", "recall@none", "1")]["ci_lower"])
    assert by[('{"country":"DE"}', "recall@none", "0")]["ci_lower"] is None  # no interval: None, not NaN
    back = Results.from_rows(rows, r.config, [("country",)], ["accuracy", "recall@none", "roc_auc@capacity=4"])
    for a, b in zip(r, back):
        assert a.bounds == b.bounds
        _same_ci(a.ci, b.ci)


@pytest.mark.parametrize("wide", [False, True])
def test_pandas_long_format_has_ci_columns(wide):
    pytest.importorskip("pandas")
    df = _results().to_pandas(wide=wide)
    assert ("ci_lower" in df.columns) is (not wide)
