"""Multilabel-indicator ROC AUC and average precision (issue 17): one binary score distribution per
label column (``label_score_distribution``) and per-row sums for ``average="samples"``
(``label_ranking_samples``). scikit-learn parity over a grid (ties, weights with zeros, absent
labels, per slice), merge laws, certified bounds of compressed states, errors."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import average_precision_score, roc_auc_score

from mergeable_metrics import Evaluation, MetricCollection
from mergeable_metrics.engine import Plan
from mergeable_metrics.metrics import Task
from mergeable_metrics.inputs.validation import Batch
from mergeable_metrics.metrics.base import resolve
from mergeable_metrics.states.score_distribution import (
    LabelRankingSamplesLayout,
    LabelRankingSamplesState,
    LabelScoreDistributionLayout,
    LabelScoreDistributionState,
    default_label_capacity,
    row_ranking_values,
)
from mergeable_metrics.states.base import State
from tests._helpers import assert_bounds_contain, fold_plan_sharded

pytestmark = [pytest.mark.filterwarnings("ignore::mergeable_metrics.metrics.base.UndefinedMetricWarning"), pytest.mark.filterwarnings("ignore::UserWarning")]

LS, LL = LabelScoreDistributionState, LabelScoreDistributionLayout
AVERAGES = {"": "macro", "@macro": "macro", "@micro": "micro", "@weighted": "weighted", "@none": None, "@samples": "samples"}
REFS = {"roc_auc": roc_auc_score, "average_precision": average_precision_score}
METRICS = [f"{m}{a}" for m in REFS for a in AVERAGES]


def _data(seed: int, n: int = 300, L: int = 4, decimals: int | None = None, weighted: bool = False):
    rng = np.random.default_rng(seed)
    Y = (rng.random((n, L)) < np.linspace(0.15, 0.7, L)).astype(np.int64)
    S = np.clip(0.35 * Y + 0.65 * rng.random((n, L)), 0, 1)
    if decimals is not None:  # ties, within a label column and within a row
        S = np.round(S, decimals)
    w = rng.choice([0.0, 1.0, 2.0, 0.5, 3.25], n) if weighted else None
    return Y, S, w


def _sklearn(metric: str, Y, S, w):
    name, _, avg = metric.partition("@")
    average = AVERAGES["@" + avg if avg else ""]
    fn = REFS[name]
    if average != "samples" or name == "average_precision":
        return fn(Y, S, average=average, sample_weight=w)
    # scikit-learn's samples mean is NaN as soon as one row has a single label value; ours leaves
    # those rows out: the same mean over the rows where every row's AUC is defined
    keep = (Y.sum(1) > 0) & (Y.sum(1) < Y.shape[1])
    if not keep.any():
        return math.nan
    return fn(Y[keep], S[keep], average="samples", sample_weight=None if w is None else w[keep])


def _collect(metrics, Y, S, w=None, batches=3, **kw):
    mc = MetricCollection(*metrics, task="multilabel", num_classes=Y.shape[1], **kw)
    for part in np.array_split(np.arange(len(Y)), batches):
        mc.update(Y[part], y_score=S[part], sample_weight=None if w is None else w[part])
    return mc.compute(), mc


@pytest.mark.parametrize("seed,L,decimals,weighted", [(0, 4, None, False), (1, 3, 2, False), (2, 5, 1, True), (3, 4, 2, True), (4, 1, 1, True)])
def test_sklearn_parity(seed, L, decimals, weighted):
    Y, S, w = _data(seed, L=L, decimals=decimals, weighted=weighted)
    got, mc = _collect(METRICS, Y, S, w)
    assert all(s.is_exact for s in mc.states if s.kind == "label_score_distribution")
    for m in METRICS:
        want = _sklearn(m, Y, S, w)
        if m.endswith("@samples") and L == 1:  # scikit-learn reads one column as binary: by hand
            want = math.nan if m.startswith("roc") else np.average(Y[:, 0], weights=w)
        if m.endswith("@samples"):  # per-row rationals rounded once; scikit-learn's curves round differently
            assert np.allclose(got[m], want, rtol=1e-13, atol=0, equal_nan=True), m
        else:  # the binary state's formulas: bit for bit (scikit-learn gives a scalar for @none with L = 1)
            assert np.array_equal(got[m], want) or (L == 1 and np.array_equal(np.ravel(got[m]), np.ravel(want))), (m, got[m], want)


def test_every_label_is_the_binary_metric_of_its_column():
    Y, S, w = _data(5, L=3, decimals=2, weighted=True)
    got, _ = _collect(["roc_auc@none", "average_precision@none"], Y, S, w)
    for j in range(3):
        binary = MetricCollection("roc_auc", "average_precision")
        binary.update(Y[:, j], y_score=S[:, j], sample_weight=w)
        b = binary.compute()
        assert got["roc_auc@none"][j] == b["roc_auc"] and got["average_precision@none"][j] == b["average_precision"]


def test_absent_label_is_left_out_of_averages():
    Y, S, _ = _data(6, L=4)
    Y[:, 2] = 0  # label 2 has no positive: its AUC is undefined, its AP 0.0 (scikit-learn)
    got, _ = _collect(["roc_auc", "roc_auc@none", "roc_auc@weighted", "average_precision", "average_precision@none"], Y, S)
    per = got["roc_auc@none"]
    assert math.isnan(per[2])
    present = [0, 1, 3]
    assert got["roc_auc"] == pytest.approx(roc_auc_score(Y[:, present], S[:, present]), rel=1e-15)
    assert got["roc_auc@weighted"] == pytest.approx(roc_auc_score(Y, S, average="weighted"), rel=1e-15)  # weight 0 anyway
    assert got["average_precision@none"][2] == 0.0
    assert got["average_precision"] == average_precision_score(Y, S)


def test_samples_by_hand():
    # row 0: labels (1, 0, 1), scores (.9, .2, .6): both positives above the negative -> AUC 1, AP 1
    # row 1: labels (0, 1, 0), scores (.3, .3, .1): the positive ties one negative, beats one -> AUC 3/4;
    #        AP: at threshold .3 precision 1/2 with recall 1 -> 1/2
    # row 2: labels (1, 1, 1): AUC undefined (left out), AP 1
    Y = np.array([[1, 0, 1], [0, 1, 0], [1, 1, 1]])
    S = np.array([[0.9, 0.2, 0.6], [0.3, 0.3, 0.1], [0.5, 0.5, 0.2]])
    auc, ap = row_ranking_values(Y, S)
    assert np.isnan(auc[2]) and auc[:2].tolist() == [1.0, 0.75] and ap.tolist() == [1.0, 0.5, 1.0]
    got, _ = _collect(["roc_auc@samples", "average_precision@samples"], Y, S, np.array([1.0, 3.0, 2.0]), batches=2)
    assert got["roc_auc@samples"] == (1.0 * 1 + 0.75 * 3) / 4
    assert got["average_precision@samples"] == (1.0 + 0.5 * 3 + 1.0 * 2) / 6
    zero_w, _ = _collect(["roc_auc@samples"], Y, S, np.zeros(3))  # weights sum to 0: the plain mean (scikit-learn)
    assert zero_w["roc_auc@samples"] == 0.875


def test_empty_is_nan():
    got, _ = _collect(METRICS, np.zeros((0, 3), np.int64), np.zeros((0, 3)))
    for m in METRICS:
        assert np.isnan(got[m]).all(), m
    assert np.asarray(got["roc_auc@none"]).shape == (3,)


def test_per_slice_parity():
    Y, S, w = _data(7, n=400, L=3, decimals=2, weighted=True)
    g = np.random.default_rng(8).choice(["a", "b", "c"], len(Y))
    rows = [{"y": Y[i].tolist(), "s": S[i].tolist(), "w": float(w[i]), "g": str(g[i])} for i in range(len(Y))]
    ev = Evaluation(label_col="y", score_col="s", weight_col="w", task="multilabel", num_classes=3, slices=["g"], metrics=METRICS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = ev.evaluate([rows[:150], rows[150:]])
    assert len(res.slices) == 4
    for sl in res.slices:
        keep = np.ones(len(Y), bool) if sl.slice == () else g == dict(sl.slice)["g"]
        for m in METRICS:
            want = _sklearn(m, Y[keep], S[keep], w[keep])
            assert np.allclose(sl.metrics[m], want, rtol=1e-13, atol=0, equal_nan=True), (sl.slice, m)


@settings(max_examples=40, deadline=None)
@given(
    rows=st.lists(st.tuples(st.integers(0, 1), st.integers(0, 1), st.integers(0, 4), st.integers(0, 4), st.sampled_from([0.0, 1.0, 0.1, 2.5])), max_size=40),
    capacity=st.sampled_from([2, 3, 50]),
    seed=st.integers(0, 2**32 - 1),
)
def test_merge_order_and_split_never_change_the_state(rows, capacity, seed):
    rng = np.random.default_rng(seed)
    Y = np.array([r[:2] for r in rows], dtype=np.int64).reshape(-1, 2)
    S = np.array([[r[2] / 4, r[3] / 4] for r in rows], dtype=float).reshape(-1, 2)
    w = np.array([r[4] for r in rows], dtype=float)
    plan = Plan([f"roc_auc@capacity={capacity}", f"average_precision@micro@capacity={capacity}", "roc_auc@samples", "average_precision@samples"],
                Task(num_classes=2, kind="multilabel"))  # fmt: skip
    batch = Batch(y_true=Y, y_score=S, sample_weight=w)
    whole = plan.fold(plan.zero(), batch)
    assert fold_plan_sharded(plan, batch, rng) == whole  # each piece folded at the running state's levels
    for s in whole:
        assert State.decode(s.encode()) == s
    assert plan.merge(plan.zero(), whole) == whole == plan.merge(whole, plan.zero())


def test_compressed_bounds_contain_the_exact_value():
    task = Task(num_classes=3, kind="multilabel")
    keys = ["roc_auc", "roc_auc@weighted", "roc_auc@micro", "average_precision", "average_precision@weighted", "average_precision@micro"]
    metrics = [resolve(k, task) for k in keys]
    rng = np.random.default_rng(13)
    for t in range(60):
        n = int(rng.integers(5, 150))
        Y, S, _ = _data(int(rng.integers(0, 2**31)), n=n, L=3, decimals=int(rng.choice([1, 2, 6])))
        w = None if t % 2 else rng.choice([0.0, 1.0, 2.5], n)
        exact = LS.from_batch(LL(3, 100_000), Batch(y_true=Y, y_score=S, sample_weight=w))
        small = LS.from_batch(LL(3, int(rng.choice([2, 4, 9]))), Batch(y_true=Y, y_score=S, sample_weight=w))
        assert_bounds_contain(metrics, "label_score_distribution", exact, small, t)


def test_layout_and_errors():
    assert LL(3).capacity == default_label_capacity(3) == 14_563 and LL(1000).capacity == 43 and LL(10**5).capacity == 16
    assert 24 * 3 * LL(3).capacity <= 1 << 20
    with pytest.raises(ValueError, match="num_labels"):
        LL(0)
    with pytest.raises(ValueError, match="capacity"):
        LS.zero(LL(3, 10)).merge(LS.zero(LL(3, 20)))
    with pytest.raises(ValueError, match="num_labels"):
        LS.zero(LL(3, 10)).merge(LS.zero(LL(4, 10)))
    with pytest.raises(ValueError, match="num_labels"):
        LabelRankingSamplesState.zero(LabelRankingSamplesLayout(3)).merge(LabelRankingSamplesState.zero(LabelRankingSamplesLayout(2)))
    with pytest.raises(ValueError, match=r"\(N, 3\) score matrix"):
        LS.from_batch(LL(3), Batch(y_true=np.zeros((2, 3), np.int64), y_pred=np.zeros((2, 3), np.int64)))
    task = Task(num_classes=3, kind="multilabel")
    for bad, word in [("roc_auc@samples@max_fpr=0.5", "max_fpr"), ("roc_auc@multi_class=ovo", "multi_class"), ("average_precision@binary", "average"),
                      ("roc_auc@samples@capacity=10", "capacity"), ("roc_auc@pos_label=0", "pos_label")]:  # fmt: skip
        with pytest.raises(ValueError, match=word):
            resolve(bad, task)
    with pytest.raises(ValueError, match="score"):  # labels only: the ranking metrics need scores
        MetricCollection("roc_auc", task="multilabel", num_classes=3).update(np.zeros((2, 3), np.int64), y_pred=np.zeros((2, 3), np.int64))
