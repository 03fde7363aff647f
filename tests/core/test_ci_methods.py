"""ci="analytic" and ci="posterior" (issue 13): values against independent references.

References: scipy's Wilson interval (``binomtest(...).proportion_ci``), scipy's normal quantile,
DeLong's placements computed pair by pair from the raw scores, the normal interval of a mean from
numpy, and the Beta quantiles of the marginal posterior of accuracy.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from mergeable_metrics import Evaluation
from mergeable_metrics.uncertainty.intervals import delong_variance, normal_quantile, sample_interval

stats = pytest.importorskip("scipy.stats")


def _binary(n=600, seed=3):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    s = np.round(np.clip(0.3 * y + 0.7 * rng.random(n), 0, 1), 2)  # rounded: many tied scores
    g = rng.choice(np.array(["a", "b", "c"]), n)
    return {"y": y, "s": s, "g": g}


@pytest.mark.parametrize("p", [1e-10, 0.001, 0.02425, 0.2, 0.5, 0.8, 0.975, 0.999, 1 - 1e-10])
def test_normal_quantile_is_scipys(p):
    assert normal_quantile(p) == pytest.approx(stats.norm.ppf(p), rel=1e-13, abs=1e-13)


def test_analytic_proportions_are_scipys_wilson_intervals_per_slice():
    d = _binary()
    metrics = ["accuracy", "precision", "recall", "specificity", "npv", "fpr", "fnr", "prevalence"]
    r = Evaluation(label_col="y", score_col="s", slices=["g"], metrics=metrics, ci="analytic", ci_level=0.9).evaluate([d])
    for s in r:
        m = np.ones(len(d["y"]), bool) if not s.slice else d["g"] == s.slice[0][1]
        y, p = d["y"][m], (d["s"][m] >= 0.5).astype(int)
        tp, fp, tn, fn = [int(np.sum((y == a) & (p == b))) for a, b in ((1, 1), (0, 1), (0, 0), (1, 0))]
        ref = {"accuracy": (tp + tn, len(y)), "precision": (tp, tp + fp), "recall": (tp, tp + fn), "specificity": (tn, tn + fp),
               "npv": (tn, tn + fn), "fpr": (fp, fp + tn), "fnr": (fn, fn + tp), "prevalence": (tp + fn, len(y))}  # fmt: skip
        for k, (num, den) in ref.items():
            ci = stats.binomtest(num, den).proportion_ci(confidence_level=0.9, method="wilson")
            assert s.ci[k] == pytest.approx((ci.low, ci.high), rel=1e-12), (s.name, k)
    assert r.config["ci"] == {"method": "analytic", "level": 0.9, "replicates": 200, "seed": 0, "unsupported": []}


def test_analytic_per_class_arrays_and_micro_multiclass():
    rng = np.random.default_rng(1)
    y, p = rng.integers(0, 3, 500), rng.integers(0, 3, 500)
    p[y == 2] = 2  # class 2 always recalled: recall 1, Wilson's upper end 1
    r = Evaluation(label_col="y", prediction_col="p", num_classes=3, metrics=["recall@none", "precision@micro", "f1@macro"], ci="analytic").evaluate(
        [{"y": y, "p": p}]
    )
    lo, hi = r.overall.ci["recall@none"]
    for c in range(3):
        ci = stats.binomtest(int(np.sum((y == c) & (p == c))), int(np.sum(y == c))).proportion_ci(method="wilson")
        assert (lo[c], hi[c]) == pytest.approx((ci.low, ci.high), rel=1e-12)
    ci = stats.binomtest(int(np.sum(y == p)), len(y)).proportion_ci(method="wilson")
    assert r.overall.ci["precision@micro"] == pytest.approx((ci.low, ci.high), rel=1e-12)
    assert "f1@macro" not in r.overall.ci and r.config["ci"]["unsupported"] == ["f1@macro"]


def _delong_by_pairs(y, s):
    """DeLong's placements from every (positive, negative) pair: the textbook O(P N) definition."""
    pos, neg = s[y == 1], s[y == 0]
    psi = (pos[:, None] > neg[None, :]) + 0.5 * (pos[:, None] == neg[None, :])
    v10, v01 = psi.mean(axis=1), psi.mean(axis=0)
    auc = psi.mean()
    return auc, v10.var(ddof=1) / len(pos) + v01.var(ddof=1) / len(neg)


def test_delong_variance_from_the_score_distribution_equals_the_pairwise_definition():
    d = _binary(800)
    keys, inv = np.unique(d["s"], return_inverse=True)
    pos = np.bincount(inv, weights=d["y"], minlength=keys.size)
    neg = np.bincount(inv, weights=1 - d["y"], minlength=keys.size)
    auc, var = delong_variance(pos, neg)
    want_auc, want_var = _delong_by_pairs(d["y"], d["s"])
    assert auc == pytest.approx(want_auc, rel=1e-12) and var == pytest.approx(want_var, rel=1e-10)


def test_analytic_roc_auc_is_the_logit_delong_interval():
    from sklearn.metrics import roc_auc_score

    d = _binary(800)
    r = Evaluation(label_col="y", score_col="s", metrics=["roc_auc"], ci="analytic").evaluate([d])
    auc, var = _delong_by_pairs(d["y"], d["s"])
    assert r.overall.metrics["roc_auc"] == pytest.approx(roc_auc_score(d["y"], d["s"]), rel=1e-12)
    z, lg = stats.norm.ppf(0.975), math.log(auc / (1 - auc))
    half = z * math.sqrt(var) / (auc * (1 - auc))
    assert r.overall.ci["roc_auc"] == pytest.approx((1 / (1 + math.exp(half - lg)), 1 / (1 + math.exp(-lg - half))), rel=1e-10)
    r = Evaluation(label_col="y", score_col="s", metrics=["roc_auc@capacity=8"], ci="analytic").evaluate([d])
    lo, hi = r.overall.ci["roc_auc@capacity=8"]  # a compressed state: bins count as ties, still an interval
    assert 0 < lo < r.overall.metrics["roc_auc@capacity=8"] < hi < 1 and "roc_auc@capacity=8" in r.overall.bounds


def test_analytic_means_of_regression_errors():
    rng = np.random.default_rng(2)
    y = rng.normal(size=300)
    p = y + rng.normal(0.2, 1.0, 300)
    r = Evaluation(label_col="y", prediction_col="p", task="regression", metrics=["mae", "mean_error", "mse", "r2"], ci="analytic").evaluate([{"y": y, "p": p}])
    z = stats.norm.ppf(0.975)
    for k, e in (("mae", np.abs(p - y)), ("mean_error", p - y)):
        half = z * e.std(ddof=1) / math.sqrt(e.size)
        assert r.overall.ci[k] == pytest.approx((e.mean() - half, e.mean() + half), rel=1e-10)
    assert r.config["ci"]["unsupported"] == ["mse", "r2"] and set(r.overall.ci) == {"mae", "mean_error"}


def test_integer_weights_are_frequency_weights():
    """analytic and posterior read a row of weight k as k examples: the same intervals as the
    rows repeated k times."""
    d = _binary(300)
    w = np.random.default_rng(4).integers(0, 4, 300).astype(float)
    rep = {k: np.repeat(v, w.astype(int)) for k, v in d.items()}
    for ci in ("analytic", "posterior"):
        kw = dict(label_col="y", score_col="s", slices=["g"], metrics=["accuracy", "recall", "f1", "mcc", "roc_auc"], ci=ci)
        weighted = Evaluation(weight_col="w", **kw).evaluate([{**d, "w": w}])
        repeated = Evaluation(**kw).evaluate([rep])
        for a, b in zip(weighted, repeated):
            assert set(a.ci) == set(b.ci) and a.ci
            for k in a.ci:
                assert a.ci[k] == pytest.approx(b.ci[k], rel=1e-12), (ci, a.name, k)


def test_empty_slices_get_undefined_intervals():
    ev = Evaluation(label_col="y", score_col="s", metrics=["accuracy", "roc_auc", "f1"], ci="analytic")
    r = ev.finish(ev.zero())
    assert all(math.isnan(x) for x in r.overall.ci["accuracy"] + r.overall.ci["roc_auc"])
    ev = Evaluation(label_col="y", score_col="s", metrics=["accuracy", "f1"], ci="posterior")
    assert all(math.isnan(x) for v in ev.finish(ev.zero()).overall.ci.values() for x in v)


# -- posterior --------------------------------------------------------------------------------
@pytest.mark.parametrize("prior", [0, 0.5, 1])
def test_posterior_accuracy_matches_the_beta_marginal(prior):
    """The marginal posterior of accuracy under Dirichlet(counts + prior) over the 4 cells is
    Beta(correct + 2 prior, wrong + 2 prior): with many samples the interval is its quantiles."""
    d = _binary(400)
    r = Evaluation(label_col="y", score_col="s", metrics=["accuracy"], ci="posterior", ci_prior=prior, ci_replicates=20000).evaluate([d])
    correct = int(np.sum((d["s"] >= 0.5) == (d["y"] == 1)))
    beta = stats.beta(correct + 2 * prior, 400 - correct + 2 * prior)
    assert r.overall.ci["accuracy"] == pytest.approx((beta.ppf(0.025), beta.ppf(0.975)), abs=0.004)
    assert r.config["ci"]["prior"] == prior


@pytest.mark.parametrize("interval", ["equal_tailed", "hdi"])
def test_posterior_interval_holds_a_point_at_the_edge(interval):
    """Brown, Cai & DasGupta's boundary rule for the Jeffreys interval: with every positive
    prediction right (precision 1.0, 30 of 30) the upper limit is 1 and the lower one is the
    Beta(30 + 0.5, 0 + 0.5) quantile; with none right (0 of 10) the lower limit is 0. Interior
    values keep the sampled quantiles."""
    y = np.r_[np.ones(30), np.zeros(20), np.ones(5), np.zeros(10)].astype(int)
    s = np.r_[np.full(30, 0.9), np.full(20, 0.1), np.full(5, 0.1), np.full(10, 0.9)]
    g = np.r_[np.full(50, "a"), np.full(15, "b")]
    r = Evaluation(label_col="y", score_col="s", slices=["g"], metrics=["precision", "accuracy"], ci="posterior",
                   ci_prior=0.5, ci_replicates=20000, ci_interval=interval).evaluate([{"y": y, "s": s, "g": g}])  # fmt: skip
    a, b = r[(("g", "a"),)], r[(("g", "b"),)]
    assert a.metrics["precision"] == 1.0 and a.ci["precision"][1] == 1.0
    ref = stats.beta(30.5, 0.5)
    want_lo = ref.ppf(0.05) if interval == "hdi" else ref.ppf(0.025)  # the HDI of a J-shaped Beta is one-sided
    assert a.ci["precision"][0] == pytest.approx(want_lo, abs=0.01)
    assert b.metrics["precision"] == 0.0 and b.ci["precision"][0] == 0.0 and b.ci["precision"][1] > 0.0
    lo, hi = r.overall.ci["accuracy"]  # 50 of 65 right: inside, both sampled
    assert 0.0 < lo < 50 / 65 < hi < 1.0


def test_posterior_hdi_is_the_shortest_interval():
    x = np.random.default_rng(0).gamma(2.0, size=(5000, 1))
    lo_e, hi_e = sample_interval(x, 0.9)
    lo_h, hi_h = sample_interval(x, 0.9, "hdi")
    assert hi_h - lo_h < hi_e - lo_e and lo_h < lo_e
    assert np.mean((x >= lo_h) & (x <= hi_h)) >= 0.9
    g = stats.gamma(2.0)  # the HDI of a Gamma(2): equal densities at both ends
    assert g.pdf(lo_h[0]) == pytest.approx(g.pdf(hi_h[0]), rel=0.15)
    d = _binary(400)
    r = Evaluation(label_col="y", score_col="s", metrics=["f1"], ci="posterior", ci_interval="hdi").evaluate([d])
    assert r.config["ci"]["interval"] == "hdi" and r.overall.ci["f1"][0] < r.overall.metrics["f1"] < r.overall.ci["f1"][1]


def test_posterior_covers_every_confusion_metric_and_lists_the_others():
    d = _binary(500)
    metrics = ["accuracy", "f1", "f1@macro", "precision@weighted", "mcc", "cohen_kappa", "balanced_accuracy", "tp", "confusion_matrix",
               "precision@threshold=0.7", "roc_auc", "brier_score", "example_count"]  # fmt: skip
    r = Evaluation(label_col="y", score_col="s", slices=["g"], metrics=metrics, ci="posterior").evaluate([d])
    assert r.config["ci"]["unsupported"] == ["roc_auc", "brier_score", "example_count"]
    for s in r:
        assert set(s.ci) == set(metrics) - {"roc_auc", "brier_score", "example_count"}
        for k, (lo, hi) in s.ci.items():
            v = np.asarray(s.metrics[k])
            assert np.all(np.asarray(lo) <= np.asarray(hi)) and np.all(np.asarray(lo) <= v + 0.05 * np.abs(v) + 1e-9), (s.name, k)
    lo, hi = r.overall.ci["confusion_matrix"]
    assert lo.shape == hi.shape == (2, 2)


def test_posterior_draws_depend_on_seed_and_slice_only():
    d = _binary(500)
    kw = dict(label_col="y", score_col="s", slices=["g"], metrics=["accuracy", "f1"], ci="posterior")
    a = Evaluation(**kw).evaluate([d])
    half = len(d["y"]) // 2
    ev = Evaluation(**kw)
    merged = ev.merge(ev.fold(ev.zero(), {k: v[half:] for k, v in d.items()}), ev.fold(ev.zero(), {k: v[:half] for k, v in d.items()}))
    b = ev.finish(merged)
    assert a.to_json() == b.to_json()
    c = Evaluation(**kw, ci_seed=1).evaluate([d])
    assert a.overall.ci["f1"] != c.overall.ci["f1"]
    # two slices holding the same rows get different draws (the seed includes the slice key)
    same = {**d, "g": np.where(d["g"] == "a", "a", "z"), "h": np.where(d["g"] == "a", "a", "y")}
    r = Evaluation(**{**kw, "slices": ["g", "h"]}).evaluate([same])
    assert r["g=a"].metrics == r["h=a"].metrics and r["g=a"].ci != r["h=a"].ci


@pytest.mark.parametrize("k, n", [(0, 7 * 10**15), (7 * 10**15, 7 * 10**15), (0, 3), (3, 3), (0, 1), (1, 1), (0, 10**300)])
def test_wilson_ends_are_exact_and_contain_the_proportion(k, n):
    # before: 0 successes of 7e15 gave a lower limit 4.9e-32 > 0 (the interval excluded the value 0)
    from mergeable_metrics.uncertainty.intervals import wilson

    lo, hi = wilson(k, n, 0.95)
    if n > 2**60:  # beyond scipy's machine ints: no successes, Wilson's closed form [0, z^2 / (n + z^2)]
        z2 = stats.norm.ppf(0.975) ** 2
        ci = type("ci", (), {"low": 0.0, "high": z2 / (n + z2)})
    else:
        ci = stats.binomtest(k, n).proportion_ci(method="wilson")
    assert (lo, hi) == pytest.approx((ci.low, ci.high), rel=1e-9, abs=0) and lo <= k / n <= hi
    assert (lo == 0.0) == (k == 0) and (hi == 1.0) == (k == n)


def test_one_row_and_empty_slices_under_analytic_and_posterior():
    import warnings

    d = {"y": np.array([1, 0, 1]), "s": np.array([0.9, 0.2, 0.4]), "g": np.array(["a", "b", "b"]), "w": np.array([1.0, 1e300, 1e300])}
    for ci in ("analytic", "posterior"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = Evaluation(label_col="y", score_col="s", slices=["g"], metrics=["accuracy", "recall"], ci=ci).evaluate([d])
            empty = Evaluation(label_col="y", score_col="s", metrics=["accuracy"], ci=ci).evaluate([{"y": d["y"][:0], "s": d["s"][:0]}])
        one = r[(("g", "a"),)]  # one row, correct: Wilson(1, 1) at 95%; a posterior interval inside [0, 1]
        assert one.n == 1 and one.metrics["accuracy"] == 1.0
        lo, hi = one.ci["accuracy"]
        if ci == "analytic":
            ref = stats.binomtest(1, 1).proportion_ci(method="wilson")
            assert (lo, hi) == pytest.approx((ref.low, ref.high), rel=1e-12)
        assert 0.0 < lo < hi <= 1.0
        assert np.isnan(empty.overall.ci["accuracy"]).all()  # n = 0: NaN, never a crash
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow warning from huge frequency weights
        r = Evaluation(label_col="y", score_col="s", weight_col="w", slices=["g"], metrics=["recall"], ci="analytic").evaluate([d])
    z2 = stats.norm.ppf(0.975) ** 2  # recall 0 of weight 1e300: Wilson's [0, z^2 / (n + z^2)]
    assert r[(("g", "b"),)].ci["recall"] == pytest.approx((0.0, z2 / (1e300 + z2)), rel=1e-12)


def test_posterior_vectorised_cells_equal_the_loop_over_replicate_states(monkeypatch):
    """compute_cells sends the metrics Plan.compute_cells vectorises through it; the same
    metrics computed by their own compute on each replicate's rebuilt states agree."""
    import mergeable_metrics.uncertainty.intervals as intervals

    d = _binary(500)
    kw = dict(
        label_col="y", score_col="s", slices=["g"], metrics=["accuracy", "f1", "f1@macro", "mcc", "cohen_kappa", "confusion_matrix", "fpr"], ci="posterior"
    )
    fast = Evaluation(**kw).evaluate([d])
    monkeypatch.setattr(intervals, "is_cell_metric", lambda m: False)
    intervals._CELL_PLANS.clear()
    slow = Evaluation(**kw).evaluate([d])
    for a, b in zip(fast, slow):
        for k in a.ci:
            np.testing.assert_allclose(np.asarray(a.ci[k], dtype=float), np.asarray(b.ci[k], dtype=float), rtol=1e-12, atol=0)


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=15)
@given(seed=st.integers(0, 2**32 - 1), ci=st.sampled_from(["analytic", "posterior"]))
def test_intervals_are_the_same_for_any_sharding_and_merge_tree(seed, ci):
    """Random shards (empty ones included), batches and merge trees: the same intervals, to the bit."""
    from tests._helpers.sharding import EvaluationFolder, fold_all, fold_sharded

    rng = np.random.default_rng(seed)
    d = _binary(int(rng.integers(0, 120)), seed=int(rng.integers(0, 1000)))
    d["w"] = rng.integers(0, 3, len(d["y"])).astype(float)
    ev = Evaluation(
        label_col="y", score_col="s", weight_col="w", slices=["g"], metrics=["accuracy", "f1", "mcc", "roc_auc", "recall@none"], ci=ci, ci_replicates=50
    )
    folder = EvaluationFolder(ev)
    want = ev.finish(fold_all(folder, d))
    got = ev.finish(fold_sharded(folder, d, rng))
    assert got.to_json() == want.to_json()


# -- every registered metric, every method (issue 28, item 6) -----------------------------------
def _every_metric_inputs(kind: str):
    """(Evaluation keywords, one batch) of a task kind, and its registered metrics that run on
    that batch with their default parameters."""
    import mergeable_metrics
    from mergeable_metrics.engine import Plan
    from mergeable_metrics.metrics import Task

    rng = np.random.default_rng(4)
    n = 90
    if kind == "binary":
        kw, task, d = {"label_col": "y", "score_col": "s"}, Task(), {"y": rng.integers(0, 2, n), "s": rng.random(n)}
    elif kind == "multiclass":
        p = rng.dirichlet(np.ones(3), n)
        kw, task, d = {"label_col": "y", "score_col": "s", "num_classes": 3}, Task(num_classes=3), {"y": rng.integers(0, 3, n), "s": list(p)}
    else:
        y = rng.normal(size=n)
        kw, task, d = {"label_col": "y", "prediction_col": "p", "task": "regression"}, Task(kind="regression"), {"y": y, "p": y + rng.normal(size=n)}
    have = {
        "binary": {"target", "score", "prediction", "probability"},
        "multiclass": {"target", "score", "score_matrix", "prediction", "probability"},
        "regression": {"target", "prediction"},
    }[kind]
    names = []
    for name, cls in sorted(mergeable_metrics.REGISTRY.items()):
        if name != cls.name or kind not in cls.tasks:
            continue
        try:
            plan = Plan([name], task)
        except ValueError:  # needs a parameter (e.g. partial_roc_auc@max_fpr=0.1)
            continue
        if plan.needs <= have:
            names.append(name)
    return kw, d, names


@pytest.mark.parametrize("kind", ["binary", "multiclass", "regression"])
@pytest.mark.parametrize("ci", ["analytic", "posterior", "bootstrap"])
def test_every_registered_metric_gets_an_interval_or_is_listed_unsupported(kind, ci):
    """No metric is silently without an interval: each either has one in every slice or is
    named in ``config["ci"]["unsupported"]`` (and the table's last line); none raises."""
    import warnings

    kw, d, names = _every_metric_inputs(kind)
    assert len(names) >= 8, names
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = Evaluation(**kw, metrics=names, ci=ci, ci_replicates=40, ci_buckets=16).evaluate([d])
    unsupported = set(r.config["ci"]["unsupported"])
    for k in r.overall.metrics:
        assert (k in r.overall.ci) != (k in unsupported), (ci, k)
    # the bootstrap covers every metric whose value has a fixed shape
    if ci == "bootstrap":
        assert unsupported <= {"roc_curve", "precision_recall_curve", "metric_at_thresholds", "multiclass_roc_curve", "multiclass_precision_recall_curve"}, (
            unsupported
        )


@pytest.mark.parametrize("kind", ["binary", "multiclass", "regression"])
@pytest.mark.parametrize("ci", ["analytic", "posterior", "bootstrap"])
def test_a_weightless_slice_or_empty_input_gets_nan_intervals_and_never_aborts(kind, ci):
    """Issue 28, item 17: ci="bootstrap" with average_precision raised IndexError on a slice
    whose weights are all 0 and on empty input. Every metric of every task, every method: the
    evaluation finishes, the other slice keeps its intervals, and a metric undefined on the
    weightless slice (NaN) gets (nan, nan)."""
    import warnings

    kw, d, names = _every_metric_inputs(kind)
    n = len(d["y"])
    g = np.where(np.arange(n) < n // 2, "kept", "weightless")
    weighted = {**d, "g": g, "w": np.where(g == "kept", 1.0, 0.0)}
    empty = {k: v[:0] for k, v in d.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sliced = Evaluation(**kw, metrics=names, slices=["g"], weight_col="w", ci=ci, ci_replicates=40, ci_buckets=16).evaluate([weighted])
        nothing = Evaluation(**kw, metrics=names, ci=ci, ci_replicates=40, ci_buckets=16).evaluate([empty])
    for res in (sliced[(("g", "weightless"),)], nothing.overall):
        for k, v in res.metrics.items():
            if np.ndim(v) == 0 and isinstance(v, float) and math.isnan(v) and k in res.ci:
                assert all(math.isnan(x) for x in res.ci[k]), (k, res.ci[k])
    if kind == "binary" and ci == "bootstrap":
        for res in (sliced[(("g", "weightless"),)], nothing.overall):
            assert all(math.isnan(x) for x in res.ci["average_precision"]) and all(math.isnan(x) for x in res.ci["roc_auc"])
        kept = sliced[(("g", "kept"),)].ci["average_precision"]
        assert 0.0 <= kept[0] <= sliced[(("g", "kept"),)].metrics["average_precision"] <= kept[1] <= 1.0


@pytest.mark.parametrize("metric", ["average_precision", "roc_auc", "log_loss", "brier_score", "ece"])
def test_bootstrap_of_a_threshold_free_metric_alone_on_a_weightless_slice_or_empty_input(metric):
    """Issue 28, item 17, on the bucket-stacked path (the metric alone): (nan, nan), no IndexError."""
    d = _binary(200)
    w = np.where(d["g"] == "c", 0.0, 1.0)
    kw = {"label_col": "y", "score_col": "s", "metrics": [metric], "ci": "bootstrap", "ci_replicates": 40, "ci_buckets": 16}
    ev = Evaluation(**kw, slices=["g"], weight_col="w")
    assert ev.plan.stacked
    r = ev.evaluate([{**d, "w": w}])
    assert all(math.isnan(x) for x in r[(("g", "c"),)].ci[metric])
    lo, hi = r[(("g", "a"),)].ci[metric]
    assert lo <= r[(("g", "a"),)].metrics[metric] <= hi
    empty = Evaluation(**kw).evaluate([{"y": d["y"][:0], "s": d["s"][:0]}])
    assert all(math.isnan(x) for x in empty.overall.ci[metric])
