"""Score keys and canonical binning: the numpy core of the score distribution states.

Every finite float64 score ``s`` maps to an order-preserving int64 *key* (:func:`score_keys`); a
*level* ``L`` groups keys that agree after dropping ``L`` low bits (the bin of ``s`` at level ``L``
is ``key(s) >> L``). The canonical bins of a set of examples are the distinct bins at the smallest
level at which at most ``capacity`` remain; :func:`bin_scores` builds them from examples,
:func:`merge_bins` from two canonical sets, :func:`fold_bins` adds examples to a canonical set,
:func:`canonical_bins` raises the level of given bins. Weights are ``(m, L)`` float64 arrays of the
summed weight per bin and label. See :mod:`mergeable_metrics.states.score_distribution` for the states built on these
(and the full account of levels and certified bounds).

Folding speed: batches of more than ``_SORT_MAX`` rows are binned without sorting, by chunked
dense histograms (see :func:`_bins_by_histogram`); see ``benchmarks/bench_auc.py``. Rows folded
into bins already known (a compressed state's, level <= 52) are looked up in a dense table of
those bins (:class:`BinLookup`, :func:`fold_bins_by_lookup`) where the table costs less than
sorting the rows; only rows in no known bin are sorted.

This module imports numpy only; it knows nothing of states, batches or metrics.
"""

from __future__ import annotations

import numpy as np

MAX_LEVEL = 63

_LOW63 = np.int64(0x7FFF_FFFF_FFFF_FFFF)
#: key of the largest finite float64; finite keys lie in [-KEY_MAX_FINITE, KEY_MAX_FINITE]
KEY_MAX_FINITE = 0x7FEF_FFFF_FFFF_FFFF

# Tuning of the fold (see ScoreDistributionState.from_batch). Batches of at most _SORT_MAX rows are
# binned by sorting; larger ones by dense histograms of at most _TABLE cells per label, processed in
# chunks of _CHUNK rows so that temporaries stay in cache.
_SORT_MAX = 1 << 17
_TABLE = 1 << 18
_CHUNK = 1 << 20


# ---------------------------------------------------------------------------------------------
def score_keys(scores: np.ndarray) -> np.ndarray:
    """Order-preserving int64 keys of finite float64 scores.

    Args:
        scores: (N,) float64, finite.

    Returns:
        (N,) int64 with ``key(a) < key(b)`` iff ``a < b`` and ``key(-0.0) == key(0.0) == 0``;
        ``key(-x) == -key(x)``.
    """
    b = np.ascontiguousarray(scores, dtype=np.float64).view(np.int64)
    sign = b >> 63  # 0 for +, -1 for -
    k = sign & _LOW63
    np.bitwise_xor(k, b, out=k)
    k -= sign
    return k


def keys_to_scores(keys: np.ndarray) -> np.ndarray:
    """Inverse of :func:`score_keys` for keys of finite floats: (M,) int64 -> (M,) float64."""
    keys = np.asarray(keys, dtype=np.int64)
    mag = np.abs(keys).view(np.float64)
    return np.where(keys < 0, -mag, mag)


def bin_lower_scores(keys: np.ndarray, level: int) -> np.ndarray:
    """The lowest finite float64 of each bin ``keys`` at ``level``: "score >= that value" selects
    exactly the examples of this bin and of every higher bin. At level 0 it is the bin's score."""
    keys = np.asarray(keys, dtype=np.int64)
    if level == 0:
        return keys_to_scores(keys)
    low = np.maximum(keys << np.int64(level), -KEY_MAX_FINITE)
    return keys_to_scores(low)


def bin_upper_scores(keys: np.ndarray, level: int) -> np.ndarray:
    """The highest finite float64 of each bin ``keys`` at ``level``."""
    keys = np.asarray(keys, dtype=np.int64)
    if level == 0:
        return keys_to_scores(keys)
    # keys << level + 2**level - 1 cannot overflow: |keys << level| <= KEY_MAX_FINITE + 2**level - 1
    high = np.minimum((keys << np.int64(level)) + np.int64((1 << level) - 1), KEY_MAX_FINITE)
    return keys_to_scores(high)


def _coarsen(keys: np.ndarray, weights: np.ndarray, shift: int):
    """Bins ``keys >> shift`` with their summed (m, L) weights (``keys`` ascending and distinct)."""
    if shift == 0 or keys.size == 0:
        return keys, weights
    k = keys >> np.int64(shift)
    starts = np.flatnonzero(np.concatenate(([True], k[1:] != k[:-1])))
    if starts.size == k.size:
        return k, weights
    return k[starts], np.add.reduceat(weights, starts, axis=0)


#: The canonical bins of ascending distinct keys (see :func:`_canonical`).
def canonical_bins(keys: np.ndarray, weights: np.ndarray, level: int, capacity: int):
    """``(keys, weights, level)``: ascending distinct bins at ``level`` (with (m, L) weights)
    raised to the smallest level at which at most ``capacity`` remain: the canonical state's."""
    return _canonical(keys, weights, level, capacity)


def _union(ka, wa, kb, wb):
    """Union of two ascending distinct key arrays with their (m, L) weights added on common keys.

    Symmetric bit for bit (IEEE addition is commutative), so ``merge(a, b) == merge(b, a)``.
    Works column by column (1-D gathers and scatters are about twice as fast as row ones); the
    weights returned are an (m, L) view of an (L, m) array."""
    if ka.size < kb.size:
        ka, wa, kb, wb = kb, wb, ka, wa
    if kb.size == 0:
        return ka, wa
    at = np.searchsorted(ka, kb)  # ascending, since kb is
    common = ka[np.minimum(at, ka.size - 1)] == kb
    new = ~common
    n_new = int(np.count_nonzero(new))
    if n_new == 0:
        keys, ia, add_at, pos = ka, None, at, None
    else:
        # a new key goes after the ka keys below it: output position = insertion point + rank
        pos = at[new] + np.arange(n_new, dtype=np.int64)
        from_b = np.zeros(ka.size + n_new, dtype=bool)
        from_b[pos] = True
        ia = np.flatnonzero(~from_b)  # output position of each ka key
        keys = np.empty(ka.size + n_new, dtype=ka.dtype)
        keys[pos] = kb[new]
        keys[ia] = ka
        add_at = ia[at[common]]
    out = np.empty((wa.shape[1], keys.size), dtype=np.result_type(wa, wb))
    for j in range(wa.shape[1]):
        o = out[j]
        if ia is None:
            o[:] = wa[:, j]
        else:
            o[ia] = wa[:, j]
            o[pos] = wb[new, j]
        o[add_at] += wb[common, j] if n_new else wb[:, j]
    return keys, out.T


def _split_shifts(sorted_keys: np.ndarray) -> np.ndarray:
    """For each pair of adjacent ascending distinct keys, the smallest shift at which they fall in
    one bin: the bit length of their XOR (64 when the signs differ: never at shifts <= 63)."""
    x = (sorted_keys[1:] ^ sorted_keys[:-1]).view(np.uint64)
    e = np.frexp(x.astype(np.float64))[1].astype(np.int64)  # bit length, or one more if rounded up
    e = np.minimum(e, 64)
    return e - ((x >> (e - 1).astype(np.uint64)) == 0)


def _canonical(keys: np.ndarray, weights: np.ndarray, level: int, capacity: int):
    """Raise the level of ascending distinct bins to the smallest at which at most ``capacity``
    remain: at shift ``s`` the bins number ``1 + #{adjacent pairs whose split shift > s}``."""
    if keys.size <= capacity:
        return keys, weights, level
    shift = canonical_shift(keys, level, capacity)
    k, w = _coarsen(keys, weights, shift)
    return k, w, level + shift


def canonical_shift(keys: np.ndarray, level: int, capacity: int) -> int:
    """How far the level of more than ``capacity`` ascending distinct bins at ``level`` rises to
    be canonical (>= 1 below level 63; 0 at level 63, whose at most two bins, one per sign, stay
    even at ``capacity`` 1, as the Java fold keeps them): at shift ``s`` the bins number ``1 +
    #{adjacent pairs whose split shift > s}``."""
    return shift_of_splits(np.bincount(_split_shifts(keys), minlength=65), level, capacity)


def shift_of_splits(per_shift: np.ndarray, level: int, capacity: int) -> int:
    """:func:`canonical_shift` from ``per_shift`` (65,): the adjacent pairs of the bins per split
    shift (:func:`_split_shifts`)."""
    remaining = 1 + np.cumsum(per_shift[::-1])[::-1]  # bins at shift s = remaining[s + 1]
    top = MAX_LEVEL - level  # at level 63 there are at most 2 bins (one per sign): no shift, even above capacity 1
    return next((s for s in range(1, top + 1) if s == top or remaining[s + 1] <= capacity), 0)


def bin_scores(score: np.ndarray, y: np.ndarray, w: np.ndarray | None, capacity: int, num_labels: int = 2):
    """The canonical bins of validated examples.

    Args:
        score: (N,) finite float64 scores.
        y: (N,) int64 labels in [0, num_labels).
        w: (N,) float64 weights > 0 (zero weights already removed), or None.
        capacity: maximum number of bins.
        num_labels: number of label values L.

    Returns:
        ``(keys, weights, level)``: (m,) int64 ascending bin keys, (m, L) float64 summed weight per
        bin and label, and the level (the smallest at which at most ``capacity`` bins remain).
    """
    if score.shape[0] <= _SORT_MAX:
        keys, weights, level = *_bins_by_sort(score_keys(score), y, w, num_labels), 0
    else:
        keys, weights, level = _bins_by_histogram(score, y, w, capacity, num_labels)
    return _canonical(keys, weights, level, capacity)


def merge_bins(a: tuple, b: tuple, capacity: int):
    """The canonical bins of the union of two canonical ``(keys, weights, level)`` triples: both
    at the larger level, weights added key by key, the level raised while bins exceed
    ``capacity``."""
    (ka, wa, la), (kb, wb, lb) = a, b
    if kb.size == 0:
        return ka, wa, la
    if ka.size == 0:
        return kb, wb, lb
    level = max(la, lb)
    ka, wa = _coarsen(ka, wa, level - la)
    kb, wb = _coarsen(kb, wb, level - lb)
    k, wts = _union(ka, wa, kb, wb)
    return _canonical(k, wts, level, capacity)


def _runs(sorted_keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(distinct, starts)``: the distinct values of an ascending array and where each run starts."""
    if sorted_keys.size == 0:
        return sorted_keys, np.zeros(0, dtype=np.int64)
    first = np.empty(sorted_keys.size, dtype=bool)
    first[0] = True
    np.not_equal(sorted_keys[1:], sorted_keys[:-1], out=first[1:])
    starts = np.flatnonzero(first)
    return sorted_keys[starts], starts


def _bins_by_sort(keys: np.ndarray, y: np.ndarray, w: np.ndarray | None, num_labels: int = 2):
    """Bins of the keys of a small batch (any level: one bin per distinct key) by sorting.

    Unweighted binary labels: one ``np.sort`` per label and counts from the run lengths (no
    argsort, no inverse). Otherwise one argsort gives each example's bin, and ``np.bincount``
    sums the weights per bin in row order, so the sums do not depend on the sort algorithm.

    Returns:
        ``(keys, weights)``: (m,) int64 ascending distinct keys, (m, L) float64 weight per label.
    """
    if w is None and num_labels == 2:
        if keys.size and int(keys.min()) >= -(1 << 62) and int(keys.max()) < 1 << 62:
            # (key, label) packed in one int64 (keys of level >= 1 always fit): one sort
            code = np.sort((keys << np.int64(1)) | y)
            uc, starts = _runs(code)
            counts = np.diff(np.append(starts, code.size))
            k = uc >> np.int64(1)
            u, kstarts = _runs(k)
            row = np.zeros(k.size, dtype=np.int64)
            row[kstarts[1:]] = 1
            np.cumsum(row, out=row)
            row <<= 1
            row |= uc & 1
            c = np.zeros(2 * u.size)
            c[row] = counts
            return u, c.reshape(u.size, 2)
        pos = y.astype(bool)
        parts = []
        for label, sel in ((0, ~pos), (1, pos)):
            s = np.sort(keys[sel])
            u, starts = _runs(s)
            c = np.zeros((u.size, 2))
            c[:, label] = np.diff(np.append(starts, s.size))
            parts.append((u, c))
        (u0, c0), (u1, c1) = parts
        return _union(u0, c0, u1, c1)
    order = np.argsort(keys)
    u, starts = _runs(keys[order])
    run = np.zeros(keys.size, dtype=np.int64)
    run[starts[1:]] = 1
    np.cumsum(run, out=run)
    inv = np.empty_like(run)
    inv[order] = run
    c = np.bincount(inv * num_labels + y, weights=w, minlength=num_labels * u.size).astype(np.float64, copy=False)
    return u, c.reshape(u.size, num_labels)


def fold_bins(bins: tuple, score: np.ndarray, y: np.ndarray, w: np.ndarray | None, capacity: int, num_labels: int = 2):
    """Canonical ``(keys, weights, level)`` of ``bins`` (canonical) with validated examples added.

    Equal to ``merge_bins(bins, bin_scores(score, y, w, capacity, num_labels), capacity)`` (bit for
    bit with integer weights), but a small batch is binned directly at the level of ``bins``: the
    union's canonical level is never below it, so one sort of ``keys >> level`` and one union
    replace exact binning, coarsening and a merge. Large batches use :func:`bin_scores`.

    Args:
        bins: ``(keys, weights, level)``: (m,) int64 ascending keys, (m, L) float64 weights, level.
        score: (N,) finite float64 scores; y: (N,) int64 labels in [0, L); w: (N,) float64 > 0
            weights or None; capacity: maximum bins; num_labels: L.

    Returns:
        ``(keys, weights, level)`` of the union, canonical for ``capacity``.
    """
    keys, weights, level = bins
    if score.shape[0] > _SORT_MAX or keys.size == 0:
        return merge_bins(bins, bin_scores(score, y, w, capacity, num_labels), capacity)
    kb, wb = _bins_by_sort(score_keys(score) >> np.int64(level), y, w, num_labels)
    k, wts = _union(keys, weights, kb, wb)
    return _canonical(k, wts, level, capacity)


def _key_range(score: np.ndarray) -> tuple[int, int, bool]:
    """(min key, max key, all scores have a clear sign bit) without materialising the keys."""
    bits = score.view(np.int64)
    bmin = int(bits.min())
    if bmin >= 0:  # no negative numbers and no -0.0: the raw bits are the keys
        return bmin, int(bits.max()), True
    kmin = int(score_keys(np.array([score.min()]))[0])
    bmax = int(bits.max())
    kmax = bmax if bmax >= 0 else int(score_keys(np.array([score.max()]))[0])
    return kmin, kmax, False


class _Grid:
    """A dense table of the bins at one level, over the key range that holds the data.

    ``dense``: one contiguous range of bins ``[base, base + size)``. ``binades``: the bins of a
    set of binades (keys sharing ``key >> 52``, i.e. sign and exponent), ``2**s`` bins each, plus
    one overflow binade for keys outside the set (which must stay empty to be trusted). The second
    form keeps the table small when scores straddle zero or span many empty exponents (logits).
    """

    def __init__(self, level: int, base: int | None = None, size: int | None = None, binades: np.ndarray | None = None):
        self.level = level
        if binades is None:
            self.base, self.size, self.binades = int(base), int(size), None
        else:
            self.binades = binades
            self.s = 52 - level
            self.mask = np.int64((1 << self.s) - 1)
            # rank of each binade code (key >> 52, in [-2048, 2048)), indexed by the code's low
            # 12 bits (the unsigned key >> 52); unknown binades go to the overflow binade
            rank = np.full(4096, binades.size, dtype=np.int64)
            rank[binades & 4095] = np.arange(binades.size, dtype=np.int64)
            code = np.arange(4096, dtype=np.int64)
            code[2048:] -= 4096
            self.rank = rank
            # cell = (key >> level) + ((rank - code) << s): moves each binade's 2**s bins to its slot
            self.offset = (rank - code) << np.int64(self.s)
            self.size = (binades.size + 1) << self.s

    def index(self, k: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """(n,) int64 cell of each key (written into ``out`` if given)."""
        lv = np.int64(self.level)
        if self.binades is None:
            o = np.right_shift(k, lv, out=out)
            o -= np.int64(self.base)
            return o
        e = k.view(np.uint64) >> np.uint64(52)
        off = np.take(self.offset, e)
        o = np.right_shift(k, lv, out=out)
        o += off
        return o

    def cell_keys(self, cells: np.ndarray) -> np.ndarray:
        """Bin keys at ``level`` of cell numbers (not of the overflow binade)."""
        if self.binades is None:
            return cells.astype(np.int64) + np.int64(self.base)
        c = cells.astype(np.int64)
        return (self.binades[c >> np.int64(self.s)] << np.int64(self.s)) | (c & self.mask)


def _first_grid(score: np.ndarray, table: int) -> tuple[_Grid, bool]:
    """Choose the first table: the finest level whose table has at most ``table`` cells, either
    over the whole key range (dense) or over the binades seen in a strided sample (cheaper when the
    key range spans many empty exponents). Returns ``(grid, raw)`` with ``raw`` True when the raw
    float bits are the keys (no negative scores)."""
    n = score.shape[0]
    sample = score[:: max(1, n // 16384)]
    sk = score_keys(sample)
    sb = np.unique(sk >> np.int64(52))
    s_bin = min(52, (table // (sb.size + 1)).bit_length() - 1)
    level_bin = 52 - s_bin
    span = int(sk.max()) - int(sk.min()) + 1
    level_dense = max(0, (span - 1).bit_length() - table.bit_length() + 1)
    if level_dense <= level_bin + 1:
        kmin, kmax, raw = _key_range(score)
        level = 0
        while (kmax >> level) - (kmin >> level) + 1 > table:
            level += 1
        return _Grid(level, base=kmin >> level, size=(kmax >> level) - (kmin >> level) + 1), raw
    raw = int(score.view(np.int64).min()) >= 0
    return _Grid(level_bin, binades=sb), raw


def _keys_into(score: np.ndarray, out: np.ndarray, tmp: np.ndarray) -> np.ndarray:
    """:func:`score_keys` of a chunk into preallocated buffers (no allocation)."""
    b = score.view(np.int64)
    sign = np.right_shift(b, np.int64(63), out=tmp)
    k = np.bitwise_and(sign, _LOW63, out=out)
    k ^= b
    k -= sign
    return k


def _histogram(score: np.ndarray, raw: bool, y: np.ndarray, w: np.ndarray | None, grid: _Grid, num_labels: int = 2):
    """(size, L) counts (or weights) of (cell, label), in chunks so temporaries stay in cache.

    Returns ``(counts, overflow)``: ``overflow`` is None, or for a binade grid whose sample missed
    some binades, ``(keys, y, w)`` of the examples outside the table (binned by the caller).
    """
    n = score.shape[0]
    nl = num_labels
    counts = np.zeros(nl * grid.size, dtype=np.float64 if w is not None else np.int64)
    chunk = min(n, _CHUNK)
    buf = np.empty(chunk, dtype=np.int64)
    kbuf = np.empty(chunk, dtype=np.int64) if not raw else None
    tbuf = np.empty(chunk, dtype=np.int64) if not raw else None
    bits = score.view(np.int64)
    first_overflow = None if grid.binades is None else np.int64(grid.binades.size << grid.s)
    over = []
    for i in range(0, n, chunk):
        j = min(n, i + chunk)
        k = bits[i:j] if raw else _keys_into(score[i:j], kbuf[: j - i], tbuf[: j - i])
        o = grid.index(k, out=buf[: j - i])
        if first_overflow is not None and o.max() >= first_overflow:
            mask = o >= first_overflow
            over.append((k[mask].copy(), y[i:j][mask], None if w is None else w[i:j][mask]))
        if nl == 2:
            o <<= 1
        else:
            o *= nl
        o += y[i:j]
        if w is None:
            counts += np.bincount(o, minlength=nl * grid.size)
        else:
            counts += np.bincount(o, weights=w[i:j], minlength=nl * grid.size)
    overflow = None
    if over:
        overflow = (
            np.concatenate([a for a, _, _ in over]),
            np.concatenate([b for _, b, _ in over]),
            None if w is None else np.concatenate([c for _, _, c in over]),
        )
    return counts.reshape(grid.size, nl), overflow


def _occupied(counts: np.ndarray) -> np.ndarray:
    """Indices of the rows of (size, L) non-negative counts that are not all zero."""
    if counts.shape[1] == 2:
        if counts.dtype == np.int64:
            return np.flatnonzero(counts[:, 0] | counts[:, 1])
        return np.flatnonzero(counts[:, 0] + counts[:, 1])
    return np.flatnonzero(counts.sum(axis=1))


def _bins_by_histogram(score: np.ndarray, y: np.ndarray, w: np.ndarray | None, capacity: int, num_labels: int = 2):
    """Bins of a large batch at a level no coarser than canonical (the caller coarsens).

    Pass 1 (after a strided sample chooses the table) bins every example at the finest level
    whose table has at most ``max(2**18, 4 * capacity)`` cells, in one chunked ``bincount`` of
    ``2 * cell + label``. If more than ``capacity`` cells are occupied, the canonical level is
    above this one and these bins are returned (continuous scores: one pass). Otherwise the
    canonical level may be finer, so exact (level-0) bins are built: the exact key range of each
    occupied cell (``np.minimum.at`` / ``np.maximum.at``) shows which cells hold a single distinct
    score (exact already: typical of discrete scores); only the examples of the other cells are
    sorted.
    """
    table = max(_TABLE, 4 * capacity)
    grid, raw = _first_grid(score, table)
    nl = num_labels
    counts, overflow = _histogram(score, raw, y, w, grid, nl)
    occupied = _occupied(counts)
    level = grid.level
    if overflow is not None:
        # the sample missed some binades: bin their (few) examples exactly at `level` by sorting
        ko, yo, wo = overflow
        u, co = _bins_by_sort(ko >> np.int64(level), yo, wo, nl)
        occupied = occupied[(occupied >> grid.s) < grid.binades.size]
        bin_keys = np.concatenate((grid.cell_keys(occupied), u))
        c = np.concatenate((counts[occupied].astype(np.float64), co.astype(np.float64)))
        order = np.argsort(bin_keys, kind="stable")
        bin_keys, c = bin_keys[order], c[order]
        where = np.empty(order.size, dtype=np.int64)
        where[order] = np.arange(order.size, dtype=np.int64)  # position of each unsorted bin
    else:
        bin_keys, c = grid.cell_keys(occupied), counts[occupied].astype(np.float64)
    m = bin_keys.size
    if m > capacity or level == 0:
        return bin_keys, c, level
    # --- refinement: the canonical level is <= `level`
    keys = score.view(np.int64) if raw else score_keys(score)
    rank = np.zeros(grid.size, dtype=np.int64)
    gi = grid.index(keys)
    if overflow is None:
        rank[occupied] = np.arange(m, dtype=np.int64)
        cidx = rank[gi]
    else:
        rank[occupied] = where[: occupied.size]
        cidx = rank[np.minimum(gi, grid.size - 1)]
        over = gi >= grid.binades.size << grid.s
        cidx[over] = np.searchsorted(bin_keys, keys[over] >> np.int64(level))
    # exact key range of every occupied bin: a bin holding one distinct score is exact as it is;
    # the examples of the other bins are binned exactly by sorting their keys
    lo = np.full(m, np.iinfo(np.int64).max, dtype=np.int64)
    hi = np.full(m, np.iinfo(np.int64).min, dtype=np.int64)
    np.minimum.at(lo, cidx, keys)
    np.maximum.at(hi, cidx, keys)
    single = lo == hi
    k1, c1 = lo[single], c[single]
    multi = ~single[cidx]
    if not multi.any():
        return k1, c1, 0
    k2, c2 = _bins_by_sort(keys[multi], y[multi], None if w is None else w[multi], nl)
    return _union(k1, c1, k2, c2) + (0,)


# ---------------------------------------------------------------------------------------------
# Folding into bins already known: a dense lookup table instead of a sort and a union
#: most cells of one part of a :class:`BinLookup` (its binades times the bins per binade)
LOOKUP_CELLS = 1 << 20
#: a lookup is used when its table has at most this many cells per row looked up (building the
#: table costs about what a row's lookup does; below that, sorting the rows is cheaper)
LOOKUP_CELLS_PER_ROW = 2


def lookup_cells(keys: np.ndarray, level: int) -> int | None:
    """Cells of the :class:`BinLookup` table of the bins ``keys`` (ascending, distinct) at
    ``level``: the binades (sign and exponent, ``key >> 52``) they occupy times ``2**(52 -
    level)``; None when there are no keys or the level is above 52 (then a bin spans binades)."""
    if keys.size == 0 or not 0 <= level <= 52:
        return None
    codes = keys >> np.int64(52 - level)
    return int(np.count_nonzero(codes[1:] != codes[:-1]) + 1) << (52 - level)


class BinLookup:
    """Where rows fall among the bins of one or several canonical states (*parts*).

    Each part is ``(keys, level)``: ascending distinct bin keys (``score key >> level``) at a
    level <= 52. A bin of level ``L`` lies inside one binade (``key >> 52``, sign and exponent
    of its scores), which holds ``2**(52 - L)`` bins; the table has one cell per bin of every
    binade a part occupies, holding ``2 * position`` of that bin (positions count the bins of
    all parts in order), or :attr:`miss` (``2 * all bins``: one more bin, that collects the rows
    in no bin of their part). Binades a part does not occupy lead to a block of such cells. A
    row's cell is then two gathers and a few shifts: no sort, no search.

    Attributes:
        starts: (parts + 1,) int64, first position of each part (positions of part ``i`` are
            ``starts[i] .. starts[i + 1] - 1``).
        miss: the table value of a row in no bin of its part.
    """

    __slots__ = ("offsets", "table", "levels", "masks", "starts", "miss")

    def __init__(self, parts: list[tuple[np.ndarray, int]]):
        widest = max(1 << (52 - level) for _, level in parts)
        cells, positions = [], []
        offsets = np.zeros(len(parts) * 4096, dtype=np.int64)  # absent binades: the block at 0
        total, pos, starts = widest, 0, [0]
        for i, (keys, level) in enumerate(parts):
            s = np.int64(52 - level)
            per = 1 << int(s)
            codes = keys >> s  # the binade of each bin
            first = np.flatnonzero(np.concatenate(([True], codes[1:] != codes[:-1])))
            rank = np.zeros(keys.size, dtype=np.int64)
            rank[first[1:]] = 1
            np.cumsum(rank, out=rank)
            offsets[i * 4096 + (codes[first] & 4095)] = total + np.arange(first.size, dtype=np.int64) * per
            cells.append(total + rank * per + (keys & np.int64(per - 1)))
            positions.append(np.arange(pos, pos + keys.size, dtype=np.int64))
            total += first.size * per
            pos += keys.size
            starts.append(pos)
        self.miss = 2 * pos
        self.table = np.full(total, self.miss, dtype=np.int32 if self.miss < 1 << 30 else np.int64)
        self.table[np.concatenate(cells)] = 2 * np.concatenate(positions)
        self.offsets = offsets
        levels = np.array([lv for _, lv in parts], dtype=np.int64)
        masks = (np.int64(1) << (52 - levels)) - 1
        same = bool((levels == levels[0]).all())
        self.levels = levels[0] if same else levels
        self.masks = masks[0] if same else masks
        self.starts = np.array(starts, dtype=np.int64)

    def cells(self, keys: np.ndarray, part: np.ndarray | None = None) -> np.ndarray:
        """(n,) int64 table value of each row: ``2 * position`` of its bin, or :attr:`miss`.

        Args:
            keys: (n,) int64 score keys (:func:`score_keys`) of the rows.
            part: (n,) int64 part of each row; None: every row is of part 0.
        """
        e = keys >> np.int64(52)
        e &= np.int64(4095)
        if part is not None:
            e |= part << np.int64(12)
        o = self.offsets[e]
        if part is None or self.levels.ndim == 0:
            low = keys >> self.levels
            low &= self.masks
        else:
            low = keys >> self.levels[part]
            low &= self.masks[part]
        low += o
        return self.table[low]


def fold_found(keys: np.ndarray, weights: np.ndarray, level: int, found: np.ndarray, new_keys: np.ndarray, y_new: np.ndarray, capacity: int):
    """Canonical ``(keys, weights, level)`` of unweighted binary bins with rows added: ``found``
    (m, 2) int64 counts of the rows in the existing bins ``keys``, and the rows in no existing
    bin (``new_keys``: their score keys, ``y_new``: labels). Equal, bit for bit, to
    :func:`fold_bins` of the same rows (counts are integers)."""
    w = weights + found
    if new_keys.size:
        kb, wb = _bins_by_sort(new_keys >> np.int64(level), y_new, None)
        k, w = _union(keys, w, kb, wb)
        return _canonical(k, w, level, capacity)
    return keys, w, level


#: rows per chunk of :func:`fold_bins_by_lookup` (temporaries stay in cache)
LOOKUP_CHUNK = 1 << 16


def fold_bins_by_lookup(bins: tuple, keys: np.ndarray, y: np.ndarray, capacity: int):
    """:func:`fold_bins` of unweighted binary rows (``keys``: their :func:`score_keys`, ``y``:
    int64 labels 0/1) into canonical ``bins`` with integer counts, through a :class:`BinLookup`
    of the bins (rows in existing bins are counted by ``np.bincount``, in chunks of
    :data:`LOOKUP_CHUNK` rows; only the others are sorted); None when the bins' table would be
    too large (:data:`LOOKUP_CELLS`)."""
    k, wts, level = bins
    most = min(LOOKUP_CELLS, LOOKUP_CELLS_PER_ROW * keys.size)
    if k.size > most or keys.size > _SORT_MAX:  # a table has a cell per bin at least
        return None
    cells = lookup_cells(k, level)
    if cells is None or cells > most:
        return None
    lookup = BinLookup([(k, level)])
    found, new_keys, y_new = count_cells(lookup, keys, y)
    found = found[: 2 * k.size]
    return fold_found(k, wts, level, found.reshape(k.size, 2), new_keys, y_new, capacity)


def count_cells(lookup: BinLookup, keys: np.ndarray, y: np.ndarray, part: np.ndarray | None = None) -> tuple:
    """``(found, keys, y[, part])``: (2 * bins + 2,) int64 rows per (bin, label) of ``lookup``
    (entry ``2 * position + label``; the last two: rows in no bin) by one ``np.bincount`` (the
    rows' cells computed in chunks of :data:`LOOKUP_CHUNK` rows, so temporaries stay in
    cache); then the keys, labels (and parts, when given) of the rows in no bin of their part."""
    size = lookup.miss + 2
    at = np.empty(keys.size, dtype=np.int64)
    for i in range(0, keys.size, LOOKUP_CHUNK):
        j = i + LOOKUP_CHUNK
        o = at[i:j]
        o[:] = lookup.cells(keys[i:j], None if part is None else part[i:j])
        o += y[i:j]
    found = np.bincount(at, minlength=size)
    if found[-2] or found[-1]:
        miss = at >= lookup.miss
        rest = (keys[miss], y[miss]) + (() if part is None else (part[miss],))
    else:
        rest = (keys[:0], y[:0]) + (() if part is None else (part[:0],))
    return (found,) + rest
