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
pass, :mod:`core.slice_profile`; the resolved bounds (:class:`SpecBounds`) are small and identical in
every engine, so every engine assigns every row to the same slice.
"""

from __future__ import annotations

import datetime
import decimal
import math
import re
import struct
from collections.abc import Sequence as _AbcSequence
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from core.limits import MAX_QUANTILES, MAX_SLICES

OVERALL: tuple = ()

#: Slice value of the slice that sums every value outside a spec's ``max_slices`` largest ones.
OTHER = "__other__"
#: the slice value standing for a spec's suppressed slices whose names are withheld (core.suppression)
SUPPRESSED = "__suppressed__"

#: Options that apply to a whole spec, and options that apply to one column.
SPEC_OPTIONS = ("max_slices", "by", "min_slice_size")
COLUMN_OPTIONS = ("edges", "quantiles")
SIZE_MEASURES = ("count", "weight")

_SPECIAL = ",;:=|\\"


# --------------------------------------------------------------------------------------------
# grammar helpers
def _split(text: str, sep: str) -> list[str]:
    """Split ``text`` on unescaped ``sep``; escapes (``\\x``) are kept for the next level."""
    out: list[str] = []
    cur: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            cur.append(text[i : i + 2])
            i += 2
            continue
        if ch == sep:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
        i += 1
    out.append("".join(cur))
    return out


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


def _escape(text: str) -> str:
    return re.sub(r"([,;:=|\\])", r"\\\1", text)


def format_number(x: float) -> str:
    """Short, exact text of a number: ``500`` for 500.0, ``0.1`` for 0.1, ``inf``, ``-inf``."""
    x = float(x)
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if x.is_integer() and abs(x) < 1e15:
        return str(int(x))
    return repr(x)


def _format_filter_value(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return format_number(v)
    return _escape(str(v))


def bucket_labels(edges: Sequence[float]) -> list[str]:
    """Slice values of the buckets cut by ascending ``edges`` ``e_0 < ... < e_m-1``.

    Returns:
        m + 1 labels: ``"(-inf, e_0)"``, ``"[e_0, e_1)"``, ..., ``"[e_m-1, inf)"``: half-open
        intervals covering the whole real line (a value equal to an edge goes to the bucket that
        starts there). :func:`sort_key` orders them by their lower bound. No edges (quantiles of
        a column without a finite value): the one bucket ``"(-inf, inf)"``.
    """
    if len(edges) == 0:
        return ["(-inf, inf)"]
    f = [format_number(e) for e in edges]
    labels = [f"(-inf, {f[0]})"]
    labels += [f"[{f[i - 1]}, {f[i]})" for i in range(1, len(f))]
    labels.append(f"[{f[-1]}, inf)")
    return labels


_INTERVAL = re.compile(r"^[\[(](-inf|[^,\s\[\]()]+), ([^,\s\[\]()]+|inf)[)\]]$")


def parse_bucket_label(value: Any) -> tuple[float, float] | None:
    """``(lower, upper)`` of a bucket label such as ``"[500, 1000)"``; None for other values."""
    if not isinstance(value, str):
        return None
    m = _INTERVAL.match(value)
    if not m:
        return None
    try:
        return float(m.group(1)), float(m.group(2))
    except ValueError:
        return None


def _bad(text: Any, problem: str) -> ValueError:
    return ValueError(f"slice spec {str(text)!r}: {problem}")


def _parse_int(text: Any, key: str, value: str, low: int) -> int:
    try:
        v = int(value)
    except ValueError:
        raise _bad(text, f"{key} must be an integer, got {value!r}") from None
    if v < low:
        raise _bad(text, f"{key} must be >= {low}, got {v}")
    return v


def _parse_edges(text: Any, value: str) -> tuple[float, ...]:
    out = []
    for piece in _split(value, "|"):
        try:
            x = float(_unescape(piece).strip())
        except ValueError:
            raise _bad(text, f"edges must be numbers separated by '|' (e.g. edges=0|500|1000), got {piece!r}") from None
        out.append(x)
    return tuple(out)


# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SliceSpec:
    """Columns whose value combinations define slices, with filters, buckets and bounds.

    Grammar of the one-line form (:meth:`parse`; the same in Python, Beam, Spark and the CLI's
    ``--slice``)::

        spec    := item ("," item)* (";" option)*
        item    := column ["=" value ("|" value)*] (":" option)*
        option  := "edges=" number ("|" number)*      bucket a numeric column at these edges
                 | "quantiles=" k                      bucket it into k quantile buckets (k >= 2)
                 | "max_slices=" N                     keep the N largest slices, sum the rest into __other__
                 | "by=" ("count" | "weight")          slice size for max_slices / min_slice_size
                 | "min_slice_size=" k                 suppress slices smaller than k

    Examples: ``carrier``; ``carrier,origin`` (crossed); ``origin=JFK`` (only JFK);
    ``origin=JFK|LGA,carrier`` (JFK and LGA, crossed with carrier); ``distance:edges=0|500|1000``;
    ``distance:quantiles=4``; ``tailnum:max_slices=50`` (equivalently ``tailnum;max_slices=50``);
    ``tailnum;max_slices=50;by=weight;min_slice_size=20``.

    * ``edges`` and ``quantiles`` belong to the column they follow; ``max_slices``, ``by`` and
      ``min_slice_size`` belong to the whole spec and may follow any column or the spec (after
      ``;``), once each.
    * Slice values are :func:`canonical_value` forms, the same in every engine (``-0.0`` is
      ``0``, ``5.0`` is ``5``, ``inf`` is ``"inf"``, decimals and timestamps are text); a column
      mixing kinds of values (strings and numbers, booleans and numbers) raises ``TypeError``.
    * Filter values are text, compared with the column's values by type: ``7`` matches the int 7
      and the float 7.0, integer text is compared exactly (``9007199254740993`` is not
      ``2**53``), ``true``/``false`` match booleans, ``null`` matches missing values. Rows
      whose value is not listed are in no slice of the spec (they still count in the overall slice).
    * Escape ``, ; : = | \\`` inside names and values with a backslash (``a\\,b``).
    * Bucket values are readable, sortable interval labels: ``"(-inf, 0)"``, ``"[0, 500)"``,
      ``"[500, 1000)"``, ``"[1000, inf)"``. Quantile buckets use the interior quantiles
      ``q_i = i/k`` (``i = 1..k-1``, numpy's default "linear" method, computed exactly by a
      counting pass; equal edges collapse); see :mod:`core.slice_profile` for very many distinct
      values. Missing values stay the ``None`` slice. Non-numbers in a bucketed column raise
      ``TypeError``.
    * List-valued columns (Arrow list columns, Python lists/tuples/arrays in a row) are detected
      from the data: a row is in the slice of each distinct value of its list (once, even if the
      value repeats); an empty or null list is the missing value ``None``. Crossing list columns
      takes every combination of a row's values. The counts of such a spec's slices may add up to
      more than the overall count.
    * ``max_slices=N`` keeps the N largest slices (by ``count`` of rows, or summed ``weight``) and
      folds every other value into one slice whose values are all ``"__other__"`` and whose
      states are the exact sums of the folded slices; results say how many distinct values
      were folded (``folded_values``). Slices holding a missing value are ranked separately and
      at most N of them are kept as well (for a one-column spec: the one ``None`` slice is always
      kept). Ties at the cut are broken by slice value ascending (numbers numerically, strings by
      code point, crossed keys column by column), so the cut is deterministic. Not combinable
      with ``quantiles`` in the same spec (the bucket edges are not known while counting).
    * ``min_slice_size=k``: a slice whose size (``by``: valid row count, or weight) is below ``k``
      is reported as suppressed: no metric values and no exact count, and its metrics are never
      computed.

    Attributes:
        columns: non-empty tuple of distinct column names, crossed in this order.
        filters: ``((column, allowed values), ...)``: rows whose value is not allowed are left out
            of this spec's slices; ``None`` among the values allows missing values.
        edges: ``((column, strictly increasing finite edges), ...)``.
        quantiles: ``((column, k), ...)`` with ``k >= 2``.
        max_slices: keep at most this many slices (N >= 1), or None (no bound).
        by: ``"count"`` (default) or ``"weight"``: the size used by ``max_slices`` and
            ``min_slice_size``.
        min_slice_size: suppress slices whose size is below this (> 0), or None.

    Raises:
        ValueError: a bad spec, naming the spec and the problem (empty or repeated column,
            unknown option, bad number, option given twice, options on a column not in the spec,
            a column both filtered and bucketed, ``max_slices`` with ``quantiles``).
    """

    columns: tuple[str, ...]
    filters: tuple[tuple[str, tuple[Any, ...]], ...] = ()
    edges: tuple[tuple[str, tuple[float, ...]], ...] = ()
    quantiles: tuple[tuple[str, int], ...] = ()
    max_slices: int | None = None
    by: str = "count"
    min_slice_size: float | None = None

    def __post_init__(self) -> None:
        if isinstance(self.columns, str):
            raise TypeError(f"SliceSpec.columns must be a tuple of names, got the string {self.columns!r}; use SliceSpec.parse")
        cols = tuple(str(c).strip() for c in self.columns)
        if not cols or any(not c for c in cols) or len(set(cols)) != len(cols):
            raise ValueError(f"a slice spec needs distinct, non-empty column names; got {self.columns!r}")
        object.__setattr__(self, "columns", cols)
        order = {c: i for i, c in enumerate(cols)}
        norm = {}
        for name, raw, conv in (
            ("filters", self.filters, lambda v: tuple(v) if isinstance(v, (list, tuple, set, frozenset)) else (v,)),
            ("edges", self.edges, lambda v: tuple(float(x) for x in v)),
            ("quantiles", self.quantiles, lambda v: v),
        ):
            items = raw.items() if isinstance(raw, Mapping) else tuple(raw)
            out = {}
            for col, val in items:
                if col not in order:
                    raise _bad(self, f"{name} name column {col!r}, which is not one of the spec's columns {list(cols)}")
                if col in out:
                    raise _bad(self, f"{name} given twice for column {col!r}")
                out[col] = conv(val)
            norm[name] = tuple(sorted(out.items(), key=lambda kv: order[kv[0]]))
        for col, vals in norm["filters"]:
            if not vals:
                raise _bad(self, f"the filter on column {col!r} allows no value")
        for col, e in norm["edges"]:
            if not e or any(not math.isfinite(x) for x in e) or any(b <= a for a, b in zip(e, e[1:])):
                raise _bad(self, f"edges of column {col!r} must be finite and strictly increasing, got {list(e)}")
        for col, k in norm["quantiles"]:
            if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 2:
                raise _bad(self, f"quantiles of column {col!r} must be an integer >= 2, got {k!r}")
            if k > MAX_QUANTILES:
                raise _bad(self, f"quantiles of column {col!r} must be at most {MAX_QUANTILES}, got {k!r}")
        norm["quantiles"] = tuple((c, int(k)) for c, k in norm["quantiles"])
        bucketed = [c for c, _ in norm["edges"]] + [c for c, _ in norm["quantiles"]]
        if len(set(bucketed)) != len(bucketed):
            raise _bad(self, "a column has both edges and quantiles")
        both = set(bucketed) & {c for c, _ in norm["filters"]}
        if both:
            raise _bad(self, f"column {sorted(both)[0]!r} is both filtered and bucketed; filter it in a separate column or spec")
        for name, v in norm.items():
            object.__setattr__(self, name, v)
        if self.max_slices is not None:
            if isinstance(self.max_slices, bool) or not isinstance(self.max_slices, (int, np.integer)) or self.max_slices < 1:
                raise _bad(self, f"max_slices must be an integer >= 1, got {self.max_slices!r}")
            if self.max_slices > MAX_SLICES:
                raise _bad(self, f"max_slices must be at most {MAX_SLICES}, got {self.max_slices!r}")
            object.__setattr__(self, "max_slices", int(self.max_slices))
            if self.quantiles:
                raise _bad(self, "max_slices cannot be combined with quantiles in one spec (the bucket edges are not known while counting); use edges= or a separate spec")
        if self.by not in SIZE_MEASURES:
            raise _bad(self, f"by must be one of {SIZE_MEASURES}, got {self.by!r}")
        if self.min_slice_size is not None:
            k = self.min_slice_size
            if isinstance(k, bool) or not isinstance(k, (int, float, np.integer, np.floating)) or not (math.isfinite(k) and k > 0):
                raise _bad(self, f"min_slice_size must be a finite number > 0, got {k!r}")
            object.__setattr__(self, "min_slice_size", float(k))

    # -- parsing ------------------------------------------------------------------------------
    @classmethod
    def parse(cls, spec: "str | Sequence[str] | SliceSpec") -> "SliceSpec":
        """A spec from its one-line form (see the class docstring), a sequence of column names
        (crossed), or a SliceSpec (returned as is).

        Example:
            >>> s = SliceSpec.parse("origin=JFK,distance:edges=0|500;max_slices=3")
            >>> s.columns, s.filters, s.edges, s.max_slices
            (('origin', 'distance'), (('origin', ('JFK',)),), (('distance', (0.0, 500.0)),), 3)
            >>> str(s)
            'origin=JFK,distance:edges=0|500;max_slices=3'

        Raises:
            ValueError: a bad spec (the message names the spec and the problem).
            TypeError: ``spec`` is none of the accepted kinds.
        """
        if isinstance(spec, SliceSpec):
            return spec
        if not isinstance(spec, str):
            if isinstance(spec, (list, tuple)) and all(isinstance(c, str) for c in spec):
                return cls(tuple(spec))
            raise TypeError(f"a slice spec is a string, a list of column names or a SliceSpec, got {type(spec).__name__}")
        text = spec
        parts = _split(text, ";")
        columns: list[str] = []
        filters: dict[str, tuple] = {}
        edges: dict[str, tuple] = {}
        quantiles: dict[str, int] = {}
        opts: dict[str, str] = {}

        def option(piece: str, column: str | None) -> None:
            kv = _split(piece, "=")
            if len(kv) != 2 or not kv[0].strip():
                raise _bad(text, f"expected an option key=value, got {piece!r}")
            key, value = kv[0].strip(), kv[1].strip()
            if key in COLUMN_OPTIONS:
                if column is None:
                    raise _bad(text, f"{key} belongs to a column: write it after the column, e.g. 'COLUMN:{key}={value}'")
                target = edges if key == "edges" else quantiles
                if column in edges or column in quantiles:
                    raise _bad(text, f"column {column!r} has more than one edges/quantiles option")
                target[column] = _parse_edges(text, value) if key == "edges" else _parse_int(text, key, value, 2)
            elif key in SPEC_OPTIONS:
                if key in opts:
                    raise _bad(text, f"option {key} is given twice")
                opts[key] = value
            else:
                raise _bad(text, f"unknown option {key!r} (known: {', '.join(COLUMN_OPTIONS + SPEC_OPTIONS)})")

        for item in _split(parts[0], ","):
            segs = _split(item, ":")
            head = _split(segs[0], "=")
            if len(head) > 2:
                raise _bad(text, f"more than one '=' in {segs[0]!r} (allow several values with '|', e.g. origin=JFK|LGA)")
            name = _unescape(head[0]).strip()
            if not name:
                raise _bad(text, "empty column name")
            if name in columns:
                raise _bad(text, f"column {name!r} appears twice")
            columns.append(name)
            if len(head) == 2:
                vals = [v.strip() for v in _split(head[1], "|")]
                filters[name] = tuple(None if v == "null" else _unescape(v) for v in vals)
            for seg in segs[1:]:
                option(seg, name)
        for piece in parts[1:]:
            option(piece, None)
        kw: dict[str, Any] = {}
        if "max_slices" in opts:
            kw["max_slices"] = _parse_int(text, "max_slices", opts["max_slices"], 1)
        if "by" in opts:
            kw["by"] = opts["by"]
        if "min_slice_size" in opts:
            try:
                kw["min_slice_size"] = float(opts["min_slice_size"])
            except ValueError:
                raise _bad(text, f"min_slice_size must be a number, got {opts['min_slice_size']!r}") from None
        try:
            return cls(tuple(columns), tuple(filters.items()), tuple(edges.items()), tuple(quantiles.items()), **kw)
        except ValueError as e:
            msg = str(e)
            if msg.startswith("slice spec "):  # re-anchor the message on the text the user wrote
                msg = msg.split(": ", 1)[1]
            raise _bad(text, msg) from None

    # -- properties ---------------------------------------------------------------------------
    def filter_of(self, column: str) -> tuple | None:
        return dict(self.filters).get(column)

    def edges_of(self, column: str) -> tuple[float, ...] | None:
        return dict(self.edges).get(column)

    def quantiles_of(self, column: str) -> int | None:
        return dict(self.quantiles).get(column)

    @property
    def needs_profile(self) -> bool:
        """Whether rows can be assigned only after a counting pass over all the data
        (``max_slices`` or ``quantiles``)."""
        return self.max_slices is not None or bool(self.quantiles)

    def __str__(self) -> str:
        items = []
        for c in self.columns:
            s = _escape(c)
            f = self.filter_of(c)
            if f is not None:
                s += "=" + "|".join(_format_filter_value(v) for v in f)
            e = self.edges_of(c)
            if e is not None:
                s += ":edges=" + "|".join(format_number(x) for x in e)
            q = self.quantiles_of(c)
            if q is not None:
                s += f":quantiles={q}"
            items.append(s)
        out = ",".join(items)
        if self.max_slices is not None:
            out += f";max_slices={self.max_slices}"
        if self.by != "count":
            out += f";by={self.by}"
        if self.min_slice_size is not None:
            out += f";min_slice_size={format_number(self.min_slice_size)}"
        return out


def parse_slices(specs: Iterable[Any] | str | None) -> tuple[SliceSpec, ...]:
    """Normalise slice specs: None -> (), ``"a,b"`` -> one crossed spec, a list -> one spec each.

    Duplicate specs are kept once.

    Raises:
        ValueError: a bad spec, or two different specs over the same columns (their slice keys
            would collide).
    """
    if specs is None:
        return ()
    if isinstance(specs, (str, SliceSpec)):
        specs = [specs]
    out: list[SliceSpec] = []
    for s in specs:
        p = SliceSpec.parse(s)
        if p in out:
            continue
        clash = next((o for o in out if o.columns == p.columns), None)
        if clash is not None:
            raise ValueError(
                f"slice specs {str(clash)!r} and {str(p)!r} slice the same columns {list(p.columns)}; their slice "
                "keys would collide: keep one"
            )
        out.append(p)
    return tuple(out)


# --------------------------------------------------------------------------------------------
# reading slice columns
_INT64_RANGE = float(1 << 63)


def _format_datetime64(v: np.datetime64) -> str:
    """ISO 8601 text of a numpy datetime64, as :meth:`datetime.datetime.isoformat` writes it:
    ``2020-01-01T12:30:00``, fractions only when not zero (6 digits, or 9 below a microsecond);
    date units (``D`` and coarser) as ``2020-01-01``."""
    unit = np.datetime_data(v.dtype)[0]
    if unit in ("Y", "M", "W", "D"):
        return str(np.datetime_as_string(v.astype("datetime64[D]"), unit="D"))
    whole = v.astype("datetime64[s]")
    if whole > v:  # astype truncates towards zero before 1970: floor instead
        whole = whole - np.timedelta64(1, "s")
    text = str(np.datetime_as_string(whole, unit="s"))
    ns = int((v - whole).astype("timedelta64[ns]").astype(np.int64))
    if ns == 0:
        return text
    return text + (f".{ns // 1000:06d}" if ns % 1000 == 0 else f".{ns:09d}")


def _format_datetime(v: datetime.datetime) -> str:
    """ISO 8601 text of a datetime (or pandas Timestamp); time-zone-aware values in UTC, without
    the offset (as Arrow and numpy read them)."""
    if v.tzinfo is not None and v.utcoffset() is not None:
        v = v.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    return v.isoformat()


def canonical_value(v: Any) -> Any:
    """The one form of a slice value that every engine gives and JSON writes exactly.

    * missing (None, NaN of any float or Decimal type, NaT) -> None;
    * booleans -> bool; integers -> int;
    * floats: ``-0.0`` -> ``0``; whole floats of magnitude below 2**63 -> int (so ``5`` and
      ``5.0``, equal values, are one slice with one JSON text); ``+-inf`` -> the strings
      ``"inf"`` / ``"-inf"`` (JSON has no infinity); other floats unchanged;
    * str unchanged (NUL characters kept); bytes -> their UTF-8 text;
    * ``Decimal`` -> its plain text with its own scale (``Decimal("1.50")`` -> ``"1.50"``, as
      Spark casts decimals to text);
    * timestamps (``datetime``, pandas ``Timestamp``, ``np.datetime64``) -> ISO 8601 text
      ``2020-01-01T12:30:00`` (fractions only when not zero; time-zone-aware values in UTC);
      dates ``2020-01-01``; times ``12:30:00``; durations their ``str``.

    Raises:
        ValueError: bytes that are not UTF-8 text.
        TypeError: a value of another type (lists, dicts, arbitrary objects).
    """
    if v is None:
        return None
    if isinstance(v, np.datetime64):
        return None if np.isnat(v) else _format_datetime64(v)
    if isinstance(v, np.timedelta64):
        return None if np.isnat(v) else str(v)
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, bool):
        return v
    if isinstance(v, int):
        return int(v)
    if isinstance(v, float):
        if v != v:
            return None
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        if v.is_integer() and abs(v) < _INT64_RANGE:
            return int(v)
        return float(v)
    if isinstance(v, str):
        return str(v)
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v).decode("utf-8")  # strict: distinct bytes stay distinct text
    if isinstance(v, decimal.Decimal):
        if v.is_nan():
            return None
        if v.is_infinite():
            return "inf" if v > 0 else "-inf"
        return format(v.copy_abs() if v.is_zero() else v, "f")
    if isinstance(v, datetime.datetime):  # incl. pandas Timestamp (NaT is not a datetime)
        return _format_datetime(v)
    if isinstance(v, (datetime.date, datetime.time)):
        return v.isoformat()
    if isinstance(v, datetime.timedelta):
        return str(v)
    if v.__class__.__name__ in ("NaTType", "NAType"):  # pandas missing values
        return None
    raise TypeError(f"unsupported slice value type {type(v).__name__}")


#: The earlier name of :func:`canonical_value`.
native = canonical_value


class ListColumn:
    """A list-valued slice column of one batch, exploded into (row, value) pairs.

    Attributes:
        rows: (m,) int64 row of each pair, ascending.
        values: (m,) array of the values (one pair per list element; empty and null lists give
            one pair with a missing value).
        n: number of rows of the batch.
    """

    __slots__ = ("rows", "values", "n")

    def __init__(self, rows: np.ndarray, values: np.ndarray, n: int):
        self.rows = rows
        self.values = values
        self.n = n

    @property
    def shape(self) -> tuple[int]:
        return (self.n,)

    def __len__(self) -> int:
        return self.n

    def __repr__(self) -> str:
        return f"ListColumn(rows={self.n}, values={self.values.shape[0]})"


class CodedColumn:
    """A string slice column of one batch, already dictionary-encoded (from an Arrow string
    column: Arrow's hash encoding in C++ instead of one Python string object per row).

    Attributes:
        codes: (n,) int64 index of each row's value in ``uniques``.
        uniques: the distinct values (in no particular order), with None last when some row is
            missing: the values :func:`_encode_column` gives for the same values.
        dictionary: the Arrow array of the distinct values other than None (Arrow columns only;
            ``uniques`` is then built from it on first use), else None.

    ``np.asarray(column)`` gives the (n,) object array of the values.
    """

    __slots__ = ("codes", "_uniques", "dictionary", "_has_null")

    def __init__(self, codes: np.ndarray, uniques: list[Any] | None, dictionary: Any = None, has_null: bool = False):
        self.codes = codes
        self._uniques = uniques
        self.dictionary = dictionary
        self._has_null = has_null if uniques is None else (bool(uniques) and uniques[-1] is None)

    @property
    def has_null(self) -> bool:
        return self._has_null

    @property
    def uniques(self) -> list[Any]:
        if self._uniques is None:
            self._uniques = self.dictionary.to_pylist() + ([None] if self._has_null else [])
        return self._uniques

    @property
    def shape(self) -> tuple[int]:
        return self.codes.shape

    def __len__(self) -> int:
        return self.codes.shape[0]

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        out = np.array(self.uniques + [None], dtype=object)[self.codes]
        return out if dtype is None else out.astype(dtype)

    def __repr__(self) -> str:
        return f"CodedColumn(rows={len(self)}, values={len(self.uniques)})"


class ValueKeys(_AbcSequence):
    """The slice keys ``((column, value),)`` of the distinct values of one Arrow-coded column
    (:class:`CodedColumn` with a ``dictionary``), in code order, built only when read: a
    :class:`core.grouped.SliceBlock` maps the Arrow dictionary to its slots directly."""

    __slots__ = ("column", "coded", "_keys")

    def __init__(self, column: str, coded: CodedColumn):
        self.column = column
        self.coded = coded
        self._keys: list[tuple] | None = None

    def _list(self) -> list[tuple]:
        if self._keys is None:
            self._keys = [((self.column, v),) for v in self.coded.uniques]
        return self._keys

    def __len__(self) -> int:
        return len(self.coded.dictionary) + self.coded.has_null

    def __getitem__(self, i: Any) -> Any:
        return self._list()[i]

    def __iter__(self) -> Any:
        return iter(self._list())


def _arrow_coded(values: Any) -> CodedColumn | None:
    """A plain Arrow string column as a :class:`CodedColumn` (None for any other type)."""
    if str(values.type) not in ("string", "large_string"):
        return None
    arr = values.combine_chunks() if hasattr(values, "combine_chunks") else values
    enc = arr.dictionary_encode()
    idx = enc.indices
    has_null = bool(idx.null_count)
    if has_null:
        idx = idx.fill_null(len(enc.dictionary))
    return CodedColumn(idx.to_numpy(zero_copy_only=False).astype(np.int64), None, enc.dictionary, has_null)


def _coded_strings(values: list | tuple) -> CodedColumn | None:
    """A non-empty Python list of strings (and None for missing values), as from row dicts, as a
    :class:`CodedColumn`: one dict of the distinct values instead of numpy unicode arrays and a
    sort. None for anything else (numbers, lists, unhashable values)."""
    if not values:
        return None
    try:
        distinct = dict.fromkeys(values)
    except TypeError:  # unhashable: list-valued rows
        return None
    strings = [v for v in distinct if type(v) is str]
    if len(strings) + (None in distinct) != len(distinct):
        return None
    uniques: list[Any] = sorted(strings)
    if None in distinct:
        uniques.append(None)
    pos = {v: i for i, v in enumerate(uniques)}
    return CodedColumn(np.fromiter(map(pos.__getitem__, values), dtype=np.int64, count=len(values)), uniques)


_LISTLIKE = (list, tuple, np.ndarray, set, frozenset)


def _objects(values: Sequence[Any]) -> np.ndarray:
    """A 1-D object array of exactly these Python values (no numpy type inference, which would
    turn ``[True, 2]`` into ints, ``[2**53 + 1, 0.5]`` into floats, or nested lists into a 2-D
    array)."""
    arr = np.empty(len(values), dtype=object)
    for i, v in enumerate(values):
        arr[i] = v
    return arr


def _explode(seq: Sequence[Any], name: str) -> ListColumn:
    rows: list[int] = []
    vals: list[Any] = []
    for i, v in enumerate(seq):
        if isinstance(v, _LISTLIKE):
            items = v.tolist() if isinstance(v, np.ndarray) else list(v)
            if isinstance(v, (set, frozenset)):
                items = sorted(items, key=repr)
            if items:
                rows.extend([i] * len(items))
                vals.extend(items)
                continue
            v = None
        rows.append(i)
        vals.append(v)
    return ListColumn(np.asarray(rows, dtype=np.int64), _objects(vals), len(seq))


def read_slice_column(values: Any, name: str, row_offset: int = 0) -> "np.ndarray | ListColumn | CodedColumn":
    """One slice column of a batch as a 1-D numpy array, or a :class:`ListColumn` when its rows
    hold lists (Arrow list columns; Python lists, tuples, sets or arrays; 2-D numpy arrays), or a
    :class:`CodedColumn` for an Arrow string column or a Python list of strings (and None).

    Raises:
        TypeError: the column is not array-like, or its lists hold lists (the message names the
            column, the value and its row, counted from ``row_offset``).
    """
    from core._inputs import as_array

    t = getattr(values, "type", None)
    if t is not None and hasattr(values, "null_count"):  # pyarrow Array / ChunkedArray
        if str(t).startswith("dictionary<"):  # the values themselves (an all-null chunk has no dictionary to take from)
            values = values.cast(t.value_type)
            t = values.type
        if str(t).startswith(("list<", "large_list<", "fixed_size_list<")):
            arr = values.combine_chunks() if hasattr(values, "combine_chunks") else values
            n = len(arr)
            parents = np.asarray(arr.value_parent_indices().to_numpy(zero_copy_only=False), dtype=np.int64)
            if str(arr.type.value_type).startswith(("list<", "large_list<", "fixed_size_list<", "struct<", "map<")):
                i = int(parents[0]) if parents.size else 0
                raise TypeError(
                    f"slice column {name!r}: row {row_offset + i} holds the nested value {arr[i].as_py()!r}; a list-valued "
                    "slice column must hold lists of scalars"
                )
            flat = as_array(arr.flatten(), name)
            lengths = np.bincount(parents, minlength=n)
            empty = np.flatnonzero(lengths == 0)
            if empty.size:  # null and empty lists: the missing value
                fill = np.full(empty.size, np.nan) if flat.dtype.kind == "f" else np.full(empty.size, None, dtype=object)
                if flat.dtype.kind not in "fO":
                    flat = flat.astype(object)
                parents = np.concatenate([parents, empty])
                flat = np.concatenate([flat, fill])
                order = np.argsort(parents, kind="stable")
                parents, flat = parents[order], flat[order]
            return ListColumn(parents, flat, n)
        coded = _arrow_coded(values)
        return coded if coded is not None else as_array(values, name)
    if isinstance(values, (list, tuple)):
        coded = _coded_strings(values)
        if coded is not None:
            return coded
        types = set(map(type, values))
        if any(issubclass(t, _LISTLIKE) for t in types):
            return _explode(values, name)
        exact = {frozenset([int]): np.int64, frozenset([float]): np.float64, frozenset([bool]): np.bool_}.get(frozenset(types))
        if exact is not None:  # one plain type: a typed array at once
            try:
                return np.array(values, dtype=exact)
            except OverflowError:  # ints beyond int64: exact Python ints
                pass
        return np.array(values, dtype=object)  # typed by _encode_column, after checking every value's type
    if isinstance(values, np.ndarray) and values.ndim == 2:
        return _explode(list(values), name)
    arr = as_array(values, name)
    if arr.dtype == object and any(isinstance(v, _LISTLIKE) for v in arr):
        return _explode(arr, name)
    return arr


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
            f"slice column {column!r} mixes value types {names}: {present[0]!r} at row {row(0)} and {present[j]!r} "
            f"at row {row(j)}; convert it to one type"
        )
    return next(iter(kinds.values()))


def _code_texts(present: Any) -> tuple[np.ndarray, list[str]]:
    """Codes into the sorted distinct strings of a sequence of ``str``."""
    distinct = dict.fromkeys(present)
    uniques = sorted(distinct)
    pos = {v: i for i, v in enumerate(uniques)}
    return np.fromiter(map(pos.__getitem__, present), dtype=np.int64, count=len(present)), [str(u) for u in uniques]


def _decode_bytes(uniq: Sequence[Any], present: np.ndarray, where: np.ndarray | None, column: str, row_of_value: np.ndarray | None, row_offset: int) -> list[str]:
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
        raise TypeError(
            f"slice column {column!r} is bucketed (edges/quantiles) but its value {obj[bad]!r} at row {row_offset + row} is not a number"
        )
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
# order-preserving key encoding (profiles and the top-N cut)
_MASK64 = (1 << 64) - 1


def _encode_value(v: Any) -> bytes:
    if type(v) is str:  # the common case first
        return b"\x05" + v.encode("utf-8", "surrogatepass").replace(b"\x00", b"\x00\xff") + b"\x00\x00"
    if v is None:
        return b"\x01"
    if isinstance(v, bool):
        return b"\x02\x01" if v else b"\x02\x00"
    if isinstance(v, int) and -(1 << 71) <= v < (1 << 71):
        return b"\x03" + (v + (1 << 71)).to_bytes(9, "big")
    if isinstance(v, float):
        u = int.from_bytes(struct.pack(">d", v + 0.0), "big")
        u = (u ^ _MASK64) if u >> 63 else (u | (1 << 63))
        return b"\x04" + u.to_bytes(8, "big")
    tag = b"\x05" if isinstance(v, str) else b"\x06"
    return tag + str(v).encode("utf-8", "surrogatepass").replace(b"\x00", b"\x00\xff") + b"\x00\x00"


def encode_key(values: Sequence[Any]) -> bytes:
    """Order-preserving, injective bytes of a slice key's values.

    Components are self-delimiting (type tag, then 9-byte ints, 8-byte order-preserving floats,
    or escaped UTF-8 text with a terminator), so bytewise order is the order of the values
    (missing first, then booleans, ints, floats, strings; crossed keys column by column).
    Trailing zero bytes are stripped (numpy ``S`` arrays drop them) without losing injectivity.
    """
    if len(values) == 1:  # the common one-column key, without the join
        return _encode_value(values[0]).rstrip(b"\x00")
    return b"".join(_encode_value(v) for v in values).rstrip(b"\x00")


def encode_keys(keys: Sequence[tuple]) -> tuple[list[bytes], list[bool]]:
    """:func:`encode_key` of many slice keys, and whether each holds a missing value."""
    if keys and len(keys[0]) == 1:
        vals = [k[0][1] for k in keys]
        return [_encode_value(v).rstrip(b"\x00") for v in vals], [v is None for v in vals]
    vals = [tuple(v for _, v in k) for k in keys]
    return [encode_key(v) for v in vals], [None in v for v in vals]


def key_values(key: tuple) -> tuple:
    return tuple(v for _, v in key)


# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SpecBounds:
    """What a counting pass decided for one spec (see :mod:`core.slice_profile`).

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

    def pairs(
        self, n: int, invalid: np.ndarray | None = None, row_of: np.ndarray | None = None
    ) -> tuple[np.ndarray | None, np.ndarray, np.ndarray]:
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
        order = _stable_order(codes, k)
        bounds = np.cumsum(np.bincount(codes, minlength=k))
        at = order if pos is None else pos[order]
        return np.split(at.astype(np.int64, copy=False), bounds[:-1]), skipped


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


def assign_slices(
    spec: SliceSpec, columns: Mapping[str, Any], n: int, bounds: SpecBounds | None = None, row_offset: int = 0
) -> Assignment:
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


def split_by_code(codes: np.ndarray, num: int) -> list[np.ndarray]:
    """Row indices of each code 0..num-1 (stable order), via one stable argsort."""
    order = _stable_order(codes, num)
    bounds = np.cumsum(np.bincount(codes, minlength=num))
    return np.split(order, bounds[:-1])


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
