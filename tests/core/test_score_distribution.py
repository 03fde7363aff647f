"""ScoreDistributionState: keys, canonical binning, monoid laws, codec, invariants, size."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mergeable_metrics.states.score_bins as sb
from mergeable_metrics.engine import Plan
from mergeable_metrics.metrics import Task
from mergeable_metrics.inputs.validation import Batch
from mergeable_metrics.states.score_distribution import (
    DEFAULT_CAPACITY,
    ScoreDistributionLayout,
    ScoreDistributionState,
    bin_lower_scores,
    bin_upper_scores,
    keys_to_scores,
    score_keys,
)
from mergeable_metrics.states.base import State

S, L = ScoreDistributionState, ScoreDistributionLayout


def brute_force(score, y, w, capacity):
    """The canonical state by definition: distinct keys of non-zero-weight rows, then the smallest
    level at which at most ``capacity`` bins remain."""
    score, y = np.asarray(score, float), np.asarray(y, int)
    w = np.ones(len(score)) if w is None else np.asarray(w, float)
    keep = w > 0
    keys, y, w = score_keys(score[keep]), y[keep], w[keep]
    for level in range(64):
        b = keys >> level
        u, inv = np.unique(b, return_inverse=True)
        if u.size <= capacity:
            pos = np.bincount(inv, weights=w * y, minlength=u.size)
            neg = np.bincount(inv, weights=w * (1 - y), minlength=u.size)
            return level, u, pos, neg
    raise AssertionError("unreachable")


def assert_canonical(state, score, y, w, capacity):
    level, u, pos, neg = brute_force(score, y, w, capacity)
    assert state.level == level
    np.testing.assert_array_equal(state["keys"], u)
    np.testing.assert_allclose(state["pos"], pos, rtol=1e-12, atol=0)
    np.testing.assert_allclose(state["neg"], neg, rtol=1e-12, atol=0)


def test_keys_preserve_order_and_identify_zeros():
    x = np.array([-np.inf, -1.7976931348623157e308, -1e300, -1.0, -1e-300, -5e-324, -0.0, 0.0, 5e-324,
                  1e-300, 0.5, 1.0, 1e300, 1.7976931348623157e308, np.inf])  # fmt: skip
    k = score_keys(x)
    assert np.all(np.diff(k[[0, 1, 2, 3, 4, 5, 6, 8, 9, 10, 11, 12, 13, 14]]) > 0)
    assert k[6] == k[7] == 0
    np.testing.assert_array_equal(score_keys(-x), -k)
    finite = np.isfinite(x)
    back = keys_to_scores(k[finite])
    np.testing.assert_array_equal(back, np.where(x[finite] == 0, 0.0, x[finite]))
    rng = np.random.default_rng(0)
    r = np.concatenate([rng.normal(size=500) * 10.0 ** rng.integers(-300, 300, 500), rng.random(500)])
    order = np.argsort(r, kind="stable")
    assert np.all(np.diff(score_keys(r)[order]) >= 0)


def test_bin_edges_bracket_their_scores():
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.normal(size=300) * 10.0 ** rng.integers(-200, 200, 300), [0.0, 1.7976931348623157e308, -1.7976931348623157e308]])
    k = score_keys(x)
    for level in (1, 5, 20, 44, 52, 53, 60, 62, 63):
        b = k >> level
        lo, hi = bin_lower_scores(b, level), bin_upper_scores(b, level)
        assert np.all(lo <= x) and np.all(x <= hi) and np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))
        # the lower edge of a bin is in the bin: "score >= lower edge" selects exactly bins >= b
        assert np.array_equal(score_keys(lo) >> level, b)
    np.testing.assert_array_equal(bin_lower_scores(k, 0), np.where(x == 0, 0.0, x))


def test_layout_validation_and_default_size():
    assert L().capacity == DEFAULT_CAPACITY == 40_000
    assert 3 * 8 * DEFAULT_CAPACITY < 1 << 20
    for bad in (1, 0, -5, 2.5, True, "10", 1 << 27):
        with pytest.raises(ValueError, match="capacity"):
            L(bad)
    assert S.layout_for([100, 7], Task()) == L(100)
    assert S.layout_for([None, 100, None, 7], Task()) == L()  # None is the default capacity
    assert S.layout_for([None, 10**6], Task()) == L(10**6)
    assert S.layout_for([None], Task()) == L()


DATA_KINDS = ["uniform", "normal-logits", "rounded", "narrow", "extreme", "constant"]


def _data(kind, n, rng):
    if kind == "uniform":
        s = rng.random(n)
    elif kind == "normal-logits":
        s = rng.normal(size=n) * 4
    elif kind == "rounded":
        s = np.round(rng.random(n), 2)
    elif kind == "narrow":
        s = 0.5 + 1e-9 * rng.random(n)
    elif kind == "extreme":
        s = rng.choice([-0.0, 0.0, 1.0, -1e300, 1e300, 5e-324, -5e-324, 1e-200, 3.0], n)
    else:
        s = np.full(n, 0.25)
    return s, rng.integers(0, 2, n)


@pytest.mark.parametrize("kind", DATA_KINDS)
@pytest.mark.parametrize("n", [1, 7, 300, 200_000])
@pytest.mark.parametrize("capacity", [2, 5, 64, DEFAULT_CAPACITY])
def test_from_batch_is_the_canonical_state(kind, n, capacity):
    rng = np.random.default_rng(hash((kind, n, capacity)) % 2**32)
    s, y = _data(kind, n, rng)
    w = rng.choice([0.0, 1.0, 2.0, 0.25], n) if n % 2 else None
    st = S.from_batch(L(capacity), Batch(y_true=y, y_score=s, sample_weight=w))
    assert_canonical(st, s, y, w, capacity)


@pytest.mark.parametrize("case", range(12))
def test_histogram_paths_with_rare_binades_and_refinement(case, monkeypatch):
    """Force the large-batch paths (sample-chosen tables, binades the sample misses, exact
    refinement of discrete scores) on small data and compare with the definition."""
    monkeypatch.setattr(sb, "_SORT_MAX", 16)
    monkeypatch.setattr(sb, "_CHUNK", 1000)
    rng = np.random.default_rng(case)
    n = 20_000
    s = np.round(rng.random(n), int(rng.integers(1, 4))) * rng.choice([1, -1], n)
    s[rng.integers(0, n, 3)] = rng.choice([1e-200, -1e-250, 3e100, 5e-324], 3)
    if case % 2:
        s[rng.integers(0, n, 40)] = rng.normal(size=40)  # a few multi-valued cells
    if case % 4 == 3:
        s = rng.normal(size=n) * 1e3  # continuous, both signs
    y = rng.integers(0, 2, n)
    w = None if case % 3 else rng.random(n) * (rng.random(n) > 0.1)
    for capacity in (10, 300, 5000, DEFAULT_CAPACITY):
        st = S.from_arrays(L(capacity), s, y, w)
        assert_canonical(st, s, y, w, capacity)


def test_narrow_and_unbounded_ranges_do_not_collapse():
    rng = np.random.default_rng(2)
    n = 300_000
    y = rng.integers(0, 2, n)
    for s in (0.5 + 1e-9 * rng.random(n), rng.normal(size=n) * 1e250, rng.normal(size=n) * 1e-250, rng.normal(size=n) * 30):
        st = S.from_arrays(L(), s, y)
        assert st.num_bins > DEFAULT_CAPACITY // 2  # relative bin width: resolution is kept
        assert len(st.encode()) < 1 << 20


def test_state_bytes_under_one_mib_at_default_capacity():
    rng = np.random.default_rng(3)
    n = 400_000
    st = S.from_arrays(L(), rng.random(n), rng.integers(0, 2, n))
    assert st.level > 0 and DEFAULT_CAPACITY // 2 < st.num_bins <= DEFAULT_CAPACITY
    assert len(st.encode()) < 1 << 20


# -- monoid laws --------------------------------------------------------------------------------
def _split_fold(layout, s, y, w, cuts, order):
    parts = np.split(np.arange(len(s)), cuts)
    states = [S.from_arrays(layout, s[p], y[p], None if w is None else w[p]) for p in parts]
    out = S.zero(layout)
    for i in order(len(states)):
        out = out.merge(states[i])
    return out, states


@settings(max_examples=60)
@given(
    data=st.lists(st.tuples(st.integers(0, 1), st.sampled_from([0.0, 0.1, 0.5, 0.9, 1.0, -3.0, 1e-9, 2.5e-9]), st.integers(0, 3)), max_size=60),
    capacity=st.sampled_from([2, 3, 4, 7, 100]),
    seed=st.integers(0, 2**32 - 1),
    continuous=st.booleans(),
    weighted=st.booleans(),
    sort_max=st.sampled_from([4, 1 << 17]),
)
def test_merge_order_and_split_never_change_the_state(data, capacity, seed, continuous, weighted, sort_max):
    rng = np.random.default_rng(seed)
    y = np.array([d[0] for d in data], dtype=np.int64)
    s = np.array([d[1] for d in data], dtype=float)
    if continuous:
        s = s + rng.normal(size=len(s)) * 1e-3
    w = np.array([d[2] for d in data], dtype=float) if weighted else None
    layout = L(capacity)
    whole = S.from_arrays(layout, s, y, w)
    assert_canonical(whole, s, y, w, capacity)
    cuts = np.sort(rng.integers(0, len(s) + 1, rng.integers(0, 6)))  # empty shards included
    merged, states = _split_fold(layout, s, y, w, cuts, lambda k: rng.permutation(k))
    assert merged == whole
    # State.fold bins each shard at the running state's level (or, above _SORT_MAX rows, by the
    # histogram path then a merge): the same canonical state
    old, sb._SORT_MAX = sb._SORT_MAX, sort_max
    try:
        folded = S.zero(layout)
        for p in np.split(np.arange(len(s)), cuts):
            folded = folded.fold(Batch(y_true=y[p], y_score=s[p], sample_weight=None if w is None else w[p]))
    finally:
        sb._SORT_MAX = old
    assert folded == whole
    # a random tree of merges, random operand order
    items = list(states) + [S.zero(layout)]
    while len(items) > 1:
        i, j = sorted(rng.choice(len(items), 2, replace=False))
        a, b = items.pop(j), items.pop(i)
        items.append(a.merge(b) if rng.random() < 0.5 else b.merge(a))
    assert items[0] == whole
    assert whole.merge(S.zero(layout)) == whole == S.zero(layout).merge(whole)


def test_fold_equals_merge_of_from_batch():
    rng = np.random.default_rng(4)
    s, y = rng.random(500), rng.integers(0, 2, 500)
    layout = L(50)
    b1, b2 = Batch(y_true=y[:200], y_score=s[:200]), Batch(y_true=y[200:], y_score=s[200:])
    assert S.zero(layout).fold(b1).fold(b2) == S.from_arrays(layout, s, y)


def test_fold_of_large_compressed_streams_matches_from_batch():
    """64K-row batches of continuous scores folded into a compressed state: the state of the whole."""
    rng = np.random.default_rng(11)
    n = 400_000
    for s in (rng.random(n), rng.normal(size=n) * 5, np.round(rng.random(n), 3)):
        y = rng.integers(0, 2, n)
        out = S.zero(L(1000))
        for i in range(0, n, 65_536):
            out = out.fold(Batch(y_true=y[i : i + 65_536], y_score=s[i : i + 65_536]))
        assert out == S.from_arrays(L(1000), s, y)


def test_merging_different_capacity_raises_naming_capacity():
    a, b = S.zero(L(10)), S.zero(L(20))
    with pytest.raises(ValueError, match="capacity"):
        a.merge(b)
    with pytest.raises(ValueError, match="capacity"):
        Plan(["roc_auc@capacity=10"], Task()).merge(Plan(["roc_auc@capacity=10"], Task()).zero(), Plan(["roc_auc@capacity=20"], Task()).zero())
    with pytest.raises(ValueError):
        a.merge(Plan(["f1"], Task()).zero()[1])


# -- codec and invariants -------------------------------------------------------------------------
def test_codec_round_trip_and_immutability():
    rng = np.random.default_rng(5)
    for st_ in (S.zero(L()), S.from_arrays(L(7), rng.random(100), rng.integers(0, 2, 100), rng.random(100)),
                S.from_arrays(L(), [0.3], [1])):  # fmt: skip
        back = State.decode(st_.encode())
        assert back == st_ and back.level == st_.level and hash(back) == hash(st_)
        with pytest.raises(ValueError):
            st_["pos"][...] = 1.0
    plan = Plan(["roc_auc", "average_precision", "f1"], Task())
    states = plan.fold(plan.zero(), Batch(y_true=np.array([0, 1, 1]), y_score=np.array([0.2, 0.8, 0.5])))
    assert plan.decode(plan.encode(states)) == states


@pytest.mark.parametrize(
    "arrays, message",
    [
        ({"level": 0, "keys": [2, 1], "pos": [1.0, 1.0], "neg": [0.0, 0.0]}, "increasing"),
        ({"level": 0, "keys": [1, 2], "pos": [1.0], "neg": [0.0, 0.0]}, "lengths"),
        ({"level": 0, "keys": [1], "pos": [0.0], "neg": [0.0]}, "positive per bin"),
        ({"level": 0, "keys": [1], "pos": [-1.0], "neg": [2.0]}, ">= 0"),
        ({"level": 0, "keys": [1], "pos": [np.nan], "neg": [2.0]}, "finite"),
        ({"level": 64, "keys": [], "pos": [], "neg": []}, "level"),
        ({"level": 3, "keys": [1], "pos": [1.0], "neg": [0.0]}, "canonical"),
        ({"level": 0, "keys": [0x7FF0_0000_0000_0000], "pos": [1.0], "neg": [0.0]}, "finite scores"),
        ({"level": 0, "keys": [1, 2, 3], "pos": [1.0] * 3, "neg": [0.0] * 3}, "capacity"),
    ],
)
def test_invalid_states_are_rejected(arrays, message):
    arr = {
        "level": np.int64(arrays["level"]),
        "keys": np.array(arrays["keys"], dtype=np.int64),
        "pos": np.array(arrays["pos"], dtype=np.float64),
        "neg": np.array(arrays["neg"], dtype=np.float64),
    }
    with pytest.raises(ValueError, match=message):
        S(L(2), arr)


def test_corrupted_bytes_are_rejected():
    st_ = S.from_arrays(L(4), np.arange(10.0), np.arange(10) % 2)
    data = bytearray(st_.encode())
    data[-12] ^= 0xFF
    with pytest.raises(ValueError):
        State.decode(bytes(data))


def test_from_arrays_validates_and_uses_predictions_as_scores():
    with pytest.raises(ValueError, match="0 or 1"):
        S.from_arrays(L(), [0.1, 0.2], [0, 2])
    with pytest.raises(ValueError, match="finite"):
        S.from_arrays(L(), [0.1, np.nan], [0, 1])
    with pytest.raises(ValueError, match="weight"):
        S.from_arrays(L(), [0.1, 0.2], [0, 1], np.array([1.0, -1.0]))
    with pytest.raises(ValueError, match="length"):
        S.from_arrays(L(), [0.1, 0.2], [0])
    st_ = S.from_batch(L(), Batch(y_true=np.array([0, 1, 1]), y_pred=np.array([0, 1, 0])))
    np.testing.assert_array_equal(st_.thresholds(), [0.0, 1.0])
    np.testing.assert_array_equal(st_["pos"], [1.0, 1.0])
    with pytest.raises(ValueError, match="scores"):
        S.from_batch(L(), Batch(y_true=np.array([0, 1])))


def test_accessors():
    st_ = S.from_arrays(L(3), [0.1, 0.2, 0.3, 0.4, 0.5], [0, 1, 0, 1, 1], [1.0, 2.0, 0.0, 1.0, 1.0])
    assert not st_.is_exact and st_.totals() == (4.0, 1.0)
    rng_ = st_.score_range()
    assert rng_.shape == (st_.num_bins, 2) and np.all(rng_[:, 0] <= rng_[:, 1])
    assert "level=" in repr(st_) and "score_distribution" in st_.summary()


def test_split_shifts_count_bins_at_every_level():
    """The closed-form bin count used to pick the canonical level agrees with counting."""
    rng = np.random.default_rng(6)
    for t in range(60):
        x = np.unique(score_keys(rng.normal(size=int(rng.integers(2, 2000))) * 10.0 ** int(rng.integers(-300, 300))))
        if t % 3 == 0:
            x = np.unique(np.r_[x, score_keys(np.array([0.0, 5e-324, -5e-324, 1.7e308, -1.7e308]))])
        split = sb._split_shifts(x)
        for s in range(64):
            assert np.unique(x >> np.int64(s)).size == 1 + np.count_nonzero(split > s)
    edge = np.array([0, 1, 2**53, 2**53 + 1, 2**54 - 1, 2**62, 2**63 - 1], dtype=np.int64)
    want = [int(a ^ b).bit_length() for a, b in zip(edge[:-1].tolist(), edge[1:].tolist())]
    np.testing.assert_array_equal(sb._split_shifts(edge), want)
