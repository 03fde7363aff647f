"""mergeable_metrics._util.portable_log: fdlibm's log and log1p in numpy, bit for bit Java's
``StrictMath.log`` / ``StrictMath.log1p`` (compiled with ``javac``; skipped without a JDK), and
within 1 ulp of a correctly rounded logarithm (``decimal``, no JDK needed)."""

from __future__ import annotations

import math
import shutil
import subprocess
import tempfile
from decimal import Decimal, localcontext
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

from mergeable_metrics._util.portable_log import log, log1p, numpy_log

JAVA = Path(__file__).resolve().parent / "java" / "StrictLog.java"
EPS = np.finfo(np.float64).eps
#: the clip values of log_loss's eps settings (scikit-learn's default is the dtype's eps)
CLIPS = [EPS, 4 * EPS, 1e-15, 1e-7, 0.25, 1e-300]


@lru_cache(maxsize=1)
def _classes() -> str:
    if shutil.which("javac") is None or shutil.which("java") is None:
        pytest.skip("javac not found: the StrictMath comparison needs a JDK")
    out = tempfile.mkdtemp(prefix="mm-strict-log-")
    subprocess.run(["javac", "-d", out, str(JAVA)], check=True, capture_output=True)
    return out


def _strict(name: str, x: np.ndarray) -> np.ndarray:
    done = subprocess.run(["java", "-cp", _classes(), "StrictLog", name], input=x.astype(">f8").tobytes(), capture_output=True, check=True)
    return np.frombuffer(done.stdout, dtype=">f8").astype(np.float64)


def _same_bits(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Equal bits, or both NaN (a NaN's payload is not specified by either)."""
    return (got.view(np.int64) == want.view(np.int64)) | (np.isnan(got) & np.isnan(want))


def _log_inputs(n: int) -> np.ndarray:
    rng = np.random.default_rng(20261202)
    finite = rng.integers(0, 0x7FF0000000000000, n, dtype=np.int64).view(np.float64)  # every binade, positive
    one = np.float64(1.0)
    around_one = one + np.arange(-20000, 20001) * (EPS / 2)  # the ulps next to 1 (below 1 they are eps/2)
    powers = np.ldexp(1.0, np.arange(-1074, 1024))
    steps = np.concatenate([np.nextafter(powers, 0), powers, np.nextafter(powers, np.inf)])
    clips = np.array(CLIPS + [1 - c for c in CLIPS])
    return np.concatenate(
        [
            finite,
            rng.random(n),  # probabilities
            1 + (rng.random(n // 4) - 0.5) * 2.0**-18,  # |f| < 2**-20 and its neighbours
            np.sqrt(0.5) + (rng.random(n // 8) - 0.5) * 1e-3,  # the normalisation boundary
            np.sqrt(2.0) + (rng.random(n // 8) - 0.5) * 1e-3,
            rng.integers(1, 1 << 52, n // 8, dtype=np.int64).view(np.float64),  # subnormals
            np.clip(rng.random(n // 8), EPS, 1 - EPS),
            around_one,
            steps,
            clips,
            np.nextafter(clips, 0),
            np.nextafter(clips, 2),
            -finite[:1000],
            [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1.0, 2.0, 0.5, 5e-324, np.finfo(np.float64).max, np.finfo(np.float64).tiny],
        ]
    )


def _log1p_inputs(n: int) -> np.ndarray:
    rng = np.random.default_rng(1202)
    x = _log_inputs(n // 2)
    near_zero = (rng.random(n // 4) - 0.5) * np.ldexp(1.0, rng.integers(-60, 0, n // 4))
    return np.concatenate(
        [
            x,
            x - 1,  # -1 < x < 0 and around -1
            -x[: n // 4],
            near_zero,
            -1 + rng.random(n // 8) * 1e-3,
            0.41422 + (rng.random(n // 8) - 0.5) * 1e-3,  # the no-reduction range's ends
            -0.2929 + (rng.random(n // 8) - 0.5) * 1e-3,
            [-1.0, np.nextafter(-1.0, 0), np.nextafter(-1.0, -2), 2.0**-29, 2.0**-54, -(2.0**-54), 2.0**53, 2.0**53 + 2, 1e300, -0.0],
        ]
    )


def test_log_equals_java_strictmath_log_bit_for_bit():
    x = _log_inputs(1_000_000)
    want = _strict("log", x)
    for got in (log(x), numpy_log(x)):  # the numba kernel (where numba is installed) and the numpy code
        bad = ~_same_bits(got, want)
        assert x.size > 2_000_000 and not bad.any(), list(zip(x[bad][:5], got[bad][:5], want[bad][:5]))


def test_the_numba_kernel_equals_the_numpy_code_bit_for_bit():
    x = _log_inputs(200_000)
    assert _same_bits(log(x), numpy_log(x)).all()


def test_log1p_equals_java_strictmath_log1p_bit_for_bit():
    x = _log1p_inputs(1_000_000)
    with np.errstate(invalid="ignore"):
        got = log1p(x)
    want = _strict("log1p", x)
    bad = ~_same_bits(got, want)
    assert x.size > 2_000_000 and not bad.any(), list(zip(x[bad][:5], got[bad][:5], want[bad][:5]))


def _ulps(got: float, exact: Decimal) -> float:
    """|got - exact| in units of the last place of ``got``'s binade."""
    ulp = math.ulp(abs(got)) if got != 0 else 5e-324
    return float(abs(Decimal(got) - exact) / Decimal(ulp))


def test_log_and_log1p_within_one_ulp_of_a_correctly_rounded_logarithm():
    rng = np.random.default_rng(5)
    xs = np.concatenate(
        [rng.integers(1, 0x7FF0000000000000, 1500, dtype=np.int64).view(np.float64), rng.random(500), 1 + (rng.random(300) - 0.5) * 1e-6, CLIPS]
    )
    worst = 0.0
    with localcontext() as ctx:
        ctx.prec = 60
        for x, got in zip(xs, log(xs)):
            worst = max(worst, _ulps(float(got), Decimal(float(x)).ln()))
        ys = np.concatenate(
            [(rng.random(500) - 0.5) * np.ldexp(1.0, rng.integers(-40, 1, 500)), rng.integers(1, 0x7FF0000000000000, 500, dtype=np.int64).view(np.float64)]
        )
        for y, got in zip(ys, log1p(ys)):
            d = Decimal(float(y))
            exact = d - d * d / 2 + d * d * d / 3 if abs(y) < 1e-20 else (1 + d).ln()  # 1 + d would round to 1 at 60 digits
            worst = max(worst, _ulps(float(got), exact))
    assert worst < 1.0, worst


def test_log_within_one_ulp_of_math_log_on_a_million_values():
    rng = np.random.default_rng(6)
    x = np.concatenate([rng.integers(1, 0x7FF0000000000000, 500_000, dtype=np.int64).view(np.float64), rng.random(500_000)])
    got = log(x)
    want = np.array([math.log(v) for v in x])
    assert np.all(np.abs(got - want) <= np.spacing(np.abs(want)))


def test_special_cases_and_shapes():
    for f in (log, numpy_log):
        got = f([0.0, -0.0, -1.0, -np.inf, np.inf, np.nan, 1.0, 5e-324])
        assert got[:2].tolist() == [-np.inf, -np.inf] and np.isnan(got[2:4]).all() and got[4] == np.inf and np.isnan(got[5])
        assert got[6] == 0.0 and not np.signbit(got[6]) and got[7] == math.log(5e-324)
        assert f(np.ones((3, 2))).shape == (3, 2) and f(2.0).shape == () and f(np.array([])).shape == (0,) and f(np.ones(6)[::2]).tolist() == [0.0] * 3
    with np.errstate(invalid="ignore"):
        got = log1p([-1.0, -2.0, np.inf, np.nan, 0.0, -0.0, 1e-300])
    assert got[0] == -np.inf and np.isnan(got[1]) and got[2] == np.inf and np.isnan(got[3])
    assert got[4] == 0.0 and not np.signbit(got[4]) and got[5] == 0.0 and np.signbit(got[5]) and got[6] == 1e-300
    assert log1p(np.zeros((3, 2))).shape == (3, 2) and log1p(2.0).shape == ()
    assert log(math.e) == 1.0 and log1p(math.e - 1) == math.log1p(math.e - 1)


def _branch_free(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The positive finite values of ``x`` and their logs by the compiled branch-free kernel of the
    fused log-loss fold (``exact_kernels.log_rows``, LLVM-vectorised)."""
    from mergeable_metrics._util import exact_kernels as K

    if not K.ready():
        pytest.skip("numba kernels disabled or not installed")
    x = x[(x > 0) & np.isfinite(x)]
    out = np.empty_like(x)
    assert K.log_rows(x, out)
    return x, out


def test_the_branch_free_kernel_equals_the_numpy_code_bit_for_bit():
    """Millions of positive finite inputs: random bits (every binade), probabilities, the ulps
    around 1, 0.5 and the powers of two with their neighbours, subnormals, the clip values, and
    values next to fdlibm's branch points (|f| < 2**-20, the sqrt(2) normalisation, the Remez
    branch's ``hx`` bounds 0x6147A / 0x6B851)."""
    rng = np.random.default_rng(25)
    hx = np.array([0x6147A, 0x6B851, 0x95F64, 0x6A09E, 0, 1, 2, 3, 0xFFFFD, 0xFFFFE, 0xFFFFF], dtype=np.int64)
    hx = (hx[:, None] + np.arange(-2, 3)[None, :]).ravel() & 0xFFFFF
    exps = np.arange(1, 2047, dtype=np.int64)
    lows = np.array([0, 1, 0xFFFFFFFF, 0x80000000], dtype=np.int64)
    branch = ((exps[:, None, None] << 52) | (hx[None, :, None] << 32) | lows[None, None, :]).ravel().view(np.float64)
    x, got = _branch_free(np.concatenate([_log_inputs(1_000_000), branch, rng.random(1_000_000)]))
    assert x.size > 3_000_000
    want = numpy_log(x)
    bad = ~_same_bits(got, want)
    assert not bad.any(), list(zip(x[bad][:5], got[bad][:5], want[bad][:5]))


def test_the_branch_free_kernel_equals_java_strictmath_log_bit_for_bit():
    x, got = _branch_free(_log_inputs(300_000))
    want = _strict("log", x)
    bad = ~_same_bits(got, want)
    assert not bad.any(), list(zip(x[bad][:5], got[bad][:5], want[bad][:5]))
