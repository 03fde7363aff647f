"""A metric declares its input format (issue 18, OnlineMetrics' ``data_format``): used when the
caller names none; the caller's ``formats=`` win; conflicts and bad declarations raise."""

from __future__ import annotations

import pytest

from mergeable_metrics import Evaluation, MetricCollection
from mergeable_metrics.metrics.base import Accuracy, Recall, Task


class OneHotAccuracy(Accuracy):  # no name of its own: not registered
    data_format = {"target": "onehot", "prediction": "onehot"}


class LabelRecall(Recall):
    data_format = {"target": "labels"}


Y = [[1, 0, 0], [0, 1, 0], [0, 0, 1], [0, 0, 1]]  # labels 0, 1, 2, 2
P = [[1, 0, 0], [1, 0, 0], [0, 0, 1], [0, 1, 0]]  # predictions 0, 0, 2, 1: 2 of 4 right


def test_the_declared_format_is_used_when_none_is_given():
    mc = MetricCollection(OneHotAccuracy(Task(3)), num_classes=3)
    assert mc.formats == {"target": "onehot", "prediction": "onehot"}
    mc.update(Y, y_pred=P)
    assert mc.compute() == {"accuracy": 0.5}
    with pytest.raises(
        ValueError, match=r"column 'y_true': invalid value \[1.0, 1.0, 0.0\] at row 5: a one-hot row needs exactly one 1"
    ):  # rows count on (4 before)
        mc.update([[1, 0, 0], [1, 1, 0]], y_pred=[[1, 0, 0], [1, 0, 0]])
    ev = Evaluation(label_col="y", prediction_col="p", num_classes=3, metrics=[OneHotAccuracy(Task(3))])
    assert ev.evaluate([{"y": Y, "p": P}]).overall.metrics == {"accuracy": 0.5}


def test_the_callers_formats_win_and_conflicts_raise():
    mc = MetricCollection(OneHotAccuracy(Task(3)), num_classes=3, formats={"y_true": "labels", "y_pred": "labels"})
    mc.update([0, 1, 2, 2], y_pred=[0, 0, 2, 1])
    assert mc.compute() == {"accuracy": 0.5}
    with pytest.raises(ValueError, match="declare different target formats"):
        MetricCollection(OneHotAccuracy(Task(3)), LabelRecall(Task(3), average="macro"), num_classes=3)
    with pytest.raises(ValueError, match="data_format roles"):
        type("Bad", (Accuracy,), {"data_format": {"y": "onehot"}})
