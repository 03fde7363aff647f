"""Slice keys, slice specs and the assignment of rows to slices.

A slice key is a tuple of ``(column, value)`` pairs in the spec's column order; the overall slice is
``()``. Missing values (None, NaN, Arrow/pandas nulls) form their own slice value ``None``
(``null`` in JSON): no row is ever dropped, and every row always reaches the overall slice.

A :class:`SliceSpec` names one or more columns, crossed when several, with optional value filters,
numeric buckets (explicit edges or quantiles) and bounds: ``max_slices`` (keep the N largest slices,
sum the rest into one ``__other__`` slice) and ``min_slice_size`` (report smaller slices as
suppressed, without values). Its one-line grammar is the same in Python, Beam, Spark and the CLI;
see :class:`SliceSpec`.

Specs that need to know the whole data before rows can be assigned (``max_slices``: which values
are the N largest; ``quantiles``: where the edges are) are resolved by an exact, mergeable counting
pass, :mod:`mergeable_metrics.evaluation.profile`; the resolved bounds (:class:`SpecBounds`) are small and identical in
every engine, so every engine assigns every row to the same slice.

This module assigns rows to slices (:func:`assign_slices`, :class:`Assignment`) and orders and
names slice keys; the spec grammar is :mod:`mergeable_metrics.slicing.spec` and the slice values (canonical
forms, reading slice columns, the keys' bytes) :mod:`mergeable_metrics.slicing.values`. Every public name of both
is re-exported here, the module users import from.
"""

from __future__ import annotations

import datetime
import decimal
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from mergeable_metrics.slicing.spec import (  # noqa: F401  (re-exported: mergeable_metrics.slicing.assign is where users import from)
    COLUMN_OPTIONS,
    OTHER,
    OVERALL,
    SIZE_MEASURES,
    SPEC_OPTIONS,
    SUPPRESSED,
    SliceSpec,
    bucket_labels,
    format_number,
    parse_bucket_label,
    parse_slices,
)
from mergeable_metrics.slicing.values import (  # noqa: F401  (re-exported)
    _INT64_RANGE,
    KEY_ENCODING,
    CodedColumn,
    ListColumn,
    ValueKeys,
    canonical_value,
    encode_key,
    encode_keys,
    read_slice_column,
    upgrade_key_v1,
)


# --------------------------------------------------------------------------------------------
# encoding one column of a batch
def _kind_of(t: type) -> str | None:
    """The kind of slice value of a Python type: values of different kinds never share a
    column (``True == 1`` and ``"5"`` vs ``5`` would otherwise merge or be ambiguous)."""
    if issubclass(t, (bool, np.bool_)):
        return "boolean"
    if issubclass(t, (int, float, np.integer, np.floating)):
        return "number"
    if issubclass(t, str):
        return "string"
    if issubclass(t, (bytes, bytearray)):
        return "bytes"
    if issubclass(t, decimal.Decimal):
        return "decimal"
    if issubclass(t, (datetime.datetime, np.datetime64)):
        return "timestamp"
    if issubclass(t, datetime.date):
        return "date"
    if issubclass(t, datetime.time):
        return "time"
    if issubclass(t, (datetime.timedelta, np.timedelta64)):
        return "duration"
    return None


def _row(i: int, row_of_value: np.ndarray | None, row_offset: int) -> int:
    return row_offset + (int(row_of_value[i]) if row_of_value is not None else int(i))


def _check_kinds(present: np.ndarray, where: np.ndarray | None, column: str, row_of_value: np.ndarray | None, row_offset: int) -> str:
    """The one kind of every value of an object column (all of them are checked).

    Raises:
        TypeError: a value of an unsupported type, or values of different kinds (the message
            names the column, both values and their rows).
    """
    kinds = {t: _kind_of(t) for t in set(map(type, present))}
    row = lambda j: _row(int(where[j]) if where is not None else j, row_of_value, row_offset)  # noqa: E731
    if None in kinds.values():
        j = next(j for j, v in enumerate(present) if kinds[type(v)] is None)
        raise TypeError(
            f"slice column {column!r}: value {present[j]!r} at row {row(j)} has type {type(present[j]).__name__}; "
            "slice values must be strings, numbers, booleans, bytes, decimals, dates or timestamps"
        )
    if len(set(kinds.values())) > 1:
        first = kinds[type(present[0])]
        j = next(j for j, v in enumerate(present) if kinds[type(v)] != first)
        names = sorted({t.__name__ for t in kinds})
        raise TypeError(
            f"slice column {column!r} mixes value types {names}: {present[0]!r} at row {row(0)} and {present[j]!r} at row {row(j)}; convert it to one type"
        )
    return next(iter(kinds.values()))


def _code_texts(present: Any) -> tuple[np.ndarray, list[str]]:
    """Codes into the sorted distinct strings of a sequence of ``str``."""
    distinct = dict.fromkeys(present)
    uniques = sorted(distinct)
    pos = {v: i for i, v in enumerate(uniques)}
    return np.fromiter(map(pos.__getitem__, present), dtype=np.int64, count=len(present)), [str(u) for u in uniques]


def _decode_bytes(
    uniq: Sequence[Any], present: np.ndarray, where: np.ndarray | None, column: str, row_of_value: np.ndarray | None, row_offset: int
) -> list[str]:
    out = []
    for u in uniq:
        try:
            out.append(bytes(u).decode("utf-8"))
        except UnicodeDecodeError:
            j = int(np.flatnonzero(present == u)[0]) if present.dtype != object else next(j for j, v in enumerate(present) if v == u)
            row = _row(int(where[j]) if where is not None else j, row_of_value, row_offset)
            raise ValueError(
                f"slice column {column!r}: value {bytes(u)!r} at row {row} is not UTF-8 text (distinct bytes must stay "
                "distinct slices); decode or hex-encode the column first"
            ) from None
    return out


def _encode_column(values: np.ndarray, column: str, row_of_value: np.ndarray | None = None, row_offset: int = 0) -> tuple[np.ndarray, list[Any]]:
    """Codes (n,) int64 into ``uniques``, the distinct values in their :func:`canonical_value`
    form (sorted); missing values get the code ``len(uniques) - 1`` with value None (only when
    present).

    Args:
        values: (n,) values of one slice column.
        column: its name (for messages).
        row_of_value: (n,) row of each value (list columns), or None when value ``i`` is row ``i``.
        row_offset: position of the batch's first row in the input (for messages).

    Raises:
        TypeError: values of different kinds (e.g. strings and numbers, booleans and numbers) or
            of an unsupported type, naming the column, the values and their rows.
        ValueError: bytes that are not UTF-8 text.
    """
    n = values.shape[0]
    kind = values.dtype.kind
    if kind == "f":
        missing = np.isnan(values)
    elif kind in "Mm":
        missing = np.isnat(values)
    elif kind == "O":
        missing = np.equal(values, None) | (values != values)
    elif kind in "iubUS":
        missing = np.zeros(n, dtype=bool)
    else:
        raise TypeError(f"slice column {column!r} has numpy dtype {values.dtype}, which is not a slice value type")
    where = np.flatnonzero(~missing) if missing.any() else None
    present = values[where] if where is not None else values
    if kind == "O" and present.size:
        k = _check_kinds(present, where, column, row_of_value, row_offset)
        if k == "string":
            inv, uniques = _code_texts(present.tolist())
            return _with_missing(n, missing, inv, uniques)
        if k in ("decimal", "timestamp", "date", "time", "duration"):  # sliced by their canonical text
            inv, uniques = _code_texts([canonical_value(v) for v in present])
            return _with_missing(n, missing, inv, uniques)
        if k == "boolean":
            present = present.astype(bool)
        elif k == "number":
            types = set(map(type, present))
            if all(issubclass(t, (float, np.floating)) for t in types):
                present = present.astype(np.float64)
            elif all(issubclass(t, (int, np.signedinteger)) for t in types):  # (unsigned numpy ints could wrap)
                try:
                    present = present.astype(np.int64)
                except OverflowError:  # beyond int64: exact Python ints
                    pass
    uniq, inv = np.unique(present, return_inverse=True)
    if uniq.dtype.kind in "iub":
        uniques = uniq.tolist()
    elif uniq.dtype.kind == "U":
        uniques = [str(u) for u in uniq.tolist()]
    elif uniq.dtype.kind == "S" or (uniq.size and isinstance(uniq[0], (bytes, bytearray))):
        uniques = _decode_bytes(uniq.tolist(), present, where, column, row_of_value, row_offset)
    elif uniq.dtype.kind == "f":  # -0.0 -> 0, whole -> int, inf -> "inf": only those go through Python
        uniques = uniq.tolist()
        with np.errstate(invalid="ignore"):
            special = ~np.isfinite(uniq) | ((uniq == np.trunc(uniq)) & (np.abs(uniq) < _INT64_RANGE))
        for i in np.flatnonzero(special).tolist():
            uniques[i] = canonical_value(uniques[i])
    else:  # mixed ints and floats, big ints, datetime64, timedelta64
        uniques = [canonical_value(u) for u in uniq]
    return _with_missing(n, missing, inv.reshape(-1), uniques)


def _with_missing(n: int, missing: np.ndarray, inv: np.ndarray, uniques: list[Any]) -> tuple[np.ndarray, list[Any]]:
    if missing.any():
        codes = np.full(n, len(uniques), dtype=np.int64)
        codes[~missing] = inv
        uniques.append(None)
    else:
        codes = inv.astype(np.int64, copy=False)
    return codes, uniques


def numeric_values(values: np.ndarray, column: str, row_of_value: np.ndarray | None = None, row_offset: int = 0) -> np.ndarray:
    """A bucketed column as (n,) float64, missing values NaN.

    Raises:
        TypeError: a value is not a number (the message names the column, value and row).
    """
    if values.dtype.kind in "fiub":
        return values.astype(np.float64, copy=False)
    out = np.full(values.shape[0], np.nan)
    obj = values.astype(object, copy=False)
    missing = np.equal(obj, None) | (obj != obj)
    numbers = (int, float, bool, np.number)
    bad = next((int(i) for i in np.flatnonzero(~missing) if not isinstance(obj[i], numbers)), None)  # no text, even "1.5"
    if bad is None:
        out[~missing] = obj[~missing].astype(np.float64)
    else:
        row = int(row_of_value[bad]) if row_of_value is not None else int(bad)
        raise TypeError(f"slice column {column!r} is bucketed (edges/quantiles) but its value {obj[bad]!r} at row {row_offset + row} is not a number")
    return out


def _bucket_column(x: np.ndarray, edges: Sequence[float]) -> tuple[np.ndarray, list[Any]]:
    """Codes and values of the buckets of float values ``x`` (NaN -> None)."""
    labels = bucket_labels(edges)
    idx = np.searchsorted(np.asarray(edges, dtype=np.float64), x, side="right").astype(np.int64)
    missing = np.isnan(x)
    if missing.any():
        idx[missing] = len(labels)
        labels = labels + [None]
    used, codes = np.unique(idx, return_inverse=True)
    return codes.reshape(-1).astype(np.int64), [labels[int(u)] for u in used]


def _coerce(text: str, like: Any) -> Any:
    """Filter text converted to the type of the data value ``like`` (None when impossible):
    integer text to an exact int (``9007199254740993`` stays itself, not the float 2**53), other
    number text to a float (``7.0`` matches 7), ``true``/``false`` for booleans."""
    t = text.strip()
    if isinstance(like, bool):
        t = t.lower()
        return True if t in ("true", "1") else False if t in ("false", "0") else None
    if isinstance(like, (int, float)):
        try:
            return int(t)
        except ValueError:
            pass
        try:
            return canonical_value(float(t))
        except ValueError:
            return None
    return None


def _filter_mask(uniques: Sequence[Any], allowed: Sequence[Any]) -> np.ndarray:
    """Which of a column's distinct (canonical) values a filter allows (see :class:`SliceSpec`);
    allowed values that are not text are compared in their :func:`canonical_value` form."""
    allowed = [a if isinstance(a, str) or a is None else canonical_value(a) for a in allowed]
    out = np.zeros(len(uniques), dtype=bool)
    for i, v in enumerate(uniques):
        for a in allowed:
            if a is None or v is None:
                ok = a is None and v is None
            elif isinstance(a, str) and not isinstance(v, str):
                c = _coerce(a, v)
                ok = c is not None and c == v
            else:
                ok = isinstance(a, bool) == isinstance(v, bool) and a == v
            if ok:
                out[i] = True
                break
    return out


# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SpecBounds:
    """What a counting pass decided for one spec (see :mod:`mergeable_metrics.evaluation.profile`).

    Attributes:
        edges: ``{column: resolved quantile edges}`` (ascending, distinct) for quantile columns.
        kept: encoded keys (:func:`encode_key`) of the slices kept by ``max_slices``, or None
            when the spec has no ``max_slices``.
        folded_values: number of distinct slice values folded into ``__other__``.
        distinct: number of distinct slice values the counting pass saw.
    """

    edges: dict = field(default_factory=dict)
    kept: frozenset | None = None
    folded_values: int = 0
    distinct: int = 0


def other_key(spec: SliceSpec) -> tuple:
    """The key of a spec's ``__other__`` slice: every column's value is ``"__other__"``."""
    return tuple((c, OTHER) for c in spec.columns)


@dataclass
class Assignment:
    """Rows of one batch assigned to the slices of one spec.

    Attributes:
        rows: (m,) int64 row of each (row, slice) pair, or None when pair ``i`` is row ``i``
            (every row in exactly one slice, ``m == n``).
        codes: (m,) int64 slice index of each pair.
        keys: slice key of each index.
    """

    rows: np.ndarray | None
    codes: np.ndarray
    keys: list[tuple]

    def pairs(self, n: int, invalid: np.ndarray | None = None, row_of: np.ndarray | None = None) -> tuple[np.ndarray | None, np.ndarray, np.ndarray]:
        """The (batch element, slice) pairs of the validated batch, and the skipped rows per slice.

        Args:
            n: number of input rows of the batch.
            invalid: (n,) bool rows skipped as invalid (their batch positions are gone), or None.
            row_of: (p,) int64 valid-row index of each batch element (pixels, or rows left after
                ``ignore_index``), or None when elements are the valid rows.

        Returns:
            ``(positions, codes, skipped)``: (m,) int64 batch position and slice index of each
            pair (``positions`` None when pair ``i`` is element ``i``), and (K,) int64 invalid
            rows per slice index.
        """
        k = len(self.keys)
        codes = self.codes
        skipped = np.zeros(k, dtype=np.int64)
        if k == 0:  # no row of the batch is in a slice of the spec (e.g. a filter matched none)
            return None, np.zeros(0, dtype=np.int64), skipped
        if self.rows is None:
            if invalid is not None and invalid.any():
                skipped = np.bincount(codes[invalid], minlength=k)
                codes = codes[~invalid]
            if row_of is not None:
                codes = codes[row_of]
            return None, codes, skipped
        rows = self.rows
        if invalid is not None and invalid.any():
            bad = invalid[rows]
            skipped = np.bincount(codes[bad], minlength=k)
            rows, codes = rows[~bad], codes[~bad]
            pos = (np.cumsum(~invalid) - 1)[rows]
        else:
            pos = rows
        if row_of is not None:  # each valid row -> its elements
            order = np.argsort(row_of, kind="stable")
            sorted_rows = row_of[order]
            start = np.searchsorted(sorted_rows, pos, "left")
            cnt = np.searchsorted(sorted_rows, pos, "right") - start
            rep = np.repeat(np.arange(pos.size), cnt)
            offs = np.arange(rep.size) - np.repeat(np.cumsum(cnt) - cnt, cnt)
            pos = order[start[rep] + offs]
            codes = codes[rep]
        return pos.astype(np.int64, copy=False), codes, skipped

    def groups(self, n: int, invalid: np.ndarray | None = None, row_of: np.ndarray | None = None) -> tuple[list[np.ndarray], np.ndarray]:
        """Positions in the validated batch of each slice, and the skipped rows of each slice
        (arguments as :meth:`pairs`).

        Returns:
            ``(positions, skipped)``: one int64 array of batch positions per key, and (K,)
            int64 invalid rows per key.
        """
        k = len(self.keys)
        pos, codes, skipped = self.pairs(n, invalid, row_of)
        if k == 0:
            return [], skipped
        groups = [np.zeros(0, dtype=np.int64)] * k
        for code, at in split_by_code(codes, k, pos):
            groups[code] = at
        return groups, skipped


def _dense_unique(codes: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(codes, return_inverse=True)`` of codes in ``[0, size)``: by one bincount and a
    lookup table when ``size`` is small next to the number of codes (no sort)."""
    if size > max(4 * codes.size, 1 << 16):
        used, inv = np.unique(codes, return_inverse=True)
        return used, inv.reshape(-1)
    used = np.flatnonzero(np.bincount(codes, minlength=size))
    table = np.empty(size, dtype=np.int64)
    table[used] = np.arange(used.size)
    return used, table[codes]


def _join(ra: np.ndarray, ca: np.ndarray, rb: np.ndarray, cb: np.ndarray, n: int):
    """Every pair of A and B on the same row (both sorted by row): the rows and both codes."""
    nb = np.bincount(rb, minlength=n)
    startb = np.cumsum(nb) - nb
    reps = nb[ra]
    ia = np.repeat(np.arange(ra.size), reps)
    offs = np.arange(ia.size) - np.repeat(np.cumsum(reps) - reps, reps)
    ib = startb[ra[ia]] + offs
    return ra[ia], ca[ia], cb[ib]


def _dedupe(rows: np.ndarray, codes: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Unique (row, code) pairs, sorted by row then code."""
    u = np.unique(rows * np.int64(max(k, 1)) + codes)
    return u // max(k, 1), u % max(k, 1)


def assign_slices(spec: SliceSpec, columns: Mapping[str, Any], n: int, bounds: SpecBounds | None = None, row_offset: int = 0) -> Assignment:
    """Assign each row of a batch to its slice(s) under ``spec``.

    Args:
        spec: the slice spec.
        columns: name -> (n,) array or :class:`ListColumn` (from :func:`read_slice_column`) for
            at least ``spec.columns``.
        n: number of rows of the batch.
        bounds: the spec's resolved bounds; required when ``spec.needs_profile`` for the
            ``max_slices`` cut and quantile edges (None: the raw slices, which is what the
            counting pass itself counts).
        row_offset: position of the batch's first row in the input (for messages).

    Returns:
        An :class:`Assignment`. Filtered-out rows are in no pair; with ``max_slices`` (and
        ``bounds``) at most ``2 * max_slices + 1`` keys, the last being ``__other__`` when any
        value was folded.

    Raises:
        ValueError: quantile buckets without resolved edges.
        TypeError: a column mixes incomparable types, or a bucketed column holds a non-number.
    """
    rows: np.ndarray | None = None
    codes: np.ndarray | None = None
    keys: list[tuple] = []
    listed = False
    if len(spec.columns) == 1:  # one Arrow string column as it is: its dictionary's keys
        col = spec.columns[0]
        data = columns[col]
        if (
            isinstance(data, CodedColumn) and data.dictionary is not None and spec.filter_of(col) is None
            and spec.edges_of(col) is None and spec.quantiles_of(col) is None and (bounds is None or bounds.kept is None)
        ):  # fmt: skip
            return Assignment(None, data.codes, ValueKeys(col, data))
    for col in spec.columns:
        data = columns[col]
        if isinstance(data, ListColumn):
            r, values = data.rows, data.values
            listed = True
        else:
            r, values = None, data if isinstance(data, (np.ndarray, CodedColumn)) else np.asarray(data)
        e = spec.edges_of(col)
        if spec.quantiles_of(col) is not None:
            if bounds is None or col not in bounds.edges:
                raise ValueError(f"slice spec {str(spec)!r}: quantile buckets of {col!r} need a profiling pass first (Evaluation.with_profile)")
            e = bounds.edges[col]
        if e is not None:
            c, uniq = _bucket_column(numeric_values(np.asarray(values), col, r, row_offset), e)
        else:
            c, uniq = (values.codes, values.uniques) if isinstance(values, CodedColumn) else _encode_column(values, col, r, row_offset)
        allowed = spec.filter_of(col)
        if allowed is not None:
            keep = _filter_mask(uniq, allowed)[c]
            if not keep.all():
                r = np.flatnonzero(keep).astype(np.int64) if r is None else r[keep]
                c = c[keep]
        if codes is None:
            rows, codes, keys = r, c, [((col, u),) for u in uniq]
            continue
        if rows is None and r is None:
            ca, cb = codes, c
        else:
            ra = np.arange(n, dtype=np.int64) if rows is None else rows
            rb = np.arange(n, dtype=np.int64) if r is None else r
            rows, ca, cb = _join(ra, codes, rb, c, n)
        used, codes = _dense_unique(ca * len(uniq) + cb, len(keys) * len(uniq))
        keys = [keys[int(u) // len(uniq)] + ((col, uniq[int(u) % len(uniq)]),) for u in used]
    assert codes is not None
    if rows is not None or len(keys) != (int(codes.max()) + 1 if codes.size else 0):
        used, codes = np.unique(codes, return_inverse=True)  # drop keys filters left empty
        codes = codes.reshape(-1)
        keys = [keys[int(u)] for u in used]
    if listed:
        rows, codes = _dedupe(rows, codes, len(keys))
    if bounds is not None and bounds.kept is not None:
        kept = bounds.kept
        keep_idx = [i for i, e in enumerate(encode_keys(keys)[0]) if e in kept]
        if len(keep_idx) < len(keys):
            remap = np.full(len(keys), len(keep_idx), dtype=np.int64)
            remap[keep_idx] = np.arange(len(keep_idx))
            codes = remap[codes]
            keys = [keys[i] for i in keep_idx] + [other_key(spec)]
            if listed:
                rows, codes = _dedupe(rows, codes, len(keys))
    return Assignment(rows, codes.astype(np.int64, copy=False), keys)


def group_rows(spec: SliceSpec, columns: dict[str, np.ndarray]) -> tuple[np.ndarray, list[tuple]]:
    """Assign each row to its slice under a spec that puts every row in exactly one slice (no
    filters, no list-valued columns, no profile needed).

    Args:
        spec: the slice spec.
        columns: name -> (n,) array for at least ``spec.columns``.

    Returns:
        ``(codes, keys)``: (n,) int64 slice index per row, and the slice key of each index.

    Raises:
        TypeError: a slice column mixes incomparable value types.
        ValueError: the spec does not put every row in exactly one slice.
    """
    n = len(next(iter(columns.values()))) if columns else 0
    a = assign_slices(spec, columns, n)
    if a.rows is not None:
        raise ValueError(f"slice spec {str(spec)!r} does not put every row in exactly one slice; use assign_slices")
    return a.codes, a.keys


def _stable_order(codes: np.ndarray, num: int) -> np.ndarray:
    """``np.argsort(codes, kind="stable")`` of codes in [0, num). numpy radix-sorts 8- and 16-bit
    integers in O(n), so codes of few slices are narrowed first (the permutation is the same)."""
    if num <= 1 << 8:
        codes = codes.astype(np.uint8)
    elif num <= 1 << 16:
        codes = codes.astype(np.uint16)
    return np.argsort(codes, kind="stable")


def split_by_code(codes: np.ndarray, num: int, positions: np.ndarray | None = None) -> list[tuple[int, np.ndarray]]:
    """``[(code, positions of that code)]`` for every code present, codes ascending, positions in
    their order (one stable radix sort of the codes in ``[0, num)``).

    Args:
        codes: (m,) int codes in ``[0, num)``.
        num: the number of codes.
        positions: (m,) int64 position of each code's element; None: ``0 .. m - 1``.
    """
    if codes.size == 0:
        return []
    order = _stable_order(codes, num)
    sorted_codes = codes[order]
    starts = np.flatnonzero(np.concatenate(([True], sorted_codes[1:] != sorted_codes[:-1])))
    at = (order if positions is None else positions[order]).astype(np.int64, copy=False)
    bounds = np.append(starts, codes.size)
    return [(int(sorted_codes[a]), at[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]


def slice_name(key: tuple) -> str:
    """Display form: ``"carrier=AA, origin=JFK"``; the overall slice is ``"Overall"``."""
    if not key:
        return "Overall"
    return ", ".join(f"{c}={'null' if v is None else v}" for c, v in key)


def _value_order(v: Any) -> tuple:
    if v is None:
        return (2, "", 0)
    if v == SUPPRESSED and isinstance(v, str):
        return (3, "", 0)
    if v == OTHER and isinstance(v, str):
        return (1, "", 0)
    iv = parse_bucket_label(v)
    if iv is not None:
        return (0, " interval", iv)
    if isinstance(v, (int, float)) and not isinstance(v, bool):  # ints and floats in one numeric order
        return (0, "number", v)
    return (0, type(v).__name__, v)


def sort_key(key: tuple, spec_order: Sequence[tuple[str, ...]]) -> tuple:
    """Deterministic order: overall first, then by spec order, then by values: bucket labels by
    their bounds, other values by type and value, then ``__other__``, then missing (None)."""
    cols = tuple(c for c, _ in key)
    try:
        spec_i = list(spec_order).index(cols)
    except ValueError:
        spec_i = len(spec_order)
    return (len(key) > 0, spec_i, cols, tuple(_value_order(v) for _, v in key))


def _str_value_order(v: Any) -> tuple:
    """:func:`_value_order`, read directly for plain strings that are no bucket label (a label
    starts with ``[`` or ``(``) and no reserved value."""
    if type(v) is str and v[:1] not in ("[", "(") and v != SUPPRESSED and v != OTHER:
        return (0, "str", v)
    return _value_order(v)


def sort_order(keys: Sequence[tuple], spec_order: Sequence[tuple[str, ...]]) -> list[int]:
    """The positions of ``keys`` in :func:`sort_key` order (``sorted(range(len(keys)),
    key=lambda i: sort_key(keys[i], spec_order))``, stable alike): grouped by spec first, then
    each spec's slices by their values (plain strings compared as strings)."""
    index: dict[tuple, int] = {}
    for i, cols in enumerate(spec_order):
        index.setdefault(tuple(cols), i)
    n = len(spec_order)
    groups: dict[tuple, list[int]] = {}
    for pos, key in enumerate(keys):
        cols = (key[0][0],) if len(key) == 1 else tuple(c for c, _ in key)
        groups.setdefault((len(key) > 0, index.get(cols, n), cols), []).append(pos)
    out: list[int] = []
    for g in sorted(groups):
        members = groups[g]
        if len(g[2]) == 1:  # one column: plain strings in string order, then the missing value
            values = [keys[p][0][1] for p in members]
            strings = [j for j, v in enumerate(values) if type(v) is str]
            nulls = [j for j, v in enumerate(values) if v is None]
            if len(strings) + len(nulls) == len(values) and not any(values[j][:1] in ("[", "(") or values[j] in (SUPPRESSED, OTHER) for j in strings):
                strings.sort(key=values.__getitem__)
                out.extend(members[j] for j in strings + nulls)
                continue
        orders = [tuple(_str_value_order(v) for _, v in keys[p]) for p in members]
        if all(len(o) == 1 and o[0][1] == "str" and o[0][0] == 0 for o in orders):
            values = [o[0][2] for o in orders]
            out.extend(members[j] for j in sorted(range(len(members)), key=values.__getitem__))
        else:
            out.extend(members[j] for j in sorted(range(len(members)), key=orders.__getitem__))
    return out
