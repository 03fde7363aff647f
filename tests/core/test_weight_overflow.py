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
