"""The counting pass (mergeable_metrics.evaluation.profile): merge order and data splits never change the profile,
quantile edges equal numpy's, the binned sketch is canonical, the codec rejects bad bytes."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mergeable_metrics import Evaluation
from mergeable_metrics.evaluation.profile import KeyCounts, ProfileSummary, SliceProfile, SliceProfiler, ValueSketch
from tests._helpers.sharding import merge_tree, random_shards

SPECS = ["g;max_slices=2", "g,h;max_slices=3;by=weight", "t;max_slices=1", "x:quantiles=4", "h,x:quantiles=3"]

_g = st.one_of(st.none(), st.sampled_from(["a", "b", "c", "d", "é", "a\x00"]))
_x = st.one_of(st.sampled_from([0.0, -0.0, 1.0, 2.5, np.nan, np.inf]), st.floats(-1e6, 1e6, allow_nan=False))


@st.composite
def _rows(draw, max_size: int = 60) -> dict:
    n = draw(st.integers(0, max_size))
    return {
        "g": np.array(draw(st.lists(_g, min_size=n, max_size=n)), dtype=object),
        "h": np.array(draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)), dtype=np.int64),
        "t": draw(st.lists(st.one_of(st.none(), st.lists(st.sampled_from(["p", "q", "r"]), max_size=3)), min_size=n, max_size=n)),
        "x": np.array(draw(st.lists(_x, min_size=n, max_size=n)), dtype=np.float64),
        "w": np.array(draw(st.lists(st.integers(0, 4), min_size=n, max_size=n)), dtype=np.float64),
    }


def _take(data: dict, idx: np.ndarray) -> dict:
    return {k: (v[idx] if isinstance(v, np.ndarray) else [v[i] for i in idx]) for k, v in data.items()}


@settings(max_examples=60, deadline=None)
@given(_rows(), st.integers(0, 2**32 - 1), st.sampled_from([3, 10_000]))
def test_profile_is_independent_of_splits_and_merge_order(data, seed, capacity):
    profiler = SliceProfiler(SPECS, "w", capacity=capacity)
    n = len(data["h"])
    whole = profiler.fold(profiler.zero(), data)
    rng = np.random.default_rng(seed)
    states = []
    for shard in random_shards(rng, n):
        acc = profiler.zero()
        for batch in shard:
            profiler.fold(acc, _take(data, batch))
        states.append(profiler.decode(profiler.encode(acc)))  # through the codec
    merged = merge_tree(states, lambda a, b: profiler.merge(SliceProfile(dict(a.parts)), b), rng, profiler.zero)
    assert merged == whole
    assert profiler.finish(merged) == profiler.finish(whole)
    assert profiler.encode(merged) == profiler.encode(whole)  # canonical bytes


@settings(max_examples=100, deadline=None)
@given(st.lists(st.one_of(st.integers(-50, 50).map(float), st.floats(-1e9, 1e9, allow_nan=False)), min_size=1, max_size=80), st.integers(2, 12))
def test_exact_quantile_edges_equal_numpy(values, k):
    x = np.array(values)
    sketch = ValueSketch.from_values(x[: len(x) // 2]).merge(ValueSketch.from_values(x[len(x) // 2 :]))
    assert sketch.exact
    want = tuple(np.unique(np.quantile(x, np.arange(1, k) / k)).tolist())
    assert sketch.edges(k) == want


def test_binned_sketch_is_canonical_and_its_edges_are_bin_bounds():
    from mergeable_metrics.states.score_distribution import bin_lower_scores, bin_upper_scores

    rng = np.random.default_rng(1)
    x = rng.lognormal(3, 2, 50_000)
    parts = [ValueSketch.from_values(c, capacity=100) for c in np.array_split(x, 7)]
    a = parts[0]
    for p in parts[1:]:
        a = a.merge(p)
    b = ValueSketch.from_values(x[::-1], capacity=100)
    assert a == b and not a.exact and a.keys.size <= 100 and a.count == x.size
    xs = np.sort(x)
    for k in (4, 10):
        edges = a.edges(k)
        for q, e in zip(np.arange(1, k) / k, edges):
            exact = xs[int(np.floor((x.size - 1) * q))]
            # e is the lower end of the bin holding the exact order statistic, a narrow bin
            b = int(np.searchsorted(bin_lower_scores(a.keys, a.level), e))
            assert float(bin_lower_scores(a.keys[b : b + 1], a.level)[0]) == e
            hi = float(bin_upper_scores(a.keys[b : b + 1], a.level)[0])
            assert e <= exact <= hi
            assert (hi - e) <= abs(e) * 2.0 ** (a.level - 52) + 1e-300


def test_quantile_buckets_of_many_distinct_values_use_the_binned_sketch_consistently():
    rng = np.random.default_rng(2)
    n = 30_000
    data = {"y": rng.integers(0, 2, n), "s": rng.random(n), "x": rng.normal(size=n)}
    ev = Evaluation(label_col="y", score_col="s", slices=["x:quantiles=4"], metrics=["tp"])
    prof = SliceProfiler(ev.slices, capacity=1000)
    one = prof.finish(prof.fold(prof.zero(), data))
    chunks = [{k: v[i::3] for k, v in data.items()} for i in range(3)]
    acc = prof.zero()
    for c in chunks[::-1]:
        prof.merge_into(acc, prof.fold(prof.zero(), c))
    assert prof.finish(acc) == one and one.parts["values x"]["exact"] is False
    pev = ev.with_profile(one)
    res = pev.finish(pev.fold(pev.zero(), data))
    edges = one.parts["values x"]["edges"]["4"]
    assert len(res.slices) == 1 + len(edges) + 1
    assert sum(s.n for s in res.slices[1:]) == n
    assert all(abs(s.n - n / 4) < n * 0.01 for s in res.slices[1:])


def test_key_counts_cut_ranks_missing_keys_apart():
    prof = SliceProfiler(["g,h;max_slices=1"])
    data = {"g": np.array(["a", "a", None, None, None, "b", None], dtype=object), "h": np.array([1, 1, 1, 1, 2, 2, 3])}
    acc = prof.fold(prof.zero(), data)
    table = acc.parts["keys g,h;max_slices=1"]
    assert isinstance(table, KeyCounts) and table.distinct == 5 and table.missing.sum() == 3
    summary = prof.finish(acc).parts["keys g,h;max_slices=1"]
    assert summary["folded_values"] == 3 and summary["distinct"] == 5 and len(summary["kept"]) == 2


def test_profile_codec_rejects_bad_bytes():
    prof = SliceProfiler(SPECS, "w")
    good = prof.encode(prof.fold(prof.zero(), {"g": ["a"], "h": [1], "t": [["p"]], "x": [1.0], "w": [1.0]}))
    with pytest.raises(ValueError, match="bad magic"):
        prof.decode(b"XXX" + good[3:])
    with pytest.raises(ValueError, match="checksum"):
        prof.decode(good[:-5] + bytes([good[-5] ^ 1]) + good[-4:])
    with pytest.raises(ValueError, match="version"):
        prof.decode(good[:3] + b"\x09" + good[4:])
    with pytest.raises(TypeError):
        prof.decode("text")
    other = SliceProfiler(["g;max_slices=5"])
    with pytest.raises(ValueError, match="do not match"):
        other.decode(good)
    summary = prof.finish(prof.decode(good))
    assert ProfileSummary.from_json(summary.to_json()) == summary


def test_key_counts_merge_of_a_small_table_into_a_big_one_equals_merge_all():
    rng = np.random.default_rng(4)
    prof = SliceProfiler(["g;max_slices=3;by=weight"], "w")

    def table(n, hi):
        data = {"g": np.array([f"v{i}" if i else None for i in rng.integers(0, hi, n)], dtype=object), "w": rng.integers(0, 5, n).astype(float)}
        return prof.fold(prof.zero(), data).parts["keys g;max_slices=3;by=weight"]

    big, small = table(5000, 3000), table(40, 60000)  # small has new keys, shared keys and longer keys
    fast = big.merge(small)
    assert fast == KeyCounts.merge_all([big, small]) == small.merge(big)
    assert fast.distinct == len(set(big.keys.tolist()) | set(small.keys.tolist()))


def test_a_kept_real_value_named_other_raises_instead_of_merging_with_the_other_slice():
    ev = Evaluation(label_col="y", score_col="p", slices=["g;max_slices=1"], metrics=["example_count"])
    y, p = [0, 1, 0, 1, 1], [0.1, 0.9, 0.2, 0.8, 0.7]
    with pytest.raises(ValueError, match=r"slice spec 'g;max_slices=1'.*'__other__' in every column \(g\)"):
        ev.evaluate([{"y": y, "p": p, "g": ["__other__", "__other__", "__other__", "a", "b"]}])
    # folded into the other slice (not kept), a real "__other__" value is counted there: no clash
    res = ev.evaluate([{"y": y, "p": p, "g": ["a", "a", "a", "__other__", "b"]}])
    assert res[(("g", "a"),)].n == 3 and res[(("g", "__other__"),)].n == 2 and res[(("g", "__other__"),)].folded_values == 2


def _v1_encode_keys(keys):
    """``encode_keys`` in key encoding 1 (the reference of tests/core/test_slicing.py)."""
    from tests.core.test_slicing import _encode_key_v1

    vals = [tuple(v for _, v in k) for k in keys]
    return [_encode_key_v1(v) for v in vals], [None in v for v in vals]


def _as_version_1(data: bytes) -> bytes:
    """Profile bytes with the version byte of release 1 (and a valid checksum)."""
    import struct
    import zlib

    body = data[:3] + b"\x01" + data[4:-4]
    return body + struct.pack("<I", zlib.crc32(body))


def test_profiles_of_key_encoding_1_decode_to_the_profile_and_summary_of_this_version(monkeypatch):
    """Profile bytes (version 1) and summaries (no ``key_encoding``) of earlier releases hold
    keys whose ints sort before floats; they are read with their keys re-encoded (numbers one
    kind), so they equal what this version counts and cuts on the same rows."""
    import mergeable_metrics.evaluation.profile as sp

    specs = ["g;max_slices=2", "h,g;max_slices=3;by=weight", "b;max_slices=1"]
    g = [1] * 6 + [0.5] * 5 + [2**70] * 4 + [None] * 3 + [-1e300] * 2 + [2**80]
    n = len(g)
    data = {
        "g": np.array(g, dtype=object),
        "h": np.array(["a", "a\x00", "", "é", None, "b", "a"] * 3, dtype=object),
        "b": np.array([True, False, None] * (n // 3), dtype=object),
        "w": np.arange(n, dtype=np.float64) + 0.5,
    }
    prof = SliceProfiler(specs, "w")
    now = prof.fold(prof.zero(), data)
    with monkeypatch.context() as m:
        m.setattr(sp, "encode_keys", _v1_encode_keys)
        m.setattr(sp, "KEY_ENCODING", 1)
        old = prof.fold(prof.zero(), data)
        old_summary = {name: {k: v for k, v in part.items() if k != "key_encoding"} for name, part in prof.finish(old).parts.items()}
    assert old != now  # the bytes of numeric keys did change
    upgraded = prof.decode(_as_version_1(old.encode()))
    assert upgraded == now
    assert prof.finish(upgraded) == prof.finish(now)
    # counts without ties at the cut: both versions keep the same values
    assert ProfileSummary(old_summary) == prof.finish(now)
    assert ProfileSummary.from_json(json.dumps(old_summary)) == prof.finish(now)
    with pytest.raises(ValueError, match="key encoding 7"):
        ProfileSummary({"keys g;max_slices=2": {**old_summary["keys g;max_slices=2"], "key_encoding": 7}})
