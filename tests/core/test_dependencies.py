"""Metric-on-metric dependencies (issue 13, "Registry features"): a metric declares
``dependencies`` and receives their values, each computed once from the shared states.

References: scikit-learn's ``fowlkes_mallows_score`` over the pairs of two clusterings (where
the pair indicators are a binary classification problem), ``sqrt(precision * recall)`` from
scikit-learn, and hand-computed counts."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from sklearn.metrics import fowlkes_mallows_score, precision_score, recall_score, roc_auc_score

from mergeable_metrics import Evaluation, Metric, MetricCollection
from mergeable_metrics.engine import Plan
from mergeable_metrics.metrics import Task, resolve

pytestmark = pytest.mark.filterwarnings("ignore::mergeable_metrics.UndefinedMetricWarning")


def test_fowlkes_mallows_equals_sklearn_on_the_pairs_of_two_clusterings():
    rng = np.random.default_rng(0)
    true_clusters, pred_clusters = rng.integers(0, 3, 60), rng.integers(0, 4, 60)
    pairs = list(itertools.combinations(range(60), 2))
    same_true = np.array([true_clusters[i] == true_clusters[j] for i, j in pairs], dtype=int)
    same_pred = np.array([pred_clusters[i] == pred_clusters[j] for i, j in pairs], dtype=int)
    mc = MetricCollection("fowlkes_mallows")
    mc.update(same_true[:500], y_pred=same_pred[:500])
    other = MetricCollection("fowlkes_mallows")
    other.update(same_true[500:], y_pred=same_pred[500:])
    value = mc.merge(other).compute()["fowlkes_mallows"]
    assert value == pytest.approx(fowlkes_mallows_score(true_clusters, pred_clusters), rel=1e-12)


def test_fowlkes_mallows_at_a_threshold_reads_its_dependencies_at_that_threshold():
    rng = np.random.default_rng(1)
    y, s = rng.integers(0, 2, 400), rng.random(400)
    mc = MetricCollection("fmi@threshold=0.7", "precision", "fowlkes_mallows")
    mc.update(y, y_score=s)
    r = mc.compute()
    p7, r7 = precision_score(y, s >= 0.7), recall_score(y, s >= 0.7)
    assert r["fowlkes_mallows@threshold=0.7"] == pytest.approx(math.sqrt(p7 * r7), rel=1e-12)
    assert r["fowlkes_mallows"] == pytest.approx(math.sqrt(precision_score(y, s >= 0.5) * recall_score(y, s >= 0.5)), rel=1e-12)
    assert [cls.kind for cls, _ in mc.plan.state_types] == ["example_count", "binary_confusion"]  # one shared state
    assert mc.plan.keys == ("fowlkes_mallows@threshold=0.7", "precision", "fowlkes_mallows")  # dependencies stay hidden
    # hand-computed: tp=1, fp=1, fn=3 -> sqrt(1/2 * 1/4); no positives predicted -> NaN (listed undefined)
    hand = MetricCollection("fowlkes_mallows")
    hand.update([1, 1, 1, 1, 0, 0], y_pred=[1, 0, 0, 0, 1, 0])
    assert hand.compute()["fowlkes_mallows"] == pytest.approx(math.sqrt(0.5 * 0.25))
    ev = Evaluation(label_col="y", prediction_col="p", metrics=["fowlkes_mallows"])
    res = ev.evaluate({"y": [1, 0], "p": [0, 0]})
    assert math.isnan(res.overall.metrics["fowlkes_mallows"]) and res.overall.undefined == [{"metric": "fowlkes_mallows"}]


def test_each_dependency_is_computed_once_and_its_states_join_the_plan(registry_snapshot):
    calls = []

    class CountedAuc(Metric):
        """ROC AUC, counting its computations (test only)."""

        name = "counted_auc_for_test"
        tasks = ("binary",)

        def requires(self):
            return resolve("roc_auc", self.task).requires()

        def needs(self):
            return frozenset({"target", "score"})

        def compute(self, states):
            calls.append(1)
            return resolve("roc_auc", self.task).compute(states)

    class AucGini(Metric):
        """2 AUC - 1 from a dependency (test only)."""

        name = "auc_gini_for_test"
        tasks = ("binary",)
        bounds = (-1.0, 1.0)
        dependencies = ("counted_auc_for_test",)

        def compute_from(self, values):
            return 2 * values["counted_auc_for_test"] - 1

    class Twice(Metric):
        """A dependency of a dependency (test only)."""

        name = "twice_gini_for_test"
        tasks = ("binary",)
        bounds = (-2.0, 2.0)
        dependencies = ("auc_gini_for_test", "counted_auc_for_test")

        def compute_from(self, values):
            return 2 * values["auc_gini_for_test"] + 0 * values["counted_auc_for_test"]

    y, s = [0, 0, 1, 1, 0, 1], [0.1, 0.4, 0.35, 0.8, 0.2, 0.9]
    mc = MetricCollection("counted_auc_for_test", "auc_gini_for_test", "twice_gini_for_test")
    assert "score_distribution" in [cls.kind for cls, _ in mc.plan.state_types]
    mc.update(y, y_score=s)
    r = mc.compute()
    auc = roc_auc_score(y, s)
    assert r == pytest.approx({"counted_auc_for_test": auc, "auc_gini_for_test": 2 * auc - 1, "twice_gini_for_test": 4 * auc - 2})
    assert len(calls) == 1
    alone = MetricCollection("twice_gini_for_test")  # not requested itself: still computed, hidden
    assert alone.plan.needs == frozenset({"target", "score"})
    alone.update(y, y_score=s)
    assert alone.compute() == pytest.approx({"twice_gini_for_test": 4 * auc - 2})
    # outside a plan the metric computes its dependencies itself
    states = {st.kind: st for st in alone.states}
    assert resolve("auc_gini_for_test", Task()).compute(states) == pytest.approx(2 * auc - 1)


def test_dependency_cycles_and_unknown_dependencies_raise(registry_snapshot):
    class A(Metric):
        """cycle a (test only)."""

        name = "cycle_a_for_test"
        dependencies = ("cycle_b_for_test",)

        def compute_from(self, values):  # (a class with no computation fails at definition)
            return 0.0

    class B(Metric):
        """cycle b (test only)."""

        name = "cycle_b_for_test"
        dependencies = ("cycle_a_for_test",)

        def compute_from(self, values):  # (a class with no computation fails at definition)
            return 0.0

    class C(Metric):
        """unknown dependency (test only)."""

        name = "unknown_dep_for_test"
        dependencies = ("no_such_metric",)

        def compute_from(self, values):  # (a class with no computation fails at definition)
            return 0.0

    with pytest.raises(ValueError, match="metric dependency cycle: cycle_a_for_test -> cycle_b_for_test -> cycle_a_for_test"):
        Plan(["cycle_a_for_test"], Task())
    with pytest.raises(ValueError, match="unknown metric 'no_such_metric'"):
        Plan(["unknown_dep_for_test"], Task())


def test_compute_many_and_cells_give_compute_detailed_values_for_dependencies():
    rng = np.random.default_rng(3)
    plan = Plan(["fowlkes_mallows", "fmi@threshold=0.7", "recall"], Task())
    states_list = []
    for n in (0, 1, 50, 300):  # an empty slice too
        y, s = rng.integers(0, 2, n), rng.random(n)
        mc = MetricCollection(task=plan.task)
        mc.plan = plan
        mc.states = plan.zero()
        if n:
            mc.update(y, y_score=s)
        states_list.append(mc.states)
    many = plan.compute_many(states_list)
    for i, states in enumerate(states_list):
        want = plan.compute_detailed(states)
        got = many.element(i)
        assert got[2] == want[2]
        for k, v in want[0].items():
            assert (math.isnan(v) and math.isnan(got[0][k])) or got[0][k] == v, k
    # cells (e.g. posterior samples of the counts): the dependencies are computed from them too
    plan2 = Plan(["fowlkes_mallows", "precision", "recall"], Task())
    cm = rng.random((5, 4)) * 10  # [tn, fp, fn, tp] per element
    out = plan2.compute_cells({"example_count": cm.sum(axis=1, keepdims=True), "binary_confusion": cm})
    tp, fp, fn = cm[:, 3], cm[:, 1], cm[:, 2]
    np.testing.assert_allclose(out.values["fowlkes_mallows"].astype(float), np.sqrt(tp / (tp + fp) * tp / (tp + fn)), rtol=1e-12)


# -- intervals of a metric with dependencies (issue 28, item 6) ---------------------------------
def _define_gmean():
    """The ``GMean`` of docs/add_a_metric.md, section 5, as written there."""
    from mergeable_metrics import REGISTRY

    REGISTRY.pop("g_mean", None)  # the docs' doctest may have registered it in this process

    class GMean(Metric):
        """Geometric mean of recall (sensitivity) and specificity, ``sqrt(tpr * tnr)``; NaN when
        either is undefined. Reference: ``imblearn.metrics.geometric_mean_score`` (binary)."""

        name = "g_mean"
        full_name = "Geometric mean of recall and specificity"
        params = {"threshold": None}
        tasks = ("binary",)
        reference = "imblearn.metrics.geometric_mean_score"
        dependencies = ("recall", "specificity")  # metric strings, resolved for the task

        def compute_from(self, values):  # {"recall": ..., "specificity": ...}
            r, s = values["recall"], values["specificity"]
            return math.sqrt(r * s) if r == r and s == s else float("nan")

    return GMean


def _gmean_data(n: int = 400, seed: int = 11) -> dict:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    s = np.clip(0.35 * y + 0.65 * rng.random(n), 0.0, 1.0)
    return {"y": y, "s": s, "g": rng.choice(["a", "b"], n), "id": rng.permutation(5 * n)[:n]}


def _gmean_of_counts(tp, fp, tn, fn):
    """g-mean of (R,) weighted counts, numpy only: sqrt(tp / (tp + fn) * tn / (tn + fp))."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.sqrt(tp / (tp + fn) * (tn / (tn + fp)))


@pytest.mark.parametrize("slot_form", [False, True])
def test_gmean_of_the_docs_gets_a_bootstrap_interval_equal_to_a_numpy_row_weighted_bootstrap(registry_snapshot, slot_form):
    """ci="bootstrap" crashed with KeyError 'binary_confusion' (the metric's own requires() did
    not name its dependencies' states). Reference: the same Poisson weights per hash bucket of
    each row's id, applied to the rows with numpy, g-mean of each replicate, numpy's quantiles.
    ``slot_form``: with ``mean_measure`` (no bucket-stacked state) every bucket is a slot."""
    from mergeable_metrics.inputs.validation import Batch
    from mergeable_metrics.uncertainty.bootstrap import element_buckets, replicate_weights

    _define_gmean()
    d, R, B = _gmean_data(), 300, 32
    extra = {"measure_col": "m", "metrics": ["g_mean", "mean_measure"]} if slot_form else {"metrics": ["g_mean"]}
    ev = Evaluation(label_col="y", score_col="s", id_col="id", slices=["g"], ci="bootstrap", ci_replicates=R, ci_buckets=B, **extra)
    assert ev.plan.stacked is not slot_form
    res = ev.evaluate({**d, "m": d["s"] * 2})
    buckets = element_buckets(B, Batch(y_true=d["y"], y_score=d["s"]), len(d["y"]), None, ids=d["id"], id_col="id")
    w = replicate_weights(0, R, B)[:, buckets].astype(float)  # (R, n) each row's weight per replicate
    pred = d["s"] >= 0.5
    for key, rows in [((), np.ones(len(d["y"]), bool)), ((("g", "a"),), d["g"] == "a"), ((("g", "b"),), d["g"] == "b")]:
        y, p = d["y"][rows] == 1, pred[rows]
        wr = w[:, rows]
        reps = _gmean_of_counts(wr @ (y & p), wr @ (~y & p), wr @ (~y & ~p), wr @ (y & ~p))
        want = np.nanquantile(reps, [0.025, 0.975])
        got = res[key].ci["g_mean"]
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
        assert got[0] <= res[key].metrics["g_mean"] <= got[1]
    assert res.config["ci"]["unsupported"] == []
    if slot_form:
        reps = (w @ (d["s"] * 2)) / w.sum(axis=1)
        np.testing.assert_allclose(res.overall.ci["mean_measure"], np.nanquantile(reps, [0.025, 0.975]), rtol=1e-12)


def test_gmean_of_the_docs_gets_a_posterior_interval_from_the_same_draws_as_its_dependencies(registry_snapshot):
    """ci="posterior" listed the GMean as unsupported (no interval, silently). Reference: the
    Dirichlet draws of the slice's cells [tn, fp, fn, tp] (counted with numpy), g-mean of each
    draw, numpy's median-unbiased quantiles; recall's interval from the same draws."""
    from mergeable_metrics.uncertainty.intervals import draw_seed

    _define_gmean()
    d, R = _gmean_data(), 400
    ev = Evaluation(label_col="y", score_col="s", slices=["g"], metrics=["g_mean", "recall"], ci="posterior", ci_replicates=R)
    res = ev.evaluate(d)
    assert res.config["ci"]["unsupported"] == []
    pred = d["s"] >= 0.5
    for key, rows in [((), np.ones(len(d["y"]), bool)), ((("g", "b"),), d["g"] == "b")]:
        y, p = d["y"][rows] == 1, pred[rows]
        cells = np.array([(~y & ~p).sum(), (~y & p).sum(), (y & ~p).sum(), (y & p).sum()], float)
        g = draw_seed(0, key, "binary_confusion").standard_gamma(np.broadcast_to(cells + 0.5, (R, 4)))
        draws = g / g.sum(axis=1, keepdims=True) * cells.sum()
        tn, fp, fn, tp = draws.T
        want = np.quantile(_gmean_of_counts(tp, fp, tn, fn), [0.025, 0.975], method="median_unbiased")
        np.testing.assert_allclose(res[key].ci["g_mean"], want, rtol=1e-12)
        np.testing.assert_allclose(res[key].ci["recall"], np.quantile(tp / (tp + fn), [0.025, 0.975], method="median_unbiased"), rtol=1e-12)


def test_gmean_of_the_docs_under_analytic_is_refused_by_name(registry_snapshot):
    """No closed form: no interval, listed as unsupported and named in the table's last line."""
    _define_gmean()
    ev = Evaluation(label_col="y", score_col="s", metrics=["g_mean", "recall"], ci="analytic")
    res = ev.evaluate(_gmean_data())
    assert "g_mean" not in res.overall.ci and "recall" in res.overall.ci
    assert res.config["ci"]["method"] == "analytic" and res.config["ci"]["unsupported"] == ["g_mean"]
    assert "no interval for g_mean" in res.format_table()
