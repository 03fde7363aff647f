"""The counting pass behind ``max_slices`` and quantile buckets: an exact, mergeable slice profile.

Two slice options need to know all the data before any row can be assigned to a slice:
``max_slices=N`` (which values are the N largest?) and ``quantiles=k`` (where are the edges?).
Every engine therefore runs a first, cheap pass that folds the data into a :class:`SliceProfile`,
merges the partial profiles in any order, and resolves them into a small :class:`ProfileSummary`
(the kept keys and the quantile edges); :meth:`mergeable_metrics.Evaluation.with_profile` then gives an
evaluation whose ``fold`` maps values outside the top N to ``__other__`` and numbers to buckets.
The profile is a monoid (``zero`` / ``fold`` / ``merge``) like the metric states, so every split
of the data and every merge order gives the same profile, and therefore the same slices in every
engine.

Parts of a profile
------------------
* :class:`KeyCounts`, one per spec with ``max_slices``: for every distinct slice key (after
  filters and ``edges`` buckets), the number of rows and (``by=weight``) their summed weight.
  Keys are stored in an order-preserving, injective byte encoding (:func:`mergeable_metrics.slicing.assign.encode_key`)
  in a numpy ``S`` array, so a key costs its encoded length (about 2 + len(text) bytes for a
  string, 14 bytes for a number) plus 8 bytes of count (+ 8 of weight) + 1 flag byte: about
  20-30 bytes per distinct value, never a metric state. The cut is **exact**: the N largest
  slices without a missing value, and the N largest with one, by count (or weight) descending,
  ties broken by value ascending. Memory of this pass grows with the number of distinct values
  (by those ~25 bytes each); the metric pass that follows holds at most ``2N + 1`` slices' states
  per spec, whatever the number of distinct values.
* :class:`ValueSketch`, one per column bucketed by quantiles: the count of every distinct finite
  value, exact while there are at most ``capacity`` (default 10,000) distinct values. Beyond, the
  values are binned as score distributions are (keys and canonical binning of :mod:`mergeable_metrics.states.score_bins`): the
  canonical level ``L`` is the smallest whose bins ``key >> L`` number at most ``capacity``; bins
  depend only on the data's multiset, never on the merge order. Exact sketches give numpy's
  ``np.quantile(x, i/k)`` ("linear" method) bit for bit; a binned sketch gives, for each edge,
  the lower end of the bin holding the ``floor((n-1) i/k)``-th smallest value: a bin of relative
  width at most ``2**(L-52)``. Quantiles are computed over the column's finite values in all rows
  (filters on other columns do not apply; NaN/None and infinities are left out). Values are
  counted, not weighted.

The :class:`ProfileSummary` is JSON-ready and small (N keys per spec, k - 1 edges per column), so
engines ship it to workers (a Beam side input, a Spark closure) at no cost.
"""

from __future__ import annotations

import json
import struct
import zlib
from typing import Any, Iterable, Mapping

import numpy as np

from mergeable_metrics.evaluation.batches import extract_columns, fold_all
from mergeable_metrics.states.codec import _Reader
from mergeable_metrics.states.score_bins import bin_lower_scores, canonical_bins, keys_to_scores, merge_bins, score_keys
from mergeable_metrics.slicing.assign import (
    OTHER,
    Assignment,
    ListColumn,
    SliceSpec,
    SpecBounds,
    assign_slices,
    encode_key,
    KEY_ENCODING,
    encode_keys,
    numeric_values,
    parse_slices,
    upgrade_key_v1,
)

DEFAULT_SKETCH_CAPACITY = 10_000
_MAGIC = b"MMP"
#: version of the profile bytes written; version 1 (key encoding 1, see
#: :func:`mergeable_metrics.slicing.assign.upgrade_key_v1`) is still read, its keys upgraded
_VERSION = 2
_VERSIONS = (1, 2)


def keys_part(spec: SliceSpec) -> str:
    """Name of the :class:`KeyCounts` part of a spec with ``max_slices``."""
    return f"keys {spec}"


def values_part(column: str) -> str:
    """Name of the :class:`ValueSketch` part of a column bucketed by quantiles."""
    return f"values {column}"


# --------------------------------------------------------------------------------------------
class KeyCounts:
    """Rows (and weight) per distinct slice key of one spec: an exact, mergeable count table.

    Attributes:
        keys: (m,) ``S`` array of encoded keys (:func:`mergeable_metrics.slicing.assign.encode_key`), ascending and
            distinct.
        counts: (m,) int64 rows per key.
        weights: (m,) float64 summed weights per key, or None (not tracked).
        missing: (m,) bool: the key holds a missing value.
    """

    kind = 1
    __slots__ = ("keys", "counts", "weights", "missing")

    def __init__(self, keys: np.ndarray, counts: np.ndarray, weights: np.ndarray | None, missing: np.ndarray):
        self.keys = keys
        self.counts = counts
        self.weights = weights
        self.missing = missing

    @classmethod
    def empty(cls, weighted: bool) -> "KeyCounts":
        return cls(np.zeros(0, dtype="S1"), np.zeros(0, np.int64), np.zeros(0) if weighted else None, np.zeros(0, bool))

    @classmethod
    def from_assignment(cls, a: Assignment, weights: np.ndarray | None) -> "KeyCounts":
        """Counts of one batch's assignment; ``weights``: (n,) row weights, or None."""
        k = len(a.keys)
        counts = np.bincount(a.codes, minlength=k).astype(np.int64)
        w = None
        if weights is not None:
            rw = weights if a.rows is None else weights[a.rows]
            w = np.bincount(a.codes, weights=rw, minlength=k).astype(np.float64)
        encoded, has_missing = encode_keys(a.keys)
        enc = np.array(encoded or [b""], dtype="S")[:k]
        missing = np.array(has_missing, dtype=bool)
        order = np.argsort(enc, kind="stable")
        present = counts[order] > 0
        order = order[present]
        return cls(enc[order], counts[order], None if w is None else w[order], missing[order])

    @property
    def distinct(self) -> int:
        return int(self.keys.shape[0])

    @property
    def nbytes(self) -> int:
        return int(sum(a.nbytes for a in (self.keys, self.counts, self.missing, self.weights) if a is not None))

    @staticmethod
    def merge_all(tables: Iterable["KeyCounts"]) -> "KeyCounts":
        """One table of the summed counts of many (any order gives the same table).

        Raises:
            ValueError: the tables disagree on whether weights are tracked.
        """
        tables = [t for t in tables]
        if not tables:
            raise ValueError("KeyCounts.merge_all needs at least one table")
        weighted = {t.weights is not None for t in tables}
        if len(weighted) > 1:
            raise ValueError("cannot merge key counts with and without weights (profiles of different slice specs)")
        tables = [t for t in tables if t.distinct] or tables[:1]
        if len(tables) == 1:
            return tables[0]
        keys = np.concatenate([t.keys for t in tables])
        uniq, first, inv = np.unique(keys, return_index=True, return_inverse=True)
        inv = inv.reshape(-1)
        m = uniq.shape[0]
        counts = np.bincount(inv, weights=np.concatenate([t.counts for t in tables]).astype(np.float64), minlength=m).astype(np.int64)
        weights = None
        if tables[0].weights is not None:
            weights = np.bincount(inv, weights=np.concatenate([t.weights for t in tables]), minlength=m)
        missing = np.concatenate([t.missing for t in tables])[first]
        return KeyCounts(uniq, counts, weights, missing)

    def merge(self, other: "KeyCounts") -> "KeyCounts":
        """The summed table (a new object; same result as :meth:`merge_all`)."""
        if not other.distinct or not self.distinct or (other.weights is None) != (self.weights is None):
            return KeyCounts.merge_all([self, other])
        big, small = (self, other) if self.distinct >= other.distinct else (other, self)
        if small.distinct * 8 > big.distinct:
            return KeyCounts.merge_all([self, other])
        # a small table into a big sorted one: binary search + one insert, no re-sort of the big one
        width = max(big.keys.dtype.itemsize, small.keys.dtype.itemsize)
        keys = big.keys if big.keys.dtype.itemsize == width else big.keys.astype(f"S{width}")
        pos = np.searchsorted(keys, small.keys)
        found = pos < keys.shape[0]
        found[found] = keys[pos[found]] == small.keys[found]
        counts = big.counts.copy()
        counts[pos[found]] += small.counts[found]
        weights = None
        if big.weights is not None:
            weights = big.weights.copy()
            weights[pos[found]] += small.weights[found]
        new = ~found
        if new.any():
            at = pos[new]
            keys = np.insert(keys, at, small.keys[new].astype(f"S{width}"))
            counts = np.insert(counts, at, small.counts[new])
            missing = np.insert(big.missing, at, small.missing[new])
            if weights is not None:
                weights = np.insert(weights, at, small.weights[new])
        else:
            missing = big.missing
        return KeyCounts(keys, counts, weights, missing)

    def summary(self, max_slices: int, by: str = "count") -> dict[str, Any]:
        """The exact top-``max_slices`` cut.

        Returns:
            A dict ``{"kept": [...], "folded_values": int, "distinct": int, "key_encoding": int}``
            (``kept``: the hex of the encoded keys): the ``max_slices`` largest keys without a missing value and the ``max_slices`` largest
            with one (size = count, or weight for ``by="weight"``, descending; ties by key
            ascending), how many distinct keys fall outside (into ``__other__``), and how many
            there are.
        """
        size = self.weights if (by == "weight" and self.weights is not None) else self.counts
        kept: list[int] = []
        for group in (~self.missing, self.missing):
            idx = np.flatnonzero(group)
            order = idx[np.argsort(-size[idx], kind="stable")]  # keys ascending within ties
            kept.extend(int(i) for i in order[:max_slices])
        kept.sort()
        return {
            "kept": [bytes(self.keys[i]).hex() for i in kept],
            "folded_values": self.distinct - len(kept),
            "distinct": self.distinct,
            "key_encoding": KEY_ENCODING,
        }

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, KeyCounts)
            and np.array_equal(self.keys, other.keys)
            and np.array_equal(self.counts, other.counts)
            and np.array_equal(self.missing, other.missing)
            and (
                (self.weights is None and other.weights is None)
                or (self.weights is not None and other.weights is not None and np.array_equal(self.weights, other.weights))
            )
        )

    def __repr__(self) -> str:
        return f"KeyCounts(distinct={self.distinct}, rows={int(self.counts.sum())}, weighted={self.weights is not None})"


# --------------------------------------------------------------------------------------------
def _lerp(a: float, b: float, t: float) -> float:
    """numpy's ``_lerp`` (the "linear" quantile method), bit for bit."""
    diff = b - a
    return b - diff * (1 - t) if t >= 0.5 else a + diff * t


class ValueSketch:
    """Counts of a numeric column's distinct finite values; exact up to ``capacity`` distinct
    values, then binned at the canonical level (see the module docstring).

    Attributes:
        capacity: most bins kept (>= 2).
        level: 0 = exact; L > 0 = bins of ``key >> L`` (order-preserving float keys).
        keys: (m,) int64 bins, ascending and distinct.
        counts: (m,) int64 values per bin.
    """

    kind = 2
    __slots__ = ("capacity", "level", "keys", "counts")

    def __init__(self, capacity: int = DEFAULT_SKETCH_CAPACITY, level: int = 0, keys: np.ndarray | None = None, counts: np.ndarray | None = None):
        if capacity < 2:
            raise ValueError(f"ValueSketch capacity must be >= 2, got {capacity}")
        self.capacity = int(capacity)
        self.level = int(level)
        self.keys = np.zeros(0, np.int64) if keys is None else keys
        self.counts = np.zeros(0, np.int64) if counts is None else counts

    @classmethod
    def _canonical(cls, capacity: int, level: int, keys: np.ndarray, counts: np.ndarray) -> "ValueSketch":
        """The sketch of ascending distinct bins at ``level``, raised to the smallest level that
        leaves at most ``capacity`` bins (the score distribution's binning, :mod:`mergeable_metrics.states.score_bins`)."""
        keys, w, level = canonical_bins(keys, counts.reshape(-1, 1), level, capacity)
        return cls(capacity, level, keys, np.ascontiguousarray(w[:, 0]))

    @classmethod
    def from_values(cls, x: np.ndarray, capacity: int = DEFAULT_SKETCH_CAPACITY) -> "ValueSketch":
        """The sketch of one batch of float64 values (non-finite values are left out)."""
        x = np.asarray(x, dtype=np.float64)
        x = x[np.isfinite(x)]
        keys, counts = np.unique(score_keys(x), return_counts=True)
        return cls._canonical(capacity, 0, keys.astype(np.int64), counts.astype(np.int64))

    def merge(self, other: "ValueSketch") -> "ValueSketch":
        """The sketch of the union (equal to the sketch of all the data in one batch).

        Raises:
            ValueError: different capacities.
        """
        if other.capacity != self.capacity:
            raise ValueError(f"cannot merge value sketches of capacity {self.capacity} and {other.capacity}")
        keys, w, level = merge_bins((self.keys, self.counts.reshape(-1, 1), self.level), (other.keys, other.counts.reshape(-1, 1), other.level), self.capacity)
        return ValueSketch(self.capacity, level, np.ascontiguousarray(keys, dtype=np.int64), np.ascontiguousarray(w[:, 0], dtype=np.int64))

    @property
    def exact(self) -> bool:
        return self.level == 0

    @property
    def count(self) -> int:
        return int(self.counts.sum())

    def edges(self, k: int) -> tuple[float, ...]:
        """Interior quantile edges ``q_i = i/k`` (i = 1..k-1), ascending, equal ones collapsed;
        () when the column has no finite value."""
        n = self.count
        if n == 0:
            return ()
        cum = np.cumsum(self.counts)
        if self.exact:
            values = keys_to_scores(self.keys)
        qs = np.arange(1, k) / k
        out = []
        for h in (n - 1) * qs:
            lo = int(np.floor(h))
            j_lo = int(np.searchsorted(cum, lo, side="right"))
            if not self.exact:
                out.append(float(bin_lower_scores(self.keys[j_lo : j_lo + 1], self.level)[0]))
                continue
            j_hi = int(np.searchsorted(cum, min(lo + 1, n - 1), side="right"))
            out.append(_lerp(float(values[j_lo]), float(values[j_hi]), float(h - lo)))
        return tuple(sorted(set(out)))

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, ValueSketch)
            and (self.capacity, self.level) == (other.capacity, other.level)
            and np.array_equal(self.keys, other.keys)
            and np.array_equal(self.counts, other.counts)
        )

    def __repr__(self) -> str:
        return f"ValueSketch(values={self.count}, bins={self.keys.size}, level={self.level}, capacity={self.capacity})"


# --------------------------------------------------------------------------------------------
# codec (versioned, checksummed, no pickle)
def _str16(s: str) -> bytes:
    b = s.encode("utf-8")
    return struct.pack("<H", len(b)) + b


def _encode_part(name: str, part: Any) -> bytes:
    out = [_str16(name), struct.pack("<B", part.kind)]
    if isinstance(part, KeyCounts):
        m, width = part.distinct, part.keys.dtype.itemsize
        out += [struct.pack("<QIB", m, width, part.weights is not None), part.keys.astype(f"S{width}").tobytes()]
        out += [part.counts.astype("<i8").tobytes(), part.missing.astype("u1").tobytes()]
        if part.weights is not None:
            out.append(part.weights.astype("<f8").tobytes())
    else:
        out += [struct.pack("<QBQ", part.capacity, part.level, part.keys.size), part.keys.astype("<i8").tobytes(), part.counts.astype("<i8").tobytes()]
    return b"".join(out)


def _upgraded(table: KeyCounts, bad: str) -> KeyCounts:
    """A table of key encoding 1 with its keys re-encoded (:func:`mergeable_metrics.slicing.assign.upgrade_key_v1`)
    and re-sorted: the table a reader of this version would have counted."""
    try:
        keys = [upgrade_key_v1(bytes(k)) for k in table.keys]
    except ValueError as e:
        raise ValueError(f"{bad}: {e}") from None
    enc = np.array(keys or [b""], dtype="S")[: len(keys)]
    order = np.argsort(enc, kind="stable")
    return KeyCounts(enc[order], table.counts[order], None if table.weights is None else table.weights[order], table.missing[order])


def _check_total(counts: np.ndarray, bad: str) -> None:
    """Row counts whose total an int64 holds with room for merging (no data has 2**62 rows)."""
    if counts.size and float(counts.astype(np.float64).sum()) >= 2.0**62:
        raise ValueError(f"{bad}: the counts total {float(counts.astype(np.float64).sum()):.4g} rows (overflow)")


def _decode_part(r: _Reader, version: int = _VERSION) -> tuple[str, Any]:
    name = r.str16()
    (kind,) = r.unpack("<B")
    bad = f"corrupted slice profile: part {name!r}"
    if kind == KeyCounts.kind:
        m, width, weighted = r.unpack("<QIB")
        if m and width == 0 or weighted > 1:
            raise ValueError(f"{bad} has key width {width}, weighted flag {weighted}")
        keys = np.frombuffer(r.take(m * width), dtype=f"S{width}") if m else np.zeros(0, "S1")
        counts = np.frombuffer(r.take(8 * m), dtype="<i8").astype(np.int64)
        flags = np.frombuffer(r.take(m), dtype="u1")
        weights = np.frombuffer(r.take(8 * m), dtype="<f8").astype(np.float64) if weighted else None
        if np.any(flags > 1):
            raise ValueError(f"{bad}: missing-value flags must be 0 or 1")
        if m > 1 and not bool(np.all(keys[1:] > keys[:-1])):
            raise ValueError(f"{bad}: keys are not ascending and distinct")
        if np.any(counts <= 0) or (weights is not None and not (np.all(np.isfinite(weights)) and np.all(weights >= 0))):
            raise ValueError(f"{bad}: counts must be > 0 and weights finite and >= 0")
        _check_total(counts, bad)
        if version == 1:
            return name, _upgraded(KeyCounts(keys, counts, weights, flags.astype(bool)), bad)
        return name, KeyCounts(keys.copy(), counts, weights, flags.astype(bool))
    if kind == ValueSketch.kind:
        capacity, level, m = r.unpack("<QBQ")
        keys = np.frombuffer(r.take(8 * m), dtype="<i8").astype(np.int64)
        counts = np.frombuffer(r.take(8 * m), dtype="<i8").astype(np.int64)
        if capacity < 2 or level > 63 or m > capacity:
            raise ValueError(f"{bad} has capacity {capacity}, level {level}, {m} bins")
        if m > 1 and not bool(np.all(keys[1:] > keys[:-1])):
            raise ValueError(f"{bad}: keys are not ascending and distinct")
        if np.any(counts <= 0):
            raise ValueError(f"{bad}: counts must be > 0")
        _check_total(counts, bad)
        return name, ValueSketch(capacity, level, keys, counts)
    raise ValueError(f"{bad} has unknown kind {kind}")


# --------------------------------------------------------------------------------------------
class SliceProfile:
    """A mergeable profile: ``{part name: KeyCounts | ValueSketch}`` (see the module docstring).

    Equal data gives equal profiles whatever the split and merge order (``==`` compares them).
    """

    __slots__ = ("parts",)

    def __init__(self, parts: dict[str, Any] | None = None):
        self.parts = dict(parts or {})

    def merge(self, other: "SliceProfile") -> "SliceProfile":
        """The merged profile: a new object (this profile and ``other`` are left unchanged).

        Raises:
            ValueError: the profiles have different parts (different slice configurations).
        """
        return SliceProfile(self.parts).merge_into(other)

    def merge_into(self, other: "SliceProfile") -> "SliceProfile":
        """Merge ``other`` into this profile in place (mutated and returned; ``other`` is left
        unchanged). Its parts are immutable: each is replaced by the merged part.

        Raises:
            ValueError: as :meth:`merge`.
        """
        if set(other.parts) != set(self.parts):
            raise ValueError(f"cannot merge slice profiles with parts {sorted(self.parts)} and {sorted(other.parts)}")
        for name, part in other.parts.items():
            self.parts[name] = self.parts[name].merge(part)
        return self

    def encode(self) -> bytes:
        """Versioned, checksummed bytes (``b"MMP"``, version, parts, crc32); no pickle."""
        body = b"".join([_MAGIC, bytes([_VERSION]), struct.pack("<H", len(self.parts))] + [_encode_part(k, self.parts[k]) for k in sorted(self.parts)])
        return body + struct.pack("<I", zlib.crc32(body))

    @classmethod
    def decode(cls, data: bytes) -> "SliceProfile":
        """Inverse of :meth:`encode`.

        Raises:
            ValueError: wrong magic bytes or version, checksum mismatch, truncation.
            TypeError: ``data`` is not bytes.
        """
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"slice profile: expected bytes, got {type(data).__name__}")
        data = bytes(data)
        if len(data) < 10 or data[:3] != _MAGIC:
            raise ValueError("not a mergeable-metrics slice profile (bad magic bytes)")
        version = data[3]
        if version not in _VERSIONS:
            raise ValueError(f"slice profile codec version {version} is not supported (this library reads {', '.join(map(str, _VERSIONS))})")
        body, (crc,) = data[:-4], struct.unpack("<I", data[-4:])
        if zlib.crc32(body) != crc:
            raise ValueError("corrupted slice profile: checksum mismatch")
        r = _Reader(body, "slice profile")
        r.take(4)
        (n,) = r.unpack("<H")
        parts: dict[str, Any] = {}
        for _ in range(n):
            name, part = _decode_part(r, version)
            if name in parts:
                raise ValueError(f"corrupted slice profile: part {name!r} appears twice")
            parts[name] = part
        if r.pos != len(body):
            raise ValueError("corrupted slice profile: trailing bytes")
        return cls(parts)

    @property
    def nbytes(self) -> int:
        return sum(p.nbytes if isinstance(p, KeyCounts) else p.keys.nbytes + p.counts.nbytes for p in self.parts.values())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SliceProfile) and self.parts.keys() == other.parts.keys() and all(self.parts[k] == other.parts[k] for k in self.parts)

    def __repr__(self) -> str:
        return f"SliceProfile({self.parts!r})"


class ProfileSummary:
    """The resolved profile: per part, the kept keys of a ``max_slices`` cut or the quantile edges.

    JSON-ready (:meth:`to_json` / :meth:`from_json`) and small: ``2N`` keys per spec and
    ``k - 1`` edges per quantile bucketing.

    Attributes:
        parts: ``{"keys <spec>": {"kept": [hex], "folded_values": int, "distinct": int},
            "values <column>": {"edges": {"<k>": [float, ...]}, "exact": bool, "count": int}}``.
    """

    __slots__ = ("parts",)

    def __init__(self, parts: Mapping[str, Any] | None = None):
        self.parts = {name: _upgraded_summary(part) for name, part in (parts or {}).items()}

    def merge(self, other: "ProfileSummary") -> "ProfileSummary":
        """Union of summaries of different parts (e.g. resolved part by part on Spark)."""
        clash = set(self.parts) & set(other.parts)
        if clash:
            raise ValueError(f"profile summaries overlap on parts {sorted(clash)}")
        return ProfileSummary({**self.parts, **other.parts})

    def bounds(self, spec: SliceSpec) -> SpecBounds:
        """The :class:`~mergeable_metrics.slicing.assign.SpecBounds` of one spec.

        Raises:
            ValueError: a part the spec needs is missing, or a kept slice's values are all
                ``"__other__"`` (it would merge with the bucket of folded values).
        """
        edges = {}
        for col, k in spec.quantiles:
            part = self.parts.get(values_part(col))
            if part is None or str(k) not in part["edges"]:
                raise ValueError(f"the slice profile has no {k}-quantile edges of column {col!r} (spec {str(spec)!r})")
            edges[col] = tuple(float(e) for e in part["edges"][str(k)])
        if spec.max_slices is None:
            return SpecBounds(edges=edges)
        part = self.parts.get(keys_part(spec))
        if part is None:
            raise ValueError(f"the slice profile has no key counts of spec {str(spec)!r}")
        kept = frozenset(bytes.fromhex(h) for h in part["kept"])
        if encode_key([OTHER] * len(spec.columns)) in kept:
            raise ValueError(
                f"slice spec {str(spec)!r}: the data holds a slice whose value is {OTHER!r} in every column "
                f"({', '.join(spec.columns)}), the name of the slice of folded values; rename that value"
            )
        return SpecBounds(edges, kept, int(part["folded_values"]), int(part["distinct"]))

    def to_json(self) -> str:
        return json.dumps(self.parts, sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> "ProfileSummary":
        return cls(json.loads(text))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ProfileSummary) and self.to_json() == other.to_json()

    def __repr__(self) -> str:
        return f"ProfileSummary({self.to_json()[:200]})"


def _upgraded_summary(part: Any) -> Any:
    """A summary part as this version writes it: the kept keys of a summary of earlier releases
    (no ``key_encoding``: encoding 1) re-encoded, ascending."""
    if not isinstance(part, Mapping) or "kept" not in part or part.get("key_encoding", 1) == KEY_ENCODING:
        return part
    if part.get("key_encoding", 1) != 1:
        raise ValueError(f"slice profile summary: key encoding {part['key_encoding']!r} is not supported (this library reads 1, {KEY_ENCODING})")
    kept = sorted(upgrade_key_v1(bytes.fromhex(h)) for h in part["kept"])
    return {**part, "kept": [k.hex() for k in kept], "key_encoding": KEY_ENCODING}


def summarize_part(name: str, part: Any, specs: Iterable[SliceSpec]) -> dict[str, Any]:
    """Resolve one merged part (the edges for every k the specs ask of a column, or the top-N)."""
    specs = list(specs)
    if isinstance(part, KeyCounts):
        spec = next(s for s in specs if keys_part(s) == name)
        return part.summary(spec.max_slices, spec.by)
    col = name.split(" ", 1)[1]
    ks = sorted({k for s in specs for c, k in s.quantiles if c == col})
    return {"edges": {str(k): list(part.edges(k)) for k in ks}, "exact": part.exact, "count": part.count}


# --------------------------------------------------------------------------------------------
class SliceProfiler:
    """The counting pass of an evaluation, in the accumulator vocabulary every engine speaks:
    ``zero`` / ``fold`` / ``merge`` (pure) / ``merge_into`` (in place) / ``finish`` /
    ``encode`` / ``decode``.

    Args:
        slices: the evaluation's slice specs.
        weight_col: the weight column (read only for specs with ``by=weight``).
        capacity: capacity of quantile sketches.

    Example:
        >>> p = SliceProfiler(["g;max_slices=1"])
        >>> acc = p.fold(p.zero(), {"g": ["a", "b", "b", None]})
        >>> summary = p.finish(acc)
        >>> summary.bounds(p.slices[0]).folded_values
        1
    """

    def __init__(self, slices: Any, weight_col: str | None = None, capacity: int = DEFAULT_SKETCH_CAPACITY):
        self.slices = parse_slices(slices)
        self.weight_col = weight_col
        self.capacity = int(capacity)
        self.key_specs = [s for s in self.slices if s.max_slices is not None]
        self.value_columns = sorted({c for s in self.slices for c, _ in s.quantiles})
        cols: list[str] = []
        for s in self.key_specs:
            cols += [c for c in s.columns if c not in cols]
        cols += [c for c in self.value_columns if c not in cols]
        self.slice_columns = list(cols)
        self.weighted = weight_col is not None and any(s.by == "weight" for s in self.key_specs)
        if self.weighted and weight_col not in cols:
            cols.append(weight_col)
        self.columns = cols

    @property
    def needed(self) -> bool:
        return bool(self.key_specs or self.value_columns)

    def zero(self) -> SliceProfile:
        parts: dict[str, Any] = {keys_part(s): KeyCounts.empty(self.weighted and s.by == "weight") for s in self.key_specs}
        parts.update({values_part(c): ValueSketch(self.capacity) for c in self.value_columns})
        return SliceProfile(parts)

    def fold(self, profile: SliceProfile, data: Any, row_offset: int = 0) -> SliceProfile:
        """Count one batch (dict of columns, DataFrame, Arrow batch/table or list of row dicts)
        into ``profile`` (mutated and returned).

        Raises:
            ValueError: a column is missing.
            TypeError: a slice column mixes types, or a bucketed column holds a non-number.
        """
        slice_cols = [c for c in self.slice_columns if c != self.weight_col]
        cols, n = extract_columns(data, self.columns, slice_columns=slice_cols, row_offset=row_offset)
        if n == 0:
            return profile
        w = None
        if self.weighted:
            with np.errstate(invalid="ignore"):
                w = np.asarray(cols[self.weight_col], dtype=np.float64)
                w = np.where(np.isfinite(w) & (w >= 0), w, 0.0)
        for spec in self.key_specs:
            a = assign_slices(spec, cols, n, None, row_offset)
            name = keys_part(spec)
            profile.parts[name] = profile.parts[name].merge(KeyCounts.from_assignment(a, w if spec.by == "weight" else None))
        for col in self.value_columns:
            data_c = cols[col]
            values, rows = (data_c.values, data_c.rows) if isinstance(data_c, ListColumn) else (data_c, None)
            x = numeric_values(np.asarray(values), col, rows, row_offset)
            name = values_part(col)
            profile.parts[name] = profile.parts[name].merge(ValueSketch.from_values(x, self.capacity))
        return profile

    def merge(self, a: SliceProfile, b: SliceProfile) -> SliceProfile:
        """The merge of ``a`` and ``b``: a new profile (both are left unchanged)."""
        return a.merge(b)

    def merge_into(self, a: SliceProfile, b: SliceProfile) -> SliceProfile:
        """Merge ``b`` into ``a`` in place (``a`` is mutated and returned; ``b`` is left unchanged)."""
        return a.merge_into(b)

    def merge_all(self, profiles: Iterable[SliceProfile]) -> SliceProfile:
        """The merge of every profile of ``profiles`` (a new profile; they are left unchanged)."""
        out = self.zero()
        for p in profiles:
            out.merge_into(p)
        return out

    def finish(self, profile: SliceProfile) -> ProfileSummary:
        """Resolve a merged profile: the kept keys of every ``max_slices`` cut, the edges of every
        quantile bucketing."""
        return ProfileSummary({name: summarize_part(name, part, self.slices) for name, part in profile.parts.items()})

    def encode(self, profile: SliceProfile) -> bytes:
        return profile.encode()

    def decode(self, data: bytes) -> SliceProfile:
        """Inverse of :meth:`encode`.

        Raises:
            ValueError: corrupted bytes, or a profile of other slice specs.
        """
        p = SliceProfile.decode(data)
        if set(p.parts) != set(self.zero().parts):
            raise ValueError(f"slice profile parts {sorted(p.parts)} do not match this evaluation's {sorted(self.zero().parts)}")
        return p

    def profile(self, batches: Iterable[Any]) -> ProfileSummary:
        """Fold every batch in order and resolve (the local engine's first pass)."""
        return self.finish(fold_all(self, batches))

    def __repr__(self) -> str:
        return f"SliceProfiler(parts={sorted(self.zero().parts)})"
