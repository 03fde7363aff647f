"""Late labels: join predictions and labels that arrive as two inputs keyed by an example id.

Predictions carry an event time (``prediction_time_col``: when the prediction was made), labels
another (``label_time_col``: when the label arrived). A prediction is **matched** when its label
arrives within ``max_delay`` of it (``0 <= label_time - prediction_time <= max_delay``); metrics
are computed on the matched examples only, and every other row is counted, never dropped silently.

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
(seconds). Engines: local (:func:`run_local`: an in-memory join, both inputs' used columns held in
memory), Beam (:func:`run_beam`: ids hashed to buckets, ``CoGroupByKey`` per bucket in the global
window, each bucket classified at once), Spark (:func:`run_spark`: both inputs repartitioned by id,
each partition classified in ``mapInArrow``). They give identical counts and metrics. Spark
Structured Streaming: :func:`stream_join` (a stream-stream join with watermarks; unique ids).
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from core.slice_values import canonical_value
from core.windows import TimeWindows, parse_duration, window_slice_values

__all__ = [
    "COUNT_NAMES", "LabelJoin", "JoinCounts", "classify", "count_specs", "count_outcomes", "attach_counts", "join_batches", "matched_table",
    "run_join", "stream_join",
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


def _micros(col: pa.ChunkedArray | pa.Array, name: str) -> np.ndarray:
    """Event times as float64 microseconds since the epoch (NaN where null).

    Raises:
        TypeError: a column that is neither a timestamp, a date nor a number.
    """
    t = col.type
    if pa.types.is_timestamp(t):
        arr = pc.cast(col, pa.timestamp("us", t.tz)).cast(pa.int64())
    elif pa.types.is_date(t):
        arr = pc.cast(pc.cast(col, pa.timestamp("us")), pa.int64())
    elif pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t):
        arr = pc.multiply(pc.cast(col, pa.float64()), 1e6)
    elif pa.types.is_null(t):
        arr = pa.nulls(len(col), pa.float64())
    else:
        raise TypeError(f"time column {name!r} must hold timestamps, dates or numbers of seconds, got {t}")
    return np.asarray(pc.cast(arr, pa.float64()).to_numpy(zero_copy_only=False), dtype=np.float64)


def _invalid(table: pa.Table, id_col: str, time_col: str, what: str, on_invalid: str, row_offset: int, times: np.ndarray) -> np.ndarray:
    bad = np.asarray(table.column(id_col).is_null().to_numpy(zero_copy_only=False), dtype=bool) | np.isnan(times)
    if on_invalid == "raise" and bad.any():
        i = int(np.flatnonzero(bad)[0])
        col = id_col if table.column(id_col)[i].as_py() is None else time_col
        raise ValueError(f"{what} column {col!r}: missing value None at row {row_offset + i} (a {what} needs an id and a time; --skip-invalid counts such rows as invalid_{what}s)")
    return bad


def _first_per_id(table: pa.Table, id_col: str, times: np.ndarray, valid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Among the valid rows, the first row of each id by (time, the other columns) and whether each
    valid row is a duplicate. Returns ``(chosen_rows, duplicate_mask)`` (row indices of ``table``)."""
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
    pid, lid = predictions.column(join.id_col), labels.column(join.id_col)
    if pid.type != lid.type:
        try:
            labels = labels.set_column(labels.column_names.index(join.id_col), join.id_col, pc.cast(lid, pid.type))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise ValueError(f"id column {join.id_col!r} is {pid.type} in the predictions and {lid.type} in the labels: {e}") from None
    pt = _micros(predictions.column(join.prediction_time_col), join.prediction_time_col)
    lt = _micros(labels.column(join.label_time_col), join.label_time_col)
    pbad = _invalid(predictions, join.id_col, join.prediction_time_col, "prediction", join.on_invalid, pred_offset, pt)
    lbad = _invalid(labels, join.id_col, join.label_time_col, "label", join.on_invalid, label_offset, lt)
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
            dpos = pc.index_in(labels.column(join.id_col).take(pa.array(dup_rows, pa.int64())), value_set=predictions.column(join.id_col).take(pa.array(pchosen, pa.int64())))
            dhas = np.asarray(dpos.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
            label_pred_row[dup_rows[dhas]] = pchosen[np.asarray(dpos.drop_null().to_numpy(), dtype=np.int64)]
    return Classified(pred_outcome, pred_label_row, label_outcome, label_pred_row, pt, lt)


def _with_windows(table: pa.Table, micros: np.ndarray, join: LabelJoin) -> pa.Table:
    if join.window is None:
        return table
    s, e = window_slice_values(TimeWindows(join.prediction_time_col, join.window), micros)
    return table.append_column(WINDOW_START, pa.array(s, pa.string())).append_column(WINDOW_END, pa.array(e, pa.string()))


def matched_table(predictions: pa.Table, labels: pa.Table, join: LabelJoin, c: Classified) -> pa.Table:
    """The matched examples: every prediction column, the label column and, with windows,
    ``window_start`` / ``window_end`` of the prediction time (the input of the metrics)."""
    rows = np.flatnonzero(c.pred_outcome == MATCHED)
    out = predictions.take(pa.array(rows, pa.int64()))
    out = out.append_column(join.label_col, labels.column(join.label_col).take(pa.array(c.pred_label_row[rows], pa.int64())))
    return _with_windows(out, c.pred_times[rows], join)


class JoinCounts:
    """Outcome counts per slice key (``()`` overall; keys as in :class:`core.Results`), an exact
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
        return isinstance(other, JoinCounts) and self.counts.keys() == other.counts.keys() and all(np.array_equal(v, other.counts[k]) for k, v in self.counts.items())

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
    attributed = c.label_pred_row[lab_extra]
    on_pred = attributed >= 0
    invalid = np.concatenate([c.pred_outcome == INVALID_PRED, c.label_outcome[lab_extra] == INVALID_LABEL])
    for spec in specs:
        if not all(col in ptable.column_names for col in spec):
            continue
        src_rows = np.concatenate([pred_rows, attributed[on_pred]])
        parts = [ptable.select(list(spec)).take(pa.array(src_rows, pa.int64()))]
        sel = np.concatenate([~invalid[: len(pred_rows)], ~invalid[len(pred_rows):][on_pred]])
        sel_codes = [np.concatenate([codes[: len(pred_rows)], codes[len(pred_rows):][on_pred]])]
        own = lab_extra[~on_pred]
        if len(own) and all(col in ltable.column_names for col in spec):
            parts.append(ltable.select(list(spec)).take(pa.array(own, pa.int64())).cast(parts[0].schema))
            sel = np.concatenate([sel, ~invalid[len(pred_rows):][~on_pred]])
            sel_codes.append(codes[len(pred_rows):][~on_pred])
        table = pa.concat_tables(parts)
        code_arr = np.concatenate(sel_codes)
        keep = np.flatnonzero(sel)
        if not len(keep):
            continue
        table, code_arr = table.take(pa.array(keep, pa.int64())), code_arr[keep]
        grouped = table.append_column("__code", pa.array(code_arr, pa.int64())).group_by(list(spec) + ["__code"], use_threads=False).aggregate([([], "count_all")])
        cols = [grouped.column(col).to_pylist() for col in spec]
        gc, gn = grouped.column("__code").to_numpy(), grouped.column("count_all").to_numpy()
        for i in range(grouped.num_rows):
            key = tuple((col, canonical_value(vals[i])) for col, vals in zip(spec, cols))
            vec = np.zeros(len(COUNT_NAMES), dtype=np.int64)
            vec[int(gc[i])] = int(gn[i])
            counts.add_count(key, vec)
    return counts


def join_batches(predictions: pa.Table, labels: pa.Table, join: LabelJoin, specs: Sequence[tuple[str, ...]], pred_offset: int = 0, label_offset: int = 0) -> tuple[pa.Table, JoinCounts]:
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


def attach_counts(doc: dict[str, Any], counts: JoinCounts, join: LabelJoin) -> dict[str, Any]:
    """Put the join's counts into a ``metrics.json`` document: a top-level ``join`` block (the
    settings and the overall counts, and ``slices_without_matches``: counts of slices that have no
    matched example, hence no metrics) and a ``join`` object in each slice."""
    seen = set()
    for s in doc["slices"]:
        key = tuple(s["slice"].items())
        seen.add(key)
        s["join"] = counts.get(key)
    others = [{"slice": dict(k), "join": counts.get(k)} for k in sorted(counts.counts, key=lambda k: json.dumps(k)) if k not in seen]
    doc["join"] = {**join.config(), "counts": counts.get(()), "slices_without_matches": others}
    return doc


# ----------------------------------------------------------------------------------------- engines
def _input_columns(evaluation: Any, join: LabelJoin, labels_names: Sequence[str]) -> tuple[list[str], list[str]]:
    """Columns read from the predictions and from the labels."""
    skip = {join.label_col, *join.window_columns}
    pcols = [join.id_col, join.prediction_time_col] + [c for c in evaluation.columns if c not in skip and c not in (join.id_col, join.prediction_time_col)]
    spec_cols = {c for spec in count_specs(evaluation) for c in spec}
    lcols = [join.id_col, join.label_time_col, join.label_col] + sorted(c for c in spec_cols if c in labels_names and c not in (join.id_col, join.label_time_col, join.label_col, *join.window_columns))
    return pcols, lcols


def _read_all(path: str, columns: Sequence[str], fmt: str | None) -> pa.Table:
    from pipelines import io

    fmt = io.detect_format(path, fmt)
    data = io.dataset(path, fmt)
    io.check_columns(data, columns, path)
    schema = io.input_schema(path, fmt, list(columns))
    batches = list(io.iter_batches(path, columns, fmt, 65536, schema))
    if not batches:
        return pa.Table.from_batches([], schema=pa.schema([(c, schema.types[c]) for c in columns]))
    return pa.Table.from_batches(batches)


def check_inputs(pred_path: str, labels_path: str, evaluation: Any, join: LabelJoin, fmt: str | None = None, labels_fmt: str | None = None) -> tuple[pa.Table, pa.Table]:
    """Read both inputs' used columns (local engine, and the checks before Beam and Spark start:
    a null id or time raises here naming its row, with ``on_invalid="raise"``)."""
    from pipelines import io

    if join.label_col in io.dataset(pred_path, fmt).schema.names:
        raise ValueError(f"the label column {join.label_col!r} is in the predictions input too: labels come from --labels")
    pcols, lcols = _input_columns(evaluation, join, io.dataset(labels_path, labels_fmt).schema.names)
    preds, labels = _read_all(pred_path, pcols, fmt), _read_all(labels_path, lcols, labels_fmt)
    classify(preds.slice(0, 0), labels.slice(0, 0), join)  # types of ids and times
    if join.on_invalid == "raise":
        _invalid(preds, join.id_col, join.prediction_time_col, "prediction", "raise", 0, _micros(preds.column(join.prediction_time_col), join.prediction_time_col))
        _invalid(labels, join.id_col, join.label_time_col, "label", "raise", 0, _micros(labels.column(join.label_time_col), join.label_time_col))
    return preds, labels


def run_local(evaluation: Any, join: LabelJoin, preds: pa.Table, labels: pa.Table) -> tuple[Any, JoinCounts]:
    """The in-memory join: both inputs' used columns are held in memory (a few columns: the
    flights stream's 168,000 predictions take about 10 MB); then the matched rows are folded."""
    matched, counts = join_batches(preds, labels, join, count_specs(evaluation))
    acc = evaluation.zero()
    for i, batch in enumerate(matched.to_batches(max_chunksize=65536)):
        evaluation.fold(acc, batch, row_offset=i * 65536)
    return evaluation.finish(acc), counts


def _split_buckets(table: pa.Table, id_col: str, n: int) -> list[tuple[int, pa.Table]]:
    b = bucket_of(table.column(id_col), n)
    return [(int(k), table.take(pa.array(np.flatnonzero(b == k), pa.int64()))) for k in np.unique(b)]


def _join_bucket(item: tuple[int, dict[str, list]], join: LabelJoin, specs: list, pschema: pa.Schema, lschema: pa.Schema):
    _, groups = item
    preds = pa.concat_tables(list(groups["p"])) if groups["p"] else pschema.empty_table()
    labels = pa.concat_tables(list(groups["l"])) if groups["l"] else lschema.empty_table()
    matched, counts = join_batches(preds, labels, join, specs)
    for batch in matched.to_batches():
        yield ("m", batch)
    yield ("c", counts.to_lines())


def run_beam(evaluation: Any, join: LabelJoin, preds: pa.Table, labels: pa.Table, buckets: int = 16, beam_args: Sequence[str] = ()) -> tuple[Any, JoinCounts]:
    """Beam: prediction and label batches keyed by id bucket, ``CoGroupByKey`` (global window), each
    bucket joined by :func:`join_batches`; the matched batches go to ``ComputeMetrics``, the counts
    are summed. The inputs are the tables :func:`check_inputs` read (created as a PCollection)."""
    import glob
    import os
    import shutil
    import tempfile

    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions

    from beam_metrics import ComputeMetrics, slice_result_from_json, slice_result_to_json

    specs = count_specs(evaluation)
    args = list(beam_args)
    if not any(a.startswith("--runner") for a in args):
        args.append("--runner=DirectRunner")
    tmp = tempfile.mkdtemp(prefix="mm-latelabels-")
    try:
        with beam.Pipeline(options=PipelineOptions(args)) as p:
            pb = p | "Predictions" >> beam.Create(list(preds.to_batches(max_chunksize=20000))) | "PTables" >> beam.Map(lambda b: pa.Table.from_batches([b]))
            lb = p | "Labels" >> beam.Create(list(labels.to_batches(max_chunksize=20000))) | "LTables" >> beam.Map(lambda b: pa.Table.from_batches([b]))
            pk = pb | "PBuckets" >> beam.FlatMap(_split_buckets, join.id_col, buckets)
            lk = lb | "LBuckets" >> beam.FlatMap(_split_buckets, join.id_col, buckets)
            out = {"p": pk, "l": lk} | "Join" >> beam.CoGroupByKey() | "Classify" >> beam.FlatMap(_join_bucket, join, specs, preds.schema, labels.schema)
            matched = out | "Matched" >> beam.FlatMap(lambda kv: [kv[1]] if kv[0] == "m" else [])
            (
                matched
                | "Metrics" >> ComputeMetrics(evaluation)
                | "ToJson" >> beam.Map(slice_result_to_json)
                | "WriteSlices" >> beam.io.WriteToText(os.path.join(tmp, "slices"), file_name_suffix=".jsonl")
            )
            (
                out
                | "Counts" >> beam.FlatMap(lambda kv: kv[1] if kv[0] == "c" else [])
                | "WriteCounts" >> beam.io.WriteToText(os.path.join(tmp, "counts"), file_name_suffix=".jsonl")
            )

        def lines(prefix: str) -> list[str]:
            got = []
            for f in sorted(glob.glob(os.path.join(tmp, prefix + "*.jsonl"))):
                with open(f) as fh:
                    got += [ln for ln in fh.read().splitlines() if ln.strip()]
            return got

        slices, counts = lines("slices"), JoinCounts.from_lines(lines("counts"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if not counts.counts:
        counts = join_batches(preds.slice(0, 0), labels.slice(0, 0), join, specs)[1]
    return evaluation.collect(slices=[slice_result_from_json(ln) for ln in slices]), counts


def run_spark(evaluation: Any, join: LabelJoin, pred_path: str, labels_path: str, preds: pa.Table, labels: pa.Table, fmt: str | None = None, labels_fmt: str | None = None, master: str = "local[2]", partitions: int = 4) -> tuple[Any, JoinCounts]:
    """Spark (batch): both inputs read as DataFrames, unioned with a side column, repartitioned by
    id (every row of an id in one partition), each partition joined by :func:`join_batches` in
    ``mapInArrow``; the matched rows go to ``compute_metrics``, the counts are summed on the
    driver. ``preds`` / ``labels`` (from :func:`check_inputs`) give the schemas."""
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import from_arrow_schema

    from pipelines import engines, io
    from spark_metrics import collect_results, compute_metrics, get_spark

    specs = count_specs(evaluation)
    from pipelines.errors import engine_stderr

    with engine_stderr():  # a JVM started here logs to the CLI's log file
        spark = get_spark(master=master)
    frames = []
    for side, path, table, f in (("p", pred_path, preds, fmt), ("l", labels_path, labels, labels_fmt)):
        f = io.detect_format(path, f)
        schema = io.input_schema(path, f, table.column_names)
        df = engines.read_spark(spark, __import__("os").path.abspath(path), schema, table.column_names).select(*table.column_names)
        frames.append(df.toDF(*[f"{side}_{i}" for i in range(len(table.column_names))]).withColumn("__side", F.lit(side)).withColumn("__id", F.col(f"{side}_0").cast("string")))
    union = frames[0].unionByName(frames[1], allowMissingColumns=True).repartition(partitions, "__id")
    pnames, lnames = preds.column_names, labels.column_names
    pschema, lschema = preds.schema, labels.schema

    def tables(batches):
        got = [pa.Table.from_batches([b]) for b in batches]
        whole = pa.concat_tables(got) if got else None
        if whole is None or whole.num_rows == 0:
            return pschema.empty_table(), lschema.empty_table()
        side = whole.column("__side")
        p = whole.filter(pc.equal(side, "p")).select([f"p_{i}" for i in range(len(pnames))]).rename_columns(pnames).cast(pschema)
        lt = whole.filter(pc.equal(side, "l")).select([f"l_{i}" for i in range(len(lnames))]).rename_columns(lnames).cast(lschema)
        return p, lt

    mschema = matched_table(preds.slice(0, 0), labels.slice(0, 0), join, classify(preds.slice(0, 0), labels.slice(0, 0), join)).schema

    def matched_fn(batches):
        p, lt = tables(batches)
        m = join_batches(p, lt, join, [])[0].cast(mschema)
        yield from m.to_batches()

    def counts_fn(batches):
        p, lt = tables(batches)
        lines_ = join_batches(p, lt, join, specs)[1].to_lines()
        yield pa.record_batch([pa.array(lines_, pa.string())], names=["line"])

    union = union.cache()
    try:
        matched = union.mapInArrow(matched_fn, from_arrow_schema(mschema))
        results = collect_results(compute_metrics(matched, evaluation=evaluation), evaluation)
        lines = [r["line"] for r in union.mapInArrow(counts_fn, "line string").collect()]
    finally:
        union.unpersist()
    counts = JoinCounts.from_lines(lines)
    if not counts.counts:
        counts = join_batches(preds.slice(0, 0), labels.slice(0, 0), join, specs)[1]
    return results, counts


def run_join(engine: str, evaluation: Any, join: LabelJoin, pred_path: str, labels_path: str, fmt: str | None = None, labels_fmt: str | None = None, **options: Any) -> tuple[Any, JoinCounts]:
    """Join and evaluate on ``engine`` (local, beam or spark): ``(core.Results, JoinCounts)``.

    Raises:
        ValueError: a missing column, a null id or time (``on_invalid="raise"``), bad settings.
    """
    preds, labels = check_inputs(pred_path, labels_path, evaluation, join, fmt, labels_fmt)
    if engine == "local":
        res, counts = run_local(evaluation, join, preds, labels)
    elif engine == "beam":
        res, counts = run_beam(evaluation, join, preds, labels, beam_args=options.get("beam_args", ()))
    elif engine == "spark":
        res, counts = run_spark(evaluation, join, pred_path, labels_path, preds, labels, fmt, labels_fmt, master=options.get("spark_master", "local[2]"))
    else:
        raise ValueError(f"engine must be local, beam or spark, got {engine!r}")
    res.config["join"] = join.config()
    return res, counts


# ------------------------------------------------------------------------ Spark Structured Streaming
#: the ``outcome`` values of :func:`stream_join`'s rows
STREAM_OUTCOMES = ("matched", "no_label_within_delay", "unmatched_label")


def stream_join(predictions: Any, labels: Any, id_col: str, prediction_time_col: str, label_time_col: str, max_label_delay: str | float, label_col: str = "label", watermark_delay: str | float = 0) -> Any:
    """Join a predictions stream and a labels stream (Spark Structured Streaming) by id, with
    ``prediction_time <= label_time <= prediction_time + max_label_delay``: a full outer
    stream-stream join with watermarks, so the join's state is bounded by the delay.

    Each output row has every prediction column, ``label_col``, ``label_time_col`` and ``outcome``:

    * ``matched``: a prediction and its label within the delay (emitted as soon as both came);
    * ``no_label_within_delay``: a prediction whose label did not come within the delay (batch
      :func:`classify`'s ``late`` + ``label_before_prediction`` + ``never``), emitted once the
      watermark passes ``prediction_time + max_label_delay``; label columns null;
    * ``unmatched_label``: a label that matched no prediction (batch ``orphan_labels`` and the
      labels of ``late`` / ``label_before_prediction`` predictions), emitted once the watermark
      passes it; prediction columns null except ``id_col``.

    Feed ``out.where("outcome = 'matched'")`` to ``spark_metrics.compute_metrics(...,
    window=(prediction_time_col, ...), output_mode="append")`` for windowed metrics on the matched
    examples (the prediction time keeps its watermark through the join; the join makes it
    nullable, hence ``compute_metrics``' warning, moot here: matched rows have a time). Ids must be unique within
    each stream: a stream join keeps no "earliest row per id", so a duplicate id gives one row per
    pair within the delay (the batch join counts duplicates; use it when ids repeat).

    Args:
        predictions: a streaming DataFrame with ``id_col`` and ``prediction_time_col`` (a timestamp).
        labels: a streaming DataFrame with ``id_col``, ``label_time_col`` (a timestamp) and ``label_col``.
        max_label_delay: the maximum delay (:func:`core.windows.parse_duration`: ``6h``, ``90 minutes``, seconds; 0 allowed).
        watermark_delay: how late (in event time) a row may arrive and still be joined; applied
            with ``withWatermark`` to both time columns.

    Raises:
        ValueError: a batch DataFrame, a missing column, a time column that is not a timestamp,
            clashing column names or a bad duration (naming it).
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import TimestampNTZType, TimestampType

    delay_us = parse_duration(max_label_delay, "max_label_delay", allow_zero=True)
    late_us = parse_duration(watermark_delay, "watermark_delay", allow_zero=True)
    for what, df, cols in (("predictions", predictions, (id_col, prediction_time_col)), ("labels", labels, (id_col, label_time_col, label_col))):
        if not df.isStreaming:
            raise ValueError(f"stream_join: the {what} DataFrame is not streaming (use run_join for batch inputs)")
        for c in cols:
            if c not in df.columns:
                raise ValueError(f"stream_join: column {c!r} is not in the {what} stream (columns: {df.columns})")
        t = cols[1]
        if not isinstance(df.schema[t].dataType, (TimestampType, TimestampNTZType)):
            raise ValueError(f"stream_join: time column {t!r} of the {what} must be a timestamp for a watermark, got {df.schema[t].dataType.simpleString()}")
    clash = sorted({label_col, label_time_col, "outcome", "__lid"} & set(predictions.columns))
    if clash:
        raise ValueError(f"stream_join: the predictions stream has columns {clash} that the join adds")
    p = predictions.withWatermark(prediction_time_col, f"{late_us} microseconds")
    lab = labels.select(F.col(id_col).alias("__lid"), label_time_col, label_col).withWatermark(label_time_col, f"{late_us} microseconds")
    cond = (F.col("__lid") == F.col(id_col)) & (F.col(label_time_col) >= F.col(prediction_time_col)) & (F.col(label_time_col) <= F.col(prediction_time_col) + F.expr(f"INTERVAL {delay_us} MICROSECONDS"))
    joined = p.join(lab, cond, "full_outer")
    outcome = F.when(F.col(id_col).isNull(), F.lit("unmatched_label")).when(F.col("__lid").isNull(), F.lit("no_label_within_delay")).otherwise(F.lit("matched"))
    cols = [F.coalesce(F.col(id_col), F.col("__lid")).alias(id_col) if c == id_col else F.col(c) for c in predictions.columns]
    return joined.select(*cols, F.col(label_col), F.col(label_time_col), outcome.alias("outcome"))
