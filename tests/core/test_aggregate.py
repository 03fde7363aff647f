"""mergeable_metrics.aggregate over runs / folds / seeds (issue 13, "Aggregating runs and folds").

References: plain formulas on small numbers computed here, scipy's t and normal quantiles, the
DerSimonian-Laird analysis of the BCG vaccine trials (Colditz et al. 1994) as published in
metafor's own tests (``tests/testthat/test_misc_metan_vs_rma.uni_with_dat.bcg.r`` in wviechtb/metafor:
``rma(yi, vi, data=dat, method="DL"|"FE")`` on log risk ratios and log odds ratios, checked there against
Stata's ``metan``), and
scikit-learn for the pooled metric over all examples.
"""

from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import accuracy_score, roc_auc_score

import mergeable_metrics
from mergeable_metrics import Evaluation, MetricCollection, Results, SliceResult, aggregate
from mergeable_metrics.aggregation import AGGREGATORS, Aggregate, Aggregator, FixedEffect, RandomEffects, analytic_variance
from mergeable_metrics._util.quantiles import t_ppf


def _run(metrics, n=100, sl=(), ci=None, level=None):
    s = SliceResult(sl, n, float(n), 0, dict(metrics), ci=ci or {})
    return Results([s], {"ci": {"level": level}} if level else {})


@pytest.mark.parametrize("p", [1e-10, 0.001, 0.025, 0.3, 0.5, 0.8, 0.975, 0.9999])
def test_t_quantiles_match_scipy(p):
    for df in (1, 2, 3, 4.5, 10, 100, 1000):
        assert t_ppf(p, df) == pytest.approx(stats.t.ppf(p, df), rel=1e-9, abs=1e-12)


def test_fixed_effect_hand_computed():
    # three runs, accuracy with analytic variance p(1-p)/n
    ps, ns = [0.8, 0.9, 0.7], [100, 200, 50]
    runs = [_run({"accuracy": p}, n) for p, n in zip(ps, ns)]
    v = [p * (1 - p) / n for p, n in zip(ps, ns)]  # 0.0016, 0.00045, 0.0042
    w = [1 / x for x in v]
    mu = sum(wi * p for wi, p in zip(w, ps)) / sum(w)
    se = math.sqrt(1 / sum(w))
    q = sum(wi * (p - mu) ** 2 for wi, p in zip(w, ps))
    agg = aggregate(runs, "fixed_effect")
    o = agg.overall
    assert agg.method == "fixed_effect" and o.runs == 3 and o.n == 350
    assert o.metrics["accuracy"] == pytest.approx(mu, rel=1e-12)
    assert o.ci["accuracy"] == pytest.approx((mu - 1.959963984540054 * se, mu + 1.959963984540054 * se), rel=1e-12)
    d = o.details["accuracy"]
    assert d["q"] == pytest.approx(q, rel=1e-12) and d["df"] == 2
    assert d["i2"] == pytest.approx(max(0.0, (q - 2) / q), rel=1e-12)
    assert d["weights"] == pytest.approx([wi / sum(w) for wi in w], rel=1e-12)
    assert d["variance_source"] == ["p(1-p)/n"] * 3 and d["interval"] == "normal"


def test_random_effects_hand_computed_small_numbers():
    y = np.array([0.10, 0.30, 0.35, 0.65])
    v = np.array([0.01, 0.02, 0.015, 0.03])
    w = 1 / v
    mu_fe = (w * y).sum() / w.sum()
    q = (w * (y - mu_fe) ** 2).sum()
    tau2 = max(0.0, (q - 3) / (w.sum() - (w**2).sum() / w.sum()))
    assert tau2 > 0  # heterogeneous on purpose
    ws = 1 / (v + tau2)
    mu = (ws * y).sum() / ws.sum()
    se = 1 / math.sqrt(ws.sum())
    z = stats.norm.ppf(0.95)  # level 0.9
    # the runs carry confidence intervals (SliceResult.ci) at level 0.9: v = ((hi - lo) / (2 z))^2
    runs = [_run({"f1": yi}, ci={"f1": (yi - z * math.sqrt(vi), yi + z * math.sqrt(vi))}, level=0.9) for yi, vi in zip(y, v)]
    o = aggregate(runs, "random_effects", level=0.9).overall
    assert o.metrics["f1"] == pytest.approx(mu, rel=1e-9)
    assert o.ci["f1"] == pytest.approx((mu - z * se, mu + z * se), rel=1e-9)
    d = o.details["f1"]
    assert d["tau2"] == pytest.approx(tau2, rel=1e-9) and d["q"] == pytest.approx(q, rel=1e-9)
    assert d["i2"] == pytest.approx((q - 3) / q, rel=1e-9) and d["variance_source"] == ["ci"] * 4
    # homogeneous runs: tau2 = 0 and random effects equal fixed effect
    same = [_run({"f1": 0.5}, ci={"f1": (0.4, 0.6)}) for _ in range(3)]
    re_, fe = aggregate(same, "dersimonian_laird").overall, aggregate(same, "inverse_variance").overall
    assert re_.details["f1"]["tau2"] == 0.0 and re_.details["f1"]["i2"] == 0.0
    assert re_.metrics["f1"] == fe.metrics["f1"] == pytest.approx(0.5) and re_.ci["f1"] == pytest.approx(fe.ci["f1"])


BCG = np.array(  # tpos, tneg, cpos, cneg of the 13 BCG trials (metafor's dat.bcg)
    [[4, 119, 11, 128], [6, 300, 29, 274], [3, 228, 11, 209], [62, 13536, 248, 12619], [33, 5036, 47, 5761],
     [180, 1361, 372, 1079], [8, 2537, 10, 619], [505, 87886, 499, 87892], [29, 7470, 45, 7232],
     [17, 1699, 65, 1600], [186, 50448, 141, 27197], [5, 2493, 3, 2338], [27, 16886, 29, 17825]], dtype=float,
)  # fmt: skip


def test_dersimonian_laird_bcg_published_values():
    a, b, c, d = BCG.T
    y = np.log((a / (a + b)) / (c / (c + d)))  # log risk ratios
    v = 1 / a - 1 / (a + b) + 1 / c - 1 / (c + d)
    r = RandomEffects().aggregate(y, v, 0.95)
    # metafor: estimate -0.7141, se 0.1787, ci [-1.0644, -0.3638], tau^2 0.3088, I^2 92.12%, Q(12) 152.2330
    assert r.value == pytest.approx(-0.7141, abs=5e-5) and r.details["se"] == pytest.approx(0.1787, abs=5e-5)
    assert r.ci == pytest.approx((-1.0644, -0.3638), abs=5e-5)
    assert r.details["tau2"] == pytest.approx(0.3088, abs=5e-5) and r.details["i2"] == pytest.approx(0.9212, abs=5e-5)
    assert r.details["q"] == pytest.approx(152.2330, abs=5e-5)
    f = FixedEffect().aggregate(y, v, 0.95)  # metafor method="FE": -0.4303, se 0.0405, ci [-0.5097, -0.3509]
    assert f.value == pytest.approx(-0.4303, abs=5e-5) and f.details["se"] == pytest.approx(0.0405, abs=5e-5)
    assert f.ci == pytest.approx((-0.5097, -0.3509), abs=5e-5)
    assert r.value / r.details["se"] == pytest.approx(-3.9952, abs=5e-4)  # metafor zval
    assert r.details["i2"] == pytest.approx(0.921173, abs=5e-7)  # metafor I2 92.1173


def test_dersimonian_laird_bcg_log_odds_ratios_published_values():
    a, b, c, d = BCG.T
    y = np.log((a * d) / (b * c))  # log odds ratios, metafor escalc(measure="OR")
    v = 1 / a + 1 / b + 1 / c + 1 / d
    r = RandomEffects().aggregate(y, v, 0.95)
    # metafor DL: estimate -0.7474, ci [-1.1242, -0.3706], zval -3.8873, tau^2 0.3663, I^2 92.6455
    assert r.value == pytest.approx(-0.7474, abs=5e-5) and r.ci == pytest.approx((-1.1242, -0.3706), abs=5e-5)
    assert r.value / r.details["se"] == pytest.approx(-3.8873, abs=5e-4)
    assert r.details["tau2"] == pytest.approx(0.3663, abs=5e-5) and r.details["i2"] == pytest.approx(0.926455, abs=5e-7)
    f = FixedEffect().aggregate(y, v, 0.95)  # metafor FE: -0.4361, ci [-0.5190, -0.3533], zval -10.3190, QE 163.1649
    assert f.value == pytest.approx(-0.4361, abs=5e-5) and f.ci == pytest.approx((-0.5190, -0.3533), abs=5e-5)
    assert f.value / f.details["se"] == pytest.approx(-10.3190, abs=5e-4)
    assert r.details["q"] == pytest.approx(163.1649, abs=5e-5)


def test_mean_is_a_t_interval_over_runs_and_nan_for_one_run():
    vals = [0.71, 0.74, 0.69, 0.80, 0.76]
    o = aggregate([_run({"roc_auc": x}) for x in vals], "mean").overall
    m, s = np.mean(vals), np.std(vals, ddof=1)
    half = stats.t.ppf(0.975, 4) * s / math.sqrt(5)
    assert o.metrics["roc_auc"] == pytest.approx(m) and o.ci["roc_auc"] == pytest.approx((m - half, m + half))
    assert o.details["roc_auc"]["std"] == pytest.approx(s) and o.details["roc_auc"]["interval"] == "t"
    one = aggregate([_run({"roc_auc": 0.7})], "mean").overall
    assert one.metrics["roc_auc"] == 0.7 and all(math.isnan(x) for x in one.ci["roc_auc"])


def test_analytic_variances_proportions_and_hanley_mcneil():
    s = SliceResult((), 200, 200.0, 0, {"tp": 30.0, "fp": 10.0, "fn": 20.0, "tn": 140.0, "precision": 0.75, "recall": 0.6, "roc_auc": 0.8})
    assert analytic_variance("precision", 0.75, s) == (pytest.approx(0.75 * 0.25 / 40), "p(1-p)/n")
    assert analytic_variance("ppv", 0.75, s)[0] == pytest.approx(0.75 * 0.25 / 40)  # an alias
    assert analytic_variance("recall", 0.6, s)[0] == pytest.approx(0.6 * 0.4 / 50)
    assert analytic_variance("accuracy", 0.85, s)[0] == pytest.approx(0.85 * 0.15 / 200)
    a, n1, n2 = 0.8, 50, 150  # Hanley & McNeil (1982), eq. 2
    q1, q2 = a / (2 - a), 2 * a * a / (1 + a)
    want = (a * (1 - a) + (n1 - 1) * (q1 - a * a) + (n2 - 1) * (q2 - a * a)) / (n1 * n2)
    assert analytic_variance("roc_auc", a, s) == (pytest.approx(want), "hanley_mcneil")
    s2 = SliceResult((), 200, 200.0, 0, {"prevalence": 0.25, "roc_auc": 0.8})
    assert analytic_variance("roc_auc", a, s2)[0] == pytest.approx(want)
    assert analytic_variance("precision@macro", 0.7, s) is None and analytic_variance("mse", 0.1, s) is None


def test_missing_variance_raises_naming_the_metric_slice_and_run():
    runs = [_run({"mse": 0.2, "accuracy": 0.8}), _run({"mse": 0.3, "accuracy": 0.7})]
    with pytest.raises(ValueError, match=r"metric 'mse' in slice 'Overall' of run 0 has no ci and no analytic variance"):
        aggregate(runs, "random_effects")
    assert aggregate(runs, "random_effects", metrics=["accuracy"]).overall.metrics.keys() == {"accuracy"}
    with pytest.raises(ValueError, match=r"metric 'accuracy' in slice 'Overall' of run 2 \(value 1.0\) has variance 0.0"):
        aggregate([_run({"accuracy": 0.8}), _run({"accuracy": float("nan")}), _run({"accuracy": 1.0})], "fixed_effect")
    with pytest.raises(ValueError, match=r"fixed_effect: run 1 has variance 0.0"):  # called directly
        FixedEffect().aggregate(np.array([0.5, 1.0]), np.array([0.1, 0.0]), 0.95)
    with pytest.raises(ValueError, match="unknown aggregation method 'median'; known:"):
        aggregate(runs, "median")
    with pytest.raises(ValueError, match=r"level must be in \(0, 1\)"):
        aggregate(runs, "mean", level=95)
    with pytest.raises(TypeError, match="Results hold values only"):
        aggregate(runs, "pooled")
    with pytest.raises(ValueError, match="no runs"):
        aggregate([], "mean")


def test_slices_are_the_union_and_nan_and_arrays_are_not_dropped_silently():
    r1 = Results([SliceResult((), 10, 10.0, 0, {"accuracy": 0.5, "f1@none": np.array([0.1, 0.2])}),
                  SliceResult((("c", "a"),), 5, 5.0, 0, {"accuracy": 0.4, "f1@none": np.array([0.1, 0.2])})])  # fmt: skip
    r2 = Results([SliceResult((), 10, 10.0, 0, {"accuracy": float("nan"), "f1@none": np.array([0.3, 0.2])}),
                  SliceResult((("c", "b"),), 5, 5.0, 0, {"accuracy": 0.6, "f1@none": np.array([0.1, 0.2])})])  # fmt: skip
    r3 = Results([SliceResult((), 10, 10.0, 0, {"accuracy": 0.7})])
    agg = aggregate([r1, r2, r3], "mean")
    assert [s.name for s in agg] == ["Overall", "c=a", "c=b"]
    assert agg.overall.metrics["accuracy"] == pytest.approx(0.6) and agg.overall.details["accuracy"]["runs"] == 2
    assert agg["c=b"].runs == 1 and agg["c=b"].metrics["accuracy"] == 0.6
    assert "f1@none" in agg.not_aggregated and "f1@none" not in agg.overall.metrics
    d = agg.to_dict()
    assert d["method"] == "mean" and d["slices"][1]["ci"]["accuracy"] == [None, None]
    rows = agg.to_rows()
    assert {r["metric"] for r in rows} == {"accuracy"} and len(rows) == 3


def _folds(seed=0, k=4, n=300):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(k):
        y = rng.integers(0, 2, n)
        s = np.clip(0.3 * y + rng.random(n) * 0.7, 0, 1)
        out.append((y, s, rng.choice(["a", "b"], n)))
    return out


def test_pooled_merges_states_and_equals_sklearn_over_all_examples():
    folds = _folds()
    ys, ss = np.concatenate([f[0] for f in folds]), np.concatenate([f[1] for f in folds])
    mcs = []
    for y, s, _ in folds:
        mc = MetricCollection("accuracy", "roc_auc")
        mc.update(y, y_score=s)
        mcs.append(mc)
    o = aggregate(mcs, "pooled").overall
    assert o.metrics["accuracy"] == pytest.approx(accuracy_score(ys, ss >= 0.5))
    assert o.metrics["roc_auc"] == pytest.approx(roc_auc_score(ys, ss))
    p = o.metrics["accuracy"]  # one merged run: normal interval from p(1-p)/n
    half = stats.norm.ppf(0.975) * math.sqrt(p * (1 - p) / ys.size)
    assert o.ci["accuracy"] == pytest.approx((p - half, p + half)) and o.n == ys.size
    # the same through an Evaluation's accumulators, per slice; and through a plan's state tuples
    ev = Evaluation(label_col="y", score_col="s", slices=["g"], metrics=["accuracy"])
    accs = [ev.fold(ev.zero(), {"y": y, "s": s, "g": g}) for y, s, g in folds]
    agg = aggregate(accs, "merged", evaluation=ev)
    gs = np.concatenate([f[2] for f in folds])
    for g in ("a", "b"):
        m = gs == g
        assert agg[{"g": g}].metrics["accuracy"] == pytest.approx(accuracy_score(ys[m], ss[m] >= 0.5))
    plan = mcs[0].plan
    assert aggregate([m.states for m in mcs], "pooled", plan=plan).overall.metrics == o.metrics


def test_user_aggregators_register_by_name_and_clash_raises():
    class Median(Aggregator):
        """Median of the runs, no interval."""

        name = "median_for_test"
        aliases = ("med_for_test",)

        def aggregate(self, values, variances, level):
            return Aggregate(float(np.median(values)), (float(values.min()), float(values.max())), {"runs": values.size})

    try:
        o = aggregate([_run({"accuracy": x}) for x in (0.1, 0.5, 0.6)], "med_for_test").overall
        assert o.metrics["accuracy"] == 0.5 and o.ci["accuracy"] == (0.1, 0.6)
        with pytest.raises(ValueError, match="aggregator name or alias 'mean' of .*Clash is already used by mergeable_metrics.aggregation.Mean"):

            class Clash(Aggregator):
                name = "mean"
    finally:
        AGGREGATORS.pop("median_for_test", None)
        AGGREGATORS.pop("med_for_test", None)
    assert {"pooled", "mean", "fixed_effect", "random_effects"} <= set(AGGREGATORS)
    assert mergeable_metrics.aggregate is aggregate


def test_aggregate_slices_are_frozen():
    o = aggregate([_run({"accuracy": 0.5})], "mean").overall
    with pytest.raises(dataclasses.FrozenInstanceError):
        o.runs = 3  # type: ignore[misc]


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=40)
@given(st.lists(st.integers(0, 30), min_size=1, max_size=6), st.integers(0, 2**32 - 1), st.booleans())
def test_pooled_is_the_metric_of_the_union_for_any_split(sizes, seed, sort):
    """Runs of any sizes (empty ones included, sorted or not): pooled == one pass over all rows,
    and the run order does not matter."""
    rng = np.random.default_rng(seed)
    n = sum(sizes)
    y, s = rng.integers(0, 2, n), rng.random(n).round(2)
    if sort:
        order = np.argsort(s)
        y, s = y[order], s[order]
    runs, start = [], 0
    for k in sizes:
        mc = MetricCollection("accuracy", "f1", "roc_auc", "fowlkes_mallows")
        if k:
            mc.update(y[start : start + k], y_score=s[start : start + k])
        runs.append(mc)
        start += k
    whole = MetricCollection("accuracy", "f1", "roc_auc", "fowlkes_mallows")
    if n:
        whole.update(y, y_score=s)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # empty data: NaN values and their warnings
        want = whole.compute()
        got = aggregate(runs, "pooled").overall.metrics
        rev = aggregate(runs[::-1], "pooled").overall.metrics
    for k, v in want.items():
        assert (math.isnan(v) and math.isnan(got[k]) and math.isnan(rev[k])) or (got[k] == v == rev[k]), k


def test_fixed_effect_reads_the_variances_of_evaluations_with_ci():
    """Runs evaluated with ci="analytic" at level 0.9: each run's variance is its interval's
    ((upper - lower) / (2 z_0.95))^2, whatever the metric."""
    ev = Evaluation(label_col="y", score_col="s", metrics=["accuracy", "roc_auc"], ci="analytic", ci_level=0.9)
    runs = []
    for y, s, _ in _folds(seed=4, k=3):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            runs.append(ev.evaluate({"y": y, "s": s}))
    z = stats.norm.ppf(0.95)
    for key in ("accuracy", "roc_auc"):
        ys = np.array([r.overall.metrics[key] for r in runs])
        v = np.array([((r.overall.ci[key][1] - r.overall.ci[key][0]) / (2 * z)) ** 2 for r in runs])
        w = 1 / v
        o = aggregate(runs, "fixed_effect", level=0.8).overall
        assert o.details[key]["variance_source"] == ["ci"] * 3
        assert o.metrics[key] == pytest.approx((w * ys).sum() / w.sum(), rel=1e-9)
        half = stats.norm.ppf(0.9) / math.sqrt(w.sum())
        assert o.ci[key] == pytest.approx((o.metrics[key] - half, o.metrics[key] + half), rel=1e-9)


# -- windowed runs (issue 28, item 11) -----------------------------------------------------------
def _windowed_runs():
    """Two runs over the same four 1-hour windows (rows at 0..4h), sliced by g."""
    from mergeable_metrics.time.windows import WindowedEvaluation

    we = WindowedEvaluation(("ts", "1h"), label_col="y", score_col="s", slices=["g"], metrics=["accuracy"])
    data = []
    for seed in (1, 2):
        rng = np.random.default_rng(seed)
        n = 400
        y = rng.integers(0, 2, n)
        data.append({"ts": rng.integers(0, 4 * 3600, n), "y": y, "s": np.clip(0.3 * y + 0.7 * rng.random(n), 0, 1), "g": rng.choice(["a", "b"], n)})
    return we, data


def test_mean_over_windowed_runs_aggregates_each_window_and_slice_over_the_runs():
    """2 runs x 4 windows: 8 aggregates per slice of 2 runs each (df 1), not one of 8 "runs"."""
    we, data = _windowed_runs()
    runs = [we.evaluate(d) for d in data]
    agg = aggregate(runs, "mean")
    assert len(agg.windows) == 4 and len(agg.slices) == 4 * 3
    t = stats.t.ppf(0.975, 1)
    for s in agg.slices:
        hour = s.window_start.hour
        assert s.window_end.hour == hour + 1
        vals = []
        for d in data:
            rows = (d["ts"] // 3600 == hour) & (np.ones(len(d["y"]), bool) if s.slice == () else d["g"] == dict(s.slice)["g"])
            vals.append(accuracy_score(d["y"][rows], d["s"][rows] >= 0.5))
        mean, sd = np.mean(vals), np.std(vals, ddof=1)
        assert s.runs == 2 and s.details["accuracy"]["runs"] == 2 and s.details["accuracy"]["df"] == 1
        assert s.metrics["accuracy"] == pytest.approx(mean, rel=1e-12)
        lo, hi = mean - t * sd / math.sqrt(2), mean + t * sd / math.sqrt(2)
        assert s.ci["accuracy"] == pytest.approx((max(lo, 0.0), min(hi, 1.0)), rel=1e-9)  # clipped to accuracy's bounds
        assert s.n == sum(
            int(((d["ts"] // 3600 == hour) & (np.ones(len(d["y"]), bool) if s.slice == () else d["g"] == dict(s.slice)["g"])).sum()) for d in data
        )
    first = agg.window(agg.windows[0][0])
    assert first.overall.window_start == agg.windows[0][0] and len(first) == 3
    with pytest.raises(KeyError, match="windows"):
        agg[()]  # the overall slice is in four windows: name the window
    rows = agg.to_rows()
    assert {r["window_start"] for r in rows} == {w[0].isoformat() for w in agg.windows}
    assert agg.to_dict()["slices"][0]["window_start"] == agg.windows[0][0].isoformat()


def test_pooled_over_windowed_accumulators_merges_each_window():
    """The pooled value of a window is the metric over both runs' rows in that window."""
    we, data = _windowed_runs()
    accs = [we.fold(we.zero(), d) for d in data]
    agg = aggregate(accs, "pooled", evaluation=we)
    assert len(agg.windows) == 4
    ys = np.concatenate([d["y"] for d in data])
    ss = np.concatenate([d["s"] for d in data])
    hours = np.concatenate([d["ts"] for d in data]) // 3600
    for s in agg.slices:
        if s.slice == ():
            rows = hours == s.window_start.hour
            assert s.metrics["accuracy"] == pytest.approx(accuracy_score(ys[rows], ss[rows] >= 0.5), rel=1e-12)
            assert s.n == rows.sum()


def test_windowed_and_unwindowed_runs_do_not_mix():
    we, data = _windowed_runs()
    plain = Evaluation(label_col="y", score_col="s", slices=["g"], metrics=["accuracy"]).evaluate(data[0])
    with pytest.raises(ValueError, match="window"):
        aggregate([we.evaluate(data[0]), plain], "mean")
