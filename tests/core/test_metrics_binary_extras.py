"""Binary extras against scikit-learn over the named case grid (issue 3).

Metrics: specificity, npv, fpr, fnr, balanced_accuracy (plain and adjusted), mcc, cohen_kappa,
prevalence, mean_label, mean_prediction, log_loss, brier_score, ece, mce, reliability_diagram,
fbeta@beta=2, iou, miou, dice, classification_report. Grid: balanced, imbalanced, one class
(positive / negative), ties at the threshold, weights with zeros, all weights zero, single row,
empty; each unweighted and weighted. Where scikit-learn raises (empty input, zero total weight),
our policy is NaN; where it returns 0.0 for an undefined MCC, ours is NaN unless
``zero_division=0``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn import metrics as skm
from sklearn.calibration import calibration_curve

from mergeable_metrics import MetricCollection
from tests._helpers import BINARY_GRID, binary_case, close

NAN = float("nan")
NO_DATA = ("empty", "all_weights_zero")
GRID_IDS = [f"{n}{'-w' if w else ''}" for n, w in BINARY_GRID]

EXTRAS = (
    "specificity", "npv", "fpr", "fnr", "balanced_accuracy", "balanced_accuracy@adjusted=true", "mcc",
    "mcc@zero_division=0", "cohen_kappa", "cohen_kappa@linear", "prevalence", "mean_label", "mean_prediction",
    "log_loss", "brier_score", "fbeta@beta=2", "iou", "miou", "dice", "classification_report",
    "ece@n_bins=7", "mce@n_bins=7", "reliability_diagram@n_bins=7",
)  # fmt: skip


def _compute(case, metrics=EXTRAS, **kw):
    mc = MetricCollection(*metrics, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mc.update(case.y_true, y_score=case.y_score, sample_weight=case.sample_weight)
        return mc.compute()


def _jaccard_nan(y, p, w, labels, average=None):
    """sklearn's jaccard per class, NaN where undefined (zero_division 0 and 1 disagree)."""
    j0 = skm.jaccard_score(y, p, labels=labels, average=None, sample_weight=w, zero_division=0)
    j1 = skm.jaccard_score(y, p, labels=labels, average=None, sample_weight=w, zero_division=1)
    return np.where(j0 == j1, j0, np.nan)


def _reference(case) -> dict:
    y, s, w = case.y_true, case.y_score, case.sample_weight
    p = case.y_pred(0.5)
    nan = np.nan
    ref = {
        "specificity": skm.recall_score(y, p, pos_label=0, labels=[0, 1], sample_weight=w, zero_division=nan),
        "npv": skm.precision_score(y, p, pos_label=0, labels=[0, 1], sample_weight=w, zero_division=nan),
        "fnr": 1 - skm.recall_score(y, p, sample_weight=w, zero_division=nan),
        "balanced_accuracy": skm.balanced_accuracy_score(y, p, sample_weight=w),
        "mcc@zero_division=0": skm.matthews_corrcoef(y, p, sample_weight=w),
        "cohen_kappa": skm.cohen_kappa_score(y, p, labels=[0, 1], sample_weight=w),
        "cohen_kappa@linear": skm.cohen_kappa_score(y, p, labels=[0, 1], weights="linear", sample_weight=w),
        "prevalence": np.average(y, weights=w),
        "mean_label": np.average(y, weights=w),
        "mean_prediction": np.average(s, weights=w),
        "log_loss": skm.log_loss(y, s, labels=[0, 1], sample_weight=w),
        "brier_score": skm.brier_score_loss(y, s, pos_label=1, sample_weight=w),
        "fbeta@beta=2": skm.fbeta_score(y, p, beta=2, sample_weight=w, zero_division=nan),
        "iou": float(_jaccard_nan(y, p, w, [1])[0]),
        "miou": float(np.nanmean(_jaccard_nan(y, p, w, [0, 1]))) if not np.isnan(_jaccard_nan(y, p, w, [0, 1])).all() else nan,
        "dice": skm.f1_score(y, p, sample_weight=w, zero_division=nan),
    }
    ref["fpr"] = 1 - ref["specificity"]
    present = len(set(y.tolist()) & {0, 1}) if w is None else len({int(c) for c, ww in zip(y, w) if ww > 0})
    ref["balanced_accuracy@adjusted=true"] = skm.balanced_accuracy_score(y, p, sample_weight=w, adjusted=True) if present > 1 else nan
    cov = ref["mcc@zero_division=0"]
    cm = skm.confusion_matrix(y, p, labels=[0, 1], sample_weight=w)
    t, pr = cm.sum(axis=1), cm.sum(axis=0)
    undefined_mcc = (cm.sum() ** 2 - t @ t) * (cm.sum() ** 2 - pr @ pr) == 0
    ref["mcc"] = nan if undefined_mcc else cov
    rep = skm.classification_report(y, p, labels=[0, 1], output_dict=True, zero_division=nan, sample_weight=w)
    ref["classification_report"] = np.array([[rep[str(c)][k] for k in ("precision", "recall", "f1-score", "support")] for c in (0, 1)])
    # equal-width bins (7 bins: no 3-decimal score sits on an edge k/7), weighted by hand
    ids = np.searchsorted(np.linspace(0, 1, 8)[1:-1], s)
    ww = np.ones_like(s) if w is None else w
    cnt = np.bincount(ids, weights=ww, minlength=7)
    ss = np.bincount(ids, weights=ww * s, minlength=7)
    sl = np.bincount(ids, weights=ww * y, minlength=7)
    full = cnt > 0
    ref["ece@n_bins=7"] = float(np.abs(sl - ss).sum() / cnt.sum())
    ref["mce@n_bins=7"] = float((np.abs(sl[full] - ss[full]) / cnt[full]).max())
    diag = np.full((7, 3), nan)
    diag[:, 0] = cnt
    diag[full, 1] = ss[full] / cnt[full]
    diag[full, 2] = sl[full] / cnt[full]
    ref["reliability_diagram@n_bins=7"] = diag
    return ref


@pytest.mark.parametrize("name,weighted", BINARY_GRID, ids=GRID_IDS)
def test_binary_extras_match_sklearn(name, weighted):
    case = binary_case(name, weighted)
    ours = _compute(case)
    if name in NO_DATA:  # sklearn raises or divides by zero; an average over nothing is NaN
        for k in ("balanced_accuracy", "mcc", "prevalence", "mean_label", "mean_prediction", "log_loss", "brier_score", "ece@n_bins=7", "mce@n_bins=7"):
            assert np.isnan(ours[k]), k
        assert ours["mcc@zero_division=0"] == 0.0  # sklearn's value for an undefined MCC
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = _reference(case)
    bad = {k: (ours[k], v) for k, v in ref.items() if not close(ours[k], v)}
    assert not bad, f"(ours, sklearn): {bad}"


@pytest.mark.parametrize("name", ["balanced", "imbalanced", "ties", "one_class_pos"])
def test_reliability_diagram_matches_calibration_curve(name):
    case = binary_case(name)
    diag = _compute(case, ["reliability_diagram@n_bins=7"])["reliability_diagram@n_bins=7"]
    prob_true, prob_pred = calibration_curve(case.y_true, case.y_score, n_bins=7, strategy="uniform", pos_label=1)
    full = diag[:, 0] > 0
    assert close(diag[full, 1], prob_pred) and close(diag[full, 2], prob_true)


@pytest.mark.parametrize("threshold,rule", [(0.25, ">="), (0.5, ">"), (0.75, ">=")])
def test_extras_at_other_thresholds_and_rules(threshold, rule):
    case = binary_case("ties")  # many scores exactly on 0.25 / 0.5 / 0.75
    ours = _compute(case, [f"specificity@threshold={threshold}", f"mcc@threshold={threshold}", f"npv@threshold={threshold}"], threshold_rule=rule)
    p = case.y_pred(threshold, rule)
    y = case.y_true
    assert close(ours[f"specificity@threshold={threshold}"], skm.recall_score(y, p, pos_label=0))
    assert close(ours[f"npv@threshold={threshold}"], skm.precision_score(y, p, pos_label=0))
    assert close(ours[f"mcc@threshold={threshold}"], skm.matthews_corrcoef(y, p))


def test_hard_predictions_work_as_scores_for_probabilistic_metrics():
    y = np.array([1, 0, 1, 1, 0])
    p = np.array([1, 0, 0, 1, 1])
    mc = MetricCollection("log_loss", "brier_score", "mean_prediction", "specificity")
    mc.update(y, y_pred=p)
    r = mc.compute()
    assert close(r["log_loss"], skm.log_loss(y, p.astype(float)))
    assert close(r["brier_score"], skm.brier_score_loss(y, p.astype(float)))
    assert close(r["mean_prediction"], 0.6) and close(r["specificity"], 0.5)


def test_probability_metrics_reject_scores_outside_unit_interval():
    mc = MetricCollection("log_loss")
    with pytest.raises(ValueError, match=r"column 'y_score': invalid value 1\.5 at row 2: probabilities must be in \[0, 1\]"):
        mc.update([1, 0, 1], y_score=[0.5, 0.2, 1.5])
    # metrics that read any score accept logits
    mc = MetricCollection("specificity", "mean_prediction", threshold=0.0)
    mc.update([1, 0, 1], y_score=[2.5, -1.0, -0.5])
    assert close(mc.compute()["mean_prediction"], 1.0 / 3)


def test_log_loss_eps_and_brier_are_additive_over_workers():
    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 200)
    s = np.round(rng.random(200), 2)
    s[:5] = [0.0, 1.0, 0.0, 1.0, 0.5]
    parts = [MetricCollection("log_loss", "log_loss@eps=1e-07", "brier_score") for _ in range(3)]
    for i, mc in enumerate(parts):
        mc.update(y[i::3], y_score=s[i::3])
    merged = parts[2].merge(parts[0]).merge(parts[1])
    r = merged.compute()
    assert close(r["log_loss"], skm.log_loss(y, s))
    clipped = np.clip(s, 1e-7, 1 - 1e-7)
    assert close(r["log_loss@eps=1e-07"], -np.mean(np.where(y == 1, np.log(clipped), np.log(1 - clipped))))
    assert close(r["brier_score"], skm.brier_score_loss(y, s))
    assert len(merged.states) == 2  # example_count + one probability_sums state (eps values shared)


def test_calibration_bins_edges_and_last_bin_closed():
    y = [0, 1, 1, 0, 1]
    s = [0.0, 0.5, 1.0, 0.3, 0.2]  # 0.5 and 0.3 sit on edges of 10 bins: [0.5, 0.6) and [0.3, 0.4)
    diag = _compute(type("C", (), {"y_true": y, "y_score": s, "sample_weight": None})(), ["reliability_diagram"])["reliability_diagram"]
    assert diag[:, 0].tolist() == [1, 0, 1, 1, 0, 1, 0, 0, 0, 1]
    assert diag[9, 1] == 1.0 and diag[5, 1] == 0.5 and diag[3, 1] == 0.3
