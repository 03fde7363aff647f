"""The JVM finish of roc_auc, average_precision, log_loss and brier_score (mergeablemetrics.RankingFinish, plain
javac, no Spark): each value from the states' bytes equals core's Python finish bit for bit, on random states
(ties, weights, one class only, empty), exact and beyond the capacity; and scikit-learn's value."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import average_precision_score, brier_score_loss, log_loss, roc_auc_score

from mergeable_metrics import Evaluation
from mergeable_metrics.spark.jvm_finish import metric_finish
from tests.spark_metrics import jvm_fold

pytestmark = pytest.mark.filterwarnings("ignore::mergeable_metrics.metrics.base.UndefinedMetricWarning")

METRICS = ["roc_auc", "average_precision", "log_loss", "brier_score", "brier_score@scale_by_half=false", "log_loss@eps=0.01"]


def _bits(x: float) -> int:
    return int(np.float64(x).view(np.uint64))


def _packed(states) -> bytes:
    return b"".join(len(b).to_bytes(4, "little") + b for b in (s.encode() for s in states))


def _java_and_core(ev: Evaluation, data: dict) -> tuple[dict, dict, tuple]:
    states = ev.fold(ev.zero(), data).states(())
    result = ev.finish({(): states}, add_overall=False)[()]
    descs = {m.key: metric_finish(ev, m) for m in ev.plan.metrics}
    assert all(d is not None for d in descs.values()), descs
    got = jvm_fold.finish([(d, _packed(states)) for d in descs.values()])
    return dict(zip(descs, got)), result.metrics, states


def _data(rng, n: int, ties: int, one_class: bool, weights: str) -> dict:
    if ties:
        p = rng.integers(0, ties + 1, n) / ties  # at most ties + 1 distinct scores in [0, 1]
    else:
        p = rng.random(n)
    y = (rng.random(n) < rng.random()).astype(int)
    if one_class:
        y[:] = int(rng.integers(0, 2))
    data = {"y": y, "p": p}
    if weights == "int":
        data["w"] = rng.integers(0, 4, n).astype(float)
    elif weights == "frac":
        data["w"] = rng.choice([0.0, 0.1, 1 / 3, 2.5, 1e-3, 7.0, 1e-300, 1e10], n)
    return data


@settings(max_examples=30, deadline=None)
@given(
    n=st.integers(0, 400),
    ties=st.sampled_from([0, 1, 3, 10, 100]),
    one_class=st.booleans(),
    weights=st.sampled_from(["none", "int", "frac"]),
    capacity=st.sampled_from([None, 2, 7, 50]),
    seed=st.integers(0, 2**32 - 1),
)
def test_ranking_and_probability_finish_in_java_is_core_bit_for_bit(n, ties, one_class, weights, capacity, seed):
    rng = np.random.default_rng(seed)
    data = _data(rng, n, ties, one_class and rng.random() < 0.5, weights)
    cap = "" if capacity is None else f"@capacity={capacity}"
    metrics = [f"roc_auc{cap}", f"average_precision{cap}"] + METRICS[2:]
    ev = Evaluation(label_col="y", score_col="p", metrics=metrics, weight_col="w" if "w" in data else None)
    got, want, states = _java_and_core(ev, data)
    exact = states[[s.kind for s in states].index("score_distribution")].is_exact
    for key, value in got.items():
        ref = float(want[key])
        if value is None:  # only where core's value cannot be reproduced: a compressed state
            assert not exact and key.startswith(("average_precision", "roc_auc")), (key, want[key])
            assert key.startswith("average_precision") or not np.isnan(ref), key
            continue
        assert _bits(value) == _bits(ref), (key, value, ref)
    if not exact:  # roc_auc of a compressed state: core's clamped trapezoid, all but never undecided
        assert got[f"roc_auc{cap}"] is not None or want[f"roc_auc{cap}"] is None, (got, want)
    if n == 0:  # a group without rows (Spark Connect's UDAF gives null): the zero states' values
        descs = [metric_finish(ev, m) for m in ev.plan.metrics]
        for m, value in zip(ev.plan.metrics, jvm_fold.finish([(d, None) for d in descs])):
            assert np.isnan(value) and np.isnan(float(want[m.key])), m.key


def test_compressed_roc_auc_of_many_scores_is_core_clamped_value():
    """30,000 rows with continuous scores at capacity 1,000 (and the default 40,000: exact): core's value bit
    for bit, inside scikit-learn's exact value's certified bounds."""
    rng = np.random.default_rng(3)
    n = 30000
    y = (rng.random(n) < 0.3).astype(int)
    p = 1 / (1 + np.exp(-(rng.normal(size=n) + 1.5 * y)))
    for metric in ("roc_auc@capacity=1000", "roc_auc"):
        ev = Evaluation(label_col="y", score_col="p", metrics=[metric])
        got, want, _ = _java_and_core(ev, {"y": y, "p": p})
        assert got[metric] is not None and _bits(got[metric]) == _bits(float(want[metric]))
        assert got[metric] == pytest.approx(roc_auc_score(y, p), abs=1e-3 if "capacity" in metric else 1e-15)
    # exact: numpy's pairwise sums of 30,000 terms, replicated
    ev = Evaluation(label_col="y", score_col="p", metrics=["average_precision", "roc_auc"], weight_col="w")
    w = rng.choice([0.25, 1.0, 1 / 3, 3.0], n)
    got, want, _ = _java_and_core(ev, {"y": y, "p": p, "w": w})
    assert all(_bits(got[k]) == _bits(float(want[k])) for k in got), (got, want)
    assert got["average_precision"] == pytest.approx(average_precision_score(y, p, sample_weight=w), rel=1e-12)


def test_perfect_ranking_beyond_capacity_is_one():
    """A compressed state whose bins each hold one class and rank perfectly: core clamps to 1.0."""
    y = np.r_[np.zeros(500, int), np.ones(500, int)]
    p = np.r_[np.linspace(0, 0.4, 500), np.linspace(0.6, 1, 500)]
    ev = Evaluation(label_col="y", score_col="p", metrics=["roc_auc@capacity=20", "average_precision@capacity=20"])
    got, want, states = _java_and_core(ev, {"y": y, "p": p})
    assert not [s for s in states if s.kind == "score_distribution"][0].is_exact
    assert got["roc_auc@capacity=20"] == float(want["roc_auc@capacity=20"]) == 1.0
    assert got["average_precision@capacity=20"] is None  # core's compressed estimate: numpy's log1p


def test_values_match_sklearn_with_weights_and_ties():
    rng = np.random.default_rng(5)
    n = 2000
    y = rng.integers(0, 2, n)
    p = np.round(np.clip(0.3 * y + 0.7 * rng.random(n), 0, 1), 2)
    w = rng.choice([0.5, 1.0, 2.0, 3.25], n)
    ev = Evaluation(label_col="y", score_col="p", weight_col="w", metrics=METRICS[:4])
    got, _, _ = _java_and_core(ev, {"y": y, "p": p, "w": w})
    assert got["roc_auc"] == pytest.approx(roc_auc_score(y, p, sample_weight=w), rel=1e-13)
    assert got["average_precision"] == pytest.approx(average_precision_score(y, p, sample_weight=w), rel=1e-13)
    assert got["log_loss"] == pytest.approx(log_loss(y, p, sample_weight=w), rel=1e-12)
    assert got["brier_score"] == pytest.approx(brier_score_loss(y, p, sample_weight=w), rel=1e-12)


def test_undefined_values_as_core_says():
    """One class only: roc_auc NaN, average_precision 0.0 without positives and 1.0 without negatives."""
    ev = Evaluation(label_col="y", score_col="p", metrics=["roc_auc", "average_precision"])
    got, _, _ = _java_and_core(ev, {"y": np.zeros(4, int), "p": np.array([0.1, 0.5, 0.5, 0.9])})
    assert np.isnan(got["roc_auc"]) and got["average_precision"] == 0.0
    got, _, _ = _java_and_core(ev, {"y": np.ones(3, int), "p": np.array([0.1, 0.5, 0.9])})
    assert np.isnan(got["roc_auc"]) and got["average_precision"] == average_precision_score([1, 1, 1], [0.1, 0.5, 0.9]) == 1.0


def test_unported_variants_keep_the_python_finish():
    ev = Evaluation(label_col="y", score_col="p", metrics=["roc_auc@max_fpr=0.5", "average_precision@pos_label=0", "gini"])
    assert all(metric_finish(ev, m) is None for m in ev.plan.metrics)


def test_compressed_roc_auc_whose_clamp_numpy_rounding_could_change_is_null():
    """29,000 compressed bins of one class each (no tied pairs): core's value is its trapezoid unless numpy's
    sums of the bounds, widened by 1e-12, round past it; their worst-case rounding (about 29,000 x 1.1e-16)
    exceeds 1e-12, so Java cannot tell and returns null rather than a number that might differ."""
    from mergeable_metrics.engine import ScoreDistributionState
    from mergeable_metrics.states.score_distribution import ScoreDistributionLayout

    rng = np.random.default_rng(2)
    m = 29000
    pos = (rng.random(m) < 0.5).astype(float)
    ev = Evaluation(label_col="y", score_col="p", metrics=["roc_auc@capacity=30000"])
    sd = ScoreDistributionState(ScoreDistributionLayout(30000), {"level": np.array(1), "keys": np.arange(m, dtype=np.int64), "pos": pos, "neg": 1.0 - pos})
    states = tuple(sd if cls.kind == "score_distribution" else cls.zero(layout) for cls, layout in ev.plan.state_types)
    want = ev.finish({(): states}, add_overall=False)[()]
    got = jvm_fold.finish([(metric_finish(ev, ev.plan.metrics[0]), _packed(states))])[0]
    assert got is None
    # core's value: the AUC of the bins (no ties), here within its bounds; scikit-learn's on one row per bin
    ref = roc_auc_score(pos, np.arange(m))
    assert float(want.metrics["roc_auc@capacity=30000"]) == pytest.approx(ref, abs=1e-11)
