"""The single-metric tracker (issue 18): value, counts, merge, codec, name, repr; against
scikit-learn and hand-computed counts."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.metrics import f1_score, jaccard_score, precision_score

from mergeable_metrics import SingleMetric, merge
from mergeable_metrics.metrics import MeanMeasure


def test_scalar_value_counts_and_repr():
    m = SingleMetric("accuracy")
    m.update([0, 1, 1, 1], y_pred=[0, 1, 0, 1])
    assert m.compute() == 0.75 and isinstance(m.compute(), float)
    assert m.counts() == {"correct": 3.0, "n": 4.0}
    assert repr(m) == "accuracy: value=0.75 | correct=3 | n=4"
    named = SingleMetric("accuracy", name="My Accuracy Metric")
    assert repr(named).startswith("My Accuracy Metric: value=nan | correct=0 | n=0")


def test_per_class_value_is_an_array():
    y, p = np.array([0, 0, 1, 1, 2, 2, 2]), np.array([0, 1, 1, 1, 2, 0, 2])
    prec = SingleMetric("precision@none", num_classes=3, name="precision")
    for idx in np.array_split(np.arange(7), [0, 3, 3]):  # an empty batch too
        prec.update(y[idx], y_pred=p[idx])
    assert np.allclose(prec.compute(), precision_score(y, p, average=None))
    c = prec.counts()
    assert c["tp"].tolist() == [1, 2, 2] and c["fp"].tolist() == [1, 1, 0]  # hand counts: column sums minus diagonal
    assert repr(prec) == "precision: value=[0.5, 0.666667, 1.0] | tp=[1, 2, 2] | fp=[1, 1, 0]"
    f1 = SingleMetric("f1@macro", num_classes=3)
    f1.update(y, y_pred=p)
    assert math.isclose(f1.compute(), f1_score(y, p, average="macro"))
    iou = SingleMetric("miou", num_classes=3)
    iou.update(y, y_pred=p)
    assert math.isclose(iou.compute(), jaccard_score(y, p, average="macro"))
    assert iou.counts()["union"].tolist() == [3, 3, 3]  # |pred u true| per class


def test_merge_codec_and_configuration_checks():
    a, b = SingleMetric("recall"), SingleMetric("recall")
    a.update([1, 1, 0], y_score=[0.9, 0.2, 0.7])
    b.update([1, 0], y_score=[0.6, 0.1])
    merged = merge(a, b)  # a new tracker; a.merge(b) merges into a
    assert isinstance(merged, SingleMetric) and merged.compute() == pytest.approx(2 / 3) and a.compute() == 0.5
    assert merged.counts() == {"tp": 2.0, "fn": 1.0}
    back = a.decode(merged.encode())
    assert back.compute() == merged.compute() and a.compute() == 0.5
    assert a.merge(b) is a and a.counts() == {"tp": 2.0, "fn": 1.0} and b.compute() == 1.0
    with pytest.raises(ValueError, match="threshold"):
        a.merge(SingleMetric("recall", threshold=0.7))
    with pytest.raises(TypeError, match="one metric"):
        SingleMetric(["recall", "precision"])  # type: ignore[arg-type]


def test_a_measure_tracker():
    m = SingleMetric(MeanMeasure(lambda y, p: np.abs(np.asarray(y) - np.asarray(p)), name="mae"), task="regression")
    m.update([1.0, 2.0], y_pred=[1.5, 2.0], sample_weight=[2.0, 1.0])
    m.update([0.0], y_pred=[3.0])
    assert m.compute() == pytest.approx((1.0 + 0 + 3.0) / 4)
    assert repr(m) == "mae: value=1.0 | n=3 | weight=4"
