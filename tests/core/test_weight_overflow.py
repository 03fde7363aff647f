"""Weights whose sum overflows float64 (beyond 1.8e308): the weighted means and ranking values are undefined in
float64 and reported as NaN, never as a wrong finite number (average_precision and brier_score were 0.0)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from mergeable_metrics import Evaluation
from mergeable_metrics.engine import UndefinedMetricWarning

METRICS = ["roc_auc", "average_precision", "log_loss", "brier_score", "mean_label"]


@pytest.mark.parametrize("w", [[1e308] * 4, [1e308, 1.0, 1e308, 1.0]])  # every class overflows / the positives only
def test_overflowing_weight_sums_give_nan(w):
    y, p = [1, 0, 1, 0], [0.1, 0.2, 0.3, 0.4]
    fw = [Fraction(x) for x in w]
    exact_brier = sum(wi * (Fraction(pi) - yi) ** 2 for yi, pi, wi in zip(y, p, fw)) / sum(fw)
    exact_auc = sum(fw[i] * fw[j] for i in (0, 2) for j in (1, 3) if p[i] > p[j]) / (sum(fw[i] for i in (0, 2)) * sum(fw[j] for j in (1, 3)))
    assert exact_auc == Fraction(1, 4) and exact_brier > Fraction(1, 4)  # the true values are not 0.0
    pdf = pd.DataFrame({"y": y, "p": p, "w": w})
    with pytest.warns(UndefinedMetricWarning):
        got = Evaluation(label_col="y", score_col="p", metrics=METRICS, weight_col="w").evaluate([pdf]).overall.metrics
    for m in ("roc_auc", "average_precision"):
        assert np.isnan(got[m]), (m, got[m])
    if not np.isfinite(sum(w)):
        for m in ("log_loss", "brier_score", "mean_label"):
            assert np.isnan(got[m]), (m, got[m])


@pytest.mark.parametrize("scale", [1e153, 1e160, 1e-300, 5e-324])
def test_compressed_bounds_hold_for_weights_of_any_scale(scale):
    """Compressed score distributions (``capacity=16``) whose weights are all ``scale``: the metrics are ratios of
    weights, so the values and certified bounds must equal those at weight 1 (to rounding) and hold scikit-learn's
    value. Before: weights 1e153 (``P N`` beyond float64) gave roc_auc bounds (0, 1e-12) and the value 1e-12;
    1e160 gave average_precision 1.0 with bounds (inf, 1); 1e-300 gave average_precision 1e-12 with bounds
    (0.43, 1e-12), pr_auc_trapezoid bounds (0.80, 0.42), and roc_auc a ZeroDivisionError."""
    from sklearn.metrics import average_precision_score, roc_auc_score

    rng = np.random.default_rng(0)
    n = 200
    y = rng.integers(0, 2, n)
    for p in (rng.random(n) - 0.9 * y, rng.random(n) + 0.3 * y):  # a small AUC with pure bins, and a mixed one
        metrics = ["roc_auc@capacity=16", "average_precision@capacity=16", "pr_auc_trapezoid@capacity=16"]
        ref = {"roc_auc@capacity=16": roc_auc_score(y, p), "average_precision@capacity=16": average_precision_score(y, p)}
        runs = []
        for w in (np.ones(n), np.full(n, scale)):
            r = Evaluation(label_col="y", score_col="p", metrics=metrics, weight_col="w").evaluate([pd.DataFrame({"y": y, "p": p, "w": w})]).overall
            runs.append((r.metrics, r.bounds))
        (v1, b1), (vs, bs) = runs
        for m in metrics:
            lo, hi = bs[m]
            assert lo <= vs[m] <= hi, (m, lo, vs[m], hi)
            assert vs[m] == pytest.approx(v1[m], rel=1e-12) and bs[m] == pytest.approx(b1[m], rel=1e-12), (m, vs[m], v1[m], bs[m], b1[m])
            if m in ref:
                assert lo <= ref[m] <= hi, (m, lo, ref[m], hi)
