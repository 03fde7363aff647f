"""Late labels, the engine-free join: the outcome of every prediction and label row keyed by an
example id, the matched examples and the outcome counts per slice (:class:`JoinCounts`).

The engines group the rows of an id together and call :func:`join_batches`, the one place of
the join's math: ``mergeable_metrics.pipelines.latelabels`` (the local, Beam and Spark batch joins, Spark
Structured Streaming's stream-stream join) and ``mergeable_metrics.beam.latelabels`` (the stateful
streaming join). pyarrow is imported inside the functions (core's modules import numpy only).

A prediction is **matched** when its label arrives within ``max_delay`` of it
(``0 <= label_time - prediction_time <= max_delay``); metrics are computed on the matched
examples only, and every other row is counted, never dropped silently.

The outcome of every row (:func:`classify`, the one place of this math, used by every engine):

====================================  ===================================================================
outcome                               rows
====================================  ===================================================================
``matched``                           a prediction and its label, ``0 <= delay <= max_delay``
``late``                              a prediction whose label came after ``max_delay``
``label_before_prediction``           a prediction whose label's time is before the prediction's
``never``                             a prediction whose id has no label in the labels input
``duplicate_predictions``             a prediction row of an id that has an earlier one
``invalid_predictions``               a prediction row with a null id or time (``on_invalid="skip"``)
``orphan_labels``                     a label whose id has no prediction
``duplicate_labels``                  a label row of an id that has an earlier one
``invalid_labels``                    a label row with a null id or time (``on_invalid="skip"``)
====================================  ===================================================================

Duplicates: for one id, the earliest prediction (smallest time; ties by the rows' other values, so
the choice is the same in every engine) is *the* prediction, and the earliest label is *the*
label; the other rows of the id are counted as duplicates and not used. ``late``, ``never`` and
``label_before_prediction`` are the predictions whose label did not come within the delay
(``no_label_within_delay``). Totals: ``predictions = matched + late + label_before_prediction +
never + duplicate_predictions + invalid_predictions`` and ``labels = matched + late +
label_before_prediction + orphan_labels + duplicate_labels + invalid_labels``.

Counts are reported per slice of every plain slice spec (columns only; a spec with filters, buckets
or ``max_slices`` gets no per-slice counts) and, with ``window`` (seconds), per tumbling window of
the prediction time (columns ``window_start`` / ``window_end``, ISO 8601 text, which slice specs
may name, e.g. ``window_start,carrier``). A prediction row is counted in its own slices (a
duplicate label in the slices of its id's prediction); an orphan label is counted in the slices
whose columns the labels input holds (``window_start`` from its label time), an invalid row in the
overall slice only.

Times: Arrow timestamps (any unit; time-zone-aware ones as UTC instants) or dates, or numbers
(seconds).
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Sequence

import numpy as np

from mergeable_metrics.slicing.values import canonical_value
from mergeable_metrics.inputs.validation import invalid_value_message
from mergeable_metrics.time.windows import MAX_US, MIN_US, TIME_RANGE_RULE, TimeWindows, parse_duration, window_slice_values

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "COUNT_NAMES", "Classified", "JoinCounts", "LabelJoin", "bucket_of", "canonical_ids", "classify", "count_outcomes", "count_specs",
    "invalid_rows", "join_batches", "matched_table", "slice_types", "time_micros",
]  # fmt: skip

WINDOW_START, WINDOW_END = "window_start", "window_end"

# row outcomes (int8 codes)
MATCHED, LATE, EARLY, NEVER, DUP_PRED, INVALID_PRED, ORPHAN, DUP_LABEL, INVALID_LABEL = range(9)
#: the count names, in code order
COUNT_NAMES = (
    "matched", "late", "label_before_prediction", "never", "duplicate_predictions", "invalid_predictions",
    "orphan_labels", "duplicate_labels", "invalid_labels",
)  # fmt: skip


@dataclass(frozen=True)
class LabelJoin:
    """How predictions and labels are joined (see the module docstring).

    Attributes:
        id_col: the example id column, in both inputs (the join key).
        label_col: the label column, in the labels input.
        prediction_time_col: event time of a prediction (predictions input).
        label_time_col: event time of a label's arrival (labels input).
        max_delay: the maximum label delay in seconds (>= 0).
        window: tumbling windows of this many seconds of the prediction time (the label time for
            orphan labels), or None.
        on_invalid: ``"raise"`` (a null id or time raises ``ValueError``) or ``"skip"`` (counted
            as ``invalid_*``).
    """

    id_col: str
    label_col: str
    prediction_time_col: str
    label_time_col: str
    max_delay: float
    window: float | None = None
    on_invalid: str = "raise"

    def __post_init__(self) -> None:
        for name in ("id_col", "label_col", "prediction_time_col", "label_time_col"):
            if not isinstance(getattr(self, name), str) or not getattr(self, name):
                raise ValueError(f"LabelJoin.{name} must be a column name, got {getattr(self, name)!r}")
        if self.prediction_time_col == self.id_col or self.label_time_col == self.id_col:
            raise ValueError(f"the time columns must differ from the id column {self.id_col!r}")
        object.__setattr__(self, "max_delay", parse_duration(self.max_delay, "max_label_delay", allow_zero=True) / 1e6)
        if self.window is not None:
            object.__setattr__(self, "window", parse_duration(self.window, "join window") / 1e6)
        if self.on_invalid not in ("raise", "skip"):
            raise ValueError(f"on_invalid must be 'raise' or 'skip', got {self.on_invalid!r}")

    @property
    def window_columns(self) -> tuple[str, ...]:
        return (WINDOW_START, WINDOW_END) if self.window is not None else ()

    def config(self) -> dict[str, Any]:
        """The JSON-ready ``join`` block of the results' config."""
        return {
            "id_col": self.id_col, "label_col": self.label_col, "prediction_time_col": self.prediction_time_col,
            "label_time_col": self.label_time_col, "max_label_delay_seconds": self.max_delay,
            "window_seconds": self.window, "on_invalid": self.on_invalid,
            "metrics_on": "matched examples only (0 <= label_time - prediction_time <= max_label_delay)",
            "duplicates": "the earliest prediction and the earliest label of an id are used; other rows are counted as duplicates",
        }  # fmt: skip


def time_micros(col: pa.ChunkedArray | pa.Array, name: str, what: str = "", row_offset: int = 0) -> np.ndarray:
    """Event times as float64 microseconds since the epoch (NaN where null).

    Args:
        col: the time column. name: its name. what: ``"prediction"`` or ``"label"`` (messages).
        row_offset: the position of the first row (messages).

    Raises:
        TypeError: a column that is neither a timestamp, a date nor a number.
        ValueError: a time outside 0001-01-01 .. 9999-12-31T23:59:59.999999 UTC
            (:data:`mergeable_metrics.time.windows.TIME_RANGE_RULE`), naming the column, the value and the row.
    """
    out = _time_micros(col, name)
    with np.errstate(invalid="ignore"):
        oor = np.isfinite(out) & ((out < MIN_US) | (out > MAX_US))
    if oor.any():
        i = int(np.flatnonzero(oor)[0])
        more = f" ({int(oor.sum())} such rows)" if oor.sum() > 1 else ""
        raise ValueError(f"{what + ' ' if what else ''}{invalid_value_message(name, col[i].as_py(), row_offset + i, TIME_RANGE_RULE, more)}")
    return out


def _time_micros(col: pa.ChunkedArray | pa.Array, name: str) -> np.ndarray:
    import pyarrow as pa
    import pyarrow.compute as pc

    t = col.type
    if pa.types.is_timestamp(t) and t.unit == "ns":
        # nanoseconds (pandas' datetime64[ns]): floored to the microsecond (a safe cast to "us" raises on
        # any sub-microsecond part); int64 floor division keeps the instants exact
        valid = np.asarray(pc.is_valid(col).to_numpy(zero_copy_only=False), dtype=bool)
        out = np.full(len(col), np.nan)
        out[valid] = np.floor_divide(np.asarray(pc.cast(pc.drop_null(col), pa.int64()).to_numpy(zero_copy_only=False), dtype=np.int64), 1000).astype(np.float64)
        return out
    if pa.types.is_timestamp(t):
        arr = pc.cast(col, pa.timestamp("us", t.tz)).cast(pa.int64())
    elif pa.types.is_date(t):
        arr = pc.cast(pc.cast(col, pa.timestamp("us")), pa.int64())
    elif pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t):
        arr = pc.multiply(pc.cast(col, pa.float64(), safe=False), 1e6)  # int64 seconds beyond 2**53: out of range anyway
    elif pa.types.is_null(t):
        arr = pa.nulls(len(col), pa.float64())
    else:
        raise TypeError(f"time column {name!r} must hold timestamps, dates or numbers of seconds, got {t}")
    return np.asarray(pc.cast(arr, pa.float64()).to_numpy(zero_copy_only=False), dtype=np.float64)


def _kind(t: pa.DataType) -> str:
    """The kind of a column's type: ``"number"`` (integers, floats, decimals), ``"text"``, ``"null"``
    or the type itself (its values are compared as they are)."""
    import pyarrow as pa

    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t):
        return "number"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "text"
    return "null" if pa.types.is_null(t) else str(t)


def _kinds_differ(column: str, what: str, pt: pa.DataType, lt: pa.DataType, rule: str) -> ValueError:
    return ValueError(f"{what} column {column!r} is {pt} in the predictions and {lt} in the labels: {rule}")


def _whole_int64(col: pa.ChunkedArray, column: str, what: str, row_offset: int) -> pa.Array:
    """A number column as int64 (whole floats as their int; NaN as a missing id)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_integer(col.type) and not (pa.types.is_uint64(col.type) and len(col) and (pc.max(col).as_py() or 0) >= 1 << 63):
        return pc.cast(col, pa.int64())
    f = np.asarray(pc.cast(col, pa.float64()).to_numpy(zero_copy_only=False), dtype=np.float64)
    valid = np.asarray(pc.is_valid(col).to_numpy(zero_copy_only=False), dtype=bool) & ~np.isnan(f)
    with np.errstate(invalid="ignore"):
        bad = valid & ~((f == np.floor(f)) & (np.abs(f) < 2.0**63))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{what} column {column!r}: invalid value {col[i].as_py()!r} at row {row_offset + i}: ids compared with the other input's "
                         "integer ids must be whole numbers in the int64 range (an integer and a whole float are one id)")  # fmt: skip
    if pa.types.is_integer(col.type):
        return pc.cast(col, pa.int64())
    out = np.zeros(len(f), dtype=np.int64)
    out[valid] = f[valid].astype(np.int64)
    return pa.array(out, pa.int64(), mask=~valid)


def canonical_ids(predictions: pa.Table, labels: pa.Table, id_col: str, pred_offset: int = 0, label_offset: int = 0) -> tuple[pa.Table, pa.Table]:
    """Both inputs with their id columns in one type, by **the id rule** (every engine):

    * ids of one type are compared as they are;
    * numbers of two types (integers, floats, decimals): an integer and a whole float are one id,
      compared as their int64 value (``1 == 1.0``; NaN is a missing id); a fraction or a number
      outside the int64 range is refused, naming the value and the row;
    * text is text, never cast to a number (``"01"`` is not ``1``): an id column of numbers in one
      input and text in the other (or any other two kinds) is refused, naming the column, both
      inputs and both types; an all-null column takes the other input's type.

    Raises:
        ValueError: as above.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    pid, lid = predictions.column(id_col), labels.column(id_col)
    if pid.type == lid.type:
        return predictions, labels
    kp, kl = _kind(pid.type), _kind(lid.type)

    def put(table: pa.Table, col: Any) -> pa.Table:
        return table.set_column(table.column_names.index(id_col), id_col, col)

    if kl == "null":
        return predictions, put(labels, pc.cast(lid, pid.type))
    if kp == "null":
        return put(predictions, pc.cast(pid, lid.type)), labels
    if kp == kl == "number":
        return put(predictions, _whole_int64(pid, id_col, "prediction", pred_offset)), put(labels, _whole_int64(lid, id_col, "label", label_offset))
    if kp == kl == "text":
        return put(predictions, pc.cast(pid, pa.large_string())), put(labels, pc.cast(lid, pa.large_string()))
    rule = "ids of two kinds never meet (text is never cast to a number: '01' is not 1); cast one input's ids to the other's type"
    if kp != kl:
        raise _kinds_differ(id_col, "id", pid.type, lid.type, rule)
    try:
        return predictions, put(labels, pc.cast(lid, pid.type))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise _kinds_differ(id_col, "id", pid.type, lid.type, str(e)) from None


def slice_types(pschema: pa.Schema, lschema: pa.Schema, specs: Sequence[tuple[str, ...]]) -> dict[str, pa.DataType]:
    """The one type of each slice column that both inputs hold (numbers of two types: float64,
    whose whole values are the integers' slice values; text: large_string).

    Raises:
        ValueError: a slice column of two kinds (e.g. int64 in the predictions, text in the labels),
            naming the column, both inputs and both types.
    """
    import pyarrow as pa

    out = {}
    for col in dict.fromkeys(c for spec in specs for c in spec):
        if col not in pschema.names or col not in lschema.names:
            continue
        pt, lt = pschema.field(col).type, lschema.field(col).type
        kp, kl = _kind(pt), _kind(lt)
        if pt == lt or kl == "null":
            out[col] = pt
        elif kp == "null":
            out[col] = lt
        elif kp != kl:
            raise _kinds_differ(col, "slice", pt, lt, "a slice value must be of one kind in both inputs (text is never cast to a number); cast one of them")
        elif kp == "number":
            out[col] = pa.int64() if pa.types.is_integer(pt) and pa.types.is_integer(lt) else pa.float64()
        elif kp == "text":
            out[col] = pa.large_string()
        else:
            out[col] = pt
    return out


def invalid_rows(table: pa.Table, id_col: str, time_col: str, what: str, on_invalid: str, row_offset: int, times: np.ndarray) -> np.ndarray:
    # a time that is not finite (NaN, inf: numbers of seconds) is as invalid as a null one: inf - inf
    # would otherwise give a NaN delay, which no comparison sorts into late or before its prediction
    bad = np.asarray(table.column(id_col).is_null().to_numpy(zero_copy_only=False), dtype=bool) | ~np.isfinite(times)
    if on_invalid == "raise" and bad.any():
        i = int(np.flatnonzero(bad)[0])
        col = id_col if table.column(id_col)[i].as_py() is None else time_col
        value = table.column(col)[i].as_py()
        kind = "missing value None" if value is None else f"invalid value {value!r} (a time must be finite)"
        raise ValueError(
            f"{what} column {col!r}: {kind} at row {row_offset + i} (a {what} needs an id and a time; --skip-invalid counts such rows as invalid_{what}s)"
        )
    return bad


def _first_per_id(table: pa.Table, id_col: str, times: np.ndarray, valid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Among the valid rows, the first row of each id by (time, the other columns) and whether each
    valid row is a duplicate. Returns ``(chosen_rows, duplicate_mask)`` (row indices of ``table``)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    rows = np.flatnonzero(valid)
    sub = table.take(pa.array(rows, pa.int64()))
    keys = [id_col, "__t"] + [c for c in sub.column_names if c != id_col and _sortable(sub.schema.field(c).type)]
    sub = sub.append_column("__t", pa.array(times[rows], pa.float64()))
    order = np.asarray(pc.sort_indices(sub, [(k, "ascending", "at_start") for k in keys]).to_numpy(), dtype=np.int64)
    ids = sub.column(id_col).take(pa.array(order, pa.int64()))
    first = np.ones(len(order), dtype=bool)
    if len(order) > 1:
        first[1:] = ~np.asarray(pc.equal(ids.slice(1), ids.slice(0, len(order) - 1)).to_numpy(zero_copy_only=False), dtype=bool)
    dup = np.zeros(len(table), dtype=bool)
    dup[rows[order[~first]]] = True
    return rows[order[first]], dup


def _sortable(t: pa.DataType) -> bool:
    import pyarrow as pa

    return not (pa.types.is_nested(t) or pa.types.is_dictionary(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t))


@dataclass
class Classified:
    """One classification (:func:`classify`): a code per prediction row and per label row, the label
    row matched (or -1) per prediction row, the prediction row a label is attributed to (or -1),
    and the times in microseconds."""

    pred_outcome: np.ndarray
    pred_label_row: np.ndarray
    label_outcome: np.ndarray
    label_pred_row: np.ndarray
    pred_times: np.ndarray
    label_times: np.ndarray


def classify(predictions: pa.Table, labels: pa.Table, join: LabelJoin, pred_offset: int = 0, label_offset: int = 0) -> Classified:
    """The outcome of every prediction row and every label row (codes of :data:`COUNT_NAMES`;
    a label matched, late or before its prediction has the outcome of its prediction).

    All rows of an id must be in these two tables (engines group by id first).

    Raises:
        ValueError: a null id or time with ``on_invalid="raise"`` (column, value, row position,
            counted from ``pred_offset`` / ``label_offset``); ids of incompatible types.
        TypeError: a time column that is not a timestamp, date or number.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    predictions, labels = canonical_ids(predictions, labels, join.id_col, pred_offset, label_offset)
    pt = time_micros(predictions.column(join.prediction_time_col), join.prediction_time_col, "prediction", pred_offset)
    lt = time_micros(labels.column(join.label_time_col), join.label_time_col, "label", label_offset)
    pbad = invalid_rows(predictions, join.id_col, join.prediction_time_col, "prediction", join.on_invalid, pred_offset, pt)
    lbad = invalid_rows(labels, join.id_col, join.label_time_col, "label", join.on_invalid, label_offset, lt)
    pchosen, pdup = _first_per_id(predictions, join.id_col, pt, ~pbad)
    lchosen, ldup = _first_per_id(labels, join.id_col, lt, ~lbad)
    pred_outcome = np.full(len(predictions), NEVER, dtype=np.int8)
    pred_outcome[pdup], pred_outcome[pbad] = DUP_PRED, INVALID_PRED
    label_outcome = np.full(len(labels), ORPHAN, dtype=np.int8)
    label_outcome[ldup], label_outcome[lbad] = DUP_LABEL, INVALID_LABEL
    pred_label_row = np.full(len(predictions), -1, dtype=np.int64)
    label_pred_row = np.full(len(labels), -1, dtype=np.int64)
    if len(pchosen) and len(lchosen):
        lids = labels.column(join.id_col).take(pa.array(lchosen, pa.int64()))
        pos = pc.index_in(predictions.column(join.id_col).take(pa.array(pchosen, pa.int64())), value_set=lids)
        has = np.asarray(pos.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        prow, lrow = pchosen[has], lchosen[np.asarray(pos.drop_null().to_numpy(), dtype=np.int64)]
        delay = lt[lrow] - pt[prow]
        code = np.where(delay < 0, EARLY, np.where(delay > join.max_delay * 1e6, LATE, MATCHED)).astype(np.int8)
        pred_outcome[prow], label_outcome[lrow] = code, code
        pred_label_row[prow], label_pred_row[lrow] = lrow, prow
        # a duplicate label belongs to its id's prediction (its slices), when there is one
        dup_rows = np.flatnonzero(ldup)
        if len(dup_rows):
            dpos = pc.index_in(
                labels.column(join.id_col).take(pa.array(dup_rows, pa.int64())), value_set=predictions.column(join.id_col).take(pa.array(pchosen, pa.int64()))
            )
            dhas = np.asarray(dpos.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
            label_pred_row[dup_rows[dhas]] = pchosen[np.asarray(dpos.drop_null().to_numpy(), dtype=np.int64)]
    return Classified(pred_outcome, pred_label_row, label_outcome, label_pred_row, pt, lt)


def _with_windows(table: pa.Table, micros: np.ndarray, join: LabelJoin) -> pa.Table:
    import pyarrow as pa

    if join.window is None:
        return table
    s, e = window_slice_values(TimeWindows(join.prediction_time_col, join.window), micros)
    return table.append_column(WINDOW_START, pa.array(s, pa.string())).append_column(WINDOW_END, pa.array(e, pa.string()))


def matched_table(predictions: pa.Table, labels: pa.Table, join: LabelJoin, c: Classified) -> pa.Table:
    """The matched examples: every prediction column, the label column and, with windows,
    ``window_start`` / ``window_end`` of the prediction time (the input of the metrics)."""
    import pyarrow as pa

    rows = np.flatnonzero(c.pred_outcome == MATCHED)
    out = predictions.take(pa.array(rows, pa.int64()))
    out = out.append_column(join.label_col, labels.column(join.label_col).take(pa.array(c.pred_label_row[rows], pa.int64())))
    return _with_windows(out, c.pred_times[rows], join)


class JoinCounts:
    """Outcome counts per slice key (``()`` overall; keys as in :class:`mergeable_metrics.Results`), an exact
    commutative monoid: :meth:`merge` sums, so partitions and buckets may be counted apart."""

    def __init__(self, counts: dict[tuple, np.ndarray] | None = None) -> None:
        self.counts: dict[tuple, np.ndarray] = counts or {}

    def add(self, key: tuple, codes: np.ndarray) -> None:
        """Count each code of ``codes`` (int array of outcome codes) in slice ``key``."""
        self.add_count(key, np.bincount(codes, minlength=len(COUNT_NAMES)).astype(np.int64))

    def add_count(self, key: tuple, vec: np.ndarray) -> None:
        cur = self.counts.get(key)
        self.counts[key] = vec.copy() if cur is None else cur + vec

    def merge(self, other: "JoinCounts") -> "JoinCounts":
        out = JoinCounts({k: v.copy() for k, v in self.counts.items()})
        for k, v in other.counts.items():
            out.counts[k] = out.counts[k] + v if k in out.counts else v.copy()
        return out

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, JoinCounts)
            and self.counts.keys() == other.counts.keys()
            and all(np.array_equal(v, other.counts[k]) for k, v in self.counts.items())
        )

    def get(self, key: tuple = ()) -> dict[str, int]:
        """``{count name: n, ..., "predictions", "labels", "no_label_within_delay"}`` of one slice."""
        return _named(self.counts.get(tuple(key), np.zeros(len(COUNT_NAMES), np.int64)))

    def to_lines(self) -> list[str]:
        """JSON lines ``[key pairs, counts]`` (how engines move counts)."""
        return [json.dumps([[list(p) for p in k], v.tolist()]) for k, v in self.counts.items()]

    @classmethod
    def from_lines(cls, lines: Iterable[str]) -> "JoinCounts":
        out = cls()
        for ln in lines:
            k, v = json.loads(ln)
            part = cls({tuple(tuple(p) for p in k): np.asarray(v, dtype=np.int64)})
            out = out.merge(part)
        return out


def _named(v: np.ndarray) -> dict[str, int]:
    d = {n: int(x) for n, x in zip(COUNT_NAMES, v)}
    d["predictions"] = d["matched"] + d["late"] + d["label_before_prediction"] + d["never"] + d["duplicate_predictions"] + d["invalid_predictions"]
    d["labels"] = d["matched"] + d["late"] + d["label_before_prediction"] + d["orphan_labels"] + d["duplicate_labels"] + d["invalid_labels"]
    d["no_label_within_delay"] = d["late"] + d["label_before_prediction"] + d["never"]
    return d


def count_outcomes(predictions: pa.Table, labels: pa.Table, join: LabelJoin, c: Classified, specs: Sequence[tuple[str, ...]]) -> JoinCounts:
    """Counts per slice key of every spec (tuples of column names) and overall."""
    import pyarrow as pa

    counts = JoinCounts()
    # one row per counted event: its code and where its slice values come from
    pred_rows = np.arange(len(predictions))
    lab_extra = np.flatnonzero(np.isin(c.label_outcome, (ORPHAN, DUP_LABEL, INVALID_LABEL)))
    codes = np.concatenate([c.pred_outcome, c.label_outcome[lab_extra]]).astype(np.int64)
    counts.add((), codes)
    if not specs:
        return counts
    ptable = _with_windows(predictions, c.pred_times, join)
    ltable = _with_windows(labels, c.label_times, join)
    types = slice_types(ptable.schema, ltable.schema, specs)
    attributed = c.label_pred_row[lab_extra]
    on_pred = attributed >= 0
    invalid = np.concatenate([c.pred_outcome == INVALID_PRED, c.label_outcome[lab_extra] == INVALID_LABEL])
    for spec in specs:
        if not all(col in ptable.column_names for col in spec):
            continue
        src_rows = np.concatenate([pred_rows, attributed[on_pred]])
        parts = [ptable.select(list(spec)).take(pa.array(src_rows, pa.int64()))]
        if all(col in ltable.column_names for col in spec):
            common = pa.schema([(col, types.get(col, parts[0].schema.field(col).type)) for col in spec])
            parts[0] = parts[0].cast(common)
        sel = np.concatenate([~invalid[: len(pred_rows)], ~invalid[len(pred_rows) :][on_pred]])
        sel_codes = [np.concatenate([codes[: len(pred_rows)], codes[len(pred_rows) :][on_pred]])]
        own = lab_extra[~on_pred]
        if len(own) and all(col in ltable.column_names for col in spec):
            parts.append(ltable.select(list(spec)).take(pa.array(own, pa.int64())).cast(parts[0].schema))
            sel = np.concatenate([sel, ~invalid[len(pred_rows) :][~on_pred]])
            sel_codes.append(codes[len(pred_rows) :][~on_pred])
        table = pa.concat_tables(parts)
        code_arr = np.concatenate(sel_codes)
        keep = np.flatnonzero(sel)
        if not len(keep):
            continue
        table, code_arr = table.take(pa.array(keep, pa.int64())), code_arr[keep]
        grouped = (
            table.append_column("__code", pa.array(code_arr, pa.int64())).group_by(list(spec) + ["__code"], use_threads=False).aggregate([([], "count_all")])
        )
        cols = [grouped.column(col).to_pylist() for col in spec]
        gc, gn = grouped.column("__code").to_numpy(), grouped.column("count_all").to_numpy()
        for i in range(grouped.num_rows):
            key = tuple((col, canonical_value(vals[i])) for col, vals in zip(spec, cols))
            vec = np.zeros(len(COUNT_NAMES), dtype=np.int64)
            vec[int(gc[i])] = int(gn[i])
            counts.add_count(key, vec)
    return counts


def join_batches(
    predictions: pa.Table, labels: pa.Table, join: LabelJoin, specs: Sequence[tuple[str, ...]], pred_offset: int = 0, label_offset: int = 0
) -> tuple[pa.Table, JoinCounts]:
    """Classify, then the matched examples and the counts: what each engine does per id group."""
    c = classify(predictions, labels, join, pred_offset, label_offset)
    return matched_table(predictions, labels, join, c), count_outcomes(predictions, labels, join, c, specs)


def count_specs(evaluation: Any) -> list[tuple[str, ...]]:
    """The plain slice specs (columns only) of an evaluation: the ones that get per-slice counts."""
    return [s.columns for s in evaluation.slices if not (s.filters or s.edges or s.quantiles or s.max_slices)]


def bucket_of(ids: pa.Array | pa.ChunkedArray, n: int) -> np.ndarray:
    """A bucket in [0, n) per id, the same in every process (CRC-32 of the id's text; nulls: 0)."""
    vals = ids.to_pylist()
    return np.asarray([0 if v is None else zlib.crc32(str(canonical_value(v)).encode()) % n for v in vals], dtype=np.int64)
