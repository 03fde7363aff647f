"""Multilabel metrics against scikit-learn over a named grid (issue 3).

Per-label counts (multilabel_confusion_matrix, tp/fp/tn/fn), precision / recall / F1 / F-beta /
IoU with micro, macro, weighted, samples and per-label (``none``) averages, Hamming loss, subset
accuracy. Grid: balanced, imbalanced, one class (all labels on / all off), ties (scores exactly at
the threshold), weights with zeros, single row, empty; each unweighted and weighted.
"""

from __future__ import annotations

import warnings
import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn import metrics as skm

from mergeable_metrics import MetricCollection
from mergeable_metrics.inputs.validation import Batch
from mergeable_metrics.metrics.multilabel import MultilabelLayout, MultilabelState
from tests._helpers import close, fold_plan_sharded, merge_tree, random_shards

L = 4
CASES = ("balanced", "imbalanced", "all_on", "all_off", "ties", "weighted_zeros", "single_row", "empty")
GRID = [(c, w) for c in CASES for w in (False, True) if not (c == "weighted_zeros" and not w) and not (c == "empty" and w)]
AVERAGES = ("micro", "macro", "weighted", "samples", None)


def multilabel_case(name: str, weighted: bool):
    rng = np.random.default_rng(zlib.crc32(f"multilabel-{name}".encode()))
    n = {"single_row": 1, "empty": 0}.get(name, 40)
    if name == "imbalanced":
        Y = (rng.random((n, L)) < [0.05, 0.2, 0.5, 0.9]).astype(int)
    elif name == "all_on":
        Y = np.ones((n, L), dtype=int)
    elif name == "all_off":
        Y = np.zeros((n, L), dtype=int)
    else:
        Y = rng.integers(0, 2, (n, L))
    S = np.round(np.clip(0.35 * Y + 0.65 * rng.random((n, L)), 0, 1), 2)
    if name == "ties":
        S[rng.random((n, L)) < 0.3] = 0.5
    w = None
    if weighted or name == "weighted_zeros":
        w = rng.integers(0, 9, n) / 4.0
        if n > 1:
            w[:3] = 0.0
    return Y, S, w


def metric_keys() -> list[str]:
    keys = ["accuracy", "subset_accuracy", "hamming_loss", "multilabel_confusion_matrix", "tp", "fn"]
    for which in ("precision", "recall", "f1", "fbeta@beta=2"):
        for avg in AVERAGES:
            name, _, beta = which.partition("@")
            keys.append(f"{name}@{avg or 'none'}" + (f"@{beta}" if beta else ""))
    keys += ["iou@micro", "iou@macro", "iou@none", "iou@weighted"]
    return keys


def reference(Y, S, w) -> dict:
    P = (S >= 0.5).astype(int)
    nan = np.nan
    ref = {
        "accuracy": skm.accuracy_score(Y, P, sample_weight=w),
        "subset_accuracy": skm.accuracy_score(Y, P, sample_weight=w),
        "hamming_loss": skm.hamming_loss(Y, P, sample_weight=w),
        "multilabel_confusion_matrix": skm.multilabel_confusion_matrix(Y, P, sample_weight=w),
    }
    mcm = ref["multilabel_confusion_matrix"]
    ref["tp"], ref["fn"] = mcm[:, 1, 1], mcm[:, 1, 0]
    for avg in AVERAGES:
        a = avg or "none"
        ref[f"precision@{a}"] = skm.precision_score(Y, P, average=avg, sample_weight=w, zero_division=nan)
        ref[f"recall@{a}"] = skm.recall_score(Y, P, average=avg, sample_weight=w, zero_division=nan)
        ref[f"f1@{a}"] = skm.f1_score(Y, P, average=avg, sample_weight=w, zero_division=nan)
        ref[f"fbeta@{a}@beta=2"] = skm.fbeta_score(Y, P, beta=2, average=avg, sample_weight=w, zero_division=nan)
    j0 = skm.jaccard_score(Y, P, average=None, sample_weight=w, zero_division=0)
    j1 = skm.jaccard_score(Y, P, average=None, sample_weight=w, zero_division=1)
    jac = np.where(j0 == j1, j0, nan)
    ref["iou@none"] = jac
    ref["iou@macro"] = float(np.nanmean(jac)) if not np.isnan(jac).all() else nan
    ref["iou@micro"] = skm.jaccard_score(Y, P, average="micro", sample_weight=w, zero_division=0) if (Y | P).any() else nan
    true = mcm[:, 1, 1] + mcm[:, 1, 0]
    keep = ~np.isnan(jac)
    ref["iou@weighted"] = float(np.average(jac[keep], weights=true[keep])) if true[keep].sum() > 0 else (float(np.mean(jac[keep])) if keep.any() else nan)
    return ref


@pytest.mark.parametrize("name,weighted", GRID, ids=[f"{n}{'-w' if w else ''}" for n, w in GRID])
def test_multilabel_metrics_match_sklearn(name, weighted):
    Y, S, w = multilabel_case(name, weighted)
    mc = MetricCollection(*metric_keys(), task="multilabel", num_classes=L)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for idx in np.array_split(np.arange(len(Y)), 2):
            mc.update(Y[idx], y_score=S[idx], sample_weight=None if w is None else w[idx])
        ours = mc.compute()
        if name == "empty":
            assert np.isnan(ours["accuracy"]) and np.isnan(ours["hamming_loss"]) and np.isnan(ours["f1@samples"])
            return
        ref = reference(Y, S, w)
    bad = {k: (ours[k], v) for k, v in ref.items() if not close(ours[k], v)}
    assert not bad, f"(ours, sklearn): {bad}"


@pytest.mark.parametrize("zd", [0, 1])
def test_samples_average_with_zero_division_values(zd):
    Y, S, w = multilabel_case("imbalanced", True)
    P = (S >= 0.5).astype(int)
    mc = MetricCollection("precision@samples", "recall@samples", "f1@samples", task="multilabel", num_classes=L, zero_division=zd)
    mc.update(Y, y_pred=P, sample_weight=w)
    r = mc.compute()
    assert close(r["precision@samples"], skm.precision_score(Y, P, average="samples", sample_weight=w, zero_division=zd))
    assert close(r["recall@samples"], skm.recall_score(Y, P, average="samples", sample_weight=w, zero_division=zd))
    assert close(r["f1@samples"], skm.f1_score(Y, P, average="samples", sample_weight=w, zero_division=zd))


def test_thresholds_and_logits():
    Y, S, _ = multilabel_case("balanced", False)
    mc = MetricCollection("f1@micro@threshold=0.7", "f1@micro", task="multilabel", num_classes=L)
    mc.update(Y, y_score=S)
    r = mc.compute()
    assert close(r["f1@micro@threshold=0.7"], skm.f1_score(Y, (S >= 0.7).astype(int), average="micro"))
    assert sum(s.kind == "multilabel" for s in mc.states) == 1
    z = np.log(np.clip(S, 1e-6, 1 - 1e-6) / (1 - np.clip(S, 1e-6, 1 - 1e-6)))
    by_logits = MetricCollection("f1@micro", task="multilabel", num_classes=L, formats={"y_score": "logits"})
    by_logits.update(Y, y_score=z)
    assert close(by_logits.compute()["f1@micro"], r["f1@micro"])


def test_multilabel_input_validation():
    mc = MetricCollection("hamming_loss", task="multilabel", num_classes=3)
    with pytest.raises(ValueError, match=r"column 'y_true': invalid value 2\.0 at row 1, entry 0: multilabel labels must be 0 or 1"):
        mc.update([[0, 1, 1], [2, 0, 0]], y_pred=[[0, 1, 1], [1, 0, 0]])
    with pytest.raises(ValueError, match=r"multilabel rows need 3 entries \(num_classes\), got shape \(2, 2\)"):
        mc.update([[0, 1], [1, 0]], y_pred=[[0, 1], [1, 0]])
    with pytest.raises(ValueError, match="samples"):
        MetricCollection("f1@samples", num_classes=3)


batches = st.lists(
    st.tuples(
        st.lists(st.integers(0, 1), min_size=3, max_size=3),
        st.lists(st.sampled_from([0.0, 0.3, 0.5, 0.8]), min_size=3, max_size=3),
        st.sampled_from([0.0, 1.0, 2.0, 3.0]),
    ),  # fmt: skip
    max_size=30,
)


@settings(max_examples=40)
@given(rows=batches, seed=st.integers(0, 2**32 - 1))
def test_multilabel_state_merge_laws(rows, seed):
    """Any sharding and merge tree equals one fold (counts exactly with integer weights, per-row
    value sums to 1e-12); zero is the identity; the codec round-trips."""
    lay = MultilabelLayout(3, (0.3, 0.5), ">=", (1.0, 2.0))
    Y = np.array([r[0] for r in rows], dtype=np.int64).reshape(-1, 3)
    S = np.array([r[1] for r in rows]).reshape(-1, 3)
    w = np.array([r[2] for r in rows])
    zero = MultilabelState.zero(lay)
    whole = zero.fold(Batch(Y, S, None, w)) if len(rows) else zero
    rng = np.random.default_rng(seed)
    states = []
    for shard in random_shards(rng, len(rows)):
        s = zero
        for idx in shard:
            s = s.fold(Batch(Y[idx], S[idx], None, w[idx]))
        states.append(s)
    merged = merge_tree(states, lambda a, b: a.merge(b), rng, lambda: zero)
    for name, _ in MultilabelState.FIELDS:  # counts exact; per-row value sums (e.g. 1/3) to rounding
        x, y = np.asarray(merged[name], float), np.asarray(whole[name], float)
        if "_sum_" in name:
            assert np.allclose(x, y, rtol=1e-12, atol=1e-12), name
        else:
            assert np.array_equal(x, y), name
    assert merged.merge(zero) == merged
    assert MultilabelState.decode(merged.encode()) == merged


# -- jaccard@samples (issue 17) ---------------------------------------------------------------
@pytest.mark.parametrize(
    "name,weighted", [("balanced", False), ("imbalanced", True), ("all_off", True), ("ties", False), ("weighted_zeros", True), ("single_row", False)]
)
@pytest.mark.parametrize("zd", [0, 1, "nan"])
def test_jaccard_samples_matches_sklearn(name, weighted, zd):
    Y, S, w = multilabel_case(name, weighted)
    mc = MetricCollection("iou@samples", "jaccard@samples@threshold=0.7", "f1@samples", task="multilabel", num_classes=L, zero_division=zd)
    for part in np.array_split(np.arange(len(Y)), 3):
        mc.update(Y[part], y_score=S[part], sample_weight=None if w is None else w[part])
    got = mc.compute()
    for key, t in (("iou@samples", 0.5), ("iou@samples@threshold=0.7", 0.7)):
        P = (S >= t).astype(int)
        if zd == "nan":  # scikit-learn has no NaN zero_division for jaccard: the rows where it is defined
            keep = (Y | P).any(axis=1)
            if not keep.any():
                assert np.isnan(got[key]), key
                continue
            Yk, Pk, wk = Y[keep], P[keep], None if w is None else w[keep]
            if wk is not None and wk.sum() == 0:
                wk = None  # our fallback: the plain mean of the defined rows
            want = skm.jaccard_score(Yk, Pk, average="samples", sample_weight=wk, zero_division=0)
        else:
            ww = None if w is None or w.sum() == 0 else w
            want = skm.jaccard_score(Y, P, average="samples", sample_weight=ww, zero_division=zd)
        assert got[key] == pytest.approx(want, rel=1e-13, abs=1e-15), key


def test_jaccard_samples_by_hand_and_shares_no_state_with_the_counts():
    # rows: y (1, 0, 1) pred (1, 1, 0): 1/3; y (0, 1, 0) pred (0, 1, 0): 1; y (0, 0, 0) pred (0, 0, 0): undefined
    Y = np.array([[1, 0, 1], [0, 1, 0], [0, 0, 0]])
    P = np.array([[1, 1, 0], [0, 1, 0], [0, 0, 0]])
    mc = MetricCollection("iou@samples", "iou@micro", task="multilabel", num_classes=3)
    mc.update(Y, y_pred=P, sample_weight=[3.0, 1.0, 5.0])
    got = mc.compute()
    assert got["iou@samples"] == pytest.approx((3 * (1 / 3) + 1) / 4, rel=1e-15)
    assert sorted(s.kind for s in mc.states) == ["example_count", "multilabel", "multilabel_jaccard_samples"]


@settings(max_examples=30, deadline=None)
@given(rows=st.lists(st.tuples(st.integers(0, 7), st.integers(0, 7), st.sampled_from([0.0, 1.0, 0.1, 3.0])), max_size=30), seed=st.integers(0, 2**32 - 1))
def test_jaccard_samples_state_merges_bit_for_bit(rows, seed):
    from mergeable_metrics.engine import Plan
    from mergeable_metrics.metrics import Task
    from mergeable_metrics.states.base import State

    rng = np.random.default_rng(seed)
    Y = np.array([[(r[0] >> b) & 1 for b in range(3)] for r in rows], dtype=np.int64).reshape(-1, 3)
    S = np.array([[((r[1] >> b) & 1) * 0.8 + 0.1 for b in range(3)] for r in rows], dtype=float).reshape(-1, 3)
    w = np.array([r[2] for r in rows])
    plan = Plan(["iou@samples", "iou@samples@threshold=0.2"], Task(num_classes=3, kind="multilabel"))
    batch = Batch(y_true=Y, y_score=S, sample_weight=w)
    whole = plan.fold(plan.zero(), batch)
    assert fold_plan_sharded(plan, batch, rng) == whole
    for s in whole:
        assert State.decode(s.encode()) == s
