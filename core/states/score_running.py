"""Running score distributions: raw bins folded by one compiled pass per batch, canonicalised only
where the state is observed (issue 25, item 2).

A :class:`RunningBins` holds the bins of the examples folded so far at their canonical level ``L``
(see :mod:`mergeable_metrics.states.score_bins`) in an open addressing hash table keyed by ``score
key >> L``. Per bin it keeps the row counts of labels 0 and 1 packed in one int64 (unweighted, while
fewer than :data:`PACKED_ROWS` rows were folded), or the exact weight of each label as raw int64
limbs on the fixed grid of :mod:`mergeable_metrics._util.exact` (32-bit limbs added without carries,
carried every :data:`CARRY_ROWS` rows so every entry stays below ``2**62``). A batch is folded by one
compiled pass (:func:`fold_rows`): each row's bin is found or inserted and its label's count or
weight added; zero weights are skipped. Packed counts at levels :data:`DENSE_LEVEL` to 52 move to a
dense table when it is not larger (one 8-byte cell per bin of every binade they occupy, found by
the binade's first cell and the key's low bits: no keys stored, no probing; :func:`fold_dense`). When a new bin would make the bins exceed ``capacity``, the
level is raised in place to the canonical level of the bins and of the rest of the batch (examples
of the data: the canonical level never decreases as examples are added, so the table's level is
never above the final one); coarser bins add their counts or limbs, exactly.

The canonical state is built (:meth:`RunningBins.bins`) only when a state is observed: the bins
sorted by key, counts as float64 or limbs rounded once by
:class:`~mergeable_metrics._util.exact.ExactSums`. Integer addition is exact and order-free and the
level is a function of the examples, so the state is that of the one-batch fold for any batching,
bit for bit.

A fold never changes a published table: it copies it first (states are immutable values; a state
of ``MetricCollection.states`` may be read by another thread or kept by the caller). Copies reuse
released tables of the same shape (:func:`_take`), so a copy is a ``memcpy``, not page faults.
``MetricCollection.update`` folds an accumulator nobody else can see (not :attr:`RunningBins.shared`:
see :func:`share`, :func:`owned`) in place, under its lock (:meth:`RunningBins.fold_owned`).

Weights on one grid (issue 25 round 8): a first weighted batch whose weights are multiples of
``2**E`` below ``2**(E + 62)`` (``rng.random()`` weights: multiples of ``2**-53``) is summed per
bin as 128-bit integers ``w / 2**E`` (:func:`fold_grid`: slots ``[key, lo0, lo1]`` of 24 bytes,
the high words apart, touched on a carry; at levels 36-52 a dense form of 16-byte cells,
:func:`fold_dense_grid`) instead of five raw 32-bit limbs per label (88-byte slots). The first
weight off the grid (finer, larger, subnormal, not finite) or an unweighted row turns the sums
into limbs (exactly: the same integers) and the fold goes on there.

The table is bounded (:data:`MAX_TABLE_BYTES`): a fold that would need a larger one (a huge
``capacity``, weights spanning too many binades) returns None and the caller folds as before.
Without numba (:func:`mergeable_metrics._util.exact_kernels.ready` False) nothing here is used.
"""

from __future__ import annotations

import math
import threading
from contextlib import contextmanager
from typing import Iterator

import numpy as np

from mergeable_metrics._util import exact_kernels as _K
from mergeable_metrics.states.score_bins import score_keys, shift_of_splits

#: the key of an empty slot (no bin key is ``-2**63``: ``|score key| <= KEY_MAX_FINITE``)
EMPTY = np.int64(-(1 << 63))
#: Fibonacci hashing multiplier (2**64 / golden ratio)
GOLD = np.uint64(0x9E3779B97F4A7C15)
#: a table holds at most this fraction of its slots (then it doubles)
LOAD = 0.7
#: first table size (slots)
MIN_SLOTS = 1 << 10
#: the largest table (bytes); past it the fold falls back to sorting (``None``): a fold copies the
#: table, so a state of a million bins (a ``capacity`` far above the default) folds as before
MAX_TABLE_BYTES = 16 << 20
#: rows added to raw limbs between two carries: an entry grows by < 2**33 per row, so from
#: below 2**32 it stays below 2**32 + 2**28 * 2**33 < 2**62
CARRY_ROWS = 1 << 28
#: packed counts use a dense table (one cell per bin of each binade they occupy, no keys) instead
#: of the hash when the level is in [DENSE_LEVEL, 52] and the cells are at most twice the hash's
#: slots (then the table is not larger)
DENSE_LEVEL = 36
#: packed counts stay below 2**31 each while the rows folded into a table are fewer than this
PACKED_ROWS = 1 << 31
#: limb index of 2**0 (``exact_kernels.OFFSET // 32``): a count of 1 adds 1 to this limb
ONE_LIMB = _K.OFFSET >> 5
#: released tables kept for reuse, per shape (at most 2 each, each at most 16 MiB, at most
#: :data:`_POOL_TOTAL` bytes in all)
_POOL: dict[tuple[int, int], list[np.ndarray]] = {}
_POOL_BYTES = 16 << 20
#: the pool's bound in bytes: a table that would pass it empties the pool first (without it, tables of
#: many shapes, e.g. weighted batches of other limb windows, kept hundreds of MiB after their states were gone)
_POOL_TOTAL = 64 << 20

_MASK = np.int64(0xFFFFFFFF)
_LOW63 = np.int64(0x7FFF_FFFF_FFFF_FFFF)


# ---------------------------------------------------------------------------------------------
# kernels (plain Python here; compiled by numba on first use, see _kernels)
def scan_weights(w):
    """``(rows with w > 0, lowest and highest limb index of their contributions, status)``;
    ``status`` -1, or the position of the first weight that is not finite and >= 0."""
    bits = w.view(np.int64)
    n = 0
    qlo = np.int64(1) << 40
    qhi = np.int64(-1)
    for i in range(w.shape[0]):
        x = w[i]
        if x > 0.0:
            e = (bits[i] >> 52) & 0x7FF
            if e == 0x7FF:
                return n, qlo, qhi, i
            if e == 0:
                e = 1
            q = (e - 1075 + OFFSET) >> 5
            if q < qlo:
                qlo = q
            if q > qhi:
                qhi = q
            n += 1
        elif not (x == 0.0):
            return n, qlo, qhi, i
    return n, qlo, qhi, -1


def fold_rows(T, sh, W, qbase, level, bits, y, w, wbits, has_w, start, stop, limit, n):
    """Fold rows ``start:stop`` into table ``T`` (slots ``[key, payload]``; payload: the two
    label counts packed in one int64, ``c0 + c1 * 2**32``, when ``W == 0``, else ``W`` raw limbs
    of label 0 then ``W`` of label 1, from limb index ``qbase``). Returns ``(row, n, key)``:
    ``row == stop`` when done, else the row whose new bin would make ``n`` exceed ``limit``
    (``key``: that bin)."""
    mask = T.shape[0] - 1
    for i in range(start, stop):
        if has_w:
            if not (w[i] > 0.0):
                continue
        b = bits[i]
        sign = b >> 63
        k = ((sign & LOW63) ^ b) - sign
        k = k >> level
        h = np.int64((np.uint64(k) * GOLDEN) >> sh)
        while True:
            kk = T[h, 0]
            if kk == k:
                break
            if kk == EMPTY_KEY:
                if n >= limit:
                    return i, n, k
                T[h, 0] = k
                n += 1
                break
            h = (h + 1) & mask
        lab = 1 if y[i] != 0 else 0
        if W == 0:
            T[h, 1] += np.int64(1) << (32 * lab)
        else:
            col = 1 + lab * W
            if has_w:
                wb = wbits[i]
                e = (wb >> 52) & 0x7FF
                m = wb & ((np.int64(1) << 52) - 1)
                if e != 0:
                    m |= np.int64(1) << 52
                else:
                    e = 1
                p = e - 1075 + OFFSET
                q = col + (p >> 5) - qbase
                r = p & 31
                a = (m & MASK32) << r
                c = (m >> 32) << r
                T[h, q] += a & MASK32
                T[h, q + 1] += (a >> 32) + (c & MASK32)
                T[h, q + 2] += c >> 32
            else:
                T[h, col + ONE - qbase] += 1
    return stop, n, np.int64(0)


def grid_of(w):
    """``(rows with w > 0, lowest set bit, top, status)`` of weights ``w``: every weight > 0 is a
    multiple of ``2**lowest`` and below ``2**top``; ``status`` -1, or the position of the first
    weight that is not finite and >= 0."""
    bits = w.view(np.int64)
    n = 0
    low = np.int64(1) << 20
    top = -(np.int64(1) << 20)
    for i in range(w.shape[0]):
        x = w[i]
        if x > 0.0:
            b = bits[i]
            e = (b >> 52) & 0x7FF
            if e == 0x7FF:
                return n, low, top, i
            m = b & M52
            if e != 0:
                m |= np.int64(1) << 52
            else:
                e = 1
            p = e - 1075
            z = p + math.frexp(np.float64(m & (-m)))[1] - 1  # the lowest set bit (a power of two: exact)
            t = p + math.frexp(np.float64(m))[1]  # m < 2**53 is exact: 2**(t - 1) <= x < 2**t
            if z < low:
                low = z
            if t > top:
                top = t
            n += 1
        elif not (x == 0.0):
            return n, low, top, i
    return n, low, top, -1


def fold_grid(T, H, sh, scale, level, bits, y, w, start, stop, limit, n):
    """Fold rows ``start:stop`` into a grid table ``T`` (slots ``[key, lo0, lo1]``) and its high
    words ``H`` ((S, 2)): each label's weight sum per bin is the 128-bit integer ``H * 2**64 +
    lo`` (``lo`` unsigned) times ``2**E`` (``scale = 2**-E``, a normal float). A weight is added
    as the integer ``w * scale`` when that is one below ``2**62`` (the product of a float and a
    power of two is exact unless it underflows below 1 or overflows: then it is no integer
    below ``2**62``). Returns ``(row, n, key, status)``: ``status`` 0 done (``row == stop``); 1
    the weight of ``row`` is not such a multiple (or not finite and >= 0; nothing of ``row``
    added); 2 the new bin ``key`` of ``row`` would make ``n`` exceed ``limit``."""
    mask = T.shape[0] - 1
    for i in range(start, stop):
        x = w[i]
        if not (x > 0.0):
            if x == 0.0:
                continue
            return i, n, np.int64(0), 1
        x = x * scale
        if not (1.0 <= x < 4.611686018427388e18):  # below 1: underflowed (or off the grid); 2**62 (inf too)
            return i, n, np.int64(0), 1
        v = np.int64(x)
        if np.float64(v) != x:
            return i, n, np.int64(0), 1
        b = bits[i]
        sign = b >> 63
        k = (((sign & LOW63) ^ b) - sign) >> level
        h = np.int64((np.uint64(k) * GOLDEN) >> sh)
        while True:
            kk = T[h, 0]
            if kk == k:
                break
            if kk == EMPTY_KEY:
                if n >= limit:
                    return i, n, k, 2
                T[h, 0] = k
                n += 1
                break
            h = (h + 1) & mask
        lab = 1 if y[i] != 0 else 0
        old = np.uint64(T[h, 1 + lab])
        new = old + np.uint64(v)
        T[h, 1 + lab] = np.int64(new)
        if new < old:
            H[h, lab] += 1
    return stop, n, np.int64(0), 0


def rehash_grid(T, H, shift, T2, H2, sh2):
    """:func:`rehash` of a grid table (128-bit sums: low words added with their carries)."""
    mask = T2.shape[0] - 1
    n = 0
    for s in range(T.shape[0]):
        k = T[s, 0]
        if k == EMPTY_KEY:
            continue
        k = k >> shift
        h = np.int64((np.uint64(k) * GOLDEN) >> sh2)
        while True:
            kk = T2[h, 0]
            if kk == k:
                break
            if kk == EMPTY_KEY:
                T2[h, 0] = k
                n += 1
                break
            h = (h + 1) & mask
        for lab in range(2):
            old = np.uint64(T2[h, 1 + lab])
            new = old + np.uint64(T[s, 1 + lab])
            T2[h, 1 + lab] = np.int64(new)
            H2[h, lab] += H[s, lab] + (1 if new < old else 0)
    return n


def extract_grid(T, H, keys, P):
    """The occupied slots of a grid table into ``keys`` (n,) and ``P`` (n, 4) ``[lo0, lo1,
    hi0, hi1]``, in slot order."""
    j = 0
    for s in range(T.shape[0]):
        if T[s, 0] == EMPTY_KEY:
            continue
        keys[j] = T[s, 0]
        P[j, 0] = T[s, 1]
        P[j, 1] = T[s, 2]
        P[j, 2] = H[s, 0]
        P[j, 3] = H[s, 1]
        j += 1
    return j


def grid_limbs(P, r, out):
    """The 128-bit sums ``P`` ((m, 4) ``[lo0, lo1, hi0, hi1]``, ``lo`` unsigned) shifted up
    ``r`` < 32 bits, as 32-bit limbs: ``out`` (m, 10), five limbs of label 0 then five of label
    1 (zeroed here; each limb below 2**33, to be carried)."""
    for j in range(P.shape[0]):
        for lab in range(2):
            lo = P[j, lab]
            hi = P[j, 2 + lab]
            base = 5 * lab
            for c in range(5):
                out[j, base + c] = 0
            for c in range(4):
                if c == 0:
                    x = lo & MASK32
                elif c == 1:
                    x = (lo >> 32) & MASK32
                elif c == 2:
                    x = hi & MASK32
                else:
                    x = (hi >> 32) & MASK32
                a = x << r
                out[j, base + c] += a & MASK32
                out[j, base + c + 1] += a >> 32


def _bitlen(x):
    """The bit length of ``0 <= x < 2**64`` (uint64): each 32-bit half is a float64 exactly."""
    h = x >> np.uint64(32)
    if h != 0:
        return 32 + math.frexp(np.float64(h))[1]
    if x == 0:
        return 0
    return math.frexp(np.float64(x))[1]


def round_grid(P, E, scale, out):
    """Each 128-bit sum of ``P`` ((m, 4) ``[lo0, lo1, hi0, hi1]``, ``lo`` unsigned, ``hi`` >= 0)
    times ``2**E``, correctly rounded to float64 (to nearest, ties to even): ``out[2 j + lab]``.
    ``scale``: ``2**E`` when that is a normal float, else 0. Returns False (``out`` partly
    written) when a non-zero result is not a normal float (a subnormal rounds at a fixed bit, past
    the range is inf: the caller rounds the limbs)."""
    for j in range(P.shape[0]):
        for lab in range(2):
            x = P[j, lab]
            hi = np.uint64(P[j, 2 + lab])
            if hi == 0 and x >= 0 and scale != 0.0:
                # below 2**63: the int64 conversion rounds to nearest even, and a power of two
                # >= 2**-1022 scales it exactly unless it overflows
                f = np.float64(x) * scale
                if f == math.inf:
                    return False
                out[2 * j + lab] = f
                continue
            lo = np.uint64(x)
            if hi == 0 and lo == 0:
                out[2 * j + lab] = 0.0
                continue
            t = 64 + _bitlen(hi) if hi != 0 else _bitlen(lo)  # 2**(t - 1) <= N < 2**t
            if t <= 53:  # exact
                m = np.int64(lo)
                k = 0
            else:
                sh = t - 54  # the top 54 bits (53 and the rounding bit) and whether any below is set
                if sh >= 64:
                    r = sh - 64
                    top = hi >> np.uint64(r)
                    sticky = lo != 0 or (hi & ((np.uint64(1) << np.uint64(r)) - np.uint64(1))) != 0
                elif sh == 0:
                    top = lo
                    sticky = False
                else:
                    top = (lo >> np.uint64(sh)) | (hi << np.uint64(64 - sh))
                    sticky = (lo & ((np.uint64(1) << np.uint64(sh)) - np.uint64(1))) != 0
                m = np.int64(top >> np.uint64(1))
                if (top & np.uint64(1)) != 0 and (sticky or (m & 1) != 0):
                    m += 1  # 2**53 at most: still a float64 exactly
                k = sh + 1
            f = np.float64(m)
            e = math.frexp(f)[1] + k + E  # 2**(e - 1) <= the result < 2**e
            if e - 1 < -1022 or e > 1024:
                return False
            out[2 * j + lab] = math.ldexp(f, k + E)
    return True


def limbs_span(D, e):
    """``(low, top)`` over the non-zero sums of carried limbs ``D`` ((m, k), limbs in [0,
    2**32), sum ``D[r, j] * 2**(32 (e + j))``): every such sum is a multiple of ``2**low``
    and below ``2**top`` (``low`` huge, ``top`` very negative when all are 0)."""
    low = np.int64(1) << 40
    top = -(np.int64(1) << 40)
    for r in range(D.shape[0]):
        for j in range(D.shape[1]):
            d = D[r, j]
            if d != 0:
                p = 32 * (e + j)
                z = p + math.frexp(np.float64(d & (-d)))[1] - 1
                if z < low:
                    low = z
                t = p + math.frexp(np.float64(d))[1]
                if t > top:
                    top = t
    return low, top


def limbs_to_grid(D, e, E, P, col):
    """The sums of limbs ``D`` ((m, k) >= 0, sum ``D[r, j] * 2**(32 (e + j))``, every set bit
    at ``2**E`` or above and below ``2**(E + 126)``) as 128-bit integers times ``2**E``: low
    words into ``P[:, col]``, high words into ``P[:, col + 2]``. Returns False (``P`` partly
    written) when a limb is negative or a set bit is below ``2**E``."""
    for r in range(D.shape[0]):
        lo = np.uint64(0)
        hi = np.int64(0)
        for j in range(D.shape[1]):
            x = D[r, j]
            if x < 0:
                return False
            for half in range(2):
                d = (x & MASK32) if half == 0 else (x >> 32)
                if d == 0:
                    continue
                q = 32 * (e + j) + 32 * half - E
                if q < 0:
                    if q <= -32 or (d & ((np.int64(1) << -q) - 1)) != 0:
                        return False
                    d = d >> -q
                    q = 0
                if q >= 64:
                    hi += d << (q - 64)
                    continue
                part = np.uint64(d) << np.uint64(q)
                new = lo + part
                if new < lo:
                    hi += 1
                lo = new
                if q > 32:
                    hi += d >> (64 - q)
        P[r, col] = np.int64(lo)
        P[r, col + 2] = hi
    return True


def insert_grid(T, H, sh, keys, P):
    """Insert distinct ``keys`` with 128-bit sums ``P`` ((n, 4) ``[lo0, lo1, hi0, hi1]``) into
    the empty slots of a grid table ``T`` and its high words ``H``."""
    mask = T.shape[0] - 1
    for j in range(keys.shape[0]):
        k = keys[j]
        h = np.int64((np.uint64(k) * GOLDEN) >> sh)
        while T[h, 0] != EMPTY_KEY:
            h = (h + 1) & mask
        T[h, 0] = k
        T[h, 1] = P[j, 0]
        T[h, 2] = P[j, 1]
        H[h, 0] = P[j, 2]
        H[h, 1] = P[j, 3]


def fold_dense_grid(C, Hd, off, level, lowmask, bits, y, w, scale, start, stop, limit, n):
    """:func:`fold_grid` into the dense form: ``C`` (cells, 2) the low words of the two labels'
    sums of every bin of the binades in ``off`` (as :func:`fold_dense`), ``Hd`` their high
    words. Returns ``(row, n, status)``: 0 done; 1 the weight of ``row`` is off the grid; 2 its
    new bin would make ``n`` exceed ``limit``; 3 its binade has no cells."""
    for i in range(start, stop):
        x = w[i]
        if not (x > 0.0):
            if x == 0.0:
                continue
            return i, n, 1
        x = x * scale
        if not (1.0 <= x < 4.611686018427388e18):
            return i, n, 1
        v = np.int64(x)
        if np.float64(v) != x:
            return i, n, 1
        b = bits[i]
        sign = b >> 63
        k = ((sign & LOW63) ^ b) - sign
        o = off[(k >> 52) & 4095]
        if o < 0:
            return i, n, 3
        c = o + ((k >> level) & lowmask)
        lab = 1 if y[i] != 0 else 0
        old = np.uint64(C[c, lab])
        if old == 0 and Hd[c, lab] == 0 and C[c, 1 - lab] == 0 and Hd[c, 1 - lab] == 0:  # a new bin
            if n >= limit:
                return i, n, 2
            n += 1
        new = old + np.uint64(v)
        C[c, lab] = np.int64(new)
        if new < old:
            Hd[c, lab] += 1
    return stop, n, 0


def dense_of_grid(C, Hd, off, shift, T, H):
    """Write the occupied slots of a grid hash ``T`` (high words ``H``) at level ``52 - shift``
    into the dense form ``C``, ``Hd``."""
    mask = (np.int64(1) << shift) - 1
    for s in range(T.shape[0]):
        k = T[s, 0]
        if k != EMPTY_KEY:
            c = off[(k >> shift) & 4095] + (k & mask)
            C[c, 0] = T[s, 1]
            C[c, 1] = T[s, 2]
            Hd[c, 0] = H[s, 0]
            Hd[c, 1] = H[s, 1]


def dense_grid_entries(C, Hd, off, codes, shift, keys, P):
    """The occupied cells of a dense grid form as ascending bin keys and ``P`` (n, 4) ``[lo0,
    lo1, hi0, hi1]``; returns how many."""
    per = np.int64(1) << shift
    m = 0
    for b in range(codes.shape[0]):
        code = codes[b]
        o = off[code & 4095]
        for j in range(per):
            c = o + j
            if C[c, 0] != 0 or C[c, 1] != 0 or Hd[c, 0] != 0 or Hd[c, 1] != 0:
                keys[m] = (code << shift) | j
                P[m, 0] = C[c, 0]
                P[m, 1] = C[c, 1]
                P[m, 2] = Hd[c, 0]
                P[m, 3] = Hd[c, 1]
                m += 1
    return m


def missing_dense_grid(C, Hd, off, level, lowmask, bits, w, start, stop, out):
    """:func:`missing_keys` of a dense grid form: the bins (``score key >> level``) of rows
    ``start:stop`` of weight > 0 whose cell is empty or whose binade has none, into ``out``;
    returns how many."""
    m = 0
    for i in range(start, stop):
        if not (w[i] > 0.0):
            continue
        b = bits[i]
        sign = b >> 63
        k = ((sign & LOW63) ^ b) - sign
        o = off[(k >> 52) & 4095]
        if o >= 0:
            c = o + ((k >> level) & lowmask)
            if C[c, 0] != 0 or C[c, 1] != 0 or Hd[c, 0] != 0 or Hd[c, 1] != 0:
                continue
        out[m] = k >> level
        m += 1
    return m


def dense_keys(C, Hd, off, codes, shift, keys):
    """The bin keys of the occupied cells of a dense grid form, ascending; returns how many."""
    per = np.int64(1) << shift
    m = 0
    for b in range(codes.shape[0]):
        code = codes[b]
        o = off[code & 4095]
        for j in range(per):
            c = o + j
            if C[c, 0] != 0 or C[c, 1] != 0 or Hd[c, 0] != 0 or Hd[c, 1] != 0:
                keys[m] = (code << shift) | j
                m += 1
    return m


def dense_raise_grid(C, Hd, off, codes, shift, s, C2, H2):
    """Add the cells of a dense grid form (binades ``codes``, ascending, ``2**shift`` cells each
    from ``off``) into ``C2``, ``H2`` (zeroed; ``2**(shift - s)`` cells per binade, binade ``b``
    of ``codes`` at ``b * 2**(shift - s)``): bin ``j`` of a binade into bin ``j >> s`` (128-bit
    adds). Returns the occupied cells of ``C2``."""
    per = np.int64(1) << shift
    per2 = np.int64(1) << (shift - s)
    for b in range(codes.shape[0]):
        o = off[codes[b] & 4095]
        o2 = b * per2
        for j in range(per):
            c = o + j
            c2 = o2 + (j >> s)
            for lab in range(2):
                old = np.uint64(C2[c2, lab])
                new = old + np.uint64(C[c, lab])
                C2[c2, lab] = np.int64(new)
                H2[c2, lab] += Hd[c, lab] + (1 if new < old else 0)
    n = 0
    for c2 in range(C2.shape[0]):
        if C2[c2, 0] != 0 or C2[c2, 1] != 0 or H2[c2, 0] != 0 or H2[c2, 1] != 0:
            n += 1
    return n


def fold_counts(T, sh, level, bits, y, start, stop, limit, n):
    """:func:`fold_rows` of unweighted rows into packed counts (``W == 0``), without the
    weighted branches in the loop."""
    mask = T.shape[0] - 1
    for i in range(start, stop):
        b = bits[i]
        sign = b >> 63
        k = (((sign & LOW63) ^ b) - sign) >> level
        h = np.int64((np.uint64(k) * GOLDEN) >> sh)
        while True:
            kk = T[h, 0]
            if kk == k:
                break
            if kk == EMPTY_KEY:
                if n >= limit:
                    return i, n, k
                T[h, 0] = k
                n += 1
                break
            h = (h + 1) & mask
        T[h, 1] += np.int64(1) << (32 * (1 if y[i] != 0 else 0))
    return stop, n, np.int64(0)


def fold_dense(C, off, level, lowmask, bits, y, start, stop, limit, n):
    """:func:`fold_counts` into a dense table: the packed counts ``C`` of every bin of the
    binades in ``off`` (binade code ``score key >> 52`` modulo 4096 -> first cell, or -1).
    Returns ``(row, n, status)``: ``row == stop`` when done, else the row whose binade has no
    cells (``status`` 1) or whose new bin would make ``n`` exceed ``limit`` (2)."""
    for i in range(start, stop):
        b = bits[i]
        sign = b >> 63
        k = ((sign & LOW63) ^ b) - sign
        o = off[(k >> 52) & 4095]
        if o < 0:
            return i, n, 1
        c = o + ((k >> level) & lowmask)
        v = C[c]
        if v == 0:
            if n >= limit:
                return i, n, 2
            n += 1
        C[c] = v + (np.int64(1) << (32 * (1 if y[i] != 0 else 0)))
    return stop, n, 0


def dense_of_table(C, off, shift, T):
    """Write the occupied slots of a hash ``T`` of packed counts at level ``52 - shift`` into ``C``."""
    mask = (np.int64(1) << shift) - 1
    for s in range(T.shape[0]):
        k = T[s, 0]
        if k != EMPTY_KEY:
            C[off[(k >> shift) & 4095] + (k & mask)] = T[s, 1]


def table_binades(T, shift, seen):
    """Mark in ``seen`` (4096,) the binade codes (modulo 4096) of the bins of ``T`` at level
    ``52 - shift``; returns how many."""
    m = 0
    for s in range(T.shape[0]):
        k = T[s, 0]
        if k != EMPTY_KEY:
            c = (k >> shift) & 4095
            if seen[c] == 0:
                seen[c] = 1
                m += 1
    return m


def dense_entries(C, off, codes, shift, keys, P):
    """The occupied cells of ``C`` as ascending bin keys and packed counts (``codes``: the
    table's binade codes, ascending); returns how many."""
    per = np.int64(1) << shift
    m = 0
    for b in range(codes.shape[0]):
        code = codes[b]
        o = off[code & 4095]
        for j in range(per):
            v = C[o + j]
            if v != 0:
                keys[m] = (code << shift) | j
                P[m, 0] = v
                m += 1
    return m


def insert_bins(T, sh, keys, P):
    """Insert distinct ``keys`` with payload rows ``P`` into the empty slots of ``T``."""
    mask = T.shape[0] - 1
    cols = P.shape[1]
    for j in range(keys.shape[0]):
        k = keys[j]
        h = np.int64((np.uint64(k) * GOLDEN) >> sh)
        while T[h, 0] != EMPTY_KEY:
            h = (h + 1) & mask
        T[h, 0] = k
        for c in range(cols):
            T[h, 1 + c] = P[j, c]


def rehash(T, shift, T2, sh2, key, has_key):
    """Add every bin of ``T`` at ``shift`` more levels (``key >> shift``) into ``T2`` (empty
    slots; payloads added); returns the bins of ``T2``, plus one when ``has_key`` and ``key >>
    shift`` is not among them (that bin is not inserted)."""
    mask = T2.shape[0] - 1
    cols = T.shape[1]
    n = 0
    for s in range(T.shape[0]):
        k = T[s, 0]
        if k == EMPTY_KEY:
            continue
        k = k >> shift
        h = np.int64((np.uint64(k) * GOLDEN) >> sh2)
        while True:
            kk = T2[h, 0]
            if kk == k:
                break
            if kk == EMPTY_KEY:
                T2[h, 0] = k
                n += 1
                break
            h = (h + 1) & mask
        for c in range(1, cols):
            T2[h, c] += T[s, c]
    if has_key:
        k = key >> shift
        h = np.int64((np.uint64(k) * GOLDEN) >> sh2)
        while True:
            kk = T2[h, 0]
            if kk == k:
                break
            if kk == EMPTY_KEY:
                n += 1
                break
            h = (h + 1) & mask
    return n


def carry_table(T, W):
    """Carry the raw limbs of every occupied slot of ``T`` in place (see :func:`carry_rows`)."""
    for s in range(T.shape[0]):
        if T[s, 0] == EMPTY_KEY:
            continue
        for lab in range(2):
            col = 1 + lab * W
            c = np.int64(0)
            for i in range(W - 1):
                x = T[s, col + i] + c
                T[s, col + i] = x & MASK32
                c = x >> 32
            T[s, col + W - 1] += c


def missing_keys(T, sh, bits, w, has_w, level, start, stop, out):
    """The bins (``score key >> level``) of rows ``start:stop`` (of weight > 0) that are not in
    ``T``, into ``out`` (one per row: repeats included); returns how many."""
    mask = T.shape[0] - 1
    m = 0
    for i in range(start, stop):
        if has_w:
            if not (w[i] > 0.0):
                continue
        b = bits[i]
        sign = b >> 63
        k = (((sign & LOW63) ^ b) - sign) >> level
        h = np.int64((np.uint64(k) * GOLDEN) >> sh)
        while True:
            kk = T[h, 0]
            if kk == k:
                break
            if kk == EMPTY_KEY:
                out[m] = k
                m += 1
                break
            h = (h + 1) & mask
    return m


def count_splits(keys, per_shift):
    """Add to ``per_shift`` (65,) the adjacent pairs of distinct values of ascending ``keys``
    (repeats skipped) per split shift: the bit length of their XOR (64 when the signs differ);
    returns the distinct values."""
    m = 1 if keys.shape[0] else 0
    for i in range(1, keys.shape[0]):
        x = np.uint64(keys[i] ^ keys[i - 1])
        if x == 0:
            continue
        m += 1
        b = math.frexp(np.float64(x))[1]  # the bit length, or one more when rounded up
        if b > 64:
            b = 64
        if (x >> np.uint64(b - 1)) == 0:
            b -= 1
        per_shift[b] += 1
    return m


def extract(T, keys, P):
    """The occupied slots of ``T`` into ``keys`` (n,) and their first ``P.shape[1]`` payload
    columns into ``P`` (n, c) (c = 0: keys only), in slot order."""
    j = 0
    cols = P.shape[1]
    for s in range(T.shape[0]):
        if T[s, 0] == EMPTY_KEY:
            continue
        keys[j] = T[s, 0]
        for c in range(cols):
            P[j, c] = T[s, c + 1]
        j += 1
    return j


def gather_rows(P, order, out):
    """``out[i] = P[order[i]]`` for (n, c) int64 rows."""
    for i in range(order.shape[0]):
        r = order[i]
        for c in range(P.shape[1]):
            out[i, c] = P[r, c]


def carry_rows(P, W):
    """Carry raw limbs ``P`` ((m, 2 W): two groups of ``W`` limbs per row, labels 0 and 1) in
    place: every limb but each group's top in [0, 2**32) (the sums are non-negative)."""
    for s in range(P.shape[0]):
        for lab in range(2):
            col = lab * W
            c = np.int64(0)
            for i in range(W - 1):
                x = P[s, col + i] + c
                P[s, col + i] = x & MASK32
                c = x >> 32
            P[s, col + W - 1] += c


_KERNELS = (
    "scan_weights",
    "grid_of",
    "fold_grid",
    "rehash_grid",
    "extract_grid",
    "grid_limbs",
    "_bitlen",
    "round_grid",
    "limbs_span",
    "limbs_to_grid",
    "insert_grid",
    "fold_dense_grid",
    "dense_of_grid",
    "dense_grid_entries",
    "missing_dense_grid",
    "dense_keys",
    "dense_raise_grid",
    "fold_rows",
    "fold_counts",
    "fold_dense",
    "dense_of_table",
    "table_binades",
    "dense_entries",
    "insert_bins",
    "rehash",
    "carry_table",
    "missing_keys",
    "count_splits",
    "extract",
    "gather_rows",
    "carry_rows",
)
OFFSET = _K.OFFSET
LOW63 = _LOW63
MASK32 = _MASK
M52 = np.int64((1 << 52) - 1)
GOLDEN = GOLD
EMPTY_KEY = EMPTY
ONE = ONE_LIMB
_compiled = False
_compile_lock = threading.Lock()


def _kernels() -> bool:
    """Whether the compiled kernels are used (numba available and not disabled); compiles (or
    loads from numba's cache) on first use."""
    global _compiled
    if not _K.ready():
        return False
    if not _compiled:
        with _compile_lock:
            if not _compiled:
                import numba

                jit = numba.njit(cache=True, nogil=True, boundscheck=False)
                g = globals()
                for name in _KERNELS:
                    g[name] = jit(g[name])
                _compiled = True
    return True


# ---------------------------------------------------------------------------------------------
def _take(shape: tuple[int, int]) -> np.ndarray:
    """An uninitialised int64 table of ``shape`` (a released one when there is)."""
    got = _POOL.get(shape)
    if got:
        try:
            return got.pop()
        except IndexError:  # another thread took it
            pass
    return np.empty(shape, dtype=np.int64)


def _give(table: np.ndarray) -> None:
    """Keep a released table for reuse (no other reference to it remains), within :data:`_POOL_TOTAL`."""
    if table.nbytes <= _POOL_BYTES:
        held = sum(t.nbytes for free in list(_POOL.values()) for t in list(free))
        if held + table.nbytes > _POOL_TOTAL or (len(_POOL) > 16 and table.shape not in _POOL):
            _POOL.clear()  # many shapes or bytes (tables of other sizes): start over with this one
        free = _POOL.setdefault(table.shape, [])
        if len(free) < 2:
            free.append(table)


def _slots_for(n: int) -> int:
    s = MIN_SLOTS
    while n > int(s * LOAD):
        s <<= 1
    return s


def _first_slots(score: np.ndarray, capacity: int) -> int:
    """Slots of a first table for a batch: its distinct scores estimated from a strided sample
    of 1,024 (all distinct in the sample: every row a bin, up to ``capacity``), so a batch of
    continuous scores does not double the table from :data:`MIN_SLOTS` several times."""
    n = score.shape[0]
    if n <= MIN_SLOTS * LOAD:
        return MIN_SLOTS
    sample = score[:: max(1, n // 1024)]
    distinct = np.unique(sample).shape[0] / sample.shape[0]
    return _slots_for(min(capacity, int(distinct * n)))


def _shift(slots: int) -> np.uint64:
    return np.uint64(64 - (slots.bit_length() - 1))


def _grid_for(low: int, top: int) -> int | None:
    """The grid exponent ``E`` of a first weighted batch whose weights are multiples of
    ``2**low`` below ``2**top``: up to 8 bits finer than they need, leaving the integers
    ``w / 2**E`` below ``2**54`` (later weights up to ``2**(E + 62)`` fit); None when they span
    more than 62 bits, or ``2**-E`` is no normal float (limbs then)."""
    E = min(low, max(low - 8, top - 54))
    return E if top - E <= 62 and -1022 <= -E <= 1023 else None


def share(states) -> None:
    """Mark the running accumulators of ``states`` (a tuple of states) :attr:`RunningBins.shared`:
    they have been observed (handed out, encoded, merged, read), so the next fold copies them."""
    for st in states:
        acc = getattr(st, "__dict__", {}).get("_running")
        if acc is not None:
            acc.shared = True


def owned(states) -> bool:
    """Whether ``states`` hold running accumulators and none is :attr:`RunningBins.shared`."""
    got = False
    for st in states:
        acc = getattr(st, "__dict__", {}).get("_running")
        if acc is not None:
            if acc.shared:
                return False
            got = True
    return got


def _carry(P: np.ndarray, W: int) -> np.ndarray:
    """:func:`carry_rows` of (m, 2 W) raw limbs (a C-contiguous int64 array, changed in place)."""
    if P.shape[0]:
        carry_rows(P, W)
    return P


class RunningBins:
    """The bins of the examples folded so far at their canonical level, in a hash table (see the
    module docstring). Never changed once a state holds it: :meth:`fold` returns a new one.

    Attributes:
        level: the canonical level of the examples folded so far.
        capacity: the layout's capacity.
        table: (S, 2) int64 slots ``[key, c0 + c1 * 2**32]`` (``W == 0``: unweighted counts
            of labels 0 and 1 packed, each below 2**31 while ``rows`` is) or (S, 1 + 2 W)
            ``[key, W limbs of label 0, W limbs of label 1]``; ``S`` a power of two.
        n: occupied slots (bins), at most ``capacity``.
        W: limbs per label (0: packed counts).
        qbase: limb index of the first limb (``exp = qbase - ONE_LIMB``).
        rows: packed counts: the rows folded (no count exceeds it; kept below
            :data:`PACKED_ROWS`); limbs: the rows added since the limbs were last carried.
    """

    __slots__ = ("level", "capacity", "table", "n", "W", "qbase", "rows", "dense", "nodense", "grid", "hi", "shared", "at", "__weakref__")

    def __init__(self, level: int, capacity: int, table: np.ndarray, n: int, W: int = 0, qbase: int = 0, rows: int = 0):
        self.level, self.capacity, self.table, self.n = int(level), int(capacity), table, int(n)
        self.W, self.qbase, self.rows = int(W), int(qbase), int(rows)
        #: packed counts in dense form (then ``table`` is None): ``(cells, off, codes)``, ``cells``
        #: (binades * 2**(52 - level),) int64, ``off`` (4096,) the first cell of each binade code
        #: (``score key >> 52`` modulo 4096) or -1, ``codes`` the binade codes, ascending
        self.dense: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        #: the level at which the dense form was found not to pay (binades only add up)
        self.nodense = -1
        #: weights on one grid (then ``W == 0``, ``table`` (S, 3) ``[key, lo0, lo1]`` and ``hi``
        #: (S, 2) the high words): each label's weight per bin is ``(hi * 2**64 + lo) * 2**grid``
        #: (``lo`` unsigned); None: counts or limbs
        self.grid: int | None = None
        self.hi: np.ndarray | None = None
        #: observed (a state of it handed out, encoded, merged, read; see :func:`share`): a fold
        #: copies it; an accumulator nobody else can see is folded in place (:meth:`fold_owned`)
        self.shared = False
        #: rows of the batch folded so far by :meth:`_fold_in_place` (where a failed fold stopped)
        self.at = 0

    def __del__(self) -> None:
        t = getattr(self, "table", None)
        d = getattr(self, "dense", None)
        h = getattr(self, "hi", None)
        try:
            if t is not None:
                _give(t)
            if d is not None:
                _give(d[0])
            if h is not None:
                _give(h)
        except Exception:  # pragma: no cover - interpreter shutdown
            pass

    # -- construction ----------------------------------------------------------------------------
    @classmethod
    def empty(cls, level: int, capacity: int) -> "RunningBins":
        """Running bins with no rows: a table of the minimum size at ``level`` for ``capacity`` bins."""
        t = _take((MIN_SLOTS, 2))
        t[:, 0] = EMPTY
        t[:, 1] = 0
        return cls(level, capacity, t, 0)

    @classmethod
    def of_bins(
        cls, keys: np.ndarray, level: int, capacity: int, counts: np.ndarray | None, limbs: tuple | None, slots: int | None = None
    ) -> "RunningBins | None":
        """From canonical bins: ``counts`` (m, 2) int64 rows of labels (0, 1), or ``limbs``
        ``(D0, e0, D1, e1)``: the canonical limbs (or carried raw limbs) of the label-0 and
        label-1 exact sums; a table of at least ``slots`` slots."""
        m = keys.shape[0]
        if counts is not None:
            counts = np.asarray(counts, dtype=np.int64)
            rows = int(counts.sum())
            if rows < PACKED_ROWS:
                return cls._built(keys, counts[:, :1] + (counts[:, 1:] << 32), level, capacity, 0, 0, slots, rows=rows)
            D0, D1 = (np.stack((c & _MASK, c >> 32), axis=1) for c in (counts[:, 0], counts[:, 1]))  # c * 2**0
            limbs = (D0, 0, D1, 0)
        D0, e0, D1, e1 = limbs
        used = [(D, e) for D, e in ((D0, e0), (D1, e1)) if D.shape[1]]
        lo = min(e for _, e in used) + ONE_LIMB
        hi = max(e + D.shape[1] for D, e in used) + ONE_LIMB  # one headroom limb above the top
        W = hi - lo + 1
        P = np.zeros((m, 2 * W), dtype=np.int64)
        for lab, (D, e) in enumerate(((D0, e0), (D1, e1))):
            if D.shape[1]:
                at = lab * W + e + ONE_LIMB - lo
                P[:, at : at + D.shape[1]] = D
        # the sums are >= 0: every limb is too (also the signed top of canonical limbs)
        return cls._built(keys, _carry(P, W), level, capacity, W, lo, slots)

    @classmethod
    def _built(cls, keys, P, level, capacity, W, qbase, slots: int | None = None, rows: int = 0) -> "RunningBins | None":
        """A table of the distinct ``keys`` and their payload rows ``P`` (packed counts of
        ``rows`` rows, or carried limbs)."""
        S = max(_slots_for(keys.shape[0]), slots or 0)
        cols = 1 + (2 * W if W else 1)
        if S * cols * 8 > MAX_TABLE_BYTES:
            return None
        t = _take((S, cols))
        t[:, 0] = EMPTY
        t[:, 1:] = 0
        if keys.shape[0]:
            insert_bins(t, _shift(S), np.ascontiguousarray(keys, dtype=np.int64), np.ascontiguousarray(P, dtype=np.int64))
        return cls(level, capacity, t, keys.shape[0], W, qbase, rows)

    def _copy(self, W: int, qbase: int) -> "RunningBins | None":
        """A copy (in a table with limbs from ``qbase``, ``W`` per label when ``W`` is set; a grid
        table: a copy of it)."""
        if self.grid is not None:
            hi = _take(self.hi.shape)
            np.copyto(hi, self.hi)
            if self.dense is not None:
                C, off, codes = self.dense
                c = _take(C.shape)
                np.copyto(c, C)
                out = RunningBins(self.level, self.capacity, None, self.n)
                out.dense, out.nodense = (c, off.copy(), codes), self.nodense
            else:
                t = _take(self.table.shape)
                np.copyto(t, self.table)
                out = RunningBins(self.level, self.capacity, t, self.n)
                out.nodense = self.nodense
            out.grid, out.hi = self.grid, hi
            return out
        if self.dense is not None:
            C, off, codes = self.dense
            c = _take(C.shape)
            np.copyto(c, C)
            out = RunningBins(self.level, self.capacity, None, self.n, 0, 0, self.rows)
            out.dense, out.nodense = (c, off.copy(), codes), self.nodense
            return out
        S, cols = self.table.shape
        if W == self.W and (W == 0 or qbase == self.qbase):
            t = _take((S, cols))
            np.copyto(t, self.table)
            out = RunningBins(self.level, self.capacity, t, self.n, W, qbase, self.rows)
            out.nodense = self.nodense
            return out
        new_cols = 1 + 2 * W
        if S * new_cols * 8 > MAX_TABLE_BYTES:
            return None
        t = _take((S, new_cols))
        t[:, 1:] = 0
        t[:, 0] = self.table[:, 0]
        for lab in range(2 if self.n else 0):
            if self.W == 0:  # packed counts -> limbs: a count c < 2**31 is c * 2**0
                t[:, 1 + lab * W + ONE_LIMB - qbase] = (self.table[:, 1] >> (32 * lab)) & _MASK
            else:
                at = 1 + lab * W + self.qbase - qbase
                t[:, at : at + self.W] = self.table[:, 1 + lab * self.W : 1 + (lab + 1) * self.W]
        return RunningBins(self.level, self.capacity, t, self.n, W, qbase, self.rows)

    # -- folding ---------------------------------------------------------------------------------
    def fold(self, score: np.ndarray, y: np.ndarray, w: np.ndarray | None) -> "RunningBins | None":
        """A new accumulator with validated rows added (``score`` finite float64, ``y`` int64
        0/1, ``w`` float64 >= 0 or None); ``self`` is unchanged. None: the table would exceed
        :data:`MAX_TABLE_BYTES`, or a weight is not finite and >= 0 (the caller folds as before)."""
        got, done = self._fold(score, y, w, False)
        return got if done == score.shape[0] else None

    def fold_owned(self, score: np.ndarray, y: np.ndarray, w: np.ndarray | None) -> "tuple[RunningBins, int]":
        """:meth:`fold` into this accumulator itself when it can (nobody else holds it: not
        :attr:`shared`; ``MetricCollection.update`` under its lock): no copy of the table.
        Returns ``(acc, done)``: ``acc`` (this one or a new one) holds the rows ``:done`` added;
        ``done < len(score)`` when the fold could not go on (the caller folds the rest as before)."""
        return self._fold(score, y, w, not self.shared)

    def _fold(self, score, y, w, own: bool) -> "tuple[RunningBins, int]":
        N = score.shape[0]
        if w is not None and (self.grid is not None or (self.n == 0 and self.dense is None)):
            if self.grid is None:  # no bins: weights on one grid when the batch's are
                count, low, top, bad = grid_of(w)
                if bad >= 0:
                    return self, 0
                if count == 0:
                    return self, N
                E = _grid_for(int(low), int(top))
                out = None
                if E is not None:
                    slots = _first_slots(score, self.capacity)
                    level = self._first_level(score, w, slots)
                    out = RunningBins._built_grid(level, self.capacity, E, slots)
                    if out is None:
                        out = RunningBins._built_grid(level, self.capacity, E, MIN_SLOTS)
            else:
                out = self if own else self._copy(0, 0)
                if out is None:
                    return self, 0
            if out is not None:
                i, failed = out._fold_grid(score, y, w)
                if i == N or failed:  # done, or a table past its bound
                    return out, i
                lim = out._grid_as_limbs()  # a weight off the grid: limbs from here on
                if lim is None:
                    return out, i
                got, done = lim._fold(score[i:], y[i:], w[i:], True)
                return got, i + done
        src = self
        if self.grid is not None:  # unweighted rows into grid sums: limbs
            src = self._grid_as_limbs()
            if src is None:
                return self, 0
            own = True
        return src._fold_limbs(score, y, w, own)

    def _first_level(self, score: np.ndarray, w: np.ndarray, slots: int) -> int:
        """The level of a first table for the rows of weight > 0 of a batch: the canonical level
        of the batch itself when its rows seem to have more distinct scores than ``capacity``
        (a table of that many slots was estimated: one sort of the batch's keys instead of
        folding ``capacity`` rows at this level and raising it); else this level. The batch's
        rows are examples of the data, so that level is not above the final one."""
        if score.shape[0] <= self.capacity or int(slots * LOAD) < self.capacity:
            return self.level
        keys = score_keys(score[w > 0]) >> self.level
        if keys.shape[0] <= self.capacity:
            return self.level
        keys.sort()
        per_shift = np.zeros(65, dtype=np.int64)
        if int(count_splits(keys, per_shift)) <= self.capacity:
            return self.level
        return self.level + shift_of_splits(per_shift, self.level, self.capacity)

    def _fold_limbs(self, score, y, w, own: bool) -> "tuple[RunningBins, int]":
        """:meth:`_fold` into packed counts or limbs."""
        N = score.shape[0]
        W, qbase = self.W, self.qbase
        if w is not None:
            count, qlo, qhi, bad = scan_weights(w)
            if bad >= 0:
                return self, 0
            if count == 0:
                return self, N
            need = (int(qlo), int(qhi) + 3)  # a row adds to limbs q..q+2; one headroom limb
        else:
            if score.shape[0] == 0:
                return self, N
            # limbs: a count adds 1 to limb ONE_LIMB (its carries and a headroom limb above)
            need = None if W == 0 and self.rows + score.shape[0] < PACKED_ROWS else (ONE_LIMB, ONE_LIMB + 2)
        if need is not None:
            lo, hi = need if W == 0 else (min(need[0], qbase), max(need[1], qbase + W - 1))
            if W == 0 and self.n:  # packed counts become limbs
                lo, hi = min(lo, ONE_LIMB), max(hi, ONE_LIMB + 2)
            W, qbase = hi - lo + 1, lo
        src = self
        if self.dense is not None and (W != 0 or need is not None):  # limbs: from the hash form
            src = self._as_hash()
            if src is None:
                return self, 0
            own = True
        if self.n == 0:  # nothing to copy: a table sized for the batch's bins
            out = RunningBins._built(_NO_KEYS, _NO_PAYLOAD, self.level, self.capacity, W, qbase, _first_slots(score, self.capacity))
            if out is None:
                out = RunningBins._built(_NO_KEYS, _NO_PAYLOAD, self.level, self.capacity, W, qbase)
        elif own and (src.dense is not None or (W == src.W and (W == 0 or qbase == src.qbase))):
            out = src  # nobody else holds it: folded in place
        else:
            out = src._copy(W, qbase)
        if out is None:
            return self, 0
        if out._fold_in_place(score, y, w) is None:
            return out, out.at
        if out.W == 0 and out.dense is None:
            out._to_dense()
        return out, N

    def _fold_in_place(self, score, y, w) -> "RunningBins | None":
        """Fold into this (unpublished) accumulator; returns it, or None (see :meth:`fold`)."""
        bits = score.view(np.int64)
        has_w = w is not None
        wk = w if has_w else _NO_W
        N = score.shape[0]
        i = 0
        while i < N:
            if self.dense is not None:  # packed counts, unweighted rows
                C, off, codes = self.dense
                at, n, status = fold_dense(C, off, self.level, (np.int64(1) << (52 - self.level)) - 1, bits, y, i, N, self.capacity, self.n)
                self.rows += int(at) - i
                self.n, i = int(n), int(at)
                if i < N and not (status == 1 and self._add_binade(score[i : i + 1])) and not self._to_hash():
                    self.at = i
                    return None  # (a new binade past the dense bound, or capacity: on in the hash form)
                continue
            stop = N
            if self.W:
                if self.rows >= CARRY_ROWS:
                    self._carry_table()
                stop = min(N, i + CARRY_ROWS - self.rows)
            S = self.table.shape[0]
            limit = min(self.capacity, int(S * LOAD))
            if self.W == 0 and not has_w:
                at, n, key = fold_counts(self.table, _shift(S), self.level, bits, y, i, stop, limit, self.n)
            else:
                at, n, key = fold_rows(self.table, _shift(S), self.W, self.qbase, self.level, bits, y, wk, wk.view(np.int64), has_w, i, stop, limit, self.n)
            self.rows += int(at) - i  # packed counts: unweighted, every row counted
            self.n = int(n)
            i = int(at)
            if i == stop:
                continue
            if self.n >= self.capacity:
                if not self._raise_level(bits, wk, has_w, i, stop):
                    self.at = i
                    return None
            elif not self._grow():
                self.at = i
                return None
        self.at = N
        return self

    # -- weights on one grid ---------------------------------------------------------------------
    @classmethod
    def grid_of_bins(cls, keys: np.ndarray, level: int, capacity: int, limbs: tuple, w: np.ndarray) -> "RunningBins | None":
        """From canonical bins (``limbs`` as :meth:`of_bins`) about to fold the weights ``w``: a
        grid table when the sums and the weights fit one grid (see :func:`_grid_for`; the sums
        below ``2**(E + 120)``), else None (limbs: :meth:`of_bins`)."""
        count, low, top, bad = grid_of(w)
        if bad >= 0 or count == 0:
            return None
        D0, e0, D1, e1 = (np.ascontiguousarray(x, dtype=np.int64) if isinstance(x, np.ndarray) else int(x) for x in limbs)
        spans = [limbs_span(D, e) for D, e in ((D0, e0), (D1, e1)) if D.shape[1]]
        slow = min([int(low)] + [int(a) for a, _ in spans])
        stop = max([-(1 << 40)] + [int(b) for _, b in spans])
        E = _grid_for(slow, int(top))
        if E is None or stop - E > 120:
            return None
        m = keys.shape[0]
        out = cls._built_grid(level, capacity, E, _slots_for(m))
        if out is None:
            return None
        P = np.zeros((m, 4), dtype=np.int64)
        for lab, (D, e) in enumerate(((D0, e0), (D1, e1))):
            if D.shape[1] and not limbs_to_grid(D, e, E, P, lab):
                return None
        if m:
            insert_grid(out.table, out.hi, _shift(out.table.shape[0]), np.ascontiguousarray(keys, dtype=np.int64), P)
        out.n = m
        return out

    @classmethod
    def _built_grid(cls, level: int, capacity: int, E: int, slots: int) -> "RunningBins | None":
        """An empty grid table (weights multiples of ``2**E``) of ``slots`` slots."""
        if slots * 5 * 8 > MAX_TABLE_BYTES:
            return None
        t = _take((slots, 3))
        t[:, 0] = EMPTY
        t[:, 1:] = 0
        hi = _take((slots, 2))
        hi[:] = 0
        out = cls(level, capacity, t, 0)
        out.grid, out.hi = int(E), hi
        return out

    def _fold_grid(self, score, y, w) -> tuple[int, bool]:
        """Fold into this (unpublished) grid table; ``(row, failed)``: ``row`` the rows folded
        (all of them, or the first whose weight is off the grid), ``failed`` a table past its
        bound (the rows before ``row`` are folded)."""
        bits = score.view(np.int64)
        scale = math.ldexp(1.0, -self.grid)
        N = score.shape[0]
        i = 0
        while i < N:
            if self.dense is not None:
                C, off, codes = self.dense
                lowmask = (np.int64(1) << (52 - self.level)) - 1
                at, n, status = fold_dense_grid(C, self.hi, off, self.level, lowmask, bits, y, w, scale, i, N, self.capacity, self.n)
                self.n, i = int(n), int(at)
                if status == 0 or status == 1:
                    break
                if status == 2 and self.n >= self.capacity and self._raise_dense_grid(bits, w, i, N):
                    continue
                if not (status == 3 and self._add_binade_grid(score[i : i + 1])) and not self._grid_to_hash():
                    return i, True  # (a new binade past the dense bound, or capacity: on in the hash form)
                continue
            S = self.table.shape[0]
            limit = min(self.capacity, int(S * LOAD))
            at, n, key, status = fold_grid(self.table, self.hi, _shift(S), scale, self.level, bits, y, w, i, N, limit, self.n)
            self.n, i = int(n), int(at)
            if status != 2:
                break
            ok = self._raise_level(bits, w, True, i, N) if self.n >= self.capacity else self._grow()
            if not ok:
                return i, True
        if i == N and self.dense is None:
            self._to_dense_grid()
        return i, False

    def _to_dense_grid(self) -> None:
        """Turn this (unpublished) grid hash into the dense form when it pays (as
        :meth:`_to_dense`: level in [DENSE_LEVEL, 52], at most twice as many cells as slots)."""
        if self.n == 0 or not DENSE_LEVEL <= self.level <= 52 or self.nodense == self.level:
            return
        shift = 52 - self.level
        S = self.table.shape[0]
        if (1 << shift) > 2 * S:
            self.nodense = self.level
            return
        seen = np.zeros(4096, dtype=np.int64)
        cells = int(table_binades(self.table, shift, seen)) << shift
        # room for two more binades (:meth:`_add_binade_grid`): no dense form one binade short
        # of its bound, turned back into the hash at the next batch
        if cells + (2 << shift) > 2 * S or cells * 32 > MAX_TABLE_BYTES:
            self.nodense = self.level
            return
        codes = np.flatnonzero(seen).astype(np.int64)
        codes = np.sort(np.where(codes >= 2048, codes - 4096, codes))  # signed binade codes, ascending
        off = np.full(4096, -1, dtype=np.int64)
        off[codes & 4095] = np.arange(codes.shape[0], dtype=np.int64) << shift
        C = _take((cells, 2))
        C[:] = 0
        Hd = _take((cells, 2))
        Hd[:] = 0
        dense_of_grid(C, Hd, off, shift, self.table, self.hi)
        old, old_hi = self.table, self.hi
        self.table, self.hi, self.dense = None, Hd, (C, off, codes)
        _give(old)
        _give(old_hi)

    def _raise_dense_grid(self, bits: np.ndarray, w: np.ndarray, start: int, stop: int) -> bool:
        """:meth:`_raise_level` in the dense grid form (no hash round trip): the canonical level
        of the bins and of the rows ``start:stop`` still to fold, the cells of each binade added
        ``2**shift`` at a time. False (nothing changed): the new level is past 52 (the hash form
        then raises)."""
        C, off, codes = self.dense
        shift = 52 - self.level
        lowmask = (np.int64(1) << shift) - 1
        keys = np.empty(self.n + stop - start, dtype=np.int64)
        m = missing_dense_grid(C, self.hi, off, self.level, lowmask, bits, w, start, stop, keys[self.n :])
        dense_keys(C, self.hi, off, codes, shift, keys)
        keys = keys[: self.n + m]
        keys.sort()
        per_shift = np.zeros(65, dtype=np.int64)
        count_splits(keys, per_shift)
        s = shift_of_splits(per_shift, self.level, self.capacity)
        if s > shift:
            return False
        per2 = 1 << (shift - s)
        C2 = _take((codes.shape[0] * per2, 2))
        C2[:] = 0
        H2 = _take((codes.shape[0] * per2, 2))
        H2[:] = 0
        n = dense_raise_grid(C, self.hi, off, codes, np.int64(shift), np.int64(s), C2, H2)
        off2 = np.full(4096, -1, dtype=np.int64)
        off2[codes & 4095] = np.arange(codes.shape[0], dtype=np.int64) * per2
        old_hi = self.hi
        self.dense, self.hi, self.level, self.n = (C2, off2, codes), H2, self.level + s, int(n)
        _give(C)
        _give(old_hi)
        return True

    def _add_binade_grid(self, score: np.ndarray) -> bool:
        """Cells for the binade of the score ``score[0]`` in the dense grid form (False: past
        the dense bound)."""
        C, off, codes = self.dense
        shift = 52 - self.level
        code = int(score_keys(score)[0]) >> 52
        cells = C.shape[0] + (1 << shift)
        if cells > 2 * _slots_for(self.capacity) or cells * 32 > MAX_TABLE_BYTES:
            return False
        c = _take((cells, 2))
        c[: C.shape[0]] = C
        c[C.shape[0] :] = 0
        h = _take((cells, 2))
        h[: C.shape[0]] = self.hi
        h[C.shape[0] :] = 0
        off[code & 4095] = C.shape[0]
        old_hi, self.hi = self.hi, h
        self.dense = (c, off, np.sort(np.append(codes, np.int64(code))))
        _give(C)
        _give(old_hi)
        return True

    def _grid_to_hash(self) -> bool:
        """This (unpublished) dense grid form into the hash form."""
        keys, P = self._grid_words()
        C = self.dense[0]
        out = RunningBins._built_grid(self.level, self.capacity, self.grid, _slots_for(max(self.n, min(self.capacity, C.shape[0]))))
        if out is None:
            return False
        if keys.shape[0]:
            insert_grid(out.table, out.hi, _shift(out.table.shape[0]), keys, P)
        old_hi = self.hi
        self.table, self.hi, self.dense, self.nodense = out.table, out.hi, None, self.level
        out.table = out.hi = None
        _give(C)
        _give(old_hi)
        return True

    def _grid_words(self) -> tuple[np.ndarray, np.ndarray]:
        """``(keys, P)``: the bins of a grid form and their (n, 4) ``[lo0, lo1, hi0, hi1]``."""
        keys = np.empty(self.n, dtype=np.int64)
        P = np.empty((self.n, 4), dtype=np.int64)
        if self.dense is not None:
            C, off, codes = self.dense
            dense_grid_entries(C, self.hi, off, codes, 52 - self.level, keys, P)
        else:
            extract_grid(self.table, self.hi, keys, P)
        return keys, P

    def _grid_entries(self) -> tuple[np.ndarray, np.ndarray, int, int]:
        """``(keys, limbs, W, qbase)`` of a grid table's bins in slot order: (n, 2 W) carried
        32-bit limbs from limb index ``qbase``, ``W`` per label."""
        keys, P = self._grid_words()
        p0 = self.grid + OFFSET  # the grid position of 2**grid
        L = np.empty((self.n, 10), dtype=np.int64)
        grid_limbs(P, np.int64(p0 & 31), L)
        return keys, _carry(L, 5), 5, p0 >> 5

    def _grid_as_limbs(self) -> "RunningBins | None":
        """A new accumulator of these grid sums as limbs (``self`` unchanged)."""
        keys, L, W, qbase = self._grid_entries()
        e = qbase - ONE_LIMB
        return RunningBins.of_bins(keys, self.level, self.capacity, None, (L[:, :W], e, L[:, W:], e), _slots_for(self.n))

    # -- the dense form of packed counts ---------------------------------------------------------
    def _to_dense(self) -> None:
        """Turn this (unpublished) hash of packed counts into the dense form when it pays: level
        in [DENSE_LEVEL, 52] and at most twice as many cells as the hash has slots (8 bytes a
        cell, 16 a slot: the dense table is not larger)."""
        if self.n == 0 or self.grid is not None or not DENSE_LEVEL <= self.level <= 52 or self.nodense == self.level:
            return
        shift = 52 - self.level
        S = self.table.shape[0]
        if (1 << shift) > 2 * S:
            self.nodense = self.level
            return
        seen = np.zeros(4096, dtype=np.int64)
        cells = int(table_binades(self.table, shift, seen)) << shift
        if cells > 2 * S:
            self.nodense = self.level
            return
        codes = np.flatnonzero(seen).astype(np.int64)
        codes = np.sort(np.where(codes >= 2048, codes - 4096, codes))  # signed binade codes, ascending
        off = np.full(4096, -1, dtype=np.int64)
        off[codes & 4095] = np.arange(codes.shape[0], dtype=np.int64) << shift
        C = _take((cells,))
        C[:] = 0
        dense_of_table(C, off, shift, self.table)
        old, self.table, self.dense = self.table, None, (C, off, codes)
        _give(old)

    def _dense_slots(self) -> int:
        return _slots_for(max(self.n, min(self.capacity, self.dense[0].shape[0])))

    def _as_hash(self) -> "RunningBins | None":
        """A new accumulator of these bins in the hash form (``self`` unchanged)."""
        keys, P = self._entries()
        out = RunningBins._built(keys, P, self.level, self.capacity, 0, 0, self._dense_slots(), rows=self.rows)
        if out is not None:
            out.nodense = self.level  # it was dense: the caller needs the hash (limbs)
        return out

    def _to_hash(self) -> bool:
        """This (unpublished) dense form into the hash form."""
        got = self._as_hash()
        if got is None:
            return False
        C = self.dense[0]
        self.table, self.dense, self.nodense = got.table, None, self.level
        got.table = None
        _give(C)
        return True

    def _add_binade(self, score: np.ndarray) -> bool:
        """Cells for the binade of the score ``score[0]`` (False: past the dense bound)."""
        C, off, codes = self.dense
        shift = 52 - self.level
        code = int(score_keys(score)[0]) >> 52
        cells = C.shape[0] + (1 << shift)
        if cells > 2 * _slots_for(self.capacity):
            return False
        c = _take((cells,))
        c[: C.shape[0]] = C
        c[C.shape[0] :] = 0
        off[code & 4095] = C.shape[0]
        self.dense = (c, off, np.sort(np.append(codes, np.int64(code))))
        _give(C)
        return True

    def _carry_table(self) -> None:
        if self.W:
            carry_table(self.table, self.W)
            self.rows = 0

    def _entries(self) -> tuple[np.ndarray, np.ndarray]:
        """``(keys, payload)`` of the occupied slots, ascending by key (copies; limbs carried)."""
        if self.grid is not None:
            keys, P, _, _ = self._grid_entries()
            if self.dense is not None:
                return keys, P  # ascending already
            order = np.argsort(keys)
            out = np.empty_like(P)
            gather_rows(P, order, out)
            return keys[order], out
        if self.dense is not None:
            C, off, codes = self.dense
            keys = np.empty(self.n, dtype=np.int64)
            P = np.empty((self.n, 1), dtype=np.int64)
            dense_entries(C, off, codes, 52 - self.level, keys, P)
            return keys, P
        t = self.table
        keys = np.empty(self.n, dtype=np.int64)
        P = np.empty((self.n, t.shape[1] - 1), dtype=np.int64)
        extract(t, keys, P)
        order = np.argsort(keys)
        keys = keys[order]
        out = np.empty_like(P)
        gather_rows(P, order, out)
        P = out
        if self.W:
            _carry(P, self.W)
        return keys, P

    def _empty_table(self, slots: int) -> np.ndarray | None:
        cols = self.table.shape[1]
        if slots * (cols + (2 if self.grid is not None else 0)) * 8 > MAX_TABLE_BYTES:
            return None
        t = _take((slots, cols))
        t[:, 0] = EMPTY
        t[:, 1:] = 0
        return t

    def _grow(self) -> bool:
        """Double the table (the same bins)."""
        t = self._empty_table(2 * self.table.shape[0])
        if t is None:
            return False
        self._rehash(0, t)
        return True

    def _rehash(self, shift: int, t: np.ndarray) -> int:
        """Every bin ``key >> shift`` into the empty table ``t`` (then this one's); returns the bins."""
        if self.grid is not None:
            hi = _take((t.shape[0], 2))
            hi[:] = 0
            n = rehash_grid(self.table, self.hi, shift, t, hi, _shift(t.shape[0]))
            old_hi, self.hi = self.hi, hi
            _give(old_hi)
        else:
            self._carry_table()
            n = rehash(self.table, shift, t, _shift(t.shape[0]), 0, False)
        old, self.table = self.table, t
        _give(old)
        return int(n)

    def _raise_level(self, bits: np.ndarray, w: np.ndarray, has_w: bool, start: int, stop: int) -> bool:
        """Raise the level to the canonical one of the bins and of the rows ``start:stop`` still
        to fold (weight > 0): the bins and the first of those rows exceed ``capacity`` at this
        level. These are examples of the data, so the level is not above the final canonical
        one, and the rest of the batch folds without another raise. :func:`canonical_shift` of
        the sorted bins and the rows' new bins (:func:`missing_keys`), then one rehash: coarser
        bins add their counts or carried limbs (below 2**32 each, so sums of at most
        ``capacity`` of them stay far below 2**62)."""
        t = self.table
        keys = np.empty(self.n + stop - start, dtype=np.int64)
        m = missing_keys(t, _shift(t.shape[0]), bits, w, has_w, self.level, start, stop, keys[self.n :])
        keys = keys[: self.n + m]
        extract(t, keys, _NO_PAYLOAD)
        keys.sort()
        per_shift = np.zeros(65, dtype=np.int64)
        count_splits(keys, per_shift)
        shift = shift_of_splits(per_shift, self.level, self.capacity)
        t = self._empty_table(self.table.shape[0])
        if t is None:
            return False
        self.n = self._rehash(shift, t)
        self.level += shift  # limbs: sums of at most capacity <= 2**26 carried limbs, below 2**58, so rows
        return True  # since the carry (0) may add up to CARRY_ROWS * 2**33 more and stay below 2**62

    # -- observing -------------------------------------------------------------------------------
    def grid_bins(self) -> "tuple[np.ndarray, int, tuple[np.ndarray, int], np.ndarray | None] | None":
        """:meth:`bins` of weights on one grid, with the sums already rounded: ``(keys, level,
        limbs, values)``, ``values`` (2 m,) float64, entry ``2 bin + label``, each 128-bit sum
        times ``2**grid`` correctly rounded (:func:`round_grid`: no canonical limbs built), or
        None when a sum is not a normal float (then the limbs are rounded). None when the bins
        are not on a grid."""
        if self.grid is None:
            return None
        keys, P = self._grid_words()
        if self.dense is None:
            order = np.argsort(keys)
            out = np.empty_like(P)
            gather_rows(P, order, out)
            keys, P = keys[order], out
        m = keys.shape[0]
        values: np.ndarray | None = np.empty(2 * m)
        scale = math.ldexp(1.0, self.grid) if -1022 <= self.grid <= 1023 else 0.0
        if not round_grid(P, np.int64(self.grid), scale, values):
            values = None
        p0 = self.grid + OFFSET  # the grid position of 2**grid
        L = np.empty((m, 10), dtype=np.int64)
        grid_limbs(P, np.int64(p0 & 31), L)  # raw limbs below 2**33: canonicalised if read
        return keys, self.level, (L.reshape(2 * m, 5), (p0 >> 5) - ONE_LIMB), values

    def bins(self) -> tuple[np.ndarray, int, np.ndarray, tuple[np.ndarray, int] | None]:
        """``(keys, level, counts, limbs)``: the canonical bins, ascending; ``counts`` (m, 2)
        int64 of labels (0, 1) when unweighted (``limbs`` None), else ``limbs`` ``(D, exp)`` of
        the (2 m,) exact sums, entry ``2 bin + label`` (``counts`` None)."""
        keys, P = self._entries()
        m = keys.shape[0]
        if self.grid is not None:
            return keys, self.level, None, (P.reshape(2 * m, 5), ((self.grid + OFFSET) >> 5) - ONE_LIMB)
        if self.W == 0:
            return keys, self.level, np.concatenate((P & _MASK, P >> 32), axis=1), None
        return keys, self.level, None, (P.reshape(2 * m, self.W), self.qbase - ONE_LIMB)


_NO_W = np.zeros(0)
_NO_PAYLOAD = np.zeros((0, 0), dtype=np.int64)
_NO_KEYS = np.zeros(0, dtype=np.int64)


# ---------------------------------------------------------------------------------------------
_running = threading.local()


@contextmanager
def running_folds(in_place: bool = False) -> Iterator[None]:
    """Within the block, a score distribution's ``fold`` returns a running state (raw bins,
    canonicalised where observed): what ``MetricCollection.update`` folds into its states.
    Elsewhere (engines folding per-slice pieces) folds build canonical states as before.
    ``in_place``: the states folded are held by nobody else (``MetricCollection.update`` under
    its lock, on states it has not handed out: :func:`owned`), so an accumulator that is not
    :attr:`~RunningBins.shared` is folded in place (:meth:`RunningBins.fold_owned`): the state
    folded must not be used afterwards."""
    outer = getattr(_running, "on", False), getattr(_running, "own", False)
    _running.on, _running.own = True, in_place
    try:
        yield
    finally:
        _running.on, _running.own = outer


def folding_in_place() -> bool:
    """Whether this thread is in ``running_folds(in_place=True)``."""
    return getattr(_running, "own", False)


def running_enabled(has_bins: bool = True) -> bool:
    """Whether a fold may start a running accumulator: in :func:`running_folds`, with the kernels
    ready. A state without bins (the first update) starts one only when the compiled kernels are
    loaded already: a single ``update`` then ``compute`` does not import numba for it."""
    if not getattr(_running, "on", False):
        return False
    if not has_bins and not (_K._loaded and _K.AVAILABLE):
        return False
    return _kernels()
