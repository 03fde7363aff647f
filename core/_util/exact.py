"""Exact, order-independent sums of float64 values (numpy only, vectorised).

A sum of float64 values computed in float64 depends on the order of the additions. The states of
this library are merged in any order (batches, partitions, workers), so every float sum is kept
*exactly* instead, as a fixed-point integer, and rounded to float64 once, correctly (round half to
even), when it is read. Integer addition is associative and commutative, so a state is bit for bit
the same for any batching, partitioning and merge order, and equal on every engine.

Representation (:class:`ExactSums`, an array of ``m`` exact sums of one shape):

* ``values``: (shape) float64, each sum correctly rounded to float64 (+0.0 for a zero sum).
* ``exp`` and ``limbs`` (m, L) int64: sum ``g`` is ``sum_i limbs[g, i] * 2**(32 * (exp + i))``,
  with ``limbs[g, i]`` in ``[0, 2**32)`` for ``i < L - 1`` and the top limb signed in
  ``[-2**31, 2**31)``; the window (``exp``, ``L``) is the smallest that holds every sum of the
  array, so the representation is canonical (equal sums give equal arrays).
* *Compact* form ``L == 0`` (and ``exp == 0``): every sum is exactly its float64 ``values`` entry
  (counts, integer weights, and any sum that happens to be representable). Compact sums merge by
  float addition checked error-free (Knuth's TwoSum); only when a sum stops being representable
  do the limbs appear. So unweighted and integer-weighted states cost (almost) nothing extra.

Folding: each value ``x = M * 2**E`` (``np.frexp``; ``M`` a 53-bit integer) is cut into three
32-bit limb contributions at positions ``E // 32 .. E // 32 + 2`` and summed per (group, limb) with
one ``np.bincount`` per cache-sized chunk (partial sums stay below ``2**53``, so the float64
accumulation of ``bincount`` is exact). Products ``w * x`` (and ``w * x * y``) are summed exactly
by splitting them, error-free, into float64 terms (Dekker's two-product of the frexp mantissas,
the exponents kept as integers, so nothing overflows or underflows).

Non-finite values (NaN, +-inf) have no exact sum: they raise ``ValueError`` (inputs are validated
upstream; this is the last guard).
"""

from __future__ import annotations

import math
import threading
from fractions import Fraction
from typing import Sequence

import numpy as np

from mergeable_metrics._util import exact_kernels as _kernels

__all__ = ["ExactSums", "exact_column_sums", "exact_sum", "exact_sum_products"]

_BITS = 32
_MASK = (1 << _BITS) - 1
_HALF = 1 << (_BITS - 1)
#: terms per bincount step: every partial sum stays below 2**53 (exact in float64)
_STEP = 1 << 18
#: rows per chunk of :func:`exact_sum_products`
_ROWS = 1 << 16
_SPLIT = 134217729.0  # 2**27 + 1, Dekker's splitter


def _check_finite(x: np.ndarray) -> None:
    if not np.isfinite(x).all():
        bad = np.flatnonzero(~np.isfinite(x.ravel()))[0]
        raise ValueError(f"exact sum: value {x.ravel()[bad]!r} at position {bad} is not finite")


def _split(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    c = a * _SPLIT
    hi = c - (c - a)
    return hi, a - hi


def _two_product(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``p + e == a * b`` exactly (Dekker; no overflow or underflow on the way: mantissas, or
    values in [2**-300, 2**300])."""
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    return p, e


def _moderate(f: np.ndarray) -> bool:
    """Every nonzero ``|f|`` in [2**-300, 2**300]: products of up to three such values and their
    two-product errors neither overflow nor underflow."""
    a = np.abs(f)
    if a.size == 0:
        return True
    if a.max() > 2.0**300:
        return False
    nz = a[a != 0]
    return nz.size == 0 or nz.min() >= 2.0**-300


def _product_terms(factors: Sequence[np.ndarray], moderate: bool | None = None) -> tuple[list[np.ndarray], np.ndarray | int]:
    """Float terms and one int64 exponent array (or 0) with ``prod(factors) == sum(terms) *
    2**exp`` exactly, element by element (1 to 3 factors). ``moderate``: every factor is known to
    pass :func:`_moderate` (None: check)."""
    if len(factors) == 1:
        return [np.asarray(factors[0], dtype=np.float64)], 0
    if moderate if moderate is not None else all(_moderate(f) for f in factors):  # Dekker on the values
        terms = list(_two_product(factors[0], factors[1]))
        for m in factors[2:]:
            terms = [t for term in terms for t in _two_product(term, m)]
        return terms, 0
    exp = np.zeros(np.shape(factors[0]), dtype=np.int64)
    mants = []
    for f in factors:
        m, e = np.frexp(f)
        mants.append(m)
        exp += e
    terms = list(_two_product(mants[0], mants[1]))
    for m in mants[2:]:
        terms = [t for term in terms for t in _two_product(term, m)]
    return terms, exp


def _mantissa_exponent(f: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Signed int64 mantissas ``M`` (|M| < 2**53) and exponents ``E`` with ``f == M * 2**E``, from
    the IEEE bits (finite ``f``; subnormals included)."""
    bits = f.view(np.int64)
    e = (bits >> 52) & 0x7FF
    M = bits & ((1 << 52) - 1)
    normal = e != 0
    M |= normal.astype(np.int64) << 52
    E = np.maximum(e, 1) - 1075
    np.negative(M, out=M, where=bits < 0)
    return M, E


def _accumulate(terms: list[np.ndarray], extra: np.ndarray | int, index: np.ndarray | None, size: int) -> tuple[np.ndarray, int]:
    """Un-normalised limbs (size, L) int64 and their ``exp`` of the per-index sums of
    ``term * 2**extra`` over every term (at most 2**24 values per term).

    Fast path (no extra exponents, few (index, binade) buckets): each float is cut, error-free,
    into ``hi`` (its top 26 significant bits, by clearing the low 27 bits) and ``lo = x - hi``;
    within one binade every ``hi`` is a multiple of the same power of two with at most 26 bits
    (``lo``: 27 bits), so ``np.bincount`` per (index, binade) sums them exactly in float64. The
    few exact bucket sums then go to the limbs.
    """
    if not (np.ndim(extra) or extra):
        fast = _accumulate_binades(terms, index, size)
        if fast is not None:
            return fast
    return _accumulate_limbs(terms, extra, index, size)


def _accumulate_binades(terms: list[np.ndarray], index: np.ndarray | None, size: int) -> tuple[np.ndarray, int] | None:
    """The fast path of :func:`_accumulate`, or None when it does not apply."""
    fs, es = [], []
    n = 0
    emin, emax = 1 << 20, -1
    for f in terms:
        f = np.ascontiguousarray(f, dtype=np.float64).ravel()
        if f.size == 0:
            continue
        bits = f.view(np.int64)
        e = np.maximum((bits >> 52) & 0x7FF, 1)  # subnormals share the grid of binade 1
        lo, hi = int(e.min()), int(e.max())
        if lo == 1 and not (f != 0).all():  # zeros (any bucket will do) next to tiny values
            nz = f != 0
            if not nz.any():
                continue
            lo = int(e[nz].min())
        fs.append(f)
        es.append(e)
        n += f.size
        emin, emax = min(emin, lo), max(emax, hi)
    if not fs:
        return np.zeros((size, 0), dtype=np.int64), 0
    nb = emax - emin + 1
    if size * nb > 2 * n + 4096 or emax > 2000 or n > (1 << 25):  # too many buckets, or sums could overflow
        return None
    g = None if index is None else np.asarray(index, dtype=np.int64).ravel()
    sums = np.zeros(2 * size * nb)
    for f, e in zip(fs, es):
        key = e - emin
        np.maximum(key, 0, out=key)  # zeros below the lowest binade
        if g is not None:
            key += g * nb
        hi = (f.view(np.int64) & ~np.int64((1 << 27) - 1)).view(np.float64)
        # every bucket sum is a multiple of its binade's grid below 2**53 grid units: exact
        sums[: size * nb] += np.bincount(key, weights=hi, minlength=size * nb)
        sums[size * nb :] += np.bincount(key, weights=f - hi, minlength=size * nb)
    owner = np.tile(np.repeat(np.arange(size), nb), 2)
    return _accumulate_limbs([sums], 0, owner, size)


def _accumulate_limbs(terms: list[np.ndarray], extra: np.ndarray | int, index: np.ndarray | None, size: int) -> tuple[np.ndarray, int]:
    """:func:`_accumulate` through integer mantissas cut into three 32-bit limb contributions."""
    Ms, Es, Gs = [], [], []
    for f in terms:
        f = np.ascontiguousarray(f, dtype=np.float64).ravel()
        M, E = _mantissa_exponent(f)
        if not np.isscalar(extra) and np.ndim(extra):
            E += np.asarray(extra, dtype=np.int64).ravel()
        elif extra:
            E += int(extra)
        g = None if index is None else np.asarray(index, dtype=np.int64).ravel()
        nz = M != 0
        if not nz.all():
            M, E = M[nz], E[nz]
            g = None if g is None else g[nz]
        Ms.append(M)
        Es.append(E)
        Gs.append(g)
    M = np.concatenate(Ms) if len(Ms) > 1 else Ms[0]
    if M.shape[0] == 0:
        return np.zeros((size, 0), dtype=np.int64), 0
    E = np.concatenate(Es) if len(Es) > 1 else Es[0]
    g = None if index is None else (np.concatenate(Gs) if len(Gs) > 1 else Gs[0])
    q = E >> 5
    qmin = int(q.min())
    L = int(q.max()) - qmin + 3
    out = np.zeros(size * L, dtype=np.int64)
    for i in range(0, M.shape[0], _STEP):
        Mi, Ei, qi = M[i : i + _STEP], E[i : i + _STEP], q[i : i + _STEP]
        r = Ei & 31
        key = qi - qmin if g is None else g[i : i + _STEP] * L + (qi - qmin)
        A = (Mi & _MASK) << r  # < 2**63
        B = (Mi >> _BITS) << r  # signed, |B| < 2**53
        n = size * L
        out += np.bincount(key, weights=A & _MASK, minlength=n).astype(np.int64)
        key += 1
        out += np.bincount(key, weights=(A >> _BITS) + (B & _MASK), minlength=n).astype(np.int64)
        key += 1
        out += np.bincount(key, weights=B >> _BITS, minlength=n).astype(np.int64)
    return out.reshape(size, L), qmin


def _carry(D: np.ndarray) -> np.ndarray:
    """Propagate carries in place so limbs ``< L - 1`` are in [0, 2**32); returns ``D`` (maybe widened)."""
    for i in range(D.shape[1] - 1):
        c = D[:, i] >> _BITS
        D[:, i] &= _MASK
        D[:, i + 1] += c
    while D.shape[1] and not ((D[:, -1] >= -_HALF) & (D[:, -1] < _HALF)).all():
        c = D[:, -1] >> _BITS
        D[:, -1] &= _MASK
        D = np.concatenate([D, c[:, None]], axis=1)
    return D


def _canonical(D: np.ndarray, exp: int) -> tuple[np.ndarray, int]:
    D = _carry(np.array(D, dtype=np.int64, copy=True))
    while D.shape[1] > 1:  # drop a top limb that only carries the sign
        top, nxt = D[:, -1], D[:, -2]
        if not (((top == 0) & (nxt < _HALF)) | ((top == -1) & (nxt >= _HALF))).all():
            break
        D = D[:, :-1].copy()
        D[:, -1] = np.where(top == -1, D[:, -1] - (1 << _BITS), D[:, -1])
    if D.shape[1] == 1 and not D.any():
        D = D[:, :0]
    if D.shape[1] == 0:
        return D, 0
    nzcol = D.any(axis=0)
    lo = int(np.argmax(nzcol))
    return np.ascontiguousarray(D[:, lo:]), exp + lo


def _python_round(row: np.ndarray, exp: int) -> tuple[float, bool]:
    """Correctly rounded float of one canonical limb row, and whether it is inexact."""
    s = 0
    for d in row[::-1].tolist():
        s = (s << _BITS) + d
    k = _BITS * exp
    try:
        v = float(s << k) if k >= 0 else s / (1 << -k)
    except OverflowError:
        return (float("inf") if s > 0 else float("-inf")), True
    return v, Fraction(v) != (Fraction(s) * Fraction(2) ** k)


def _round(D: np.ndarray, exp: int) -> tuple[np.ndarray, np.ndarray]:
    """(m,) correctly rounded float64 values of canonical limbs and (m,) inexact flags."""
    m, L = D.shape
    if L == 0:
        return np.zeros(m), np.zeros(m, dtype=bool)
    neg = D[:, -1] < 0
    A = D.copy()
    if neg.any():
        A[neg] = -A[neg]
        A = _carry(A)  # magnitudes: every limb in [0, 2**32)
        if A.shape[1] > L:
            A = A[:, :L] if not A[:, L:].any() else A
    L = A.shape[1]
    nz = A != 0
    has = nz.any(axis=1)
    t = L - 1 - np.argmax(nz[:, ::-1], axis=1)  # highest nonzero limb
    rows = np.arange(m)
    Au = A.astype(np.uint64)
    z = np.zeros(m, dtype=np.uint64)
    d0 = Au[rows, t]
    d1 = np.where(t >= 1, Au[rows, np.maximum(t - 1, 0)], z)
    d2 = np.where(t >= 2, Au[rows, np.maximum(t - 2, 0)], z)
    below = np.cumsum(nz, axis=1)  # nonzero limbs at or below each column
    sticky = np.where(t >= 3, below[rows, np.maximum(t - 3, 0)] > 0, False)
    b = np.frexp(np.where(has, d0, 1).astype(np.float64))[1].astype(np.uint64)  # bit length of d0, 1..32
    X = (d0 << (np.uint64(64) - b)) | (d1 << (np.uint64(32) - b)) | (d2 >> b)
    sticky |= (d2 & ((np.uint64(1) << b) - np.uint64(1))) != 0
    mant = X >> np.uint64(11)
    rest = X & np.uint64(0x7FF)
    half = (rest >> np.uint64(10)) != 0
    low = ((rest & np.uint64(0x3FF)) != 0) | sticky
    up = half & (low | ((mant & np.uint64(1)) != 0))
    mant = mant + up.astype(np.uint64)
    e = _BITS * (exp + t.astype(np.int64)) + b.astype(np.int64) - 53
    with np.errstate(over="ignore"):
        v = np.ldexp(mant.astype(np.float64), e)
    inexact = (rest != 0) | sticky
    v = np.where(has, np.where(neg, -v, v), 0.0)
    inexact &= has
    # subnormal results round at a fixed bit (2**-1074), not at 53 bits: exact Python rounding
    for g in np.flatnonzero(has & (e + 52 < -1022)):
        v[g], inexact[g] = _python_round(D[g], exp)
    inexact |= np.isinf(v)
    return v, inexact


_NO_LIMBS: dict[int, np.ndarray] = {}
_I64 = np.dtype(np.int64)


def _kernel_limbs(D: np.ndarray) -> bool:
    """Limbs the compiled kernels take as they are (writeable C int64: one compiled variant)."""
    return D.dtype == np.int64 and D.flags.c_contiguous and D.flags.writeable and D.ndim == 2


def _no_limbs(m: int) -> np.ndarray:
    """The read-only (m, 0) limbs of compact sums (no data: one array per ``m`` is shared)."""
    a = _NO_LIMBS.get(m)
    if a is None:
        a = np.zeros((m, 0), dtype=np.int64)
        a.flags.writeable = False
        if m <= 1 << 16:
            _NO_LIMBS[m] = a
    return a


class ExactSums:
    """An array of exact sums (see the module docstring). Immutable; ``a + b`` merges."""

    __slots__ = ("shape", "_exp", "_limbs", "_values", "_raw")

    def __init__(self, values: np.ndarray, exp: int, limbs: np.ndarray):
        self._values = values
        self.shape = values.shape
        self._exp = int(exp)
        self._limbs = limbs
        self._raw: tuple[np.ndarray, int] | None = None
        values.flags.writeable = False
        limbs.flags.writeable = False

    @classmethod
    def _compact(cls, values: np.ndarray) -> "ExactSums":
        """``cls(values, 0, _no_limbs(values.size))`` (``values``: a new float64 array of exact
        sums, +0.0 for zeros) without the constructor's work."""
        self = object.__new__(cls)
        values.flags.writeable = False
        self._values = values
        self.shape = values.shape
        self._exp = 0
        self._limbs = _no_limbs(values.size)
        self._raw = None
        return self

    @classmethod
    def lazy(cls, limbs: np.ndarray, exp: int, shape: tuple[int, ...], values: np.ndarray | None = None) -> "ExactSums":
        """The exact sums of raw ``limbs`` ((m, L) int64, |entries| < 2**62), canonicalised and
        rounded only when ``values``, ``exp`` or ``limbs`` is first read (then as
        :meth:`from_limbs`): sums that are only added to others (a fold of many batches) skip
        the rounding of every intermediate. ``values``: the sums already correctly rounded
        (float64, +0.0 for zeros), when the caller rounded them another way (e.g. the 128-bit
        sums of :meth:`mergeable_metrics.states.score_running.RunningBins.grid_bins`): reading
        ``values`` then canonicalises nothing (``exp`` and ``limbs`` still do)."""
        self = object.__new__(cls)
        self.shape = tuple(shape)
        self._raw = (limbs, int(exp))
        self._limbs = None  # type: ignore[assignment]
        if values is not None:
            values = values.reshape(self.shape)
            values.flags.writeable = False
        self._values = values  # type: ignore[assignment]
        self._exp = 0
        return self

    def _settle(self) -> None:
        raw = self._raw
        if raw is not None:
            es = ExactSums.from_limbs(raw[0], raw[1], self.shape)
            self._values, self._exp, self._limbs = es._values, es._exp, es._limbs
            self._raw = None

    @property
    def values(self) -> np.ndarray:
        """(shape) float64: each sum correctly rounded."""
        v = self._values
        if v is None:  # raw limbs not rounded yet
            self._settle()
            v = self._values
        return v

    @property
    def exp(self) -> int:
        if self._raw is not None:
            self._settle()
        return self._exp

    @property
    def limbs(self) -> np.ndarray:
        if self._raw is not None:
            self._settle()
        return self._limbs

    @property
    def compact(self) -> bool:
        """Every sum is exactly its float64 value (no limbs stored)."""
        return self.limbs.shape[1] == 0

    def _is_zero(self) -> bool:
        return self._raw is None and self._limbs.shape[1] == 0 and not self._values.any()

    @classmethod
    def of_floats(cls, values: np.ndarray | float) -> "ExactSums":
        """The exact sums whose values are ``values`` (each float is an exact number)."""
        v = np.array(values, dtype=np.float64, copy=True)
        _check_finite(v)
        v += 0.0  # -0.0 -> +0.0
        return cls(v, 0, _no_limbs(v.size))

    @classmethod
    def of_count(cls, n: int, shape: tuple[int, ...] = ()) -> "ExactSums":
        """The exact sums ``n`` (a row count below 2**53: a float64 exactly) of ``shape``."""
        if not shape:
            return cls._compact(np.array(float(n)))
        return cls._compact(np.array((float(n),) * math.prod(shape)).reshape(shape))

    @classmethod
    def zeros(cls, shape: tuple[int, ...]) -> "ExactSums":
        return cls.of_floats(np.zeros(shape))

    @classmethod
    def from_limbs(cls, limbs: np.ndarray, exp: int, shape: tuple[int, ...]) -> "ExactSums":
        """Canonical exact sums of ``limbs`` ((m, L) int64, any values below 2**62 in magnitude)."""
        if _kernels.ready():
            D, exp, v, inexact, sub = _kernels.canonical_round(limbs, exp)
            for g in np.flatnonzero(sub):  # subnormal results round at a fixed bit (2**-1074)
                v[g], inexact[g] = _python_round(D[g], exp)
        else:
            D, exp = _canonical(limbs, exp)
            v, inexact = _round(D, exp)
        if not inexact.any():
            return cls.of_floats(v.reshape(shape))
        return cls(v.reshape(shape), exp, D)

    @classmethod
    def from_stored(cls, values: np.ndarray, exp: int, flat_limbs: np.ndarray, what: str = "exact sum") -> "ExactSums":
        """Rebuild from the stored ``(values, exp, limbs.ravel())``; raises ``ValueError`` unless
        they are canonical and ``values`` are their correct rounding."""
        values = np.asarray(values, dtype=np.float64)
        m = values.size
        n = flat_limbs.shape[0]
        if n == 0:
            if exp != 0:
                raise ValueError(f"{what}: exponent {exp} without limbs")
            return cls.of_floats(values)
        if m == 0 or n % m:
            raise ValueError(f"{what}: {n} limbs do not divide into {m} sums")
        D = np.asarray(flat_limbs, dtype=np.int64).reshape(m, n // m)
        if not (abs(int(exp)) < (1 << 40)):
            raise ValueError(f"{what}: exponent {exp} out of range")
        got = cls.from_limbs(D, int(exp), values.shape)
        if got.exp != exp or not np.array_equal(got.limbs, D) or not np.array_equal(got.values, values):
            raise ValueError(f"{what}: stored limbs or values are not canonical")
        return got

    def _raw_full(self) -> tuple[np.ndarray, int]:
        """:meth:`full`, or the raw limbs of a sum not yet rounded."""
        return self._raw if self._raw is not None else self.full()

    def full(self) -> tuple[np.ndarray, int]:
        """``(limbs, exp)`` of every sum, also for the compact form."""
        if not self.compact:
            return self.limbs, self.exp
        m = self.values.size
        if _kernels.ready():
            return _kernels.sum_products([self.values.ravel()], np.arange(m), m)
        return _accumulate([self.values.ravel()], 0, np.arange(m), m)

    def kernel_raw(self) -> tuple[np.ndarray, int]:
        """``(limbs, exp)`` of these sums as raw limbs the compiled kernels take (writeable C
        int64, (m, L); the raw limbs of a sum not yet rounded, as they are): the running sums a
        fold adds a batch into (:func:`mergeable_metrics._util.exact_kernels.mean_fold`)."""
        raw = self._raw
        if raw is None:
            if not self._limbs.shape[1] and not self._values.any():
                return np.zeros((self._values.size, 0), dtype=np.int64), 0
            raw = self.full()
        D = raw[0]
        if not (D.dtype is _I64 and D.ndim == 2 and D.flags.carray):  # (the kernels' one compiled variant)
            D = np.array(D, dtype=np.int64, order="C")
        return D, int(raw[1])

    def same_sum(self, other: "ExactSums") -> bool:
        """Whether ``other`` holds the same single sum (any shape of size 1), told from the forms
        as they are (no rounding): the same raw or canonical limbs, or the same compact value. A
        False may still be the same number in another raw form."""
        if self is other:
            return True
        ra, rb = self._raw, other._raw
        if ra is not None and rb is not None:
            return ra[1] == rb[1] and (ra[0] is rb[0] or (ra[0].size == rb[0].size <= 64 and np.array_equal(ra[0].ravel(), rb[0].ravel())))
        if ra is None and rb is None and self._values.size == other._values.size == 1:
            return self._exp == other._exp and self._values.item() == other._values.item() and np.array_equal(self._limbs.ravel(), other._limbs.ravel())
        return False

    def plus_rows(self, n: int) -> "ExactSums":
        """``self + ExactSums.of_count(n, self.shape)`` (``n`` rows of weight 1), on a Python
        float when this is one compact sum (a count or a weight sum)."""
        shape = self.shape
        if self._raw is None and len(shape) <= 1 and self._values.size == 1 and not self._limbs.shape[1]:
            x = self._values.item()
            t = x + n
            bb = t - x
            if (x - (t - bb)) + (n - bb) == 0:  # TwoSum: t is exactly x + n
                v = np.array([t + 0.0] if shape else t + 0.0)  # -0.0 -> +0.0
                v.setflags(write=False)
                out = object.__new__(ExactSums)
                out._values, out.shape, out._exp, out._limbs, out._raw = v, shape, 0, self._limbs, None
                return out
        return self + ExactSums.of_count(n, shape)

    def __add__(self, other: "ExactSums") -> "ExactSums":
        if other.shape != self.shape:
            raise ValueError(f"exact sums of shapes {self.shape} and {other.shape} do not merge")
        ra, rb = self._raw, other._raw
        if ra is not None and rb is not None and ra[0].shape[1] and rb[0].shape[1] and _kernels.ready() and _kernel_limbs(ra[0]) and _kernel_limbs(rb[0]):
            return ExactSums.lazy(*_kernels.add_canonical(ra[0], ra[1], rb[0], rb[1]), self.shape)  # both raw (a fold's sums)
        if ra is None and rb is None and not self._limbs.shape[1] and not other._limbs.shape[1] and self._values.size == 1:
            # one compact sum each (a count, a weight sum): TwoSum on Python floats, as below
            x, y = self._values.item(), other._values.item()
            t = x + y  # inf past the float range (no exception): then the error below is nan
            bb = t - x
            if (x - (t - bb)) + (y - bb) == 0:
                return ExactSums._compact(np.array(t + 0.0).reshape(self.shape))  # -0.0 -> +0.0
        if ra is not None or rb is not None:  # stay raw: one rounding when read
            if other._is_zero():
                return self
            if self._is_zero():
                return other
            (A, ea), (B, eb) = self._raw_full(), other._raw_full()
            if A.shape[1] and B.shape[1] and _kernels.ready() and _kernel_limbs(A) and _kernel_limbs(B):
                return ExactSums.lazy(*_kernels.add_canonical(A, ea, B, eb), self.shape)
            D, e = _add_limbs(A, ea, B, eb)
            if _kernels.ready():
                D, e = _kernels.canonical(np.ascontiguousarray(D), e)  # bounded limbs, smallest window
            else:
                D, e = _canonical(D, e)
            return ExactSums.lazy(D, e, self.shape)
        if self.compact and other.compact and self._values.size <= 16:  # a few sums: TwoSum on Python floats
            out = []
            for x, y in zip(self._values.ravel().tolist(), other._values.ravel().tolist()):
                t = x + y  # inf past the float range (no exception): then the error below is nan
                bb = t - x
                if (x - (t - bb)) + (y - bb) != 0:
                    break
                out.append(t + 0.0)  # -0.0 -> +0.0
            else:
                v = np.array(out, dtype=np.float64).reshape(self.shape)
                return ExactSums(v, 0, _no_limbs(v.size))
        if self.compact and other.compact:
            a, b = self.values, other.values
            with np.errstate(over="ignore", invalid="ignore"):
                s = a + b
                bb = s - a
                err = (a - (s - bb)) + (b - bb)
            if np.isfinite(s).all() and not err.any():
                return ExactSums.of_floats(s)
        (A, ea), (B, eb) = self.full(), other.full()
        return ExactSums.from_limbs(*_add_limbs(A, ea, B, eb), self.shape)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, ExactSums)
            and self.shape == other.shape
            and self.exp == other.exp
            and np.array_equal(self.limbs, other.limbs)
            and np.array_equal(self.values, other.values)
        )

    __hash__ = None  # type: ignore[assignment]

    def regroup(self, index: np.ndarray, size: int, shape: tuple[int, ...] | None = None) -> "ExactSums":
        """Exact sums of the flat sums grouped by ``index`` ((m,) ints in [0, size))."""
        D, exp = self.full()
        L = D.shape[1]
        if L == 0 or D.shape[0] == 0:
            return ExactSums.zeros((size,) if shape is None else shape)
        key = (np.asarray(index, dtype=np.int64)[:, None] * L + np.arange(L)[None, :]).ravel()
        flat = D.ravel()
        out = np.zeros(size * L, dtype=np.int64)
        for i in range(0, flat.shape[0], _STEP):  # limbs < 2**32: partial sums exact in float64
            out += np.bincount(key[i : i + _STEP], weights=flat[i : i + _STEP], minlength=size * L).astype(np.int64)
        return ExactSums.from_limbs(out.reshape(size, L), exp, (size,) if shape is None else shape)

    def cumsum(self, reverse: bool = False) -> "ExactSums":
        """Exact running sums along a 1-D array (``reverse``: from the end)."""
        D, exp = self.full()
        if D.shape[1] == 0:
            return ExactSums.zeros(self.shape)
        C = np.cumsum(D[::-1] if reverse else D, axis=0)
        return ExactSums.from_limbs(C[::-1] if reverse else C, exp, self.shape)

    def take(self, index: np.ndarray | slice, shape: tuple[int, ...] | None = None) -> "ExactSums":
        """The sums at ``index`` of the flat array."""
        if self._raw is not None:  # rows of raw limbs are raw limbs of those sums: still not rounded
            D, e = self._raw
            picked = D[index] if isinstance(index, slice) else D[np.asarray(index).reshape(-1)]
            want = np.empty(D.shape[0], dtype=np.int8)[index].shape if shape is None else shape
            return ExactSums.lazy(picked, e, want)
        v = self.values.ravel()[index]
        if self.compact:
            return ExactSums.of_floats(v if shape is None else v.reshape(shape))
        return ExactSums.from_limbs(self.limbs[index], self.exp, v.shape if shape is None else shape)

    @staticmethod
    def stack(parts: Sequence["ExactSums | np.ndarray | float"], shape: tuple[int, ...]) -> "ExactSums":
        """The sums of ``parts`` (ExactSums or float arrays, each an exact number) one after the
        other, flat, as an array of ``shape``."""
        es = [p if isinstance(p, ExactSums) else ExactSums.of_floats(p) for p in parts]
        if all(e.compact for e in es):
            return ExactSums.of_floats(np.concatenate([e.values.ravel() for e in es]).reshape(shape))
        full = [e.full() for e in es]
        used = [(D, x) for D, x in full if D.shape[1]]
        lo = min(x for _, x in used)
        hi = max(x + D.shape[1] for D, x in used)
        out = np.zeros((sum(D.shape[0] for D, _ in full), hi - lo), dtype=np.int64)
        row = 0
        for D, x in full:
            out[row : row + D.shape[0], x - lo : x - lo + D.shape[1]] = D
            row += D.shape[0]
        return ExactSums.from_limbs(out, lo, shape)

    def fractions(self) -> list[Fraction]:
        """Every sum as an exact :class:`fractions.Fraction` (flat order)."""
        if self.compact:
            return [Fraction(float(v)) for v in self.values.ravel()]
        out = []
        scale = Fraction(2) ** (_BITS * self.exp)
        for row in self.limbs:
            s = 0
            for d in row[::-1].tolist():
                s = (s << _BITS) + d
            out.append(s * scale)
        return out

    def integer(self, i: int = 0) -> tuple[int, int]:
        """``(a, e)``: the sum at flat position ``i`` is exactly ``a * 2**e`` (Python ints; raw
        limbs are read as they are, without rounding them first)."""
        raw = self._raw
        if raw is not None:
            a = 0
            for d in raw[0][i, ::-1].tolist():  # any signed limbs: a = sum d_j 2**(32 j)
                a = (a << _BITS) + d
            return a, _BITS * int(raw[1])
        if self.compact:
            n, d = float(self.values.ravel()[i]).as_integer_ratio()
            return n, 1 - d.bit_length()
        a = 0
        for d in self.limbs[i, ::-1].tolist():
            a = (a << _BITS) + d
        return a, _BITS * self.exp

    def fraction(self) -> Fraction:
        """The exact value of a single sum."""
        (f,) = self.fractions() if self.values.size == 1 else (None,)
        if f is None:
            raise ValueError(f"fraction() of {self.values.size} sums")
        return f

    def __repr__(self) -> str:
        return f"ExactSums({self.values.tolist()}, exp={self.exp}, limbs={self.limbs.shape[1]})"


def raw_regroup(parts: Sequence[tuple["ExactSums", np.ndarray]], size: int) -> tuple[np.ndarray, int]:
    """Un-normalised ``(limbs (size, L), exp)`` of the flat sums of every ``(sums, index)`` part
    added into ``size`` groups (``index``: (m,) ints in [0, size) per part). Finish with
    :meth:`ExactSums.from_limbs` (which canonicalises); several steps can share one rounding."""
    full = [(p.full(), np.asarray(i, dtype=np.int64)) for p, i in parts]
    used = [(D, x, i) for (D, x), i in full if D.shape[1] and D.shape[0]]
    if not used:
        return np.zeros((size, 0), dtype=np.int64), 0
    lo = min(x for _, x, _ in used)
    L = max(x + D.shape[1] for D, x, _ in used) - lo
    out = np.zeros(size * L, dtype=np.int64)
    for D, x, i in used:  # limbs < 2**32: bincount partial sums stay exact
        key = (i[:, None] * L + (x - lo) + np.arange(D.shape[1])[None, :]).ravel()
        flat = D.ravel()
        for j in range(0, flat.shape[0], _STEP):
            out += np.bincount(key[j : j + _STEP], weights=flat[j : j + _STEP], minlength=size * L).astype(np.int64)
    return out.reshape(size, L), lo


def raw_sum(values: np.ndarray, index: np.ndarray, size: int) -> tuple[np.ndarray, int]:
    """Un-normalised ``(limbs, exp)`` of the exact per-index sums of finite ``values`` (see
    :func:`raw_regroup`)."""
    v = np.asarray(values, dtype=np.float64).ravel()
    g = np.asarray(index, dtype=np.int64).ravel()
    if _kernels.ready():
        return _sum_kernel([v], g, size)
    _check_finite(v)
    D, exp = np.zeros((size, 0), dtype=np.int64), 0
    for i in range(0, max(v.shape[0], 1), _ROWS):
        Di, ei = _accumulate([v[i : i + _ROWS]], 0, g[i : i + _ROWS], size)
        D, exp = _add_limbs(D, exp, Di, ei)
        if D.shape[1] and i // _ROWS % 64 == 63:
            D = _carry(D)
    return D, exp


def _sum_kernel(fs: list[np.ndarray], g: np.ndarray | None, size: int) -> tuple[np.ndarray, int]:
    """Un-normalised ``(limbs, exp)`` of the exact per-index sums of the products of ``fs``
    through the compiled kernels, :data:`exact_kernels.CHUNK` rows per call."""
    n = fs[0].shape[0]
    if n <= _kernels.CHUNK:
        return _kernels.sum_products(fs, g, size)
    D, exp = np.zeros((size, 0), dtype=np.int64), 0
    for i in range(0, n, _kernels.CHUNK):
        sl = slice(i, i + _kernels.CHUNK)
        try:
            Di, ei = _kernels.sum_products([f[sl] for f in fs], None if g is None else g[sl], size)
        except _kernels.NonFinite as e:
            raise ValueError(f"exact sum: value {fs[e.factor][i + e.position]!r} at position {i + e.position} is not finite") from None
        D, exp = _add_limbs(D, exp, Di, ei)
        D = _carry(D)
    return D, exp


def add_raw(a: tuple[np.ndarray, int], b: tuple[np.ndarray, int]) -> tuple[np.ndarray, int]:
    """Sum of two un-normalised ``(limbs, exp)`` pairs of the same number of groups."""
    return _add_limbs(a[0], a[1], b[0], b[1])


def _add_limbs(A: np.ndarray, ea: int, B: np.ndarray, eb: int) -> tuple[np.ndarray, int]:
    if A.shape[1] == 0:
        return B, eb
    if B.shape[1] == 0:
        return A, ea
    lo = min(ea, eb)
    hi = max(ea + A.shape[1], eb + B.shape[1])
    out = np.zeros((A.shape[0], hi - lo + 1), dtype=np.int64)
    out[:, ea - lo : ea - lo + A.shape[1]] += A
    out[:, eb - lo : eb - lo + B.shape[1]] += B
    return out, lo


def exact_sum(
    values: np.ndarray,
    weights: np.ndarray | None = None,
    index: np.ndarray | None = None,
    size: int | None = None,
    shape: tuple[int, ...] | None = None,
) -> ExactSums:
    """Exact sums of ``values`` (times ``weights``, the products exact too) per ``index``.

    Args:
        values: (n,) float64 (or anything numpy casts to it).
        weights: optional (n,) float64 multiplied into each value exactly.
        index: optional (n,) ints in [0, size); without it, one sum of everything.
        size: number of sums with ``index``.
        shape: shape of the result (default ``()`` without index, else ``(size,)``).

    Raises:
        ValueError: a non-finite value or weight.
    """
    factors = [values] if weights is None else [values, weights]
    return exact_sum_products(factors, index, size, shape)


def exact_sum_products(
    factors: Sequence[np.ndarray],
    index: np.ndarray | None = None,
    size: int | None = None,
    shape: tuple[int, ...] | None = None,
) -> ExactSums:
    """Exact sums of the element-wise products of 1 to 3 ``factors`` per ``index`` (see
    :func:`exact_sum`)."""
    fs = [np.asarray(f, dtype=np.float64).ravel() for f in factors]
    if index is None:
        size = 1
        shape = () if shape is None else shape
    else:
        size = int(size)  # type: ignore[arg-type]
        shape = (size,) if shape is None else shape
    g = None if index is None else np.asarray(index).ravel()
    if _kernels.ready() and 1 <= len(fs) <= 3:
        return ExactSums.lazy(*_sum_kernel(fs, g, size), shape)
    for f in fs:
        _check_finite(f)
    n = fs[0].shape[0] if fs else 0
    D, exp = np.zeros((size, 0), dtype=np.int64), 0
    moderate = len(fs) > 1 and all(_moderate(f) for f in fs)
    for i in range(0, max(n, 1), _ROWS):  # cache-sized row chunks: temporaries stay small
        terms, extra = _product_terms([f[i : i + _ROWS] for f in fs], moderate)
        Di, ei = _accumulate(terms, extra, None if g is None else g[i : i + _ROWS], size)
        D, exp = _add_limbs(D, exp, Di, ei)
        if D.shape[1] and i // _ROWS % 64 == 63:  # keep every limb far below 2**62
            D = _carry(D)
    return ExactSums.from_limbs(D, exp, shape)


#: the weight sums of the batch being folded (:func:`shared_weight_sums`), per thread
_shared = threading.local()


class _SharedWeightSums:
    """The context manager of :func:`shared_weight_sums` (a class: entered once per batch, a
    generator-based one costs a few microseconds)."""

    __slots__ = ("outer",)

    def __enter__(self) -> None:
        self.outer = getattr(_shared, "sums", None)
        if self.outer is None:
            _shared.sums = {}

    def __exit__(self, *exc: object) -> None:
        if self.outer is None:
            _shared.sums = None


def shared_weight_sums() -> _SharedWeightSums:
    """Within the block (one batch's fold into every state of a plan), :func:`weight_sum` of the
    same weight array computes its exact sum once: the example count's, the regression state's
    and a mean's weight are one sum. Nothing is kept after the block (an array may be changed
    in place between batches)."""
    return _SharedWeightSums()


def known_weight_sum(w: np.ndarray) -> ExactSums | None:
    """The exact sum of ``w`` already computed in this :func:`shared_weight_sums` block, or None."""
    sums = getattr(_shared, "sums", None)
    hit = None if sums is None else sums.get(id(w))
    return hit[1] if hit is not None and hit[0] is w else None


def remember_weight_sum(w: np.ndarray, total: ExactSums) -> None:
    """Record ``total`` (the exact ``sum(w)``, shape ``()``) for :func:`weight_sum` in this block."""
    sums = getattr(_shared, "sums", None)
    if sums is not None:
        sums[id(w)] = (w, total)  # w kept alive: its id is not reused within the block


def weight_sum(w: np.ndarray) -> ExactSums:
    """``exact_sum(w)`` (shape ``()``), computed once per weight array in a
    :func:`shared_weight_sums` block."""
    got = known_weight_sum(w)
    if got is None:
        got = exact_sum(w)
        remember_weight_sum(w, got)
    return got


def exact_column_sums(x: np.ndarray, weights: np.ndarray | None = None) -> ExactSums:
    """Exact ``sum_i w_i x[i, j]`` (``sum_i x[i, j]`` unweighted) per column ``j`` of an (n, c)
    array: (c,) sums."""
    n, c = x.shape
    if c == 1:  # one column: a flat sum (no index to build)
        return exact_sum(x[:, 0], weights, shape=(1,))
    w = None if weights is None else np.repeat(np.asarray(weights, dtype=np.float64), c)
    return exact_sum(x.ravel(), w, index=np.tile(np.arange(c), n), size=c)


def fraction_to_float(x: Fraction) -> float:
    """``x`` correctly rounded to float64 (+-inf past the float range)."""
    try:
        return float(x)
    except OverflowError:
        return math.inf if x > 0 else -math.inf


def exact_quotient(num: ExactSums, den: ExactSums, i: int = 0) -> float:
    """``exact_ratio`` of the sums at flat position ``i`` of ``num`` and ``den`` (nonzero): the
    correctly rounded quotient, on Python integers (their true division rounds correctly) where
    the result is a normal float, else on ``Fraction``."""
    a, ea = num.integer(i)
    b, eb = den.integer(i)
    if a == 0:
        return 0.0
    s = a.bit_length() - b.bit_length()  # |a / b| in (2**(s - 1), 2**(s + 1))
    e = s + ea - eb
    if -1021 <= e <= 1022 and b:  # q * 2**e is normal for q in [0.5, 2]: ldexp is exact
        q = a / (b << s) if s >= 0 else (a << -s) / b
        return math.ldexp(q, e)
    return exact_ratio(Fraction(a) * Fraction(2) ** ea, Fraction(b) * Fraction(2) ** eb)


def exact_ratio(num: Fraction, den: Fraction) -> float:
    """``num / den`` of two exact values, correctly rounded to float64 (``den`` nonzero)."""
    return fraction_to_float(num / den)
