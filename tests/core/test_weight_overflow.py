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


def test_compressed_roc_auc_bounds_hold_when_p_times_n_overflows():
    """A compressed score distribution (``capacity=16``) whose class weights multiply past float64 (weights 1e153:
    P N ~ 1e310) while the pair sums do not: the certified bounds divided those sums by ``P N = inf``, so they were
    (0, 1e-12) and the value was clamped to 1e-12 (scikit-learn: 0.0055). The bounds must hold scikit-learn's value,
    as they do at weight 1."""
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(0)
    n = 200
    y = rng.integers(0, 2, n)
    p = rng.random(n) - 0.9 * y  # positives mostly below the negatives: a small AUC, pure bins (no ties)
    for scale in (1.0, 1e153):
        w = np.full(n, scale)
        assert (scale == 1.0) == np.isfinite(w[y == 1].sum() * w[y == 0].sum())
        r = Evaluation(label_col="y", score_col="p", metrics=["roc_auc@capacity=16"], weight_col="w").evaluate([pd.DataFrame({"y": y, "p": p, "w": w})]).overall
        lo, hi = r.bounds["roc_auc@capacity=16"]
        want = roc_auc_score(y, p, sample_weight=w)
        assert lo <= want <= hi and lo <= r.metrics["roc_auc@capacity=16"] <= hi, (scale, lo, hi, want)
        assert hi - lo < 0.01, (scale, lo, hi)  # as tight as at weight 1 (not the vacuous (0, 1))
