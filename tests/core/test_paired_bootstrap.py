"""``ci="bootstrap"`` with a baseline model: the paired bootstrap (:func:`mergeable_metrics.uncertainty.comparison.paired_bootstrap`).

References are independent of the bucketed states: each replicate's metrics of both models are
recomputed from the rows with scikit-learn, every row weighted by its bucket's Poisson weight
``w[r, bucket(row)]`` (the same weights for both models), and the delta's interval is numpy's
percentile of ``candidate_r - baseline_r``.
"""

from __future__ import annotations

import math
import os

import numpy as np
import pytest

from mergeable_metrics import Evaluation
from mergeable_metrics.inputs.validation import Batch
from mergeable_metrics.uncertainty.bootstrap import element_buckets, replicate_weights
from mergeable_metrics.uncertainty.comparison import paired_bootstrap
from tests._helpers.sharding import random_shards
from tests.core.test_bootstrap import _finish, _take

sklearn_metrics = pytest.importorskip("sklearn.metrics")

METRICS = ["accuracy", "f1", "roc_auc"]


def _data(n: int, seed: int = 0, sort: bool = False) -> dict:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    z = rng.normal(0.0, 1.0, n)  # shared noise: the models' errors are correlated, as paired data are
    new = 1.0 / (1.0 + np.exp(-(-0.8 + 1.6 * y + 0.8 * z + 0.6 * rng.normal(0.0, 1.0, n))))
    old = 1.0 / (1.0 + np.exp(-(-0.5 + 1.0 * y + 0.8 * z + 0.6 * rng.normal(0.0, 1.0, n))))
    d = {"y": y, "new": new, "old": old, "g": rng.choice(["a", "b", "c"], n), "id": rng.permutation(10 * n)[:n]}
    if sort:
        order = np.argsort(d["new"], kind="stable")
        d = {k: v[order] for k, v in d.items()}
    return d


def _eval(**kw) -> Evaluation:
    opts = {"label_col": "y", "score_col": "new", "baseline_score_col": "old", "slices": ["g"], "metrics": METRICS, "ci": "bootstrap", "id_col": "id"}
    return Evaluation(**{**opts, **kw})


def _reference(y: np.ndarray, s: np.ndarray, sw: np.ndarray) -> dict:
    pred = (s >= 0.5).astype(int)
    return {
        "accuracy": sklearn_metrics.accuracy_score(y, pred, sample_weight=sw),
        "f1": sklearn_metrics.f1_score(y, pred, sample_weight=sw),
        "roc_auc": sklearn_metrics.roc_auc_score(y, s, sample_weight=sw),
    }


def test_replicates_of_both_models_equal_a_row_weighted_reference(monkeypatch):
    import mergeable_metrics.uncertainty.bootstrap

    monkeypatch.setattr(mergeable_metrics.uncertainty.bootstrap, "REPLICATE_BINS", 10_000)  # every bin resampled on its own (see test_bootstrap)
    d = _data(400, 5)
    B, R, seed = 32, 40, 11
    ev = _eval(ci_buckets=B, ci_replicates=R, ci_seed=seed)
    acc = ev.fold(ev.zero(), d)
    buckets = element_buckets(B, Batch(y_true=d["y"], y_score=d["new"]), 400, None, ids=d["id"], id_col="id")
    w = replicate_weights(seed, R, B)
    res = _finish(ev, acc)
    for key, rows in [((), np.arange(400)), ((("g", "b"),), np.flatnonzero(d["g"] == "b"))]:
        ci, reps = paired_bootstrap(ev.plan, acc[key], 0.95, R, seed)
        y = d["y"][rows]
        ref = [(_reference(y, d["new"][rows], w[r, buckets[rows]]), _reference(y, d["old"][rows], w[r, buckets[rows]])) for r in range(R)]
        sr = res[key]
        for k in METRICS:
            cand, base = np.array([c[k] for c, _ in ref]), np.array([b[k] for _, b in ref])
            assert np.allclose(reps[k][0], cand, rtol=1e-12, atol=1e-12), (key, k)
            assert np.allclose(reps[k][1], base, rtol=1e-12, atol=1e-12), (key, k)
            lo, hi = np.quantile(cand - base, [0.025, 0.975])
            assert sr.comparison[k].ci == pytest.approx((lo, hi), abs=1e-12), (key, k)
            assert sr.comparison[k].delta == pytest.approx(sr.metrics[k] - sr.baseline_metrics[k], abs=1e-15)
            assert ci[k] == pytest.approx(tuple(np.quantile(cand, [0.025, 0.975])), abs=1e-12), (key, k)
            assert sr.ci[k] == pytest.approx(ci[k], abs=1e-15)


def test_point_values_and_candidate_intervals_are_those_of_each_model_alone():
    d = _data(500, 3)
    ev = _eval(ci_buckets=16, ci_replicates=40)
    res = _finish(ev, ev.fold(ev.zero(), d))
    alone = Evaluation(label_col="y", score_col="new", slices=["g"], metrics=METRICS, ci="bootstrap", id_col="id", ci_buckets=16, ci_replicates=40)
    old = Evaluation(label_col="y", score_col="old", slices=["g"], metrics=METRICS, ci="bootstrap", id_col="id", ci_buckets=16, ci_replicates=40)
    a, b = _finish(alone, alone.fold(alone.zero(), d)), _finish(old, old.fold(old.zero(), d))
    assert [s.slice for s in res.slices] == [s.slice for s in a.slices]
    for p, x, z in zip(res.slices, a.slices, b.slices):
        assert p.metrics == x.metrics and p.ci == x.ci and p.baseline_metrics == z.metrics
    assert res.config["comparison"]["method"] == "bootstrap" and res.config["ci"]["method"] == "bootstrap"


def test_auc_delta_gets_a_paired_interval_and_a_verdict():
    d = _data(3000, 4)
    ev = _eval(ci_replicates=100)
    o = _finish(ev, ev.fold(ev.zero(), d)).overall
    c = o.comparison["roc_auc"]
    assert c.reason is None and c.ci[0] < c.delta < c.ci[1] and c.ci[0] > 0 and c.verdict == "better"
    # paired (the models' errors are correlated): narrower than two independent intervals combined
    old = Evaluation(label_col="y", score_col="old", metrics=METRICS, ci="bootstrap", id_col="id", ci_replicates=100)
    w_new, w_old = np.diff(o.ci["roc_auc"])[0], np.diff(_finish(old, old.fold(old.zero(), d)).overall.ci["roc_auc"])[0]
    assert c.ci[1] - c.ci[0] < math.hypot(w_new, w_old)


@pytest.mark.parametrize("sort", [False, True])
def test_comparison_is_identical_for_any_sharding_and_merge_order(sort):
    d = _data(500, 6, sort=sort)
    ev = _eval(ci_replicates=40, ci_buckets=16, tolerance=0.005)
    want = _finish(ev, ev.fold(ev.zero(), d)).to_dict()
    assert want["slices"][0]["comparison"]["roc_auc"]["ci"] is not None
    rng = np.random.default_rng(0)
    for _ in range(2):
        parts = []
        for shard in random_shards(rng, len(d["y"])):  # empty shards and batches included
            acc = ev.zero()
            for idx in shard:
                ev.fold(acc, _take(d, idx))
            parts.append(ev.decode(ev.encode(acc)))
        rng.shuffle(parts)
        assert _finish(ev, ev.merge_all(parts)).to_dict() == want


def test_accumulators_of_the_unpaired_bootstrap_do_not_merge():
    d = _data(50, 1)
    ev = _eval(ci_buckets=10)
    alone = Evaluation(label_col="y", score_col="new", slices=["g"], metrics=METRICS, ci="bootstrap", id_col="id", ci_buckets=10)
    with pytest.raises(ValueError, match="paired|baseline"):
        ev.merge(ev.fold(ev.zero(), d), alone.fold(alone.zero(), d))


def test_empty_input_gives_no_interval():
    ev = _eval(ci_buckets=10, ci_replicates=40)
    o = _finish(ev, ev.zero()).overall
    assert o.n == 0 and all(not (c.ci[0] == c.ci[0]) for c in o.comparison.values() if c.ci is not None)
    assert all(c.verdict == "indistinguishable" for c in o.comparison.values())


# -- coverage --------------------------------------------------------------------------------
#: binormal scores: latent separation of the candidate and the baseline (unit variances); the
#: models share a noise term (correlation RHO), so the paired interval is narrower than unpaired
D_NEW, D_OLD, RHO, PI = 1.4, 1.1, 0.6, 0.4


def _phi(x: float) -> float:
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


#: ROC AUC of a binormal model with unit variances: Phi(d / sqrt 2); accuracy at z >= 0: Phi(d / 2)
TRUE_DELTA = {"roc_auc": _phi(D_NEW / math.sqrt(2)) - _phi(D_OLD / math.sqrt(2)), "accuracy": _phi(D_NEW / 2) - _phi(D_OLD / 2)}


def _delta_coverage(datasets: int, rows: int = 1000, seed: int = 2027) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    hits = {k: 0 for k in TRUE_DELTA}
    ids = np.arange(rows)
    for i in range(datasets):
        ev = Evaluation(label_col="y", score_col="new", baseline_score_col="old", metrics=list(TRUE_DELTA), ci="bootstrap", id_col="id", ci_seed=i)
        y = (rng.random(rows) < PI).astype(np.int64)
        shared = rng.normal(0.0, 1.0, rows)
        own = rng.normal(0.0, 1.0, (2, rows))
        noise = math.sqrt(RHO) * shared + math.sqrt(1 - RHO) * own  # (2, rows), unit variances
        z_new = np.where(y == 1, D_NEW / 2, -D_NEW / 2) + noise[0]
        z_old = np.where(y == 1, D_OLD / 2, -D_OLD / 2) + noise[1]
        data = {"y": y, "new": 1.0 / (1.0 + np.exp(-z_new)), "old": 1.0 / (1.0 + np.exp(-z_old)), "id": ids + i * rows}
        comp = _finish(ev, ev.fold(ev.zero(), data)).overall.comparison
        for k, truth in TRUE_DELTA.items():
            lo, hi = comp[k].ci
            hits[k] += lo <= truth <= hi
    return {k: v / datasets for k, v in hits.items()}


def test_delta_coverage():
    """Nominal 95% paired bootstrap intervals of ``delta`` (ROC AUC, accuracy) cover the true
    delta. Fast profile (default, CI): 40 datasets of 1,000 rows, the binomial 99.9% band around
    0.95; ``MM_FULL_COVERAGE=1``: 1,000 datasets and the issue's 93-97% band."""
    full = os.environ.get("MM_FULL_COVERAGE") == "1"
    datasets = 1000 if full else 40
    cov = _delta_coverage(datasets)
    if full:
        lo, hi = 0.93, 0.97
    else:
        half = 3.29 * math.sqrt(0.95 * 0.05 / datasets)
        lo, hi = 0.95 - half, min(1.0, 0.95 + half)
    for k, c in cov.items():
        assert lo <= c <= hi, (k, c, (lo, hi), cov)
