"""Registered averaging methods (issue 13, "Registry features"): the built-in averages are
:class:`mergeable_metrics.metrics.base.Averaging` instances and user subclasses work in metric strings.

References: scikit-learn's per-class values (``average=None``) reduced here with scipy's
harmonic mean or by hand."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import hmean
from sklearn.metrics import f1_score, precision_score, recall_score, roc_auc_score

from mergeable_metrics import MetricCollection
from mergeable_metrics.metrics import Task, resolve
from mergeable_metrics.metrics.base import AVERAGES, AVERAGINGS, Averaging, get_averaging


@pytest.fixture
def user_averagings():
    before = dict(AVERAGINGS)

    class Harmonic(Averaging):
        """Harmonic mean of the defined per-class values."""

        name = "harmonic"
        aliases = ("hmean",)
        full_name = "Harmonic mean"

        def reduce(self, values, support):
            v = values[~np.isnan(values)]
            return float(v.size / np.sum(1.0 / v)) if v.size and np.all(v > 0) else float("nan")

    class SecondClass(Averaging):
        """The value of class 1."""

        name = "second_class"
        tasks = ("multiclass",)

        def reduce(self, values, support):
            return float(values[1])

    yield
    AVERAGINGS.clear()
    AVERAGINGS.update(before)


def _data(seed=0, n=300, k=3):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    s = rng.random((n, k)) + np.eye(k)[y] * 0.4
    return y, s / s.sum(axis=1, keepdims=True)


def test_built_in_averages_are_averaging_instances():
    for avg in AVERAGES:
        a = get_averaging(avg)
        assert isinstance(a, Averaging) and a.name == ("none" if avg is None else avg) and a.full_name
    values, support = np.array([0.5, np.nan, 1.0]), np.array([1.0, 5.0, 3.0])
    assert get_averaging("macro").reduce(values, support) == 0.75
    assert get_averaging("weighted").reduce(values, support) == pytest.approx((0.5 * 1 + 1.0 * 3) / 4)
    with pytest.raises(NotImplementedError, match="pooled"):
        get_averaging("micro").reduce(values, support)


def test_user_averagings_in_metric_strings(user_averagings):
    y, s = _data()
    pred = s.argmax(axis=1)
    mc = MetricCollection("precision@harmonic", "recall@hmean", "f1@second_class", "roc_auc@harmonic", "f1@macro", num_classes=3)
    mc.update(y, y_score=s)
    r = mc.compute()
    assert list(r) == ["precision@harmonic", "recall@harmonic", "f1@second_class", "roc_auc@harmonic", "f1@macro"]  # alias -> name
    assert r["precision@harmonic"] == pytest.approx(hmean(precision_score(y, pred, average=None)), rel=1e-12)
    assert r["recall@harmonic"] == pytest.approx(hmean(recall_score(y, pred, average=None)), rel=1e-12)
    assert r["f1@second_class"] == pytest.approx(f1_score(y, pred, average=None)[1], rel=1e-12)
    assert r["roc_auc@harmonic"] == pytest.approx(hmean(roc_auc_score(y, s, multi_class="ovr", average=None)), rel=1e-12)
    assert r["f1@macro"] == f1_score(y, pred, average="macro")  # built-ins unchanged, bit for bit


def test_user_averaging_multilabel_and_task_checks(user_averagings):
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, (200, 3))
    p = rng.integers(0, 2, (200, 3))
    mc = MetricCollection("f1@harmonic", task="multilabel", num_classes=3)
    mc.update(y, y_pred=p)
    assert mc.compute()["f1@harmonic"] == pytest.approx(hmean(f1_score(y, p, average=None)), rel=1e-12)
    with pytest.raises(ValueError, match=r"metric 'f1': average='second_class' is defined for \('multiclass',\) tasks only"):
        resolve("f1@second_class", Task())
    with pytest.raises(ValueError, match=r"average must be one of .*'harmonic'.*got 'median'"):
        resolve("f1@median", Task(num_classes=3))
    with pytest.raises(ValueError, match="or a user Averaging with multi_class='ovr'"):
        resolve("roc_auc@harmonic@multi_class=ovo", Task(num_classes=3))


def test_averaging_name_clash_raises_at_definition(user_averagings):
    with pytest.raises(ValueError, match=r"averaging name or alias 'macro' of .*Clash is already used by mergeable_metrics.metrics.base.MacroAveraging"):

        class Clash(Averaging):
            name = "macro"

    assert AVERAGINGS["macro"].__name__ == "MacroAveraging"


def test_user_averaging_through_an_evaluation_per_slice(user_averagings):
    """Evaluation.finish computes every slice at once (Plan.compute_many): user averagings there
    give the same value as one collection per slice."""
    from mergeable_metrics import Evaluation

    y, s = _data(seed=2)
    g = np.where(np.arange(y.size) % 3 == 0, "a", "b")
    ev = Evaluation(label_col="y", score_col=["s0", "s1", "s2"], num_classes=3, slices=["g"], metrics=["precision@harmonic", "f1@macro"])
    res = ev.evaluate({"y": y, "s0": s[:, 0], "s1": s[:, 1], "s2": s[:, 2], "g": g})
    for name, mask in (("g=a", g == "a"), ("g=b", g == "b")):
        pred = s[mask].argmax(axis=1)
        assert res[name].metrics["precision@harmonic"] == pytest.approx(hmean(precision_score(y[mask], pred, average=None)), rel=1e-12)
