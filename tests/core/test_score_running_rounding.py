"""Issue 25 round 9: a running score distribution whose weights are summed on one integer grid
(128-bit integers per bin, see ``score_running``) rounds those integers to float64 directly when
its state is computed (:func:`~mergeable_metrics.states.score_running.round_grid`), without
canonical limbs; encoding still builds them. The values must be the correctly rounded sums
(``fractions.Fraction``) and the states' bytes and values those of the limbs' rounding (the numpy
path, and reading the limbs before the values)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mergeable_metrics import MetricCollection
from mergeable_metrics._util import exact_kernels as K
from mergeable_metrics._util.exact import ExactSums, fraction_to_float
from mergeable_metrics.states import score_running as R

needs_numba = pytest.mark.skipif(not K.AVAILABLE, reason="running bins need the compiled kernels")


@pytest.fixture(autouse=True)
def _kernels_loaded():
    if K.AVAILABLE:
        R._kernels()


def _words(n: int) -> tuple[int, int]:
    """``[lo, hi]`` int64 words of a 128-bit integer ``n >= 0`` (``lo`` unsigned, as int64)."""
    lo, hi = n & ((1 << 64) - 1), n >> 64
    return lo - (1 << 64) if lo >= 1 << 63 else lo, hi


def _round(sums: list[int], E: int) -> tuple[bool, np.ndarray]:
    m = (len(sums) + 1) // 2
    P = np.zeros((m, 4), dtype=np.int64)
    for i, n in enumerate(sums):
        P[i // 2, i % 2], P[i // 2, 2 + i % 2] = _words(n)
    out = np.full(2 * m, np.nan)
    scale = math.ldexp(1.0, E) if -1022 <= E <= 1023 else 0.0
    return bool(R.round_grid(P, np.int64(E), scale, out)), out[: len(sums)]


# sums below 2**127 (the high word is a non-negative int64): small, around 2**53 and 2**63 / 2**64 (ties, carries)
sums = st.one_of(
    st.integers(0, 1 << 20),
    st.integers(0, 1 << 126),
    st.builds(lambda a, b, c: max(0, (a << b) + c), st.integers(1, (1 << 54) - 1), st.integers(0, 72), st.integers(-2, 2)),
    st.builds(lambda b, c: max(0, (1 << b) + c), st.integers(52, 126), st.integers(-3, 3)),
    st.builds(lambda m, b: (2 * m + 1) << b, st.integers(1 << 52, (1 << 53) - 1), st.integers(0, 70)),  # ties
)


@needs_numba
@settings(max_examples=400, deadline=None)
@given(xs=st.lists(sums, min_size=2, max_size=8).filter(lambda v: len(v) % 2 == 0), E=st.integers(-1100, 1000))
def test_round_grid_is_the_correct_rounding_or_declines(xs, E):
    ok, got = _round(xs, E)
    want = [Fraction(n) * Fraction(2) ** E for n in xs]
    normal = all(w == 0 or (Fraction(2) ** -1022 <= w and fraction_to_float(w) != math.inf) for w in want)
    if ok:
        for g, w in zip(got, want):
            assert g == fraction_to_float(w)  # correctly rounded (ties to even)
            assert math.copysign(1.0, g) == 1.0
    else:  # declines only for a result that is not a normal float
        assert not normal


@needs_numba
def test_round_grid_ties_and_edges():
    E = -60
    cases = [
        0,
        1,
        (1 << 53) - 1,
        1 << 53,
        (1 << 53) + 1,
        (1 << 53) + 3,
        (1 << 63) - 1,
        1 << 63,
        (1 << 64) - 1,
        1 << 64,
        (1 << 64) + 1,
        (1 << 117) + (1 << 64),
        (1 << 126) - 1,
    ]
    ok, got = _round(cases + ([0] if len(cases) % 2 else []), E)
    assert ok
    for g, n in zip(got, cases):
        assert g == fraction_to_float(Fraction(n) * Fraction(2) ** E)
    assert not _round([1, 0], -1075)[0]  # subnormal
    assert not _round([1 << 100, 0], 1000)[0]  # past the range
    ok, got = _round([0, 0], -1075)  # zeros only: +0.0
    assert ok and got.tolist() == [0.0, 0.0] and not np.signbit(got).any()


def _collection(n: int, seed: int, weights: str) -> tuple[MetricCollection, tuple]:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    s = np.clip(0.3 * y + 0.7 * rng.random(n), 1e-6, 1 - 1e-6)
    w = {
        "random": rng.random(n),
        "integers": rng.integers(0, 1 << 40, n).astype(float),
        "fine": rng.integers(1, 1024, n) * 2.0**-1000,  # a grid near the bottom of the normal range
        "large": rng.random(n) * 2.0**1023,  # sums past the float range (the limbs round them: inf)
    }[weights]
    mc = MetricCollection("roc_auc", "average_precision")
    for i in range(0, n, 16_384):
        mc.update(y[i : i + 16_384], s[i : i + 16_384], sample_weight=w[i : i + 16_384])
    return mc, (y, s, w)


@needs_numba
@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning", "ignore:metric .* is undefined")
@pytest.mark.parametrize("weights", ["random", "integers", "fine", "large"])
def test_computed_values_and_bytes_are_the_limbs_rounding(weights, monkeypatch):
    n = 120_000
    mc, (y, s, w) = _collection(n, 4, weights)
    (acc,) = [st.__dict__["_running"] for st in mc._states if "_running" in st.__dict__]
    assert acc.grid is not None
    assert (acc.grid_bins()[3] is None) == (weights == "large")  # sums past the float range: the limbs round them
    first = mc.compute()  # the values first: rounded from the 128-bit sums
    blob = mc.encode()
    other, _ = _collection(n, 4, weights)
    blob_first = other.encode()  # the bytes first: the limbs' rounding
    assert blob == blob_first
    again = dict(other.compute())
    assert first.keys() == again.keys() and all(np.array_equal(first[k], again[k], equal_nan=True) for k in first)
    with monkeypatch.context() as m:  # the numpy path: no running bins, no grid
        m.setattr(K, "AVAILABLE", False)
        npy = MetricCollection("roc_auc", "average_precision")
        npy.update(y, s, sample_weight=w)
        assert npy.encode() == blob
    # the state's values are the limbs' rounding, entry by entry (``other`` rounded its limbs first)
    (dist,) = [st for st in mc.states if "_running" in st.__dict__]
    (ref,) = [st for st in other.states if "_running" in st.__dict__]
    for name in ("pos", "neg"):
        v, want = np.asarray(dist.arrays[name]), np.asarray(ref.arrays[name])
        assert v.tobytes() == want.tobytes()
        es = ref.exact[name]
        if es.limbs.shape[1]:
            assert ExactSums.from_limbs(es.limbs, es.exp, es.shape).values.tobytes() == v.tobytes()


@needs_numba
def test_the_state_read_for_values_then_limbs_keeps_its_values():
    mc, _ = _collection(60_000, 9, "random")
    (dist,) = [st for st in mc.states if "_running" in st.__dict__]
    pos = dist.arrays["pos"]  # values alone: no limbs yet
    assert dist.exact["pos"]._raw is not None
    limbs = dist.arrays["pos.limbs"]
    assert limbs.size and dist.exact["pos"]._raw is None
    assert np.array_equal(dist.arrays["pos"], pos)
