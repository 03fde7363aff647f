"""``confusion_matrix@rows=predicted`` (issue 18): OnlineMetrics' orientation, the transpose of
scikit-learn's (rows = true label), in the single and the stacked (per-slice) computation."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import confusion_matrix

from mergeable_metrics import Evaluation, MetricCollection


def test_rows_predicted_is_sklearns_transpose():
    y, p = [0, 0, 1, 2, 2, 2], [0, 1, 1, 2, 0, 0]
    mc = MetricCollection("confusion_matrix", "confusion_matrix@rows=predicted", num_classes=3)
    mc.update(y, y_pred=p, sample_weight=[1, 2, 1, 1, 0.5, 1])
    w = [1, 2, 1, 1, 0.5, 1]
    r = mc.compute()
    assert np.array_equal(r["confusion_matrix"], confusion_matrix(y, p, sample_weight=w))
    assert np.array_equal(r["confusion_matrix@rows=predicted"], confusion_matrix(y, p, sample_weight=w).T)
    binary = MetricCollection("confusion_matrix@rows=predicted")
    binary.update([1, 0, 1, 1], y_score=[0.9, 0.6, 0.2, 0.7])  # tp 2, fp 1, fn 1, tn 0
    assert binary.compute()["confusion_matrix@rows=predicted"].tolist() == [[0, 1], [1, 2]]  # [[tn, fn], [fp, tp]]
    with pytest.raises(ValueError, match="rows must be 'true'"):
        MetricCollection("confusion_matrix@rows=columns")


def test_rows_predicted_per_slice():
    rng = np.random.default_rng(1)
    y, p, g = rng.integers(0, 3, 200), rng.integers(0, 3, 200), rng.choice(list("abcd"), 200)
    ev = Evaluation(label_col="y", prediction_col="p", num_classes=3, slices=["g"], metrics=["confusion_matrix@rows=predicted"])
    res = ev.evaluate([{"y": y, "p": p, "g": g}])
    for key in (("g", "a"),), (("g", "d"),), ():
        keep = np.ones(200, bool) if not key else g == key[0][1]
        assert np.array_equal(res[key].metrics["confusion_matrix@rows=predicted"], confusion_matrix(y[keep], p[keep], labels=[0, 1, 2]).T)
