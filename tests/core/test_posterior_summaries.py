"""Posterior summaries and priors (issue 29, items 1 and 2), against hand computations: with a
Dirichlet over the confusion cells, ``tp / (tp + fp)`` is Beta(tp + a_tp, fp + a_fp) (the
aggregation property), so precision's posterior median, mean, mode and intervals are scipy's Beta
values; with prob_conf_mat's two-stage prior the prevalence is Beta(positives + prevalence prior,
negatives + prevalence prior)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import optimize, stats

from mergeable_metrics import Evaluation
from mergeable_metrics.uncertainty.posterior import histogram_mode, summarize_posterior

# tp = 3, fp = 1, tn = 4, fn = 2 (rows true, columns predicted: [[tn, fp], [fn, tp]])
DATA = {"y": [1, 1, 1, 0, 0, 0, 0, 1, 1, 0], "p": [1, 1, 1, 1, 0, 0, 0, 0, 0, 0]}
R = 100_000


def _overall(**ci):
    ev = Evaluation(label_col="y", prediction_col="p", metrics=["precision", "recall", "prevalence"], ci="posterior", ci_replicates=R, **ci)
    return ev.posterior(ev.fold(ev.zero(), DATA), samples=True)[()]


def _beta_hdi(a, b, level):
    """The shortest interval of Beta(a, b) holding ``level``: minimise its width over the lower tail."""
    width = lambda p: stats.beta.ppf(p + level, a, b) - stats.beta.ppf(p, a, b)  # noqa: E731
    p = optimize.minimize_scalar(width, bounds=(0, 1 - level), method="bounded", options={"xatol": 1e-10}).x
    return stats.beta.ppf(p, a, b), stats.beta.ppf(p + level, a, b)


def test_summaries_of_precision_are_the_beta_posterior():
    s = _overall(ci_prior=1)["precision"]  # Beta(3 + 1, 1 + 1)
    a, b = 4, 2
    assert s.mean == pytest.approx(a / (a + b), abs=3e-3)
    assert s.median == pytest.approx(stats.beta.median(a, b), abs=3e-3)
    assert s.mode == pytest.approx((a - 1) / (a + b - 2), abs=0.03)  # 0.75; a histogram estimate
    np.testing.assert_allclose(s.equal_tailed, stats.beta.ppf([0.025, 0.975], a, b), atol=5e-3)
    np.testing.assert_allclose(s.hdi, _beta_hdi(a, b, 0.95), atol=5e-3)
    assert s.hdi[1] - s.hdi[0] < s.equal_tailed[1] - s.equal_tailed[0]  # the shortest interval
    assert s.samples.shape == (R,) and s.metric_uncertainty == pytest.approx(s.hdi[1] - s.hdi[0])


def test_summaries_match_the_results_interval_and_slices():
    ev = Evaluation(label_col="y", prediction_col="p", slices=["g"], metrics=["recall@none"], ci="posterior", ci_replicates=500)
    acc = ev.fold(ev.zero(), {**DATA, "g": list("ababababab")})
    post, res = ev.posterior(acc), ev.finish(acc)
    assert set(post) == {s.slice for s in res.slices}
    for s in res.slices:  # the same draws: the equal-tailed interval is the results' ci
        np.testing.assert_array_equal(post[s.slice]["recall@none"].equal_tailed[0], s.ci["recall@none"][0])
        assert post[s.slice]["recall@none"].samples is None and np.shape(post[s.slice]["recall@none"].median) == (2,)


def test_summarize_posterior_by_hand():
    s = summarize_posterior(np.array([0.1, 0.2, 0.2, 0.3, 0.9]), level=0.6)
    assert (s.median, s.mean, s.hdi) == (0.2, pytest.approx(0.34), (0.2, 0.3))  # 3 of 5 sorted samples: [0.2, 0.3] is narrowest
    assert histogram_mode(np.array([0.5, 0.5])) == 0.5 and np.isnan(histogram_mode(np.array([np.nan])))
    with pytest.raises(ValueError, match="level"):
        summarize_posterior(np.zeros(3), level=1.0)


@pytest.mark.parametrize("prior", [0, 0.5, 1, 2.5])
def test_any_non_negative_confusion_prior(prior):
    s = _overall(ci_prior=prior)["recall"]  # Beta(tp + prior, fn + prior)
    assert s.mean == pytest.approx((3 + prior) / (5 + 2 * prior), abs=3e-3)


def test_haldane_prior_keeps_an_empty_cell_empty():
    ev = Evaluation(label_col="y", prediction_col="p", metrics=["precision"], ci="posterior", ci_replicates=200, ci_prior=0)
    post = ev.posterior(ev.fold(ev.zero(), {"y": [1, 1, 0, 0, 1], "p": [1, 1, 0, 0, 0]}), samples=True)[()]  # fp = 0
    assert np.all(post["precision"].samples == 1.0)


def test_per_cell_confusion_prior():
    s = _overall(ci_prior=[[0.0, 2.0], [1.0, 4.0]])  # [[tn, fp], [fn, tp]]
    assert s["precision"].mean == pytest.approx((3 + 4) / (3 + 4 + 1 + 2), abs=3e-3)  # Beta(tp + 4, fp + 2)
    assert s["recall"].mean == pytest.approx((3 + 4) / (3 + 4 + 2 + 1), abs=3e-3)  # Beta(tp + 4, fn + 1)
    with pytest.raises(ValueError, match=r"ci_prior has shape \(3,\); the binary_confusion state needs \(2, 2\)"):
        _overall(ci_prior=[1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="ci_prior must be a non-negative number"):
        Evaluation(label_col="y", prediction_col="p", ci="posterior", ci_prior=-0.5)


def test_prevalence_prior_separately():
    s = _overall(ci_prior=0.5, ci_prevalence_prior=[2.0, 7.0])  # prevalence ~ Beta(5 + 7, 5 + 2)
    a, b = 5 + 7, 5 + 2
    assert s["prevalence"].mean == pytest.approx(a / (a + b), abs=3e-3)
    np.testing.assert_allclose(s["prevalence"].equal_tailed, stats.beta.ppf([0.025, 0.975], a, b), atol=5e-3)
    assert s["recall"].mean == pytest.approx((3 + 0.5) / (5 + 1), abs=3e-3)  # the rows keep the confusion prior
    # None: one Dirichlet over the cells, the prevalence Beta(5 + 2 * 0.5, 5 + 2 * 0.5)
    assert _overall(ci_prior=0.5)["prevalence"].mean == pytest.approx(0.5, abs=3e-3)


def test_prob_conf_mat_default_differs_on_an_empty_cell():
    """The default (0.5 per cell) against prob_conf_mat's Haldane priors (0 and 0) on the matrix
    [[tn, fp], [fn, tp]] = [[20, 0], [5, 15]]: precision's interval moves by 0.15 (docs/intervals.md)."""
    data = {"y": [0] * 20 + [1] * 20, "p": [0] * 20 + [0] * 5 + [1] * 15}

    def lower(**ci):
        ev = Evaluation(label_col="y", prediction_col="p", metrics=["precision"], ci="posterior", ci_replicates=20_000, **ci)
        return ev.posterior(ev.fold(ev.zero(), data))[()]["precision"].equal_tailed[0]

    ours, haldane = lower(), lower(ci_prior=0, ci_prevalence_prior=0)
    assert haldane == 1.0  # Haldane: fp stays 0, precision is 1 in every sample
    assert ours == pytest.approx(stats.beta.ppf(0.025, 15.5, 0.5), abs=0.005)  # Beta(tp + 0.5, fp + 0.5)
    assert 0.14 < haldane - ours < 0.16


def test_posterior_leaves_out_the_complementary_suppressed_slices_as_finish_does():
    """g=b (2 rows) is below min_slice_size=3; g=a (4 rows) is published by neither finish() nor
    posterior(): with the overall slice it would give g=b's counts back by subtraction."""
    from mergeable_metrics import aggregate

    ev = Evaluation(label_col="y", prediction_col="p", slices=["g"], metrics=["precision", "accuracy"], ci="posterior", ci_replicates=300, min_slice_size=3)
    acc = ev.fold(ev.zero(), {"y": [1, 1, 0, 0, 1, 0], "p": [1, 0, 0, 1, 1, 1], "g": list("aaaabb")})
    published = {s.slice for s in ev.finish(acc).slices if not s.suppressed}
    assert published == {()}
    assert set(ev.posterior(acc)) == published
    assert {s.slice for s in aggregate([acc, acc], "random_effects", evaluation=ev).slices} == published
