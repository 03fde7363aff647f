"""Sufficient-statistic states: small, fixed-shape, exactly mergeable value objects.

A state is a hashable ``layout`` (its configuration) plus fixed-shape float64/int64 arrays. States of
the same layout merge by fieldwise addition, so ``merge`` is associative and commutative and
``zero(layout)`` is its identity: any split of the data over workers and batches gives the same
state bit for bit. Float sums are exact (:mod:`mergeable_metrics._util.exact`: kept as fixed-point integers, read as
the correctly rounded float64) and int64 counts are checked for overflow, so no order of folds and
merges changes a single bit.

Kinds:
    * :class:`ExampleCountState`: example count, weight sum and skipped-row count.
    * :class:`BinaryConfusionState`: weighted tp/fp/tn/fn at one or more thresholds.
    * :class:`ConfusionMatrixState`: weighted K x K confusion matrix (row = true, column = predicted).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, ClassVar

import numpy as np

from mergeable_metrics.inputs.validation import Batch
from mergeable_metrics.states.codec import STATE_KINDS, _decode_state, _encode_state
from mergeable_metrics._util.limits import MAX_NUM_CLASSES, check_count
from mergeable_metrics._util import exact_kernels as _kernels
from mergeable_metrics._util.exact import ExactSums, exact_sum, known_weight_sum, remember_weight_sum, weight_sum
from mergeable_metrics.inputs.task import THRESHOLD_RULES, check_thresholds  # noqa: F401  (THRESHOLD_RULES re-exported)


class State:
    """Base class of all states. Subclasses define ``kind``, ``Layout`` and ``FIELDS``.

    ``FIELDS`` is a tuple of ``(name, dtype)``; ``shape(layout)`` gives every field's shape.
    Instances are immutable: their arrays are read-only and ``arrays`` is a read-only mapping, so
    ``copy.copy`` / ``copy.deepcopy`` return the state itself (nothing can be shared and mutated).

    What a valid state holds (checked by :meth:`validate`, e.g. on every decode) is driven by two
    tables next to ``FIELDS``: ``COUNTS`` names the fields that sum row weights (>= 0; integers
    when the rows were unweighted) and ``NONNEGATIVE`` other fields that are never negative (e.g.
    sums of squares). Every float field must be finite. A kind that adds a field lists it in one of
    them if it has that property.
    """

    kind: ClassVar[str]
    Layout: ClassVar[type]
    FIELDS: ClassVar[tuple[tuple[str, str], ...]]
    COUNTS: ClassVar[tuple[str, ...]] = ()
    NONNEGATIVE: ClassVar[tuple[str, ...]] = ()
    #: float64 fields that are exact sums (:class:`mergeable_metrics._util.exact.ExactSums`): each is stored with two
    #: more int64 fields, ``<name>.exp`` () and ``<name>.limbs`` (n,), empty while the sums are
    #: exactly their float64 values; the float64 field is always the correctly rounded sum.
    EXACT: ClassVar[tuple[str, ...]] = ()
    #: ``FIELDS`` plus the exact sums' limb fields: what the codec writes and equality compares.
    STORED_FIELDS: ClassVar[tuple[tuple[str, str], ...]]
    #: float64 fields merged by ``max`` (not summed)
    MAXED: ClassVar[tuple[str, ...]] = ()
    _ORDER: ClassVar[tuple[str, ...]]
    #: ``(name, is an EXACT field)`` of every field of ``FIELDS``
    _KINDS: ClassVar[tuple[tuple[str, bool], ...]]
    #: whether bytes of codec version 1 (float sums without limbs) can be read (upgraded)
    CODEC_V1: ClassVar[bool] = True
    #: the kind's own version, written in every state frame (:mod:`mergeable_metrics.states.codec`): raise it when
    #: the kind's fields or their meaning change, and read older bytes in :meth:`upgrade`
    VERSION: ClassVar[int] = 1
    #: the ``FIELDS`` of an older kind version that had other fields (``{version: FIELDS}``): the
    #: codec reads such bytes with these fields and passes them to :meth:`upgrade`
    OLD_FIELDS: ClassVar[dict[int, tuple[tuple[str, str], ...]]] = {}

    __slots__ = ("layout", "arrays", "exact")

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        if cls.kind in STATE_KINDS:
            raise ValueError(f"state kind {cls.kind!r} is defined twice")
        names = {n for n, _ in cls.FIELDS}
        unknown = (set(cls.COUNTS) | set(cls.NONNEGATIVE)) - names
        if unknown:
            raise ValueError(f"state kind {cls.kind!r}: COUNTS/NONNEGATIVE name unknown fields {sorted(unknown)}")
        STATE_KINDS[cls.kind] = cls
        fields_ = dict(cls.FIELDS)
        for name in cls.EXACT:
            if fields_.get(name) != "float64":
                raise ValueError(f"{cls.kind}: exact field {name!r} must be a float64 field")
        cls._KINDS = tuple((name, name in cls.EXACT) for name, _ in cls.FIELDS)
        cls.STORED_FIELDS = tuple(cls.FIELDS) + tuple((f"{name}.{part}", "int64") for name in cls.EXACT for part in ("exp", "limbs"))
        # the keys of ``arrays`` in the order :meth:`__init__` builds them
        cls._ORDER = tuple(k for name, _ in cls.FIELDS for k in ((f"{name}.exp", f"{name}.limbs", name) if name in cls.EXACT else (name,)))

    def __init__(self, layout: Any, arrays: dict[str, Any]):
        """``arrays``: every field of ``FIELDS``; an exact field may be an :class:`ExactSums`,
        float64 values (each an exact number), or the values with their stored ``.exp`` and
        ``.limbs`` fields (checked to be canonical)."""
        if not isinstance(layout, self.Layout):
            raise TypeError(f"{self.kind}: layout must be {self.Layout.__name__}, got {layout!r}")
        checked = {}
        exact = {}
        pending: dict[str, ExactSums] = {}
        for name, dtype in self.FIELDS:
            v = arrays[name]
            es = None
            if isinstance(v, ExactSums):
                want = self.shape(layout, name)
                # rounded when first read (see _Arrays); a 1-D field of any length when its values were rounded
                # already (ExactSums.lazy's values: its limbs are canonicalised only if read)
                if name in self.EXACT and v._raw is not None and (v.shape == want or (want is None and v._values is not None and len(v.shape) == 1)):
                    pending[name] = v
                    exact[name] = v
                    continue
                es, v = v, v.values
            a = np.asarray(v)
            want = self.shape(layout, name)  # None: a 1-D field of any length
            if a.dtype != np.dtype(dtype) or (a.ndim != 1 if want is None else a.shape != want):
                raise ValueError(f"{self.kind}.{name}: expected {dtype}{'(n,)' if want is None else want}, got {a.dtype}{a.shape}")
            if name in self.EXACT:
                if es is None and f"{name}.limbs" in arrays:
                    e, limbs = np.asarray(arrays[f"{name}.exp"]), np.asarray(arrays[f"{name}.limbs"])
                    if e.shape != () or e.dtype != np.int64 or limbs.ndim != 1 or limbs.dtype != np.int64:
                        raise ValueError(f"{self.kind}.{name}: bad exact-sum fields {e.dtype}{e.shape}, {limbs.dtype}{limbs.shape}")
                    es = ExactSums.from_stored(a, int(e), limbs, f"{self.kind}.{name}")
                elif es is None:
                    try:
                        es = ExactSums.of_floats(a)
                    except ValueError as err:
                        raise ValueError(f"{self.kind}.{name}: {err}") from None
                a = es.values
                exact[name] = es
                checked[f"{name}.exp"] = np.asarray(np.int64(es.exp))
                checked[f"{name}.limbs"] = es.limbs.reshape(-1)
            elif a.flags.writeable:
                if a.base is not None:  # a view: the caller may still write through its base
                    a = a.copy()
                a.flags.writeable = False
            checked[name] = a
        for a in checked.values():
            if a.flags.writeable:
                a.flags.writeable = False
        object.__setattr__(self, "layout", layout)
        object.__setattr__(self, "arrays", _Arrays(checked, pending, self._ORDER) if pending else MappingProxyType(checked))
        object.__setattr__(self, "exact", exact)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __reduce__(self) -> tuple:
        return (_rebuild_state, (self.kind, self.layout, dict(self.arrays)))

    @classmethod
    def fields_of_version(cls, version: int, stored: bool = True) -> tuple[tuple[str, str], ...]:
        """The fields bytes of kind ``version`` hold: its ``FIELDS`` (:attr:`OLD_FIELDS` for an
        older version that differs) and, with ``stored``, the limb fields of its exact sums."""
        fields = cls.OLD_FIELDS.get(version, cls.FIELDS)
        if not stored:
            return tuple(fields)
        if fields is cls.FIELDS:
            return cls.STORED_FIELDS
        names = {n for n, _ in fields}
        return tuple(fields) + tuple((f"{n}.{part}", "int64") for n in cls.EXACT if n in names for part in ("exp", "limbs"))

    @classmethod
    def upgrade(cls, version: int, layout: Any, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The fields of this kind's current :attr:`VERSION` from decoded fields of an older kind
        ``version`` (the codec calls it; the result is then checked as any decoded state).

        Raises:
            ValueError: this kind cannot read that version (the default: no older version exists).
        """
        raise ValueError(f"state {cls.kind} bytes of kind version {version} cannot be upgraded to version {cls.VERSION}")

    def validate(self, integral: bool = False) -> "State":
        """Check the values a state of this kind can hold (returns ``self``).

        Every float field is finite (an ``EXACT`` field may round to +-inf: its exact sum, held
        in its limbs and checked by the constructor, can exceed the float64 range, e.g. weights
        times values near 1e300); ``COUNTS`` and ``NONNEGATIVE`` fields are >= 0; with
        ``integral`` (the rows were unweighted) ``COUNTS`` fields hold whole numbers.

        Raises:
            ValueError: naming the kind, the field, the first bad entry and its value.
        """
        for name, _dtype in self.FIELDS:
            a = self.arrays[name]
            checks = []
            if a.dtype.kind == "f":
                checks.append(("not finite", np.isnan(a) if name in self.EXACT else ~np.isfinite(a)))
            if name in self.COUNTS or name in self.NONNEGATIVE:
                with np.errstate(invalid="ignore"):
                    checks.append(("negative", a < 0))
            if integral and name in self.COUNTS and a.dtype.kind == "f":
                with np.errstate(invalid="ignore"):
                    checks.append(("not a whole number (the rows are unweighted)", np.isfinite(a) & (a != np.floor(a))))
            for what, bad in checks:
                if bad.any():
                    at = tuple(int(i) for i in np.argwhere(bad)[0]) if a.ndim else ()
                    where = f"[{', '.join(map(str, at))}]" if at else ""
                    raise ValueError(f"invalid {self.kind} state: {name}{where} = {a[at].item()!r} is {what}")
        return self

    # -- layout ------------------------------------------------------------------------------
    @classmethod
    def shape(cls, layout: Any, field: str) -> tuple[int, ...] | None:
        """The field's shape under ``layout``; ``None`` means a 1-D field of any length (kinds with
        such fields override ``zero`` and ``merge``)."""
        return ()

    @classmethod
    def layout_for(cls, requirements: list[Any], task: Any) -> Any:
        """The layout that serves every metric's requirement (e.g. the union of thresholds) for a
        :class:`mergeable_metrics.metrics.base.Task`. Plans call this to share one state between metrics."""
        raise NotImplementedError

    @classmethod
    def zero(cls, layout: Any) -> "State":
        """The identity state of ``layout``: all sums zero (one shared immutable object per kind
        and layout, which :meth:`merge` recognises)."""
        key = (cls, layout)
        z = _ZEROS.get(key)
        if z is None:
            z = cls(layout, {n: np.zeros(cls.shape(layout, n), dtype=d) for n, d in cls.FIELDS})
            if len(_ZEROS) < 4096:
                _ZEROS[key] = z
        return z

    @classmethod
    def from_batch(cls, layout: Any, batch: Batch) -> "State":
        """The state of one validated batch (vectorised, no per-row Python)."""
        raise NotImplementedError

    # -- cells: the seam of the slice-vectorised fold (mergeable_metrics.slicing.grouped) and engine lowerings ------
    @classmethod
    def num_cells(cls, layout: Any) -> int | None:
        """Number of per-row *cells* of a kind whose state is a sum over them (None: not such a
        kind). A row falls in exactly one cell (:meth:`cells`); the state of any rows is a
        function of the row count and the weight sum of each cell (:meth:`from_cells`)."""
        return None

    @classmethod
    def cells(cls, layout: Any, batch: Batch) -> np.ndarray:
        """(n,) intp cell in ``[0, num_cells(layout))`` of each element of a validated batch."""
        raise NotImplementedError(f"{cls.kind} is not a sum of per-row cells")

    @classmethod
    def from_cells(cls, layout: Any, counts: np.ndarray, weights: ExactSums | None) -> "State":
        """The state of rows summarised per cell: ``counts`` (num_cells,) int64 rows per cell and,
        when the rows are weighted, ``weights`` their exact weight sums (None: unit weights;
        kinds without a row count may then take ``counts=None``).
        Equal, bit for bit, to folding the rows themselves."""
        raise NotImplementedError(f"{cls.kind} is not a sum of per-row cells")

    def fold(self, batch: Batch) -> "State":
        """``self.merge(from_batch(self.layout, batch))``."""
        return self.merge(type(self).from_batch(self.layout, batch))

    def merge(self, other: "State") -> "State":
        """Fieldwise sum of two states of the same kind and layout.

        Raises:
            ValueError: the kinds or layouts differ; the message names the differing setting.
        """
        if type(other) is not type(self):
            raise ValueError(f"cannot merge state {other.kind!r} into {self.kind!r}")
        if other.layout != self.layout:
            raise ValueError(f"cannot merge {self.kind} states: {_layout_diff(self.layout, other.layout)}")
        zero = _ZEROS.get((type(self), self.layout))
        if zero is not None and (self is zero or other is zero):  # the identity: nothing to add
            return other if self is zero else self
        return type(self)._of_sums(self.layout, {n: self._add_field(other, n) for n, _ in self.FIELDS})

    @classmethod
    def _of_sums(cls, layout: Any, arrays: dict[str, Any]) -> "State":
        """A state of fields that are sums of two states' fields (:meth:`merge`): each has its
        field's dtype and shape already, so only the exact sums and the read-only flags are set
        up (the checks of :meth:`__init__` are skipped)."""
        self = object.__new__(cls)
        checked = {}
        exact = {}
        for name, is_exact in cls._KINDS:
            v = arrays[name]
            if is_exact:
                exact[name] = v
                continue
            a = v if type(v) is np.ndarray else np.asarray(v)
            if a.flags.writeable:
                a.flags.writeable = False
            checked[name] = a
        object.__setattr__(self, "layout", layout)
        object.__setattr__(self, "arrays", _Arrays(checked, exact, cls._ORDER) if exact else MappingProxyType(checked))
        object.__setattr__(self, "exact", exact)
        return self

    @classmethod
    def _of_fields(cls, layout: Any, arrays: dict[str, np.ndarray], exact: dict[str, ExactSums]) -> "State":
        """:meth:`_of_sums` of fields already in their final form: ``arrays`` the read-only
        arrays of the fields that are not exact sums, ``exact`` the exact sums (a fold's new
        fields, e.g. ``MetricCollection.update``'s fast path); nothing is checked or copied."""
        self = object.__new__(cls)
        object.__setattr__(self, "layout", layout)
        object.__setattr__(self, "arrays", _Arrays(arrays, exact, cls._ORDER))
        object.__setattr__(self, "exact", exact)
        return self

    def _add_field(self, other: "State", name: str) -> Any:
        """One field of ``self + other``: exact sums add exactly, ``MAXED`` fields take the max,
        int64 counts are checked for overflow (``ValueError`` naming the state and field)."""
        if name in self.EXACT:
            return self.exact[name] + other.exact[name]
        if name in self.MAXED:
            return np.maximum(self.arrays[name], other.arrays[name])
        return checked_add(self.arrays[name], other.arrays[name], f"{self.kind}.{name}")

    __add__ = merge

    def __copy__(self) -> "State":
        return self  # immutable value object

    def __deepcopy__(self, memo: dict) -> "State":
        return self

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.layout == self.layout and all(np.array_equal(self.arrays[n], other.arrays[n]) for n, _ in self.STORED_FIELDS)

    def __hash__(self) -> int:
        return hash((self.kind, self.layout, tuple(self.arrays[n].tobytes() for n, _ in self.STORED_FIELDS)))

    def __getitem__(self, field: str) -> np.ndarray:
        return self.arrays[field]

    def __repr__(self) -> str:
        body = ", ".join(f"{n}={self.arrays[n].tolist()}" for n, _ in self.FIELDS)
        return f"{type(self).__name__}({self.layout}, {body})"

    def summary(self) -> str:
        """One line for tree printing: kind, layout and size in bytes."""
        size = sum(a.nbytes for a in self.arrays.values())
        return f"{self.kind} {self.layout} ({size} B)"

    def encode(self) -> bytes:
        """Versioned, checksummed bytes (see :mod:`mergeable_metrics.states.codec`)."""
        return _encode_state(self)

    @classmethod
    def decode(cls, data: bytes) -> "State":
        """Inverse of :meth:`encode`: a validated state (see :meth:`validate`) of this class's kind
        (``State.decode`` accepts any kind).

        Raises:
            ValueError: corrupted or foreign bytes, or values no state can hold.
            TypeError: ``data`` is not bytes, or the bytes hold another kind (e.g.
                ``BinaryConfusionState.decode`` of a confusion matrix).
        """
        return _decode_state(data, None if cls is State else cls)


#: the shared zero state of each (kind, layout) (:meth:`State.zero`)
_ZEROS: dict[tuple[type, Any], State] = {}


class _Arrays(Mapping):
    """The read-only fields of a merged state whose exact sums are rounded (their float64 value,
    ``.exp`` and ``.limbs`` fields) only when one of them is read: a fold of many batches rounds
    once, where the state is observed (encode, equality, compute, repr)."""

    __slots__ = ("_data", "_exact", "_order")

    def __init__(self, data: dict[str, np.ndarray], exact: dict[str, ExactSums], order: tuple[str, ...]):
        self._data = data
        self._exact = dict(exact)
        self._order = order

    def __getitem__(self, key: str) -> np.ndarray:
        try:
            return self._data[key]
        except KeyError:
            pass
        name = key[: -len(".exp")] if key.endswith(".exp") else key[: -len(".limbs")] if key.endswith(".limbs") else key
        es = self._exact.get(name)  # kept (not popped): a concurrent reader rounds it too, same bits
        if es is None:
            raise KeyError(key)
        if key == name:  # the values alone (sums rounded without their limbs stay so: ExactSums.lazy's values)
            v = self._data[name] = es.values
            return v
        e = np.asarray(np.int64(es.exp))
        e.flags.writeable = False
        got = {f"{name}.exp": e, f"{name}.limbs": es.limbs.reshape(-1)}
        got[name] = self._data.get(name, es.values)
        self._data.update(got)
        return got[key]

    def __iter__(self):
        return iter(self._order)

    def __len__(self) -> int:
        return len(self._order)

    def __contains__(self, key: object) -> bool:
        return key in self._order


def _rebuild_state(kind: str, layout: Any, arrays: dict) -> State:
    """Unpickle a state (validated like a decoded one)."""
    return STATE_KINDS[kind](layout, arrays)


def checked_add(a: np.ndarray, b: np.ndarray, what: str) -> np.ndarray:
    """``a + b`` of two same-shape arrays; int64 sums are checked for overflow.

    Raises:
        ValueError: an int64 sum overflows (the message names ``what``, e.g. ``"example_count.count"``).
    """
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != np.int64:
        return a + b
    if a.ndim == 0 and b.ndim == 0 and b.dtype == np.int64:  # one count: Python integers, checked the same
        r = int(a) + int(b)
        if -(1 << 63) <= r < (1 << 63):
            return np.array(r, dtype=np.int64)
        raise ValueError(f"{what}: int64 overflow adding {a.tolist()} and {b.tolist()} (counts past 2**63 - 1)")
    r = np.add(a, b)  # int64 arrays wrap around silently (no warning): checked below
    if (((a ^ r) & (b ^ r)) < 0).any():
        raise ValueError(f"{what}: int64 overflow adding {a.tolist()} and {b.tolist()} (counts past 2**63 - 1)")
    return r


def count_plus(a: np.ndarray, n: int, what: str) -> np.ndarray:
    """``checked_add(a, full(a.shape, n), what)`` of int64 counts ``a`` and a row count ``n >= 0``
    (the fold of ``n`` rows), on Python integers (the same result and message)."""
    if a.ndim == 0:
        r = int(a) + n
        if r < (1 << 63):
            return np.array(r, dtype=np.int64)
    elif 0 < a.size <= 16:
        counts = a.ravel().tolist()
        if max(counts) + n < (1 << 63):
            return np.array([c + n for c in counts], dtype=np.int64).reshape(a.shape)
    return checked_add(a, np.full(a.shape, n, dtype=np.int64), what)


def _layout_diff(a: Any, b: Any) -> str:
    if type(a) is not type(b):
        return f"layout {a!r} != {b!r}"
    diffs = [f"{f.name} {getattr(a, f.name)!r} != {getattr(b, f.name)!r}" for f in fields(a) if getattr(a, f.name) != getattr(b, f.name)]
    return "different " + "; ".join(diffs)


def _weighted_count(index: np.ndarray, weight: np.ndarray | None, size: int) -> np.ndarray:
    """Exact per-index sums: int counts (as float64) or float64 weight sums."""
    if weight is None:
        return np.bincount(index, minlength=size).astype(np.float64)
    # np.bincount returns int64 for an empty index even with weights: force float64
    return np.bincount(index, weights=weight, minlength=size).astype(np.float64, copy=False)


#: Rows per step of the chunked folds below: their temporaries (a few bytes per row) stay in the
#: CPU cache, so a fold reads each input column from memory once. Summing per chunk and then
#: across chunks is at least as accurate as one sequential sum over the whole batch.
_CHUNK = 1 << 16


def _one_threshold_counts(y: np.ndarray, score: np.ndarray, threshold: float, rule: str, weight: np.ndarray | None) -> dict[str, np.ndarray]:
    """``tp, fp, tn, fn`` as (1,) float64 arrays at one threshold (``score >= t`` or ``>``).

    Unweighted: exact integer counts from ``np.count_nonzero`` of the predicted-positive mask and
    of (positive and predicted positive); the other cells are integer differences. Weighted: the
    exact sum (:func:`mergeable_metrics._util.exact.exact_sum`) of the weights per cell ``2 * label + predicted``.
    """
    n = y.shape[0]
    above = np.greater_equal if rule == ">=" else np.greater
    if weight is None:
        npred = tp = 0
        for i in range(0, n, _CHUNK):
            pred = above(score[i : i + _CHUNK], threshold)
            npred += np.count_nonzero(pred)
            pred &= y[i : i + _CHUNK] != 0
            tp += np.count_nonzero(pred)
        npos = np.count_nonzero(y)
        cells = {"tp": tp, "fp": npred - tp, "tn": n - npred - (npos - tp), "fn": npos - tp}
    else:  # exact sums of the weights per cell 2 * label + predicted: tn, fp, fn, tp
        raw = _kernels.binary_cells(y, score, threshold, rule != ">=", weight) if n <= _kernels.CHUNK and _kernels.ready() else None
        if raw is not None:  # one compiled pass, no cell array (the same exact sums)
            sums = ExactSums.lazy(raw[0], raw[1], (4,))
            _remember_cell_total(weight, raw)
            return {name: sums.take(np.array([i])) for name, i in (("tp", 3), ("fp", 1), ("tn", 0), ("fn", 2))}
        cell = np.multiply(y, 2, dtype=np.intp)
        cell += above(score, threshold)
        sums = exact_sum(weight, index=cell, size=4)
        return {name: sums.take(np.array([i])) for name, i in (("tp", 3), ("fp", 1), ("tn", 0), ("fn", 2))}
    return {name: np.array([value], dtype=np.float64) for name, value in cells.items()}


def _precounted_threshold(n: int, pre: Any, weight: np.ndarray | None) -> dict[str, Any]:
    """The fields of :func:`_one_threshold_counts` from the counts of the validation's pass
    (:attr:`Batch.cells`): unweighted ``(npos, npred, tp)``, weighted the raw sums of
    tn, fp, fn, tp (:func:`mergeable_metrics._util.exact_kernels.binary_cells`)."""
    if weight is None:  # row counts below 2**53: each a float64 exactly
        npos, npred, tp = pre
        cells = {"tp": tp, "fp": npred - tp, "tn": n - npred - (npos - tp), "fn": npos - tp}
        return {name: ExactSums._compact(np.array([float(value)])) for name, value in cells.items()}
    sums = ExactSums.lazy(pre[0], pre[1], (4,))
    _remember_cell_total(weight, pre)
    return {name: sums.take(np.array([i])) for name, i in (("tp", 3), ("fp", 1), ("tn", 0), ("fn", 2))}


def _remember_cell_total(weight: np.ndarray, raw: tuple[np.ndarray, int]) -> None:
    """Record the exact sum of ``weight`` (the sum of its per-cell raw limbs ``raw``) for the
    other states of the batch's fold (:func:`mergeable_metrics._util.exact.weight_sum`)."""
    if known_weight_sum(weight) is None:
        D = raw[0]
        remember_weight_sum(weight, ExactSums.lazy(D.sum(axis=0, keepdims=True) if D.shape[1] else D[:1], raw[1], ()))


def _pair_counts(a: np.ndarray, b: np.ndarray, k: int, weight: np.ndarray | None) -> np.ndarray | ExactSums:
    """(k, k) counts of the cells ``a * k + b``: float64 exact ints (one ``np.bincount`` per
    cache-sized chunk) or, weighted, the exact weight sums."""
    n = a.shape[0]
    if n <= _kernels.CHUNK and _kernels.ready():  # one compiled pass, no cell array (the same sums)
        raw = _kernels.pair_cells(a, b, k, weight)
        if raw is not None and weight is None:
            return raw.astype(np.float64).reshape(k, k)
        if raw is not None:
            _remember_cell_total(weight, raw)
            return ExactSums.lazy(raw[0], raw[1], (k, k))
    if weight is not None:
        cell = np.multiply(a, k, dtype=np.intp)
        cell += b
        return exact_sum(weight, index=cell, size=k * k, shape=(k, k))
    out = np.zeros(k * k, dtype=np.int64)
    key = np.empty(min(n, _CHUNK), dtype=np.intp)
    for i in range(0, n, _CHUNK):
        c = key[: min(_CHUNK, n - i)]
        np.multiply(a[i : i + _CHUNK], k, out=c)
        c += b[i : i + _CHUNK]
        out += np.bincount(c, minlength=k * k)
    return out.astype(np.float64).reshape(k, k)


# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ExampleCountLayout:
    """No configuration: every slice counts its examples."""


class ExampleCountState(State):
    """Number of examples (int64), their exact weight sum (float64) and skipped invalid rows (int64)."""

    kind = "example_count"
    Layout = ExampleCountLayout
    FIELDS = (("count", "int64"), ("weight", "float64"), ("skipped", "int64"))
    COUNTS = ("count", "weight", "skipped")
    EXACT = ("weight",)

    @classmethod
    def layout_for(cls, requirements: list[Any], task: Any) -> ExampleCountLayout:
        return ExampleCountLayout()

    @classmethod
    def from_batch(cls, layout: ExampleCountLayout, batch: Batch) -> "ExampleCountState":
        """Rows and their weight sum. When elements are pixels (``batch.row_of``), a row (image)
        counts once, with its weight, if any of its elements was folded."""
        w = batch.sample_weight
        if batch.row_of is None:
            count = batch.n
        else:
            rows, first = np.unique(batch.row_of, return_index=True)
            count = rows.shape[0]
            w = None if w is None else w[first]
        weight = ExactSums.of_count(count) if w is None else (weight_sum(w) if batch.row_of is None else exact_sum(w))
        # every field has its dtype and shape: built without the constructor's checks
        return cls._of_sums(layout, {"count": np.array(count, dtype=np.int64), "weight": weight, "skipped": np.array(0, dtype=np.int64)})

    def fold(self, batch: Batch) -> "ExampleCountState":
        """``self.merge(from_batch(self.layout, batch))`` without the batch's own state (the
        same fields, added in the same order)."""
        if batch.row_of is not None:
            return super().fold(batch)
        w = batch.sample_weight
        n = batch.n
        a = self.arrays
        return type(self)._of_sums(
            self.layout,
            {
                "count": count_plus(a["count"], n, "example_count.count"),
                "weight": self.exact["weight"] + (ExactSums.of_count(n) if w is None else weight_sum(w)),
                "skipped": a["skipped"],
            },
        )

    @classmethod
    def num_cells(cls, layout: ExampleCountLayout) -> int:
        return 1

    @classmethod
    def cells(cls, layout: ExampleCountLayout, batch: Batch) -> np.ndarray:
        """One cell: every row (pixels of a map are not rows: see :meth:`from_batch`)."""
        if batch.row_of is not None:
            raise ValueError("example counts of maps count images, not per-element cells")
        return np.zeros(batch.n, dtype=np.intp)

    @classmethod
    def from_cells(cls, layout: ExampleCountLayout, counts: np.ndarray, weights: ExactSums | None) -> "ExampleCountState":
        count = int(np.sum(counts))
        if weights is None:
            weight = np.float64(count)
        elif weights.shape == (1,):
            weight = weights.take(np.array([0]), shape=())
        else:
            weight = weights.regroup(np.zeros(weights.shape[0], np.int64), 1, ())
        return cls(layout, {"count": np.int64(count), "weight": weight, "skipped": np.int64(0)})

    @classmethod
    def skipped_rows(cls, count: int) -> "ExampleCountState":
        """A state recording ``count`` skipped invalid rows and nothing else."""
        return cls(
            ExampleCountLayout(),
            {"count": np.int64(0), "weight": np.float64(0.0), "skipped": np.int64(count)},
        )


# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BinaryConfusionLayout:
    """Sorted distinct thresholds and the rule: ``>=`` means ``score >= t`` is predicted positive."""

    thresholds: tuple[float, ...] = (0.5,)
    threshold_rule: str = ">="

    def __post_init__(self) -> None:
        object.__setattr__(self, "thresholds", check_thresholds(self.thresholds, self.threshold_rule))

    def index(self, threshold: float) -> int:
        try:
            return self.thresholds.index(float(threshold))
        except ValueError:
            raise KeyError(f"threshold {threshold} is not in this state's thresholds {self.thresholds}") from None


class BinaryConfusionState(State):
    """Weighted confusion counts at each threshold: ``tp, fp, tn, fn``, each (T,) float64.

    Predictions come from ``y_score`` (``score >= t``, or ``>`` with ``threshold_rule=">"``) or,
    when the batch has only hard predictions ``y_pred`` in {0, 1}, from ``y_pred`` at every
    threshold in (0, 1]. Every count is an exact sum (:mod:`mergeable_metrics._util.exact`): integers stored in float64
    while they fit, exact limbs beyond 2**53 and for fractional weights.
    """

    kind = "binary_confusion"
    Layout = BinaryConfusionLayout
    FIELDS = (("tp", "float64"), ("fp", "float64"), ("tn", "float64"), ("fn", "float64"))
    COUNTS = ("tp", "fp", "tn", "fn")
    EXACT = ("tp", "fp", "tn", "fn")

    @classmethod
    def shape(cls, layout: BinaryConfusionLayout, field: str) -> tuple[int, ...]:
        return (len(layout.thresholds),)

    @classmethod
    def layout_for(cls, requirements: list[Any], task: Any) -> BinaryConfusionLayout:
        """Every requested threshold, sorted and distinct, with the task's threshold rule."""
        return BinaryConfusionLayout(tuple(sorted({float(t) for t in requirements})), task.threshold_rule)

    @classmethod
    def from_batch(cls, layout: BinaryConfusionLayout, batch: Batch) -> "BinaryConfusionState":
        thr = np.asarray(layout.thresholds)
        t = thr.shape[0]
        score = batch.y_score if batch.y_score is not None else batch.y_pred
        if score is None:
            raise ValueError("binary confusion counts need scores or predictions")
        y = batch.y_true
        if t == 1:  # the common case: one cache-sized pass, exact counts (see _one_threshold_counts)
            pre = batch.cells_for(("threshold", layout.thresholds[0], layout.threshold_rule == ">"), batch.y_score)
            if pre is not None:  # counted by the validation's compiled pass (the same counts)
                # every field an exact sum of its shape: built without the constructor's checks
                return cls._of_sums(layout, _precounted_threshold(batch.n, pre, batch.sample_weight))
            return cls(layout, _one_threshold_counts(y, score, thr[0], layout.threshold_rule, batch.sample_weight))
        # several thresholds: one count (or exact weight sum) per cell (label, thresholds passed),
        # then running sums over the thresholds (see from_cells)
        cell = cls.cells(layout, batch)
        size = cls.num_cells(layout)
        if batch.sample_weight is not None:
            return cls.from_cells(layout, None, exact_sum(batch.sample_weight, index=cell, size=size))
        return cls.from_cells(layout, np.bincount(cell, minlength=size), None)

    def counts(self, threshold: float) -> tuple[float, float, float, float]:
        """``(tp, fp, tn, fn)`` at one of the state's thresholds (KeyError if absent)."""
        j = self.layout.index(threshold)
        a = self.arrays
        return float(a["tp"][j]), float(a["fp"][j]), float(a["tn"][j]), float(a["fn"][j])

    @classmethod
    def num_cells(cls, layout: BinaryConfusionLayout) -> int:
        return 2 * (len(layout.thresholds) + 1)

    @classmethod
    def cells(cls, layout: BinaryConfusionLayout, batch: Batch) -> np.ndarray:
        """``label * (T + 1) + k``: ``k`` is the number of the T thresholds the row's score passes
        (scores from ``y_score``, else the predictions ``y_pred``)."""
        score = batch.y_score if batch.y_score is not None else batch.y_pred
        if score is None:
            raise ValueError("binary confusion counts need scores or predictions")
        thr = layout.thresholds
        t = len(thr)
        cell = np.multiply(batch.y_true, t + 1, dtype=np.intp)
        if t == 1:
            above = np.greater_equal if layout.threshold_rule == ">=" else np.greater
            cell += above(score, thr[0])
        else:
            cell += np.searchsorted(np.asarray(thr), score, side="right" if layout.threshold_rule == ">=" else "left")
        return cell

    @classmethod
    def from_cells(cls, layout: BinaryConfusionLayout, counts: np.ndarray, weights: ExactSums | None) -> "BinaryConfusionState":
        t1 = len(layout.thresholds) + 1
        after, upto = slice(1, None), slice(None, -1)
        if weights is None:
            c = np.asarray(counts, dtype=np.int64)
            neg, pos_ = c[:t1], c[t1:]
            fields = {
                "tp": np.cumsum(pos_[::-1])[::-1][after], "fp": np.cumsum(neg[::-1])[::-1][after],
                "tn": np.cumsum(neg)[upto], "fn": np.cumsum(pos_)[upto],
            }  # fmt: skip
            return cls(layout, {k: v.astype(np.float64) for k, v in fields.items()})
        neg_, pos_w = weights.take(slice(0, t1)), weights.take(slice(t1, 2 * t1))
        return cls(
            layout,
            {
                "tp": pos_w.cumsum(reverse=True).take(after),
                "fp": neg_.cumsum(reverse=True).take(after),
                "tn": neg_.cumsum().take(upto),
                "fn": pos_w.cumsum().take(upto),
            },
        )

    def confusion_matrix(self, threshold: float) -> np.ndarray:
        """The 2 x 2 matrix ``[[tn, fp], [fn, tp]]`` (rows true, columns predicted) at a threshold."""
        tp, fp, tn, fn = self.counts(threshold)
        return np.array([[tn, fp], [fn, tp]], dtype=np.float64)


# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ConfusionMatrixLayout:
    """Number of classes K (labels and predictions in [0, K))."""

    num_classes: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "num_classes", check_count(self.num_classes, "num_classes", 2, MAX_NUM_CLASSES))


class ConfusionMatrixState(State):
    """Weighted K x K confusion matrix, float64: ``matrix[i, j]`` sums rows with true i, predicted j
    (an exact sum, :mod:`mergeable_metrics._util.exact`).

    Same orientation as ``sklearn.metrics.confusion_matrix``.
    """

    kind = "confusion_matrix"
    Layout = ConfusionMatrixLayout
    FIELDS = (("matrix", "float64"),)
    COUNTS = ("matrix",)
    EXACT = ("matrix",)

    @classmethod
    def shape(cls, layout: ConfusionMatrixLayout, field: str) -> tuple[int, ...]:
        return (layout.num_classes, layout.num_classes)

    @classmethod
    def layout_for(cls, requirements: list[Any], task: Any) -> ConfusionMatrixLayout:
        return ConfusionMatrixLayout(task.num_classes)

    @classmethod
    def from_batch(cls, layout: ConfusionMatrixLayout, batch: Batch) -> "ConfusionMatrixState":
        if batch.y_pred is None:
            raise ValueError("a confusion matrix needs predicted labels")
        k = layout.num_classes
        pre = batch.cells_for(("pairs", k), batch.y_pred)
        if pre is not None:  # counted by the validation's compiled pass (the same counts)
            # the field an exact sum of its shape: built without the constructor's checks
            w = batch.sample_weight
            if w is None:  # row counts below 2**53: each a float64 exactly (+0.0 for none)
                return cls._of_sums(layout, {"matrix": ExactSums._compact(pre.astype(np.float64).reshape(k, k))})
            _remember_cell_total(w, pre)
            return cls._of_sums(layout, {"matrix": ExactSums.lazy(pre[0], pre[1], (k, k))})
        return cls(layout, {"matrix": _pair_counts(batch.y_true, batch.y_pred, k, batch.sample_weight)})

    @classmethod
    def num_cells(cls, layout: ConfusionMatrixLayout) -> int:
        return layout.num_classes * layout.num_classes

    @classmethod
    def cells(cls, layout: ConfusionMatrixLayout, batch: Batch) -> np.ndarray:
        """``label * K + predicted label``."""
        if batch.y_pred is None:
            raise ValueError("a confusion matrix needs predicted labels")
        cell = np.multiply(batch.y_true, layout.num_classes, dtype=np.intp)
        cell += batch.y_pred
        return cell

    @classmethod
    def from_cells(cls, layout: ConfusionMatrixLayout, counts: np.ndarray, weights: ExactSums | None) -> "ConfusionMatrixState":
        k = layout.num_classes
        if weights is None:
            return cls(layout, {"matrix": np.asarray(counts, dtype=np.float64).reshape(k, k)})
        return cls(layout, {"matrix": weights.take(slice(None), shape=(k, k))})


# ---------------------------------------------------------------------------------------------
#: States that are sums of per-row *cells* (see :func:`states_from_cells`): an engine may count
#: rows per cell itself (e.g. Spark SQL aggregates) and let core build the states.
CELL_STATES = (ExampleCountState, BinaryConfusionState, ConfusionMatrixState)


def states_from_cells(state_types: tuple, cells: np.ndarray, counts: np.ndarray, weights: np.ndarray | None, per_label: int) -> tuple[State, ...]:
    """The states of rows summarised per *joint* cell, equal to folding the rows themselves.

    The joint cell of a row is ``label * per_label + j``: for a binary confusion state with
    thresholds ``t_1 < ... < t_T`` (``per_label = T + 1``), ``j`` is the number of thresholds the
    row's score passes (``score >= t``, or ``>`` with ``threshold_rule=">"``), which is the
    state's own cell (:meth:`BinaryConfusionState.cells`); for a K x K confusion matrix
    (``per_label = K``), ``j`` is the predicted label (:meth:`ConfusionMatrixState.cells`); an
    example count has one cell; with neither, ``per_label = 1``. Each kind's cells are summed from
    the joint ones and built by the kind's own :meth:`State.from_cells` (the definition the
    slice-vectorised fold uses too), so the states equal the row-by-row ones bit for bit.

    Args:
        state_types: the plan's ``(state class, layout)`` pairs, each class in :data:`CELL_STATES`.
        cells: (m,) int64 joint cells >= 0.
        counts: (m,) int64 rows per cell.
        weights: (m,) float64 weight sum per cell, or None for unweighted rows.
        per_label: joint cells per label, as above.

    Returns:
        The states, in ``state_types`` order; empty arrays give the zero states.

    Raises:
        ValueError: a state class outside :data:`CELL_STATES`, or ``per_label`` that does not
            match a binary confusion state's thresholds.
    """
    cells = np.asarray(cells, dtype=np.int64)
    counts = np.asarray(counts, dtype=np.int64)
    exact = None if weights is None else ExactSums.of_floats(np.asarray(weights, dtype=np.float64))
    y, j = cells // per_label, cells % per_label
    out: list[State] = []
    for cls, layout in state_types:
        if cls is ExampleCountState:
            own = np.zeros_like(cells)
        elif cls is ConfusionMatrixState:
            own = y * layout.num_classes + j
        elif cls is BinaryConfusionState:
            if per_label != len(layout.thresholds) + 1:
                raise ValueError(f"per_label {per_label} does not match {len(layout.thresholds)} thresholds")
            own = cells
        else:
            raise ValueError(f"state {cls.kind!r} is not a sum of per-row cells (cell states: {[c.kind for c in CELL_STATES]})")
        m = cls.num_cells(layout)
        kind_counts = np.zeros(m, dtype=np.int64)
        np.add.at(kind_counts, own, counts)
        kind_weights = None if exact is None else exact.regroup(own, m, (m,))
        out.append(cls.from_cells(layout, kind_counts, kind_weights))
    return tuple(out)
