"""Experiment aggregation as a meta-analysis (issue 29, item 3), against the published formulas
written out here with numpy and scipy: DerSimonian and Laird (1986), Paule and Mandel (1982) as
the root of the generalised Q equation (scipy.optimize.brentq), Hartung-Knapp-Sidik-Jonkman
(t with k - 1 degrees of freedom), Higgins' I^2 and Bowden et al.'s (2011) generalised I^2."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import optimize, stats

from mergeable_metrics import Evaluation, Results, SliceResult, aggregate
from mergeable_metrics.aggregation import AGGREGATORS, Aggregator, RandomEffects, get_aggregator, paule_mandel_tau2

Y = np.array([0.70, 0.80, 0.75, 0.90, 0.60])
V = np.array([0.001, 0.002, 0.0015, 0.001, 0.003])
Z = stats.norm.ppf(0.975)


def _runs(y=Y, v=V):
    """Results whose accuracy has value y and a ci of variance v (the ci's width gives v back)."""
    return [Results([SliceResult((), 100, 100.0, 0, {"accuracy": a}, ci={"accuracy": (a - Z * np.sqrt(b), a + Z * np.sqrt(b))})]) for a, b in zip(y, v)]


def _reference(tau2, hksj=False):
    w = 1 / (V + tau2)
    mu = np.sum(w * Y) / np.sum(w)
    if hksj:
        se = np.sqrt(np.sum(w * (Y - mu) ** 2) / ((len(Y) - 1) * np.sum(w)))
        q = stats.t.ppf(0.975, len(Y) - 1)
    else:
        se, q = np.sqrt(1 / np.sum(w)), Z
    return mu, (mu - q * se, mu + q * se)


def _dl():
    w = 1 / V
    mu = np.sum(w * Y) / np.sum(w)
    q = np.sum(w * (Y - mu) ** 2)
    return max(0.0, (q - (len(Y) - 1)) / (np.sum(w) - np.sum(w**2) / np.sum(w))), q


def _pm():
    def gen_q(t):
        w = 1 / (V + t)
        mu = np.sum(w * Y) / np.sum(w)
        return np.sum(w * (Y - mu) ** 2) - (len(Y) - 1)

    return optimize.brentq(gen_q, 0.0, 10.0, xtol=1e-15)


@pytest.mark.parametrize("pm", [False, True])
@pytest.mark.parametrize("hksj", [False, True])
def test_random_effects_against_the_formulas(pm, hksj):
    tau2 = _pm() if pm else _dl()[0]
    assert tau2 > 0
    agg = aggregate(_runs(), "random_effects", paule_mandel_heterogeneity=pm, hksj_sampling_distribution=hksj)
    d = agg.overall.details["accuracy"]
    mu, ci = _reference(tau2, hksj)
    assert d["tau2"] == pytest.approx(tau2, rel=1e-9) and d["between_variance"] == d["tau2"]
    assert agg.overall.metrics["accuracy"] == pytest.approx(mu, rel=1e-12)
    assert agg.overall.ci["accuracy"] == pytest.approx(ci, rel=1e-9)
    assert d["interval"] == ("t" if hksj else "normal")
    q = _dl()[1]
    assert d["i2"] == pytest.approx((q - 4) / q, rel=1e-9)  # Higgins
    assert d["within_variance"] == pytest.approx(V.mean(), rel=1e-12)
    assert d["i2_generalised"] == pytest.approx(tau2 / (tau2 + V.mean()), rel=1e-9)  # Bowden


def test_paule_mandel_is_zero_without_excess_heterogeneity():
    y = np.array([0.50, 0.51, 0.49])
    v = np.array([0.01, 0.01, 0.01])
    assert paule_mandel_tau2(y, v) == 0.0  # Q(0) = 0.0002 / 0.01 < k - 1
    assert paule_mandel_tau2(Y, V, start=0.0) == pytest.approx(_pm(), rel=1e-9)  # any start brackets the root


def test_aggregated_interval_is_clipped_to_the_bounds():
    agg = aggregate(_runs(np.array([0.97, 0.99]), np.array([0.002, 0.004])), "fixed_effect")
    w = 1 / np.array([0.002, 0.004])
    mu = np.sum(w * np.array([0.97, 0.99])) / w.sum()
    assert mu + Z / np.sqrt(w.sum()) > 1.0
    assert agg.overall.ci["accuracy"] == pytest.approx((mu - Z / np.sqrt(w.sum()), 1.0), rel=1e-12)


def test_aggregation_per_metric_and_parameters_by_keyword():
    runs = [Results([SliceResult((), 100, 100.0, 0, {"accuracy": a, "f1": f})]) for a, f in ((0.8, 0.5), (0.9, 0.7), (0.7, 0.65))]
    agg = aggregate(runs, "mean", aggregation={"accuracy": "fixed_effect"})
    w = 1 / (np.array([0.8, 0.9, 0.7]) * (1 - np.array([0.8, 0.9, 0.7])) / 100)
    assert agg.overall.metrics["accuracy"] == pytest.approx(np.sum(w * [0.8, 0.9, 0.7]) / w.sum(), rel=1e-12)
    assert agg.overall.details["accuracy"]["method"] == "fixed_effect"
    assert agg.overall.metrics["f1"] == pytest.approx(np.mean([0.5, 0.7, 0.65]), rel=1e-12)
    with pytest.raises(ValueError, match=r"aggregator 'random_effects': unknown parameter\(s\) \['paule_mandel'\]; accepted"):
        get_aggregator("random_effects", paule_mandel=True)
    with pytest.raises(ValueError, match="mixes 'pooled'"):
        aggregate(runs, "mean", aggregation={"f1": "pooled"})


def _experiments():
    rng = np.random.default_rng(5)
    ev = Evaluation(label_col="y", prediction_col="p", metrics=["accuracy", "precision", "recall@none"], ci="posterior", ci_replicates=4000)
    accs = []
    for flip in (0.1, 0.2, 0.3):
        y = rng.integers(0, 2, 300)
        p = np.where(rng.random(300) < flip, 1 - y, y)
        accs.append(ev.fold(ev.zero(), {"y": y, "p": p}))
    return ev, accs


def test_posterior_meta_analysis_pools_posterior_means_and_variances():
    ev, accs = _experiments()
    s = [ev.posterior(a, samples=True)[()]["precision"].samples for a in accs]
    m, v = np.array([x.mean() for x in s]), np.array([x.var(ddof=1) for x in s])
    w = 1 / v
    q = np.sum(w * (m - np.sum(w * m) / w.sum()) ** 2)
    tau2 = max(0.0, (q - 2) / (w.sum() - np.sum(w**2) / w.sum()))
    w2 = 1 / (v + tau2)
    mu = np.sum(w2 * m) / w2.sum()
    agg = aggregate(accs, "random_effects", evaluation=ev, samples=True)
    assert agg.overall.metrics["precision"] == pytest.approx(mu, rel=1e-12)
    assert agg.overall.details["precision"]["variance_source"] == "posterior"
    assert agg.overall.ci["precision"] == pytest.approx((mu - Z / np.sqrt(w2.sum()), mu + Z / np.sqrt(w2.sum())), rel=1e-9)
    draws = agg.overall.samples["precision"]
    assert draws.shape == (4000,) and draws.min() >= 0.0 and draws.max() <= 1.0  # truncated to the bounds
    assert "recall@none" in agg.not_aggregated
    again = aggregate(accs, "random_effects", evaluation=ev, samples=True)
    np.testing.assert_array_equal(again.overall.samples["precision"], draws)  # seeded


def test_registered_aggregator_receives_samples_bounds_and_rng():
    seen = {}

    class Conflation(Aggregator):
        """Take the first experiment's samples, scaled (a toy), with a keyword parameter."""

        name = "first_experiment_test"

        def __init__(self, *, scale: float = 1.0):
            self.scale = scale

        def aggregate_samples(self, samples, bounds, rng):
            seen.update(shape=samples.shape, bounds=bounds, rng=rng)
            return np.clip(samples[:, 0] * self.scale, *bounds)

    try:
        ev, accs = _experiments()
        agg = aggregate(accs, "first_experiment_test", evaluation=ev, metrics=["accuracy"], scale=0.5)
        first = ev.posterior(accs[0], samples=True)[()]["accuracy"].samples * 0.5
        assert seen["shape"] == (4000, 3) and seen["bounds"] == (0.0, 1.0) and isinstance(seen["rng"], np.random.Generator)
        assert agg.overall.metrics["accuracy"] == pytest.approx(first.mean(), rel=1e-12)
        assert agg.overall.ci["accuracy"] == pytest.approx(tuple(np.quantile(first, [0.025, 0.975])), rel=1e-12)
    finally:
        AGGREGATORS.pop("first_experiment_test", None)


def test_random_effects_defaults_unchanged():
    assert RandomEffects().paule_mandel_heterogeneity is False and RandomEffects().hksj_sampling_distribution is False


def test_one_experiment_has_no_heterogeneity():
    """Higgins' I^2 = max(0, (Q - df) / Q) with df = k - 1 = 0: one experiment has nothing to be
    heterogeneous with (metafor reports I^2 = 0 for k = 1), also when rounding leaves Q a few ulps
    above 0 (0.03 with variance 0.012: ``(w y) / w`` is 0.029999999999999995, not 0.03)."""
    for y, v in ((0.03, 0.012), (0.5, 0.01)):
        for method in ("fixed_effect", "random_effects"):
            a = get_aggregator(method).aggregate(np.array([y]), np.array([v]), 0.95)
            assert a.details["i2"] == 0.0, (method, y, a.details)


def test_the_interval_of_an_aggregator_of_samples_is_clipped_to_the_bounds_too():
    """aggregate() promises every aggregated interval inside the metric's bounds; an aggregator of
    samples that does not clip its draws (here: shifted above 1) gets its interval clipped too."""

    class Shifted(Aggregator):
        name = "shifted_samples_test"

        def aggregate_samples(self, samples, bounds, rng):
            return samples.mean(axis=1) + 0.5

    try:
        ev, accs = _experiments()
        agg = aggregate(accs, "shifted_samples_test", evaluation=ev, metrics=["accuracy"])
        draws = np.mean([ev.posterior(a, samples=True)[()]["accuracy"].samples for a in accs], axis=0) + 0.5
        lo, hi = np.quantile(draws, [0.025, 0.975])
        assert hi > 1.0  # the aggregator's own draws leave the bounds
        assert agg.overall.ci["accuracy"] == (pytest.approx(min(lo, 1.0), rel=1e-12), 1.0)
    finally:
        AGGREGATORS.pop("shifted_samples_test", None)


def test_aggregation_of_a_metric_no_run_has_is_refused_by_name():
    """A misspelt key of aggregation= was silently ignored (accuracy got the default method)."""
    runs = [Results([SliceResult((), 100, 100.0, 0, {"accuracy": a})]) for a in (0.8, 0.9)]
    with pytest.raises(ValueError, match=r"aggregation= names metric\(s\) \['acuracy'\] that no run has \(the runs have \['accuracy'\]\)"):
        aggregate(runs, "fixed_effect", aggregation={"acuracy": "mean"})
    ev, accs = _experiments()
    with pytest.raises(ValueError, match=r"aggregation= names metric\(s\) \['f1'\] that no run has"):
        aggregate(accs, "random_effects", evaluation=ev, aggregation={"f1": "mean"})
    # a per-class metric is reported in not_aggregated, as without aggregation=
    assert "recall@none" in aggregate(accs, "random_effects", evaluation=ev, aggregation={"recall@none": "mean"}).not_aggregated
