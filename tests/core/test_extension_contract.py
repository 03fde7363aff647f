"""prob_conf_mat's extension contract (issue 29, item 4): ``is_multiclass``, ``sklearn_equivalent``,
``compute_metric`` against ``dependencies``, the ``name+foo=True`` syntax, averaging methods with
``dependencies`` over every binary-only metric (``fmi@two``). References: scikit-learn."""

from __future__ import annotations

import math

import numpy as np
import pytest
import sklearn.metrics as skm

from mergeable_metrics import MetricCollection
from mergeable_metrics.metrics.base import AVERAGINGS, REGISTRY, Averaging, Metric, Task, resolve

Y = [0, 1, 2, 2, 1, 0, 2, 1, 0, 2]
P = [0, 1, 2, 1, 1, 2, 2, 0, 0, 2]


@pytest.fixture
def registered():
    """Names registered by a test, removed afterwards."""
    before = (set(REGISTRY), set(AVERAGINGS))
    yield
    for n in set(REGISTRY) - before[0]:
        REGISTRY.pop(n)
    for n in set(AVERAGINGS) - before[1]:
        AVERAGINGS.pop(n)


def _fmi_per_class(y, p):
    return np.sqrt(skm.precision_score(y, p, average=None, zero_division=np.nan) * skm.recall_score(y, p, average=None, zero_division=np.nan))


def test_binary_only_metric_per_class_on_multiclass():
    mc = MetricCollection("fmi@none", "fmi@macro", "specificity@weighted", num_classes=3)
    mc.update(Y, y_pred=P)
    out = mc.compute()
    ref = _fmi_per_class(Y, P)
    np.testing.assert_allclose(out["fowlkes_mallows@none"], ref, rtol=1e-12)
    assert out["fowlkes_mallows@macro"] == pytest.approx(ref.mean(), rel=1e-12)
    cm = skm.confusion_matrix(Y, P)
    spec = [(cm.sum() - cm[c].sum() - cm[:, c].sum() + cm[c, c]) / (cm.sum() - cm[c].sum()) for c in range(3)]
    assert out["specificity@weighted"] == pytest.approx(np.average(spec, weights=cm.sum(axis=1)), rel=1e-12)


def test_binary_only_metric_refused_on_multiclass_without_average():
    with pytest.raises(ValueError, match=r"not defined for multiclass tasks \(binary only, is_multiclass=False\).*'fowlkes_mallows@none'"):
        MetricCollection("fmi", num_classes=3)


def test_registered_averaging_with_dependencies_applies_to_fmi(registered):
    class Take2ndClass(Averaging):  # prob_conf_mat's guide, verbatim names
        full_name = "Takes 2nd Class Value"
        dependencies = ()
        sklearn_equivalent = "binary, with positive_class=1"
        name = "two"
        aliases = ("2nd_class",)

        def compute_average(self, metric_values):
            return metric_values[:, 1]

    class PrecisionWeighted(Averaging):
        name = "precision_weighted"
        dependencies = ("precision@none",)

        def reduce(self, values, support, **deps):
            w = deps["precision@none"]
            return float(np.sum(values * w) / np.sum(w))

    mc = MetricCollection("fmi@two", "recall@2nd_class", "fmi@precision_weighted", num_classes=3)
    mc.update(Y, y_pred=P)
    out = mc.compute()
    ref = _fmi_per_class(Y, P)
    assert out["fowlkes_mallows@two"] == pytest.approx(ref[1], rel=1e-12)
    assert out["recall@two"] == pytest.approx(skm.recall_score(Y, P, average=None)[1], rel=1e-12)
    w = skm.precision_score(Y, P, average=None)
    assert out["fowlkes_mallows@precision_weighted"] == pytest.approx(np.sum(ref * w) / np.sum(w), rel=1e-12)
    # a binary task: the two classes one against the other
    yb, pb = [0, 1, 1, 0, 1, 1], [0, 1, 0, 1, 1, 1]
    mc = MetricCollection("fmi@two", "fmi@none")
    mc.update(yb, y_pred=pb)
    np.testing.assert_allclose(mc.compute()["fowlkes_mallows@none"], _fmi_per_class(yb, pb), rtol=1e-12)
    assert mc.compute()["fowlkes_mallows@two"] == pytest.approx(math.sqrt(skm.precision_score(yb, pb) * skm.recall_score(yb, pb)), rel=1e-12)


def test_averaging_without_computation_fails_at_definition(registered):
    with pytest.raises(TypeError, match="defines no computation"):

        class Nothing(Averaging):
            name = "nothing_avg"


def test_prob_conf_mat_metric_class_verbatim(registered):
    class FowlkesMallowsPCM(Metric):
        full_name = "Fowlkes Mallows Index"
        is_multiclass = False
        bounds = (0.0, 1.0)
        dependencies = ("ppv", "tpr")
        sklearn_equivalent = "fowlkes_mallows_index"
        aliases = ("fm_pcm",)
        name = "fowlkes_mallows_pcm"
        params = {"threshold": None}

        def compute_metric(self, ppv, tpr):
            return np.sqrt(ppv * tpr)

    assert FowlkesMallowsPCM.tasks == ("binary",) and FowlkesMallowsPCM.sklearn == "fowlkes_mallows_index"
    yb, pb = [0, 1, 1, 0, 1, 1], [0, 1, 0, 1, 1, 1]
    mc = MetricCollection("fm_pcm", "fm_pcm@macro")
    mc.update(yb, y_pred=pb)
    assert mc.compute()["fowlkes_mallows_pcm"] == pytest.approx(math.sqrt(skm.precision_score(yb, pb) * skm.recall_score(yb, pb)), rel=1e-12)
    assert mc.compute()["fowlkes_mallows_pcm@macro"] == pytest.approx(_fmi_per_class(yb, pb).mean(), rel=1e-12)
    with pytest.raises(ValueError, match="binary only"):
        resolve("fm_pcm", Task(num_classes=3))


def test_compute_metric_arguments_must_match_dependencies(registered):
    with pytest.raises(ValueError, match=r"missing \['tpr'\].*not dependencies \['recall'\]"):

        class Bad(Metric):
            name = "bad_fm"
            dependencies = ("ppv", "tpr")

            def compute_metric(self, ppv, recall):
                return ppv * recall

    assert "bad_fm" not in REGISTRY
    with pytest.raises(TypeError):

        class Empty(Metric):
            name = "bad_fm"

    assert "bad_fm" not in REGISTRY


def test_metric_without_computation_fails_at_definition(registered):
    with pytest.raises(TypeError, match=r"Empty \('empty_metric'\) defines no computation"):

        class Empty(Metric):
            name = "empty_metric"

    with pytest.raises(TypeError, match=r"compute_from\(values\) or compute_metric"):

        class DepsOnly(Metric):
            name = "deps_only"
            dependencies = ("precision",)


def test_is_multiclass_contradicting_tasks_fails(registered):
    with pytest.raises(ValueError, match="is_multiclass=True contradicts tasks"):

        class Contra(Metric):
            name = "contra"
            is_multiclass = True
            tasks = ("binary",)

            def compute(self, states):
                return 0.0


def test_builtin_is_multiclass_and_sklearn_equivalent_read():
    assert REGISTRY["fmi"].is_multiclass is False and REGISTRY["f1"].is_multiclass is True
    assert all(c.sklearn_equivalent == c.sklearn for c in REGISTRY.values())


# the registry's sklearn_equivalent drives this parity test: every binary label metric that names a
# scikit-learn function of (y_true, y_pred) is computed and compared with that function
_LABEL_FUNCTIONS = {
    "sklearn.metrics.accuracy_score",
    "sklearn.metrics.balanced_accuracy_score",
    "sklearn.metrics.cohen_kappa_score",
    "sklearn.metrics.f1_score",
    "sklearn.metrics.hamming_loss",
    "sklearn.metrics.jaccard_score",
    "sklearn.metrics.matthews_corrcoef",
    "sklearn.metrics.precision_score",
    "sklearn.metrics.recall_score",
}


def _parity_cases():
    seen = set()
    for cls in REGISTRY.values():
        if cls.sklearn_equivalent in _LABEL_FUNCTIONS and "binary" in cls.tasks and cls.name not in seen:
            seen.add(cls.name)
            yield pytest.param(cls.name, cls.sklearn_equivalent, id=cls.name)


@pytest.mark.parametrize("name,function", list(_parity_cases()))
def test_sklearn_equivalent_parity(name, function):
    rng = np.random.default_rng(7)
    y, p = rng.integers(0, 2, 200), rng.integers(0, 2, 200)
    mc = MetricCollection(name)
    mc.update(y, y_pred=p)
    ref = getattr(skm, function.rsplit(".", 1)[1])(y, p)
    assert mc.compute()[mc.plan.keys[0]] == pytest.approx(ref, rel=1e-12, abs=1e-15)


def test_plus_parameter_syntax(registered):
    class FooBar(Metric):
        name = "foobar"
        tasks = ("binary",)

        def __init__(self, task, foo: bool = False, bar: int = 1):
            super().__init__(task)
            self.foo, self.bar = foo, bar

        def compute(self, states):
            return float(self.bar) if self.foo else 0.0

    m = resolve("foobar+foo=True+bar=2", Task())
    assert (m.foo, m.bar) == (True, 2) and m.resolved_key == resolve("foobar@foo=True@bar=2", Task()).resolved_key
    a, b = resolve("fbeta+beta=2@macro", Task(num_classes=3)), resolve("fbeta@beta=2@macro", Task(num_classes=3))
    assert a.resolved_key == b.resolved_key == "fbeta@macro@beta=2"
    assert resolve("precision@threshold=1e+3", Task()).p["threshold"] == 1000.0  # a "+" inside a value stays
