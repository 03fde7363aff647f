"""``ci="bootstrap"``: the one-pass Poisson bootstrap over hash buckets (:mod:`mergeable_metrics.uncertainty.bootstrap`).

References are independent of the bucketed states: replicate values are recomputed from the rows
with per-row weights ``w[r, bucket(row)]`` (numpy, scikit-learn), Poisson(1) frequencies are
checked against the pmf, hashes against ``hashlib``.
"""

from __future__ import annotations

import hashlib
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mergeable_metrics import Evaluation
from mergeable_metrics.uncertainty.bootstrap import (
    BucketedPlan,
    element_buckets,
    hash_column,
    mix64,
    percentile_interval,
    replicate_values,
    replicate_weights,
)
from tests._helpers.sharding import random_shards

sklearn_metrics = pytest.importorskip("sklearn.metrics")

METRICS = ["accuracy", "f1", "roc_auc", "average_precision", "log_loss", "brier_score", "ece"]


def _data(n: int, seed: int = 0, sort: bool = False) -> dict:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    s = 1.0 / (1.0 + np.exp(-rng.normal(-0.8 + 1.6 * y, 1.0)))
    g = rng.choice(["a", "b", "c"], n)
    d = {"y": y, "s": s, "g": g, "id": rng.permutation(10 * n)[:n]}
    if sort:
        order = np.argsort(d["s"], kind="stable")
        d = {k: v[order] for k, v in d.items()}
    return d


def _take(d: dict, idx: np.ndarray) -> dict:
    return {k: v[idx] for k, v in d.items()}


def _eval(**kw) -> Evaluation:
    return Evaluation(label_col="y", score_col="s", slices=["g"], metrics=METRICS, **kw)


def _fold_shards(ev: Evaluation, d: dict, rng: np.random.Generator, through_codec: bool = False) -> list:
    """One accumulator per random shard of ``d`` (empty shards and batches included)."""
    parts = []
    for shard in random_shards(rng, len(d["y"])):
        acc = ev.zero()
        for idx in shard:
            ev.fold(acc, _take(d, idx))
        parts.append(ev.decode(ev.encode(acc)) if through_codec else acc)
    return parts


def _finish(ev: Evaluation, acc):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ev.finish(acc)


# -- weights and hashes ------------------------------------------------------------------------
def test_weights_depend_on_seed_replicate_and_bucket_only():
    w = replicate_weights(7, 300, 128)
    assert w.dtype == np.int64 and w.shape == (300, 128)
    assert np.array_equal(replicate_weights(7, 10, 5), w[:10, :5])  # not on R or B
    assert not np.array_equal(replicate_weights(8, 10, 5), w[:10, :5])
    freq = np.bincount(w.ravel(), minlength=6)[:6] / w.size
    pmf = np.array([math.exp(-1) / math.factorial(k) for k in range(6)])
    se = np.sqrt(pmf * (1 - pmf) / w.size)
    assert np.all(np.abs(freq - pmf) < 5 * se), (freq, pmf)


def test_hashes_are_stable_and_ints_equal_whole_floats():
    ints = hash_column(np.array([1, 2, 3]), "id")
    assert np.array_equal(ints, hash_column(np.array([1.0, 2.0, 3.0]), "id"))
    assert np.array_equal(ints, hash_column(np.array([1, 2, 3], dtype=object), "id"))
    strs = hash_column(np.array(["x", "é"], dtype=object), "id")
    want = [int.from_bytes(hashlib.blake2b(b"s" + v.encode(), digest_size=8).digest(), "little") for v in ("x", "é")]
    assert strs.tolist() == want
    assert np.array_equal(strs, hash_column(np.array(["x", "é"]), "id"))  # numpy unicode arrays alike
    # splitmix64 of 1 (reference value of the published algorithm, state 1 -> first output)
    assert int(mix64(np.array([0], dtype=np.uint64))[0]) == 0xE220A8397B1DCDAF


def test_missing_ids_name_the_column_value_and_row():
    with pytest.raises(ValueError, match=r"column 'id': invalid value None at row 1"):
        hash_column(np.array([1, None], dtype=object), "id")
    ev = _eval(ci="bootstrap", id_col="id")
    d = _data(5)
    d["id"] = np.array([1.0, 2.0, np.nan, 4.0, 5.0])
    with pytest.raises(ValueError, match=r"column 'id': invalid value nan at row 12"):
        ev.fold(ev.zero(), d, row_offset=10)


def test_percentile_interval_matches_numpy_quantile():
    v = np.random.default_rng(1).normal(size=(500, 3))
    v[:7, 1] = np.nan
    lo, hi = percentile_interval(v, 0.9)
    assert np.allclose(lo, [np.quantile(v[:, 0], 0.05), np.quantile(v[7:, 1], 0.05), np.quantile(v[:, 2], 0.05)])
    assert np.allclose(hi, [np.quantile(v[:, 0], 0.95), np.quantile(v[7:, 1], 0.95), np.quantile(v[:, 2], 0.95)])
    assert percentile_interval(np.full(4, np.nan), 0.9) == (pytest.approx(np.nan, nan_ok=True),) * 2


# -- point values and the bucketed states -----------------------------------------------------
@pytest.mark.parametrize("kw", [dict(), dict(id_col="id"), dict(ci_buckets=11)])
def test_point_values_equal_those_without_ci(kw):
    d = _data(800, 3)
    plain = _finish(_eval(), _eval().fold(_eval().zero(), d))
    ev = _eval(ci="bootstrap", ci_replicates=40, **kw)
    boot = _finish(ev, ev.fold(ev.zero(), d))
    assert [s.slice for s in plain.slices] == [s.slice for s in boot.slices]
    for a, b in zip(plain.slices, boot.slices):
        assert (a.n, a.weight, a.skipped) == (b.n, b.weight, b.skipped)
        for k, v in a.metrics.items():
            assert np.array_equal(np.asarray(v), np.asarray(b.metrics[k]), equal_nan=True), k
        assert set(b.ci) == set(METRICS) and not a.ci


def test_merged_buckets_equal_the_unbucketed_states_weighted_and_skipped():
    d = _data(600, 4)
    d["w"] = np.random.default_rng(4).integers(0, 4, 600).astype(float) / 2
    d["s"][[3, 50]] = np.nan  # invalid rows: skipped, counted in bucket 0
    kw = dict(weight_col="w", on_invalid="skip")
    plain, ev = _eval(**kw), _eval(ci="bootstrap", ci_buckets=16, **kw)
    a, b = plain.fold(plain.zero(), d), ev.fold(ev.zero(), d)
    assert set(a.slices()) == set(b.slices())
    for key in a.slices():
        assert ev.plan.point(b[key]) == a[key], key


def _replicate_reference(d: dict, buckets: np.ndarray, w: np.ndarray, rows: np.ndarray) -> dict:
    """Each replicate's accuracy, F1 and ROC AUC from the rows, weighted by ``w[r, bucket]``."""
    y, s = d["y"][rows], d["s"][rows]
    pred = (s >= 0.5).astype(int)
    out = {"accuracy": [], "f1": [], "roc_auc": []}
    for r in range(w.shape[0]):
        sw = w[r, buckets[rows]].astype(float)
        out["accuracy"].append(sklearn_metrics.accuracy_score(y, pred, sample_weight=sw))
        out["f1"].append(sklearn_metrics.f1_score(y, pred, sample_weight=sw))
        out["roc_auc"].append(sklearn_metrics.roc_auc_score(y, s, sample_weight=sw))
    return {k: np.array(v) for k, v in out.items()}


def _replicates_and_reference(n: int = 400, replicates: int = 25) -> list:
    d = _data(n, 5)
    ev = Evaluation(label_col="y", score_col="s", slices=["g"], metrics=["accuracy", "f1", "roc_auc"], ci="bootstrap", ci_buckets=32, id_col="id")
    acc = ev.fold(ev.zero(), d)
    from mergeable_metrics.inputs.validation import Batch

    batch = Batch(y_true=d["y"], y_score=d["s"])
    buckets = element_buckets(32, batch, n, None, ids=d["id"], id_col="id")
    w = replicate_weights(11, replicates, 32)
    out = []
    for key, rows in [((), np.arange(n)), ((("g", "b"),), np.flatnonzero(d["g"] == "b"))]:
        out.append((key, replicate_values(ev.plan, acc[key], w), _replicate_reference(d, buckets, w, rows)))
    return out


def test_replicate_values_equal_a_row_weighted_reference(monkeypatch):
    import mergeable_metrics.uncertainty.bootstrap

    monkeypatch.setattr(mergeable_metrics.uncertainty.bootstrap, "REPLICATE_BINS", 10_000)  # every bin resampled on its own
    for key, got, want in _replicates_and_reference():
        for k in want:
            assert np.allclose(got[k], want[k], rtol=1e-12, atol=1e-12), (key, k)


def test_grouped_replicate_auc_is_close_to_the_row_weighted_reference():
    """Slices with more than REPLICATE_BINS bins resample groups of bins (shifted by the full
    data's grouping error): each replicate AUC within 0.005 of the row-weighted one, and the
    percentile interval within 0.003 of the reference's."""
    from mergeable_metrics.uncertainty.bootstrap import REPLICATE_BINS

    for key, got, want in _replicates_and_reference(2_000, 200):
        if key == ():
            assert len(np.unique(_data(2_000, 5)["s"])) > REPLICATE_BINS  # the grouped path
        for k in ("accuracy", "f1"):
            assert np.allclose(got[k], want[k], rtol=1e-12, atol=1e-12), (key, k)
        assert np.max(np.abs(got["roc_auc"] - want["roc_auc"])) < 0.005, key
        assert np.allclose(percentile_interval(got["roc_auc"], 0.95), percentile_interval(want["roc_auc"], 0.95), atol=0.003), key


# -- any partitioning, any engine order --------------------------------------------------------
@pytest.mark.parametrize("sort", [False, True])
def test_intervals_are_identical_for_any_sharding(sort):
    d = _data(500, 6, sort=sort)
    ev = _eval(ci="bootstrap", ci_replicates=40, ci_buckets=16)
    want = _finish(ev, ev.fold(ev.zero(), d))
    rng = np.random.default_rng(0)
    for _ in range(2):
        parts = _fold_shards(ev, d, rng, through_codec=True)
        rng.shuffle(parts)
        got = _finish(ev, ev.merge_all(parts))
        assert got.to_dict() == want.to_dict()


def test_plain_dict_accumulators_fold_buckets_too():
    d = _data(300, 8)
    ev = _eval(ci="bootstrap", ci_buckets=10, ci_replicates=40)
    acc = ev.fold(ev.zero(), d)
    plain: dict = {(): ev.plan.zero()}
    ev.fold(plain, _take(d, np.arange(150)))
    ev.fold(plain, _take(d, np.arange(150, 300)))
    assert {k: v for k, v in plain.items()} == dict(acc.items())


@settings(max_examples=25)
@given(st.integers(0, 2**31 - 1), st.integers(0, 60), st.integers(10, 19))
def test_property_bucketed_fold_merges_to_the_per_slice_fold(seed, n, buckets):
    d = _data(n, seed)
    plain, ev = _eval(), _eval(ci="bootstrap", ci_buckets=buckets)
    a = plain.fold(plain.zero(), d)
    parts = _fold_shards(ev, d, np.random.default_rng(seed))
    x, y, z = (ev.merge_all(parts[i::3]) for i in range(3))
    left, right = ev.merge(ev.merge(x, y), z), ev.merge(x, ev.merge(z, y))  # associative, commutative
    assert dict(left.items()) == dict(right.items())
    assert dict(ev.merge(ev.zero(), x).items()) == dict(x.items())  # identity
    assert set(left.slices()) == set(a.slices())
    for key in a.slices():
        assert isinstance(ev.plan, BucketedPlan) and ev.plan.point(left[key]) == a[key]


@settings(max_examples=12)
@given(st.integers(0, 2**31 - 1), st.integers(0, 80), st.integers(10, 16))
def test_property_stacked_states_weighted_and_compressed_obey_the_merge_laws(seed, n, buckets):
    """Fractional weights (exact sums with limbs) and a capacity of 8 bins (merges that raise
    the level): any sharding and merge tree gives the same bucket-stacked states, and the point
    states equal those without ci."""
    d = _data(n, seed)
    d["w"] = np.random.default_rng(seed).integers(0, 5, n) / 3.0
    kw = dict(label_col="y", score_col="s", weight_col="w", slices=["g"], metrics=["f1", "roc_auc@capacity=8", "log_loss", "ece"])
    plain, ev = Evaluation(**kw), Evaluation(**kw, ci="bootstrap", ci_buckets=buckets)
    assert ev.plan.stacked
    a = plain.fold(plain.zero(), d)
    parts = _fold_shards(ev, d, np.random.default_rng(seed), through_codec=bool(seed % 2))
    x, y, z = (ev.merge_all(parts[i::3]) for i in range(3))
    left, right = ev.merge(ev.merge(x, y), z), ev.merge(x, ev.merge(z, y))
    assert dict(left.items()) == dict(right.items())
    assert dict(ev.merge(ev.zero(), x).items()) == dict(x.items())
    whole = ev.fold(ev.zero(), d)
    assert dict(whole.items()) == dict(left.items())
    for key in a.slices():
        assert ev.plan.point(left[key]) == a[key]


# -- settings that change the states never mix -------------------------------------------------
def test_other_buckets_or_id_columns_or_no_bootstrap_never_merge():
    d = _data(50, 9)
    ev = _eval(ci="bootstrap", ci_buckets=10)
    acc = ev.fold(ev.zero(), d)
    for other in (_eval(), _eval(ci="bootstrap", ci_buckets=16), _eval(ci="bootstrap", ci_buckets=10, id_col="id"), _eval(ci="analytic")):
        with pytest.raises(ValueError, match="bootstrap"):
            other.merge(other.fold(other.zero(), d), acc)
        with pytest.raises(ValueError, match="bootstrap"):
            other.decode(ev.encode(acc))
    same_states = _eval(ci="bootstrap", ci_buckets=10, ci_seed=5, ci_replicates=17, ci_level=0.8)  # seed, R, level: only at finish
    same_states.merge(same_states.fold(same_states.zero(), d), acc)


def test_label_maps_without_an_id_column_raise():
    from mergeable_metrics.inputs.validation import Batch

    batch = Batch(y_true=np.array([0, 1, 1, 0]), y_pred=np.array([0, 1, 0, 0]), row_of=np.array([0, 0, 1, 1]))
    with pytest.raises(ValueError, match="needs id_col"):
        element_buckets(8, batch, 2, None)


def test_repeated_rows_without_an_id_column_warn_and_distinct_rows_do_not():
    """Hard 0/1 predictions without ``id_col``: the four (label, prediction) rows hash into at most
    four of the 32 buckets (each holds ~25% of the rows where an even spread gives 1/32), so the
    intervals would be too wide: a warning says to give ``id_col``. Continuous scores (distinct
    rows) and the same hard predictions with ``id_col`` do not warn."""
    import warnings

    rng = np.random.default_rng(3)
    n = 4000
    y = rng.integers(0, 2, n)
    hard = {"y": y, "p": np.where(rng.random(n) < 0.8, y, 1 - y), "id": np.arange(n)}

    def run(data: dict, **kw) -> list[str]:
        ev = Evaluation(label_col="y", metrics=["accuracy", "f1"], ci="bootstrap", ci_buckets=32, ci_replicates=40, **kw)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            ev.evaluate([data])
        return [str(w.message) for w in caught if "id_col" in str(w.message)]

    msgs = run(hard, prediction_col="p")
    assert msgs and "rows repeat" in msgs[0] and "give id_col" in msgs[0]
    assert run(hard, prediction_col="p", id_col="id") == []
    assert run(_data(n), score_col="s") == []
    assert run(_take(hard, np.arange(100)), prediction_col="p") == []  # 100 rows < 8 per bucket: too few to tell
