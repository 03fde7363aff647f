"""OnlineMetrics' constructors, defaults and functions (issue 29, item 7): its examples verbatim,
printed values included (OnlineMetrics.jl's docstrings and README; ``step!(m, ŷ, y)`` takes the
predictions first), and each value against scikit-learn."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn import metrics as skm

import mergeable_metrics
from mergeable_metrics import SingleMetric
from mergeable_metrics import onlinemetrics as om

pytestmark = pytest.mark.filterwarnings("ignore::mergeable_metrics.UndefinedMetricWarning")  # a class absent from one part


# --- the OnlineMetrics examples, verbatim --------------------------------------------------------
def test_readme_collection_of_accuracy_and_precision():
    # mc = MetricCollection(Accuracy(2), Precision(2)); step!(mc, [0,1,1,0], [0,1,0,0]); value(mc)
    mc = om.MetricCollection(om.Accuracy(2), om.Precision(2))
    state = om.step(mc, [0, 1, 1, 0], [0, 1, 0, 0])
    assert om.value(mc, state) == {"accuracy": 0.75, "precision": 0.75}
    # the references: 3 of 4 right; macro precision (2/2 + 1/2) / 2
    assert skm.accuracy_score([0, 1, 0, 0], [0, 1, 1, 0]) == 0.75
    assert skm.precision_score([0, 1, 0, 0], [0, 1, 1, 0], average="macro") == 0.75


def test_precision_of_two_classes_is_macro_by_default_where_the_string_is_binary():
    y, p = [0, 1, 0, 0], [0, 1, 1, 0]
    m = om.Precision(2)
    m.update(y, y_pred=p)
    assert m.compute() == 0.75 == skm.precision_score(y, p, average="macro")
    s = SingleMetric("precision", num_classes=2)  # scikit-learn's default: the positive class
    s.update(y, y_pred=p)
    assert s.compute() == 0.5 == skm.precision_score(y, p)


def test_docstring_tree_accuracy_precision_miou():
    # step!(m, [0, 0, 1, 0], [0, 0, 1, 1]) prints
    #   accuracy: value=0.75 | correct=3 | n=4
    #   precision: value=[0.666667, 1.0] | tp=[2, 1] | fp=[1, 0]
    #   mIoU: value=0.583333 | intersection=[2, 1] | union=[3, 2]
    mc = om.MetricCollection(om.Accuracy(2), om.Precision(2, agg=None), om.mIoU(2))
    mc.update([0, 0, 1, 1], y_pred=[0, 0, 1, 0])
    lines = repr(mc).splitlines()
    assert lines[-3].startswith("    ├── accuracy: value=0.75 | correct=3 | n=4  [")
    assert lines[-2].startswith("    ├── precision (precision@none): value=[0.666667, 1.0] | tp=[2, 1] | fp=[1, 0]  [")
    assert lines[-1].startswith("    └── mIoU (miou): value=0.583333 | intersection=[2, 1] | union=[3, 2]  [")
    trackers = [om.Accuracy(2), om.Precision(2, agg=None), om.mIoU(2)]
    for t in trackers:
        t.update([0, 0, 1, 1], y_pred=[0, 0, 1, 0])
    assert [repr(t) for t in trackers] == [
        "accuracy: value=0.75 | correct=3 | n=4",
        "precision: value=[0.666667, 1.0] | tp=[2, 1] | fp=[1, 0]",
        "mIoU: value=0.583333 | intersection=[2, 1] | union=[3, 2]",
    ]
    np.testing.assert_array_equal(trackers[1].compute(), skm.precision_score([0, 0, 1, 1], [0, 0, 1, 0], average=None))
    assert trackers[2].compute() == skm.jaccard_score([0, 0, 1, 1], [0, 0, 1, 0], average="macro")


def test_docstring_collection_with_prefix_over_two_steps():
    # md = MetricCollection(Accuracy(), MIoU([0,1]); prefix="train_")
    # step!(md, [0, 0, 1, 0], [0, 0, 1, 1]) -> train_accuracy=0.75, train_MIoU=0.5833333333333334
    # step!(md, [0, 0, 1, 1], [0, 0, 1, 1]) -> train_accuracy=0.875, train_MIoU=0.775
    md = om.MetricCollection(om.Accuracy(2), om.MIoU(2, name="MIoU"), prefix="train_")
    s = om.step(md, [0, 0, 1, 0], [0, 0, 1, 1])
    got = om.value(md, s)
    assert list(got) == ["train_accuracy", "train_MIoU"] and got["train_accuracy"] == 0.75
    # OnlineMetrics prints 0.5833333333333334 (it adds eps to each ratio); here the mean of 2/3 and 1/2
    # is scikit-learn's, one ulp below
    assert got["train_MIoU"] == pytest.approx(0.5833333333333334, rel=1e-15, abs=0)
    assert got["train_MIoU"] == skm.jaccard_score([0, 0, 1, 1], [0, 0, 1, 0], average="macro") == 0.5833333333333333
    s = om.step(md, [0, 0, 1, 1], [0, 0, 1, 1], s)
    assert om.value(md, s) == {"train_accuracy": 0.875, "train_MIoU": 0.775}
    y, p = [0, 0, 1, 1, 0, 0, 1, 1], [0, 0, 1, 0, 0, 0, 1, 1]
    assert skm.jaccard_score(y, p, average="macro") == 0.775 and skm.accuracy_score(y, p) == 0.875


def test_average_measure_weights_batches_by_their_size():
    # AverageMeasure(measure, name) over ŷ = [1.5, 2.0], y = [1.0, 2.0] then ŷ = [3.0], y = [0.0]
    loss = om.AverageMeasure(lambda p, y: float(np.mean(np.abs(p - y))), "mae")
    s = om.step(loss, [1.5, 2.0], [1.0, 2.0])
    s = om.step(loss, [3.0], [0.0], s)
    want = skm.mean_absolute_error([1.0, 2.0, 0.0], [1.5, 2.0, 3.0])  # (0.25 * 2 + 3.0 * 1) / 3
    assert om.value(loss, s) == pytest.approx(want, rel=1e-15)
    order = om.AverageMeasure(lambda p, y: float(np.mean(p - y)), "bias")  # its argument order: predictions first
    assert om.value(order, om.step(order, [3.0], [1.0])) == 2.0


# --- the constructors' defaults against scikit-learn ---------------------------------------------
Y = np.array([0, 1, 2, 2, 1, 0, 2, 1, 1, 0])
P = np.array([0, 2, 2, 1, 1, 0, 2, 0, 1, 1])


@pytest.mark.parametrize(
    "make, ref",
    [
        (lambda: om.Precision(3), lambda: skm.precision_score(Y, P, average="macro")),
        (lambda: om.Precision(3, agg="micro"), lambda: skm.precision_score(Y, P, average="micro")),
        (lambda: om.Recall(3), lambda: skm.recall_score(Y, P, average="macro")),
        (lambda: om.Recall(3, agg=None), lambda: skm.recall_score(Y, P, average=None)),
        (lambda: om.F1Score(3), lambda: skm.f1_score(Y, P, average="macro")),
        (lambda: om.IoU(3), lambda: skm.jaccard_score(Y, P, average=None)),
        (lambda: om.mIoU(3), lambda: skm.jaccard_score(Y, P, average="macro")),
        (lambda: om.Accuracy(3), lambda: skm.accuracy_score(Y, P)),
        (lambda: om.ConfusionMatrix(3), lambda: skm.confusion_matrix(Y, P).T),  # rows: predictions, columns: true labels
    ],
)
def test_constructor_defaults_match_sklearn(make, ref):
    m = make()
    m.update(Y[:4], y_pred=P[:4])
    m.update(Y[4:], y_pred=P[4:])
    np.testing.assert_allclose(m.compute(), ref(), rtol=1e-15, atol=0)


def test_confusion_matrix_orientation_rows_are_predictions():
    c = om.ConfusionMatrix(2)
    c.update([1, 1, 1], y_pred=[0, 0, 1])  # two true 1s predicted 0: row "predicted 0", column "true 1"
    assert c.compute().tolist() == [[0.0, 2.0], [0.0, 1.0]]


def test_bad_constructor_arguments_name_the_setting():
    with pytest.raises(ValueError, match="nclasses must be an integer >= 2"):
        om.Precision(1)
    with pytest.raises(ValueError, match="Precision: agg must be 'macro', 'micro' or None"):
        om.Precision(2, agg="weighted_mean")
    with pytest.raises(ValueError, match=r"'precision' has num_classes=3 where 'accuracy' has num_classes=2"):
        om.MetricCollection(om.Accuracy(2), om.Precision(3))
    with pytest.raises(ValueError, match="two metrics named 'accuracy'"):
        om.MetricCollection(om.Accuracy(2), om.Accuracy(2))
    with pytest.raises(TypeError, match="takes trackers"):
        om.MetricCollection("accuracy")


# --- merge, step, value ----------------------------------------------------------------------------
def test_merge_is_variadic_and_exact():
    parts = [om.Precision(3) for _ in range(3)]
    for m, idx in zip(parts, np.array_split(np.arange(10), 3)):
        m.update(Y[idx], y_pred=P[idx])
    before = [m.compute() for m in parts]
    merged = om.merge(*parts)
    assert om.merge is mergeable_metrics.merge
    assert merged.compute() == skm.precision_score(Y, P, average="macro")
    assert [m.compute() for m in parts] == before  # the inputs are left unchanged


def test_step_is_functional():
    m = om.F1Score(3)
    s1 = om.step(m, P[:5], Y[:5])
    s2 = om.step(m, P[5:], Y[5:], s1)
    assert s1 == om.step(m, P[:5], Y[:5])  # the same inputs, the same state: nothing kept between calls
    assert m.states == m.plan.zero()  # the tracker is unchanged
    assert om.value(m, s2) == skm.f1_score(Y, P, average="macro")
    assert om.value(m, m.plan.merge(om.step(m, P[5:], Y[5:]), s1)) == om.value(m, s2)  # states merge in any order
    w = np.arange(1.0, 11.0)
    assert om.value(m, om.step(m, P, Y, sample_weight=w)) == pytest.approx(skm.f1_score(Y, P, average="macro", sample_weight=w), rel=1e-15)
    with pytest.raises(TypeError, match="step\\(\\) takes a tracker"):
        om.step("accuracy", [0], [0])


def test_value_and_step_refuse_a_state_of_another_configuration():
    """The state of a 4-class metric read by a 3-class one: an error naming the setting, never a
    value (it gave 1.0 for precision and mIoU), nor a KeyError."""
    s4 = om.step(om.Precision(4), [0, 1, 3], [0, 1, 3])
    for m in (om.Precision(3), om.mIoU(3)):
        with pytest.raises(ValueError, match="num_classes 3 != 4"):
            om.value(m, s4)
        with pytest.raises(ValueError, match="num_classes 3 != 4"):
            om.step(m, [0, 1, 2], [0, 1, 2], s4)
    with pytest.raises(ValueError, match=r"states of kinds \['example_count', 'confusion_matrix'\] do not belong to .* \['example_count', 'mean_measure'\]"):
        om.value(om.AverageMeasure(lambda p, y: 1.0, "one"), s4)
    assert om.value(om.Precision(4), s4) == 1.0  # its own state reads as before


# --- data formats: (N, 1) label columns, one-hot output, validate ---------------------------------
def test_an_n_by_1_label_column_is_read_as_class_indices():
    m = om.Accuracy(3)
    m.update(Y.reshape(-1, 1), y_pred=P.reshape(-1, 1))
    assert m.compute() == skm.accuracy_score(Y, P)
    b = SingleMetric("accuracy")
    b.update([[0], [1], [1]], y_pred=[[0], [1], [0]])
    assert b.compute() == skm.accuracy_score([0, 1, 1], [0, 1, 0])


def test_format_gives_one_hot_and_labels_as_onlinemetrics_one_hot():
    eye = np.eye(3, dtype=np.int64)
    np.testing.assert_array_equal(om.format(Y, num_classes=3), eye[Y])  # (N,) labels
    np.testing.assert_array_equal(om.format(Y.reshape(-1, 1), num_classes=3), eye[Y])  # (N, 1): class indices
    np.testing.assert_array_equal(om.format(eye[Y], num_classes=3), eye[Y])  # one-hot stays one-hot
    np.testing.assert_array_equal(om.format(eye[Y], "labels", num_classes=3), Y)  # onecold
    scores = np.random.default_rng(0).dirichlet(np.ones(3), 10)
    np.testing.assert_array_equal(om.format(scores, "onehot", num_classes=3, role="score"), eye[np.argmax(scores, axis=1)])
    logits = np.log(scores)
    np.testing.assert_allclose(om.format(logits, "scores", "logits", num_classes=3, role="score"), scores, rtol=1e-12)
    with pytest.raises(ValueError, match="to must be"):
        om.format(Y, "probabilities", num_classes=3)


def test_validate_names_column_value_and_row():
    om.validate([0, 2, 1], num_classes=3)
    om.validate([[0, 1], [1, 0]], "onehot")
    with pytest.raises(ValueError, match=r"column 'y': invalid value \[1.0, 1.0\] at row 1: a one-hot row needs exactly one 1"):
        om.validate([[0, 1], [1, 1]], "onehot", column="y")
    with pytest.raises(ValueError, match=r"column 'values': invalid value 3.0 at row 2: labels must be integers in \[0, 3\)"):
        om.validate([[0], [2], [3]], num_classes=3)
    with pytest.raises(ValueError, match=r"probability rows must sum to 1"):
        om.validate([[0.5, 0.6]], "probabilities", role="score")
