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
import os
import threading
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
#: held while the first :func:`ready` loads the kernels
_load_lock = threading.Lock()
#: the kernels, in dependency order (helpers first): :func:`ready` replaces each by its compiled form;
#: LLVM inlines the small element-wise helpers (:func:`chain`, :func:`product_pieces`) into
#: :func:`_rows`, whose loops, with the number of grids a constant, are straight-line and vectorised
_KERNELS = (
    "mant_exp",
    "mul53",
    "add_int",
    "scan",
    "first_non_finite",
    "accumulate",
    "index_bounds",
    "two_prod",
    "chain",
    "add4",
    "product_pieces",
    "scatter",
    "unbias",
    "_rows",
    "_rows3",
    "flush_parts",
    "_tier",
    "fused_grid",
    "canonical",
    "add_canonical",
    "round_rows",
    "grid_sum",
    "plan_sum",
    "scan_weights",
    "first_negative",
    "add_window",
    "sum_blocks",
    "mean_sums",
    "mean_fold",
    "_binades",
    "_score_rows",
    "score_sums",
    "_reg_rows",
    "_trim",
    "regression_sums",
    "cell_grids",
    "and4",
    "_binary_rows",
    "binary_cell_sums",
    "_pair_rows",
    "pair_cell_sums",
    "pair_counts",
    "threshold_counts",
    "fdlibm_log",
    "log_rows",
    "fdlibm_pow",
    "pow_main",
    "pow_general",
    "pow_rows",
    "_prob_rows",
    "probability_sums",
    "stack_raws",
    "regression_stack_sums",
)

#: kernels compiled with numba's ``error_model="numpy"``: an IEEE division (no zero-division check,
#: a branch that keeps LLVM from vectorising the loop); their divisors are never zero
_IEEE_DIVISION = ("fdlibm_log", "log_rows", "fdlibm_pow", "pow_main", "pow_general", "pow_rows", "_prob_rows")
#: kernels inlined by numba into their callers (``error_model="numpy"`` too): too large for LLVM's inliner, and a
#: loop that calls one is not vectorised
_INLINE = ("pow_main", "pow_general")


def ready() -> bool:
    """Whether the compiled kernels are used; the first call imports numba and wraps them
    (without numba: one ``RuntimeWarning`` naming the extra). Thread-safe: a thread that calls it
    while another is loading waits, so it never runs the kernels' plain Python forms."""
    global _loaded, AVAILABLE
    if not _loaded:
        with _load_lock:
            if not _loaded:
                try:
                    _load()
                finally:
                    _loaded = True  # after the kernels are wrapped: a thread that reads it sees them
    return AVAILABLE


def _load() -> None:
    global AVAILABLE
    if AVAILABLE:
        _cache_dir()
        try:
            import numba
        except ImportError:  # pragma: no cover - a broken installation
            AVAILABLE = False
        else:
            jit = numba.njit(cache=True, nogil=True, boundscheck=False)
            g = globals()
            g["f2i"], g["fma"], g["i2f"] = _intrinsics(numba)
            branch_free = numba.njit(cache=True, nogil=True, boundscheck=False, error_model="numpy")
            inlined = numba.njit(cache=True, nogil=True, boundscheck=False, error_model="numpy", inline="always")
            for name in _KERNELS:
                g[name] = (inlined if name in _INLINE else branch_free if name in _IEEE_DIVISION else jit)(g[name])
    if not AVAILABLE and not _DISABLED:
        warnings.warn(f"mergeable_metrics: numba is not installed; exact sums use the slower numpy path ({_EXTRA})", RuntimeWarning, stacklevel=4)


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


M63 = np.int64(0x7FFFFFFFFFFFFFFF)


def scan(f):
    """(smallest biased exponent of the nonzero values (subnormals: 1; none: 2047), largest
    biased exponent (2047: a non-finite value)) of float64 bits ``f``: the largest magnitude's
    bits, and the smallest nonzero one's (``(a - 1) & M63`` sends 0 to the top); two branch-free
    int64 reductions."""
    hi = np.int64(0)
    lo = M63
    for i in range(f.shape[0]):
        a = f[np.uint64(i)] & M63
        hi = max(hi, a)
        lo = min(lo, (a - 1) & M63)
    if lo == M63:
        return np.int64(2047), hi >> 52
    return max((lo + 1) >> 52, np.int64(1)), hi >> 52


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


def _intrinsics(numba):
    """Compiled :func:`f2i` (a bit cast, free in a vector register) and :func:`fma` (LLVM's
    ``llvm.fma.f64``: one rounding, on any CPU)."""
    from llvmlite import ir
    from numba import types
    from numba.extending import intrinsic

    @intrinsic
    def _f2i(typingctx, x):
        def codegen(context, builder, sig, args):
            return builder.bitcast(args[0], ir.IntType(64))

        return types.int64(types.float64), codegen

    @intrinsic
    def _fma(typingctx, a, b, c):
        def codegen(context, builder, sig, args):
            return builder.fma(*args)

        return types.float64(types.float64, types.float64, types.float64), codegen

    @intrinsic
    def _i2f(typingctx, x):
        def codegen(context, builder, sig, args):
            return builder.bitcast(args[0], ir.DoubleType())

        return types.float64(types.int64), codegen

    return _f2i, _fma, _i2f


def f2i(x):
    """The IEEE bits of the float64 ``x`` as an int64 (compiled: a bit cast)."""
    return int(np.float64(x).view(np.int64))


def fma(a, b, c):
    """``a * b + c`` rounded once (compiled: ``llvm.fma.f64``)."""
    from fractions import Fraction

    return float(Fraction(a) * Fraction(b) + Fraction(c))


def two_prod(a, b):
    """(p, e) with p + e == a * b exactly (``e = fma(a, b, -p)``; no underflow in the moderate range)."""
    p = a * b
    return p, fma(a, b, -p)


def chain(r, K, c, b):
    """The integers ``(q0, .., q3)`` of ``r`` cut onto ``K`` (1 to 4) grids ``c`` (4-tuple,
    bits ``b``): on the grid of ``c = 1.5 * 2**(u + 52)``, ``y = r + c`` rounds ``r``
    (|r| <= 2**(u + 51)) to ``q * 2**u`` and ``q = bits(y) - bits(c)`` exactly; the residual
    ``r - (y - c)`` (exact) goes to the next grid; the last grid's unit is at most the lowest bit
    of every term of its tier, so nothing is left over. Branch-free once ``K`` is a constant."""
    y = r + c[0]
    q0 = f2i(y) - b[0]
    q1 = q2 = q3 = np.int64(0)
    if K >= 2:
        r = r - (y - c[0])
        y = r + c[1]
        q1 = f2i(y) - b[1]
        if K >= 3:
            r = r - (y - c[1])
            y = r + c[2]
            q2 = f2i(y) - b[2]
            if K >= 4:
                r = r - (y - c[2])
                y = r + c[3]
                q3 = f2i(y) - b[3]
    return q0, q1, q2, q3


def add4(s, q):
    return s[0] + q[0], s[1] + q[1], s[2] + q[2], s[3] + q[3]


def product_pieces(f0, f1, f2, nf, i, K, ca, ba, cb, bb, cc, bc):
    """The grid integers of product ``i`` (1 to 3 factors) per tier of its exact float terms
    (:func:`two_prod`): tier 0 the rounded product, tier 1 the terms below 2**-53 of it, tier 2
    (three factors) below 2**-106; each tier has its own grids (``ca``, ``cb``, ``cc``). The row
    is read through an unsigned index: numba then emits no negative-index wrap-around, which
    otherwise keeps LLVM from vectorising."""
    i = np.uint64(i)
    z = (np.int64(0), np.int64(0), np.int64(0), np.int64(0))
    if nf == 1:
        return chain(f0[i], K, ca, ba), z, z
    p, e = two_prod(f0[i], f1[i])
    if nf == 2:
        return chain(p, K, ca, ba), chain(e, K, cb, bb), z
    c = f2[i]
    p1, e1 = two_prod(p, c)
    p2, e2 = two_prod(e, c)
    return chain(p1, K, ca, ba), add4(chain(e1, K, cb, bb), chain(p2, K, cb, bb)), chain(e2, K, cc, bc)


def scatter(part, row, base, q, K):
    part[row, base] += q[0]
    if K >= 2:
        part[row, base + 1] += q[1]
    if K >= 3:
        part[row, base + 2] += q[2]
    if K >= 4:
        part[row, base + 3] += q[3]


def unbias(s, cnt, b, K):
    """``s[k] - cnt * b[k]`` for the ``K`` grids in use (wrapping int64 arithmetic)."""
    return (
        s[0] - cnt * b[0],
        s[1] - cnt * b[1] if K >= 2 else s[1],
        s[2] - cnt * b[2] if K >= 3 else s[2],
        s[3] - cnt * b[3] if K >= 4 else s[3],
    )


def _rows(f0, f1, f2, nf, lo, hi, K, g, has_g, part, ca, ba, cb, bb, cc, bc, U, acc, qmin):
    """Rows ``lo .. hi``: grouped, scattered into ``part[g[i], tier * K + grid]`` (scalar; the
    caller flushes); ungrouped, int64 reductions per tier and grid (vectorised) over blocks of
    :data:`BLOCK` rows, each block's sums carried into the limbs ``acc`` here (units
    ``2**U[k]``), so no call per block."""
    z = (np.int64(0), np.int64(0), np.int64(0), np.int64(0))
    if has_g:
        for i in range(lo, hi):
            qa, qb, qc = product_pieces(f0, f1, f2, nf, i, K, ca, ba, cb, bb, cc, bc)
            row = g[np.uint64(i)]
            scatter(part, row, 0, qa, K)
            if nf >= 2:
                scatter(part, row, K, qb, K)
            if nf >= 3:
                scatter(part, row, 2 * K, qc, K)
        return
    for blo in range(lo, hi, BLOCK):
        bhi = min(hi, blo + BLOCK)
        sa = sb = sc = z
        if nf == 1:
            for i in range(blo, bhi):
                qa, qb, qc = product_pieces(f0, f1, f2, 1, i, K, ca, z, cb, z, cc, z)
                sa = add4(sa, qa)
        elif nf == 2:
            for i in range(blo, bhi):
                qa, qb, qc = product_pieces(f0, f1, f2, 2, i, K, ca, z, cb, z, cc, z)
                sa = add4(sa, qa)
                sb = add4(sb, qb)
        else:
            for i in range(blo, bhi):
                qa, qb, qc = product_pieces(f0, f1, f2, 3, i, K, ca, z, cb, z, cc, z)
                sa = add4(sa, qa)
                sb = add4(sb, qb)
                sc = add4(sc, qc)
        # the grids' bits were summed as they are (int64, wrapping); each integer is bits(y) -
        # bits(c), so the block's sum is that sum minus rows * bits(c), exact modulo 2**64 and
        # below 2**62 in magnitude: exact (one subtraction per block, not per row)
        cnt = np.int64(bhi - blo)
        sa = unbias(sa, cnt, ba, K)
        sb = unbias(sb, cnt * (2 if nf == 3 else 1), bb, K)  # tier 1 of three factors: two terms per row
        sc = unbias(sc, cnt, bc, K)
        for k in range(K):
            if sa[k] != 0:
                add_int(acc, 0, sa[k], U[k] + OFFSET, qmin)
            if nf > 1 and sb[k] != 0:
                add_int(acc, 0, sb[k], U[K + k] + OFFSET, qmin)
            if nf > 2 and sc[k] != 0:
                add_int(acc, 0, sc[k], U[2 * K + k] + OFFSET, qmin)


def _rows3(f0, f1, f2, lo, hi, K, KA, ca, cb, cc, U, acc, qmin):
    """The ungrouped three-factor rows of :func:`_rows` when the rounded products (tier 0) and
    the terms below 2**-106 of them (tier 2) need fewer grids than the terms of tier 1: ``KA``
    grids for those, ``K`` for tier 1 (a tier's grids are its first ones, so the integers and
    units are :func:`_rows`'s; two fewer grid steps per row of ``K = 3``)."""
    z = (np.int64(0), np.int64(0), np.int64(0), np.int64(0))
    for blo in range(lo, hi, BLOCK):
        bhi = min(hi, blo + BLOCK)
        sa = sb = sc = z
        for j in range(blo, bhi):
            i = np.uint64(j)
            p, e = two_prod(f0[i], f1[i])
            c = f2[i]
            p1, e1 = two_prod(p, c)
            p2, e2 = two_prod(e, c)
            sa = add4(sa, chain(p1, KA, ca, z))
            sb = add4(sb, add4(chain(e1, K, cb, z), chain(p2, K, cb, z)))
            sc = add4(sc, chain(e2, KA, cc, z))
        cnt = np.int64(bhi - blo)
        ba = (f2i(ca[0]), f2i(ca[1]), f2i(ca[2]), f2i(ca[3]))
        bb = (f2i(cb[0]), f2i(cb[1]), f2i(cb[2]), f2i(cb[3]))
        bc = (f2i(cc[0]), f2i(cc[1]), f2i(cc[2]), f2i(cc[3]))
        sa = unbias(sa, cnt, ba, KA)
        sb = unbias(sb, cnt * 2, bb, K)  # tier 1: two terms per row
        sc = unbias(sc, cnt, bc, KA)
        for k in range(K):
            if k < KA and sa[k] != 0:
                add_int(acc, 0, sa[k], U[k] + OFFSET, qmin)
            if sb[k] != 0:
                add_int(acc, 0, sb[k], U[K + k] + OFFSET, qmin)
            if k < KA and sc[k] != 0:
                add_int(acc, 0, sc[k], U[2 * K + k] + OFFSET, qmin)


def flush_parts(part, U, acc, qmin):
    """Add the integer grid sums ``part`` (rows, K; unit ``2**U[k]``) into the limbs; zero them."""
    for row in range(part.shape[0]):
        for k in range(U.shape[0]):
            t = part[row, k]
            if t != 0:
                add_int(acc, row, t, U[k] + OFFSET, qmin)
                part[row, k] = 0


#: rows per block of the integer-grid kernel (ungrouped: the int64 sums are carried into the limbs every block)
BLOCK = 1024


def _tier(C, Cb, t, K):
    """Row ``t`` of the grids as 4-tuples (unused slots repeat the first grid)."""
    return (C[t, 0], C[t, min(1, K - 1)], C[t, min(2, K - 1)], C[t, min(3, K - 1)]), (
        Cb[t, 0],
        Cb[t, min(1, K - 1)],
        Cb[t, min(2, K - 1)],
        Cb[t, min(3, K - 1)],
    )


def fused_grid(f0, f1, f2, nf, g, has_g, C, Cb, U, acc, qmin, every, KA=0):
    """:func:`accumulate` for products within a window, in one pass: each product's exact float
    terms are cut onto the ``K`` (1 to 4) integer grids of their tier (``C[tier]``, units
    ``2**U[tier]``; :func:`chain`) and the integers summed in int64 (ungrouped: vectorised
    reductions, carried into the limbs every :data:`BLOCK` rows; grouped: per index in ``part``,
    carried every ``every`` rows; the caller's grid spacing keeps every partial sum below 2**62)."""
    n = f0.shape[0]
    T, K = C.shape
    ca, ba = _tier(C, Cb, 0, K)
    cb, bb = _tier(C, Cb, min(1, T - 1), K)
    cc, bc = _tier(C, Cb, min(2, T - 1), K)
    part = np.zeros((acc.shape[0] if has_g else 1, T * K), dtype=np.int64)
    Uf = U.ravel()
    step = every if has_g else n  # ungrouped: one call, blocked inside (see _rows)
    if nf == 3 and not has_g and T == 3 and 0 < KA < K:  # tiers 0 and 2 on one grid fewer (see grid_sum)
        if K == 2:
            _rows3(f0, f1, f2, 0, n, 2, 1, ca, cb, cc, Uf, acc, qmin)
        elif K == 3:
            _rows3(f0, f1, f2, 0, n, 3, 2, ca, cb, cc, Uf, acc, qmin)
        else:
            _rows3(f0, f1, f2, 0, n, 4, 3, ca, cb, cc, Uf, acc, qmin)
        return
    for lo in range(0, n, max(step, 1)):
        hi = min(n, lo + step)
        if K == 1:
            _rows(f0, f1, f2, nf, lo, hi, 1, g, has_g, part, ca, ba, cb, bb, cc, bc, Uf, acc, qmin)
        elif K == 2:
            _rows(f0, f1, f2, nf, lo, hi, 2, g, has_g, part, ca, ba, cb, bb, cc, bc, Uf, acc, qmin)
        elif K == 3:
            _rows(f0, f1, f2, nf, lo, hi, 3, g, has_g, part, ca, ba, cb, bb, cc, bc, Uf, acc, qmin)
        else:
            _rows(f0, f1, f2, nf, lo, hi, 4, g, has_g, part, ca, ba, cb, bb, cc, bc, Uf, acc, qmin)
        if has_g:
            flush_parts(part, Uf, acc, qmin)


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


def add_canonical(A, ea, B, eb):
    """:func:`canonical` of the sum of two raw limb arrays (``A`` at ``ea``, ``B`` at ``eb``,
    the same number of rows, each with limbs): one call where a merge of raw sums took a numpy
    alignment and a call."""
    m = A.shape[0]
    lo = min(ea, eb)
    hi = max(ea + A.shape[1], eb + B.shape[1])
    D = np.zeros((m, hi - lo + 1), dtype=np.int64)
    for g in range(m):
        for i in range(A.shape[1]):
            D[g, ea - lo + i] += A[g, i]
        for i in range(B.shape[1]):
            D[g, eb - lo + i] += B[g, i]
    return canonical(D, lo)


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
GRIDS = 4
#: rows per kernel call: every limb's partial sum stays below 2**(33 + 2 + 26) < 2**62
CHUNK = 1 << 24


def plan_sum(f0, f1, f2, nf, g, has_g, size):
    """The whole of :func:`sum_products` in one compiled call (no per-call Python work):
    ``(acc, exp, status, position)``; ``status`` -1: done; 0-2: a non-finite value in that
    factor; 3: an index outside ``[0, size)``."""
    b0 = f0.view(np.int64)
    los = np.empty(3, dtype=np.int64)
    his = np.empty(3, dtype=np.int64)
    for k in range(nf):
        b = b0 if k == 0 else (f1.view(np.int64) if k == 1 else f2.view(np.int64))
        lo, hi = scan(b)
        if hi == 2047:
            return np.zeros((size, 0), dtype=np.int64), 0, k, first_non_finite(b)
        los[k] = lo
        his[k] = hi
    if has_g:
        bad = index_bounds(g, size)
        if bad >= 0:
            return np.zeros((size, 0), dtype=np.int64), 0, 3, bad
    acc, exp = grid_sum(f0, f1, f2, nf, g, has_g, size, los, his)
    return acc, exp, -1, -1


MIN64 = np.int64(-0x8000000000000000)


def scan_weights(f):
    """:func:`scan` of weights' bits ``f`` and whether one is negative (``-0.0`` is not: its
    bits xor the sign bit are 0, a negative value's are positive, a positive one's negative);
    three branch-free int64 reductions in one pass."""
    hi = np.int64(0)
    lo = M63
    sg = MIN64
    for i in range(f.shape[0]):
        b = f[np.uint64(i)]
        a = b & M63
        hi = max(hi, a)
        lo = min(lo, (a - 1) & M63)
        sg = max(sg, b ^ MIN64)
    lo, hi = _binades(lo, hi)
    return lo, hi, sg > 0


def first_negative(w):
    """The index of the first entry < 0 of (N,) float64 ``w``, or -1 (NaN is not negative)."""
    for i in range(w.shape[0]):
        if w[i] < 0:
            return i
    return -1


#: rows per block of :func:`mean_sums`: a block's columns are read from memory once (its range
#: scans) and summed while they are still in the CPU cache
MEAN_BLOCK = 8192


def add_window(out, qlo, acc, e):
    """Add the raw limbs ``acc`` (1, L) at ``exp`` ``e`` into ``out`` (1, W), whose limb 0 is at
    ``qlo - OFFSET // 32`` (the caller's window holds every limb of ``acc``)."""
    sh = e + OFFSET // 32 - qlo
    for i in range(acc.shape[1]):
        out[0, sh + i] += acc[0, i]


#: rows per block of :func:`sum_blocks` (16 KiB: the block being summed and the next one, read
#: meanwhile, fit in the L1 cache; each grid's int64 sum of a block is at most 2**11 * 2**51)
L1_BLOCK = 2048


def sum_blocks(v, acc, qlo):
    """Add the plain values ``v`` into the raw limbs ``acc`` (window at ``qlo``, as
    :func:`add_window`), one :data:`L1_BLOCK` of rows at a time while it is in the L1 cache: the
    block's largest magnitude (one int64 reduction) sets two float grids below it (:func:`chain`:
    51 bits each, so 102 bits below the block's top binade), the rows' integers on them add in
    int64, and an OR of the residuals tells whether a row had bits below both grids (a block
    spanning more than ~49 binades): that block is summed again by :func:`grid_sum` on its own
    range. The largest magnitude of the next block is found in the same loop as this block's
    grids (its rows are read from memory while this block's arithmetic runs, and are in the cache
    when its turn comes). Returns the first row that is not finite, or -1."""
    n = v.shape[0]
    b = v.view(np.int64)
    los = np.empty(3, dtype=np.int64)
    his = np.empty(3, dtype=np.int64)
    g = np.zeros(0, dtype=np.int64)
    none = np.zeros(0)
    hnext = np.int64(0)
    for j in range(min(n, L1_BLOCK)):
        hnext = max(hnext, b[np.uint64(j)] & M63)
    for blo in range(0, n, L1_BLOCK):
        bhi = min(n, blo + L1_BLOCK)
        hi = hnext  # this block's largest magnitude (bits)
        nlo = bhi  # the next block, scanned meanwhile
        nhi = min(n, nlo + L1_BLOCK)
        e = hi >> 52
        if e == 2047:
            return blo + first_non_finite(b[blo:bhi])
        hnext = np.int64(0)
        s0 = np.int64(0)
        s1 = np.int64(0)
        res = np.int64(0)
        e = max(e, np.int64(1))  # subnormals: the grid of binade 1
        u0 = max(e - 1073, np.int64(-1074))  # every |v| < 2**(e - 1022) = 2**(u0 + 51)
        u1 = max(u0 - 51, np.int64(-1074))
        b0 = ((u0 + 52 + 1023) << 52) | (np.int64(1) << 51)  # the bits of 1.5 * 2**(u + 52)
        b1 = ((u1 + 52 + 1023) << 52) | (np.int64(1) << 51)
        m = 0
        if hi != 0 and u0 <= 970:  # 1.5 * 2**(u0 + 52) is finite
            c0 = i2f(b0)
            c1 = i2f(b1)
            m = min(bhi - blo, nhi - nlo)
            d = nlo - blo
            for j in range(blo, blo + m):
                hnext = max(hnext, b[np.uint64(j + d)] & M63)
                r = v[np.uint64(j)]
                y = r + c0
                s0 += f2i(y)
                r = r - (y - c0)
                y = r + c1
                s1 += f2i(y)
                r = r - (y - c1)
                res |= f2i(r)
            for j in range(blo + m, bhi):  # the last block but one, longer than the last
                r = v[np.uint64(j)]
                y = r + c0
                s0 += f2i(y)
                r = r - (y - c0)
                y = r + c1
                s1 += f2i(y)
                r = r - (y - c1)
                res |= f2i(r)
        for j in range(nlo + m, nhi):
            hnext = max(hnext, b[np.uint64(j)] & M63)
        if hi == 0:
            continue
        if u0 > 970 or res & M63:  # values near the float maximum, or bits below the second grid: the block on its own range
            lo, top = scan(b[blo:bhi])
            los[0] = lo
            his[0] = top
            a, ea = grid_sum(v[blo:bhi], none, none, 1, g, False, 1, los, his)
            add_window(acc, qlo, a, ea)
            continue
        cnt = np.int64(bhi - blo)  # each integer is bits(y) - bits(c): the block's sums, exact (|sum| <= 2**11 * 2**51 = 2**62)
        s0 -= cnt * b0
        s1 -= cnt * b1
        if s0 != 0:
            add_int(acc, 0, s0, u0 + OFFSET, qlo)
        if s1 != 0:
            add_int(acc, 0, s1, u1 + OFFSET, qlo)
    return -1


def mean_sums(v, w, has_w):
    """The exact sums of a mean-of-measure batch in one compiled call, its values' checks
    included (no separate validation pass): ``(acc_t, exp_t, acc_w, exp_w, status, position)``,
    the raw limbs (as :func:`plan_sum`) of ``sum v`` (``sum v w`` with weights, factors in that
    order) and of ``sum w`` (empty without weights). ``status`` -1: done; 0: a non-finite value;
    1: a non-finite weight; 2: a negative weight (``position``: the first such row; nothing is
    summed then). Every block's rows are read from memory once, into windows that hold any sum
    of one or two factors: unweighted, :func:`sum_blocks` (L1-sized blocks); weighted, blocks of
    :data:`MEAN_BLOCK` rows are scanned (:func:`scan`, :func:`scan_weights`) and summed
    (:func:`grid_sum`) in turn, each on its own grids."""
    n = v.shape[0]
    nf = 2 if has_w else 1
    qlo = (OFFSET - 1074 * nf - 64) >> 5
    acc = np.zeros((1, ((OFFSET + 1024 * nf) >> 5) + 4 - qlo), dtype=np.int64)
    qlo_w = (OFFSET - 1074 - 64) >> 5
    accw = np.zeros((1, ((OFFSET + 1024) >> 5) + 4 - qlo_w if has_w else 0), dtype=np.int64)
    empty = np.zeros((1, 0), dtype=np.int64)
    if not has_w:
        bad = sum_blocks(v, acc, qlo)
        if bad >= 0:
            return empty, 0, empty, 0, 0, bad
        return acc, qlo - OFFSET // 32, accw, 0, -1, -1
    g = np.zeros(0, dtype=np.int64)
    none = np.zeros(0)
    los = np.empty(3, dtype=np.int64)
    his = np.empty(3, dtype=np.int64)
    for blo in range(0, n, MEAN_BLOCK):
        bhi = min(n, blo + MEAN_BLOCK)
        vb = v[blo:bhi]
        bv = vb.view(np.int64)
        lv, hv = scan(bv)
        if hv == 2047:
            return empty, 0, empty, 0, 0, blo + first_non_finite(bv)
        los[0], his[0] = lv, hv
        wb = w[blo:bhi]
        bw = wb.view(np.int64)
        lw, hw, neg = scan_weights(bw)
        if hw == 2047:
            return empty, 0, empty, 0, 1, blo + first_non_finite(bw)
        if neg:
            return empty, 0, empty, 0, 2, blo + first_negative(wb)
        los[1], his[1] = lw, hw
        a, e = grid_sum(vb, wb, none, 2, g, False, 1, los, his)
        add_window(acc, qlo, a, e)
        los[0], his[0] = lw, hw
        a, e = grid_sum(wb, none, none, 1, g, False, 1, los, his)
        add_window(accw, qlo_w, a, e)
    return acc, qlo - OFFSET // 32, accw, qlo_w - OFFSET // 32, -1, -1


def mean_fold(v, w, has_w, T, eT, Wr, eW):
    """:func:`mean_sums` of a batch added to running sums, in one compiled call (what
    ``MetricCollection.update`` folds a plain measure column with): ``T`` (at ``eT``) are the raw
    limbs (|entries| < 2**62) of the running ``sum v [w]`` and ``Wr`` (at ``eW``, weighted only)
    of the running ``sum w``; returns ``(T', eT', W', eW', status, position)``, the new running
    sums in canonical form (:func:`add_canonical`; ``W'`` empty unweighted), or, when ``status``
    >= 0 (:func:`mean_sums`' codes), nothing added."""
    acc, e, accw, ew, status, pos = mean_sums(v, w, has_w)
    if status >= 0:
        return acc, e, accw, ew, status, pos
    Tn, eTn = add_canonical(T, eT, acc, e)
    if has_w:
        Wn, eWn = add_canonical(Wr, eW, accw, ew)
        return Tn, eTn, Wn, eWn, status, pos
    return Tn, eTn, accw, eTn, status, pos


def _score_rows(y, sb, wb, has_w, lo, hi):
    """The checks of :func:`score_sums` over rows ``lo .. hi`` in one branch-free pass (LLVM
    vectorises it): ``(orv, ex, whi, wlo, sg)``, the OR of the labels, the largest exponent
    field of the scores' bits, and :func:`scan_weights`' three reductions of the weights' bits."""
    orv = np.int64(0)
    ex = np.int64(0)
    whi = np.int64(0)
    wlo = M63
    sg = MIN64
    EXP = np.int64(0x7FF0000000000000)
    for j in range(lo, hi):
        i = np.uint64(j)
        orv |= y[i]
        ex = max(ex, sb[i] & EXP)
        if has_w:
            b = wb[i]
            a = b & M63
            whi = max(whi, a)
            wlo = min(wlo, (a - 1) & M63)
            sg = max(sg, b ^ MIN64)
    return orv, ex, whi, wlo, sg


def score_sums(y, s, w, has_w):
    """The checks of a batch of binary labels, scores and weights (a ranking metric's batch: no
    separate validation pass) and the weights' exact sum, in one compiled call: ``(acc_w,
    exp_w, status)``, the raw limbs (as :func:`plan_sum`) of ``sum w`` (empty without weights);
    ``status`` -1: every label is 0 or 1, every score finite, every weight finite and >= 0;
    else 0 (nothing summed: the caller's reference path names the value). Blocks of
    :data:`MEAN_BLOCK` rows are checked and their weights summed (:func:`grid_sum`) in turn,
    while they are in the CPU cache."""
    n = y.shape[0]
    sb = s.view(np.int64)
    wb = w.view(np.int64)
    qlo_w = (OFFSET - 1074 - 64) >> 5
    accw = np.zeros((1, ((OFFSET + 1024) >> 5) + 4 - qlo_w if has_w else 0), dtype=np.int64)
    empty = np.zeros((1, 0), dtype=np.int64)
    g = np.zeros(0, dtype=np.int64)
    none = np.zeros(0)
    los = np.empty(3, dtype=np.int64)
    his = np.empty(3, dtype=np.int64)
    EXP = np.int64(0x7FF0000000000000)
    for blo in range(0, n, MEAN_BLOCK):
        bhi = min(n, blo + MEAN_BLOCK)
        orv, ex, whi, wlo, sg = _score_rows(y, sb, wb, has_w, blo, bhi)
        if (orv & ~np.int64(1)) != 0 or ex == EXP:
            return empty, 0, 0
        if not has_w:
            continue
        lw, hw = _binades(wlo, whi)
        if hw == 2047 or sg > 0:
            return empty, 0, 0
        los[0], his[0] = lw, hw
        a, e = grid_sum(w[blo:bhi], none, none, 1, g, False, 1, los, his)
        add_window(accw, qlo_w, a, e)
    return accw, (qlo_w - OFFSET // 32) if has_w else 0, -1


def grid_sum(f0, f1, f2, nf, g, has_g, size, los, his):
    """:func:`plan_sum` after the checks, from every factor's :func:`scan` (``los[k]``,
    ``his[k]``, all finite): ``(acc, exp)``, the float-grid kernel (:func:`fused_grid`) when the
    products' range allows it, else the limb kernel (:func:`accumulate`)."""
    emin = np.int64(0)  # lowest bit and highest binade of every product: 2**emin <= bit, |product| < 2**emax
    emax = np.int64(0)
    moderate = True
    zero = False
    low = np.int64(0)  # the sum of the factors' smallest binades
    for k in range(nf):
        lo = los[k]
        hi = his[k]
        if lo == 2047:  # every value zero: so is every product
            zero = True
        hi = max(hi, np.int64(1))  # subnormals: the grid of binade 1
        emin += lo - 1075
        emax += hi - 1022
        low += lo - 1023
        moderate = moderate and lo - 1023 >= -300 and hi - 1023 < 300
    if zero:
        return np.zeros((size, 0), dtype=np.int64), 0
    # the integer grids, per tier of terms (tier t: |term| <= 2**(emax - 53 t), lowest bit at least
    # 2**bottom_t): units 2**u, u = emax - 53 t - D, then D bits lower each, down to bottom_t (at
    # least 2**-1074); each term's integer on a grid is at most 2**D, the terms of a tier (at most
    # 2) at most 2**(D + 1) <= 2**52 (ungrouped: carried every block of 1024 rows) or 2**46
    # (grouped: carried every 2**16 rows), so no int64 partial sum passes 2**62
    T = nf
    D = 51 if not has_g else 45
    every = BLOCK if not has_g else 1 << 16
    # tier 0 (the rounded product, normal in the moderate range) is at least 2**sum(E) (E the
    # factors' smallest binades), so its lowest bit is at least 2**(sum(E) - 52)
    bottom0 = emin if nf == 1 else max(emin, low - 52)
    u0 = emax - D
    K = 1
    KA = 1  # the grids tiers 0 and 2 need (three factors: tier 1, whose range is the widest, may need one more)
    for t in range(T):
        top = emax - 53 * t - D
        bottom = bottom0 if t == 0 else emin
        Kt = -(-(top - bottom) // D) + 1
        K = max(K, Kt)
        if t != 1:
            KA = max(KA, Kt)
    if (nf == 1 or moderate) and K <= GRIDS and u0 <= 970:
        units = np.empty((T, K), dtype=np.int64)
        Cb = np.empty((T, K), dtype=np.int64)
        for t in range(T):
            for k in range(K):
                u = max(emax - 53 * t - D * (k + 1), -1074)
                units[t, k] = u
                Cb[t, k] = ((u + 52 + 1023) << 52) | (np.int64(1) << 51)  # the bits of 1.5 * 2**(u + 52)
        qmin = (units.min() + OFFSET) >> 5
        qmax = (u0 + OFFSET) >> 5
        acc = np.zeros((size, qmax - qmin + 3), dtype=np.int64)
        fused_grid(f0, f1, f2, nf, g, has_g, Cb.view(np.float64), Cb, units, acc, qmin, every, KA if nf == 3 else 0)
        return acc, qmin - OFFSET // 32
    qmin = (emin + OFFSET) >> 5
    qmax = (emax + OFFSET) >> 5
    acc = np.zeros((size, qmax - qmin + 3), dtype=np.int64)
    accumulate(f0.view(np.int64), f1.view(np.int64), f2.view(np.int64), nf, g, has_g, acc, qmin)
    return acc, qmin - OFFSET // 32


#: float64 machine epsilon: the floor of ``|y|`` in the percentage error (scikit-learn's)
EPS64 = 2.220446049250313e-16


def _binades(lo, hi):
    """:func:`scan`'s result from its two reductions."""
    if lo == M63:
        return np.int64(2047), hi >> 52
    return max((lo + 1) >> 52, np.int64(1)), hi >> 52


#: rows per block of :func:`regression_sums`: a block's targets, predictions, weights and its
#: ``|e|`` and ``ape`` (5 x 64 KiB) stay in the L2 cache while every sum reads them
REG_BLOCK = 8192


def _reg_rows(y, p, lo, hi, ae, ape):
    """The per-row pass of :func:`regression_sums` over rows ``lo .. hi``: ``ae[j] = |e|``,
    ``ape[j]`` (``j`` from 0) and the range scans (:func:`scan`'s two reductions) of y, p, |e|
    and ape, branch-free."""
    hy = hp = ha = hq = np.int64(0)
    ly = lp = la = lq = M63
    for j in range(hi - lo):
        i = np.uint64(lo + j)
        k = np.uint64(j)
        yv = y[i]
        a = abs(p[i] - yv)
        q = a / max(abs(yv), EPS64)
        ae[k] = a
        ape[k] = q
        by = f2i(yv) & M63
        bp = f2i(p[i]) & M63
        ba = f2i(a)
        bq = f2i(q)
        hy = max(hy, by)
        hp = max(hp, bp)
        ha = max(ha, ba)
        hq = max(hq, bq)
        ly = min(ly, (by - 1) & M63)
        lp = min(lp, (bp - 1) & M63)
        la = min(la, (ba - 1) & M63)
        lq = min(lq, (bq - 1) & M63)
    return hy, ly, hp, lp, ha, la, hq, lq


def _trim(acc, qlo):
    """The raw limbs of a window (``acc`` (1, W), limb 0 at ``qlo - OFFSET // 32``) cut to its
    nonzero limbs: ``(limbs (1, L), exp)`` (no limbs: a zero sum)."""
    W = acc.shape[1]
    a = 0
    while a < W and acc[0, a] == 0:
        a += 1
    if a == W:
        return np.zeros((1, 0), dtype=np.int64), np.int64(0)
    b = W
    while acc[0, b - 1] == 0:
        b -= 1
    out = np.empty((1, b - a), dtype=np.int64)
    for i in range(a, b):
        out[0, i - a] = acc[0, i]
    return out, np.int64(qlo - OFFSET // 32 + a)


def regression_sums(y, p, w, has_w, want_w, ae, ape):
    """Every exact sum of a single-output regression moments state of one batch in one compiled
    call: ``(accs, exps, max_abs_e, status)``. ``accs[k]``, ``exps[k]`` are the raw limbs of
    sum ``k`` (as :func:`plan_sum`) of, with weights, ``w``, ``y w``, ``p w``, ``y y w``,
    ``p p w``, ``y p w``, ``|e| w``, ``ape w`` and without, (slot 0 unused), ``y``, ``p``,
    ``y y``, ``p p``, ``y p``, ``|e|``, ``ape`` (``e = p - y`` and ``ape = |e| / max(|y|, eps)``
    rounded per row, as numpy computes them); ``max_abs_e`` the largest ``|e|`` over rows of
    positive weight (0.0: none). The rows go in blocks of :data:`REG_BLOCK` (read from memory
    once, then summed from the cache): per block one pass computes ``|e|``, ``ape`` and the range
    scans, then every sum of the block runs on the block's own grids (:func:`grid_sum`) into a
    window that holds any sum of its factors. ``status`` 1: a value, ``|e|``, ``ape`` or a
    weight is not finite; 2: a weight is negative (nothing summed: the caller's reference path
    raises its message; the weights' sign is one more branch-free reduction of their range
    scan). ``want_w``: sum ``w`` (else slot 0 is left empty: the caller has it). ``ae``,
    ``ape``: scratch arrays of at least ``min(n, REG_BLOCK)`` rows (the caller's, reused)."""
    n = y.shape[0]
    empty = np.zeros((1, 0), dtype=np.int64)
    accs = [empty] * 8
    exps = np.zeros(8, dtype=np.int64)
    g = np.zeros(0, dtype=np.int64)
    none = np.zeros(0)
    # windows holding any sum of 1, 2 or 3 factors (as mean_sums'), one per sum
    nw = 1 if has_w else 0
    qlo1 = (OFFSET - 1074 * (1 + nw) - 64) >> 5
    qlo2 = (OFFSET - 1074 * (2 + nw) - 64) >> 5
    qlo0 = (OFFSET - 1074 - 64) >> 5
    win1 = ((OFFSET + 1024 * (1 + nw)) >> 5) + 4 - qlo1
    win2 = ((OFFSET + 1024 * (2 + nw)) >> 5) + 4 - qlo2
    win0 = ((OFFSET + 1024) >> 5) + 4 - qlo0
    W = np.zeros((8, max(win1, win2, win0)), dtype=np.int64)
    qlos = np.zeros(8, dtype=np.int64)
    for k in range(8):
        qlos[k] = qlo0 if k == 0 else (qlo2 if 3 <= k <= 5 else qlo1)
    los = np.empty(5, dtype=np.int64)
    his = np.empty(5, dtype=np.int64)
    sl = np.zeros(3, dtype=np.int64)
    sh = np.zeros(3, dtype=np.int64)
    mb = np.int64(0)  # the bits of max |e| over rows of positive weight (|e| >= 0: its bits order as its values)
    for blo in range(0, n, REG_BLOCK):
        bhi = min(n, blo + REG_BLOCK)
        m = bhi - blo
        hy, ly, hp, lp, ha, la, hq, lq = _reg_rows(y, p, blo, bhi, ae, ape)
        los[0], his[0] = _binades(ly, hy)
        los[1], his[1] = _binades(lp, hp)
        los[2], his[2] = _binades(la, ha)
        los[3], his[3] = _binades(lq, hq)
        neg = False
        if has_w:
            los[4], his[4], neg = scan_weights(w[blo:bhi].view(np.int64))
        else:
            los[4], his[4] = np.int64(1023), np.int64(1023)
        status = 2 if neg else 0
        for k in range(5):
            if his[k] == 2047:
                status = 1
        if status:
            return accs[0], accs[1], accs[2], accs[3], accs[4], accs[5], accs[6], accs[7], exps, 0.0, status
        yb = y[blo:bhi]
        pb = p[blo:bhi]
        ab = ae[0:m]
        qb = ape[0:m]
        wb = w[blo:bhi] if has_w else none[0:0]
        if has_w:
            for j in range(m):
                b = f2i(ab[np.uint64(j)]) if wb[np.uint64(j)] > 0 else np.int64(0)
                mb = max(mb, b)
        else:
            mb = max(mb, ha)
        # (factors by the scans' slots: 0 y, 1 p, 2 |e|, 3 ape, 4 w); the same factor order as the
        # reference path's exact_sum_products calls (the sums are exact: the order changes no bit)
        for k in range(8):
            if k == 0 and not (has_w and want_w):
                continue
            if k == 0:
                nf, a0, a1, a2 = 1, 4, 0, 0
            elif k == 1:
                nf, a0, a1, a2 = 1, 0, 0, 0
            elif k == 2:
                nf, a0, a1, a2 = 1, 1, 0, 0
            elif k == 3:
                nf, a0, a1, a2 = 2, 0, 0, 0
            elif k == 4:
                nf, a0, a1, a2 = 2, 1, 1, 0
            elif k == 5:
                nf, a0, a1, a2 = 2, 0, 1, 0
            elif k == 6:
                nf, a0, a1, a2 = 1, 2, 0, 0
            else:
                nf, a0, a1, a2 = 1, 3, 0, 0
            if has_w and k > 0:  # the weight is the last factor
                if nf == 1:
                    a1 = 4
                else:
                    a2 = 4
                nf += 1
            sl[0], sh[0] = los[a0], his[a0]
            sl[1], sh[1] = los[a1], his[a1]
            sl[2], sh[2] = los[a2], his[a2]
            f0 = yb if a0 == 0 else (pb if a0 == 1 else (ab if a0 == 2 else (qb if a0 == 3 else wb)))
            f1 = none[0:0] if nf < 2 else (yb if a1 == 0 else (pb if a1 == 1 else wb))
            f2 = none[0:0] if nf < 3 else wb
            acc, e = grid_sum(f0, f1, f2, nf, g, False, 1, sl, sh)
            sh_ = e + OFFSET // 32 - qlos[k]
            for i in range(acc.shape[1]):
                W[k, sh_ + i] += acc[0, i]
    for k in range(8):
        if k == 0 and not (has_w and want_w):
            continue
        acc, e = _trim(W[k : k + 1], qlos[k])
        accs[k] = acc
        exps[k] = e
    return accs[0], accs[1], accs[2], accs[3], accs[4], accs[5], accs[6], accs[7], exps, i2f(mb), 0


# -- exact per-cell weight sums of the confusion folds (cells computed in the pass) ------------
#: rows per carry of the cell kernels: every int64 partial sum (at most 2**45 per row) stays below 2**61
CELL_ROWS = 1 << 16
#: grid spacing of the cell kernels (bits per grid integer)
CELL_D = 45


def cell_grids(lo, hi):
    """The integer grids of one factor's exact per-cell sums from its :func:`scan` (``lo``,
    ``hi``; some value nonzero): ``(K, units, Cb, qmin, width)`` as :func:`grid_sum` plans them
    for a grouped sum, K = 0 when the values' range needs more than :data:`GRIDS` grids (the
    caller then runs :func:`grid_sum`)."""
    emin = lo - 1075
    emax = max(hi, np.int64(1)) - 1022
    u0 = emax - CELL_D
    K = max(np.int64(1), -(-(u0 - emin) // CELL_D) + 1)
    units = np.empty(GRIDS, dtype=np.int64)
    Cb = np.empty(GRIDS, dtype=np.int64)
    for k in range(GRIDS):
        u = max(emax - CELL_D * (min(k, K - 1) + 1), np.int64(-1074))
        units[k] = u
        Cb[k] = ((u + 52 + 1023) << 52) | (np.int64(1) << 51)  # the bits of 1.5 * 2**(u + 52)
    if K > GRIDS or u0 > 970:
        return np.int64(0), units, Cb, np.int64(0), np.int64(0)
    qmin = (units[K - 1] + OFFSET) >> 5
    qmax = (u0 + OFFSET) >> 5
    return K, units, Cb, qmin, qmax - qmin + 3


def and4(q, m):
    """The four int64 limbs of ``q`` masked with ``m``, as a tuple."""
    return q[0] & m, q[1] & m, q[2] & m, q[3] & m


def _binary_rows(y, s, thr, w, lo, hi, K, c, b):
    """Rows ``lo .. hi`` of :func:`binary_cell_sums`: the grid integers of every weight summed
    over all rows (``T``), positive rows (``P``), predicted-positive rows (``R``) and both
    (``B``), branch-free (masks), so LLVM vectorises it; ``orv`` the OR of the labels."""
    z = (np.int64(0), np.int64(0), np.int64(0), np.int64(0))
    T = P = R = B = z
    orv = np.int64(0)
    for j in range(lo, hi):
        i = np.uint64(j)
        q = chain(w[i], K, c, b)
        yi = y[i]
        orv |= yi
        pos = -yi
        pr = -np.int64(s[i] >= thr)
        T = add4(T, q)
        P = add4(P, and4(q, pos))
        R = add4(R, and4(q, pr))
        B = add4(B, and4(q, pos & pr))
    return T, P, R, B, orv


def binary_cell_sums(y, s, thr, w):
    """Exact sums of the weights ``w`` per cell ``2 * y + (s >= thr)`` (tn, fp, fn, tp) in one
    compiled pass without the cell array: ``(acc (4, L), exp, status)``, raw limbs as
    :func:`plan_sum`'s; status -1: done, 0: a weight is not finite, 2: the weights' range needs more grids
    than :data:`GRIDS`, 3: a label is not 0 or 1 (nothing summed: the caller's reference path
    runs, and raises its message). Each weight is cut onto
    the grids once and added, masked, into four sums (all, positive, predicted, both), from which
    the four cells are integer differences (exact: each is the cell's own int64 sum)."""
    n = w.shape[0]
    lo, hi = scan(w.view(np.int64))
    if hi == 2047:
        return np.zeros((4, 0), dtype=np.int64), 0, 0
    K, units, Cb, qmin, width = cell_grids(lo, hi)
    if K == 0:  # a range too wide for the grids: the caller's reference path (the general kernel)
        return np.zeros((4, 0), dtype=np.int64), 0, 2
    if lo == 2047:  # every weight zero: only the labels' check
        orv = np.int64(0)
        for j in range(n):
            orv |= y[np.uint64(j)]
        return np.zeros((4, 0), dtype=np.int64), 0, (3 if orv & ~np.int64(1) else -1)
    Cf = Cb.view(np.float64)
    c = (Cf[0], Cf[1], Cf[2], Cf[3])
    b = (Cb[0], Cb[1], Cb[2], Cb[3])
    acc = np.zeros((4, width), dtype=np.int64)
    for blo in range(0, n, CELL_ROWS):
        bhi = min(n, blo + CELL_ROWS)
        if K == 1:
            T, P, R, B, orv = _binary_rows(y, s, thr, w, blo, bhi, 1, c, b)
        elif K == 2:
            T, P, R, B, orv = _binary_rows(y, s, thr, w, blo, bhi, 2, c, b)
        elif K == 3:
            T, P, R, B, orv = _binary_rows(y, s, thr, w, blo, bhi, 3, c, b)
        else:
            T, P, R, B, orv = _binary_rows(y, s, thr, w, blo, bhi, 4, c, b)
        if orv & ~np.int64(1):
            return np.zeros((4, 0), dtype=np.int64), 0, 3
        for k in range(K):
            # tn, fp, fn, tp: each the int64 sum of its own rows (wrapping arithmetic, exact)
            cells = (T[k] - P[k] - R[k] + B[k], R[k] - B[k], P[k] - B[k], B[k])
            for r in range(4):
                if cells[r] != 0:
                    add_int(acc, r, cells[r], units[k] + OFFSET, qmin)
    return acc, qmin - OFFSET // 32, -1


#: rows per step of :func:`_pair_rows` (its scratch rows stay in the L1 cache)
PAIR_STEP = 512


def _pair_rows(a, b, k, w, lo, hi, K, c, cb, part, Q, G):
    """Rows ``lo .. hi`` of :func:`pair_cell_sums` in steps of :data:`PAIR_STEP`: the grid
    integers and cells of a step first (a branch-free, vectorised loop into the scratch ``Q``,
    ``G``), then the scattered adds into ``part[cell * 4 + grid]``; returns a nonzero value when
    a label is outside ``[0, k)``."""
    ku = np.uint64(k)
    bad = np.uint64(0)
    for slo in range(lo, hi, PAIR_STEP):
        m = min(hi - slo, PAIR_STEP)
        for j in range(m):
            i = np.uint64(slo + j)
            q = chain(w[i], K, c, cb)
            ai = np.uint64(a[i])
            bi = np.uint64(b[i])
            bad |= np.uint64(ai >= ku) | np.uint64(bi >= ku)
            jj = np.uint64(j)
            Q[0, jj] = q[0]
            if K >= 2:
                Q[1, jj] = q[1]
            if K >= 3:
                Q[2, jj] = q[2]
            if K >= 4:
                Q[3, jj] = q[3]
            G[jj] = (ai * ku + bi) * np.uint64(4)
        if bad:
            return bad
        for j in range(m):
            jj = np.uint64(j)
            cell = G[jj]
            part[cell] += Q[0, jj]
            if K >= 2:
                part[cell + np.uint64(1)] += Q[1, jj]
            if K >= 3:
                part[cell + np.uint64(2)] += Q[2, jj]
            if K >= 4:
                part[cell + np.uint64(3)] += Q[3, jj]
    return bad


def pair_cell_sums(a, b, k, w):
    """Exact sums of the weights ``w`` per cell ``a * k + b`` (labels ``a``, ``b`` in ``[0, k)``)
    in one compiled pass without the cell array: ``(acc (k * k, L), exp, status)`` as
    :func:`binary_cell_sums` (status 3: a label outside ``[0, k)``)."""
    n = w.shape[0]
    size = k * k
    lo, hi = scan(w.view(np.int64))
    if hi == 2047:
        return np.zeros((size, 0), dtype=np.int64), 0, 0
    if lo == 2047:  # every weight zero: only the labels' check
        for j in range(n):
            i = np.uint64(j)
            if np.uint64(a[i]) >= np.uint64(k) or np.uint64(b[i]) >= np.uint64(k):
                return np.zeros((size, 0), dtype=np.int64), 0, 3
        return np.zeros((size, 0), dtype=np.int64), 0, -1
    K, units, Cb, qmin, width = cell_grids(lo, hi)
    if K == 0:  # a range too wide for the grids: the caller's reference path (the general kernel)
        return np.zeros((size, 0), dtype=np.int64), 0, 2
    Cf = Cb.view(np.float64)
    c = (Cf[0], Cf[1], Cf[2], Cf[3])
    cb = (Cb[0], Cb[1], Cb[2], Cb[3])
    acc = np.zeros((size, width), dtype=np.int64)
    part = np.zeros(size * 4, dtype=np.int64)
    Q = np.empty((4, PAIR_STEP), dtype=np.int64)
    G = np.empty(PAIR_STEP, dtype=np.uint64)
    for blo in range(0, n, CELL_ROWS):
        bhi = min(n, blo + CELL_ROWS)
        if K == 1:
            bad = _pair_rows(a, b, k, w, blo, bhi, 1, c, cb, part, Q, G)
        elif K == 2:
            bad = _pair_rows(a, b, k, w, blo, bhi, 2, c, cb, part, Q, G)
        elif K == 3:
            bad = _pair_rows(a, b, k, w, blo, bhi, 3, c, cb, part, Q, G)
        else:
            bad = _pair_rows(a, b, k, w, blo, bhi, 4, c, cb, part, Q, G)
        if bad:
            return np.zeros((size, 0), dtype=np.int64), 0, 3
        for r in range(size):
            for g in range(K):
                t = part[4 * r + g]
                if t != 0:
                    add_int(acc, r, t, units[g] + OFFSET, qmin)
                    part[4 * r + g] = 0
    return acc, qmin - OFFSET // 32, -1


def pair_counts(a, b, k):
    """Row counts per cell ``a * k + b`` (int64, ``k * k``) and a nonzero flag when a label is
    outside ``[0, k)`` (the counts are then incomplete)."""
    ku = np.uint64(k)
    out = np.zeros(k * k, dtype=np.int64)
    bad = np.uint64(0)
    for j in range(a.shape[0]):
        i = np.uint64(j)
        ai = np.uint64(a[i])
        bi = np.uint64(b[i])
        if ai >= ku or bi >= ku:
            bad = np.uint64(1)
            break
        out[ai * ku + bi] += 1
    return out, bad


def threshold_counts(y, s, t):
    """Unweighted binary counts at one threshold in one branch-free pass (LLVM vectorises it):
    ``(npos, npred, tp, bad)``, ``npos`` the rows with label 1, ``npred`` those with
    ``s >= t``, ``tp`` both; ``bad`` nonzero when a label is not 0 or 1 or a score is not finite
    (the counts are then meaningless: the caller's reference path names the value)."""
    orv = np.int64(0)
    ex = np.int64(0)
    npos = np.int64(0)
    npred = np.int64(0)
    tp = np.int64(0)
    sb = s.view(np.int64)
    EXP = np.int64(0x7FF0000000000000)
    for j in range(y.shape[0]):
        i = np.uint64(j)
        yi = y[i]
        orv |= yi
        ex = max(ex, sb[i] & EXP)
        p = np.int64(s[i] >= t)
        npos += yi
        npred += p
        tp += yi & p
    return npos, npred, tp, np.int64((orv & ~np.int64(1)) != 0) | np.int64(ex == EXP)


# -- log loss and Brier score: fdlibm's log, branch-free, fused with the exact sums ------------
LN2_HI = 6.93147180369123816490e-01  # 3fe62e42 fee00000 (fdlibm e_log.c, as portable_log)
LN2_LO = 1.90821492927058770002e-10  # 3dea39ef 35793c76
TWO54 = 1.80143985094819840000e16  # 43500000 00000000
LG1 = 6.666666666666735130e-01  # 3FE55555 55555593
LG2 = 3.999999999940941908e-01  # 3FD99999 9997FA04
LG3 = 2.857142874366239149e-01  # 3FD24924 94229359
LG4 = 2.222219843214978396e-01  # 3FCC71C5 1D8E78AF
LG5 = 1.818357216161805012e-01  # 3FC74664 96CB03DE
LG6 = 1.531383769920937332e-01  # 3FC39A09 D078C69F
LG7 = 1.479819860511658591e-01  # 3FC2F112 DF3E5244
LOW32 = np.int64(0xFFFFFFFF)


def fdlibm_log(x):
    """fdlibm's ``__ieee754_log`` (Java's ``StrictMath.log``) of a positive finite ``x``
    (subnormals included), the same IEEE operations in the same order as
    :func:`mergeable_metrics._util.portable_log.numpy_log`, but branch-free: every branch's value
    is computed and the result selected, so LLVM vectorises a loop of it (the division included;
    no ``fastmath``, no FMA contraction). Other inputs (0, negative, inf, nan) give an
    unspecified finite or non-finite value: the caller checks the domain."""
    b0 = f2i(x)
    sub = b0 < np.int64(0x0010000000000000)  # subnormal: scaled up by 2**54 first
    xs = x * TWO54
    v = xs if sub else x
    b = f2i(v)
    hx = b >> 32
    lx = b & LOW32
    k = ((hx >> 20) - 1023) - (np.int64(54) if sub else np.int64(0))
    hx &= 0x000FFFFF
    i = (hx + 0x95F64) & 0x100000
    xn = i2f(((hx | (i ^ 0x3FF00000)) << 32) | lx)  # x or x/2 normalised into [sqrt(2)/2, sqrt(2))
    k += i >> 20
    f = xn - 1.0
    dk = np.float64(k)
    k0 = k == 0
    # |f| < 2**-20
    rt = f * f * (0.5 - 0.33333333333333333 * f)
    vt_k0 = f - rt
    vt_k = dk * LN2_HI - ((rt - dk * LN2_LO) - f)
    vt = vt_k0 if k0 else vt_k
    vz = 0.0 if k0 else dk * LN2_HI + dk * LN2_LO  # f == 0
    v_tiny = vz if f == 0.0 else vt
    # the Remez branch
    s = f / (2.0 + f)
    z = s * s
    w = z * z
    t1 = w * (LG2 + w * (LG4 + w * LG6))
    t2 = z * (LG1 + w * (LG3 + w * (LG5 + w * LG7)))
    r = t2 + t1
    hfsq = 0.5 * f * f
    vf_k0 = f - (hfsq - s * (hfsq + r))
    vf_k = dk * LN2_HI - ((hfsq - (s * (hfsq + r) + dk * LN2_LO)) - f)
    vn_k0 = f - s * (f - r)
    vn_k = dk * LN2_HI - ((s * (f - r) - dk * LN2_LO) - f)
    far = ((hx - 0x6147A) | (0x6B851 - hx)) > 0
    v_far = vf_k0 if k0 else vf_k
    v_near = vn_k0 if k0 else vn_k
    v_main = v_far if far else v_near
    tiny = (0x000FFFFF & (2 + hx)) < 3
    return v_tiny if tiny else v_main


def log_rows(x, out):
    """``out[i] = fdlibm_log(x[i])``; returns False when some ``x[i]`` is not positive and finite
    (``out`` then unspecified)."""
    ok = np.int64(1)
    for j in range(x.shape[0]):
        i = np.uint64(j)
        v = x[i]
        b = f2i(v)
        ok &= np.int64(b > 0) & np.int64(b < np.int64(0x7FF0000000000000))
        out[i] = fdlibm_log(v)
    return ok != 0


# -- pow: fdlibm's e_pow.c as Java's StrictMath.pow runs it (FdLibm.Pow) -------------------------------------------
HIGH32 = np.int64(-4294967296)  # 0xFFFFFFFF00000000: a float's high word (fdlibm's __LO(x, 0))
P_INV_LN2 = float.fromhex("0x1.71547652b82fep0")  # 1/ln2
P_INV_LN2_H = float.fromhex("0x1.715476p0")  # 24 bits of 1/ln2
P_INV_LN2_L = float.fromhex("0x1.4ae0bf85ddf44p-26")  # its tail
P_CP = float.fromhex("0x1.ec709dc3a03fdp-1")  # 2/(3 ln2)
P_CP_H = float.fromhex("0x1.ec709ep-1")
P_CP_L = float.fromhex("-0x1.e2fe0145b01f5p-28")
P_DP_H1 = float.fromhex("0x1.2b8034p-1")  # log2(1.5), high part
P_DP_L1 = float.fromhex("0x1.cfdeb43cfd006p-27")  # its tail
P_L1 = float.fromhex("0x1.3333333333303p-1")
P_L2 = float.fromhex("0x1.b6db6db6fabffp-2")
P_L3 = float.fromhex("0x1.55555518f264dp-2")
P_L4 = float.fromhex("0x1.17460a91d4101p-2")
P_L5 = float.fromhex("0x1.d864a93c9db65p-3")
P_L6 = float.fromhex("0x1.a7e284a454eefp-3")
P_P1 = float.fromhex("0x1.555555555553ep-3")
P_P2 = float.fromhex("-0x1.6c16c16bebd93p-9")
P_P3 = float.fromhex("0x1.1566aaf25de2cp-14")
P_P4 = float.fromhex("-0x1.bbd41c5d26bf1p-20")
P_P5 = float.fromhex("0x1.6376972bea4d0p-25")
P_LG2 = float.fromhex("0x1.62e42fefa39efp-1")
P_LG2_H = float.fromhex("0x1.62e43p-1")
P_LG2_L = float.fromhex("-0x1.05c610ca86c39p-29")
P_OVT = 8.0085662595372944372e-17  # -(1024 - log2(ovfl + .5ulp))
P_HUGE_Y = float.fromhex("0x1.00000ffffffffp31")  # |y| beyond: "huge"
P_NEAR_ONE_LO = float.fromhex("0x1.fffff00000000p-1")
P_NEAR_ONE_HI = float.fromhex("0x1.00000ffffffffp0")
P_MAX = float.fromhex("0x1.fffffffffffffp1023")
P_INF = float("inf")
P_TWO_M512 = float.fromhex("0x1p-512")


def fdlibm_pow(x, y):
    """``x ** y`` as fdlibm's ``__ieee754_pow`` computes it in Java's ``StrictMath.pow``
    (``java.lang.FdLibm.Pow``: its special cases first, ``y`` of 2, 0.5, +-1 and +-inf, then
    ``log2(|x|)`` in two parts, ``y * log2|x|`` split exactly and ``2**(...)``), the same IEEE
    operations in the same order; every float64 ``x`` and ``y``. Error below 1 ulp (fdlibm's bound),
    not correctly rounded, but the same bits everywhere (no FMA: numba contracts none without
    ``fastmath``). Plain Python with numpy float64 arguments (IEEE division) computes the same bits
    (:func:`mergeable_metrics._util.portable_pow.numpy_pow` calls it so for the special values)."""
    if y == 0.0:
        return 1.0
    if x != x or y != y:
        return x + y
    y_abs = abs(y)
    x_abs = abs(x)
    if y == 2.0:
        return x * x
    if y == 0.5:
        if x >= -P_MAX:  # -inf: below
            v = x + 0.0  # -0.0 + 0.0 = +0.0
            return np.sqrt(v) if v >= 0.0 else np.nan
    elif y_abs == 1.0:
        return x if y == 1.0 else 1.0 / x
    elif y_abs == P_INF:
        if x_abs == 1.0:
            return np.nan  # y - y
        if x_abs > 1.0:
            return y if y >= 0 else 0.0
        return -y if y < 0 else 0.0
    hx = f2i(x) >> 32
    ix = hx & 0x7FFFFFFF
    y_is_int = 0  # x < 0: 0 y is not an integer, 1 an odd one, 2 an even one
    if hx < 0:
        if y_abs >= 9007199254740992.0:  # 2**53
            y_is_int = 2
        elif y_abs >= 1.0:
            ya = np.int64(y_abs)
            if np.float64(ya) == y_abs:
                y_is_int = 2 - np.int64(ya & 1)
    if x_abs == 0.0 or x_abs == P_INF or x_abs == 1.0:
        z = x_abs
        if y < 0.0:
            z = 1.0 / z
        if hx < 0:
            if ((ix - 0x3FF00000) | y_is_int) == 0:
                z = np.nan  # (-1)**non-int
            elif y_is_int == 1:
                z = -1.0 * z
        return z
    n = (hx >> 31) + 1
    if (n | y_is_int) == 0:
        return np.nan  # (x < 0)**non-int
    s = 1.0
    if (n | (y_is_int - 1)) == 0:
        s = -1.0  # (-x)**odd
    if y_abs > P_HUGE_Y:
        if x_abs < P_NEAR_ONE_LO:
            return s * P_INF if y < 0.0 else s * 0.0
        if x_abs > P_NEAR_ONE_HI:
            return s * P_INF if y > 0.0 else s * 0.0
        t = x_abs - 1.0  # |1 - x| <= 2**-20: log(x) by x - x**2/2 + x**3/3 - x**4/4
        w = (t * t) * (0.5 - t * (0.3333333333333333333333 - t * 0.25))
        u = P_INV_LN2_H * t
        v = t * P_INV_LN2_L - w * P_INV_LN2
        t1 = i2f(f2i(u + v) & HIGH32)
        t2 = v - (t1 - u)
    else:
        n = 0
        if ix < 0x00100000:  # subnormal
            x_abs *= 9007199254740992.0
            n -= 53
            ix = f2i(x_abs) >> 32
        n += (ix >> 20) - 0x3FF
        j = ix & 0x000FFFFF
        ix = j | 0x3FF00000
        k = 0
        if j <= 0x3988E:
            k = 0  # |x| < sqrt(3/2)
        elif j < 0xBB67A:
            k = 1  # |x| < sqrt(3)
        else:
            k = 0
            n += 1
            ix -= 0x00100000
        x_abs = i2f((ix << 32) | (f2i(x_abs) & LOW32))
        bp = 1.5 if k == 1 else 1.0
        dp_h = P_DP_H1 if k == 1 else 0.0
        dp_l = P_DP_L1 if k == 1 else 0.0
        u = x_abs - bp
        v = 1.0 / (x_abs + bp)
        ss = u * v
        s_h = i2f(f2i(ss) & HIGH32)
        t_h = i2f((((ix >> 1) | 0x20000000) + 0x00080000 + (k << 18)) << 32)
        t_l = x_abs - (t_h - bp)
        s_l = v * ((u - s_h * t_h) - s_h * t_l)
        s2 = ss * ss
        r = s2 * s2 * (P_L1 + s2 * (P_L2 + s2 * (P_L3 + s2 * (P_L4 + s2 * (P_L5 + s2 * P_L6)))))
        r += s_l * (s_h + ss)
        s2 = s_h * s_h
        t_h = i2f(f2i(3.0 + s2 + r) & HIGH32)
        t_l = r - ((t_h - 3.0) - s2)
        u = s_h * t_h
        v = s_l * t_h + t_l * ss
        p_h = i2f(f2i(u + v) & HIGH32)
        p_l = v - (p_h - u)
        z_h = P_CP_H * p_h
        z_l = P_CP_L * p_h + p_l * P_CP + dp_l
        t = np.float64(n)
        t1 = i2f(f2i(((z_h + z_l) + dp_h) + t) & HIGH32)
        t2 = z_l - (((t1 - t) - dp_h) - z_h)
    y1 = i2f(f2i(y) & HIGH32)
    p_l = (y - y1) * t1 + y * t2
    p_h = y1 * t1
    z = p_l + p_h
    bz = f2i(z)
    j = bz >> 32
    i = bz & LOW32
    if j >= 0x40900000:  # z >= 1024
        if ((j - 0x40900000) | i) != 0:
            return s * P_INF
        if p_l + P_OVT > z - p_h:
            return s * P_INF
    elif (j & 0x7FFFFFFF) >= 0x4090CC00:  # z <= -1075
        if ((j + 0x3F6F3400) | i) != 0:  # j - 0xc090cc00 (an int32)
            return s * 0.0
        if p_l <= z - p_h:
            return s * 0.0
    i = j & 0x7FFFFFFF
    k = (i >> 20) - 0x3FF
    n = 0
    if i > 0x3FE00000:  # |z| > 0.5: n = [z + 0.5]
        n = j + (0x00100000 >> (k + 1))
        k = ((n & 0x7FFFFFFF) >> 20) - 0x3FF
        t = i2f((n & ~(0x000FFFFF >> k)) << 32)
        n = ((n & 0x000FFFFF) | 0x00100000) >> (20 - k)
        if j < 0:
            n = -n
        p_h -= t
    t = i2f(f2i(p_l + p_h) & HIGH32)
    u = t * P_LG2_H
    v = (p_l - (t - p_h)) * P_LG2 + t * P_LG2_L
    z = u + v
    w = v - (z - u)
    t = z * z
    t1 = z - t * (P_P1 + t * (P_P2 + t * (P_P3 + t * (P_P4 + t * P_P5))))
    r = (z * t1) / (t1 - 2.0) - (w + z * w)
    z = 1.0 - (r - z)
    bz = f2i(z)
    j = (bz >> 32) + (n << 20)
    if (j >> 20) <= 0:  # a subnormal result: Java's Math.scalb(z, n), one rounding
        return s * ((z * i2f((n + 512 + 1023) << 52)) * P_TWO_M512)
    return s * i2f((j << 32) | (bz & LOW32))


def pow_main(x, y):
    """:func:`fdlibm_pow`'s general path, branch-free (every branch computed, the result selected, so LLVM
    vectorises a loop of it): ``x ** y`` for a positive finite ``x != 1`` (subnormals included) and a finite
    ``y`` not 0, 2, 0.5 or +-1 with ``|y| <= 2**31`` (:func:`pow_general`); the same IEEE operations in the
    same order. Other inputs give an unspecified value: :func:`pow_rows` computes them with :func:`fdlibm_pow`."""
    b0 = f2i(x)
    sub = b0 < np.int64(0x0010000000000000)  # subnormal: scaled up by 2**53 first
    xs = x * 9007199254740992.0
    xa = xs if sub else x
    ix = f2i(xa) >> 32
    n = ((ix >> 20) - 0x3FF) - (np.int64(53) if sub else np.int64(0))
    j = ix & 0x000FFFFF
    one = (j > 0x3988E) & (j < 0xBB67A)  # k = 1: sqrt(3/2) <= |x| < sqrt(3)
    top = j >= 0xBB67A
    n = n + (np.int64(1) if top else np.int64(0))
    ix = (j | 0x3FF00000) - (np.int64(0x00100000) if top else np.int64(0))
    k = np.int64(1) if one else np.int64(0)
    xa = i2f((ix << 32) | (f2i(xa) & LOW32))
    bp = 1.5 if one else 1.0
    dp_h = P_DP_H1 if one else 0.0
    dp_l = P_DP_L1 if one else 0.0
    u = xa - bp
    v = 1.0 / (xa + bp)
    ss = u * v
    s_h = i2f(f2i(ss) & HIGH32)
    t_h = i2f((((ix >> 1) | 0x20000000) + 0x00080000 + (k << 18)) << 32)
    t_l = xa - (t_h - bp)
    s_l = v * ((u - s_h * t_h) - s_h * t_l)
    s2 = ss * ss
    r = s2 * s2 * (P_L1 + s2 * (P_L2 + s2 * (P_L3 + s2 * (P_L4 + s2 * (P_L5 + s2 * P_L6)))))
    r += s_l * (s_h + ss)
    s2 = s_h * s_h
    t_h = i2f(f2i(3.0 + s2 + r) & HIGH32)
    t_l = r - ((t_h - 3.0) - s2)
    u = s_h * t_h
    v = s_l * t_h + t_l * ss
    p_h = i2f(f2i(u + v) & HIGH32)
    p_l = v - (p_h - u)
    z_h = P_CP_H * p_h
    z_l = P_CP_L * p_h + p_l * P_CP + dp_l
    t = np.float64(n)
    t1 = i2f(f2i(((z_h + z_l) + dp_h) + t) & HIGH32)
    t2 = z_l - (((t1 - t) - dp_h) - z_h)
    y1 = i2f(f2i(y) & HIGH32)
    p_l = (y - y1) * t1 + y * t2
    p_h = y1 * t1
    z = p_l + p_h
    bz = f2i(z)
    j = bz >> 32
    i = bz & LOW32
    over = (j >= 0x40900000) & ((((j - 0x40900000) | i) != 0) | (p_l + P_OVT > z - p_h))
    under = (j < 0x40900000) & ((j & 0x7FFFFFFF) >= 0x4090CC00) & ((((j + 0x3F6F3400) | i) != 0) | (p_l <= z - p_h))
    i = j & 0x7FFFFFFF
    big = i > 0x3FE00000  # |z| > 0.5: n = [z + 0.5]
    kk = min(max((i >> 20) - 0x3FF + 1, np.int64(0)), np.int64(31)) if big else np.int64(0)
    nn = j + (np.int64(0x00100000) >> kk)
    k2 = min(max(((nn & 0x7FFFFFFF) >> 20) - 0x3FF, np.int64(0)), np.int64(20)) if big else np.int64(0)
    t = i2f((nn & ~(np.int64(0x000FFFFF) >> k2)) << 32)
    m = ((nn & 0x000FFFFF) | 0x00100000) >> (20 - k2)
    m = -m if j < 0 else m
    n = m if big else np.int64(0)
    p_h = p_h - t if big else p_h
    t = i2f(f2i(p_l + p_h) & HIGH32)
    u = t * P_LG2_H
    v = (p_l - (t - p_h)) * P_LG2 + t * P_LG2_L
    z = u + v
    w = v - (z - u)
    t = z * z
    t1 = z - t * (P_P1 + t * (P_P2 + t * (P_P3 + t * (P_P4 + t * P_P5))))
    r = (z * t1) / (t1 - 2.0) - (w + z * w)
    z = 1.0 - (r - z)
    bz = f2i(z)
    jj = (bz >> 32) + (n << 20)
    tiny = (jj >> 20) <= 0  # a subnormal result: Java's Math.scalb(z, n), one rounding
    e = min(max(n + 512 + 1023, np.int64(1)), np.int64(2046))
    v_tiny = (z * i2f(e << 52)) * P_TWO_M512
    v_norm = i2f((jj << 32) | (bz & LOW32))
    res = v_tiny if tiny else v_norm
    res = P_INF if over else res
    return 0.0 if under else res


def pow_general(x, y):
    """Whether :func:`pow_main` computes ``x ** y`` (fdlibm's general path, no special value)."""
    b = f2i(x)
    ya = abs(y)
    return (b > 0) & (b < np.int64(0x7FF0000000000000)) & (x != 1.0) & (ya <= P_HUGE_Y) & (y != 0.0) & (y != 2.0) & (y != 0.5) & (ya != 1.0)


def pow_rows(x, y, out):
    """``out[i] = fdlibm_pow(x[i], y[i])`` (``y`` of length 1: the same exponent for every row): a vectorised pass
    of :func:`pow_main`, then :func:`fdlibm_pow` for the rows it does not cover (``x`` not positive and finite, or
    1; special exponents)."""
    one = y.shape[0] == 1
    n = x.shape[0]
    if one:
        yv = y[0]
        if not pow_general(2.0, yv):  # 0, 2, 0.5, +-1, huge or not finite: fdlibm's quick returns
            for j in range(n):
                i = np.uint64(j)
                out[i] = fdlibm_pow(x[i], yv)
            return
        for j in range(n):
            i = np.uint64(j)
            out[i] = pow_main(x[i], yv)
        for j in range(n):
            i = np.uint64(j)
            if not pow_general(x[i], yv):
                out[i] = fdlibm_pow(x[i], yv)
        return
    for j in range(n):
        i = np.uint64(j)
        out[i] = pow_main(x[i], y[i])
    for j in range(n):
        i = np.uint64(j)
        if not pow_general(x[i], y[i]):
            out[i] = fdlibm_pow(x[i], y[i])


def _prob_rows(y, p, w, has_w, lo, hi, ll, bq, wy):
    """The per-row pass of :func:`probability_sums`: ``ll = -log(clip(q, lo, hi))`` (``q`` the
    true class's probability, ``p`` or ``1 - p``), ``bq = (p - y)**2``, ``wy = w * y``, and the
    range scans (:func:`scan`'s reductions) of p, ll, bq and wy, and the OR of the labels;
    branch-free (a finite ``p`` gives a clipped ``q`` in ``[lo, hi]``, positive and finite: the
    caller checks ``p``'s scan and the labels' OR)."""
    hp = hl = hb = hw = np.int64(0)
    lp = ll_ = lb = lw = M63
    orv = np.int64(0)
    for j in range(p.shape[0]):
        i = np.uint64(j)
        yi = y[i]
        orv |= yi
        pv = p[i]
        q = pv if yi == 1 else 1.0 - pv
        c = min(max(q, lo), hi)  # np.clip of a finite q
        lv = -fdlibm_log(c)
        yf = np.float64(yi)
        d = pv - yf
        sq = d * d
        ll[i] = lv
        bq[i] = sq
        bp = f2i(pv) & M63
        bl = f2i(lv) & M63
        bs = f2i(sq) & M63
        hp = max(hp, bp)
        hl = max(hl, bl)
        hb = max(hb, bs)
        lp = min(lp, (bp - 1) & M63)
        ll_ = min(ll_, (bl - 1) & M63)
        lb = min(lb, (bs - 1) & M63)
        if has_w:
            a = w[i] * yf
            wy[i] = a
            ba = f2i(a) & M63
            hw = max(hw, ba)
            lw = min(lw, (ba - 1) & M63)
    return orv, hp, lp, hl, ll_, hb, lb, hw, lw


def probability_sums(y, p, w, has_w, want_w, lo, hi, ll, bq, wy):
    """Every exact sum of a binary probability-sums state of one batch (one ``eps``: the clip
    bounds ``lo = eps``, ``hi = 1 - eps``) in one compiled call: ``(accs, exps, npos, status)``,
    raw limbs of ``sum_label`` (weighted: ``w y``; unweighted: slot unused, ``npos`` the count),
    ``sum_score`` (``p`` or ``p w``), ``brier`` (``(p - y)**2``, times ``w``), ``log_loss``
    (``-log(clip(q))``, times ``w``) and the weight (``w``, when ``want_w``). ``status`` 1: some
    value is out of the kernel's domain (a label not 0 or 1, a non-finite score, weight or term):
    nothing summed, the caller's reference path runs. ``ll``, ``bq``, ``wy``: (n,) scratch."""
    n = p.shape[0]
    if has_w:  # a constant per call of the row pass: LLVM specialises each
        orv, hp, lp, hl, l_l, hb, lb, hw, lw = _prob_rows(y, p, w, True, lo, hi, ll, bq, wy)
    else:
        orv, hp, lp, hl, l_l, hb, lb, hw, lw = _prob_rows(y, p, w, False, lo, hi, ll, bq, wy)
    los = np.empty(5, dtype=np.int64)
    his = np.empty(5, dtype=np.int64)
    los[0], his[0] = _binades(lp, hp)
    los[1], his[1] = _binades(l_l, hl)
    los[2], his[2] = _binades(lb, hb)
    los[3], his[3] = _binades(lw, hw) if has_w else (np.int64(1023), np.int64(1023))
    los[4], his[4] = scan(w.view(np.int64)) if has_w else (np.int64(1023), np.int64(1023))
    empty = np.zeros((1, 0), dtype=np.int64)
    accs = [empty] * 5
    exps = np.zeros(5, dtype=np.int64)
    npos = np.int64(0)
    status = 1 if orv & ~np.int64(1) else 0  # a label not 0 or 1
    for k in range(5):
        if his[k] == 2047:
            status = 1
    if status:
        return accs[0], accs[1], accs[2], accs[3], accs[4], exps, npos, status
    if not has_w:
        for j in range(n):
            npos += y[np.uint64(j)]
    g = np.zeros(0, dtype=np.int64)
    none = np.zeros(0)
    sl = np.zeros(3, dtype=np.int64)
    sh = np.zeros(3, dtype=np.int64)
    for k in range(5):
        # slots: 0 sum_label (w y), 1 sum_score (p [w]), 2 brier (bq [w]), 3 log_loss (ll [w]), 4 weight (w)
        if (k == 0 and not has_w) or (k == 4 and not (has_w and want_w)):
            continue
        if k == 0:
            f0, a0 = wy, 3
        elif k == 1:
            f0, a0 = p, 0
        elif k == 2:
            f0, a0 = bq, 2
        elif k == 3:
            f0, a0 = ll, 1
        else:
            f0, a0 = w, 4
        nf = 2 if (has_w and 1 <= k <= 3) else 1
        sl[0], sh[0] = los[a0], his[a0]
        sl[1], sh[1] = los[4], his[4]
        acc, e = grid_sum(f0, w if nf == 2 else none, none, nf, g, False, 1, sl, sh)
        accs[k] = acc
        exps[k] = e
    return accs[0], accs[1], accs[2], accs[3], accs[4], exps, npos, status


def stack_raws(a1, a2, a3, a4, a5, a6, a7, exps):
    """The raw limbs ``a1 .. a7`` ((1, L_k) int64 at ``exps[k]``; some may have no limbs) as the rows of
    one raw (7, L) matrix at a common exponent: ``(D, exp)``."""
    lo = np.int64(1) << 40
    hi = -lo
    for k in range(1, 8):
        a = a1 if k == 1 else (a2 if k == 2 else (a3 if k == 3 else (a4 if k == 4 else (a5 if k == 5 else (a6 if k == 6 else a7)))))
        if a.shape[1]:
            lo = min(lo, exps[k])
            hi = max(hi, exps[k] + a.shape[1])
    if hi < lo:
        return np.zeros((7, 0), dtype=np.int64), np.int64(0)
    D = np.zeros((7, hi - lo), dtype=np.int64)
    for k in range(1, 8):
        a = a1 if k == 1 else (a2 if k == 2 else (a3 if k == 3 else (a4 if k == 4 else (a5 if k == 5 else (a6 if k == 6 else a7)))))
        off = exps[k] - lo
        for i in range(a.shape[1]):
            D[k - 1, off + i] = a[0, i]
    return D, lo


def regression_stack_sums(y, p, w, has_w, want_w, ae, ape):
    """:func:`regression_sums` with the seven sums (``sum_y`` .. ``sum_ape``) stacked
    (:func:`stack_raws`) in the same compiled call: ``(acc_w, exp_w, D, exp, max_abs_e,
    status)`` (``acc_w`` the weight's raw limbs, empty without weights or ``want_w``); one call
    and three arrays to box where the two calls boxed nine."""
    a0, a1, a2, a3, a4, a5, a6, a7, exps, mx, status = regression_sums(y, p, w, has_w, want_w, ae, ape)
    if status:
        return a0, np.int64(0), np.zeros((7, 0), dtype=np.int64), np.int64(0), mx, status
    D, e = stack_raws(a1, a2, a3, a4, a5, a6, a7, exps)
    return a0, exps[0], D, e, mx, status


def i2f(b):
    """The float64 of the IEEE bits ``b`` (compiled: a bit cast)."""
    return float(np.int64(b).view(np.float64))


#: per-thread scratch rows of :func:`regression_moments` (kept for batches up to SCRATCH rows)
_scratch = threading.local()
SCRATCH = 1 << 20


def _as_kernel_array(a):
    """A writeable C float64 array (one compiled variant of every kernel)."""
    a = np.asarray(a)
    return a if a.dtype == np.float64 and a.flags.c_contiguous and a.flags.writeable else np.array(a, dtype=np.float64)


def regression_moments(y, p, w, want_w=True):
    """:func:`regression_sums` of (n,) targets, predictions and weights (None: unweighted), n
    at most :data:`CHUNK`: ``(raws, max_abs_e)``, ``raws`` eight ``(limbs, exp)`` (the first
    None without weights or without ``want_w``), or None when a value, ``|e|`` or ``ape`` is not
    finite."""
    y, p = _as_kernel_array(y), _as_kernel_array(p)
    has_w = w is not None
    n = y.shape[0]
    buf = getattr(_scratch, "buf", None)
    if buf is None or buf.shape[1] < n:
        buf = np.empty((2, n))
        if n <= SCRATCH:
            _scratch.buf = buf
    out = regression_sums(y, p, _as_kernel_array(w) if has_w else _EMPTYF, has_w, want_w, buf[0, :n], buf[1, :n])
    if out[10]:
        return None
    exps = out[8].tolist()
    raws = [(out[k], exps[k]) for k in range(8)]
    if not (has_w and want_w):
        raws[0] = None
    return raws, float(out[9])


def regression_stacked(y, p, w, want_w=True):
    """:func:`regression_moments` with the seven sums (``sum_y`` .. ``sum_ape``) as the rows of
    one raw matrix: ``(weight_raw, (D (7, L), exp), max_abs_e)`` (``weight_raw`` None as there),
    or None (a value, ``|e|``, ``ape`` or a weight not finite, or a negative weight: the caller's
    reference path names it). One compiled call (:func:`regression_stack_sums`). A running state
    keeps its sums so and adds a batch's in one compiled call."""
    if not (type(y) is np.ndarray and y.dtype == np.float64 and y.flags.c_contiguous and y.flags.writeable):
        y = _as_kernel_array(y)
    if not (type(p) is np.ndarray and p.dtype == np.float64 and p.flags.c_contiguous and p.flags.writeable):
        p = _as_kernel_array(p)
    has_w = w is not None
    n = y.shape[0]
    buf = getattr(_scratch, "buf", None)
    if buf is None or buf.shape[1] < n:
        buf = np.empty((2, n))
        if n <= SCRATCH:
            _scratch.buf = buf
    wa, ew, D, e, mx, status = regression_stack_sums(y, p, _as_kernel_array(w) if has_w else _EMPTYF, has_w, want_w, buf[0, :n], buf[1, :n])
    if status:
        return None
    return ((wa, int(ew)) if has_w and want_w else None), (D, int(e)), float(mx)


def _as_int_array(a):
    """A writeable C int64 array (one compiled variant of every kernel)."""
    a = np.asarray(a)
    return a if a.dtype == np.int64 and a.flags.c_contiguous and a.flags.writeable else np.array(a, dtype=np.int64)


def binary_cells(y, s, threshold, strict, w):
    """:func:`binary_cell_sums` of (n,) labels in {0, 1}, scores and weights at one threshold
    (``s >= threshold``, or ``s > threshold`` with ``strict``; n at most :data:`CHUNK`): raw
    ``(limbs (4, L), exp)`` of tn, fp, fn, tp, or None when a weight is not finite or a label
    is not 0 or 1 (the caller's reference path raises its message)."""
    t = float(threshold)
    if strict:  # s > t is s >= the next float above t (finite t and s; a NaN score passes neither)
        t = float(np.nextafter(t, np.inf))
    acc, e, status = binary_cell_sums(_as_int_array(y), _as_kernel_array(s), t, _as_kernel_array(w))
    return None if status >= 0 else (acc, int(e))


def pair_cells(a, b, k, w):
    """:func:`pair_cell_sums` (``w`` given) or :func:`pair_counts` (``w`` None) of (n,) labels in
    ``[0, k)`` (n at most :data:`CHUNK`): raw ``(limbs (k * k, L), exp)`` or (k * k,) int64
    counts; None when a weight is not finite or a label is out of range."""
    a, b = _as_int_array(a), _as_int_array(b)
    if w is None:
        counts, bad = pair_counts(a, b, int(k))
        return None if bad else counts
    acc, e, status = pair_cell_sums(a, b, int(k), _as_kernel_array(w))
    return None if status >= 0 else (acc, int(e))


def binary_counts(y, s, threshold, strict):
    """:func:`threshold_counts` of (n,) int64 labels and float64 scores (``s >= threshold``, or
    ``s > threshold`` with ``strict``): ``(npos, npred, tp)`` as Python ints, or None when a
    label is not 0 or 1 or a score is not finite (the caller's reference path raises its
    message)."""
    t = float(threshold)
    if strict:  # s > t is s >= the next float above t (finite t and s)
        t = float(np.nextafter(t, np.inf))
    npos, npred, tp, bad = threshold_counts(_as_int_array(y), _as_kernel_array(s), t)
    return None if bad else (int(npos), int(npred), int(tp))


def probability_moments(y, p, w, eps, want_w=True):
    """:func:`probability_sums` of (n,) labels in {0, 1}, positive-class scores and weights (None:
    unweighted) at one clipping ``eps``, n at most :data:`CHUNK`: ``(raws, npos)``, ``raws``
    five ``(limbs, exp)`` (sum_label, sum_score, brier, log_loss, weight; None where not
    computed), ``npos`` the number of positive rows (unweighted), or None when a value is
    outside the kernel's domain (the caller's reference path)."""
    y, p = _as_int_array(y), _as_kernel_array(p)
    has_w = w is not None
    n = p.shape[0]
    buf = getattr(_scratch, "pbuf", None)
    if buf is None or buf.shape[1] < n:
        buf = np.empty((3, n))
        if n <= SCRATCH:
            _scratch.pbuf = buf
    e = float(eps)
    out = probability_sums(y, p, _as_kernel_array(w) if has_w else _EMPTYF, has_w, want_w, e, 1.0 - e, buf[0, :n], buf[1, :n], buf[2, :n])
    if out[7]:
        return None
    exps = out[5].tolist()
    raws = [(out[k], exps[k]) for k in range(5)]
    if not has_w:
        raws[0] = raws[4] = None
    elif not want_w:
        raws[4] = None
    return raws, int(out[6])


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
    nf = len(factors)
    f0 = factors[0]
    if any(f.shape != f0.shape for f in factors) or (index is not None and np.shape(index) != f0.shape):
        raise ValueError(f"exact sum: factors and index of different lengths {[f.shape[0] for f in factors] + ([] if index is None else [np.shape(index)])}")
    g = _EMPTY
    if index is not None:
        g = np.asarray(index)
        if not (g.dtype == np.int64 and g.flags.c_contiguous and g.flags.writeable):
            g = np.array(g, dtype=np.int64)
    acc, exp, status, pos = plan_sum(f0, factors[1] if nf > 1 else _EMPTYF, factors[2] if nf > 2 else _EMPTYF, nf, g, index is not None, size)
    if status == 3:
        raise ValueError(f"exact sum: index {int(g[pos])} at position {int(pos)} is outside [0, {size})")
    if status >= 0:
        raise NonFinite(int(status), int(pos), float(factors[status][pos]))
    return acc, int(exp)


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


def mean_batch_sums(v: np.ndarray, w: np.ndarray | None) -> tuple[tuple[np.ndarray, int], tuple[np.ndarray, int] | None] | None:
    """:func:`mean_sums` of (n,) float64 C-contiguous values and weights (None: unweighted), n
    at most :data:`CHUNK`: ``((limbs, exp) of sum v [w], (limbs, exp) of sum w or None)``, or
    None when a value or weight is not finite or a weight is negative (the caller's reference
    path then names it)."""
    v = _as_kernel_array(v)
    has_w = w is not None
    acc, e, accw, ew, status, _pos = mean_sums(v, _as_kernel_array(w) if has_w else _EMPTYF, has_w)
    if status >= 0:
        return None
    return (acc, int(e)), ((accw, int(ew)) if has_w else None)


def score_batch_sums(y: np.ndarray, s: np.ndarray, w: np.ndarray | None) -> tuple[np.ndarray, int] | None | bool:
    """:func:`score_sums` of (n,) int64 labels, float64 scores and weights (None: unweighted), C
    contiguous, n at most :data:`CHUNK`: the raw ``(limbs, exp)`` of ``sum w`` (True unweighted),
    or None when a label is not 0 or 1, a score is not finite, or a weight is not finite and >= 0
    (the caller's reference path then names it)."""
    has_w = w is not None
    acc, e, status = score_sums(_as_int_array(y), _as_kernel_array(s), _as_kernel_array(w) if has_w else _EMPTYF, has_w)
    if status >= 0:
        return None
    return (acc, int(e)) if has_w else True


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
    add_canonical(np.array([[1, -3]], dtype=np.int64), 0, np.array([[2]], dtype=np.int64), -1)
    y = np.array([1.5, -0.25, 3.0])
    regression_moments(y, y[::-1].copy(), None)
    mean_batch_sums(y, None)
    mean_batch_sums(y, np.array([0.5, 0.0, 2.0]))
    none = np.zeros((1, 0), dtype=np.int64)
    mean_fold(y, _EMPTYF, False, none, 0, none, 0)
    mean_fold(y, np.array([0.5, 0.0, 2.0]), True, none, 0, none, 0)
    regression_moments(y, y[::-1].copy(), np.array([0.5, 0.0, 2.0]))
    regression_stacked(y, y[::-1].copy(), None)
    labels = np.array([0, 1, 1])
    binary_cells(labels, y, 0.5, False, np.array([0.5, 0.0, 2.0]))
    pair_cells(labels, labels[::-1].copy(), 2, np.array([0.5, 0.0, 2.0]))
    pair_cells(labels, labels[::-1].copy(), 2, None)
    binary_counts(labels, y, 0.5, False)
    score_batch_sums(labels, y, None)
    score_batch_sums(labels, y, np.array([0.5, 0.0, 2.0]))
    probability_moments(labels, np.array([0.25, 1.0, 0.0]), None, 1e-7)
    probability_moments(labels, np.array([0.25, 1.0, 0.0]), np.array([0.5, 0.0, 2.0]), 1e-7)
    _warm = True
    return time.perf_counter() - t0


_warm = False
#: the name the engine tier exports (:mod:`mergeable_metrics.engine`)
warm_kernels = warm
