"""Weighted (and macro) averages equal scikit-learn's bit for bit (``==``, no tolerance).

scikit-learn averages per-class values with ``np.average`` (``_nanaverage``); a dot product
divided by the weight sum rounds differently (1 ulp off on the issue's example).
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn import metrics as skm

from mergeable_metrics import MetricCollection
from tests._helpers import MULTICLASS_GRID, multiclass_case
from tests._helpers.cases import grid_id

pytestmark = pytest.mark.filterwarnings("ignore::mergeable_metrics.UndefinedMetricWarning", "ignore::UserWarning")

_SK = {
    "precision": lambda y, p, **kw: skm.precision_score(y, p, **kw),
    "recall": lambda y, p, **kw: skm.recall_score(y, p, **kw),
    "f1": lambda y, p, **kw: skm.f1_score(y, p, **kw),
    "fbeta@beta=0.5": lambda y, p, **kw: skm.fbeta_score(y, p, beta=0.5, **kw),
    "fbeta@beta=2": lambda y, p, **kw: skm.fbeta_score(y, p, beta=2.0, **kw),
    "jaccard_score": lambda y, p, **kw: skm.jaccard_score(y, p, **kw),
}


def _key(name: str, average: str) -> str:
    base, _, beta = name.partition("@")
    return f"{base}@{average}" + (f"@{beta}" if beta else "")


def test_precision_weighted_is_bit_identical_to_sklearn_on_the_issue_example():
    y = [0, 1, 0, 0, 1, 1, 0, 1, 0, 0, 1, 0, 1, 0, 1]
    p = [1, 1, 0, 1, 0, 1, 1, 1, 1, 0, 1, 0, 1, 0, 1]
    mc = MetricCollection("precision@weighted", num_classes=2, multiclass=True)
    mc.update(y, y_pred=p)
    assert mc.compute()["precision@weighted"] == skm.precision_score(y, p, average="weighted") == 0.7066666666666668


@pytest.mark.parametrize("zero_division", [0, 1])
@pytest.mark.parametrize("case", MULTICLASS_GRID, ids=grid_id)
def test_weighted_and_macro_averages_equal_sklearn_exactly(case, zero_division):
    c = multiclass_case(*case)
    if c.n == 0 or (c.sample_weight is not None and c.sample_weight.sum() == 0):
        pytest.skip("scikit-learn refuses empty input and all-zero weights")
    k = c.num_classes
    keys = [_key(name, avg) for name in _SK for avg in ("weighted", "macro")]
    mc = MetricCollection(*keys, num_classes=k, multiclass=(k == 2), zero_division=zero_division)
    mc.update(c.y_true, y_pred=c.y_pred, sample_weight=c.sample_weight)
    got = dict(zip(keys, mc.compute().values()))  # canonical keys (iou@...) in the order given
    for name, fn in _SK.items():
        for avg in ("weighted", "macro"):
            want = fn(c.y_true, c.y_pred, labels=list(range(k)), average=avg, sample_weight=c.sample_weight, zero_division=zero_division)
            key = _key(name, avg)
            assert got[key] == float(want), f"{key} on {c.name}: {got[key]!r} != scikit-learn {float(want)!r}"


@pytest.mark.parametrize("seed", range(8))
def test_multilabel_weighted_average_equals_sklearn_exactly(seed):
    rng = np.random.default_rng(seed)
    n, labels = 37, 4
    y = rng.integers(0, 2, (n, labels))
    p = rng.integers(0, 2, (n, labels))
    # multiples of 1/4: the per-label weighted counts are exact, so only the averaging can differ
    w = rng.integers(0, 9, n) / 4.0 if seed % 2 else None
    keys = [_key(name, "weighted") for name in ("precision", "recall", "f1", "fbeta@beta=2")]
    mc = MetricCollection(*keys, task="multilabel", num_classes=labels)
    mc.update(y, y_pred=p, sample_weight=w)
    got = mc.compute()
    for name in ("precision", "recall", "f1", "fbeta@beta=2"):
        want = _SK[name](y, p, average="weighted", sample_weight=w, zero_division=0)
        assert got[_key(name, "weighted")] == float(want)
