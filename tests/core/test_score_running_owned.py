"""Issue 25 round 8: ``MetricCollection.update`` folds running score distributions nobody else
holds in place (no copy of the table per batch), and weights on one integer grid are summed per
bin as 128-bit integers (a narrower table than raw 32-bit limbs). States handed out stay
immutable values; every state is the canonical state of its rows, bit for bit: checked against
the numpy path (no compiled kernels) and ``math.fsum`` of the weights per bin."""

from __future__ import annotations

import copy
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
from mergeable_metrics.states.score_distribution import ScoreDistributionLayout, ScoreDistributionState

from tests.core.test_score_running import brute_force

S, L = ScoreDistributionState, ScoreDistributionLayout
needs_numba = pytest.mark.skipif(not K.AVAILABLE, reason="running bins need the compiled kernels")


@pytest.fixture(autouse=True)
def _kernels_loaded():
    """Running bins start at a state's first update only when the kernels are loaded."""
    if K.AVAILABLE:
        R._kernels()


def _acc(mc):
    """The running accumulator of the collection's score distribution (not observing it)."""
    (acc,) = [s.__dict__["_running"] for s in mc._states if "_running" in s.__dict__]
    return acc


def _numpy_bytes(layout, s, y, w, monkeypatch):
    """The one-batch state's bytes on the numpy path (no compiled kernels)."""
    with monkeypatch.context() as m:
        m.setattr(K, "AVAILABLE", False)
        assert not K.ready()
        return S.from_arrays(layout, s, y, w).encode()


def _weights(kind, n, rng):
    if kind == "random":  # multiples of 2**-53 in [0, 1): the benchmark's weights
        return rng.random(n)
    if kind == "integers":
        return rng.integers(0, 1000, n).astype(float)
    if kind == "binades":  # many binades: no 62-bit grid holds them
        return rng.random(n) * 10.0 ** rng.integers(-30, 30, n)
    if kind == "subnormal":
        return np.where(rng.random(n) < 0.5, 5e-324, rng.random(n) * 1e-310)
    if kind == "huge":
        return rng.random(n) * 1e300
    if kind == "zeros":
        w = rng.random(n)
        w[rng.random(n) < 0.5] = 0.0
        w[rng.random(n) < 0.1] = -0.0
        return w
    if kind == "edge":  # around the grid's top (2**62 units) and its finest bit
        e = rng.integers(-70, 12, n)
        return np.ldexp(1.0 + rng.integers(0, 4, n) * 2.0**-52, e)
    raise AssertionError(kind)


KINDS = ["random", "integers", "binades", "subnormal", "huge", "zeros", "edge"]


@needs_numba
def test_update_folds_an_unobserved_state_in_place_on_one_grid():
    rng = np.random.default_rng(0)
    n = 50_000
    s, y, w = rng.integers(0, 1900, n) / 1900.0, rng.integers(0, 2, n), rng.random(n)  # 1,900 distinct scores: exact
    mc = MetricCollection("roc_auc@capacity=2000")
    mc.update(y[:10_000], s[:10_000], sample_weight=w[:10_000])
    mc.update(y[10_000:20_000], s[10_000:20_000], sample_weight=w[10_000:20_000])
    acc = _acc(mc)
    assert acc.grid is not None and acc.table.shape[1] == 3  # [key, lo0, lo1]: 24 bytes a slot
    table = acc.table
    mc.update(y[20_000:30_000], s[20_000:30_000], sample_weight=w[20_000:30_000])
    assert _acc(mc) is acc and acc.table is table  # folded in place: no copy
    kept = mc.states  # observed: shared, the next fold copies once
    assert acc.shared
    mc.update(y[30_000:40_000], s[30_000:40_000], sample_weight=w[30_000:40_000])
    again = _acc(mc)
    assert again is not acc and not again.shared
    mc.update(y[40_000:], s[40_000:], sample_weight=w[40_000:])
    assert _acc(mc) is again  # in place again
    one = MetricCollection("roc_auc@capacity=2000")
    one.update(y[:30_000], s[:30_000], sample_weight=w[:30_000])
    assert mc.plan.encode(kept) == one.encode()
    whole = MetricCollection("roc_auc@capacity=2000")
    whole.update(y, s, sample_weight=w)
    assert mc.encode() == whole.encode()
    from sklearn.metrics import roc_auc_score

    assert mc.compute()["roc_auc@capacity=2000"] == pytest.approx(roc_auc_score(y, s, sample_weight=w), rel=1e-9)


@needs_numba
@pytest.mark.parametrize("first", ["empty", "canonical", "decoded"])
def test_weighted_running_bins_start_on_one_grid_from_a_canonical_state(first, monkeypatch):
    """A canonical state (a first update before the kernels were loaded, decoded bytes) goes on
    one grid when its sums and the batch's weights fit one; the same bytes as the numpy path."""
    rng = np.random.default_rng(3)
    n = 20_000
    s, y, w = rng.random(n), rng.integers(0, 2, n), rng.random(n)
    layout = L(1500)
    start = S.zero(layout)
    if first != "empty":
        start = S.from_arrays(layout, s[:5000], y[:5000], w[:5000])
        if first == "decoded":
            start = S.decode(start.encode())
        assert "_running" not in start.__dict__
    out = start
    with R.running_folds(in_place=True):
        for i in range(0 if first == "empty" else 5000, n, 5000):
            out = out.fold(Batch(y_true=y[i : i + 5000], y_score=s[i : i + 5000], sample_weight=w[i : i + 5000]))
            assert out.__dict__["_running"].grid is not None
    assert out.encode() == _numpy_bytes(layout, s, y, w, monkeypatch)
    # sums past the grid (a huge weight first): limbs, the same bytes
    w2 = w.copy()
    w2[0] = 1e300
    start = S.from_arrays(layout, s[:5000], y[:5000], w2[:5000])
    with R.running_folds(in_place=True):
        out = start.fold(Batch(y_true=y[5000:], y_score=s[5000:], sample_weight=w2[5000:]))
    assert out.__dict__["_running"].grid is None
    assert out.encode() == _numpy_bytes(layout, s, y, w2, monkeypatch)


@needs_numba
@pytest.mark.parametrize("weighted", [False, True])
def test_states_handed_out_keep_their_value_and_bytes_after_more_updates(weighted):
    rng = np.random.default_rng(1)
    n = 30_000
    s, y = rng.random(n), rng.integers(0, 2, n)
    w = rng.random(n) if weighted else None
    mc = MetricCollection("roc_auc", "average_precision")
    kept = []
    for i in range(0, n, 3000):
        mc.update(y[i : i + 3000], s[i : i + 3000], sample_weight=None if w is None else w[i : i + 3000])
        if i % 6000 == 0:
            states = mc.states
            kept.append((i + 3000, states, mc.plan.encode(states), mc.plan.compute(states)))
        if i == 9000:
            clones = (copy.copy(mc), pickle.loads(pickle.dumps(mc)))
            clone_bytes = mc.encode()
    for c in clones:  # copies hold the states as they were; updating a copy changes neither
        c.update(y[:100], s[:100], sample_weight=None if w is None else w[:100])
    for end, states, blob, values in kept:
        assert mc.plan.encode(states) == blob  # the same bytes after the later updates
        one = MetricCollection("roc_auc", "average_precision")
        one.update(y[:end], s[:end], sample_weight=None if w is None else w[:end])
        assert blob == one.encode()
        assert dict(mc.plan.compute(states)) == dict(values) == dict(one.compute())
    one = MetricCollection("roc_auc", "average_precision")
    one.update(y[:12_000], s[:12_000], sample_weight=None if w is None else w[:12_000])
    assert clone_bytes == one.encode()
    one.update(y, s, sample_weight=w)
    for c in clones:
        assert c.encode() != clone_bytes
    whole = MetricCollection("roc_auc", "average_precision")
    whole.update(y, s, sample_weight=w)
    assert mc.encode() == whole.encode()


@needs_numba
@pytest.mark.filterwarnings("ignore:metric .* is undefined")
def test_readers_and_writers_at_once_see_immutable_states():
    rng = np.random.default_rng(5)
    n = 48_000
    s, y, w = rng.random(n), rng.integers(0, 2, n), rng.random(n)
    mc = MetricCollection("roc_auc@capacity=700")
    seen = []
    done = threading.Event()
    start = threading.Barrier(4)

    def write(k):
        start.wait()
        for i in range(k * 16_000, (k + 1) * 16_000, 800):
            mc.update(y[i : i + 800], s[i : i + 800], sample_weight=w[i : i + 800])

    def read():
        start.wait()
        while not done.is_set():
            states = mc.states
            seen.append((states, mc.plan.encode(states)))
            mc.compute()

    writers = [threading.Thread(target=write, args=(k,)) for k in range(3)]
    reader = threading.Thread(target=read)
    for t in (*writers, reader):
        t.start()
    for t in writers:
        t.join()
    done.set()
    reader.join()
    assert seen
    for states, blob in seen:
        assert mc.plan.encode(states) == blob
    one = MetricCollection("roc_auc@capacity=700")
    one.update(y, s, sample_weight=w)
    assert mc.encode() == one.encode()


@needs_numba
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(
    kinds=st.lists(st.sampled_from(KINDS), min_size=1, max_size=5),
    sizes=st.lists(st.integers(0, 700), min_size=5, max_size=5),
    capacity=st.sampled_from([2, 5, 64, 40_000]),
    scores=st.sampled_from(["continuous", "ties", "wide"]),
    observe=st.lists(st.booleans(), min_size=5, max_size=5),
    min_slots=st.sampled_from([4, 1 << 10]),
    dense_level=st.sampled_from([0, 36, 53]),
    seed=st.integers(0, 2**32 - 1),
)
def test_weighted_running_fold_is_the_reference_state_for_any_batching(kinds, sizes, capacity, scores, observe, min_slots, dense_level, seed, monkeypatch):
    """Batches of grid weights, integers, weights over many binades, subnormals, zeros, huge
    values and weights at the grid's edges, in any order and batching, folded through
    ``update`` (in place, observed or not between batches): the numpy path's bytes and the
    ``math.fsum`` of the weights per bin."""
    rng = np.random.default_rng(seed)
    parts = []
    for k, n in zip(kinds, sizes):
        if scores == "continuous":
            s = rng.random(n)
        elif scores == "ties":
            s = rng.integers(0, 9, n) / 9.0
        else:
            s = rng.normal(size=n) * 10.0 ** rng.integers(-200, 200, n)
        parts.append((s, rng.integers(0, 2, n), _weights(k, n, rng)))
    monkeypatch.setattr(R, "MIN_SLOTS", min_slots)
    monkeypatch.setattr(R, "DENSE_LEVEL", dense_level)  # 0: grid sums go dense at every level where it fits; 53: never
    mc = MetricCollection(f"roc_auc@capacity={capacity}")
    for (s, y, w), look in zip(parts, observe):
        mc.update(y, s, sample_weight=w)
        if look:
            mc.encode()
    s = np.concatenate([p[0] for p in parts])
    y = np.concatenate([p[1] for p in parts])
    w = np.concatenate([p[2] for p in parts])
    layout = L(capacity)
    (got,) = [x for x in mc.states if isinstance(x, S)]
    assert got.encode() == _numpy_bytes(layout, s, y, w, monkeypatch)
    level, u, pos, neg = brute_force(s, y, w, capacity)
    assert got.level == level
    np.testing.assert_array_equal(got["keys"], u)
    np.testing.assert_array_equal(got["pos"], pos)
    np.testing.assert_array_equal(got["neg"], neg)


@needs_numba
@pytest.mark.parametrize("kind", KINDS)
def test_grid_sums_turn_into_limbs_for_unweighted_rows_and_off_grid_weights(kind, monkeypatch):
    """A grid accumulator folded with unweighted rows or weights off its grid continues in
    limbs: the same state (states folded directly, in place and not)."""
    rng = np.random.default_rng(7)
    layout = L(300)
    parts = [(rng.random(500), rng.integers(0, 2, 500), rng.random(500))]
    parts.append((rng.random(400), rng.integers(0, 2, 400), _weights(kind, 400, rng)))
    parts.append((rng.random(300), rng.integers(0, 2, 300), None))
    parts.append((rng.random(300), rng.integers(0, 2, 300), rng.random(300)))
    for in_place in (False, True):
        out = S.zero(layout)
        with R.running_folds(in_place=in_place):
            for s, y, w in parts:
                out = out.fold(Batch(y_true=y, y_score=s, sample_weight=w))
        s = np.concatenate([p[0] for p in parts])
        y = np.concatenate([p[1] for p in parts])
        w = np.concatenate([np.ones(len(p[0])) if p[2] is None else p[2] for p in parts])
        assert out.encode() == _numpy_bytes(layout, s, y, w, monkeypatch)


@needs_numba
@pytest.mark.parametrize("weighted", [False, True])
def test_a_table_past_its_bound_in_the_middle_of_an_in_place_fold(weighted, monkeypatch):
    """The fold in place stops where the table would exceed its bound; the rest of the batch
    folds as before (the rows already added are not added twice)."""
    rng = np.random.default_rng(11)
    n = 3030
    s, y = rng.random(n), rng.integers(0, 2, n)
    w = rng.random(n) if weighted else None
    monkeypatch.setattr(R, "MIN_SLOTS", 4)
    monkeypatch.setattr(R, "DENSE_LEVEL", 53)
    monkeypatch.setattr(R, "MAX_TABLE_BYTES", 64 * 40)  # grows fail past 64 (weighted) or 128 slots
    rests = []
    fold_rest = S._fold_rest

    def spy(self, *a):
        rests.append(a[0].shape[0])
        return fold_rest(self, *a)

    monkeypatch.setattr(S, "_fold_rest", spy)
    mc = MetricCollection("roc_auc@capacity=1000")
    for i, j in ((0, 30), (30, n)):  # 30 bins fit; 3,000 more do not
        mc.update(y[i:j], s[i:j], sample_weight=None if w is None else w[i:j])
    assert rests and 0 < rests[-1] < n - 30  # stopped in the middle of the second batch
    with monkeypatch.context() as m:
        m.setattr(K, "AVAILABLE", False)
        one = MetricCollection("roc_auc@capacity=1000")
        one.update(y, s, sample_weight=w)
        want = one.encode()
    assert mc.encode() == want


def test_states_property_without_compiled_kernels(monkeypatch):
    """Without the compiled kernels (no running bins) the states are the canonical ones and
    kept states are unchanged by later updates."""
    monkeypatch.setattr(K, "AVAILABLE", False)
    rng = np.random.default_rng(4)
    s, y, w = rng.random(3000), rng.integers(0, 2, 3000), rng.random(3000)
    mc = MetricCollection("roc_auc")
    mc.update(y[:1000], s[:1000], sample_weight=w[:1000])
    kept = mc.states
    blob = mc.plan.encode(kept)
    mc.update(y[1000:], s[1000:], sample_weight=w[1000:])
    assert mc.plan.encode(kept) == blob
    assert not any("_running" in x.__dict__ for x in mc.states)
    from sklearn.metrics import roc_auc_score

    assert mc.compute()["roc_auc"] == pytest.approx(roc_auc_score(y, s, sample_weight=w), rel=1e-9)


@needs_numba
def test_a_fold_that_raises_leaves_the_state_folded_in_place_untouched(monkeypatch):
    """The states folded in place fold last: an error in another state's fold leaves the
    collection's states as they were (nothing of the batch added)."""
    from mergeable_metrics.states.base import ExampleCountState

    rng = np.random.default_rng(13)
    s, y, w = rng.random(3000), rng.integers(0, 2, 3000), rng.random(3000)
    mc = MetricCollection("roc_auc")
    mc.update(y[:1000], s[:1000], sample_weight=w[:1000])
    mc.update(y[1000:2000], s[1000:2000], sample_weight=w[1000:2000])
    acc = _acc(mc)
    fold = ExampleCountState.fold

    def boom(self, batch):
        raise OverflowError("boom")

    monkeypatch.setattr(ExampleCountState, "fold", boom)
    with pytest.raises(OverflowError):
        mc.update(y[2000:], s[2000:], sample_weight=w[2000:])
    monkeypatch.setattr(ExampleCountState, "fold", fold)
    assert _acc(mc) is acc
    one = MetricCollection("roc_auc")
    one.update(y[:2000], s[:2000], sample_weight=w[:2000])
    assert mc.encode() == one.encode()
    mc.update(y[2000:], s[2000:], sample_weight=w[2000:])
    one.update(y[2000:], s[2000:], sample_weight=w[2000:])
    assert mc.encode() == one.encode()
