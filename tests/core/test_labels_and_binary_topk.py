"""``labels=`` as a subset, reordering or superset of the present classes, and ``top_k_accuracy``
on binary 1-D scores (issue 17), against scikit-learn.

``labels=`` is a compute-time option over the existing confusion (and multilabel) states; binary
top-k accuracy has its own small state (:class:`mergeable_metrics.metrics.topk.BinaryTopKState`), whose merge law is
tested with random shards (empty ones included) and random merge trees.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import (
    classification_report,
    confusion_matrix,
    f1_score,
    fbeta_score,
    jaccard_score,
    multilabel_confusion_matrix,
    precision_score,
    recall_score,
    top_k_accuracy_score,
)

from mergeable_metrics import Evaluation, MetricCollection
from mergeable_metrics.states import State
from mergeable_metrics.inputs.validation import Batch
from mergeable_metrics.metrics.topk import BinaryTopKLayout, BinaryTopKState
from tests._helpers import close, merge_tree, random_shards

pytestmark = pytest.mark.filterwarnings(
    "ignore::mergeable_metrics.metrics.base.UndefinedMetricWarning",
    "ignore::sklearn.exceptions.UndefinedMetricWarning",
    "ignore:A single label was found:UserWarning",
)

SKLEARN = {"precision": precision_score, "recall": recall_score, "f1": f1_score, "iou": jaccard_score}
K = 5


def _data(n: int = 300, seed: int = 0, present: int = 4):
    """Labels in ``0..present-1`` only (classes ``present..K-1`` are absent from the data);
    predictions in ``0..K-2``; weights with zeros."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, present, n)
    p = np.where(rng.random(n) < 0.5, y, rng.integers(0, K - 1, n))
    w = rng.random(n) * (rng.random(n) < 0.9)
    return y, p, w


def _text(labels) -> str:
    return "|".join(map(str, labels))


LABEL_SETS = [[0, 2], [3, 1], [2], [4, 0, 3], [0, 1, 2, 3, 4], [4]]  # subsets, reorderings, absent classes 4 (and 3 in some seeds)


@pytest.mark.parametrize("labels", LABEL_SETS, ids=_text)
@pytest.mark.parametrize("average", ["micro", "macro", "weighted", "none"])
@pytest.mark.parametrize("zero_division", [0, 1])
@pytest.mark.parametrize("weighted", [False, True])
def test_prf_and_jaccard_with_labels_match_sklearn(labels, average, zero_division, weighted):
    y, p, w = _data()
    w = w if weighted else None
    names = [f"{m}@{average}@labels={_text(labels)}" for m in SKLEARN] + [f"fbeta@{average}@beta=2@labels={_text(labels)}"]
    mc = MetricCollection(*names, num_classes=K, zero_division=zero_division)
    mc.update(y[:100], y_pred=p[:100], sample_weight=None if w is None else w[:100])
    mc.update(y[100:], y_pred=p[100:], sample_weight=None if w is None else w[100:])
    got = mc.compute()
    avg = None if average == "none" else average
    kw = dict(labels=labels, average=avg, sample_weight=w, zero_division=zero_division)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        refs = [f(y, p, **kw) for f in SKLEARN.values()] + [fbeta_score(y, p, beta=2, **kw)]
    for name, ref in zip(names, refs):
        assert close(got[name], ref, 1e-12), (name, got[name], ref)
        if avg is None:
            assert np.shape(got[name]) == (len(labels),)


@pytest.mark.parametrize("labels", LABEL_SETS, ids=_text)
def test_prf_nan_policy_with_labels_matches_sklearn_nan(labels):
    y, p, w = _data(seed=3, present=3)  # classes 3 and 4 are absent
    mc = MetricCollection(*(f"{m}@{a}@labels={_text(labels)}" for m in ("precision", "recall", "f1") for a in ("macro", "none")), num_classes=K)
    mc.update(y, y_pred=p, sample_weight=w)
    got = list(mc.compute().values())
    refs = [
        f(y, p, labels=labels, average=a, sample_weight=w, zero_division=np.nan) for f in (precision_score, recall_score, f1_score) for a in ("macro", None)
    ]
    for g, r in zip(got, refs):
        assert close(g, r, 1e-12), (g, r)


def test_micro_counts_only_the_given_labels():
    # hand computation: y = [0, 1, 2, 2], pred = [0, 2, 2, 1]; labels 2 only: tp 1, predicted 2, true 2
    mc = MetricCollection("precision@micro@labels=2", "recall@micro@labels=0|1", "f1@micro", num_classes=3)
    mc.update([0, 1, 2, 2], y_pred=[0, 2, 2, 1])
    got = mc.compute()
    assert got["precision@micro@labels=2"] == 0.5  # 1 of the 2 predicted 2s
    assert got["recall@micro@labels=0|1"] == 0.5  # classes 0 and 1: 2 true rows, 1 right
    assert got["f1@micro"] == 0.5


@pytest.mark.parametrize("labels", [[3, 0, 4], [1], [2, 1, 0, 3, 4]], ids=_text)
@pytest.mark.parametrize("normalize", [None, "true", "pred", "all"])
def test_confusion_matrix_with_labels_matches_sklearn(labels, normalize):
    y, p, w = _data(seed=1)
    name = f"confusion_matrix@labels={_text(labels)}" + ("" if normalize is None else f"@normalize={normalize}")
    mc = MetricCollection(name, num_classes=K)
    mc.update(y, y_pred=p, sample_weight=w)
    ref = confusion_matrix(y, p, labels=labels, sample_weight=w, normalize=normalize)
    assert close(mc.compute()[name], ref, 1e-12)


@pytest.mark.parametrize("labels", [[4, 1], [0, 1, 2, 3, 4], [2]], ids=_text)
def test_classification_report_with_labels_matches_sklearn(labels):
    y, p, w = _data(seed=2)
    name = f"classification_report@labels={_text(labels)}"
    mc = MetricCollection(name, num_classes=K, zero_division=0)
    mc.update(y, y_pred=p, sample_weight=w)
    got = mc.compute()[name]
    ref = classification_report(y, p, labels=labels, sample_weight=w, output_dict=True, zero_division=0)
    want = np.array([[ref[str(c)][k] for k in ("precision", "recall", "f1-score", "support")] for c in labels])
    assert got.shape == (len(labels), 4) and close(got, want, 1e-12)


@pytest.mark.parametrize("average", ["micro", "macro", "weighted", "none"])
@pytest.mark.parametrize("labels", [[2, 0], [3], [0, 1, 2, 3]], ids=_text)
def test_multilabel_with_labels_matches_sklearn(average, labels):
    rng = np.random.default_rng(5)
    Y = rng.integers(0, 2, (80, 4))
    Y[:, 3] = 0  # a label without positives
    S = rng.random((80, 4))
    w = rng.random(80)
    names = [f"{m}@{average}@labels={_text(labels)}" for m in SKLEARN]
    mc = MetricCollection(*names, f"multilabel_confusion_matrix@labels={_text(labels)}", task="multilabel", num_classes=4, zero_division=0)
    mc.update(Y, y_score=S, sample_weight=w)
    got = mc.compute()
    P = (S >= 0.5).astype(int)
    avg = None if average == "none" else average
    for name, f in zip(names, SKLEARN.values()):
        assert close(got[name], f(Y, P, labels=labels, average=avg, sample_weight=w, zero_division=0), 1e-12), name
    assert close(got[f"multilabel_confusion_matrix@labels={_text(labels)}"], multilabel_confusion_matrix(Y, P, labels=labels, sample_weight=w), 1e-12)


def test_labels_by_class_value_with_classes():
    classes = ["cat", "dog", "bird", "fish"]
    y, p, w = _data(n=120, seed=4, present=3)
    p = np.minimum(p, 2)  # fish is neither true nor predicted
    yv, pv = np.array(classes)[y], np.array(classes)[p]
    ev = Evaluation(label_col="y", prediction_col="p", weight_col="w", classes=classes, slices=["g"],
                    metrics=["f1@none@labels=fish|cat", "recall@macro@labels=bird|dog", "confusion_matrix@labels=dog|cat"])  # fmt: skip
    g = np.where(np.arange(120) % 3 == 0, "a", "b")
    res = ev.evaluate([{"y": yv[:50], "p": pv[:50], "w": w[:50], "g": g[:50]}, {"y": yv[50:], "p": pv[50:], "w": w[50:], "g": g[50:]}])
    for s in res.slices:  # every slice (the stacked computation of many slices) against sklearn
        m = np.ones(120, bool) if not s.slice else g == s.slice[0][1]
        ref_f1 = f1_score(yv[m], pv[m], labels=["fish", "cat"], average=None, sample_weight=w[m], zero_division=np.nan)
        assert close(s.metrics["f1@none@labels=fish|cat"], ref_f1, 1e-12)
        ref_r = recall_score(yv[m], pv[m], labels=["bird", "dog"], average="macro", sample_weight=w[m], zero_division=np.nan)
        assert close(s.metrics["recall@macro@labels=bird|dog"], ref_r, 1e-12)
        assert close(s.metrics["confusion_matrix@labels=dog|cat"], confusion_matrix(yv[m], pv[m], labels=["dog", "cat"], sample_weight=w[m]), 1e-12)
    per = res.per_class("f1@none@labels=fish|cat")
    assert list(per) == ["fish", "cat"] and np.isnan(per["fish"])  # fish is absent: undefined
    undefined = res.to_dict()["slices"][0]["undefined"]
    assert {"metric": "f1@none@labels=fish|cat", "classes": [3]} in undefined, undefined  # the class id of fish


def test_labels_in_python_lists_and_numeric_class_values():
    mc = MetricCollection("f1@macro@labels=3|1", num_classes=4)
    from mergeable_metrics.metrics.base import resolve

    assert resolve("f1@none@labels=2|0", mc.task).key == "f1@none@labels=2|0"
    mc2 = MetricCollection("precision@none@labels=1|-1", classes=[-1, 0, 1])
    mc2.update([-1, 0, 1, 1], y_pred=[-1, 1, 1, 0])
    got = mc2.compute()["precision@none@labels=1|-1"]
    assert close(got, precision_score([-1, 0, 1, 1], [-1, 1, 1, 0], labels=[1, -1], average=None))


def test_labels_reports_the_right_class_names_without_classes():
    ev = Evaluation(label_col="y", prediction_col="p", num_classes=3, metrics=["recall@none@labels=2|0"])
    res = ev.evaluate([{"y": [0, 1, 2, 2], "p": [0, 2, 2, 1]}])
    assert res.per_class("recall@none@labels=2|0") == {2: 0.5, 0: 1.0}


@pytest.mark.parametrize(
    "metric,kw,message",
    [
        ("f1@macro@labels=5", dict(num_classes=5), r"5 is not one of the task's classes 0..4"),
        ("f1@macro@labels=1|1", dict(num_classes=3), r"1 is given twice"),
        ("f1@macro@labels=cat", dict(num_classes=3), r"'cat' is not one of the task's classes"),
        ("f1@macro@labels=fish", dict(classes=["cat", "dog", "bird"]), r"'fish' is not one of classes=\['cat', 'dog', 'bird'\]"),
        ("f1@labels=1", dict(), r"labels= needs average micro, macro, weighted or none, not 'binary'"),
        ("precision@samples@labels=1", dict(task="multilabel", num_classes=3), r"not 'samples'"),
        ("iou@macro@labels=2", dict(num_classes=3, ignore_index=2), r"2 is the class left out by ignore_index=2"),
        ("confusion_matrix@labels=0|7", dict(num_classes=3), r"7 is not one of the task's classes"),
        ("multilabel_confusion_matrix@labels=3", dict(task="multilabel", num_classes=3), r"3 is not one of the task's labels 0..2"),
        ("accuracy@labels=1", dict(num_classes=3), r"unknown parameter"),
        ("f1@macro@labels=", dict(num_classes=3), r"labels is empty"),
    ],
)
def test_bad_labels_name_the_label(metric, kw, message):
    with pytest.raises(ValueError, match=message):
        MetricCollection(metric, **kw)


def test_binary_task_macro_with_labels():
    y, s = np.array([0, 1, 1, 0, 1]), np.array([0.2, 0.7, 0.4, 0.6, 0.9])
    mc = MetricCollection("f1@macro@labels=0", "recall@none@labels=1|0")
    mc.update(y, y_score=s)
    pred = (s >= 0.5).astype(int)
    got = mc.compute()
    assert close(got["f1@macro@labels=0"], f1_score(y, pred, labels=[0], average="macro"))
    assert close(got["recall@none@labels=1|0"], recall_score(y, pred, labels=[1, 0], average=None))


# --- top_k_accuracy on binary 1-D scores ------------------------------------------------------------
SCORES = {
    "in_unit": lambda rng, n: rng.random(n),
    "edges": lambda rng, n: rng.choice([0.0, 0.5, 1.0, 0.25], n),  # exactly 0.5: not above it
    "outside": lambda rng, n: rng.normal(0, 2, n),  # the threshold becomes 0
    "one_outside": lambda rng, n: np.r_[rng.random(n - 1), 1.0 + 1e-9],
}


@pytest.mark.parametrize("kind", list(SCORES))
@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize("weighted", [False, True])
def test_binary_top_k_accuracy_matches_sklearn(kind, k, weighted):
    rng = np.random.default_rng(len(kind) * 10 + k)
    n = 60
    y, s = rng.integers(0, 2, n), SCORES[kind](rng, n)
    w = rng.integers(0, 3, n).astype(float) if weighted else None
    order = np.argsort(s)  # sorted input, in batches: the out-of-range row lands in the last one
    mc = MetricCollection(f"top_k_accuracy@k={k}")
    for idx in np.array_split(order, 4):
        mc.update(y[idx], y_score=s[idx], sample_weight=None if w is None else w[idx])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = top_k_accuracy_score(y, s, k=k, sample_weight=w, labels=[0, 1])
    assert close(mc.compute()[f"top_k_accuracy@k={k}"], ref, 1e-12)


def test_binary_top_k_hand_cases():
    mc = MetricCollection("top_k_accuracy@k=1")
    assert np.isnan(mc.compute()["top_k_accuracy@k=1"])  # no examples
    mc.update([1, 0, 1], y_score=[0.5, 0.2, 0.9])  # 0.5 is not above 0.5: rows 2 and 3 right
    assert mc.compute()["top_k_accuracy@k=1"] == 2 / 3
    mc.update([0], y_score=[-0.1])  # now a score is below 0: threshold 0 for every row
    assert mc.compute()["top_k_accuracy@k=1"] == 0.75  # predictions [1, 1, 1, 0]: the 0.2 row is wrong
    mc = MetricCollection("top_k_accuracy@k=1", "top_k_accuracy@k=2")
    mc.update([1, 0], y_score=[0.9, 0.1], sample_weight=[0.0, 0.0])
    assert np.isnan(mc.compute()["top_k_accuracy@k=1"]) and np.isnan(mc.compute()["top_k_accuracy@k=2"])  # no weight


def test_binary_top_k_from_hard_predictions_in_an_evaluation():
    y, p = np.array([1, 0, 1, 1, 0]), np.array([1, 1, 0, 1, 0])
    ev = Evaluation(label_col="y", prediction_col="p", metrics=["top_k_accuracy@k=1", "accuracy"])
    res = ev.evaluate([{"y": y, "p": p}])
    assert res.overall.metrics["top_k_accuracy@k=1"] == top_k_accuracy_score(y, p, k=1) == res.overall.metrics["accuracy"]


rows = st.lists(
    st.tuples(st.integers(0, 1), st.sampled_from([-1.5, -0.0, 0.0, 0.25, 0.5, 0.75, 1.0, 1.25]), st.sampled_from([0.0, 1.0, 0.5, 3.0])),
    max_size=30,
)


@settings(max_examples=60, deadline=None)
@given(data=rows, seed=st.integers(0, 2**32 - 1), weighted=st.booleans())
def test_binary_top_k_state_merge_law(data, seed, weighted):
    y = np.array([d[0] for d in data], dtype=np.int64)
    s = np.array([d[1] for d in data], dtype=np.float64)
    w = np.array([d[2] for d in data]) if weighted else None
    layout = BinaryTopKLayout()
    zero = BinaryTopKState.zero(layout)

    def batch(idx):
        return Batch(y[idx], s[idx], None, None if w is None else w[idx])

    whole = zero.fold(batch(np.arange(len(data)))) if data else zero
    rng = np.random.default_rng(seed)
    states = []
    for shard in random_shards(rng, len(data)):
        st_ = zero
        for idx in shard:
            st_ = st_.fold(batch(idx))
        states.append(st_)
    merged = merge_tree(states, lambda a, b: a.merge(b), rng, lambda: zero)
    assert merged == whole and merged.encode() == whole.encode()
    assert merged.merge(zero) == merged == zero.merge(merged)
    assert State.decode(merged.encode()) == merged
    if data and (w is None or w.sum() > 0):  # and the value is scikit-learn's
        mc = MetricCollection("top_k_accuracy@k=1")
        mc.update(y, y_score=s, sample_weight=w)
        assert close(mc.compute()["top_k_accuracy@k=1"], top_k_accuracy_score(y, s, k=1, sample_weight=w, labels=[0, 1]), 1e-12)


@pytest.mark.parametrize("metric", ["recall", "precision"])
def test_analytic_ci_with_labels_are_those_classes_intervals(metric):
    y, p, _ = _data(seed=6)
    ev = Evaluation(label_col="y", prediction_col="p", num_classes=K, ci="analytic",
                    metrics=[f"{metric}@none", f"{metric}@none@labels=2|0", f"{metric}@micro@labels=1|3"])  # fmt: skip
    r = ev.evaluate([{"y": y, "p": p}]).overall
    lo, hi = r.ci[f"{metric}@none"]
    lo2, hi2 = r.ci[f"{metric}@none@labels=2|0"]
    assert np.array_equal(lo2, lo[[2, 0]]) and np.array_equal(hi2, hi[[2, 0]])
    from mergeable_metrics.uncertainty.intervals import wilson  # the Wilson interval of the pooled counts of classes 1 and 3

    tp = sum(np.sum((y == c) & (p == c)) for c in (1, 3))
    den = sum(np.sum((p if metric == "precision" else y) == c) for c in (1, 3))
    assert close(r.ci[f"{metric}@micro@labels=1|3"], wilson(tp, den, 0.95), 1e-12)


def test_labels_as_a_python_list_and_a_class_with_a_bar():
    from mergeable_metrics.metrics.base import F1, Task

    m = F1(Task(num_classes=4), average="macro", labels=[2, 0])
    assert m.key == "f1@macro@labels=2|0" and m.p["labels"] == (2, 0)
    with pytest.raises(ValueError, match=r"labels is empty"):
        F1(Task(num_classes=4), average="macro", labels=[])
    assert MetricCollection("f1@none@labels=dog", classes=["a|b", "dog"]).plan.metrics[0].p["labels"] == (1,)
    from mergeable_metrics.metrics.base import class_values

    with class_values(["a|b", "dog"]), pytest.raises(ValueError, match=r"contains '[|]'"):
        F1(Task(num_classes=2, multiclass=True), average="macro", labels=["a|b"])


@settings(max_examples=20, deadline=None)
@given(
    data=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3), st.sampled_from([0.0, 0.5, 1.0, 3.0])), max_size=40),
    seed=st.integers(0, 2**32 - 1),
)
def test_labels_metrics_of_any_sharding_equal_sklearn_on_all_rows(data, seed):
    """Shards (empty ones included) merged along a random tree give the collection of one pass,
    bit for bit, and scikit-learn's values over all rows."""
    y = np.array([d[0] for d in data], dtype=np.int64)
    p = np.array([d[1] for d in data], dtype=np.int64)
    w = np.array([d[2] for d in data])
    names = ["f1@macro@labels=3|1", "precision@micro@labels=0|2", "recall@none@labels=2|3|0", "confusion_matrix@labels=1|0"]

    def collection(idx):
        mc = MetricCollection(*names, num_classes=4, zero_division=0)
        if len(idx):
            mc.update(y[idx], y_pred=p[idx], sample_weight=w[idx])
        return mc

    rng = np.random.default_rng(seed)
    parts = [collection(idx) for shard in random_shards(rng, len(data)) for idx in shard]
    merged = merge_tree(parts, lambda a, b: a.merge(b), rng, lambda: collection([]))
    whole = collection(np.arange(len(data)))
    assert all(a == b for a, b in zip(merged.states, whole.states))
    got = merged.compute()
    if w.sum() == 0:
        return
    kw = dict(sample_weight=w, zero_division=0)
    assert close(got[names[0]], f1_score(y, p, labels=[3, 1], average="macro", **kw), 1e-12)
    assert close(got[names[1]], precision_score(y, p, labels=[0, 2], average="micro", **kw), 1e-12)
    assert close(got[names[2]], recall_score(y, p, labels=[2, 3, 0], average=None, **kw), 1e-12)
    if np.isin(y, [1, 0]).any():  # scikit-learn raises when no label given is in y_true (we count zeros)
        assert close(got[names[3]], confusion_matrix(y, p, labels=[1, 0], sample_weight=w), 1e-12)


def test_decoded_binary_top_k_state_with_more_hits_than_weight_is_refused():
    # encode() does not check what it writes: bytes claiming 5 correct rows out of 1 gave an accuracy of 5.0
    from mergeable_metrics.metrics.topk import BinaryTopKLayout, BinaryTopKState

    bad = BinaryTopKState(BinaryTopKLayout(), {"hits": np.array([0.5, 5.0]), "weight": np.float64(1.0), "outside": np.int64(1)})
    with pytest.raises(ValueError, match=r"binary_top_k state: hits\[1\] = 5.0 exceeds the weight 1.0"):
        State.decode(bad.encode())
    # a real weighted state whose hits equal its weight (every row correct) still decodes
    y, s, w = np.array([1, 0, 1]), np.array([0.9, 0.1, 0.7]), np.array([0.1, 0.2, 0.3])
    good = BinaryTopKState.from_batch(BinaryTopKLayout(), Batch(y, s, None, w))
    assert float(good["hits"][0]) == float(good["weight"]) and State.decode(good.encode()) == good
