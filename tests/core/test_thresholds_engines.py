"""Threshold metrics (mergeable_metrics.metrics.thresholds) by name through every engine: the CLI's local engine, Beam
(DirectRunner) and Spark (local[2]) give the brute-force values per slice (exact states) and the
same certified bounds as core (compressed states)."""

from __future__ import annotations

import json
import math

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from sklearn.metrics import metric_at_thresholds, precision_score

from mergeable_metrics import Evaluation
from mergeable_metrics.pipelines.evaluate import main
from tests.core.test_thresholds import reference

pytestmark = pytest.mark.filterwarnings("ignore::mergeable_metrics.metrics.base.UndefinedMetricWarning", "ignore::sklearn.exceptions.UndefinedMetricWarning")

EXACT = ["best_threshold@criterion=f1", "best_threshold_score@criterion=youden", "best_threshold@criterion=cost@cost_fp=1@cost_fn=4",
         "threshold_at_recall@recall=0.8", "threshold_at_precision@precision=0.7", "metric_at_thresholds@metric=f1@thresholds=0.2|0.5|0.8",
         "metric_at_thresholds@metric=precision@zero_division=0"]  # fmt: skip
KEYS = ["best_threshold@f1", "best_threshold_score@youden", "best_threshold@cost@cost_fn=4@cost_fp=1",
        "threshold_at_recall@0.8", "threshold_at_precision@0.7", "metric_at_thresholds@f1@thresholds=0.2|0.5|0.8",
        "metric_at_thresholds@precision@zero_division=0"]  # fmt: skip
REF = dict(zip(KEYS, ["best_threshold@criterion=f1", "best_threshold_score@criterion=youden", "best_threshold@criterion=cost@cost_fp=1@cost_fn=4",
                      "threshold_at_recall@recall=0.8", "threshold_at_precision@precision=0.7", None, "sklearn"]))  # fmt: skip
# one score distribution serves every metric of a plan, with the largest capacity asked for: the
# compressed metrics run as their own evaluation
COMPRESSED = ["best_threshold@criterion=f1@capacity=8", "best_threshold_score@criterion=f1@capacity=8", "threshold_at_recall@recall=0.8@capacity=8"]


def _table(n: int = 2000, seed: int = 4) -> pa.Table:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    p = np.round(np.clip(0.3 * y + 0.7 * rng.random(n), 0, 1), 2)
    return pa.table({"y": y, "p": p, "region": rng.choice(["north", "south", "east"], n), "w": rng.integers(0, 4, n).astype(float)})


def _slices(t: pa.Table):
    region = t["region"].to_numpy(zero_copy_only=False)
    return [((), np.ones(len(region), bool))] + [((("region", r),), region == r) for r in ("north", "south", "east")]


def _f1_at(y, p, w, t):
    pred = p >= t
    tp, fp, fn = (w * (pred & (y == 1))).sum(), (w * (pred & (y == 0))).sum(), (w * (~pred & (y == 1))).sum()
    return 2 * tp / (2 * tp + fp + fn)


def _check(metrics_of, t: pa.Table) -> None:
    """``metrics_of(slice_key) -> {key: value}`` against the brute force."""
    y, p, w = (t[c].to_numpy() for c in ("y", "p", "w"))
    for key, mask in _slices(t):
        got = metrics_of(key)
        want = reference(y[mask], p[mask], w[mask])
        for k, ref in REF.items():
            if ref == "sklearn":  # every distinct score of a non-zero-weight row, as scikit-learn 1.9
                keep = mask & (w != 0)
                values, thr = metric_at_thresholds(y[keep], p[keep], precision_score, sample_weight=w[keep], metric_params={"zero_division": 0.0})
                arr = np.asarray(got[k], dtype=float)
                np.testing.assert_array_equal(arr[:, 0], thr)
                np.testing.assert_allclose(arr[:, 1], values, rtol=1e-12)
                continue
            if ref is None:
                arr = np.asarray(got[k], dtype=float)
                np.testing.assert_allclose(arr[:, 1], [_f1_at(y[mask], p[mask], w[mask], x) for x in (0.2, 0.5, 0.8)], rtol=1e-12)
                continue
            v = math.inf if got[k] is None and math.isinf(want[ref]) else got[k]
            assert abs(v - want[ref]) <= 1e-12 or v == want[ref], (key, k, v, want[ref])


def _check_compressed(results, local, t: pa.Table) -> None:
    for key, _ in _slices(t):
        assert len(results[key].bounds) == 3 and results[key].bounds == local[key].bounds, key
        assert results[key].metrics == local[key].metrics, key


def _evaluation(metrics=EXACT) -> Evaluation:
    return Evaluation(label_col="y", score_col="p", weight_col="w", slices=["region"], metrics=metrics)


def test_cli_local_engine(tmp_path):
    t = _table()
    pq.write_table(t, tmp_path / "preds.parquet")
    out = tmp_path / "out"
    code = main(["--input", str(tmp_path / "preds.parquet"), "--label", "y", "--score", "p", "--weight", "w", "--slice", "region",
                 "--metrics", ",".join(EXACT), "--engine", "local", "--output", str(out), "--quiet", "--batch-size", "300"])  # fmt: skip
    assert code == 0
    doc = json.loads((out / "metrics.json").read_text())
    slices = {tuple(sorted(s["slice"].items())): s for s in doc["slices"]}
    _check(lambda key: slices[key]["metrics"], t)
    assert "bounds" not in slices[()]
    code = main(["--input", str(tmp_path / "preds.parquet"), "--label", "y", "--score", "p", "--weight", "w", "--slice", "region",
                 "--metrics", ",".join(COMPRESSED), "--engine", "local", "--output", str(out), "--quiet", "--batch-size", "300"])  # fmt: skip
    assert code == 0
    overall = json.loads((out / "metrics.json").read_text())["slices"][0]
    local = _evaluation(COMPRESSED).evaluate([t])
    assert len(local.overall.bounds) == 3
    for k, (lo, hi) in local.overall.bounds.items():
        assert overall["bounds"][k] == [lo, hi] and lo <= overall["metrics"][k] <= hi


def test_beam_compute_metrics(tmp_path):
    pytest.importorskip("apache_beam")
    from tests._helpers.beam_run import beam_parquet_results

    t = _table()
    exact, compressed = _evaluation(), _evaluation(COMPRESSED)
    got = beam_parquet_results(tmp_path, t, {"exact": exact, "compressed": compressed}, row_group_size=300)
    _check(lambda key: got["exact"][key].metrics, t)
    _check_compressed(got["compressed"], compressed.evaluate([t]), t)


@pytest.mark.spark
def test_spark_compute_metrics():
    pytest.importorskip("pyspark")
    from mergeable_metrics.spark import collect_results, compute_metrics, get_spark

    t = _table()
    df = get_spark().createDataFrame(t.to_pandas()).repartition(3)
    ev = _evaluation()
    results = collect_results(compute_metrics(df, evaluation=ev), ev)
    _check(lambda key: results[key].metrics, t)
    ev = _evaluation(COMPRESSED)
    _check_compressed(collect_results(compute_metrics(df, evaluation=ev), ev), ev.evaluate([t]), t)
