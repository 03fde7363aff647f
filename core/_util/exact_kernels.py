"""Compiled (numba) kernels of the exact sums in :mod:`mergeable_metrics._util.exact`.

One pass over the rows adds every value (or the exact product of 2 or 3 values) as integers into
32-bit limbs per group: a float64 ``x = M * 2**E`` (``M`` a signed integer below ``2**53``, read
from the IEEE bits, subnormals included) is three integer additions at limbs ``(E + OFFSET) // 32
.. + 2``; a product's mantissas multiply exactly into 53-bit integer pieces (``_mul53``), each added
the same way. The result is the same exact number as the numpy path's, so after canonicalisation
(:func:`mergeable_metrics._util.exact._canonical`) the limbs are bit for bit the same.

numba is optional: :data:`AVAILABLE` is False when it is not installed or when
``MERGEABLE_METRICS_DISABLE_NUMBA=1`` is set (the numpy path is used then; without numba a one-line
warning names the extra). numba is imported on the first exact sum (:func:`ready`), not when the
library is imported. The compiled functions are cached on disk (``cache=True``); when the
package directory is read-only the cache goes to ``$NUMBA_CACHE_DIR``, else
``$XDG_CACHE_HOME/mergeable_metrics/numba`` (``~/.cache/...``).
"""

from __future__ import annotations

import importlib.util
import math
import os
import warnings

import numpy as np

__all__ = ["AVAILABLE", "ready", "sum_products", "warm", "warm_kernels"]

#: bit offset making every position of a product of up to three float64 values non-negative
#: (3 * -1074 = -3222 > -OFFSET); a multiple of 32
OFFSET = 101 * 32
_EXTRA = "pip install 'mergeable-metrics[fast]'"


def _cache_dir() -> None:
    """Point numba's cache at a writable user directory when the package directory is not
    writable (read-only site-packages) and the user has not chosen one."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return
    here = os.path.dirname(os.path.abspath(__file__))
    pycache = os.path.join(here, "__pycache__")
    if os.access(pycache if os.path.isdir(pycache) else here, os.W_OK):
        return
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    os.environ["NUMBA_CACHE_DIR"] = os.path.join(base, "mergeable_metrics", "numba")
    import sys

    if "numba" in sys.modules:  # imported before us: numba read its configuration already
        sys.modules["numba"].config.CACHE_DIR = os.environ["NUMBA_CACHE_DIR"]


_DISABLED = os.environ.get("MERGEABLE_METRICS_DISABLE_NUMBA", "").strip() not in ("", "0")
#: the kernels are used (numba found and not disabled); numba itself is imported, and the kernels
#: compiled or loaded from the cache, on first use (:func:`ready`), so importing the library stays light
AVAILABLE = not _DISABLED and importlib.util.find_spec("numba") is not None
_loaded = False
#: the kernels, in dependency order (helpers first): :func:`ready` replaces each by its compiled form
_KERNELS = (
    "mant_exp",
    "mul53",
    "add_int",
    "scan",
    "first_non_finite",
    "accumulate",
    "index_bounds",
    "two_product",
    "flush",
    "grid_accumulate",
    "grid_sum_flat",
    "canonical",
    "round_rows",
)


def ready() -> bool:
    """Whether the compiled kernels are used; the first call imports numba and wraps them
    (without numba: one ``RuntimeWarning`` naming the extra)."""
    global _loaded, AVAILABLE
    if not _loaded:
        _loaded = True
        if AVAILABLE:
            _cache_dir()
            try:
                import numba
            except ImportError:  # pragma: no cover - a broken installation
                AVAILABLE = False
            else:
                jit = numba.njit(cache=True, nogil=True, boundscheck=False)
                g = globals()
                for name in _KERNELS:
                    g[name] = jit(g[name])
        if not AVAILABLE and not _DISABLED:
            warnings.warn(f"mergeable_metrics: numba is not installed; exact sums use the slower numpy path ({_EXTRA})", RuntimeWarning, stacklevel=3)
    return AVAILABLE


MASK = np.int64(0xFFFFFFFF)
LOW27 = np.int64((1 << 27) - 1)
LOW26 = np.int64((1 << 26) - 1)
LOW53 = np.int64((1 << 53) - 1)


def mant_exp(b):
    """(signed M, E) of the float64 with bits ``b``: value == M * 2**E."""
    e = (b >> 52) & 0x7FF
    m = b & ((np.int64(1) << 52) - 1)
    if e != 0:
        m |= np.int64(1) << 52
    else:
        e = 1
    if b < 0:
        m = -m
    return m, e - 1075


def mul53(a, b):
    """(hi, lo) with a * b == hi * 2**53 + lo, 0 <= lo < 2**53 (0 <= a, b < 2**53)."""
    a1, a0 = a >> 27, a & LOW27
    b1, b0 = b >> 27, b & LOW27
    mid = a1 * b0 + a0 * b1  # < 2**54
    lo = a0 * b0 + ((mid & LOW26) << 27)  # < 2**55
    hi = ((a1 * b1) << 1) + (mid >> 26) + (lo >> 53)
    return hi, lo & LOW53


def add_int(acc, row, t, pos, qmin):
    """acc[row] += t * 2**(pos - OFFSET) (|t| < 2**53; pos >= 0)."""
    q = (pos >> 5) - qmin
    r = pos & 31
    a = (t & MASK) << r
    b = (t >> 32) << r
    acc[row, q] += a & MASK
    acc[row, q + 1] += (a >> 32) + (b & MASK)
    acc[row, q + 2] += b >> 32


def scan(f):
    """(smallest biased exponent of the nonzero values (subnormals: 1; none: 2047), largest
    biased exponent (2047: a non-finite value)) of float64 bits ``f``; branch-free."""
    lo = np.int64(2047)
    hi = np.int64(0)
    for i in range(f.shape[0]):
        a = f[i] & np.int64(0x7FFFFFFFFFFFFFFF)
        e = a >> 52
        hi = max(hi, e)
        lo = min(lo, max(e, 1) if a != 0 else 2047)
    return lo, hi


def first_non_finite(f):
    for i in range(f.shape[0]):
        if (f[i] >> 52) & 0x7FF == 0x7FF:
            return i
    return -1


def accumulate(f0, f1, f2, nf, g, has_g, acc, qmin):
    """Add every product (1 to 3 factors, as int64 bit views) into ``acc[g[i]]`` (row 0
    without index); limb ``j`` of ``acc`` weighs ``2**(32 * (j + qmin) - OFFSET)``."""
    n = f0.shape[0]
    for i in range(n):
        row = g[i] if has_g else 0
        m, e = mant_exp(f0[i])
        if m == 0:
            continue
        if nf == 1:
            add_int(acc, row, m, e + OFFSET, qmin)
            continue
        m1, e1 = mant_exp(f1[i])
        if m1 == 0:
            continue
        neg = (m < 0) != (m1 < 0)
        hi, lo = mul53(abs(m), abs(m1))
        e += e1
        if nf == 2:
            if neg:
                hi, lo = -hi, -lo
            add_int(acc, row, lo, e + OFFSET, qmin)
            add_int(acc, row, hi, e + 53 + OFFSET, qmin)
            continue
        m2, e2 = mant_exp(f2[i])
        if m2 == 0:
            continue
        if m2 < 0:
            neg = not neg
        m2 = abs(m2)
        e += e2
        h1, l1 = mul53(lo, m2)
        h2, l2 = mul53(hi, m2)
        if neg:
            h1, l1, h2, l2 = -h1, -l1, -h2, -l2
        add_int(acc, row, l1, e + OFFSET, qmin)
        add_int(acc, row, l2, e + 53 + OFFSET, qmin)
        add_int(acc, row, h1, e + 53 + OFFSET, qmin)
        add_int(acc, row, h2, e + 106 + OFFSET, qmin)


def index_bounds(g, size):
    """Position of the first index outside [0, size), or -1."""
    for i in range(g.shape[0]):
        if g[i] < 0 or g[i] >= size:
            return i
    return -1


SPLIT = 134217729.0  # 2**27 + 1, Dekker's splitter


def two_product(a, b):
    """(p, e) with p + e == a * b exactly (Dekker; no overflow or underflow on the way)."""
    p = a * b
    c = a * SPLIT
    ah = c - (c - a)
    al = a - ah
    c = b * SPLIT
    bh = c - (c - b)
    bl = b - bh
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def flush(slots, C, acc, qmin):
    """Add the exact float sums ``slots`` (rows, K) into the limbs ``acc`` and zero them."""
    for row in range(slots.shape[0]):
        for k in range(C.shape[0]):
            x = slots[row, k]
            if x != 0.0:
                m, e = math.frexp(x)
                add_int(acc, row, np.int64(m * 9007199254740992.0), e - 53 + OFFSET, qmin)
                slots[row, k] = 0.0


def grid_accumulate(f0, f1, f2, nf, g, has_g, C, acc, qmin, slots):
    """:func:`accumulate` for terms within a window: each product is cut, error-free, into
    float terms (Dekker), each term onto the grids of ``C`` (``piece = (r + C) - C`` rounds
    ``r`` to the grid's unit, exactly) whose pieces add exactly in float64 ``slots`` (per
    group, or per lane without index), flushed into the limbs every 2**16 rows."""
    n = f0.shape[0]
    K = C.shape[0]
    for start in range(0, n, 1 << 16):
        for i in range(start, min(n, start + (1 << 16))):
            row = g[i] if has_g else i & 3
            a = f0[i]
            if nf == 1:
                r = a
                for k in range(K):
                    p = (r + C[k]) - C[k]
                    r -= p
                    slots[row, k] += p
                continue
            t0, t1 = two_product(a, f1[i])
            t2 = 0.0
            t3 = 0.0
            if nf == 3:
                c = f2[i]
                t2, t3 = two_product(t1, c)
                t0, t1 = two_product(t0, c)
            for k in range(K):
                ck = C[k]
                p0 = (t0 + ck) - ck
                p1 = (t1 + ck) - ck
                p2 = (t2 + ck) - ck
                p3 = (t3 + ck) - ck
                t0 -= p0
                t1 -= p1
                t2 -= p2
                t3 -= p3
                slots[row, k] += (p0 + p1) + (p2 + p3)
        flush(slots, C, acc, qmin)


def grid_sum_flat(f0, f1, f2, nf, C, acc, qmin):
    """:func:`grid_accumulate` without index, block by block: the float terms of 2048 rows
    go to a buffer, then each grid is one simple pass over it with four independent
    accumulators (no memory dependency from row to row)."""
    n = f0.shape[0]
    K = C.shape[0]
    B = 2048
    nt = 1 if nf == 1 else (2 if nf == 2 else 4)
    buf = np.empty((nt, B))
    slots = np.zeros((1, K))
    rows = 0
    for start in range(0, n, B):
        m = min(B, n - start)
        for i in range(m):
            a = f0[start + i]
            if nf == 1:
                buf[0, i] = a
                continue
            t0, t1 = two_product(a, f1[start + i])
            if nf == 3:
                c = f2[start + i]
                t2, t3 = two_product(t1, c)
                t0, t1 = two_product(t0, c)
                buf[2, i] = t2
                buf[3, i] = t3
            buf[0, i] = t0
            buf[1, i] = t1
        m4 = m - m % 4
        for t in range(nt):
            for k in range(K):
                c = C[k]
                s0 = 0.0
                s1 = 0.0
                s2 = 0.0
                s3 = 0.0
                for i in range(0, m4, 4):
                    r0 = buf[t, i]
                    r1 = buf[t, i + 1]
                    r2 = buf[t, i + 2]
                    r3 = buf[t, i + 3]
                    p0 = (r0 + c) - c
                    p1 = (r1 + c) - c
                    p2 = (r2 + c) - c
                    p3 = (r3 + c) - c
                    buf[t, i] = r0 - p0
                    buf[t, i + 1] = r1 - p1
                    buf[t, i + 2] = r2 - p2
                    buf[t, i + 3] = r3 - p3
                    s0 += p0
                    s1 += p1
                    s2 += p2
                    s3 += p3
                for i in range(m4, m):
                    r0 = buf[t, i]
                    p0 = (r0 + c) - c
                    buf[t, i] = r0 - p0
                    s0 += p0
                slots[0, k] += (s0 + s1) + (s2 + s3)
        rows += m
        if rows >= 1 << 16:
            flush(slots, C, acc, qmin)
            rows = 0
    flush(slots, C, acc, qmin)


HALF = np.int64(1) << 31


def canonical(D, exp):
    """Canonical ``(limbs, exp)`` of raw limbs (|entries| < 2**62): carried so limbs below
    the top are in [0, 2**32) and the top is signed, in the smallest common window (see
    :func:`mergeable_metrics._util.exact._canonical`)."""
    m, L = D.shape
    W = L + 2
    C = np.zeros((m, W), dtype=np.int64)
    top = -1
    low = W
    for g in range(m):
        c = np.int64(0)
        for i in range(W - 1):
            x = (D[g, i] if i < L else np.int64(0)) + c
            C[g, i] = x & MASK
            c = x >> 32
        C[g, W - 1] = c
        neg = c < 0
        j = W - 1
        while j > 0:
            tj = C[g, j] if j == W - 1 else (C[g, j] - (np.int64(1) << 32) if neg else C[g, j])
            if neg:
                if tj == -1 and C[g, j - 1] >= HALF:
                    j -= 1
                    continue
            elif tj == 0 and C[g, j - 1] < HALF:
                j -= 1
                continue
            break
        nz = -1
        for i in range(W):
            if C[g, i] != 0:
                nz = i
                break
        if nz >= 0:
            if j > top:
                top = j
            if nz < low:
                low = nz
    if top < 0:
        return np.zeros((m, 0), dtype=np.int64), 0
    out = np.empty((m, top - low + 1), dtype=np.int64)
    for g in range(m):
        neg = C[g, W - 1] < 0
        for i in range(low, top + 1):
            out[g, i - low] = C[g, i]
        if neg and top < W - 1:
            out[g, top - low] -= np.int64(1) << 32
    return out, exp + low


def round_rows(D, exp, v, inexact, subnormal):
    """Correctly rounded float64 ``v`` (half to even) of canonical limbs, the ``inexact``
    flags and the rows whose result is subnormal (``subnormal``: rounded by the caller)."""
    m, L = D.shape
    A = np.empty(L, dtype=np.int64)
    for g in range(m):
        neg = L > 0 and D[g, L - 1] < 0
        if neg:  # magnitude: two's complement of the limbs
            c = np.int64(1)
            for i in range(L):
                x = (MASK - D[g, i] if i < L - 1 else -1 - D[g, i]) + c
                if i < L - 1:
                    A[i] = x & MASK
                    c = x >> 32
                else:
                    A[i] = x
        else:
            for i in range(L):
                A[i] = D[g, i]
        t = L - 1
        while t >= 0 and A[t] == 0:
            t -= 1
        if t < 0:
            v[g] = 0.0
            inexact[g] = False
            continue
        d0 = A[t]
        b = 0
        while (d0 >> b) != 0:
            b += 1
        d1 = A[t - 1] if t >= 1 else np.int64(0)
        d2 = A[t - 2] if t >= 2 else np.int64(0)
        sticky = False
        for i in range(t - 2):
            if A[i] != 0:
                sticky = True
                break
        X = d0 << (62 - b)  # 62 significant bits, the top one at bit 61
        if b <= 30:
            X |= d1 << (30 - b)
        else:
            X |= d1 >> (b - 30)
            sticky = sticky or (d1 & ((np.int64(1) << (b - 30)) - 1)) != 0
        X |= d2 >> (b + 2)
        sticky = sticky or (d2 & ((np.int64(1) << (b + 2)) - 1)) != 0
        mant = X >> 9
        rest = X & 0x1FF
        half = (rest >> 8) != 0
        lowbits = (rest & 0xFF) != 0 or sticky
        if half and (lowbits or (mant & 1) != 0):
            mant += 1
        e = 32 * (exp + t) + b - 53
        if e + 52 < -1022:
            subnormal[g] = True
        r = np.ldexp(np.float64(mant), e)
        inexact[g] = rest != 0 or sticky or np.isinf(r)
        v[g] = -r if neg else r


_EMPTY = np.zeros(0, dtype=np.int64)
_EMPTYF = np.zeros(0)
#: most grids of the float-grid kernel (wider value ranges use the limb kernel)
GRIDS = 6
#: rows per kernel call: every limb's partial sum stays below 2**(33 + 2 + 26) < 2**62
CHUNK = 1 << 24


class NonFinite(ValueError):
    """A factor holds a non-finite value (``position`` in its flat array)."""

    def __init__(self, factor: int, position: int, value: float):
        super().__init__(f"exact sum: value {value!r} at position {position} is not finite")
        self.factor, self.position = factor, position


def sum_products(factors: list[np.ndarray], index: np.ndarray | None, size: int) -> tuple[np.ndarray, int]:
    """Un-normalised ``(limbs (size, L) int64, exp)`` of the exact per-index sums of the
    element-wise products of 1 to 3 flat float64 ``factors`` (at most :data:`CHUNK` rows).

    Raises:
        ValueError: a non-finite value (naming it and its position), an index out of range.
    """
    # writeable C arrays: one compiled variant per kernel (a read-only array, e.g. from Arrow,
    # would compile another on first use)
    factors = [f if f.dtype == np.float64 and f.flags.c_contiguous and f.flags.writeable else np.array(f, dtype=np.float64) for f in map(np.asarray, factors)]
    bits = [f.view(np.int64) for f in factors]
    nf = len(bits)
    f0 = bits[0]
    if any(b.shape != f0.shape for b in bits) or (index is not None and np.shape(index) != f0.shape):
        raise ValueError(f"exact sum: factors and index of different lengths {[b.shape[0] for b in bits] + ([] if index is None else [np.shape(index)])}")
    f1 = bits[1] if nf > 1 else _EMPTY
    f2 = bits[2] if nf > 2 else _EMPTY
    emin = emax = 0  # lowest bit and highest binade of every product: 2**emin <= bit, |product| < 2**emax
    moderate = True
    for k, b in enumerate(bits):
        lo, hi = scan(b)
        if hi == 2047:
            bad = int(first_non_finite(b))
            raise NonFinite(k, bad, float(b[bad : bad + 1].view(np.float64)[0]))
        if lo == 2047:  # every value zero: so is every product
            return np.zeros((size, 0), dtype=np.int64), 0
        hi = max(hi, 1)  # subnormals: the grid of binade 1
        emin, emax = emin + int(lo) - 1075, emax + int(hi) - 1022
        moderate = moderate and int(lo) - 1023 >= -300 and int(hi) - 1023 < 300
    g = None
    if index is not None:
        g = np.asarray(index)
        if not (g.dtype == np.int64 and g.flags.c_contiguous and g.flags.writeable):
            g = np.array(g, dtype=np.int64)
        bad = index_bounds(g, size)
        if bad >= 0:
            raise ValueError(f"exact sum: index {int(g[bad])} at position {int(bad)} is outside [0, {size})")
    # the grids: units 2**u, u = emax - 33, then 35 bits lower each, down to emin; every piece
    # has at most 34 bits above its unit, 2**18 of them add exactly in float64
    u0 = emax - 33
    K = max(1, -(-(u0 - emin) // 35) + 1)
    if (nf == 1 or moderate) and K <= GRIDS and u0 + 52 <= 1023 and (g is None or size <= 1 << 16):
        units = [max(u0 - 35 * k, -1074) for k in range(K)]
        C = np.ldexp(1.5, np.array(units) + 52)
        qmin = (max(min(units[-1], emin) - 64, -OFFSET) + OFFSET) >> 5
        qmax = (emax + 24 + OFFSET) >> 5
        acc = np.zeros((size, qmax - qmin + 3), dtype=np.int64)
        fs = factors
        f1 = fs[1] if nf > 1 else _EMPTYF
        f2 = fs[2] if nf > 2 else _EMPTYF
        if g is None:
            grid_sum_flat(fs[0], f1, f2, nf, C, acc, qmin)
        else:
            grid_accumulate(fs[0], f1, f2, nf, g, True, C, acc, qmin, np.zeros((size, K)))
        return acc, qmin - OFFSET // 32
    qmin = (emin + OFFSET) >> 5
    qmax = (emax + OFFSET) >> 5
    acc = np.zeros((size, qmax - qmin + 3), dtype=np.int64)
    if g is None:
        accumulate(f0, f1, f2, nf, _EMPTY, False, acc, qmin)
    else:
        accumulate(f0, f1, f2, nf, g, True, acc, qmin)
    return acc, qmin - OFFSET // 32


def canonical_round(D: np.ndarray, exp: int) -> tuple[np.ndarray, int, np.ndarray, np.ndarray, np.ndarray]:
    """``(limbs, exp, values, inexact, subnormal)``: the canonical form of raw limbs ``D``
    ((m, L) int64, |entries| < 2**62) and each sum correctly rounded (``subnormal`` rows are left
    to the caller's exact rounding)."""
    if not (D.dtype == np.int64 and D.flags.c_contiguous and D.flags.writeable):
        D = np.array(D, dtype=np.int64)
    C, e = canonical(D, int(exp))
    m = C.shape[0]
    v = np.zeros(m)
    inexact = np.zeros(m, dtype=np.bool_)
    sub = np.zeros(m, dtype=np.bool_)
    if C.shape[1]:
        round_rows(C, int(e), v, inexact, sub)
    return C, int(e), v, inexact, sub


def warm() -> float:
    """Compile (or load from the on-disk cache) the kernels now, e.g. in a worker's setup, so no
    bundle pays it; returns the seconds it took (0.0 without numba, or when already warm)."""
    global _warm
    if _warm or not ready():
        return 0.0
    import time

    t0 = time.perf_counter()
    x = np.array([1.5, -0.25])
    g = np.array([0, 1])
    for nf in (1, 2, 3):
        sum_products([x] * nf, None, 1)
        sum_products([x] * nf, g, 2)
    for fs in ([x], [x, x], [x, x, x]):
        sum_products([np.array([1e300, -1e-300])] * len(fs), None, 1)  # the limb kernel (wide ranges)
        sum_products([np.array([1e300, -1e-300])] * len(fs), g, 2)
    canonical_round(np.array([[1, -3]], dtype=np.int64), 0)
    _warm = True
    return time.perf_counter() - t0


_warm = False
#: the name the engine tier exports (:mod:`mergeable_metrics.engine`)
warm_kernels = warm
