"""Running score distributions (issue 25, item 2): ``MetricCollection.update`` folds a score
distribution into raw bins (:mod:`mergeable_metrics.states.score_running`) and builds the canonical
state only where it is observed. The state must be the canonical state of the examples, bit for
bit, for every batching: checked against a brute-force canonical binning (``math.fsum`` of the
weights per bin), the one-batch state and merges of per-batch states, and the numpy path."""

from __future__ import annotations

import copy
import math
import pickle
import threading

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mergeable_metrics import MetricCollection
from mergeable_metrics._util import exact_kernels as K
from mergeable_metrics.inputs.validation import Batch
from mergeable_metrics.states import score_running as R
from mergeable_metrics.states.score_distribution import Class0ScoreDistributionState, ScoreDistributionLayout, ScoreDistributionState, score_keys

S, L = ScoreDistributionState, ScoreDistributionLayout
needs_numba = pytest.mark.skipif(not K.AVAILABLE, reason="running bins need the compiled kernels")


def brute_force(score, y, w, capacity):
    """The canonical bins by definition: the distinct keys of the rows of weight > 0 at the
    smallest level with at most ``capacity`` of them; correctly rounded weight sums (fsum)."""
    w = np.ones(len(score)) if w is None else np.asarray(w, float)
    keep = w > 0
    keys, y, w = score_keys(np.asarray(score, float)[keep]), np.asarray(y)[keep], w[keep]
    for level in range(64):
        u, inv = np.unique(keys >> level, return_inverse=True)
        if u.size <= capacity:
            pos = [math.fsum(w[(inv == i) & (y == 1)]) for i in range(u.size)]
            neg = [math.fsum(w[(inv == i) & (y == 0)]) for i in range(u.size)]
            return level, u, np.array(pos, dtype=float), np.array(neg, dtype=float)
    raise AssertionError("unreachable")


def _running_fold(layout, parts, start=None, cls=S):
    out = cls.zero(layout) if start is None else start
    with R.running_folds():
        for s, y, w in parts:
            out = out.fold(Batch(y_true=y, y_score=s, sample_weight=w))
    return out


SCORES = st.sampled_from(["continuous", "ties", "one", "sorted", "wide", "signed"])
WEIGHTS = st.sampled_from([None, "plain", "zeros", "tiny", "huge", "integers"])


def _make(kind, wkind, n, rng):
    if kind == "continuous":
        s = rng.random(n)
    elif kind == "ties":
        s = rng.integers(0, 7, n) / 7.0
    elif kind == "one":
        s = np.full(n, 0.3)
    elif kind == "sorted":
        s = np.sort(rng.normal(size=n))
    elif kind == "wide":  # logits over many binades, subnormals and zeros of both signs
        s = rng.normal(size=n) * 10.0 ** rng.integers(-300, 300, n)
        s[rng.random(n) < 0.05] = 5e-324
        s[rng.random(n) < 0.05] = -0.0
        s[rng.random(n) < 0.05] = 0.0
    else:
        s = rng.normal(size=n) * 1e-3
    y = rng.integers(0, 2, n)
    if wkind is None:
        w = None
    elif wkind == "plain":
        w = rng.random(n)
    elif wkind == "zeros":
        w = rng.random(n) * (rng.random(n) < 0.5)
    elif wkind == "tiny":
        w = np.where(rng.random(n) < 0.5, 5e-324, rng.random(n) * 1e-300)
    elif wkind == "huge":
        w = rng.random(n) * 10.0 ** rng.integers(280, 300, n)
    else:
        w = rng.integers(0, 4, n).astype(float)
    return s, y, w


@needs_numba
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    kind=SCORES,
    wkind=WEIGHTS,
    n=st.integers(0, 600),
    capacity=st.sampled_from([2, 3, 5, 16, 100, 40_000]),
    seed=st.integers(0, 2**32 - 1),
    min_slots=st.sampled_from([4, 1 << 10]),
    dense_level=st.sampled_from([0, 36, 53]),
    data=st.data(),
)
def test_running_folds_are_the_canonical_state_for_any_batching(kind, wkind, n, capacity, seed, min_slots, dense_level, data):
    rng = np.random.default_rng(seed)
    s, y, w = _make(kind, wkind, n, rng)
    cuts = sorted(data.draw(st.lists(st.integers(0, n), max_size=8)))  # empty batches included
    edges = [0, *cuts, n]
    parts = [(s[a:b], y[a:b], None if w is None else w[a:b]) for a, b in zip(edges, edges[1:])]
    layout = L(capacity)
    # 4 slots: tables double while they fill; dense level 0: packed counts go dense at every
    # level where it fits, 53: never
    old, R.MIN_SLOTS, old_dense, R.DENSE_LEVEL = R.MIN_SLOTS, min_slots, R.DENSE_LEVEL, dense_level
    try:
        running = _running_fold(layout, parts)
    finally:
        R.MIN_SLOTS, R.DENSE_LEVEL = old, old_dense
    level, u, pos, neg = brute_force(s, y, w, capacity)
    assert running.level == level
    np.testing.assert_array_equal(running["keys"], u)
    np.testing.assert_array_equal(running["pos"], pos)
    np.testing.assert_array_equal(running["neg"], neg)
    one = S.from_arrays(layout, s, y, w)
    merged = S.zero(layout)
    for p in parts:
        merged = merged.merge(S.from_arrays(layout, *p))
    assert running.encode() == one.encode() == merged.encode()
    assert running == one and hash(running) == hash(one) and repr(running) == repr(one)


@needs_numba
@settings(max_examples=40, deadline=None)
@given(
    kinds=st.lists(st.tuples(SCORES, WEIGHTS, st.integers(0, 300)), min_size=1, max_size=6),
    capacity=st.sampled_from([2, 7, 64, 40_000]),
    seed=st.integers(0, 2**32 - 1),
    observe=st.booleans(),
)
def test_mixed_weighted_unweighted_batches_and_observing_between_folds(kinds, capacity, seed, observe):
    """Batches of other score and weight kinds in one stream (counts turn into limbs, the limb
    window widens); reading the state between folds changes nothing."""
    rng = np.random.default_rng(seed)
    parts = [_make(k, wk, n, rng) for k, wk, n in kinds]
    layout = L(capacity)
    out = S.zero(layout)
    with R.running_folds():
        for s, y, w in parts:
            out = out.fold(Batch(y_true=y, y_score=s, sample_weight=w))
            if observe:
                out.encode()
    s = np.concatenate([p[0] for p in parts])
    y = np.concatenate([p[1] for p in parts])
    w = None if all(p[2] is None for p in parts) else np.concatenate([np.ones(len(p[0])) if p[2] is None else p[2] for p in parts])
    assert out.encode() == S.from_arrays(layout, s, y, w).encode()


@needs_numba
@pytest.mark.parametrize("weighted", [False, True])
def test_running_fold_continues_a_decoded_state_and_merges(weighted):
    rng = np.random.default_rng(3)
    s, y, w = _make("continuous", "plain" if weighted else None, 5000, rng)
    layout = L(300)
    first = S.decode(S.from_arrays(layout, s[:2000], y[:2000], None if w is None else w[:2000]).encode())
    parts = [(s[i:j], y[i:j], None if w is None else w[i:j]) for i, j in ((2000, 2700), (2700, 3400), (3400, 4000))]
    running = _running_fold(layout, parts, start=first)
    assert "_running" in running.__dict__
    rest = S.from_arrays(layout, s[4000:], y[4000:], None if w is None else w[4000:])
    whole = S.from_arrays(layout, s, y, w)
    assert running.merge(rest).encode() == whole.encode() == rest.merge(running).encode()


@needs_numba
def test_class0_state_runs_too():
    rng = np.random.default_rng(8)
    p1 = rng.random(3000)
    y = rng.integers(0, 2, 3000)
    proba = np.stack((1 - p1, p1), axis=1)
    a = MetricCollection("roc_auc@pos_label=0", "roc_auc")
    for i in range(0, 3000, 500):
        a.update(y[i : i + 500], proba[i : i + 500])
    b = MetricCollection("roc_auc@pos_label=0", "roc_auc")
    b.update(y, proba)
    assert any(isinstance(x, Class0ScoreDistributionState) and "_running" in x.__dict__ for x in a.states)
    assert a.encode() == b.encode()
    from sklearn.metrics import roc_auc_score

    got = a.compute()
    assert got["roc_auc"] == pytest.approx(roc_auc_score(y, p1), rel=1e-12)
    assert got["roc_auc@pos_label=0"] == pytest.approx(roc_auc_score(y == 0, 1 - p1), rel=1e-12)


@needs_numba
@pytest.mark.parametrize("weighted", [False, True])
def test_update_value_matches_sklearn_and_old_states_never_change(weighted):
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(1)
    n = 20_000
    s, y, w = _make("ties", "plain" if weighted else None, n, rng)
    mc = MetricCollection("roc_auc")
    snapshots = []
    for i in range(0, n, 3000):
        mc.update(y[i : i + 3000], s[i : i + 3000], sample_weight=None if w is None else w[i : i + 3000])
        snapshots.append((i + 3000, mc.states))
    assert mc.compute()["roc_auc"] == pytest.approx(roc_auc_score(y, s, sample_weight=w), rel=1e-12)
    for end, states in snapshots:  # states kept by the caller are the states of their rows
        ww = None if w is None else w[:end]
        one = MetricCollection("roc_auc")
        one.update(y[:end], s[:end], sample_weight=ww)
        assert states == one.states


@needs_numba
def test_running_states_pickle_copy_and_survive_the_numpy_path(monkeypatch):
    rng = np.random.default_rng(2)
    s, y, _ = _make("continuous", None, 4000, rng)
    mc = MetricCollection("roc_auc@capacity=50", "average_precision@capacity=50")
    for i in range(0, 3000, 1000):
        mc.update(y[i : i + 1000], s[i : i + 1000])
    for clone in (copy.copy(mc), copy.deepcopy(mc), pickle.loads(pickle.dumps(mc))):
        clone.update(y[3000:], s[3000:])
        assert clone.encode() != mc.encode()
    mc2 = pickle.loads(pickle.dumps(mc))
    with monkeypatch.context() as m:
        m.setattr(K, "AVAILABLE", False)  # a running state folded on the numpy path
        assert not K.ready()
        mc.update(y[3000:], s[3000:])
    mc2.update(y[3000:], s[3000:])
    one = MetricCollection("roc_auc@capacity=50", "average_precision@capacity=50")
    one.update(y, s)
    assert mc.encode() == mc2.encode() == one.encode()


@needs_numba
@pytest.mark.parametrize("weighted", [False, True])
def test_bounded_tables_and_carries_fall_back_or_carry_to_the_same_state(weighted, monkeypatch):
    """A table past :data:`MAX_TABLE_BYTES` folds as before; limbs carried every few rows;
    packed counts turned into limbs."""
    rng = np.random.default_rng(6)
    s, y, w = _make("wide", "huge" if weighted else None, 3000, rng)
    parts = [(s[i : i + 400], y[i : i + 400], None if w is None else w[i : i + 400]) for i in range(0, 3000, 400)]
    want = S.from_arrays(L(500), s, y, w).encode()
    monkeypatch.setattr(R, "MAX_TABLE_BYTES", 20_000)
    assert _running_fold(L(500), parts).encode() == want
    monkeypatch.setattr(R, "MAX_TABLE_BYTES", 64 << 20)
    monkeypatch.setattr(R, "CARRY_ROWS", 5)
    assert _running_fold(L(500), parts).encode() == want
    monkeypatch.setattr(R, "PACKED_ROWS", 1000)  # unweighted counts past it: limbs
    assert _running_fold(L(500), parts).encode() == want


@needs_numba
def test_concurrent_updates_give_the_state_of_all_rows():
    rng = np.random.default_rng(9)
    s, y, w = _make("continuous", "plain", 40_000, rng)
    mc = MetricCollection("roc_auc@capacity=500")
    start = threading.Barrier(4)

    def work(k):
        start.wait()
        for i in range(k * 10_000, (k + 1) * 10_000, 1000):
            mc.update(y[i : i + 1000], s[i : i + 1000], sample_weight=w[i : i + 1000])

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    one = MetricCollection("roc_auc@capacity=500")
    one.update(y, s, sample_weight=w)
    assert mc.encode() == one.encode()


def test_bad_scores_and_weights_raise_as_before():
    mc = MetricCollection("roc_auc")
    mc.update([0, 1], [0.2, 0.4])
    for bad in (np.nan, np.inf, -np.inf):
        with pytest.raises(ValueError, match="finite"):
            mc.update([0, 1], [0.1, bad])
        with pytest.raises(ValueError, match="weight"):
            mc.update([0, 1], [0.1, 0.3], sample_weight=[1.0, bad])
    with pytest.raises(ValueError, match="weight"):
        mc.update([0, 1], [0.1, 0.3], sample_weight=[1.0, -1.0])
    assert mc.compute()["roc_auc"] == 1.0


@needs_numba
def test_kernel_guards_fall_back_on_weights_that_are_not_finite_and_non_negative():
    acc = R.RunningBins.empty(0, 10)
    s = np.array([0.1, 0.2])
    y = np.array([0, 1])
    assert R._kernels()
    for bad in (np.nan, np.inf, -1.0):
        assert acc.fold(s, y, np.array([1.0, bad])) is None
    assert acc.fold(s, y, np.zeros(2)) is acc  # nothing to add


@needs_numba
@pytest.mark.parametrize("dense_level", [0, 36])
def test_dense_packed_counts_add_binades_raise_and_turn_into_limbs(dense_level, monkeypatch):
    """Packed counts in the dense form: binades added, the level raised (back to the hash, then
    dense again), a weighted batch (limbs, from the hash form): the canonical state throughout."""
    monkeypatch.setattr(R, "DENSE_LEVEL", dense_level)
    seen = {"dense": 0}
    to_dense = R.RunningBins._to_dense

    def spy(self):
        to_dense(self)
        seen["dense"] += self.dense is not None

    monkeypatch.setattr(R.RunningBins, "_to_dense", spy)
    rng = np.random.default_rng(12)
    parts = []
    for b in range(24):
        n = 400
        lo = 0.5 if b < 6 else 0.5 / 2 ** (b % 5)  # one binade first, then more
        s = lo + lo * rng.random(n) * (1.0 if b < 12 else 1.0 - 1e-3 * rng.random(n))
        if b % 7 == 6:
            s = -s  # negative binades
        y = rng.integers(0, 2, n)
        parts.append((s, y, rng.random(n) if b == 20 else None))
    layout = L(1000)
    out = S.zero(layout)
    with R.running_folds():
        for i, (s, y, w) in enumerate(parts):
            out = out.fold(Batch(y_true=y, y_score=s, sample_weight=w))
            if i in (5, 15):
                whole = [p for p in parts[: i + 1]]
                sc = np.concatenate([p[0] for p in whole])
                yy = np.concatenate([p[1] for p in whole])
                assert out.encode() == S.from_arrays(layout, sc, yy).encode()
    assert seen["dense"] > 0
    s = np.concatenate([p[0] for p in parts])
    y = np.concatenate([p[1] for p in parts])
    w = np.concatenate([np.ones(len(p[0])) if p[2] is None else p[2] for p in parts])
    assert out.encode() == S.from_arrays(layout, s, y, w).encode()
