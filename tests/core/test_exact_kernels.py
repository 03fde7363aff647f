"""The compiled exact-sum kernels (issue 25, item 1) against the exact reference arithmetic.

* Sums of 1 to 3 factor products per group through the numba kernels equal the true rational sum
  (``fractions.Fraction``), round like ``math.fsum``, and are bit for bit the numpy path's
  (``MERGEABLE_METRICS_DISABLE_NUMBA``'s fallback), on adversarial inputs: huge, tiny, subnormal,
  cancelling, +-1.8e308, -0.0, mixed signs; re-batching never changes a bit.
* Without numba (forced by the environment variable) the library still imports and sums exactly.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mergeable_metrics._util import exact as E
from mergeable_metrics._util import exact_kernels as K

pytestmark = pytest.mark.skipif(not K.AVAILABLE, reason="numba kernels disabled or not installed")

ADVERSARIAL = [1.7976931348623157e308, 1e308, 1e300, 1e-300, 1e16, 1.0, 0.1, 2.0**53, 2.0**53 + 2, 5e-324, 2.2250738585072014e-308, 1e-17, 3.0, 0.0, -0.0]
VALUES = st.one_of(st.floats(allow_nan=False, allow_infinity=False), st.sampled_from(ADVERSARIAL + [-v for v in ADVERSARIAL]))
#: product factors: every product and partial product stays finite (the numpy path's domain too)
FACTORS = st.one_of(st.floats(min_value=-1e100, max_value=1e100, allow_nan=False), st.sampled_from([5e-324, -1e-300, 1e100, -0.0, 0.1, 3.0]))


def _numpy_path(factors, index=None, size=None):
    K.ready()  # load the kernels first: ready() must not see the patched flag on its first call
    saved, K.AVAILABLE = K.AVAILABLE, False
    try:
        return E.exact_sum_products(factors, index, size)
    finally:
        K.AVAILABLE = saved


def _true(factors, index, size):
    out = [Fraction(0)] * size
    for i in range(len(factors[0])):
        p = Fraction(1)
        for f in factors:
            p *= Fraction(float(f[i]))
        out[0 if index is None else int(index[i])] += p
    return out


@settings(max_examples=300)
@given(st.lists(VALUES, max_size=40))
def test_kernel_sum_is_the_true_sum_and_fsum(xs):
    x = np.array(xs, dtype=np.float64)
    got = E.exact_sum(x)
    assert got.fraction() == _true([x], None, 1)[0]
    try:
        want = math.fsum(xs)
    except OverflowError:  # fsum's partials overflow; the true sum's rounding then is +-inf or huge
        want = E.fraction_to_float(_true([x], None, 1)[0])
    assert got.values.item() == want
    assert got == _numpy_path([x])


@settings(max_examples=200)
@given(st.integers(1, 3), st.lists(st.tuples(FACTORS, FACTORS, FACTORS, st.integers(0, 3)), max_size=30))
def test_kernel_products_per_group_are_exact(nf, rows):
    cols = [np.array([r[j] for r in rows], dtype=np.float64) for j in range(nf)]
    g = np.array([r[3] for r in rows], dtype=np.int64)
    got = E.exact_sum_products(cols, g, 4)
    assert got.fractions() == _true(cols, g, 4)
    assert got == _numpy_path(cols, g, 4)
    one = E.exact_sum_products(cols)
    assert one.fraction() == sum(_true(cols, g, 4), Fraction(0))
    assert one == _numpy_path(cols)


@settings(max_examples=100)
@given(st.lists(VALUES, min_size=1, max_size=60), st.lists(st.integers(1, 60), max_size=5))
def test_kernel_rebatching_identity(xs, cuts):
    x = np.array(xs, dtype=np.float64)
    whole = E.exact_sum(x, index=np.arange(x.size) % 3, size=3)
    edges = sorted({0, x.size, *[c % (x.size + 1) for c in cuts]})
    total = E.ExactSums.zeros((3,))
    for a, b in zip(edges, edges[1:]):
        total = total + E.exact_sum(x[a:b], index=np.arange(a, b) % 3, size=3)
    assert total == whole


def test_kernel_large_input_and_chunks(monkeypatch):
    rng = np.random.default_rng(0)
    x = rng.normal(size=5000) * np.exp2(rng.integers(-60, 60, size=5000).astype(float))
    w = rng.random(5000)
    want = E.exact_sum(x, w, index=np.arange(5000) % 7, size=7)
    assert want == _numpy_path([x, w], np.arange(5000) % 7, 7)
    monkeypatch.setattr(K, "CHUNK", 999)  # several kernel calls, carried in between
    assert E.exact_sum(x, w, index=np.arange(5000) % 7, size=7) == want


def test_kernel_rejects_non_finite_and_bad_index():
    with pytest.raises(ValueError, match=r"value inf at position 2 is not finite"):
        E.exact_sum(np.array([1.0, 2.0, np.inf]))
    with pytest.raises(ValueError, match=r"value nan at position 1 is not finite"):
        E.exact_sum(np.array([1.0, 2.0]), np.array([1.0, np.nan]))
    with pytest.raises(ValueError, match=r"index 5 at position 0 is outside \[0, 2\)"):
        E.exact_sum(np.array([1.0]), index=np.array([5]), size=2)


def test_fallback_without_numba_is_exact_and_identical():
    x = np.array([1e300, 1.0, -1e300, 5e-324, 0.1, -0.0])
    code = (
        "import numpy as np; from fractions import Fraction as F; from mergeable_metrics._util import exact_kernels as K, exact as E; "
        f"x = np.array({x.tolist()!r}); s = E.exact_sum(x); "
        "print(K.AVAILABLE, s.fraction() == sum(map(F, x.tolist()), F(0)), s.exp, s.limbs.tolist(), s.values.item())"
    )
    env = dict(os.environ, MERGEABLE_METRICS_DISABLE_NUMBA="1")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    s = E.exact_sum(x)
    assert out.stdout.split() == ["False", "True", str(s.exp), *str(s.limbs.tolist()).split(), repr(s.values.item())]


@pytest.mark.parametrize("nf", [1, 2, 3])
def test_kernel_many_rows_cross_blocks_and_flushes(nf):
    """More rows than one flush of the float grids (2**16) and than one block (2048), ungrouped
    and grouped: the numpy path's bits (itself checked against Fraction above) and, for plain
    sums, ``math.fsum``."""
    rng = np.random.default_rng(nf)
    n = (1 << 16) * 2 + 777
    cols = [rng.normal(100.0, 10.0, n), rng.random(n), rng.normal(0.0, 1e-3, n)][:nf]
    got = E.exact_sum_products(cols)
    assert got == _numpy_path(cols)
    if nf == 1:
        assert got.values.item() == math.fsum(cols[0].tolist())
    g = rng.integers(0, 5, n)
    assert E.exact_sum_products(cols, g, 5) == _numpy_path(cols, g, 5)


def test_cache_dir_falls_back_to_the_user_cache_when_the_package_is_read_only(monkeypatch, tmp_path):
    import numba

    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(K.os, "access", lambda path, mode: False)  # read-only site-packages
    monkeypatch.setattr(numba.config, "CACHE_DIR", numba.config.CACHE_DIR)
    K._cache_dir()
    want = str(tmp_path / "mergeable_metrics" / "numba")
    assert os.environ["NUMBA_CACHE_DIR"] == want and numba.config.CACHE_DIR == want
    monkeypatch.setenv("NUMBA_CACHE_DIR", "/elsewhere")  # the user's choice wins
    K._cache_dir()
    assert os.environ["NUMBA_CACHE_DIR"] == "/elsewhere"


def test_warm_compiles_once_and_reports_its_time():
    K.warm()  # compiled or loaded from the cache
    assert K.warm() == 0.0  # a second call costs nothing


@pytest.mark.parametrize("nf", [1, 2, 3])
@pytest.mark.parametrize("n", [K.BLOCK - 1, K.BLOCK, 3 * K.BLOCK + 1])
def test_integer_grids_at_block_boundaries_and_exponent_spread(nf, n):
    """The integer-grid kernel's edges: rows across its blocks (carried every ``BLOCK`` rows),
    1 to 4 grids (exponents spread over 2**-60 .. 2**60 within each block), values that round up
    to the top of the first grid (2**k - ulp, whose products round to 2**k), -0.0: the true
    rational sum (``Fraction``) and the numpy path's bits, ungrouped and grouped."""
    rng = np.random.default_rng(n * 10 + nf)
    spread = rng.normal(size=n) * np.exp2(rng.integers(-60, 61, size=n).astype(float))
    top = np.full(n, np.nextafter(2.0, 0.0)) * rng.choice([-1.0, 1.0], n)
    cols = [spread, top, rng.random(n)][:nf]
    cols[0][::97] = -0.0
    g = rng.integers(0, 3, n)
    got = E.exact_sum_products(cols)
    assert got.fraction() == sum(_true(cols, g, 3), Fraction(0))
    assert got == _numpy_path(cols)
    grouped = E.exact_sum_products(cols, g, 3)
    assert grouped.fractions() == _true(cols, g, 3)
    assert grouped == _numpy_path(cols, g, 3)


@pytest.mark.parametrize(
    "xs",
    [
        [2.0**-1000, -(2.0**-1010), 5e-324, 2.2250738585072014e-308, -5e-324, 3 * 2.0**-1074],  # lowest grid clipped at 2**-1074
        [1.9 * 2.0**1020, -1.5 * 2.0**1020, 2.0**970, 1.0, -(2.0**-50)],  # first grid's unit at its top (2**970)
        [1.7976931348623157e308, -1.7976931348623157e308, 1e-300, -0.0],  # beyond the grids: the limb kernel
        [0.5, 0.25, -0.125, 1.0] * 700,  # one grid
    ],
)
def test_integer_grids_at_the_ends_of_the_exponent_range(xs):
    x = np.array(xs)
    g = np.arange(x.size) % 2
    got = E.exact_sum(x)
    assert got.fraction() == _true([x], None, 1)[0] and got == _numpy_path([x])
    grouped = E.exact_sum(x, index=g, size=2)
    assert grouped.fractions() == _true([x], g, 2) and grouped == _numpy_path([x], g, 2)
