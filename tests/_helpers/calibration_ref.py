"""Reference for the multiclass calibration errors: torchmetrics' binning transcribed to numpy.

From src/torchmetrics/functional/classification/calibration_error.py (Lightning-AI/torchmetrics,
commit dab0333): ``_binning_bucketize`` and ``_ce_compute``. torch is not installed here; the bin
edges are ``i/B`` correctly rounded instead of torch's float ``linspace``.
"""

from __future__ import annotations

import numpy as np


def tm_calibration_error(conf, acc, n_bins, norm="l1", weight=None):
    """torchmetrics' ``_ce_compute`` in numpy: ``bucketize(conf, linspace(0, 1, B + 1),
    right=True) - 1`` gives B + 1 bins (1.0 alone in the last), ``nan_to_num`` of the per-bin
    means, ``prop_bin = count / count.sum()``; l1: ``sum |acc - conf| * prop``, max: ``max
    |acc - conf|``. ``weight`` generalises the counts to weight sums (torchmetrics has none)."""
    conf = np.asarray(conf, dtype=np.float64)
    acc = np.asarray(acc, dtype=np.float64)
    w = np.ones_like(conf) if weight is None else np.asarray(weight, dtype=np.float64)
    edges = np.arange(n_bins + 1) / n_bins
    idx = np.searchsorted(edges, conf, side="right") - 1
    count = np.bincount(idx, w, minlength=n_bins + 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        conf_bin = np.nan_to_num(np.bincount(idx, w * conf, minlength=n_bins + 1) / count)
        acc_bin = np.nan_to_num(np.bincount(idx, w * acc, minlength=n_bins + 1) / count)
    prop = count / count.sum()
    if norm == "l1":
        return float(np.sum(np.abs(acc_bin - conf_bin) * prop))
    return float(np.max(np.abs(acc_bin - conf_bin)))
