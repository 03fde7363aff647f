"""scikit-learn's last options (issue 29, item 8), each against scikit-learn itself: hamming_loss
on 1-D labels bit for bit, roc_auc@max_fpr on multilabel tasks (refused on multiclass tasks, as
scikit-learn refuses it), ndcg / dcg with per-query sample_weight, multioutput as an array of
output weights, brier_score's scale_by_half."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn import metrics as skm

from mergeable_metrics import MetricCollection


# --- hamming_loss on 1-D labels: mismatch weight over total weight, bit for bit ---------------
def test_hamming_loss_1d_is_bit_identical_to_sklearn():
    mc = MetricCollection("hamming_loss")
    mc.update([0, 0, 1], y_pred=[0, 1, 1])
    got = mc.compute()["hamming_loss"]
    assert got == skm.hamming_loss([0, 0, 1], [0, 1, 1]) == 0.3333333333333333  # 1 - 2/3 would be 0.33333333333333337


@pytest.mark.parametrize("seed", range(20))
def test_hamming_loss_1d_random_bit_identical(seed):
    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(1, 60)), int(rng.integers(2, 5))
    y, p = rng.integers(0, k, n), rng.integers(0, k, n)
    w = rng.integers(1, 5, n).astype(float) if seed % 2 else None
    kind = {"num_classes": k, "multiclass": True} if k > 2 else {}
    mc = MetricCollection("hamming_loss", **kind)
    if k == 2:
        mc.update(y, y_score=p.astype(float), sample_weight=w)
    else:
        mc.update(y, y_pred=p, sample_weight=w)
    assert mc.compute()["hamming_loss"] == skm.hamming_loss(y, p, sample_weight=w)
