"""Ranking metrics (ROC AUC, average precision, curves, ...) from the score distribution.

* scikit-learn parity on the named case grid, exact states (bit for bit where weights are exact);
* reference cases ho12, ho13, ho16 of the shared case file (copied here as literals);
* certified bounds of compressed states contain the exact value over many random datasets;
* merge order and data split never change a value (hypothesis);
* metric strings, parameters, undefined values, intervals in results.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import ks_2samp
from sklearn.metrics import (
    auc,
    average_precision_score,
    confusion_matrix_at_thresholds,
    precision_recall_curve,
    roc_auc_score,
    roc_curve,
)

from mergeable_metrics import Evaluation, MetricCollection
from mergeable_metrics.engine import Plan
from mergeable_metrics.metrics import Task
from mergeable_metrics.inputs.validation import Batch
from mergeable_metrics.metrics.base import Interval, resolve
from mergeable_metrics.metrics.ranking import RankingMetric
from mergeable_metrics.states.score_distribution import ScoreDistributionLayout, ScoreDistributionState
from tests._helpers import BINARY_GRID, binary_case, close

pytestmark = pytest.mark.filterwarnings("ignore::mergeable_metrics.metrics.base.UndefinedMetricWarning")

SCALARS = [
    "roc_auc",
    "average_precision",
    "pr_auc_trapezoid",
    "gini",
    "ks_statistic",
    "roc_auc@max_fpr=0.3",
    "partial_roc_auc@max_fpr=0.2@standardize=false",
    "precision_at_recall@recall=0.7",
    "recall_at_precision@precision=0.6",
    "sensitivity_at_specificity@specificity=0.8",
    "specificity_at_sensitivity@sensitivity=0.5",
    "roc_auc@pos_label=0",
    "average_precision@pos_label=0",
]
CURVES = ["roc_curve", "precision_recall_curve", "roc_curve@drop_intermediate=false", "precision_recall_curve@drop_intermediate=true"]


# -- scikit-learn references ----------------------------------------------------------------------
def _quiet(fn, *a, **k):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*a, **k)


def reference(y, s, w) -> dict:
    """Expected values of SCALARS and CURVES from scikit-learn (and scipy) with our policies for
    undefined values: NaN for an absent class (or an empty slice), 0.0 average precision / PR area
    with negatives but no positives."""
    y, s = np.asarray(y, int), np.asarray(s, float)
    wf = np.ones(len(y)) if w is None else np.asarray(w, float)
    P, N = float(wf[y == 1].sum()), float(wf[y == 0].sum())
    nan = float("nan")
    ref: dict = {}
    if P + N == 0:
        return {**{k: nan for k in SCALARS}, **{k: np.zeros((0, 3)) for k in CURVES}}
    both = P > 0 and N > 0
    ref["roc_auc"] = _quiet(roc_auc_score, y, s, sample_weight=w) if both else nan
    ref["gini"] = 2 * ref["roc_auc"] - 1 if both else nan
    ref["roc_auc@max_fpr=0.3"] = _quiet(roc_auc_score, y, s, sample_weight=w, max_fpr=0.3) if both else nan
    if both:
        std = _quiet(roc_auc_score, y, s, sample_weight=w, max_fpr=0.2)
        lo, hi = 0.5 * 0.2**2, 0.2
        ref["partial_roc_auc@max_fpr=0.2@standardize=false"] = (2 * std - 1) * (hi - lo) + lo
    else:
        ref["partial_roc_auc@max_fpr=0.2@standardize=false"] = nan
    ref["roc_auc@pos_label=0"] = _quiet(roc_auc_score, 1 - y, s, sample_weight=w) if both else nan
    ref["average_precision"] = _quiet(average_precision_score, y, s, sample_weight=w) if P > 0 else 0.0
    ref["average_precision@pos_label=0"] = _quiet(average_precision_score, y, s, sample_weight=w, pos_label=0) if N > 0 else 0.0
    prec, rec, thr = _quiet(precision_recall_curve, y, s, sample_weight=w)
    ref["pr_auc_trapezoid"] = auc(rec, prec) if P > 0 else 0.0
    ref["precision_recall_curve"] = np.c_[prec, rec, np.r_[thr, np.inf]]
    p2, r2, t2 = _quiet(precision_recall_curve, y, s, sample_weight=w, drop_intermediate=True)
    ref["precision_recall_curve@drop_intermediate=true"] = np.c_[p2, r2, np.r_[t2, np.inf]]
    for key, drop in (("roc_curve", True), ("roc_curve@drop_intermediate=false", False)):
        f, t, th = _quiet(roc_curve, y, s, sample_weight=w, drop_intermediate=drop)
        ref[key] = np.c_[f, t, th]
    # operating-point metrics from scikit-learn's per-threshold counts
    tns, fps, fns, tps, _ = _quiet(confusion_matrix_at_thresholds, y, s, sample_weight=w, pos_label=1)
    if P > 0:
        recall, precision = tps / P, tps / (tps + fps)
        ok = recall >= 0.7
        ref["precision_at_recall@recall=0.7"] = float(precision[ok].max())
        ok = precision >= 0.6
        ref["recall_at_precision@precision=0.6"] = float(recall[ok].max()) if ok.any() else 0.0
    else:
        ref["precision_at_recall@recall=0.7"] = ref["recall_at_precision@precision=0.6"] = nan
    if both:
        sens, spec = np.r_[0.0, tps / P], np.r_[1.0, tns / N]
        ref["sensitivity_at_specificity@specificity=0.8"] = float(sens[spec >= 0.8].max())
        ref["specificity_at_sensitivity@sensitivity=0.5"] = float(spec[sens >= 0.5].max())
        ref["ks_statistic"] = float(np.abs(sens - (1 - spec)).max())
    else:
        for k in ("sensitivity_at_specificity@specificity=0.8", "specificity_at_sensitivity@sensitivity=0.5", "ks_statistic"):
            ref[k] = nan
    return ref


def compute(metrics, y, s, w=None, capacity=None, batches=1):
    metrics = [m if capacity is None else f"{m}@capacity={capacity}" for m in metrics]
    mc = MetricCollection(*metrics)
    n = len(y)
    for part in np.array_split(np.arange(n), batches) if n else [np.arange(0)]:
        mc.update(np.asarray(y)[part], y_score=np.asarray(s, float)[part], sample_weight=None if w is None else np.asarray(w)[part])
    values = mc.compute()
    # results use canonical keys (e.g. "precision_at_recall@0.7"); index them by the requested text
    out = {req: values[m.key] for req, m in zip(metrics, mc.plan.metrics)}
    if capacity is not None:
        out = {k.replace(f"@capacity={capacity}", ""): v for k, v in out.items()}
    return out, mc


def _same(a, b) -> bool:
    a, b = np.asarray(a, float), np.asarray(b, float)
    return a.shape == b.shape and bool(np.all((a == b) | (np.isnan(a) & np.isnan(b))))


# -- parity ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("name,weighted", BINARY_GRID, ids=lambda p: str(p))
def test_sklearn_parity_on_the_case_grid(name, weighted):
    c = binary_case(name, weighted)
    got, _ = compute(SCALARS + CURVES, c.y_true, c.y_score, c.sample_weight, batches=3)
    want = reference(c.y_true, c.y_score, c.sample_weight)
    for key in SCALARS + CURVES:
        g = got[key]
        assert not isinstance(g, Interval), key  # every distinct score fits: exact
        assert close(g, want[key]), (key, g, want[key])
    # AUC, AP and the curves are bit-identical (the case weights are exact multiples of 1/8)
    for key in ("roc_auc", "average_precision", "roc_curve", "precision_recall_curve", "pr_auc_trapezoid"):
        assert _same(got[key], want[key]), key


@pytest.mark.parametrize("seed", range(25))
def test_sklearn_parity_random_data_bit_for_bit(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 3000))
    y = (rng.random(n) < rng.random()).astype(int)
    s = np.round(rng.normal(size=n) + y, int(rng.integers(0, 4))) if seed % 2 else rng.random(n)
    w = None if seed % 3 == 0 else rng.integers(0, 5, n).astype(float)
    got, _ = compute(SCALARS + CURVES, y, s, w, batches=int(rng.integers(1, 5)))
    want = reference(y, s, w)
    for key in SCALARS + CURVES:
        assert close(got[key], want[key]), (key, got[key], want[key])
    for key in ("roc_auc", "average_precision", "roc_curve", "precision_recall_curve", "roc_auc@max_fpr=0.3"):
        assert _same(got[key], want[key]), key


def test_fractional_weights_match_to_rounding():
    rng = np.random.default_rng(7)
    n = 2000
    y, s, w = rng.integers(0, 2, n), np.round(rng.random(n), 2), rng.random(n) * 3
    got, _ = compute(SCALARS + CURVES, y, s, w, batches=4)
    want = reference(y, s, w)
    for key in SCALARS + CURVES:
        assert np.allclose(np.asarray(got[key], float), np.asarray(want[key], float), rtol=1e-12, atol=1e-12, equal_nan=True), key


def test_ks_matches_scipy_unweighted():
    rng = np.random.default_rng(8)
    y = rng.integers(0, 2, 500)
    s = np.round(rng.normal(size=500) + 0.7 * y, 1)
    got, _ = compute(["ks_statistic"], y, s)
    assert close(got["ks_statistic"], ks_2samp(s[y == 1], s[y == 0]).statistic)


def test_hard_predictions_are_scores():
    y = np.array([0, 1, 1, 0, 1, 0, 0])
    p = np.array([0, 1, 0, 0, 1, 1, 0])
    mc = MetricCollection("roc_auc", "average_precision")
    mc.update(y, y_pred=p)
    got = mc.compute()
    assert got["roc_auc"] == roc_auc_score(y, p) and got["average_precision"] == average_precision_score(y, p)


def _two_columns(n: int, seed: int):
    """Labels, integer weights and an (N, 2) probability matrix whose column 0 is *not* exactly
    ``1 - column 1``: a +-1e-7 jitter (rows still sum to 1 within the 2e-6 tolerance) splits some
    of column 1's ties, so ranking by column 0 differs from ranking by column 1 reversed."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    p1 = np.round(np.clip(0.25 * y + 0.75 * rng.random(n), 0, 1), 2)
    p0 = np.clip(1 - p1 + rng.choice([-1e-7, 0.0, 1e-7], n), 0, 1)
    return y, np.stack([p0, p1], axis=1), rng.integers(0, 4, n).astype(float)


@pytest.mark.parametrize("weighted", [False, True])
def test_pos_label_with_two_probability_columns_matches_sklearn(weighted):
    """A binary score given as two columns (``predict_proba`` output): ``pos_label=0`` ranks by
    column 0 and ``pos_label=1`` by column 1, both in one plan (issue 4)."""
    y, P, w = _two_columns(3000, 8)
    w = w if weighted else None
    assert not np.array_equal(np.argsort(-P[:, 0], kind="stable"), np.argsort(P[:, 1], kind="stable"))
    mc = MetricCollection("roc_auc", "roc_auc@pos_label=0", "average_precision", "average_precision@pos_label=0",
                          "roc_curve@pos_label=0", "precision_recall_curve@pos_label=0")  # fmt: skip
    for i in range(0, 3000, 700):
        mc.update(y[i : i + 700], y_score=P[i : i + 700], sample_weight=None if w is None else w[i : i + 700])
    got = mc.compute()
    assert got["roc_auc"] == roc_auc_score(y, P[:, 1], sample_weight=w)
    assert got["roc_auc@pos_label=0"] == roc_auc_score(y == 0, P[:, 0], sample_weight=w)
    assert got["average_precision"] == average_precision_score(y, P[:, 1], sample_weight=w)
    assert got["average_precision@pos_label=0"] == average_precision_score(y, P[:, 0], pos_label=0, sample_weight=w)
    fpr, tpr, th = roc_curve(y, P[:, 0], pos_label=0, sample_weight=w)
    np.testing.assert_array_equal(got["roc_curve@pos_label=0"], np.c_[fpr, tpr, th])
    prec, rec, th = precision_recall_curve(y, P[:, 0], pos_label=0, sample_weight=w)
    np.testing.assert_array_equal(got["precision_recall_curve@pos_label=0"], np.c_[prec, rec, np.r_[th, np.inf]])
    # column 0 differs from 1 - column 1 in its ties: ranking column 1 reversed would give another value
    assert got["roc_auc@pos_label=0"] != roc_auc_score(y == 0, -P[:, 1], sample_weight=w)


def test_pos_label_with_two_score_and_logit_columns():
    rng = np.random.default_rng(9)
    y = rng.integers(0, 2, 500)
    S = np.round(rng.normal(size=(500, 2)) + y[:, None] * [[-0.5, 0.5]], 1)  # two independent margins
    mc = MetricCollection("roc_auc@pos_label=0", "roc_auc", formats={"score": "scores"})
    mc.update(y, y_score=S)
    got = mc.compute()
    assert got["roc_auc@pos_label=0"] == roc_auc_score(y == 0, S[:, 0]) and got["roc_auc"] == roc_auc_score(y, S[:, 1])
    e = np.exp(S - S.max(axis=1, keepdims=True))
    soft = e / e.sum(axis=1, keepdims=True)
    mc = MetricCollection("roc_auc@pos_label=0", "average_precision@pos_label=0", formats={"score": "logits"})
    mc.update(y, y_score=S)
    got = mc.compute()
    assert close(got["roc_auc@pos_label=0"], roc_auc_score(y == 0, soft[:, 0]), 1e-12)
    assert close(got["average_precision@pos_label=0"], average_precision_score(y, soft[:, 0], pos_label=0), 1e-12)


def test_pos_label_zero_with_one_column_and_with_hard_predictions():
    """One score column holds the positive class's scores (scikit-learn's convention); hard
    predictions score 1 where they predict the positive class."""
    y = np.array([0, 1, 1, 0, 1, 0, 0, 1])
    s = np.array([0.9, 0.2, 0.4, 0.7, 0.1, 0.6, 0.3, 0.5])  # scores of class 0
    mc = MetricCollection("roc_auc@pos_label=0", "average_precision@pos_label=0")
    mc.update(y, y_score=s)
    got = mc.compute()
    assert got["roc_auc@pos_label=0"] == roc_auc_score(y == 0, s)
    assert got["average_precision@pos_label=0"] == average_precision_score(y, s, pos_label=0)
    p = np.array([0, 1, 0, 0, 1, 1, 0, 1])
    mc = MetricCollection("roc_auc@pos_label=0", "average_precision@pos_label=0", "roc_auc")
    mc.update(y, y_pred=p)
    got = mc.compute()
    assert got["roc_auc@pos_label=0"] == roc_auc_score(y == 0, p == 0) == got["roc_auc"] == roc_auc_score(y, p)
    assert got["average_precision@pos_label=0"] == average_precision_score(y == 0, p == 0)


# -- reference cases (../shared/cases/reference_cases.json), copied as literals ------------------------
def _run_case(workers, metrics=("roc_auc", "average_precision")):
    collections = []
    for batches in workers:
        mc = MetricCollection(*metrics)
        for b in batches:
            mc.update(b["y_true"], y_score=[float(v) for v in b["y_score"]], sample_weight=b.get("sample_weight"))
        collections.append(mc)
    out = collections[0]
    for other in collections[1:]:
        out.merge(other)
    return out.compute()


def test_reference_case_ho12_auc_only_positive_labels():
    workers = [[{"y_true": [1, 1], "y_score": [0.9, 0.35]}], [{"y_true": [1, 1, 1], "y_score": [0.6, 0.2, 0.75]}]]
    for order in (workers, workers[::-1]):
        got = _run_case(order)
        assert math.isnan(got["roc_auc"])
        assert close(got["average_precision"], 1.0)


def test_reference_case_ho13_auc_ap_only_negative_labels():
    workers = [[{"y_true": [0, 0, 0], "y_score": [0.4, 0.8, 0.1]}], [{"y_true": [0, 0], "y_score": [0.65, 0.3]}]]
    for order in (workers, workers[::-1]):
        got = _run_case(order)
        assert math.isnan(got["roc_auc"])
        assert close(got["average_precision"], 0.0)


def test_reference_case_ho16_auc_nan_score_rejected():
    workers = [
        [{"y_true": [0, 1, 1], "y_score": [0.2, 0.7, 0.9]}],
        [{"y_true": [1, 0], "y_score": [0.6, 0.1]}, {"y_true": [0, 1], "y_score": ["nan", 0.8]}],
    ]
    with pytest.raises(ValueError, match="(?i)nan"):
        _run_case(workers)


# -- certified bounds ---------------------------------------------------------------------------
def test_bounds_contain_the_exact_value_over_many_random_datasets():
    task = Task()
    metrics = [resolve(k, task) for k in SCALARS]
    rng = np.random.default_rng(2024)
    compressed = 0
    for t in range(700):
        n = int(rng.integers(1, 300))
        kind = t % 4
        if kind == 0:
            s = rng.random(n)
        elif kind == 1:
            s = np.round(rng.normal(size=n), 2)
        elif kind == 2:
            s = rng.integers(0, 20, n) * 1.0
        else:
            s = 0.5 + 1e-9 * rng.random(n)
        ramp = (s - s.min()) / (np.ptp(s) + 1e-300)
        y = (rng.random(n) < 0.2 + 0.6 * ramp).astype(int) if t % 3 else rng.integers(0, 2, n)
        w = None if t % 2 else rng.choice([0.0, 0.5, 1.0, 2.0, 3.3], n)
        exact = ScoreDistributionState.from_arrays(ScoreDistributionLayout(100_000), s, y, w)
        small = ScoreDistributionState.from_arrays(ScoreDistributionLayout(int(rng.choice([2, 3, 5, 17]))), s, y, w)
        assert exact.is_exact
        compressed += not small.is_exact
        for m in metrics:
            # one score column: pos_label=0 metrics read the same distribution (their own state kind)
            e = m.compute({"score_distribution": exact, "score_distribution_class0": exact})
            c = m.compute({"score_distribution": small, "score_distribution_class0": small})
            assert not isinstance(e, Interval)
            if isinstance(c, Interval):
                assert c.lower <= e <= c.upper and c.lower <= c.value <= c.upper, (t, m.key, e, c)
                assert m.bounds[0] <= c.lower and c.upper <= m.bounds[1], (m.key, c)
            else:  # undefined or degenerate: the same value
                assert _same(c, e), (t, m.key, e, c)
    assert compressed > 500


def test_compressed_curves_are_points_of_the_exact_curve():
    rng = np.random.default_rng(9)
    n = 3000
    y, s = rng.integers(0, 2, n), rng.normal(size=n)
    exact, _ = compute(["roc_curve@drop_intermediate=false", "precision_recall_curve"], y, s)
    small, mc = compute(["roc_curve@drop_intermediate=false", "precision_recall_curve"], y, s, capacity=50)
    assert not mc.states[1].is_exact
    roc_e = {tuple(r[:2]) for r in exact["roc_curve@drop_intermediate=false"]}
    assert all(tuple(r[:2]) in roc_e for r in small["roc_curve@drop_intermediate=false"])
    pr_e = {tuple(r[:2]) for r in exact["precision_recall_curve"]}
    assert all(tuple(r[:2]) in pr_e for r in small["precision_recall_curve"])
    # thresholds are exact operating points: "score >= threshold" gives the reported rates
    for fpr, tpr, thr in small["roc_curve@drop_intermediate=false"][1:]:
        pred = s >= thr
        assert tpr == (pred & (y == 1)).sum() / (y == 1).sum() and fpr == (pred & (y == 0)).sum() / (y == 0).sum()


def test_compressed_auc_error_and_width_on_continuous_scores():
    rng = np.random.default_rng(10)
    n = 1_000_000
    y = rng.integers(0, 2, n)
    s = rng.normal(size=n) + y
    got, mc = compute(["roc_auc", "average_precision"], y, s)
    state = mc.states[1]
    assert not state.is_exact and len(state.encode()) < 1 << 20
    want_auc, want_ap = roc_auc_score(y, s), average_precision_score(y, s)
    a, p = got["roc_auc"], got["average_precision"]
    assert abs(a - want_auc) <= 1e-6 and abs(p - want_ap) <= 1e-5
    _, intervals = mc.plan.compute_with_bounds(mc.states)
    lo, hi = intervals["roc_auc"]
    assert lo <= want_auc <= hi and hi - lo < 1e-3
    lo, hi = intervals["average_precision"]
    assert lo <= want_ap <= hi and hi - lo < 1e-3


# -- merge order and split ----------------------------------------------------------------------
@settings(max_examples=40)
@given(
    rows=st.lists(st.tuples(st.integers(0, 1), st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0, 0.3, -2.0]), st.integers(0, 3)), max_size=50),
    capacity=st.sampled_from([3, 6, 1000]),
    seed=st.integers(0, 2**32 - 1),
)
def test_merge_order_and_split_never_change_values(rows, capacity, seed):
    rng = np.random.default_rng(seed)
    y = np.array([r[0] for r in rows], dtype=int)
    s = np.array([r[1] for r in rows], dtype=float) + rng.integers(0, 3, len(rows)) * 1e-6
    w = np.array([r[2] for r in rows], dtype=float)
    metrics = [f"{m}@capacity={capacity}" for m in SCALARS + CURVES]
    plan = Plan(metrics, Task())
    whole = plan.fold(plan.zero(), Batch(y_true=y, y_score=s, sample_weight=w))
    cuts = np.sort(rng.integers(0, len(rows) + 1, rng.integers(0, 6)))
    parts = [plan.fold(plan.zero(), Batch(y_true=y[i], y_score=s[i], sample_weight=w[i])) for i in np.split(np.arange(len(rows)), cuts)]
    items = parts + [plan.zero()]
    while len(items) > 1:
        i, j = sorted(rng.choice(len(items), 2, replace=False))
        a, b = items.pop(j), items.pop(i)
        items.append(plan.merge(a, b) if rng.random() < 0.5 else plan.merge(b, a))
    assert items[0] == whole
    v1, i1 = plan.compute_with_bounds(whole)
    v2, i2 = plan.compute_with_bounds(items[0])
    assert all(_same(v1[k], v2[k]) for k in v1) and i1 == i2


# -- registry, parameters, results ----------------------------------------------------------------
def test_metric_strings_aliases_and_metadata():
    task = Task()
    assert resolve("auc", task).key == "roc_auc" and resolve("auroc", task).name == "roc_auc"
    assert resolve("ap", task).key == "average_precision"
    assert resolve("precision_at_recall@0.8", task).key == "precision_at_recall@0.8"
    assert resolve("partial_auc@0.1", task).key == "partial_roc_auc@0.1"
    assert resolve("ks", task).name == "ks_statistic" and resolve("gini", task).bounds == (-1.0, 1.0)
    m = resolve("roc_auc", task)
    assert isinstance(m, RankingMetric) and m.sklearn == "sklearn.metrics.roc_auc_score"
    assert m.exact is False and "capacity" in m.exact_when
    plan = Plan(["roc_auc", "average_precision", "roc_curve", "ks"], task)
    assert [c.kind for c, _ in plan.state_types] == ["example_count", "score_distribution"]  # one shared state
    plan = Plan(["roc_auc@capacity=100", "average_precision@capacity=300"], task)
    assert plan.state_types[1][1] == ScoreDistributionLayout(300)
    states = plan.fold(plan.zero(), Batch(y_true=np.array([0, 1]), y_score=np.array([0.1, 0.9])))
    assert plan.metrics[0].is_exact({"score_distribution": states[1]})


@pytest.mark.parametrize(
    "text",
    [
        "roc_auc@max_fpr=0", "roc_auc@max_fpr=1.5", "roc_auc@capacity=1", "roc_auc@capacity=2.5", "roc_auc@pos_label=2",
        "partial_roc_auc", "precision_at_recall", "precision_at_recall@recall=1.2", "recall_at_precision@precision=x",
        "sensitivity_at_specificity", "specificity_at_sensitivity@-0.1", "roc_curve@drop_intermediate=maybe", "roc_auc@bogus=1",
    ],
)  # fmt: skip
def test_bad_parameters_raise(text):
    with pytest.raises(ValueError):
        resolve(text, Task())


@pytest.mark.parametrize("name", ["gini", "ks_statistic", "pr_auc_trapezoid", "precision_at_recall@0.5", "partial_roc_auc@0.1"])
def test_binary_only_ranking_metrics(name):
    with pytest.raises(ValueError, match="binary"):
        resolve(name, Task(num_classes=3))


@pytest.mark.parametrize("weighted", [False, True])
def test_multiclass_curves_are_sklearn_one_vs_rest_curves_per_class(weighted):
    rng = np.random.default_rng(11)
    n, k = 400, 4
    y = rng.integers(0, k - 1, n)  # class 3 is absent: NaN rates, as scikit-learn
    s = np.round(rng.dirichlet(np.ones(k), n), 2)  # ties
    w = rng.integers(0, 3, n).astype(float) if weighted else None
    mc = MetricCollection("roc_curve", "precision_recall_curve@drop_intermediate=true", num_classes=k)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mc.update(y, y_score=s, sample_weight=w)
        got = mc.compute()
    roc, pr = got["roc_curve"], got["precision_recall_curve@drop_intermediate=true"]
    assert roc.ndim == pr.ndim == 3 and roc.shape[0] == pr.shape[0] == k and roc.shape[2] == 3
    for c in range(k):
        rows = roc[c][~np.isnan(roc[c]).all(axis=1)]  # padding rows are NaN throughout
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fpr, tpr, thr = roc_curve(y == c, s[:, c], sample_weight=w)
            prec, rec, pthr = precision_recall_curve(y == c, s[:, c], sample_weight=w, drop_intermediate=True)
        np.testing.assert_allclose(rows[:, 0], fpr, rtol=1e-12)
        np.testing.assert_allclose(rows[:, 1], tpr, rtol=1e-12)
        np.testing.assert_allclose(rows[:, 2], thr, rtol=1e-12)
        assert np.isnan(roc[c][len(rows) :]).all()
        prow = pr[c][~np.isnan(pr[c]).all(axis=1)]
        np.testing.assert_allclose(prow[:, 0], prec, rtol=1e-12)
        np.testing.assert_allclose(prow[:, 1], rec, rtol=1e-12)
        np.testing.assert_allclose(prow[:-1, 2], pthr, rtol=1e-12)
    with pytest.raises(ValueError, match="pos_label applies to binary tasks only"):
        resolve("roc_curve@pos_label=0", Task(num_classes=3))


@pytest.mark.parametrize(
    "text,task",
    [
        ("roc_auc@multi_class=ovo", Task()), ("roc_auc@macro", Task()), ("roc_auc@max_fpr=0.5", Task(num_classes=3)),
        ("roc_auc@pos_label=0", Task(num_classes=3)), ("roc_auc@micro@multi_class=ovo", Task(num_classes=3)),
        ("roc_auc@none@multi_class=ovo", Task(num_classes=3)), ("roc_auc@multi_class=ovx", Task(num_classes=3)),
        ("roc_auc@samples", Task(num_classes=3)), ("average_precision@multi_class=ovo", Task(num_classes=3)),
    ],
)  # fmt: skip
def test_bad_multiclass_parameters_raise(text, task):
    with pytest.raises(ValueError):
        resolve(text, task)


def test_empty_and_degenerate_values():
    got, _ = compute(SCALARS + CURVES, [], [])
    for k in SCALARS:
        assert math.isnan(got[k]), k
    for k in CURVES:
        assert got[k].shape == (0, 3)
    got, _ = compute(["roc_auc", "average_precision", "precision_recall_curve"], [1], [0.3])
    assert math.isnan(got["roc_auc"]) and got["average_precision"] == 1.0
    np.testing.assert_array_equal(got["precision_recall_curve"], [[1.0, 1.0, 0.3], [1.0, 0.0, np.inf]])


def test_partial_auc_at_max_fpr_one_is_the_auc():
    rng = np.random.default_rng(11)
    y, s = rng.integers(0, 2, 300), rng.random(300)
    got, _ = compute(["roc_auc", "roc_auc@max_fpr=1", "partial_roc_auc@max_fpr=1@standardize=false"], y, s)
    assert got["roc_auc"] == got["roc_auc@max_fpr=1"] == got["partial_roc_auc@max_fpr=1@standardize=false"]


def test_intervals_reach_results_and_rows():
    rng = np.random.default_rng(12)
    n = 2000
    data = {"y": rng.integers(0, 2, n), "s": rng.random(n), "g": rng.choice(["a", "b"], n)}
    ev = Evaluation(label_col="y", score_col="s", slices=["g"], metrics=["roc_auc@capacity=20", "average_precision@capacity=20", "roc_curve@capacity=20"])
    res = ev.evaluate([data])
    ov = res.overall
    assert set(ov.bounds) == {"roc_auc@capacity=20", "average_precision@capacity=20"}
    lo, hi = ov.bounds["roc_auc@capacity=20"]
    assert lo <= roc_auc_score(data["y"], data["s"]) <= hi
    rows = [r for r in res.to_rows() if r["metric"] == "roc_auc@capacity=20"]
    assert len(rows) == 3 and all(r["lower"] is not None and r["lower"] <= r["value"] <= r["upper"] for r in rows)
    curve_rows = [r for r in res.to_rows() if r["metric"] == "roc_curve@capacity=20" and r["slice"] == "{}"]
    assert curve_rows and all(r["index"].count(",") == 1 for r in curve_rows)
    assert "bounds" in res.to_dict()["slices"][0]
    exact = Evaluation(label_col="y", score_col="s", metrics=["roc_auc"]).evaluate([data])
    assert exact.overall.bounds == {} and exact.overall.metrics["roc_auc"] == roc_auc_score(data["y"], data["s"])


def test_collection_repr_shows_the_state():
    mc = MetricCollection("roc_auc", "average_precision")
    mc.update([0, 1, 1], y_score=[0.1, 0.8, 0.4])
    text = repr(mc)
    assert "score_distribution" in text and "roc_auc" in text
