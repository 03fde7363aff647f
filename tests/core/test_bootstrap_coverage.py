"""Coverage of ``ci="bootstrap"``: nominal 95% intervals cover the true accuracy, F1 and ROC AUC
in about 95% of simulated datasets of 1,000 rows.

Data: ``y ~ Bernoulli(0.4)``, latent ``z ~ N(-d/2, 1)`` (y = 0) or ``N(d/2, 1)`` (y = 1), score
``sigmoid(z)`` thresholded at 0.5 (``z >= 0``). True values (population, hand-derived):
accuracy ``Phi(d/2)``, ROC AUC ``Phi(d / sqrt 2)``, F1 ``2 pi TPR / (2 pi TPR + (1 - pi) FPR +
pi (1 - TPR))`` with ``TPR = Phi(d/2)``, ``FPR = 1 - Phi(d/2)``.

Fast profile (the default, in CI): 120 datasets, and coverage must lie within the binomial
99.9% band around 0.95. Full run (1,000 datasets, band 93-97%, about 10 minutes):
``BOOTSTRAP_COVERAGE_FULL=1 pytest tests/core/test_bootstrap_coverage.py``.
"""

from __future__ import annotations

import math
import os
import warnings

import numpy as np

from mergeable_metrics import Evaluation

PI, D, N = 0.4, 1.5, 1000


def _phi(x: float) -> float:
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


TPR = _phi(D / 2)
FPR = 1.0 - TPR
TRUTH = {
    "accuracy": _phi(D / 2),
    "f1": 2 * PI * TPR / (2 * PI * TPR + (1 - PI) * FPR + PI * (1 - TPR)),
    "roc_auc": _phi(D / math.sqrt(2.0)),
}


def coverage(datasets: int, seed: int = 2026, **ci: object) -> dict[str, float]:
    """Fraction of ``datasets`` simulated datasets whose interval covers each true value."""
    ev = Evaluation(label_col="y", score_col="s", metrics=list(TRUTH), ci="bootstrap", **ci)
    hits = {k: 0 for k in TRUTH}
    rng = np.random.default_rng(seed)
    for _ in range(datasets):
        y = (rng.random(N) < PI).astype(np.int64)
        z = rng.normal(np.where(y == 1, D / 2, -D / 2), 1.0)
        data = {"y": y, "s": 1.0 / (1.0 + np.exp(-z))}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ci_of = ev.finish(ev.fold(ev.zero(), data)).overall.ci
        for k, truth in TRUTH.items():
            lo, hi = ci_of[k]
            hits[k] += lo <= truth <= hi
    return {k: v / datasets for k, v in hits.items()}


def test_bootstrap_intervals_cover_the_true_values():
    full = bool(os.environ.get("BOOTSTRAP_COVERAGE_FULL"))
    datasets = 1000 if full else 120
    got = coverage(datasets)
    if full:
        lo, hi = 0.93, 0.97
    else:  # binomial 99.9% band of a 95% coverage over this many datasets
        half = 3.29 * math.sqrt(0.95 * 0.05 / datasets)
        lo, hi = 0.95 - half, min(1.0, 0.95 + half)
    for k, c in got.items():
        assert lo <= c <= hi, (k, c, (lo, hi), got)
