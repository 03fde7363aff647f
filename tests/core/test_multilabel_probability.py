"""Multilabel log loss and Brier score (issue 17) as scikit-learn reads (N, L) indicator targets:
per row ``-sum_j y_j ln(clip(p_j))`` and ``sum_j (y_j - p_j)^2`` (halved for L = 2), the binary
formulas for L = 1. Parity (weighted, eps, per slice), merge laws, validation, empty input."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import brier_score_loss, log_loss

from mergeable_metrics import Evaluation, MetricCollection
from mergeable_metrics.engine import Plan
from mergeable_metrics.metrics import Task
from mergeable_metrics.inputs.validation import Batch
from mergeable_metrics.states.base import State
from tests._helpers import fold_plan_sharded

pytestmark = [pytest.mark.filterwarnings("ignore::mergeable_metrics.metrics.base.UndefinedMetricWarning"), pytest.mark.filterwarnings("ignore::UserWarning")]

METRICS = ["log_loss", "log_loss@eps=0.01", "brier_score"]


def _data(seed: int, n: int = 200, L: int = 3, weighted: bool = False):
    rng = np.random.default_rng(seed)
    Y = (rng.random((n, L)) < 0.4).astype(np.int64)
    P = np.round(rng.random((n, L)), 2)
    P[:4] = [0.0] * L  # clipped at eps: the positive labels' terms are ln(eps)
    P[4:7] = [1.0] * L
    w = rng.choice([0.0, 1.0, 2.5, 0.3], n) if weighted else None
    return Y, P, w


def _sklearn(metric: str, Y, P, w):
    y, p = (Y[:, 0], P[:, 0]) if Y.shape[1] == 1 else (Y, P)  # scikit-learn reads one column as binary
    if metric == "brier_score":
        return brier_score_loss(y, p, sample_weight=w)
    eps = float(metric.split("=")[1]) if "=" in metric else "auto"
    if eps == "auto":
        return log_loss(y, p, sample_weight=w)
    # scikit-learn >= 1.5 has no eps argument: clip as it does, with this eps
    return log_loss(y, np.clip(p, eps, 1 - eps), sample_weight=w)


@pytest.mark.parametrize("seed,L,weighted", [(0, 3, False), (1, 2, True), (2, 5, True), (3, 1, False), (4, 1, True), (5, 4, False)])
def test_sklearn_parity(seed, L, weighted):
    Y, P, w = _data(seed, L=L, weighted=weighted)
    mc = MetricCollection(*METRICS, task="multilabel", num_classes=L)
    for part in np.array_split(np.arange(len(Y)), 4):
        mc.update(Y[part], y_score=P[part], sample_weight=None if w is None else w[part])
    got = mc.compute()
    for m in METRICS:
        # exact sums of the (row, label) terms, rounded once; scikit-learn sums rows in float
        assert got[m] == pytest.approx(_sklearn(m, Y, P, w), rel=1e-13, abs=0), m


def test_by_hand():
    # row 0: y = (1, 0, 1), p = (.5, .9, .25): log loss -ln .5 - ln .25 (the negative's .9 is ignored),
    #        Brier .25 + .81 + .5625; row 1: y = (0, 0, 0): log loss 0, Brier .01 + .04 + 0
    Y = np.array([[1, 0, 1], [0, 0, 0]])
    P = np.array([[0.5, 0.9, 0.25], [0.1, 0.2, 0.0]])
    mc = MetricCollection(*METRICS, task="multilabel", num_classes=3)
    mc.update(Y, y_score=P, sample_weight=[3.0, 1.0])
    got = mc.compute()
    assert got["log_loss"] == pytest.approx(3 * (math.log(2) + math.log(4)) / 4, rel=1e-15)
    assert got["brier_score"] == pytest.approx((3 * (0.25 + 0.81 + 0.0625 + 0.5625 - 0.0625) + 0.05) / 4, rel=1e-15)


def test_per_slice_parity():
    Y, P, w = _data(6, n=300, L=3, weighted=True)
    g = np.random.default_rng(9).choice(["a", "b"], len(Y))
    rows = [{"y": Y[i].tolist(), "p": P[i].tolist(), "w": float(w[i]), "g": str(g[i])} for i in range(len(Y))]
    ev = Evaluation(label_col="y", score_col="p", weight_col="w", task="multilabel", num_classes=3, slices=["g"], metrics=METRICS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = ev.evaluate([rows[:120], rows[120:]])
    assert len(res.slices) == 3
    for sl in res.slices:
        keep = np.ones(len(Y), bool) if sl.slice == () else g == dict(sl.slice)["g"]
        for m in METRICS:
            assert sl.metrics[m] == pytest.approx(_sklearn(m, Y[keep], P[keep], w[keep]), rel=1e-13, abs=0), (sl.slice, m)


@settings(max_examples=40, deadline=None)
@given(
    rows=st.lists(st.tuples(st.integers(0, 1), st.integers(0, 1), st.integers(0, 10), st.integers(0, 10), st.sampled_from([0.0, 1.0, 0.1, 2.5])), max_size=40),
    seed=st.integers(0, 2**32 - 1),
)
def test_merge_order_and_split_never_change_the_state(rows, seed):
    rng = np.random.default_rng(seed)
    Y = np.array([r[:2] for r in rows], dtype=np.int64).reshape(-1, 2)
    P = np.array([[r[2] / 10, r[3] / 10] for r in rows], dtype=float).reshape(-1, 2)
    w = np.array([r[4] for r in rows], dtype=float)
    plan = Plan(["log_loss", "log_loss@eps=0.001", "brier_score"], Task(num_classes=2, kind="multilabel"))
    batch = Batch(y_true=Y, y_score=P, sample_weight=w)
    whole = plan.fold(plan.zero(), batch)
    assert fold_plan_sharded(plan, batch, rng) == whole
    for s in whole:
        assert State.decode(s.encode()) == s


def test_validation_and_empty():
    mc = MetricCollection("log_loss", task="multilabel", num_classes=2)
    with pytest.raises(ValueError, match=r"probabilities must be in \[0, 1\]"):
        mc.update(np.array([[1, 0], [0, 1]]), y_score=np.array([[0.5, 0.5], [0.2, 1.5]]))
    mc.update(np.array([[1, 0]]), y_score=np.array([[0.7, 0.9]]))  # rows need not sum to 1
    assert mc.compute()["log_loss"] == pytest.approx(-math.log(0.7), rel=1e-15)
    empty = MetricCollection(*METRICS, task="multilabel", num_classes=3).compute()
    assert all(math.isnan(empty[m]) for m in METRICS)

    def sums(task):
        return next(s for s in Plan(["brier_score"], task).zero() if s.kind == "probability_sums")

    with pytest.raises(ValueError, match="multilabel"):  # a multiclass K = 2 state is not this one
        sums(Task(num_classes=2, kind="multilabel")).merge(sums(Task(num_classes=2, multiclass=True)))


def test_bootstrap_interval_of_multilabel_log_loss_and_brier_is_batching_independent():
    """ci="bootstrap" folds the multilabel probability sums per bucket (the stacked form): the
    interval holds the point value and is the same for any batching."""
    from mergeable_metrics import Evaluation

    rng = np.random.default_rng(0)
    Y, P, g = rng.integers(0, 2, (300, 3)), rng.random((300, 3)), rng.choice(["a", "b"], 300)
    ev = Evaluation(label_col="y", score_col="p", task="multilabel", num_classes=3, slices=["g"], metrics=["log_loss", "brier_score"],
                    ci="bootstrap", ci_replicates=50)  # fmt: skip
    one = ev.evaluate({"y": list(Y), "p": list(P), "g": g})
    split = ev.evaluate([{"y": list(Y[a:b]), "p": list(P[a:b]), "g": g[a:b]} for a, b in [(0, 0), (0, 97), (97, 300)]])
    for key in ("log_loss", "brier_score"):
        lo, hi = one.overall.ci[key]
        assert lo < one.overall.metrics[key] < hi
        assert split.overall.ci[key] == one.overall.ci[key] and split[(("g", "a"),)].ci[key] == one[(("g", "a"),)].ci[key]
