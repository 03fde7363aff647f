"""Parity of every issue-2 metric with scikit-learn over the named case grid.

Metrics: accuracy, precision, recall, f1, fbeta, tp/fp/tn/fn, confusion_matrix. Binary at one
threshold (``>=`` and ``>``), at several thresholds in one plan, and from hard predictions;
binary and multiclass with average micro/macro/weighted/none; sample weights; zero_division in
{0, 1, "nan", "warn"} ("warn": value 0.0 plus a ``mergeable_metrics.UndefinedMetricWarning`` exactly where
scikit-learn warns).

Tolerance: ``abs(a - b) <= 1e-9 * max(1, |a|, |b|)``, NaN == NaN.

scikit-learn 1.9 refuses empty input and all-zero weights; there the reference is the
hand-derived value of our policy (zero_division values, accuracy NaN), asserted explicitly in
``test_policy_*`` below rather than taken from scikit-learn.
"""

from __future__ import annotations

import math
import re
import warnings

import numpy as np
import pytest

import mergeable_metrics
from mergeable_metrics import BinaryMetrics, MetricCollection
from mergeable_metrics.engine import Plan
from tests._helpers import (
    BINARY_GRID,
    MULTICLASS_GRID,
    assert_all_close,
    binary_case,
    close,
    multiclass_case,
    sk_binary,
    sk_multiclass,
)
from tests._helpers.cases import TIE_THRESHOLDS, grid_id
from tests._helpers.sklearn_ref import avg_name, fmt_beta

# warnings are asserted explicitly (inside catch_warnings) where they matter; elsewhere NaN results
# UndefinedMetricWarnings are noise
pytestmark = pytest.mark.filterwarnings("ignore::mergeable_metrics.UndefinedMetricWarning")

ZERO_DIVISIONS = [0, 1, "nan", "warn"]
RULES = [">=", ">"]
BETAS = (0.5, 2.0)


def _prf_keys(binary: bool) -> list[str]:
    averages = ([""] if binary else []) + [f"@{avg_name(a)}" for a in ("micro", "macro", "weighted", None)]
    keys = []
    for suffix in averages:
        keys += [f"precision{suffix}", f"recall{suffix}", f"f1{suffix}"]
        keys += [f"fbeta{suffix}@beta={fmt_beta(b)}" for b in BETAS]
    return keys


BINARY_KEYS = ["tp", "fp", "tn", "fn", "accuracy", "confusion_matrix", *_prf_keys(True)]
MULTICLASS_KEYS = ["accuracy", "confusion_matrix", *_prf_keys(False)]


def _is_prf(key: str) -> bool:
    return key.split("@")[0] in ("precision", "recall", "f1", "fbeta")


def compute_each(mc: MetricCollection) -> tuple[dict, set[str], list]:
    """Compute every metric of ``mc`` through its own single-metric Plan (on ``mc``'s states), so
    each warning is attributable to one metric whichever layer emits it.

    Returns ``(values, keys that raised mergeable_metrics.UndefinedMetricWarning, other warnings)``.
    """
    values, warned, other = {}, set(), []
    for m in mc.plan.metrics:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            values[m.key] = Plan([m], mc.task).compute(mc.states)[m.key]
        for w in caught:
            if issubclass(w.category, mergeable_metrics.UndefinedMetricWarning):
                warned.add(m.key)
            else:
                other.append(w)
    return values, warned, other


def check_against(mc: MetricCollection, ref: dict, ref_warned: set[str], zero_division, context: str) -> None:
    """Values match the reference (keys: ours -> reference, identical unless ``ref`` is remapped).

    Warnings (checked for precision/recall/F metrics only; NaN accuracy over no weight may warn):
    with "warn", exactly where scikit-learn warns (and never NaN); with 0 or 1, none; with "nan",
    not checked (our policy may warn for NaN values, scikit-learn does not).
    """
    values, warned, other = compute_each(mc)
    assert_all_close(values, {k: ref[k] for k in values}, context=context)
    assert not other, f"{context}: unexpected warnings {[str(w.message) for w in other]}"
    warned_prf = {k for k in warned if _is_prf(k)}
    expected = {k for k in values if k in ref_warned and _is_prf(k)}
    if zero_division == "warn":
        assert warned_prf == expected, f"{context}: warned for {sorted(warned_prf)}, sklearn for {sorted(expected)}"
        for k in values:  # "warn" never yields NaN for an undefined ratio
            if _is_prf(k):
                assert not np.isnan(np.asarray(values[k], dtype=float)).any(), f"{context}: {k} is NaN under 'warn'"
    elif zero_division in (0, 1):
        assert not warned_prf, f"{context}: UndefinedMetricWarning for {sorted(warned_prf)} with zero_division={zero_division!r}"
    # the whole-plan compute agrees with metric-by-metric compute
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        together = mc.compute()
    assert_all_close(together, values, context=context + " (plan.compute)")


# ---------------------------------------------------------------------------------------------
# binary
@pytest.mark.parametrize("zero_division", ZERO_DIVISIONS, ids=str)
@pytest.mark.parametrize("rule", RULES, ids=["ge", "gt"])
@pytest.mark.parametrize("case", BINARY_GRID, ids=grid_id)
def test_binary_parity(case, rule, zero_division):
    c = binary_case(*case)
    mc = MetricCollection(*BINARY_KEYS, threshold=0.5, threshold_rule=rule, zero_division=zero_division)
    # two batches, so the comparison also covers folding
    half = c.n // 2
    w = c.sample_weight
    mc.update(c.y_true[:half], y_score=c.y_score[:half], sample_weight=None if w is None else w[:half])
    mc.update(c.y_true[half:], y_score=c.y_score[half:], sample_weight=None if w is None else w[half:])
    ref = sk_binary(c.y_true, c.y_score, w, 0.5, rule, zero_division, betas=BETAS)
    assert set(ref) >= set(BINARY_KEYS)
    check_against(mc, ref, ref.warned, zero_division, f"{c.name} rule={rule} zd={zero_division} ({ref.source})")


@pytest.mark.parametrize("zero_division", ZERO_DIVISIONS, ids=str)
@pytest.mark.parametrize("case", BINARY_GRID, ids=grid_id)
def test_binary_parity_hard_predictions(case, zero_division):
    """Binary tasks fed hard predictions ``y_pred`` in {0, 1} instead of scores."""
    c = binary_case(*case)
    y_pred = c.y_pred(0.5)
    mc = MetricCollection(*BINARY_KEYS, zero_division=zero_division)
    mc.update(c.y_true, y_pred=y_pred, sample_weight=c.sample_weight)
    ref = sk_binary(c.y_true, None, c.sample_weight, zero_division=zero_division, betas=BETAS, y_pred=y_pred)
    check_against(mc, ref, ref.warned, zero_division, f"{c.name} y_pred zd={zero_division}")


MULTI_THRESHOLD_KEYS = {
    # our key -> (threshold, reference key)
    "precision@threshold=0.25": (0.25, "precision"),
    "recall@threshold=0.25": (0.25, "recall"),
    "f1@threshold=0.75": (0.75, "f1"),
    "fbeta@beta=2@threshold=0.75": (0.75, "fbeta@beta=2"),
    "accuracy@threshold=0.75": (0.75, "accuracy"),
    "tp@threshold=0.25": (0.25, "tp"),
    "fp@threshold=0.25": (0.25, "fp"),
    "tn@threshold=0.75": (0.75, "tn"),
    "fn@threshold=0.75": (0.75, "fn"),
    "confusion_matrix@threshold=0.25": (0.25, "confusion_matrix"),
    "precision@macro@threshold=0.75": (0.75, "precision@macro"),
    "recall@none@threshold=0.25": (0.25, "recall@none"),
    "f1": (0.5, "f1"),
    "accuracy": (0.5, "accuracy"),
}


@pytest.mark.parametrize("zero_division", ZERO_DIVISIONS, ids=str)
@pytest.mark.parametrize("rule", RULES, ids=["ge", "gt"])
@pytest.mark.parametrize("case", BINARY_GRID, ids=grid_id)
def test_binary_parity_several_thresholds_one_plan(case, rule, zero_division):
    c = binary_case(*case)
    mc = MetricCollection(*MULTI_THRESHOLD_KEYS, threshold_rule=rule, zero_division=zero_division)
    # one shared binary state holding every threshold
    kinds = [cls.kind for cls, _ in mc.plan.state_types]
    assert kinds == ["example_count", "binary_confusion"]
    assert mc.plan.state_types[1][1].thresholds == TIE_THRESHOLDS
    assert set(mc.plan.keys) == set(MULTI_THRESHOLD_KEYS)
    mc.update(c.y_true, y_score=c.y_score, sample_weight=c.sample_weight)
    refs = {
        t: sk_binary(
            c.y_true, c.y_score, c.sample_weight, t, rule, zero_division, betas=BETAS,
            only={theirs for (tt, theirs) in MULTI_THRESHOLD_KEYS.values() if tt == t},
        )
        for t in TIE_THRESHOLDS
    }  # fmt: skip
    ref = {ours: refs[t][theirs] for ours, (t, theirs) in MULTI_THRESHOLD_KEYS.items()}
    warned = {ours for ours, (t, theirs) in MULTI_THRESHOLD_KEYS.items() if theirs in refs[t].warned}
    check_against(mc, ref, warned, zero_division, f"{c.name} rule={rule} zd={zero_division}")


@pytest.mark.parametrize("zero_division", ZERO_DIVISIONS, ids=str)
@pytest.mark.parametrize("case", BINARY_GRID, ids=grid_id)
def test_binary_metrics_class_parity(case, zero_division):
    """The public ``mergeable_metrics.BinaryMetrics`` surface: keys tp, fp, tn, fn, precision, recall, f1, accuracy."""
    c = binary_case(*case)
    bm = BinaryMetrics(threshold=0.5, zero_division=zero_division)
    bm.update(c.y_true, c.y_score, c.sample_weight)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", mergeable_metrics.UndefinedMetricWarning)
        got = bm.compute()
    assert list(got) == ["tp", "fp", "tn", "fn", "precision", "recall", "f1", "accuracy"]
    assert all(type(v) is float for v in got.values())
    ref = sk_binary(c.y_true, c.y_score, c.sample_weight, 0.5, ">=", zero_division)
    assert_all_close(got, {k: ref[k] for k in got}, context=f"{c.name} zd={zero_division}")


def test_binary_metrics_update_takes_the_documented_keywords():
    """``BinaryMetrics.update`` by keyword as ``MetricCollection.update`` documents it: ``y_true=``,
    ``y_score=`` (thresholded) or ``y_pred=`` (0/1 predicted labels), ``sample_weight=``
    (newcomer report: ``update(y_true=..., y_pred=...)`` raised "unexpected keyword argument")."""
    from sklearn.metrics import accuracy_score, confusion_matrix, f1_score, precision_score, recall_score

    y = np.array([1, 0, 1, 1, 0, 0, 1, 0])
    p = np.array([1, 1, 0, 1, 0, 0, 1, 1])
    w = np.array([1.0, 2.0, 0.5, 1.0, 3.0, 1.0, 2.0, 1.0])
    bm = BinaryMetrics()
    bm.update(y_true=y, y_pred=p, sample_weight=w)
    got = bm.compute()
    tn, fp, fn, tp = confusion_matrix(y, p, sample_weight=w).ravel()
    ref = dict(tp=tp, fp=fp, tn=tn, fn=fn, precision=precision_score(y, p, sample_weight=w), recall=recall_score(y, p, sample_weight=w))
    ref.update(f1=f1_score(y, p, sample_weight=w), accuracy=accuracy_score(y, p, sample_weight=w))
    assert_all_close(got, ref, context="y_pred=")
    by_score = BinaryMetrics(threshold=0.5)
    by_score.update(y_true=y, y_score=p * 0.6 + 0.2, sample_weight=w)  # 0.8 / 0.2: the same predictions
    assert by_score.compute() == got


@pytest.mark.parametrize(
    "kw, right",
    [
        (dict(preds=[0.2, 0.8], target=[0, 1]), "y_score="),  # torchmetrics
        (dict(y_true=[0, 1], preds=[0.2, 0.8]), "y_score="),
        (dict(input=[0.2, 0.8], target=[0, 1]), "y_score="),  # torcheval
        (dict(y_true=[0, 1], y_prob=[0.2, 0.8]), "y_score="),
        (dict(y_true=[0, 1], y_proba=[0.2, 0.8]), "y_score="),
        (dict(y_true=[0, 1], scores=[0.2, 0.8]), "y_score="),
        (dict(target=[0, 1], y_score=[0.2, 0.8]), "y_true="),
        (dict(labels=[0, 1], y_score=[0.2, 0.8]), "y_true="),
        (dict(y_true=[0, 1], y_score=[0.2, 0.8], weights=[1, 1]), "sample_weight="),
        (dict(y_true=[0, 1], y_score=[0.2, 0.8], weight=[1, 1]), "sample_weight="),
    ],
)
@pytest.mark.parametrize("make", [BinaryMetrics, lambda: MetricCollection("f1")], ids=["BinaryMetrics", "MetricCollection"])
def test_another_librarys_update_keyword_raises_naming_ours(make, kw, right):
    m = make()
    with pytest.raises(TypeError) as e:
        m.update(**kw)
    msg = str(e.value)
    wrong = next(k for k in kw if k not in ("y_true", "y_score", "y_pred", "sample_weight"))
    assert f"unexpected keyword argument {wrong!r}" in msg and right in msg, msg
    assert m._rows == 0  # nothing folded under a guessed name


@pytest.mark.parametrize("make", [BinaryMetrics, lambda: MetricCollection("f1", "roc_auc")], ids=["BinaryMetrics", "MetricCollection"])
def test_scores_and_labels_given_in_torchmetrics_order_raise_naming_both_orders(make):
    """``update(preds, target)`` (torchmetrics' positional order) with float scores and 0/1 labels: the
    labels check refuses the scores as labels, and says the arguments look swapped; nothing is folded."""
    m = make()
    scores, labels = np.array([0.9, 0.2, 0.4]), np.array([1, 0, 1])
    with pytest.raises(ValueError) as e:
        m.update(scores, labels)
    msg = str(e.value)
    assert msg.startswith("column 'y_true': invalid value 0.9 at row 0: labels must be 0 or 1"), msg
    assert "were the arguments swapped?" in msg and "update(y_true, y_score)" in msg and "update(preds, target)" in msg, msg
    assert m._rows == 0
    with pytest.raises(ValueError) as e:  # scores that are not all 0/1: no guess
        m.update(scores, np.array([0.1, 0.0, 1.0]))
    assert "swapped" not in str(e.value)
    m.update(labels, scores)  # scikit-learn's order
    assert m._rows == 3


def test_binary_metrics_update_refuses_scores_and_labels_together():
    bm = BinaryMetrics()
    with pytest.raises(TypeError, match=r"y_score= .* or y_pred= .*not both"):
        bm.update([0, 1], y_score=[0.2, 0.8], y_pred=[0, 1])


# ---------------------------------------------------------------------------------------------
# multiclass
@pytest.mark.parametrize("zero_division", ZERO_DIVISIONS, ids=str)
@pytest.mark.parametrize("case", MULTICLASS_GRID, ids=grid_id)
def test_multiclass_parity(case, zero_division):
    c = multiclass_case(*case)
    k = c.num_classes
    mc = MetricCollection(*MULTICLASS_KEYS, num_classes=k, multiclass=(k == 2), zero_division=zero_division)
    assert mc.task.kind == "multiclass"
    assert set(mc.plan.keys) == set(MULTICLASS_KEYS)
    third = c.n // 3
    for sl in (slice(0, third), slice(third, c.n)):
        w = None if c.sample_weight is None else c.sample_weight[sl]
        mc.update(c.y_true[sl], y_pred=c.y_pred[sl], sample_weight=w)
    ref = sk_multiclass(c.y_true, c.y_pred, c.sample_weight, k, zero_division, betas=BETAS)
    check_against(mc, ref, ref.warned, zero_division, f"{c.name} K={k} zd={zero_division} ({ref.source})")


def test_multiclass_default_metrics_match_sklearn():
    """The multiclass defaults (accuracy, macro P/R/F1, weighted F1) under their canonical keys."""
    c = multiclass_case("imbalanced", weighted=True)
    mc = MetricCollection(num_classes=c.num_classes)
    assert mc.plan.keys == ("accuracy", "precision@macro", "recall@macro", "f1@macro", "f1@weighted")
    mc.update(c.y_true, y_pred=c.y_pred, sample_weight=c.sample_weight)
    ref = sk_multiclass(c.y_true, c.y_pred, c.sample_weight, c.num_classes)
    assert_all_close(mc.compute(), {k: ref[k] for k in mc.plan.keys})


def test_multiclass_f1_alias_is_macro():
    """In a multiclass task a bare ``f1`` means ``f1@macro`` (sklearn needs an explicit average)."""
    c = multiclass_case("balanced")
    mc = MetricCollection("f1", "precision", "recall", num_classes=c.num_classes)
    assert mc.plan.keys == ("f1@macro", "precision@macro", "recall@macro")
    mc.update(c.y_true, y_pred=c.y_pred)
    ref = sk_multiclass(c.y_true, c.y_pred, None, c.num_classes)
    assert_all_close(mc.compute(), {k: ref[k] for k in mc.plan.keys})


# ---------------------------------------------------------------------------------------------
# F-beta edges
@pytest.mark.parametrize("beta", [0.0, 0.5, 1.0, 3.0])
def test_fbeta_beta_values_match_sklearn(beta):
    from sklearn.metrics import fbeta_score

    c = binary_case("balanced", weighted=True)
    mc = MetricCollection(f"fbeta@beta={beta}", "fbeta@macro@beta=" + str(beta))
    mc.update(c.y_true, y_score=c.y_score, sample_weight=c.sample_weight)
    got = list(mc.compute().values())
    y_pred = c.y_pred(0.5)
    assert close(got[0], fbeta_score(c.y_true, y_pred, beta=beta, sample_weight=c.sample_weight))
    assert close(got[1], fbeta_score(c.y_true, y_pred, beta=beta, average="macro", sample_weight=c.sample_weight))


def test_fbeta_beta_inf_is_recall():
    from sklearn.metrics import fbeta_score, recall_score

    c = binary_case("balanced")
    mc = MetricCollection("fbeta@beta=inf", "recall")
    mc.update(c.y_true, y_score=c.y_score)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning from inf/inf either
        got = mc.compute()
    y_pred = c.y_pred(0.5)
    assert close(fbeta_score(c.y_true, y_pred, beta=np.inf), recall_score(c.y_true, y_pred))
    assert close(got["fbeta@beta=inf"], got["recall"])


# ---------------------------------------------------------------------------------------------
# policies where we deliberately differ from scikit-learn (which raises)
@pytest.mark.parametrize("zero_division", ZERO_DIVISIONS, ids=str)
def test_policy_empty_input_binary(zero_division):
    from sklearn.metrics import accuracy_score

    with pytest.raises(ValueError):
        accuracy_score([], [])  # sklearn refuses; our policy is NaN
    bm = BinaryMetrics(zero_division=zero_division)
    bm.update([], [])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = bm.compute()
    zd = {0: 0.0, 1: 1.0, "nan": math.nan, "warn": 0.0}[zero_division]
    expected = {"tp": 0.0, "fp": 0.0, "tn": 0.0, "fn": 0.0, "precision": zd, "recall": zd, "f1": zd, "accuracy": math.nan}
    assert_all_close(got, expected)
    messages = [str(w.message) for w in caught if issubclass(w.category, mergeable_metrics.UndefinedMetricWarning)]
    for key in ("precision", "recall", "f1"):
        named = any(re.search(rf"\b{key}\b", m) for m in messages)
        if zero_division == "warn":
            assert named, f"no UndefinedMetricWarning names {key}: {messages}"
        elif zero_division in (0, 1):
            assert not named, f"zero_division={zero_division}: unexpected warning for {key}: {messages}"


@pytest.mark.parametrize("zero_division", ZERO_DIVISIONS, ids=str)
def test_policy_all_zero_weights_binary(zero_division):
    from sklearn.metrics import accuracy_score

    y, s, w = [1, 0, 1], [0.9, 0.8, 0.1], [0.0, 0.0, 0.0]
    with pytest.raises(ValueError):
        accuracy_score(y, [1, 1, 0], sample_weight=w)  # sklearn refuses; our policy is NaN
    bm = BinaryMetrics(zero_division=zero_division)
    bm.update(y, s, w)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", mergeable_metrics.UndefinedMetricWarning)
        got = bm.compute()
    zd = {0: 0.0, 1: 1.0, "nan": math.nan, "warn": 0.0}[zero_division]
    expected = {"tp": 0.0, "fp": 0.0, "tn": 0.0, "fn": 0.0, "precision": zd, "recall": zd, "f1": zd, "accuracy": math.nan}
    assert_all_close(got, expected)


@pytest.mark.parametrize("zero_division", ZERO_DIVISIONS, ids=str)
def test_policy_empty_and_zero_weight_multiclass(zero_division):
    zd = {0: 0.0, 1: 1.0, "nan": math.nan, "warn": 0.0}[zero_division]
    for weights in (None, [0.0, 0.0]):
        mc = MetricCollection(
            "accuracy", "f1@micro", "f1@macro", "f1@weighted", "recall@none", "confusion_matrix",
            num_classes=3, zero_division=zero_division,
        )  # fmt: skip
        if weights is None:
            mc.update([], y_pred=[])
        else:
            mc.update([0, 2], y_pred=[1, 2], sample_weight=weights)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", mergeable_metrics.UndefinedMetricWarning)
            got = mc.compute()
        assert_all_close(
            got,
            {
                "accuracy": math.nan,  # any average over zero weight is NaN
                "f1@micro": zd,
                "f1@macro": zd,
                "f1@weighted": zd,
                "recall@none": [zd, zd, zd],
                "confusion_matrix": np.zeros((3, 3)),
            },
            context=f"weights={weights}",
        )


def test_policy_macro_leaves_out_nan_classes():
    """zero_division="nan": an undefined class is NaN in @none and left out of the macro mean
    (sklearn's ``_nanaverage``); with 0 it counts as 0."""
    y, p = [0, 1, 1, 0], [0, 1, 1, 0]
    nan_mc = MetricCollection("f1@none", "f1@macro", num_classes=3, zero_division="nan")
    zero_mc = MetricCollection("f1@macro", num_classes=3, zero_division=0)
    nan_mc.update(y, y_pred=p)
    zero_mc.update(y, y_pred=p)
    assert_all_close(nan_mc.compute(), {"f1@none": [1.0, 1.0, math.nan], "f1@macro": 1.0})
    assert close(zero_mc.compute()["f1@macro"], 2 / 3)


@pytest.mark.parametrize("normalize", ["true", "pred", "all"])
@pytest.mark.parametrize("weighted", [False, True])
def test_confusion_matrix_normalize_matches_sklearn(normalize, weighted):
    """``confusion_matrix@normalize=...`` equals ``sklearn.metrics.confusion_matrix(normalize=...)``
    with an absent class (its row / column is 0), overall (``compute``) and per slice (the
    vectorised finish over the slice axis)."""
    from sklearn.metrics import confusion_matrix as sk_cm

    from mergeable_metrics import Evaluation

    rng = np.random.default_rng(3)
    y = rng.choice([0, 1, 3], 300)  # class 2 never true
    p = rng.choice([0, 1, 3], 300)  # and never predicted
    w = rng.random(300) if weighted else None
    g = rng.choice(["a", "b", "c"], 300)
    key = f"confusion_matrix@normalize={normalize}"
    cols = {"y": y, "p": p, "g": g} | ({"w": w} if weighted else {})
    r = Evaluation(label_col="y", prediction_col="p", num_classes=4, slices=["g"], metrics=[key],
                   weight_col="w" if weighted else None).evaluate([cols])  # fmt: skip
    ref = sk_cm(y, p, labels=[0, 1, 2, 3], sample_weight=w, normalize=normalize)
    np.testing.assert_allclose(r.overall.metrics[key], ref, rtol=1e-12, atol=0)
    for v in "abc":
        m = g == v
        ref = sk_cm(y[m], p[m], labels=[0, 1, 2, 3], sample_weight=None if w is None else w[m], normalize=normalize)
        np.testing.assert_allclose(r[(("g", v),)].metrics[key], ref, rtol=1e-12, atol=0)


def test_confusion_matrix_normalize_rejects_other_values():
    from mergeable_metrics import MetricCollection

    with pytest.raises(ValueError, match="normalize must be true, pred or all, got 'rows'"):
        MetricCollection("confusion_matrix@normalize=rows", num_classes=3)


@pytest.mark.parametrize("weighted", [False, True])
def test_hamming_loss_on_binary_and_multiclass_labels_matches_sklearn(weighted):
    """``hamming_loss`` on 1-D labels: scikit-learn's fraction of wrong predictions (weighted),
    per slice as well; NaN for an empty slice."""
    from sklearn.metrics import hamming_loss as sk_hamming

    from mergeable_metrics import Evaluation

    rng = np.random.default_rng(5)
    n = 200
    y2, s = rng.integers(0, 2, n), rng.random(n)
    y3, p3 = rng.integers(0, 3, n), rng.integers(0, 3, n)
    w = rng.random(n) if weighted else None
    g = rng.choice(["a", "b"], n)
    wk = dict(weight_col="w") if weighted else {}
    extra = {"w": w} if weighted else {}
    rb = Evaluation(label_col="y", score_col="s", slices=["g"], metrics=["hamming_loss"], **wk).evaluate([{"y": y2, "s": s, "g": g, **extra}])
    rm = Evaluation(label_col="y", prediction_col="p", num_classes=3, slices=["g"], metrics=["hamming_loss"], **wk).evaluate(
        [{"y": y3, "p": p3, "g": g, **extra}]
    )
    pred2 = (s >= 0.5).astype(int)
    for key, mask in [((), np.ones(n, bool)), ((("g", "a"),), g == "a"), ((("g", "b"),), g == "b")]:
        sw = None if w is None else w[mask]
        assert rb[key].metrics["hamming_loss"] == pytest.approx(sk_hamming(y2[mask], pred2[mask], sample_weight=sw), rel=1e-12)
        assert rm[key].metrics["hamming_loss"] == pytest.approx(sk_hamming(y3[mask], p3[mask], sample_weight=sw), rel=1e-12)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        empty = Evaluation(label_col="y", score_col="s", metrics=["hamming_loss"]).evaluate([{"y": y2[:0], "s": s[:0]}])
    assert np.isnan(empty.overall.metrics["hamming_loss"])
