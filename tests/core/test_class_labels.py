"""Class labels that are not 0..K-1: ``classes=[...]`` and ``pos_label=`` (issue 16, Python API).

References: scikit-learn on the original label values (its ``labels=`` / ``pos_label=``)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from sklearn.metrics import accuracy_score, confusion_matrix, f1_score, precision_score, recall_score, roc_auc_score

from mergeable_metrics import Evaluation, MetricCollection

ANIMALS = ["cat", "dog", "bird"]
Y = ["cat", "dog", "bird", "dog", "cat", "bird", "bird", "dog"]
P = ["cat", "dog", "dog", "dog", "bird", "bird", "cat", "dog"]


@pytest.mark.parametrize("make", [list, np.array, pd.Series, pa.array], ids=["list", "numpy", "pandas", "arrow"])
def test_string_classes_in_a_collection_match_sklearn(make):
    mc = MetricCollection("f1@none", "f1@macro", "confusion_matrix", "accuracy", classes=ANIMALS)
    assert mc.task.num_classes == 3
    mc.update(make(Y[:5]), y_pred=make(P[:5]))
    mc.update(make(Y[5:]), y_pred=make(P[5:]))
    r = mc.compute()
    np.testing.assert_allclose(r["f1@none"], f1_score(Y, P, labels=ANIMALS, average=None), rtol=0, atol=1e-15)
    assert r["f1@macro"] == pytest.approx(f1_score(Y, P, labels=ANIMALS, average="macro"), abs=1e-15)
    np.testing.assert_array_equal(r["confusion_matrix"], confusion_matrix(Y, P, labels=ANIMALS))
    assert r["accuracy"] == accuracy_score(Y, P)


def test_a_value_outside_the_classes_names_column_value_and_row():
    mc = MetricCollection("accuracy", classes=ANIMALS)
    mc.update(["cat"], y_pred=["dog"])
    with pytest.raises(ValueError, match=r"column 'y_true': invalid value 'fish' at row 3: not one of classes=\['cat', 'dog', 'bird'\] \(2 values"):
        mc.update(["dog", "bird", "fish", "fish"], y_pred=["dog"] * 4)
    with pytest.raises(ValueError, match=r"column 'y_pred': invalid value 'cow' at row 1"):
        mc.update(["dog"], y_pred=["cow"])
    ev = Evaluation(label_col="y", prediction_col="p", classes=ANIMALS, metrics=["accuracy"])
    with pytest.raises(ValueError, match=r"column 'p': invalid value None at row 2"):
        ev.evaluate({"y": ["cat", "dog", "dog"], "p": ["cat", "dog", None]})
    skip = Evaluation(label_col="y", prediction_col="p", classes=ANIMALS, metrics=["accuracy"], on_invalid="skip")
    r = skip.evaluate({"y": ["cat", "dog", "fish", "dog"], "p": ["cat", "cow", "dog", "dog"]})
    assert (r.overall.n, r.overall.skipped, r.overall.metrics["accuracy"]) == (2, 2, 1.0)


@pytest.mark.parametrize("classes,pos_label", [([-1, 1], None), ([-1, 1], 1), ([1, -1], 1), ([1, 2], 2), ([1, 2], 1)])
def test_binary_classes_and_pos_label_match_sklearn(classes, pos_label):
    rng = np.random.default_rng(3)
    y = rng.choice(classes, 200)
    s = rng.random(200)
    positive = classes[1] if pos_label is None else pos_label
    negative = next(c for c in classes if c != positive)
    pred = np.where(s >= 0.5, positive, negative)
    kw = {} if pos_label is None else {"pos_label": pos_label}
    ev = Evaluation(label_col="y", score_col="s", classes=classes, metrics=["precision", "recall", "roc_auc"], **kw)
    r = ev.evaluate(pd.DataFrame({"y": y, "s": s}))
    assert r.overall.metrics["precision"] == pytest.approx(precision_score(y, pred, pos_label=positive), abs=1e-15)
    assert r.overall.metrics["recall"] == pytest.approx(recall_score(y, pred, pos_label=positive), abs=1e-15)
    assert r.overall.metrics["roc_auc"] == pytest.approx(roc_auc_score(y == positive, s), abs=1e-12)
    assert r.classes == [negative, positive]  # index order: the positive class is class 1
    mc = MetricCollection("recall", classes=classes, **kw)
    mc.update(y.tolist(), y_pred=pred.tolist())  # predicted labels as class values
    assert mc.compute()["recall"] == pytest.approx(recall_score(y, pred, pos_label=positive), abs=1e-15)


def test_per_class_results_are_named_by_class():
    d = pd.DataFrame({"y": Y, "p": P, "g": list("aabbabab")})
    r = Evaluation(label_col="y", prediction_col="p", classes=ANIMALS, slices=["g"], metrics=["f1@none", "confusion_matrix", "accuracy"]).evaluate(d)
    want = dict(zip(ANIMALS, f1_score(Y, P, labels=ANIMALS, average=None)))
    assert r.per_class("f1@none") == pytest.approx(want, abs=1e-15)
    assert list(r.per_class("confusion_matrix", "g=a")) == ANIMALS
    assert r.config["classes"] == ANIMALS and r.class_names(3) == ANIMALS
    with pytest.raises(ValueError, match="is a scalar"):
        r.per_class("accuracy")
    plain = Evaluation(label_col="y", prediction_col="p", num_classes=3, metrics=["f1@none"]).evaluate({"y": [0, 1, 2], "p": [0, 1, 1]})
    assert list(plain.per_class("f1@none")) == [0, 1, 2] and plain.classes is None


def test_bad_class_settings_raise_naming_the_setting():
    with pytest.raises(ValueError, match=r"classes: 'cat' is given twice \(positions 0 and 2\)"):
        MetricCollection(classes=["cat", "dog", "cat"])
    with pytest.raises(ValueError, match=r"num_classes=4 but classes has 3 values"):
        Evaluation(label_col="y", prediction_col="p", classes=ANIMALS, num_classes=4)
    with pytest.raises(ValueError, match=r"pos_label='yes' is not one of classes=\['no', 'maybe'\]"):
        MetricCollection(classes=["no", "maybe"], pos_label="yes")
    with pytest.raises(ValueError, match=r"pos_label=1 applies to binary tasks"):
        MetricCollection(classes=[0, 1, 2], pos_label=1)
    with pytest.raises(ValueError, match=r"pos_label=1 needs classes="):
        Evaluation(label_col="y", score_col="s", pos_label=1)
    with pytest.raises(TypeError, match="a class value is a string or a number"):
        MetricCollection(classes=["a", None])
    with pytest.raises(ValueError, match="classes= applies to binary and multiclass tasks"):
        MetricCollection("mse", task="regression", classes=[1, 2])
    with pytest.raises(ValueError, match="classes= maps label values"):
        Evaluation(label_col="y", prediction_col="p", classes=ANIMALS, label_format="onehot")


def test_collections_of_other_classes_do_not_merge_and_to_config_round_trips():
    a, b = MetricCollection("accuracy", classes=["x", "y"]), MetricCollection("accuracy", classes=["y", "x"])
    with pytest.raises(ValueError, match="classes"):
        a.merge(b)
    ev = Evaluation(label_col="y", score_col="s", classes=[1, -1], pos_label=-1)
    again = Evaluation(**ev.to_config())
    assert again.classes == (1, -1) and again.fingerprint == ev.fingerprint
    other = Evaluation(label_col="y", score_col="s", classes=[-1, 1])
    assert other.fingerprint != ev.fingerprint
    with pytest.raises(ValueError, match="classes"):
        ev.merge(ev.zero(), other.zero())


def test_undefined_warnings_name_the_classes_by_value():
    from mergeable_metrics.metrics.base import UndefinedMetricWarning

    ev = Evaluation(label_col="y", prediction_col="p", classes=ANIMALS, metrics=["precision@none"])
    with pytest.warns(UndefinedMetricWarning, match=r"'precision@none' is undefined .* in slice 'Overall' \[class bird\]"):
        r = ev.evaluate({"y": ["cat", "dog", "bird"], "p": ["cat", "dog", "dog"]})  # bird is never predicted
    assert r.overall.undefined == [{"metric": "precision@none", "classes": [2]}]  # JSON keeps the class index


def test_any_batching_with_empty_and_sorted_batches_gives_the_same_states():
    rng = np.random.default_rng(9)
    y = rng.choice(ANIMALS, 60)
    p = rng.choice(ANIMALS, 60)
    ev = Evaluation(label_col="y", prediction_col="p", classes=ANIMALS, metrics=["confusion_matrix", "f1@macro"])
    one = ev.evaluate({"y": y, "p": p})
    order = np.argsort(y, kind="stable")  # sorted by label: each batch holds one or two classes
    parts = [slice(0, 0), slice(0, 17), slice(17, 17), slice(17, 60)]
    batches = [{"y": y[order][s], "p": p[order][s]} for s in parts]
    split = ev.evaluate(batches)
    np.testing.assert_array_equal(split.overall.metrics["confusion_matrix"], confusion_matrix(y, p, labels=ANIMALS))
    np.testing.assert_array_equal(split.overall.metrics["confusion_matrix"], one.overall.metrics["confusion_matrix"])
    assert split.overall.metrics["f1@macro"] == one.overall.metrics["f1@macro"]
    empty = ev.evaluate([{"y": np.array([], dtype=object), "p": np.array([], dtype=object)}])
    assert empty.overall.n == 0


@pytest.mark.parametrize("how", ["two_columns", "list_column", "collection"])
def test_pos_label_first_class_reads_two_column_scores_in_the_users_order(how):
    """predict_proba columns follow classes=[-1, 1]; with pos_label=-1 (the first class) the
    positive class's scores are column 0 (the breaker's case: roc_auc was 1 - the right value)."""
    from sklearn.metrics import log_loss, roc_auc_score

    from mergeable_metrics import MetricCollection

    y = np.array([-1, -1, 1, 1, -1, 1, -1])
    P = np.array([[0.9, 0.1], [0.6, 0.4], [0.3, 0.7], [0.2, 0.8], [0.7, 0.3], [0.5, 0.5], [0.35, 0.65]])
    want = {"roc_auc": roc_auc_score(y == -1, P[:, 0]), "log_loss": log_loss(y == -1, P[:, 0])}
    if how == "collection":
        mc = MetricCollection("roc_auc", "log_loss", classes=[-1, 1], pos_label=-1)
        mc.update(y, y_score=P)
        got = mc.compute()
    else:
        cols = {"y": y, "a": P[:, 0], "b": P[:, 1]} if how == "two_columns" else {"y": y, "s": list(P)}
        ev = Evaluation(label_col="y", score_col=["a", "b"] if how == "two_columns" else "s", classes=[-1, 1], pos_label=-1, metrics=["roc_auc", "log_loss"])
        got = ev.evaluate(cols).overall.metrics
    assert got["roc_auc"] == pytest.approx(want["roc_auc"], rel=1e-12) and got["log_loss"] == pytest.approx(want["log_loss"], rel=1e-12)
