"""``pow`` that gives the same bits on every platform and in Java.

``np.power`` is the platform's libm (glibc's ``pow``, whose x86-64 build picks an FMA variant by CPU,
or numpy's own SIMD code): correctly rounded in glibc but not specified, so a state that sums per-row
powers (the Tweedie deviance terms of powers other than 0, 1 and 2) could differ in its last bits
between machines, and from the JVM fold. This is fdlibm's ``e_pow.c`` (Sun Microsystems, 1993) as Java's
``StrictMath.pow`` runs it (``java.lang.FdLibm.Pow``), bit for bit on every JVM: numba kernels where numba
is used (:func:`mergeable_metrics._util.exact_kernels.pow_rows`: the general path branch-free,
``pow_main``, in a pass that LLVM vectorises, then the scalar ``fdlibm_pow`` for the rows with special
values), else :func:`numpy_pow`, the same IEEE double operations in the same order in numpy
(vectorised for finite ``x != 0, +-1`` and ``y`` of moderate size, the scalar function for the special
values). Error below 1 ulp (0.82 ulp at most in the tests; ``np.power`` differs from it in the last bit
of 6-9% of the values of the Tweedie domain: see docs/engines.md, "Float states in the JVM").

Tests: tests/core/test_portable_pow.py (bit for bit against ``StrictMath.pow`` through ``javac``, the
kernel against :func:`numpy_pow`, and within 1 ulp of ``np.power``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mergeable_metrics._util import exact_kernels as _k

__all__ = ["numpy_pow", "pow"]

_HIGH = np.int64(-4294967296)  # 0xFFFFFFFF00000000
_LOW = np.int64(0xFFFFFFFF)


def _bits(x: np.ndarray) -> np.ndarray:
    return x.view(np.int64)


def _f(b: np.ndarray) -> np.ndarray:
    return b.view(np.float64)


def _cut(x: np.ndarray) -> np.ndarray:
    """fdlibm's ``__LO(x, 0)``: the low word cleared."""
    return _f(_bits(x) & _HIGH)


def _main(x: np.ndarray, y: np.ndarray, s: np.ndarray) -> np.ndarray:
    """The general path of :func:`~mergeable_metrics._util.exact_kernels.fdlibm_pow` for finite ``x``
    (not 0, not +-1; its sign already in ``s``) and finite ``y`` with ``|y|`` below fdlibm's ``2**31``
    bound, vectorised: ``log2|x|`` in two parts, times ``y`` split exactly, then ``2**``."""
    k_ = _k
    x_abs = np.abs(x)
    ix = _bits(x_abs) >> 32
    n = np.zeros(x.shape, dtype=np.int64)
    sub = ix < 0x00100000  # subnormal
    if sub.any():
        x_abs = np.where(sub, x_abs * 9007199254740992.0, x_abs)
        n = np.where(sub, n - 53, n)
        ix = _bits(x_abs) >> 32
    n = n + (ix >> 20) - 0x3FF
    j = ix & 0x000FFFFF
    ix = j | 0x3FF00000
    one = (j > 0x3988E) & (j < 0xBB67A)  # k = 1: sqrt(3/2) <= |x| < sqrt(3)
    top = j >= 0xBB67A
    n = np.where(top, n + 1, n)
    ix = np.where(top, ix - 0x00100000, ix)
    k = one.astype(np.int64)
    x_abs = _f((ix << 32) | (_bits(x_abs) & _LOW))
    bp = np.where(one, 1.5, 1.0)
    dp_h = np.where(one, k_.P_DP_H1, 0.0)
    dp_l = np.where(one, k_.P_DP_L1, 0.0)
    u = x_abs - bp
    v = 1.0 / (x_abs + bp)
    ss = u * v
    s_h = _cut(ss)
    t_h = _f((((ix >> 1) | 0x20000000) + 0x00080000 + (k << 18)) << 32)
    t_l = x_abs - (t_h - bp)
    s_l = v * ((u - s_h * t_h) - s_h * t_l)
    s2 = ss * ss
    r = s2 * s2 * (k_.P_L1 + s2 * (k_.P_L2 + s2 * (k_.P_L3 + s2 * (k_.P_L4 + s2 * (k_.P_L5 + s2 * k_.P_L6)))))
    r = r + s_l * (s_h + ss)
    s2 = s_h * s_h
    t_h = _cut(3.0 + s2 + r)
    t_l = r - ((t_h - 3.0) - s2)
    u = s_h * t_h
    v = s_l * t_h + t_l * ss
    p_h = _cut(u + v)
    p_l = v - (p_h - u)
    z_h = k_.P_CP_H * p_h
    z_l = k_.P_CP_L * p_h + p_l * k_.P_CP + dp_l
    t = n.astype(np.float64)
    t1 = _cut(((z_h + z_l) + dp_h) + t)
    t2 = z_l - (((t1 - t) - dp_h) - z_h)
    # y * log2|x|, y split into y1 + y2
    y1 = _cut(y)
    p_l = (y - y1) * t1 + y * t2
    p_h = y1 * t1
    z = p_l + p_h
    bz = _bits(z)
    j = bz >> 32
    i = bz & _LOW
    over = (j >= 0x40900000) & ((((j - 0x40900000) | i) != 0) | (p_l + k_.P_OVT > z - p_h))
    under = (j < 0x40900000) & ((j & 0x7FFFFFFF) >= 0x4090CC00) & ((((j + 0x3F6F3400) | i) != 0) | (p_l <= z - p_h))
    # 2**(p_h + p_l)
    i = j & 0x7FFFFFFF
    k = (i >> 20) - 0x3FF
    big = i > 0x3FE00000  # |z| > 0.5: n = [z + 0.5]
    kk = np.where(big, k + 1, 0)
    nn = j + (np.int64(0x00100000) >> kk)
    k2 = ((nn & 0x7FFFFFFF) >> 20) - 0x3FF
    k2 = np.where(big, k2, 0)
    t = _f((nn & ~(np.int64(0x000FFFFF) >> k2)) << 32)
    n = ((nn & 0x000FFFFF) | 0x00100000) >> (20 - k2)
    n = np.where(j < 0, -n, n)
    n = np.where(big, n, 0)
    p_h = np.where(big, p_h - t, p_h)
    t = _cut(p_l + p_h)
    u = t * k_.P_LG2_H
    v = (p_l - (t - p_h)) * k_.P_LG2 + t * k_.P_LG2_L
    z = u + v
    w = v - (z - u)
    t = z * z
    t1 = z - t * (k_.P_P1 + t * (k_.P_P2 + t * (k_.P_P3 + t * (k_.P_P4 + t * k_.P_P5))))
    r = (z * t1) / (t1 - 2.0) - (w + z * w)
    z = 1.0 - (r - z)
    bz = _bits(z)
    j = (bz >> 32) + (n << 20)
    tiny = (j >> 20) <= 0  # a subnormal result: Math.scalb(z, n), one rounding
    scale = _f(np.where(tiny, n + 512 + 1023, 1023) << 52)
    res = np.where(tiny, (z * scale) * k_.P_TWO_M512, _f((np.where(tiny, 0, j) << 32) | (bz & _LOW)))
    res = np.where(over, np.inf, np.where(under, 0.0, res))
    return s * res


def numpy_pow(x: Any, y: Any) -> np.ndarray:
    """``x ** y`` elementwise (``x`` and ``y`` broadcast), fdlibm's ``__ieee754_pow`` as Java's
    ``StrictMath.pow`` computes it, in numpy: the reference of the numba kernel and the path without
    numba (the same bits)."""
    x, y = np.broadcast_arrays(np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64))
    shape = x.shape
    x, y = x.reshape(-1), y.reshape(-1)
    out = np.empty(x.shape)
    with np.errstate(all="ignore"):
        finite = np.isfinite(x) & np.isfinite(y)
        ax = np.abs(x)
        # special values of y (checked first by fdlibm, whatever x), then of x
        simple = (y == 0.0) | (y == 2.0) | (y == 0.5) | (y == 1.0) | (y == -1.0)
        neg = x < 0
        yi = np.abs(y) >= 1.0
        yi &= np.floor(np.abs(y)) == np.abs(y)
        odd = yi & (np.abs(y) < 9007199254740992.0) & (np.fmod(np.abs(y), 2.0) == 1.0)
        go = finite & ~simple & (ax != 0.0) & (ax != 1.0) & (np.abs(y) <= _k.P_HUGE_Y) & (~neg | yi)
        if go.any():
            s = np.where(neg[go] & odd[go], -1.0, 1.0)
            out[go] = _main(x[go], y[go], s)
        quick = simple & ~(np.isnan(x) | np.isnan(y))
        if quick.any():
            xq, yq = x[quick], y[quick]
            sq = np.sqrt(xq + 0.0)  # NaN below 0 (fdlibm: x >= -MAX; -inf goes to the scalar code)
            v = np.where(yq == 0.0, 1.0, np.where(yq == 2.0, xq * xq, np.where(yq == 1.0, xq, np.where(yq == -1.0, 1.0 / xq, sq))))
            out[quick] = v
            redo = np.flatnonzero(quick)[(yq == 0.5) & (xq == -np.inf)]
            for i in redo:
                out[i] = _k.fdlibm_pow(np.float64(x[i]), np.float64(y[i]))
        for i in np.flatnonzero(~go & ~quick):  # nan, inf, 0, +-1, huge y, (x < 0)**non-int
            out[i] = _k.fdlibm_pow(np.float64(x[i]), np.float64(y[i]))
    return out.reshape(shape)


def pow(x: Any, y: Any) -> np.ndarray:
    """``x ** y`` elementwise, fdlibm's ``__ieee754_pow`` (= Java's ``StrictMath.pow``); a float64
    array of the broadcast shape. The numba kernel where numba is used
    (:func:`mergeable_metrics._util.exact_kernels.ready`), else :func:`numpy_pow` (the same bits)."""
    if not _k.ready():
        return numpy_pow(x, y)
    a = np.asarray(x, dtype=np.float64)
    b = np.asarray(y, dtype=np.float64)
    if b.ndim == 0:
        xs = np.ascontiguousarray(a).reshape(-1)
        out = np.empty(xs.shape[0])
        _k.pow_rows(xs, b.reshape(1), out)
        return out.reshape(a.shape)
    a, b = np.broadcast_arrays(a, b)
    out = np.empty(a.size)
    _k.pow_rows(np.ascontiguousarray(a).reshape(-1), np.ascontiguousarray(b).reshape(-1), out)
    return out.reshape(a.shape)
