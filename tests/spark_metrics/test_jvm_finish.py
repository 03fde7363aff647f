"""The JVM finish (mergeablemetrics.Finish, plain javac, no Spark): each count-based metric's value from the
states' bytes equals core's value bit for bit (weighted, non-integer sums included; zero_division cases)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import f1_score

from mergeable_metrics import Evaluation
from mergeable_metrics.spark.jvm_finish import metric_finish
from tests.spark_metrics import jvm_fold

pytestmark = pytest.mark.filterwarnings("ignore::mergeable_metrics.metrics.base.UndefinedMetricWarning")

BINARY = ["precision", "recall", "f1", "fbeta@beta=0.5", "fbeta@beta=inf", "accuracy", "balanced_accuracy", "balanced_accuracy@adjusted=true"]
BINARY += ["specificity", "npv", "fpr", "fnr", "f1@macro", "precision@weighted", "recall@micro", "example_count"]
MULTI = ["f1@macro", "f1@weighted", "f1@micro", "precision@macro", "recall@weighted", "fbeta@macro@beta=2.5", "accuracy", "balanced_accuracy"]


def _bits(x: float) -> int:
    return int(np.float64(x).view(np.uint64))


@settings(max_examples=25, deadline=None)
@given(
    k=st.integers(2, 12),
    n=st.integers(0, 80),
    weighted=st.booleans(),
    zero_division=st.sampled_from(["nan", "warn", 0, 1]),
    seed=st.integers(0, 2**32 - 1),
)
def test_finish_in_java_is_core_bit_for_bit(k, n, weighted, zero_division, seed):
    rng = np.random.default_rng(seed)
    binary = k == 2 and rng.random() < 0.7
    y = rng.integers(0, min(k, int(rng.integers(1, k + 1))) if not binary else 2, n)  # some classes absent
    data = {"y": y}
    if binary:
        data["p"] = rng.choice([0.0, 0.5, 0.25, 0.9, 1.0], n)
        args = dict(label_col="y", score_col="p", metrics=BINARY)
    else:
        data["q"] = rng.integers(0, k, n)
        args = dict(label_col="y", prediction_col="q", num_classes=k, metrics=MULTI)
    if weighted:  # non-integer sums: the order of every addition matters
        data["w"] = rng.choice([0.0, 0.1, 1 / 3, 2.5, 1e-3, 7.0], n)
        args["weight_col"] = "w"
        if binary:
            args["metrics"] = [m for m in BINARY if m != "example_count"]
    ev = Evaluation(zero_division=zero_division, **args)
    states = ev.fold(ev.zero(), data).states(())
    packed = b"".join(len(b).to_bytes(4, "little") + b for b in (s.encode() for s in states))
    want = ev.finish({(): states}, add_overall=False)[()].metrics
    descs = {m.key: metric_finish(ev, m) for m in ev.plan.metrics}
    assert all(d is not None for d in descs.values()), descs
    got = jvm_fold.finish([(d, packed) for d in descs.values()])
    for key, value in zip(descs, got):
        assert _bits(value) == _bits(float(want[key])), (key, value, want[key])
    if n == 0:  # a group without rows (Spark Connect's UDAF gives null): the zero states' values
        empty = jvm_fold.finish([(d, None) for d in descs.values()])
        for key, value in zip(descs, empty):
            assert _bits(value) == _bits(float(want[key])), (key, value, want[key])


def test_finish_matches_sklearn_by_hand():
    y = np.array([0, 1, 2, 2, 1, 0, 2])
    q = np.array([0, 2, 2, 1, 1, 0, 0])
    ev = Evaluation(label_col="y", prediction_col="q", num_classes=3, metrics=["f1@macro", "f1@weighted"])
    states = ev.fold(ev.zero(), {"y": y, "q": q}).states(())
    packed = b"".join(len(b).to_bytes(4, "little") + b for b in (s.encode() for s in states))
    got = jvm_fold.finish([(metric_finish(ev, m), packed) for m in ev.plan.metrics])
    assert got[0] == pytest.approx(f1_score(y, q, average="macro"), rel=1e-15)
    assert got[1] == pytest.approx(f1_score(y, q, average="weighted"), rel=1e-15)


def test_not_ported_metrics_say_so():
    ev = Evaluation(label_col="y", score_col="p", metrics=["gini", "mcc", "f1@threshold=0.3", "roc_auc"])
    descs = {m.key: metric_finish(ev, m) for m in ev.plan.metrics}
    assert descs["gini"] is None and descs["mcc"] is None and descs["f1@threshold=0.3"] is not None and descs["roc_auc"] is not None
