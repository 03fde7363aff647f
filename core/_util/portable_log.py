"""``log`` and ``log1p`` that give the same bits on every platform and in Java.

``np.log`` is the platform's libm (glibc's, or numpy's own SIMD code on AVX-512 machines): faithful
but not correctly rounded, so a state that sums per-row logs (``log_loss``'s ``probability_sums``,
the Poisson/Gamma deviance terms, the squared log error) would differ in its last bits between
machines, and from the JVM fold. These are fdlibm's ``e_log.c`` and ``s_log1p.c`` (Sun
Microsystems, 1993), the algorithms that define Java's ``StrictMath.log`` / ``StrictMath.log1p``
bit for bit on every JVM, written here in numpy (vectorised, the same IEEE double operations in the
same order: numpy does no FMA contraction), and ``log`` also as a numba kernel where numba is
installed (compiled on first use; numba contracts no FMA without ``fastmath``), the same bits
about as fast as ``np.log``. Error below 1 ulp (fdlibm's bound).

``log``: ``x = 2**k (1 + f)`` with ``sqrt(2)/2 < 1 + f < sqrt(2)``; ``s = f / (2 + f)``;
``log(1 + f) = f - (hfsq - s (hfsq + R))`` with ``hfsq = f*f/2`` and ``R`` the Remez polynomial
``Lg1 s**2 + ... + Lg7 s**14``; ``log(x) = k ln2_hi + (log(1 + f) + k ln2_lo)``. Special cases:
``log(+-0) = -inf``, ``log(x < 0) = nan``, ``log(inf) = inf``, ``log(nan) = nan``; subnormals
are scaled by ``2**54`` first. ``log1p`` is the same with ``1 + x`` formed exactly (a correction
term ``c``) and no reduction for ``-0.2929 < x < 0.41422``.

Tests: tests/core/test_portable_log.py (bit for bit against ``StrictMath`` through ``javac``,
and within 1 ulp of a correctly rounded ``decimal`` logarithm).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["log", "log1p", "numpy_log"]

_LN2_HI = 6.93147180369123816490e-01  # 3fe62e42 fee00000
_LN2_LO = 1.90821492927058770002e-10  # 3dea39ef 35793c76
_TWO54 = 1.80143985094819840000e16  # 43500000 00000000
_L1 = 6.666666666666735130e-01  # 3FE55555 55555593
_L2 = 3.999999999940941908e-01  # 3FD99999 9997FA04
_L3 = 2.857142874366239149e-01  # 3FD24924 94229359
_L4 = 2.222219843214978396e-01  # 3FCC71C5 1D8E78AF
_L5 = 1.818357216161805012e-01  # 3FC74664 96CB03DE
_L6 = 1.531383769920937332e-01  # 3FC39A09 D078C69F
_L7 = 1.479819860511658591e-01  # 3FC2F112 DF3E5244
_LOW = np.int64(0xFFFFFFFF)


def _words(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The signed high word (as fdlibm's ``__HI``, an int32 held in int64) and the low word."""
    bits = x.view(np.int64)
    return bits >> 32, bits & _LOW


def _with_high(high: np.ndarray, low: np.ndarray) -> np.ndarray:
    return ((high << 32) | low).view(np.float64)


def _remez(s: Any) -> Any:
    """``R(s)``, ``Lg1 s**2 + ... + Lg7 s**14`` as fdlibm evaluates it (odd and even terms apart)."""
    z = s * s
    w = z * z
    t1 = w * (_L2 + w * (_L4 + w * _L6))
    t2 = z * (_L1 + w * (_L3 + w * (_L5 + w * _L7)))
    return t2 + t1


def numpy_log(x: Any) -> np.ndarray:
    """Natural logarithm, fdlibm's ``__ieee754_log`` (= Java's ``StrictMath.log``), elementwise;
    a float64 array of ``x``'s shape (numpy: the reference of the numba kernel)."""
    x = np.array(x, dtype=np.float64)  # a copy, C-contiguous
    shape = x.shape
    x = x.reshape(-1)
    out = np.empty_like(x)
    hx, lx = _words(x)
    zero = (x.view(np.int64) & np.int64(0x7FFFFFFFFFFFFFFF)) == 0
    negative = (hx < 0) & ~zero  # includes -inf and nan with the sign bit
    special = hx >= 0x7FF00000  # +inf, nan
    out[zero] = -np.inf
    out[negative] = np.nan
    with np.errstate(invalid="ignore"):  # a signalling nan
        out[special] = x[special] + x[special]
    go = ~(zero | negative | special)
    x, hx, lx = x[go], hx[go], lx[go]
    k = np.zeros(x.shape, dtype=np.int64)
    sub = hx < 0x00100000  # subnormal: scale up by 2**54
    if sub.any():
        x[sub] *= _TWO54
        k[sub] -= 54
        hx, lx = _words(x)
    k += (hx >> 20) - 1023
    hx &= 0x000FFFFF
    i = (hx + 0x95F64) & 0x100000
    x = _with_high(hx | (i ^ 0x3FF00000), lx)  # normalize x or x/2
    k += i >> 20
    f = x - 1.0
    dk = k.astype(np.float64)
    k0 = k == 0
    res = np.empty_like(f)
    with np.errstate(all="ignore"):
        tiny = (0x000FFFFF & (2 + hx)) < 3  # |f| < 2**-20
        if tiny.any():
            ft, dt, kt = f[tiny], dk[tiny], k0[tiny]
            r = ft * ft * (0.5 - 0.33333333333333333 * ft)
            v = np.where(kt, ft - r, dt * _LN2_HI - ((r - dt * _LN2_LO) - ft))
            v = np.where(ft == 0.0, np.where(kt, 0.0, dt * _LN2_HI + dt * _LN2_LO), v)
            res[tiny] = v
        big = ~tiny
        f, dk, k0, hx = f[big], dk[big], k0[big], hx[big]
        s = f / (2.0 + f)
        r = _remez(s)
        far = ((hx - 0x6147A) | (0x6B851 - hx)) > 0
        hfsq = 0.5 * f * f
        v_far = np.where(k0, f - (hfsq - s * (hfsq + r)), dk * _LN2_HI - ((hfsq - (s * (hfsq + r) + dk * _LN2_LO)) - f))
        v_near = np.where(k0, f - s * (f - r), dk * _LN2_HI - ((s * (f - r) - dk * _LN2_LO) - f))
        res[big] = np.where(far, v_far, v_near)
    out[go] = res
    return out.reshape(shape)


def log1p(x: Any) -> np.ndarray:
    """``log(1 + x)``, fdlibm's ``log1p`` (= Java's ``StrictMath.log1p``), elementwise; a float64
    array of ``x``'s shape."""
    x = np.array(x, dtype=np.float64)
    shape = x.shape
    x = x.reshape(-1)
    out = np.empty_like(x)
    hx, _ = _words(x)
    ax = hx & 0x7FFFFFFF
    below = hx < 0x3FDA827A  # x < 0.41422
    minus_one = x == -1.0
    invalid = below & (ax >= 0x3FF00000) & ~minus_one  # x < -1 (and nan with the sign bit)
    small = below & (ax < 0x3E200000)  # |x| < 2**-29
    special = hx >= 0x7FF00000  # +inf, nan
    out[minus_one] = -np.inf
    out[invalid] = np.nan
    with np.errstate(all="ignore"):
        out[special] = x[special] + x[special]
        xs = x[small]
        out[small] = np.where(ax[small] < 0x3C900000, xs, xs - xs * xs * 0.5)  # |x| < 2**-54: x
        go = ~(minus_one | invalid | small | special)
        x, hx = x[go], hx[go]
        # -0.2929 < x < 0.41422: no reduction (k = 0, f = x)
        direct = (hx < 0x3FDA827A) & ((hx > 0) | (hx <= np.int64(np.int32(np.uint32(0xBFD2BEC3)))))
        u = np.where(hx < 0x43400000, 1.0 + x, x)
        hu, lu = _words(u)
        k = (hu >> 20) - 1023
        c = np.where(hx < 0x43400000, np.where(k > 0, 1.0 - (u - x), x - (u - 1.0)) / u, 0.0)
        hu = hu & 0x000FFFFF
        low = hu < 0x6A09E
        u = _with_high(np.where(low, hu | 0x3FF00000, hu | 0x3FE00000), lu)  # normalize u or u/2
        k = np.where(low, k, k + 1)
        hu = np.where(low, hu, (0x00100000 - hu) >> 2)
        f = u - 1.0
        f = np.where(direct, x, f)
        k = np.where(direct, 0, k)
        hu = np.where(direct, 1, hu)
        c = np.where(direct, 0.0, c)
        dk = k.astype(np.float64)
        k0 = k == 0
        hfsq = 0.5 * f * f
        # |f| < 2**-20
        r_tiny = hfsq * (1.0 - 0.66666666666666666 * f)
        v_tiny = np.where(k0, f - r_tiny, dk * _LN2_HI - ((r_tiny - (dk * _LN2_LO + c)) - f))
        v_tiny = np.where(f == 0.0, np.where(k0, 0.0, dk * _LN2_HI + (c + dk * _LN2_LO)), v_tiny)
        s = f / (2.0 + f)
        z = s * s
        r = z * (_L1 + z * (_L2 + z * (_L3 + z * (_L4 + z * (_L5 + z * (_L6 + z * _L7))))))
        v = np.where(k0, f - (hfsq - s * (hfsq + r)), dk * _LN2_HI - ((hfsq - (s * (hfsq + r) + (dk * _LN2_LO + c))) - f))
        out[go] = np.where(hu == 0, v_tiny, v)
    return out.reshape(shape)


# --- optional numba kernels: the same operations, one element at a time (about 20 times faster);
# tests/core/test_portable_log.py checks them against the numpy code above and Java bit for bit.


def _log_kernel(x: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover - compiled by numba
    bits = x.view(np.int64)
    buf = np.empty(1, dtype=np.int64)
    fbuf = buf.view(np.float64)
    for n in range(x.shape[0]):
        v = x[n]
        b = bits[n]
        hx = b >> 32
        lx = b & 0xFFFFFFFF
        k = 0
        if hx < 0x00100000:
            if (b & 0x7FFFFFFFFFFFFFFF) == 0:
                out[n] = -np.inf
                continue
            if hx < 0:
                out[n] = np.nan
                continue
            k -= 54
            v *= _TWO54
            fbuf[0] = v
            hx = buf[0] >> 32
            lx = buf[0] & 0xFFFFFFFF
        if hx >= 0x7FF00000:
            out[n] = v + v
            continue
        k += (hx >> 20) - 1023
        hx &= 0x000FFFFF
        i = (hx + 0x95F64) & 0x100000
        buf[0] = ((hx | (i ^ 0x3FF00000)) << 32) | lx
        k += i >> 20
        f = fbuf[0] - 1.0
        dk = float(k)
        if (0x000FFFFF & (2 + hx)) < 3:
            if f == 0.0:
                out[n] = 0.0 if k == 0 else dk * _LN2_HI + dk * _LN2_LO
                continue
            r = f * f * (0.5 - 0.33333333333333333 * f)
            out[n] = f - r if k == 0 else dk * _LN2_HI - ((r - dk * _LN2_LO) - f)
            continue
        s = f / (2.0 + f)
        r = _remez_compiled(s)
        if ((hx - 0x6147A) | (0x6B851 - hx)) > 0:
            hfsq = 0.5 * f * f
            out[n] = f - (hfsq - s * (hfsq + r)) if k == 0 else dk * _LN2_HI - ((hfsq - (s * (hfsq + r) + dk * _LN2_LO)) - f)
        else:
            out[n] = f - s * (f - r) if k == 0 else dk * _LN2_HI - ((s * (f - r) - dk * _LN2_LO) - f)


_remez_compiled: Any = None
_compiled: list[Any] = []  # the numba kernel once compiled, or None without numba (imported on first use)


def _kernel() -> Any:
    if not _compiled:
        try:
            import numba
        except ImportError:  # pragma: no cover - depends on the environment
            _compiled.append(None)
        else:
            global _remez_compiled  # the kernel's callee, set before the kernel compiles
            _remez_compiled = numba.njit(cache=True, nogil=True)(_remez)
            _compiled.append(numba.njit(cache=True, nogil=True)(_log_kernel))
    return _compiled[0]


def log(x: Any) -> np.ndarray:
    """Natural logarithm, fdlibm's ``__ieee754_log`` (= Java's ``StrictMath.log``), elementwise; a
    float64 array of ``x``'s shape. A numba kernel where numba is installed, else :func:`numpy_log`
    (the same bits)."""
    kernel = _kernel()
    if kernel is None:  # pragma: no cover - depends on the environment
        return numpy_log(x)
    a = np.asarray(x, dtype=np.float64)
    out = np.empty(a.size)
    kernel(np.ascontiguousarray(a).reshape(-1), out)
    return out.reshape(a.shape)
