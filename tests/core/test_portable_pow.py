"""mergeable_metrics._util.portable_pow: fdlibm's pow (e_pow.c as Java's ``StrictMath.pow`` runs it), bit for
bit ``StrictMath.pow`` (compiled with ``javac``; skipped without a JDK) on adversarial inputs, the numba
kernel equal to the numpy code, within 1 ulp of a high-precision ``decimal`` power (no JDK needed), and the
Tweedie terms that use it (values against scikit-learn, no ``np.power`` left in them)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from decimal import Decimal, localcontext
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

from mergeable_metrics._util import exact_kernels
from mergeable_metrics._util.portable_pow import numpy_pow, pow as fdlibm_pow

JAVA = Path(__file__).resolve().parent / "java" / "StrictPow.java"
TINY = np.finfo(np.float64).tiny
MAX = np.finfo(np.float64).max
EPS = np.finfo(np.float64).eps


@lru_cache(maxsize=1)
def _classes() -> str:
    if shutil.which("javac") is None or shutil.which("java") is None:
        pytest.skip("javac not found: the StrictMath comparison needs a JDK")
    out = tempfile.mkdtemp(prefix="mm-strict-pow-")
    subprocess.run(["javac", "-d", out, str(JAVA)], check=True, capture_output=True)
    return out


def _strict(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    x, y = np.broadcast_arrays(np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64))
    pairs = np.stack([x.reshape(-1), y.reshape(-1)], 1).astype(">f8").tobytes()
    done = subprocess.run(["java", "-cp", _classes(), "StrictPow"], input=pairs, capture_output=True, check=True)
    return np.frombuffer(done.stdout, dtype=">f8").astype(np.float64).reshape(x.shape)


def _same_bits(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Equal bits, or both NaN (a NaN's payload is not specified by either)."""
    return (got.view(np.int64) == want.view(np.int64)) | (np.isnan(got) & np.isnan(want))


def _special_values() -> np.ndarray:
    sub = [5e-324, 1e-320, 2.5e-310, TINY - 5e-324, TINY]
    return np.array(
        [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0, -3.0, 10.0, 1e300, -1e300, MAX, -MAX, 1e-300, 1 + EPS, 1 - EPS / 2, -1 - EPS]
        + sub
        + [-v for v in sub]
    )


def _exponents() -> np.ndarray:
    ints = np.arange(-12.0, 13.0)
    halves = ints + 0.5
    return np.concatenate(
        [
            ints,
            halves,
            [0.0, -0.0, np.inf, -np.inf, np.nan, 0.1, -0.1, 1 / 3, 1e-10, -1e-10, 1e-300, 1.5, -1.5, 0.8, -0.8, 0.2, -0.2],
            [2.0**31, -(2.0**31), 2.0**31 + 1, 2.0**53, 2.0**53 + 2, 2.0**63, -(2.0**53), 1e20, -1e20, 1e300, 4503599627370495.5],
            [1024.0, -1074.0, -1075.0, 1023.5, -1022.5, 0.5 + EPS, 2 - EPS, 2 + 2 * EPS, 1 - EPS / 2, 1 + EPS, -1 - EPS],
        ]
    )


def _adversarial() -> tuple[np.ndarray, np.ndarray]:
    """(x, y) pairs: every special base against every special exponent, then random ones of the domains
    the Tweedie terms use (targets and predictions against ``2 - q``, ``1 - q``), bases near 1 (the huge
    ``|y|`` branch), subnormal and huge bases, results that over- or underflow and subnormal results,
    negative bases with integer exponents, and random bit patterns."""
    rng = np.random.default_rng(20261203)
    xs, ys = np.meshgrid(np.concatenate([_special_values(), rng.lognormal(0, 2, 40), -rng.lognormal(0, 2, 20)]), _exponents())
    n = 40_000
    q = np.concatenate([rng.uniform(1, 2, n), rng.uniform(2, 6, n), rng.uniform(-6, 0, n)])
    base = np.concatenate([rng.gamma(2.0, 1.5, n), rng.lognormal(0, 3, n), rng.random(n)])
    near_one = 1 + (rng.random(n) - 0.5) * 2.0**-19
    huge_y = rng.choice([-1, 1], n) * 2.0 ** rng.uniform(31, 70, n)
    sub = rng.integers(1, 1 << 52, n, dtype=np.int64).view(np.float64)
    edge_x = np.ldexp(1.0 + rng.random(n), rng.integers(-1074, 1024, n))
    to_edge = np.log2(edge_x)
    over = np.where(rng.random(n) < 0.5, 1024.0, -1075.0) / to_edge * (1 + (rng.random(n) - 0.5) * 1e-12)  # results near 2**1024 / 2**-1075
    tiny_res = -np.ldexp(1.0, 0) * rng.uniform(1022.0, 1075.0, n) / to_edge  # subnormal results
    neg_int = (-rng.lognormal(0, 2, n), rng.integers(-40, 41, n).astype(np.float64))
    bits = rng.integers(np.iinfo(np.int64).min, np.iinfo(np.int64).max, n, dtype=np.int64).view(np.float64)
    bits_y = rng.integers(np.iinfo(np.int64).min, np.iinfo(np.int64).max, n, dtype=np.int64).view(np.float64)
    with np.errstate(invalid="ignore"):
        small_y = np.where(np.abs(bits_y) < 64, bits_y, np.fmod(bits_y, 64.0))
    x = np.concatenate([xs.ravel(), base, base, base, near_one, near_one, sub, sub, edge_x, edge_x, neg_int[0], bits, bits, edge_x[:1000]])
    y = np.concatenate(
        [
            ys.ravel(),
            2 - q,
            1 - q,
            rng.uniform(-3, 3, 3 * n),
            huge_y,
            rng.uniform(-3, 3, n),
            2 - q[:n],
            1 - q[2 * n :],
            over,
            tiny_res,
            neg_int[1],
            bits_y,
            small_y,
            np.nextafter(np.round(rng.uniform(-20, 20, 1000)), np.inf),
        ]
    )
    return x, y


def test_pow_equals_java_strictmath_pow_bit_for_bit():
    x, y = _adversarial()
    want = _strict(x, y)
    got = fdlibm_pow(x, y)
    bad = ~_same_bits(got, want)
    assert not bad.any(), [(a.hex(), b.hex(), c, d) for a, b, c, d in zip(x[bad][:5], y[bad][:5], got[bad][:5], want[bad][:5])]
    assert np.isnan(want).any() and np.isinf(want).any() and ((want != 0) & (np.abs(want) < TINY)).any()  # the inputs reach those branches
    assert (np.signbit(want) & (want != 0) & np.isfinite(want)).any()  # negative bases, odd integer exponents


def test_the_numpy_code_equals_java_strictmath_pow_bit_for_bit():
    """The path without numba: numpy_pow (vectorised, the scalar kernel in plain Python for the special values)."""
    x, y = _adversarial()
    got = numpy_pow(x, y)
    assert _same_bits(got, _strict(x, y)).all()


def test_the_numba_kernel_equals_the_numpy_code_bit_for_bit():
    if not exact_kernels.ready():
        pytest.skip("numba not installed")
    x, y = _adversarial()
    out = np.empty(x.shape)
    exact_kernels.pow_rows(x, y, out)
    assert _same_bits(out, numpy_pow(x, y)).all()
    # one exponent for every row, the form the Tweedie terms use
    for e in (0.5, -0.5, 1.5, 2.0, -1.0, 0.2, 3.0):
        assert _same_bits(fdlibm_pow(x, e), numpy_pow(x, np.full(x.shape, e))).all()


def test_without_numba_the_same_bits(tmp_path):
    """``MERGEABLE_METRICS_DISABLE_NUMBA=1`` (an environment without numba): ``pow`` is :func:`numpy_pow`, the
    kernel's plain Python form computing the special values; the same bits as Java."""
    x, y = _adversarial()
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    code = (
        "import sys, numpy as np; from mergeable_metrics._util import exact_kernels as K; from mergeable_metrics._util.portable_pow import pow; "
        f"d = {str(tmp_path)!r}; x, y = np.load(d + '/x.npy'), np.load(d + '/y.npy'); "
        "np.save(d + '/out.npy', pow(x, y)); np.save(d + '/one.npy', pow(x, 1.5)); print(K.ready())"
    )
    env = dict(os.environ, MERGEABLE_METRICS_DISABLE_NUMBA="1")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False"]
    assert _same_bits(np.load(tmp_path / "out.npy"), _strict(x, y)).all()
    assert _same_bits(np.load(tmp_path / "one.npy"), _strict(x, 1.5)).all()


def test_within_one_ulp_of_the_exact_power():
    """No JDK needed: fdlibm's bound (< 1 ulp) against ``decimal`` at 60 digits, on the Tweedie domain."""
    rng = np.random.default_rng(7)
    x = np.concatenate([rng.gamma(2.0, 1.5, 400), rng.lognormal(0, 4, 400), 1 + (rng.random(200) - 0.5) * 1e-6])
    e = np.concatenate([2 - rng.uniform(1, 2, 500), 1 - rng.uniform(2, 5, 300), 2 - rng.uniform(-4, 0, 200)])
    got = fdlibm_pow(x, e)
    with localcontext() as ctx:
        ctx.prec = 60
        for a, b, g in zip(x, e, got):
            exact = Decimal(float(a)) ** Decimal(float(b))
            ulp = Decimal(float(np.spacing(g)))
            assert abs(Decimal(float(g)) - exact) < ulp, (a, b)


def test_within_one_ulp_of_np_power():
    rng = np.random.default_rng(8)
    x = rng.lognormal(0, 3, 200_000)
    for e in (0.5, -0.5, 0.3, -0.7, 1.5, 2.5, -1.5, -2.0, 3.0, 0.01):
        got, ref = fdlibm_pow(x, e), np.power(x, e)
        assert np.abs(got.view(np.int64) - ref.view(np.int64)).max() <= 1


def test_shapes_and_broadcasting():
    x = np.arange(1.0, 7.0).reshape(2, 3)
    assert fdlibm_pow(x, 0.5).shape == (2, 3)
    assert fdlibm_pow(x, np.array([1.0, 2.0, 3.0])).tolist() == [[1.0, 4.0, 27.0], [4.0, 25.0, 216.0]]
    assert numpy_pow(x, np.array([1.0, 2.0, 3.0])).tolist() == [[1.0, 4.0, 27.0], [4.0, 25.0, 216.0]]
    assert fdlibm_pow(np.float64(8.0), 1 / 3).shape == ()
    assert fdlibm_pow([], 1.5).shape == (0,)


def test_the_tweedie_terms_use_the_portable_pow():
    """Core's Tweedie terms of powers outside {0, 1, 2}: each row's value is scikit-learn's formula with
    fdlibm's pow (not np.power, the platform's), and the metric is scikit-learn's mean_tweedie_deviance /
    d2_tweedie_score up to rounding."""
    from sklearn.metrics import d2_tweedie_score, mean_tweedie_deviance

    from mergeable_metrics import Evaluation
    from mergeable_metrics.metrics.regression_terms import term_rows

    rng = np.random.default_rng(9)
    y = rng.gamma(2.0, 1.5, 5000)
    p = np.maximum(y, 0.1) * rng.lognormal(0, 0.3, 5000)
    w = rng.random(5000)
    for q in (1.5, 1.2, 2.5, 3.0, -1.0, -0.5):
        v, inside = term_rows(f"tweedie:{q!r}", y, p)
        want = 2 * (_strict(y, 2 - q) / ((1 - q) * (2 - q)) - y * _strict(p, 1 - q) / (1 - q) + _strict(p, 2 - q) / (2 - q))
        assert inside.all() and _same_bits(v, want).all(), q
        null, _ = term_rows(f"null:{q!r}", y, p)
        assert _same_bits(null, _strict(y, 2 - q)).all(), q
        ev = Evaluation(
            label_col="y", prediction_col="p", weight_col="w", task="regression", metrics=[f"mean_tweedie_deviance@power={q}", f"d2_tweedie_score@power={q}"]
        )
        got = ev.evaluate([{"y": y, "p": p, "w": w}]).overall.metrics
        assert got[f"mean_tweedie_deviance@{q}"] == pytest.approx(mean_tweedie_deviance(y, p, power=q, sample_weight=w), rel=1e-12)
        assert got[f"d2_tweedie_score@{q}"] == pytest.approx(d2_tweedie_score(y, p, power=q, sample_weight=w), rel=1e-9)
