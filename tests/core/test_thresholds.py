"""Threshold choice (mergeable_metrics.metrics.thresholds) against a brute force over every distinct score (numpy
masks and scikit-learn's own metric functions, ``metric_at_thresholds``, ``roc_curve``), certified
bounds of compressed states, merge laws, parameters and degenerate cases."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import (
    balanced_accuracy_score,
    f1_score,
    fbeta_score,
    matthews_corrcoef,
    metric_at_thresholds,
    precision_score,
    roc_curve,
)

from mergeable_metrics import MetricCollection
from mergeable_metrics.engine import Plan
from mergeable_metrics.metrics import Task
from mergeable_metrics.inputs.validation import Batch
from mergeable_metrics.metrics.base import resolve
from tests._helpers import BINARY_GRID, PlanFolder, binary_case, fold_all, fold_sharded

pytestmark = pytest.mark.filterwarnings("ignore::mergeable_metrics.metrics.base.UndefinedMetricWarning", "ignore::sklearn.exceptions.UndefinedMetricWarning")

CRITERIA = ["f1", "fbeta@beta=2", "youden", "cost@cost_fp=1@cost_fn=4"]
THRESHOLD_METRICS = (
    [f"best_threshold@criterion={c}" for c in CRITERIA]
    + [f"best_threshold_score@criterion={c}" for c in CRITERIA]
    + ["threshold_at_recall@recall=0.8", "threshold_at_precision@precision=0.7"]
)


# -- the brute force ------------------------------------------------------------------------------
def _candidates(y, s, w):
    """Operating points in descending threshold order: inf, then every distinct score of a
    non-zero-weight row; (thresholds, tp, fp, P, N) by numpy masks."""
    keep = w != 0
    y, s, w = y[keep], s[keep], w[keep]
    thr = np.r_[np.inf, np.unique(s)[::-1]]
    pred = s[None, :] >= thr[:, None]
    tp = (pred * (y == 1) * w).sum(axis=1)
    fp = (pred * (y == 0) * w).sum(axis=1)
    return thr, tp, fp, float(w[y == 1].sum()), float(w[y == 0].sum()), (y, s, w)


def _first_best(values, thr, lower_is_better=False):
    """Highest threshold among the optimal values (to float rounding)."""
    v = -np.asarray(values) if lower_is_better else np.asarray(values)
    if np.all(np.isnan(v)):
        return math.nan, math.nan
    best = np.nanmax(v)
    i = int(np.flatnonzero(v >= best - 1e-12 * max(1, abs(best)))[0])
    return float(thr[i]), float(values[i])


def reference(y, s, w=None) -> dict:
    y, s = np.asarray(y), np.asarray(s, dtype=float)
    w = np.ones(len(y)) if w is None else np.asarray(w, dtype=float)
    ref = {}
    if w.sum() == 0 or len(y) == 0:
        return {m: math.nan for m in THRESHOLD_METRICS}
    thr, tp, fp, P, N, (yk, sk, wk) = _candidates(y, s, w)
    # F-scores with scikit-learn itself at every threshold (predict nothing: 0 with positives)
    for crit, beta in (("f1", 1.0), ("fbeta@beta=2", 2.0)):
        if P > 0:
            vals = [fbeta_score(yk, (sk >= t).astype(int), beta=beta, sample_weight=wk, zero_division=0.0) for t in thr]
            t, v = _first_best(vals, thr)
        else:
            t = v = math.nan
        ref[f"best_threshold@criterion={crit}"], ref[f"best_threshold_score@criterion={crit}"] = t, v
    # Youden's J on scikit-learn's ROC curve (every threshold, inf first)
    if P > 0 and N > 0:
        fpr, tpr, rthr = roc_curve(yk, sk, sample_weight=wk, drop_intermediate=False)
        t, v = _first_best(tpr - fpr, rthr)
    else:
        t = v = math.nan
    ref["best_threshold@criterion=youden"], ref["best_threshold_score@criterion=youden"] = t, v
    # cost: total cost minimised, reported as the mean cost per unit weight
    cost = 1 * fp + 4 * (P - tp)
    t, v = _first_best(cost, thr, lower_is_better=True)
    ref["best_threshold@criterion=cost@cost_fp=1@cost_fn=4"] = t
    ref["best_threshold_score@criterion=cost@cost_fp=1@cost_fn=4"] = v / (P + N)
    # targets (operating points with at least one prediction)
    if P > 0:
        prec = np.where(tp + fp > 0, tp / np.where(tp + fp > 0, tp + fp, 1), np.nan)[1:]
        rec = (tp / P)[1:]
        t1 = thr[1:]
        ok = rec >= 0.8
        ref["threshold_at_recall@recall=0.8"] = _first_best(np.where(ok, prec, -np.inf), t1)[0]
        ok = prec >= 0.7
        ref["threshold_at_precision@precision=0.7"] = _first_best(np.where(ok, rec, -np.inf), t1)[0] if ok.any() else math.inf
    else:
        ref["threshold_at_recall@recall=0.8"] = ref["threshold_at_precision@precision=0.7"] = math.nan
    return ref


def compute(metrics, y, s, w=None, capacity=None, batches=1):
    """Values and bounds keyed by the requested strings."""
    metrics = list(metrics)
    asked = [m if capacity is None else f"{m}@capacity={capacity}" for m in metrics]
    plan = Plan(asked, Task())
    states = plan.zero()
    n = len(y)
    for part in np.array_split(np.arange(n), batches) if n else [np.arange(0)]:
        batch = Batch(y_true=np.asarray(y, dtype=np.int64)[part], y_score=np.asarray(s, dtype=float)[part],
                      sample_weight=None if w is None else np.asarray(w, dtype=float)[part])  # fmt: skip
        states = plan.merge(states, plan.fold(plan.zero(), batch))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        values, bounds = plan.compute_with_bounds(states)
    keys = [m.key for m in plan.metrics]
    return {req: values[k] for req, k in zip(metrics, keys)}, {req: bounds.get(k) for req, k in zip(metrics, keys)}


def _same(a, b) -> bool:
    a, b = np.asarray(a, float), np.asarray(b, float)
    return a.shape == b.shape and bool(np.all((a == b) | (np.isnan(a) & np.isnan(b))))


def _close(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float) and (math.isinf(a) or math.isinf(b) or math.isnan(a) or math.isnan(b)):
        return a == b or (math.isnan(a) and math.isnan(b))
    return abs(a - b) <= 1e-12 * max(1.0, abs(a), abs(b))


# -- parity ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("name,weighted", BINARY_GRID, ids=lambda p: str(p))
def test_brute_force_parity_on_the_case_grid(name, weighted):
    c = binary_case(name, weighted)
    got, bounds = compute(THRESHOLD_METRICS, c.y_true, c.y_score, c.sample_weight, batches=3)
    want = reference(c.y_true, c.y_score, c.sample_weight)
    for m in THRESHOLD_METRICS:
        assert _close(float(got[m]), float(want[m])), (m, got[m], want[m])
        assert bounds[m] is None, m  # exact states: no interval


@pytest.mark.parametrize("seed", range(6))
def test_brute_force_parity_random_data(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 400))
    y = rng.integers(0, 2, n)
    s = np.round(rng.random(n) * 0.6 + 0.4 * y * rng.random(), int(rng.integers(1, 4)))  # ties
    w = rng.integers(0, 4, n).astype(float) if seed % 2 else None
    got, _ = compute(THRESHOLD_METRICS, y, s, w, batches=4)
    want = reference(y, s, w)
    for m in THRESHOLD_METRICS:
        assert _close(float(got[m]), float(want[m])), (m, got[m], want[m])


def test_hand_computed_case():
    # scores 0.9 (1), 0.8 (0), 0.7 (1), 0.4 (1), 0.2 (0): at t=0.4 tp=3 fp=1 -> F1 = 6/7, best;
    # Youden: t=0.9 -> 1/3, t=0.7 -> 2/3 - 1/2, t=0.4 -> 1 - 1/2 = 1/2 (best);
    # cost fp=1 fn=4: inf -> 12, 0.9 -> 8, 0.8 -> 9, 0.7 -> 5, 0.4 -> 1 (best), 0.2 -> 2
    y, s = [1, 0, 1, 1, 0], [0.9, 0.8, 0.7, 0.4, 0.2]
    got, _ = compute(THRESHOLD_METRICS + ["metric_at_thresholds@metric=f1@thresholds=0.85|0.3"], y, s)
    assert got["best_threshold@criterion=f1"] == 0.4 and got["best_threshold_score@criterion=f1"] == 6 / 7
    assert got["best_threshold@criterion=youden"] == 0.4 and got["best_threshold_score@criterion=youden"] == 0.5
    assert got["best_threshold@criterion=cost@cost_fp=1@cost_fn=4"] == 0.4
    assert got["best_threshold_score@criterion=cost@cost_fp=1@cost_fn=4"] == 1 / 5
    # recall >= 0.8 needs t <= 0.4: precision 3/4 at 0.4, 3/5 at 0.2
    assert got["threshold_at_recall@recall=0.8"] == 0.4
    # precision >= 0.7: t=0.9 (1.0, recall 1/3), t=0.4 (3/4, recall 1): the best recall is at 0.4
    assert got["threshold_at_precision@precision=0.7"] == 0.4
    # F1 at 0.85: tp=1 fp=0 fn=2 -> 2/4; at 0.3: tp=3 fp=1 -> 6/7
    np.testing.assert_array_equal(got["metric_at_thresholds@metric=f1@thresholds=0.85|0.3"], [[0.85, 0.5, 0.5, 0.5], [0.3, 6 / 7, 6 / 7, 6 / 7]])
    got, _ = compute(["threshold_at_precision@precision=1", "threshold_at_recall@recall=0"], [0, 1], [0.9, 0.1])
    assert got["threshold_at_precision@precision=1"] == math.inf  # no threshold reaches precision 1
    assert got["threshold_at_recall@recall=0"] == 0.1  # precision 1/2 at 0.1 beats 0 at 0.9


@pytest.mark.parametrize("weighted", [False, True])
def test_metric_at_thresholds_matches_sklearn(weighted):
    rng = np.random.default_rng(3)
    n = 300
    y = rng.integers(0, 2, n)
    s = np.round(rng.random(n) * 0.7 + 0.3 * y, 2)
    w = rng.integers(0, 4, n).astype(float) if weighted else None
    funcs = {
        "f1": (f1_score, {}),
        "precision@zero_division=0": (precision_score, {"zero_division": 0.0}),
        "balanced_accuracy": (balanced_accuracy_score, {}),
        "mcc@zero_division=0": (matthews_corrcoef, {}),
        "fbeta@beta=2": (fbeta_score, {"beta": 2.0}),
    }
    metrics = [f"metric_at_thresholds@metric={name.split('@')[0]}" + "".join("@" + p for p in name.split("@")[1:]) for name in funcs]
    got, bounds = compute(metrics, y, s, w, batches=3)
    keep = np.ones(n, bool) if w is None else w != 0  # scikit-learn's thresholds include zero-weight rows' scores
    for (fn, kw), m in zip(funcs.values(), metrics):
        values, thr = metric_at_thresholds(y[keep], s[keep], fn, sample_weight=None if w is None else w[keep], metric_params=kw)
        arr = got[m]
        assert arr.shape == (thr.shape[0], 4), m
        np.testing.assert_array_equal(arr[:, 0], thr)
        np.testing.assert_allclose(arr[:, 1], values, rtol=1e-12, atol=1e-15, err_msg=m)
        np.testing.assert_array_equal(arr[:, 2], arr[:, 1])
        np.testing.assert_array_equal(arr[:, 3], arr[:, 1])
        assert bounds[m] is None
    # explicit thresholds, in the order given, between and at scores
    t = [0.5, 0.1, 0.95, 0.305, -1.0, 2.0]
    got, _ = compute(["metric_at_thresholds@metric=f1@thresholds=" + "|".join(map(str, t))], y, s, w)
    arr = next(iter(got.values()))
    want = [f1_score(y, (s >= x).astype(int), sample_weight=w, zero_division=0.0) for x in t]
    np.testing.assert_array_equal(arr[:, 0], t)
    np.testing.assert_allclose(arr[:, 1], want, rtol=1e-12)


# -- compressed states: certified bounds ----------------------------------------------------------
def test_bounds_contain_the_exact_values_over_many_random_datasets():
    rng = np.random.default_rng(17)
    explicit = "metric_at_thresholds@metric={}@thresholds=0.2|0.37|0.5|0.61|0.9"
    inner = ["f1", "precision", "accuracy", "mcc", "balanced_accuracy"]
    metrics = THRESHOLD_METRICS + [explicit.format(m) for m in inner] + ["metric_at_thresholds@metric=f1"]
    widths = 0
    for trial in range(40):
        n = int(rng.integers(20, 400))
        y = rng.integers(0, 2, n)
        s = np.clip(rng.normal(0.5 + 0.2 * (y - 0.5) * rng.random(), 0.2, n), 0, 1)
        w = rng.integers(0, 3, n).astype(float) if trial % 2 else None
        exact, _ = compute(metrics, y, s, w)
        approx, bounds = compute(metrics, y, s, w, capacity=int(rng.choice([4, 8, 16])))
        for m in THRESHOLD_METRICS:
            e, v, b = float(exact[m]), float(approx[m]), bounds[m]
            if b is None:
                assert _close(v, e) or (math.isnan(e) and math.isnan(v)), (m, v, e)
                continue
            lo, hi = b
            assert lo <= e <= hi and lo <= v <= hi, (trial, m, e, v, b)
            widths += hi > lo
        for name in inner:
            m = explicit.format(name)
            ex, ap = exact[m], approx[m]
            np.testing.assert_array_equal(ex[:, 0], ap[:, 0])
            ok = np.isnan(ex[:, 1]) | ((ap[:, 2] - 1e-12 <= ex[:, 1]) & (ex[:, 1] <= ap[:, 3] + 1e-12))
            assert ok.all(), (trial, m, ex, ap)
            assert np.all((ap[:, 2] <= ap[:, 1]) & (ap[:, 1] <= ap[:, 3]) | np.isnan(ap[:, 1]))
        # the default thresholds of a compressed state are exact points of the exact curve
        ex, ap = exact["metric_at_thresholds@metric=f1"], approx["metric_at_thresholds@metric=f1"]
        rows = {t: v for t, v in ex[:, :2]}
        for t, v, lo, hi in ap:
            if t in rows:
                assert _close(v, rows[t]) and lo == hi == v
    assert widths > 20  # the bounds are not all trivial


# -- merge laws -----------------------------------------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(
    rows=st.lists(st.tuples(st.integers(0, 1), st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0, 0.3, -2.0]), st.integers(0, 3)), max_size=50),
    capacity=st.sampled_from([3, 6, 1000]),
    seed=st.integers(0, 2**32 - 1),
)
def test_merge_order_and_split_never_change_values(rows, capacity, seed):
    rng = np.random.default_rng(seed)
    data = {
        "y_true": np.array([r[0] for r in rows], dtype=np.int64),
        "y_score": np.array([r[1] for r in rows], dtype=float) + rng.integers(0, 3, len(rows)) * 1e-6,
        "sample_weight": np.array([r[2] for r in rows], dtype=float),
    }
    metrics = [f"{m}@capacity={capacity}" for m in THRESHOLD_METRICS + ["metric_at_thresholds@metric=f1", "metric_at_thresholds@metric=mcc@thresholds=0.3|0.5"]]
    plan = Plan(metrics, Task())
    folder = PlanFolder(plan)
    whole, sharded = fold_all(folder, data), fold_sharded(folder, data, rng)  # random shards (empty ones too), random merge tree
    assert sharded == whole
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        v1, i1 = plan.compute_with_bounds(whole)
        v2, i2 = plan.compute_with_bounds(sharded)
    assert all(_same(v1[k], v2[k]) for k in v1) and i1 == i2


# -- parameters, registry, degenerate cases --------------------------------------------------------
def test_metric_strings_and_keys():
    task = Task()
    assert resolve("best_threshold@criterion=youden", task).key == "best_threshold@youden"
    assert resolve("best_threshold", task).key == "best_threshold@f1"
    assert resolve("optimal_threshold@cost@cost_fn=3", task).key == "best_threshold@cost@cost_fn=3"
    assert resolve("threshold_at_recall@0.9", task).key == "threshold_at_recall@0.9"
    assert resolve("metric_at_thresholds@metric=mcc@thresholds=0.3|0.5", task).p["thresholds"] == (0.3, 0.5)
    # metrics of one plan share one score distribution with roc_auc
    plan = Plan(["roc_auc", "best_threshold", "metric_at_thresholds@metric=f1", "threshold_at_recall@0.5"], task)
    assert [type(s).kind for s in plan.zero()].count("score_distribution") == 1


@pytest.mark.parametrize(
    "text",
    [
        "best_threshold@criterion=auc",
        "best_threshold@criterion=f1@beta=2",
        "best_threshold@criterion=cost@cost_fp=-1",
        "best_threshold@criterion=cost@cost_fp=0@cost_fn=0",
        "best_threshold@criterion=youden@cost_fn=2",
        "best_threshold@criterion=fbeta@beta=nan",
        "threshold_at_recall",
        "threshold_at_recall@recall=1.5",
        "threshold_at_precision@precision=abc",
        "metric_at_thresholds@metric=roc_auc",
        "metric_at_thresholds@metric=confusion_matrix",
        "metric_at_thresholds@metric=nosuch",
        "metric_at_thresholds@metric=f1@thresholds=0.1|x",
        "metric_at_thresholds@metric=f1@thresholds=inf",
    ],
)
def test_bad_parameters_raise(text):
    with pytest.raises(ValueError, match="metric '"):
        resolve(text, Task())


def test_binary_only_and_threshold_rule():
    with pytest.raises(ValueError):
        resolve("best_threshold", Task(num_classes=3))
    # thresholds are for predictions score >= t (scikit-learn's), also under threshold_rule=">"
    plan = Plan(["metric_at_thresholds@metric=tp@thresholds=0.5", "best_threshold"], Task(threshold_rule=">"))
    states = plan.fold(plan.zero(), Batch(y_true=np.array([1, 1, 0]), y_score=np.array([0.5, 0.9, 0.2])))
    values = plan.compute(states)
    assert values["metric_at_thresholds@tp@thresholds=0.5"][0, 1] == 2.0 and values["best_threshold@f1"] == 0.5


def test_empty_one_class_and_undefined_values():
    metrics = THRESHOLD_METRICS + ["metric_at_thresholds@metric=f1"]
    got, _ = compute(metrics, [], [])
    assert all(math.isnan(got[m]) for m in THRESHOLD_METRICS) and got["metric_at_thresholds@metric=f1"].shape == (0, 4)
    got, _ = compute(metrics, [0, 0, 0], [0.2, 0.5, 0.9])  # no positives
    assert math.isnan(got["best_threshold@criterion=f1"]) and math.isnan(got["best_threshold@criterion=youden"])
    assert got["best_threshold@criterion=cost@cost_fp=1@cost_fn=4"] == math.inf  # predict nothing: no cost
    assert got["best_threshold_score@criterion=cost@cost_fp=1@cost_fn=4"] == 0.0
    mc = MetricCollection("best_threshold@youden", "best_threshold@f1")
    mc.update([0, 0], y_score=[0.1, 0.2])
    with pytest.warns(UserWarning, match="best_threshold@youden"):
        mc.compute()


def test_results_carry_bounds():
    from mergeable_metrics import Evaluation

    rng = np.random.default_rng(2)
    y, s = rng.integers(0, 2, 500), rng.random(500)
    ev = Evaluation(label_col="y", score_col="p", metrics=["best_threshold@capacity=8", "best_threshold_score@capacity=8"])
    res = ev.evaluate([{"y": y, "p": s}])
    exact, _ = compute(["best_threshold", "best_threshold_score"], y, s)
    lo, hi = res.overall.bounds["best_threshold@f1@capacity=8"]
    assert lo <= exact["best_threshold"] <= hi
    lo, hi = res.overall.bounds["best_threshold_score@f1@capacity=8"]
    assert lo <= exact["best_threshold_score"] <= hi


# -- issue 28 item 16: criteria compared exactly on the counts, ties to the highest threshold ----
def _best(criterion_params, y, s, w=None):
    mc = MetricCollection(f"best_threshold@{criterion_params}", f"best_threshold_score@{criterion_params}")
    mc.update(y, y_score=s, sample_weight=w)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return tuple(mc.compute().values())


@pytest.mark.parametrize(
    "params, y, s, threshold, score",
    [
        # youden (the case): P = N = 3; J = tp/3 - fp/3 is 1/3 at 1.0 (1, 0), 0.6 (2, 1)
        # and 0.2 (3, 2), 0 at inf and 0; the highest of the three ties (floats: 0.333..37 at 0.2)
        ("criterion=youden", [1, 1, 0, 0, 1, 0], [1, 0.6, 0.6, 0.2, 0.2, 0], 1.0, 1 / 3),
        # f1: P = 2; F1 = 2 tp / (2 + tp + fp) is 2/3 at 0.9 (1, 0) and at 0.5 (2, 2)
        ("criterion=f1", [1, 0, 0, 1], [0.9, 0.5, 0.5, 0.5], 0.9, 2 / 3),
        # fbeta, beta 0.5: P = 4; 1.25 tp / (1 + tp + fp) is 0.625 at 0.9 (1, 0) and 0.6 (2, 1),
        # 5/9 at 0.1 (4, 4)
        ("criterion=fbeta@beta=0.5", [1, 1, 0, 1, 1, 0, 0, 0], [0.9, 0.6, 0.6, 0.1, 0.1, 0.1, 0.1, 0.1], 0.9, 0.625),
        # cost 1/1: errors fp + fn are 2 at inf (0, 2 fn), 2 at 0.8 (1 fp, 1 fn), 2 at 0.3 (2 fp, 0)
        ("criterion=cost", [1, 0, 0, 1], [0.8, 0.8, 0.3, 0.3], math.inf, 2 / 4),
        # cost 0.1/0.1: 0.1 (fp + fn) with 6 errors at inf (6 fn), 0.9 (1 fp, 5 fn) and 0.1 (6 fp);
        # the floats 0.1*6 = 0.6000000000000001 but 0.1 + 0.5 = 0.6 made 0.9 win; mean cost 0.6/12
        ("criterion=cost@cost_fp=0.1@cost_fn=0.1", [1, 0, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0], [0.9, 0.9] + [0.1] * 10, math.inf, 0.05),
    ],
    ids=["youden", "f1", "fbeta", "cost", "cost_fractional"],
)
def test_best_threshold_exact_ties_go_to_the_highest_threshold(params, y, s, threshold, score):
    t, v = _best(params, y, s)
    assert t == threshold
    assert v == score  # the exact value, correctly rounded


def test_best_threshold_tie_values_against_scikit_learn():
    """The hand-computed tie values above, by scikit-learn at each tied threshold."""
    y, s = np.array([1, 0, 0, 1]), np.array([0.9, 0.5, 0.5, 0.5])
    assert f1_score(y, s >= 0.9) == pytest.approx(2 / 3) and f1_score(y, s >= 0.5) == pytest.approx(2 / 3)
    y, s = np.array([1, 1, 0, 1, 1, 0, 0, 0]), np.array([0.9, 0.6, 0.6, 0.1, 0.1, 0.1, 0.1, 0.1])
    assert fbeta_score(y, s >= 0.9, beta=0.5) == pytest.approx(0.625) == fbeta_score(y, s >= 0.6, beta=0.5)
    fpr, tpr, thr = roc_curve([1, 1, 0, 0, 1, 0], [1, 0.6, 0.6, 0.2, 0.2, 0])
    assert np.allclose((tpr - fpr)[np.isin(thr, [1.0, 0.6, 0.2])], 1 / 3)


def _exact_best(y, s, w, criterion, beta=1.0, cost_fp=1.0, cost_fn=1.0):
    """Brute force in rationals: each score's positive and negative weights as the state holds
    them (their exact sum, correctly rounded), every operating point, the first (highest) best."""
    from fractions import Fraction as F

    def held(ws):
        return F(float(sum((F(x) for x in ws), F(0))))

    ths = sorted(set(s), reverse=True)
    pos = [held(x for x, a, b in zip(w, y, s) if a == 1 and b == t) for t in ths]
    neg = [held(x for x, a, b in zip(w, y, s) if a == 0 and b == t) for t in ths]
    P, N = sum(pos, F(0)), sum(neg, F(0))
    best = None
    for k, t in enumerate([math.inf, *ths]):
        tp, fp = sum(pos[:k], F(0)), sum(neg[:k], F(0))
        if criterion in ("f1", "fbeta"):
            b2 = F(beta) ** 2
            if b2 * P + tp + fp == 0:
                continue
            v = (1 + b2) * tp / (b2 * P + tp + fp)
        elif criterion == "youden":
            v = tp / P - fp / N
        else:
            v = -(F(cost_fp) * fp + F(cost_fn) * (P - tp))
        if best is None or v > best[0]:
            best = (v, t)
    return best[1], (-best[0] / (P + N) if criterion == "cost" else best[0])


@pytest.mark.parametrize(
    "criterion, kw",
    [("f1", {}), ("fbeta", {"beta": 0.5}), ("fbeta", {"beta": 0.1}), ("youden", {}), ("cost", {}), ("cost", {"cost_fp": 0.1, "cost_fn": 0.3})],
)
def test_best_threshold_equals_an_exact_rational_brute_force(criterion, kw):
    rng = np.random.default_rng(28)
    params = f"criterion={criterion}" + "".join(f"@{k}={v}" for k, v in kw.items())
    for trial in range(80):
        n = int(rng.integers(3, 12))
        y = rng.integers(0, 2, n)
        y[:2] = [0, 1]
        s = rng.integers(0, 5, n) / 4  # few distinct scores: many exact ties
        w = rng.choice([0.1, 0.2, 0.3, 0.7, 1.0], n) if trial % 2 else np.ones(n)
        t, v = _best(params, y.tolist(), s.tolist(), w.tolist())
        want_t, want_v = _exact_best(y.tolist(), s.tolist(), w.tolist(), criterion, **kw)
        assert (t, v) == (want_t, float(want_v)), (y.tolist(), s.tolist(), w.tolist())
