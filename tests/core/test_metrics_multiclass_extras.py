"""Multiclass extras against scikit-learn over the named case grid (issue 3).

Metrics from the K x K confusion matrix: balanced_accuracy, cohen_kappa (none / linear /
quadratic), mcc, fbeta@beta=2 (all averages), classification_report, iou (all averages), miou,
dice; from class scores: top_k_accuracy (every k), log_loss, brier_score. Inputs as labels, one-hot
rows and probability / logit matrices; ``ignore_index`` (outside the classes, and a class id).
"""

from __future__ import annotations

import warnings
import zlib

import numpy as np
import pytest
from sklearn import metrics as skm

from mergeable_metrics import MetricCollection
from tests._helpers import MULTICLASS_GRID, close, multiclass_case

NAN = float("nan")
NO_DATA = ("empty", "all_weights_zero")
GRID_IDS = [f"{n}{'-w' if w else ''}" for n, w in MULTICLASS_GRID]


def _quiet(fn, *a, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*a, **kw)


def _probabilities(case) -> np.ndarray:
    """Seeded (n, K) probability rows whose argmax is the case's prediction (ties case: rows
    with exact ties, first index wins as the case's y_pred)."""
    rng = np.random.default_rng(zlib.crc32(f"scores-{case.name}".encode()))
    k, n = case.num_classes, case.n
    raw = rng.random((n, k))
    raw[np.arange(n), case.y_pred] += 1.0
    if case.name == "ties" and n:
        raw = np.round(raw * 2) / 2  # many exact ties inside rows
        raw[np.arange(n), case.y_pred] = raw.max(axis=1) + 0.5
    p = raw / raw.sum(axis=1, keepdims=True)
    return p


def _jaccard_nan(y, p, w, labels):
    j0 = skm.jaccard_score(y, p, labels=labels, average=None, sample_weight=w, zero_division=0)
    j1 = skm.jaccard_score(y, p, labels=labels, average=None, sample_weight=w, zero_division=1)
    return np.where(j0 == j1, j0, np.nan)


def _nanmean(v):
    v = np.asarray(v, dtype=float)
    return float(np.nanmean(v)) if not np.isnan(v).all() else NAN


def _reference(case) -> dict:
    y, p, w, k = case.y_true, case.y_pred, case.sample_weight, case.num_classes
    labels = list(range(k))
    nan = np.nan
    ref: dict = {
        "balanced_accuracy": skm.balanced_accuracy_score(y, p, sample_weight=w),
        "cohen_kappa": skm.cohen_kappa_score(y, p, labels=labels, sample_weight=w),
        "cohen_kappa@linear": skm.cohen_kappa_score(y, p, labels=labels, weights="linear", sample_weight=w),
        "cohen_kappa@quadratic": skm.cohen_kappa_score(y, p, labels=labels, weights="quadratic", sample_weight=w),
        "mcc@zero_division=0": skm.matthews_corrcoef(y, p, sample_weight=w),
    }
    for avg in ("micro", "macro", "weighted", None):
        key = f"fbeta@{avg or 'none'}@beta=2"
        ref[key] = skm.fbeta_score(y, p, beta=2, labels=labels, average=avg, sample_weight=w, zero_division=nan)
    jac = _jaccard_nan(y, p, w, labels)
    ref["iou@none"] = jac
    ref["iou@macro"] = ref["miou"] = _nanmean(jac)
    ref["iou@micro"] = skm.jaccard_score(y, p, labels=labels, average="micro", sample_weight=w)
    ref["dice@none"] = skm.f1_score(y, p, labels=labels, average=None, sample_weight=w, zero_division=nan)
    ref["dice@macro"] = skm.f1_score(y, p, labels=labels, average="macro", sample_weight=w, zero_division=nan)
    rep = skm.classification_report(y, p, labels=labels, output_dict=True, zero_division=nan, sample_weight=w)
    ref["classification_report"] = np.array([[rep[str(c)][m] for m in ("precision", "recall", "f1-score", "support")] for c in labels])
    cm = skm.confusion_matrix(y, p, labels=labels, sample_weight=w)
    t, pr, s = cm.sum(axis=1), cm.sum(axis=0), cm.sum()
    ref["mcc"] = nan if (s**2 - t @ t) * (s**2 - pr @ pr) == 0 else ref["mcc@zero_division=0"]
    probs = _probabilities(case)
    ref["log_loss"] = skm.log_loss(y, probs, labels=labels, sample_weight=w)
    ref["brier_score"] = skm.brier_score_loss(y, probs, labels=labels, sample_weight=w)
    if k > 2:  # sklearn's top-k treats K=2 as binary with (N,) scores
        for kk in range(1, k + 1):
            ref[f"top_k_accuracy@k={kk}"] = skm.top_k_accuracy_score(y, probs, k=kk, labels=labels, sample_weight=w)
    return ref


def _metrics(k: int) -> list[str]:
    ms = [
        "balanced_accuracy", "cohen_kappa", "cohen_kappa@linear", "cohen_kappa@quadratic", "mcc", "mcc@zero_division=0",
        "fbeta@micro@beta=2", "fbeta@macro@beta=2", "fbeta@weighted@beta=2", "fbeta@none@beta=2", "iou@none", "iou@macro",
        "iou@micro", "miou", "dice@none", "dice@macro", "classification_report", "log_loss", "brier_score",
    ]  # fmt: skip
    return ms + [f"top_k_accuracy@k={kk}" for kk in range(1, k + 1)]


def _ours(case, **kw) -> dict:
    mc = MetricCollection(*_metrics(case.num_classes), num_classes=case.num_classes, multiclass=True, **kw)
    _quiet(mc.update, case.y_true, y_score=_probabilities(case), sample_weight=case.sample_weight)
    return _quiet(mc.compute)


@pytest.mark.parametrize("name,weighted", MULTICLASS_GRID, ids=GRID_IDS)
def test_multiclass_extras_match_sklearn(name, weighted):
    case = multiclass_case(name, weighted)
    ours = _ours(case)
    if name in NO_DATA:
        for key in ("balanced_accuracy", "mcc", "cohen_kappa", "log_loss", "brier_score", "top_k_accuracy@k=1"):
            assert np.isnan(ours[key]), key
        return
    ref = _quiet(_reference, case)
    bad = {k: (ours[k], v) for k, v in ref.items() if not close(ours[k], v)}
    assert not bad, f"(ours, sklearn): {bad}"


def test_argmax_of_scores_equals_predicted_labels_and_onehot():
    case = multiclass_case("balanced", True)
    probs = _probabilities(case)
    keys = ["accuracy", "f1@macro", "cohen_kappa", "mcc", "miou"]
    by_scores = MetricCollection(*keys, num_classes=4)
    by_scores.update(case.y_true, y_score=probs, sample_weight=case.sample_weight)
    by_labels = MetricCollection(*keys, num_classes=4)
    by_labels.update(case.y_true, y_pred=case.y_pred, sample_weight=case.sample_weight)
    onehot = MetricCollection(*keys, num_classes=4)
    eye = np.eye(4, dtype=int)
    onehot.update(eye[case.y_true], y_pred=eye[case.y_pred], sample_weight=case.sample_weight)
    assert by_scores.states == by_labels.states == onehot.states


def test_logits_give_softmax_probabilities():
    rng = np.random.default_rng(5)
    z = rng.normal(0, 3, (50, 5))
    y = rng.integers(0, 5, 50)
    mc = MetricCollection("log_loss", "top_k_accuracy@k=3", "accuracy", num_classes=5, formats={"y_score": "logits"})
    mc.update(y, y_score=z)
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    r = mc.compute()
    assert close(r["log_loss"], skm.log_loss(y, p, labels=range(5)))
    assert close(r["top_k_accuracy@k=3"], skm.top_k_accuracy_score(y, z, k=3, labels=range(5)))
    assert close(r["accuracy"], skm.accuracy_score(y, z.argmax(axis=1)))


def test_top_k_any_k_up_to_max_k_from_one_state():
    case = multiclass_case("imbalanced")
    probs = _probabilities(case)
    mc = MetricCollection("top_k_accuracy@k=1@max_k=3", "top_k_accuracy@k=2@max_k=3", "top_k_accuracy@k=3", num_classes=3)
    mc.update(case.y_true, y_score=probs)
    assert [s.kind for s in mc.states].count("top_k") == 1
    for k in (1, 2):
        assert close(mc.compute()[f"top_k_accuracy@k={k}@max_k=3"], skm.top_k_accuracy_score(case.y_true, probs, k=k))
    with pytest.raises(ValueError, match="needs y_score"):
        MetricCollection("top_k_accuracy", num_classes=3).update([0, 1], y_pred=[0, 1])


def test_top_k_ties_follow_sklearn_order():
    y = np.array([0, 1, 2, 2, 1])
    s = np.array([[0.3, 0.3, 0.4], [0.5, 0.5, 0.0], [0.2, 0.4, 0.4], [0.5, 0.25, 0.25], [1 / 3, 1 / 3, 1 / 3]])
    for k in (1, 2):
        mc = MetricCollection(f"top_k_accuracy@k={k}", num_classes=3)
        mc.update(y, y_score=s)
        assert close(mc.compute()[f"top_k_accuracy@k={k}"], skm.top_k_accuracy_score(y, s, k=k, labels=[0, 1, 2]))


@pytest.mark.parametrize("ignore", [255, 0, 2])
def test_ignore_index_matches_sklearn_on_masked_rows(ignore):
    rng = np.random.default_rng(ignore)
    y = rng.integers(0, 4, 120)
    p = np.where(rng.random(120) < 0.6, y, rng.integers(0, 4, 120))
    w = rng.integers(0, 4, 120).astype(float)
    if ignore == 255:
        y[rng.choice(120, 20, replace=False)] = 255
    keep = y != ignore
    labels = [c for c in range(4) if c != ignore]
    mc = MetricCollection("accuracy", "recall@macro", "precision@macro", "f1@micro", "f1@weighted", "f1@none", "iou@none", "miou", "balanced_accuracy",
                          "cohen_kappa", num_classes=4, ignore_index=ignore)  # fmt: skip
    mc.update(y, y_pred=p, sample_weight=w)
    r = _quiet(mc.compute)
    yk, pk, wk = y[keep], p[keep], w[keep]
    assert close(r["accuracy"], skm.accuracy_score(yk, pk, sample_weight=wk))
    assert close(r["recall@macro"], skm.recall_score(yk, pk, labels=labels, average="macro", sample_weight=wk))
    assert close(r["precision@macro"], skm.precision_score(yk, pk, labels=labels, average="macro", sample_weight=wk))
    assert close(r["f1@micro"], skm.f1_score(yk, pk, labels=labels, average="micro", sample_weight=wk))
    assert close(r["f1@weighted"], skm.f1_score(yk, pk, labels=labels, average="weighted", sample_weight=wk))
    per_class = skm.f1_score(yk, pk, labels=labels, average=None, sample_weight=wk)
    if ignore < 4:  # the ignored class is NaN per class and leaves every average
        assert np.isnan(r["f1@none"][ignore]) and np.isnan(r["iou@none"][ignore])
    assert close(r["f1@none"][labels], per_class)
    jac = _jaccard_nan(yk, pk, wk, labels)
    assert close(r["iou@none"][labels], jac) and close(r["miou"], _nanmean(jac))
    assert close(r["balanced_accuracy"], _quiet(skm.balanced_accuracy_score, yk, pk, sample_weight=wk))
    assert close(r["cohen_kappa"], skm.cohen_kappa_score(yk, pk, labels=list(range(4)), sample_weight=wk))
    assert mc.compute()["f1@none"].shape == (4,)
    assert int(mc.states[0]["count"]) == int(keep.sum())  # dropped rows are not examples


def test_ignored_class_is_not_reported_as_undefined():
    mc = MetricCollection("f1@none", "recall@macro", num_classes=3, ignore_index=0, zero_division=0)
    mc.update([0, 1, 2, 0], y_pred=[1, 1, 2, 0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing undefined: class 0 is ignored on purpose
        r = mc.compute()
    assert np.isnan(r["f1@none"][0]) and r["recall@macro"] == 1.0


def test_multiclass_probability_rows_must_sum_to_one():
    mc = MetricCollection("log_loss", num_classes=3)
    with pytest.raises(ValueError, match=r"column 'y_score': invalid value \[0\.2, 0\.2, 0\.2\] at row 1: probability rows must sum to 1"):
        mc.update([0, 1], y_score=[[0.2, 0.3, 0.5], [0.2, 0.2, 0.2]])
    with pytest.raises(ValueError, match=r"score rows need 3 entries per row \(num_classes\), got shape \(2, 4\)"):
        mc.update([0, 1], y_score=[[0.2, 0.3, 0.5, 0.0], [0.2, 0.2, 0.2, 0.4]])
    mc = MetricCollection("accuracy", "top_k_accuracy", num_classes=3)  # scores need not be probabilities
    mc.update([0, 1], y_score=[[2.0, -1.0, 0.5], [0.0, 7.0, 1.0]])
    assert mc.compute()["accuracy"] == 1.0
