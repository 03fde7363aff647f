"""The slice spec grammar: :class:`SliceSpec`, :func:`parse_slices`, bucket labels.

One line names the columns of a spec (crossed when several), value filters, numeric buckets
(``edges`` / ``quantiles``) and the spec's bounds (``max_slices``, ``by``, ``min_slice_size``);
the grammar is the same in Python, Beam, Spark and the CLI (see :class:`SliceSpec`). This module
knows nothing of data: reading slice columns and their values is :mod:`mergeable_metrics.slicing.values`,
assigning rows to slices :mod:`mergeable_metrics.slicing.assign` (which re-exports every name here).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

import numpy as np

from mergeable_metrics._util.public import public
from mergeable_metrics._util.limits import MAX_QUANTILES, MAX_SLICES

OVERALL: tuple = ()

#: Slice value of the slice that sums every value outside a spec's ``max_slices`` largest ones.
OTHER = "__other__"
#: the slice value standing for a spec's suppressed slices whose names are withheld (mergeable_metrics.evaluation.suppression)
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
@public("mergeable_metrics")
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
    * Slice values are :func:`~mergeable_metrics.slicing.values.canonical_value` forms, the same in every engine (``-0.0`` is
      ``0``, ``5.0`` is ``5``, ``inf`` is ``"inf"``, decimals and timestamps are text); a column
      mixing kinds of values (strings and numbers, booleans and numbers) raises ``TypeError``.
    * Filter values are text, compared with the column's values by type: ``7`` matches the int 7
      and the float 7.0, integer text is compared exactly (``9007199254740993`` is not
      ``2**53``), ``true``/``false`` (or ``1``/``0``) match booleans, ``null`` matches missing values. Rows
      whose value is not listed are in no slice of the spec (they still count in the overall slice).
    * Escape ``, ; : = | \\`` inside names and values with a backslash (``a\\,b``).
    * Bucket values are readable, sortable interval labels: ``"(-inf, 0)"``, ``"[0, 500)"``,
      ``"[500, 1000)"``, ``"[1000, inf)"``. Quantile buckets use the interior quantiles
      ``q_i = i/k`` (``i = 1..k-1``, numpy's default "linear" method, computed exactly by a
      counting pass; equal edges collapse); see :mod:`mergeable_metrics.evaluation.profile` for very many distinct
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
                raise _bad(
                    self,
                    "max_slices cannot be combined with quantiles in one spec (the bucket edges are not known while counting); use edges= or a separate spec",
                )
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
            raise ValueError(f"slice specs {str(clash)!r} and {str(p)!r} slice the same columns {list(p.columns)}; their slice keys would collide: keep one")
        out.append(p)
    return tuple(out)
