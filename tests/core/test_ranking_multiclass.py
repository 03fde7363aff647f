"""Multiclass ROC AUC (one-vs-rest, one-vs-one) and average precision from the per-class score
distribution: scikit-learn parity, merge laws, certified bounds."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import average_precision_score, roc_auc_score

from mergeable_metrics import MetricCollection
from mergeable_metrics.engine import Plan
from mergeable_metrics.metrics import Task
from mergeable_metrics.inputs.validation import Batch
from mergeable_metrics.metrics.base import resolve
from mergeable_metrics.states.score_distribution import ClassScoreDistributionLayout, ClassScoreDistributionState, default_class_capacity
from mergeable_metrics.states.base import State
from tests._helpers import assert_bounds_contain

pytestmark = pytest.mark.filterwarnings("ignore::mergeable_metrics.metrics.base.UndefinedMetricWarning")

CS, CL = ClassScoreDistributionState, ClassScoreDistributionLayout

OVR = {
    "roc_auc": dict(multi_class="ovr", average="macro"),
    "roc_auc@weighted": dict(multi_class="ovr", average="weighted"),
    "roc_auc@micro": dict(multi_class="ovr", average="micro"),
    "roc_auc@none": dict(multi_class="ovr", average=None),
}
OVO = {
    "roc_auc@multi_class=ovo": dict(multi_class="ovo", average="macro"),
    "roc_auc@weighted@multi_class=ovo": dict(multi_class="ovo", average="weighted"),
}
AP = {"average_precision": "macro", "average_precision@weighted": "weighted", "average_precision@micro": "micro", "average_precision@none": None}


def _data(seed, n=600, k=4, decimals=None):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    logits = rng.normal(size=(n, k)) + 1.2 * np.eye(k)[y]
    p = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    if decimals is not None:  # ties
        p = np.round(p, decimals) + 1e-3
        p = p / p.sum(axis=1, keepdims=True)
    return y, p


def _collection(metrics, k, y, p, w=None, batches=3, capacity=None):
    names = [m if capacity is None else f"{m}@capacity={capacity}" for m in metrics]
    mc = MetricCollection(*names, num_classes=k, multiclass=k == 2)
    for part in np.array_split(np.arange(len(y)), batches):
        mc.update(y[part], y_score=p[part], sample_weight=None if w is None else w[part])
    values = mc.compute()
    return {req: values[m.key] for req, m in zip(metrics, mc.plan.metrics)}, mc


@pytest.mark.parametrize("seed,k,decimals,weighted", [(0, 3, None, False), (1, 4, 2, False), (2, 5, 1, True), (3, 3, 2, True)])
def test_sklearn_parity(seed, k, decimals, weighted):
    y, p = _data(seed, k=k, decimals=decimals)
    w = np.random.default_rng(seed + 100).integers(0, 4, len(y)).astype(float) if weighted else None
    metrics = list(OVR) + list(AP) + ([] if weighted else list(OVO))  # scikit-learn refuses weights for ovo
    got, mc = _collection(metrics, k, y, p, w)
    assert mc.states[1].is_exact
    for key, kw in OVR.items():
        assert np.allclose(got[key], roc_auc_score(y, p, sample_weight=w, **kw), rtol=1e-12, atol=0), key
    for key, avg in AP.items():
        assert np.allclose(got[key], average_precision_score(y, p, sample_weight=w, average=avg), rtol=1e-12, atol=0), key
    if not weighted:
        for key, kw in OVO.items():
            assert np.allclose(got[key], roc_auc_score(y, p, **kw), rtol=1e-12, atol=0), key


def test_two_classes_as_multiclass():
    y, p = _data(4, k=2, decimals=2)
    got, _ = _collection(["roc_auc", "roc_auc@none", "roc_auc@multi_class=ovo", "average_precision@none"], 2, y, p)
    per = [roc_auc_score(y == c, p[:, c]) for c in range(2)]
    np.testing.assert_allclose(got["roc_auc@none"], per, rtol=1e-12)
    assert np.isclose(got["roc_auc"], np.mean(per), rtol=1e-12) and np.isclose(got["roc_auc@multi_class=ovo"], np.mean(per), rtol=1e-12)
    np.testing.assert_allclose(got["average_precision@none"], [average_precision_score(y == c, p[:, c]) for c in range(2)], rtol=1e-12)


def test_ovo_with_weights_generalises_prevalence():
    y, p = _data(5, k=3)
    w = np.random.default_rng(105).integers(1, 3, len(y)).astype(float)
    # integer weights = repeated rows, for which scikit-learn's ovo is defined
    rep = w.astype(int)
    got, _ = _collection(list(OVO), 3, y, p, w)
    for key, kw in OVO.items():
        assert np.isclose(got[key], roc_auc_score(np.repeat(y, rep), np.repeat(p, rep, axis=0), **kw), rtol=1e-12, atol=0), key


def test_absent_class_is_left_out():
    y, p = _data(6, k=4)
    keep = y != 2
    got, _ = _collection(["roc_auc", "roc_auc@none", "roc_auc@multi_class=ovo"], 4, y[keep], p[keep])
    per = got["roc_auc@none"]
    assert math.isnan(per[2]) and np.isclose(got["roc_auc"], np.nanmean(per), rtol=1e-12)
    present = [0, 1, 3]
    want = roc_auc_score(y[keep], p[keep][:, present] / p[keep][:, present].sum(1, keepdims=True), multi_class="ovo")
    assert math.isfinite(got["roc_auc@multi_class=ovo"]) and not np.isclose(got["roc_auc@multi_class=ovo"], 0.0)
    assert abs(got["roc_auc@multi_class=ovo"] - want) < 0.2  # renormalised scores differ; same pairs


def test_empty_is_nan():
    mc = MetricCollection("roc_auc", "roc_auc@none", "average_precision", num_classes=3)
    got = mc.compute()
    assert math.isnan(got["roc_auc"]) and math.isnan(got["average_precision"]) and np.isnan(got["roc_auc@none"]).all()


@settings(max_examples=30)
@given(
    rows=st.lists(st.tuples(st.integers(0, 2), st.integers(0, 4), st.integers(0, 4), st.integers(0, 2)), max_size=40),
    capacity=st.sampled_from([2, 3, 50]),
    seed=st.integers(0, 2**32 - 1),
)
def test_merge_order_and_split_never_change_the_state(rows, capacity, seed):
    rng = np.random.default_rng(seed)
    y = np.array([r[0] for r in rows], dtype=np.int64)
    raw = np.array([[r[1] + 1, r[2] + 1, 1] for r in rows], dtype=float).reshape(-1, 3)
    p = raw / raw.sum(axis=1, keepdims=True)
    w = np.array([r[3] for r in rows], dtype=float)
    plan = Plan([f"roc_auc@capacity={capacity}", f"average_precision@micro@capacity={capacity}"], Task(num_classes=3))
    whole = plan.fold(plan.zero(), Batch(y_true=y, y_score=p, sample_weight=w))
    cuts = np.sort(rng.integers(0, len(rows) + 1, rng.integers(0, 5)))
    items = [plan.fold(plan.zero(), Batch(y_true=y[i], y_score=p[i], sample_weight=w[i])) for i in np.split(np.arange(len(rows)), cuts)]
    folded = plan.zero()  # each piece binned at the running state's levels (State.fold)
    for i in np.split(np.arange(len(rows)), cuts):
        folded = plan.fold(folded, Batch(y_true=y[i], y_score=p[i], sample_weight=w[i]))
    assert folded == whole
    items.append(plan.zero())
    while len(items) > 1:
        i, j = sorted(rng.choice(len(items), 2, replace=False))
        a, b = items.pop(j), items.pop(i)
        items.append(plan.merge(a, b) if rng.random() < 0.5 else plan.merge(b, a))
    assert items[0] == whole
    assert State.decode(whole[1].encode()) == whole[1]


def test_compressed_bounds_contain_the_exact_value():
    task = Task(num_classes=3)
    keys = ["roc_auc", "roc_auc@weighted", "roc_auc@micro", "roc_auc@multi_class=ovo", "roc_auc@weighted@multi_class=ovo",
            "average_precision", "average_precision@weighted", "average_precision@micro"]  # fmt: skip
    metrics = [resolve(k, task) for k in keys]
    rng = np.random.default_rng(13)
    for t in range(80):
        n = int(rng.integers(5, 200))
        y, p = _data(int(rng.integers(0, 2**31)), n=n, k=3, decimals=int(rng.choice([1, 2, 6])))
        w = None if t % 2 else rng.choice([0.0, 1.0, 2.5], n)
        exact = CS.from_batch(CL(3, 100_000), Batch(y_true=y, y_score=p, sample_weight=w))
        small = CS.from_batch(CL(3, int(rng.choice([2, 4, 9]))), Batch(y_true=y, y_score=p, sample_weight=w))
        assert_bounds_contain(metrics, "class_score_distribution", exact, small, t)


def test_layout_and_errors():
    assert CL(3).capacity == default_class_capacity(3) == 10_922 and CL(10).capacity == 1_191 and CL(1000).capacity == 16
    assert 8 * 3 * 4 * CL(3).capacity < 1 << 20
    with pytest.raises(ValueError, match="num_classes"):
        CL(1)
    with pytest.raises(ValueError, match="capacity"):
        CL(3, 1)
    with pytest.raises(ValueError, match="capacity"):
        CS.zero(CL(3, 10)).merge(CS.zero(CL(3, 20)))
    with pytest.raises(ValueError, match="num_classes"):
        CS.zero(CL(3, 10)).merge(CS.zero(CL(4, 10)))
    with pytest.raises(ValueError, match="score matrix"):
        CS.from_batch(CL(3), Batch(y_true=np.array([0, 1]), y_pred=np.array([0, 1])))
    bad = CS.zero(CL(3, 10)).arrays | {"offsets": np.array([0, 1, 1, 1])}
    with pytest.raises(ValueError, match="offsets"):
        CS(CL(3, 10), bad)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert "class_score_distribution" in repr(MetricCollection("roc_auc", num_classes=3))
