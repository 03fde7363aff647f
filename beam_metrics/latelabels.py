"""Late labels on Beam streams: :class:`JoinLateLabels`, a stateful join by example id.

Predictions and labels arrive as two PCollections of row dicts with event times (the element
timestamps drive the watermark; the rows carry the times in ``prediction_time_col`` /
``label_time_col``, numbers of seconds or datetimes, as the batch join reads them). Every row is
keyed by its id (the id's canonical text, so ``1`` and ``"1"`` meet, as in the batch join's
buckets) and buffered in the id's state (``BagState``) of a stateful ``DoFn``; an event-time timer
fires when the watermark passes the id's **deadline**::

    deadline = (earliest prediction time of the id, else its earliest label time)
               + max_label_delay + late_label_horizon

The id's rows are classified by :func:`mergeable_metrics.time.latelabels.join_batches` (the one place of the
join's math, the batch engines' too): the matched examples go to the ``matched`` output (every
prediction column, the label column and, with ``window``, the ``window_start`` / ``window_end``
slice values of the prediction time), and the outcome counts of the id (per slice of every slice
spec and overall: :data:`mergeable_metrics.time.latelabels.COUNT_NAMES`, the batch join's names) to the
``counts`` output, as :meth:`mergeable_metrics.time.latelabels.JoinCounts.to_lines` JSON lines;
:class:`JoinCountsCombineFn` sums them into a ``JoinCounts``. The id is decided only at its
deadline, when its outcome is final and the state is cleared: until then a row that comes later
with an earlier event time (behind the watermark, as late data does: a label before the
prediction, an earlier prediction with another score) may still become the id's prediction or
label, and the matched example must be the batch join's (an example emitted earlier could not be
taken back out of the metrics). A row with a missing id or time raises
(``on_invalid="raise"``) or is counted as ``invalid_predictions`` / ``invalid_labels`` in the
overall slice (``"skip"``): nothing is dropped silently.

The counts and the matched examples equal the batch join's on the same rows, in any arrival
order, whenever every row of an id arrives before its deadline passes (the watermark): a label up to ``max_label_delay + late_label_horizon`` after
its prediction is recognised as ``late``; a row of an id that comes after the id's deadline
starts a new group (a prediction then counts as ``never``, a label as ``orphan_labels``, never
dropped). The state per id is the id's few rows, held until the deadline.
"""

from __future__ import annotations

import json
import typing
from collections.abc import Mapping
from typing import Any, Iterable, Sequence

import apache_beam as beam
import numpy as np
import pyarrow as pa
from apache_beam.coders import FastPrimitivesCoder
from apache_beam.transforms.timeutil import TimeDomain
from apache_beam.transforms.userstate import BagStateSpec, ReadModifyWriteStateSpec, TimerSpec, on_timer
from apache_beam.transforms.window import GlobalWindows
from apache_beam.utils.timestamp import Timestamp

from mergeable_metrics.engine import (
    COUNT_NAMES,
    INVALID_LABEL,
    INVALID_PRED,
    MAX_US,
    MIN_US,
    TIME_RANGE_RULE,
    JoinCounts,
    LabelJoin,
    canonical_value,
    join_batches,
    parse_duration,
)

__all__ = ["JoinCountsCombineFn", "JoinLateLabels", "MATCHED_TAG", "COUNTS_TAG"]

#: the keys of :class:`JoinLateLabels`' output dict
MATCHED_TAG, COUNTS_TAG = "matched", "counts"
_P, _L = "p", "l"


def _spec_tuple(spec: Any) -> tuple[str, ...]:
    cols = tuple(c.strip() for c in spec.split(",")) if isinstance(spec, str) else tuple(spec)
    if not cols or not all(isinstance(c, str) and c for c in cols):
        raise ValueError(f"a count slice spec is a column name or a list of them (e.g. 'window_start,carrier'), got {spec!r}")
    return cols


def _event_micros(value: Any, column: str, what: str) -> int | None:
    """A row's event time in microseconds (None: missing). Numbers are seconds; datetimes (naive
    = UTC) and ``numpy.datetime64`` as the batch join reads Arrow timestamps."""
    import datetime as dt

    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, np.datetime64):
        us = None if np.isnat(value) else int(value.astype("datetime64[s]").astype(np.int64)) * 1_000_000  # range first: no wrap
        if us is not None and MIN_US <= us <= MAX_US:
            us = int(value.astype("datetime64[us]").astype(np.int64))
    elif isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.timezone.utc)
        us = (value - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)) // dt.timedelta(microseconds=1)
    elif isinstance(value, (int, float, np.integer, np.floating)):
        us = int(np.floor(float(value) * 1e6)) if np.isfinite(value) else None
    else:
        raise TypeError(f"{what} time column {column!r} must hold numbers of seconds or datetimes, got {value!r} ({type(value).__name__})")
    if us is not None and not MIN_US <= us <= MAX_US:
        raise ValueError(f"{what} column {column!r}: invalid value {value!r} in a {what} row: {TIME_RANGE_RULE}")
    return us


class _KeyById(beam.DoFn):
    """``row -> (id key, (side, time_us, row))``; a row without an id or time raises or goes to
    the counts (``invalid_*``, overall slice)."""

    def __init__(self, side: str, join: LabelJoin):
        self.side, self.join = side, join

    def process(self, row: Any) -> Iterable[Any]:
        j = self.join
        what = "prediction" if self.side == _P else "label"
        time_col = j.prediction_time_col if self.side == _P else j.label_time_col
        if not isinstance(row, Mapping):
            raise TypeError(f"JoinLateLabels: a {what} element must be a row dict, got {type(row).__name__}")
        needed = (j.id_col, time_col) + ((j.label_col,) if self.side == _L else ())
        missing = [c for c in needed if c not in row]
        if missing:
            raise ValueError(f"JoinLateLabels: missing column(s) {missing} in a {what} row; available: {sorted(row)}")
        ident, us = row[j.id_col], _event_micros(row[time_col], time_col, what)
        if ident is None or us is None:
            if j.on_invalid == "raise":
                col, value = (j.id_col, ident) if ident is None else (time_col, row[time_col])
                raise ValueError(
                    f"{what} column {col!r}: missing value {value!r} in the row {dict(row)!r} (a {what} needs an id and a time; on_invalid='skip' counts such rows as invalid_{what}s)"
                )
            vec = np.zeros(len(COUNT_NAMES), dtype=np.int64)
            vec[INVALID_PRED if self.side == _P else INVALID_LABEL] = 1
            yield beam.pvalue.TaggedOutput(COUNTS_TAG, JoinCounts({(): vec}).to_lines()[0])
            return
        yield str(canonical_value(ident)), (self.side, us, dict(row))


class _JoinPerId(beam.DoFn):
    """The stateful join of one id: rows buffered, decided at the deadline (see the module
    docstring)."""

    ROWS = BagStateSpec("rows", FastPrimitivesCoder())
    FIRST = ReadModifyWriteStateSpec("first", FastPrimitivesCoder())  # (earliest prediction us, earliest label us)
    DEADLINE = TimerSpec("deadline", TimeDomain.WATERMARK)

    def __init__(self, join: LabelJoin, specs: Sequence[tuple[str, ...]], hold_us: int):
        self.join, self.specs, self.hold_us = join, list(specs), hold_us

    def process(self, element: Any, rows: Any = beam.DoFn.StateParam(ROWS), first: Any = beam.DoFn.StateParam(FIRST),
                deadline: Any = beam.DoFn.TimerParam(DEADLINE)) -> None:  # fmt: skip
        _, (side, us, row) = element
        rows.add((side, row))
        p, lab = first.read() or (None, None)
        if side == _P:
            p = us if p is None else min(p, us)
        else:
            lab = us if lab is None else min(lab, us)
        first.write((p, lab))
        # no decision before the deadline: until then a row with an earlier time (behind the
        # watermark, as late data is) may still become the id's prediction or label
        deadline.set(Timestamp(micros=(p if p is not None else lab) + self.hold_us))

    @on_timer(DEADLINE)
    def on_deadline(self, rows: Any = beam.DoFn.StateParam(ROWS), first: Any = beam.DoFn.StateParam(FIRST)) -> Iterable[Any]:
        got = list(rows.read())
        rows.clear()
        first.clear()
        if not got:  # pragma: no cover - a timer is set only with a row
            return
        matched, counts = self._join(got)
        yield from matched.to_pylist()
        for line in counts.to_lines():
            yield beam.pvalue.TaggedOutput(COUNTS_TAG, line)

    def _join(self, got: list) -> tuple[pa.Table, JoinCounts]:
        preds, labels = self._tables([r for s, r in got if s == _P], [r for s, r in got if s == _L])
        return join_batches(preds, labels, self.join, self.specs)

    def _tables(self, preds: list[dict], labels: list[dict]) -> tuple[pa.Table, pa.Table]:
        j = self.join
        p = _table(preds) if preds else None
        lt = _table(labels) if labels else None
        if p is None:  # the columns the batch join's predictions input has (types from the labels)
            cols = [j.id_col, j.prediction_time_col] + [c for spec in self.specs for c in spec if c not in (j.id_col, j.prediction_time_col, *j.window_columns)]
            p = pa.table({c: pa.array([], lt.schema.field(c).type if c in lt.column_names else pa.null()) for c in dict.fromkeys(cols)})
        if lt is None:
            lt = pa.table(
                {j.id_col: pa.array([], p.schema.field(j.id_col).type), j.label_time_col: pa.array([], pa.float64()), j.label_col: pa.array([], pa.null())}
            )
        return p, lt


def _table(rows: list[dict]) -> pa.Table:
    names = list(dict.fromkeys(k for r in rows for k in r))
    return pa.table({k: pa.array([r.get(k) for r in rows]) for k in names})


class JoinCountsCombineFn(beam.CombineFn):
    """Sums :class:`JoinLateLabels`' ``counts`` lines into one
    :class:`mergeable_metrics.time.latelabels.JoinCounts` (accumulator: ``{slice key JSON: counts list}``,
    plain values, no pickle)."""

    def create_accumulator(self) -> dict[str, list[int]]:
        return {}

    def add_input(self, mutable_accumulator: dict, element: str) -> dict:
        key, vec = json.loads(element)
        return self._add(mutable_accumulator, json.dumps(key), vec)

    @staticmethod
    def _add(acc: dict, key: str, vec: list[int]) -> dict:
        cur = acc.get(key)
        acc[key] = list(vec) if cur is None else [a + b for a, b in zip(cur, vec)]
        return acc

    def merge_accumulators(self, accumulators: Iterable[dict]) -> dict:
        out: dict[str, list[int]] = {}
        for acc in accumulators:
            for k, v in acc.items():
                self._add(out, k, v)
        return out

    def extract_output(self, accumulator: dict) -> JoinCounts:
        return JoinCounts({tuple(tuple(p) for p in json.loads(k)): np.asarray(v, dtype=np.int64) for k, v in accumulator.items()})


class JoinLateLabels(beam.PTransform):
    """Join a predictions and a labels PCollection by example id with a maximum label delay, on
    a stream (see the module docstring): ``{"predictions": p, "labels": l} | JoinLateLabels(...)``
    (or the tuple ``(p, l)``) gives ``{"matched": ..., "counts": ...}``.

    ``matched``: one row dict per matched example (a prediction and its earliest label with
    ``0 <= label_time - prediction_time <= max_label_delay``), emitted at its id's deadline
    (prediction time + ``max_label_delay`` + ``late_label_horizon``); feed it to :class:`~mergeable_metrics.beam.ComputeMetrics` (slices may
    name ``window_start`` / ``window_end`` with ``window``). ``counts``: JSON lines of the outcome counts per id group and
    slice (:meth:`mergeable_metrics.time.latelabels.JoinCounts.to_lines`), summed by
    :class:`JoinCountsCombineFn` (``beam.CombineGlobally(JoinCountsCombineFn())``, under the
    windowing and trigger you choose for the counts). Both outputs are in the global window.

    Args:
        max_label_delay: the maximum label delay (:func:`mergeable_metrics.time.windows.parse_duration`: ``"6h"``,
            ``"90 minutes"``, seconds; 0 allowed).
        id_col: the example id column of both inputs.
        label_col: the label column of the labels.
        prediction_time_col / label_time_col: the event time columns (seconds or datetimes).
        late_label_horizon: how long after the delay a label is still recognised as its
            prediction's ``late`` label (and the id's rows are held); default: ``max_label_delay``.
        window: tumbling windows of the prediction time (a duration) for the ``window_start`` /
            ``window_end`` slice values, as the batch join's ``--join-window``; or None.
        slices: the count slice specs (column names, ``"a,b"`` or ``("a", "b")``), e.g.
            :func:`mergeable_metrics.time.latelabels.count_specs` of the evaluation of the matched examples.
        on_invalid: ``"raise"`` or ``"skip"`` (a missing id or time counted as ``invalid_*``).

    Raises:
        ValueError: bad settings (naming them); at run time, a missing id or time with
            ``on_invalid="raise"`` (column, value and row), a missing column.
        TypeError: an input that is not two PCollections, a row that is not a dict, a time that is
            neither a number nor a datetime.
    """

    def __init__(self, *, max_label_delay: Any, id_col: str, label_col: str = "label", prediction_time_col: str = "prediction_time", label_time_col: str = "label_time",
                 late_label_horizon: Any = None, window: Any = None, slices: Sequence[Any] = (), on_invalid: str = "raise", label: str | None = None):  # fmt: skip
        super().__init__(label)
        self.join = LabelJoin(id_col, label_col, prediction_time_col, label_time_col, max_label_delay, window=window, on_invalid=on_invalid)
        delay_us = parse_duration(max_label_delay, "max_label_delay", allow_zero=True)
        horizon_us = delay_us if late_label_horizon is None else parse_duration(late_label_horizon, "late_label_horizon", allow_zero=True)
        self.hold_us = delay_us + horizon_us
        self.specs = [_spec_tuple(s) for s in slices]

    def expand(self, inputs: Any) -> dict[str, beam.PCollection]:
        if isinstance(inputs, Mapping):
            if set(inputs) != {"predictions", "labels"}:
                raise TypeError(f"JoinLateLabels takes {{'predictions': ..., 'labels': ...}}, got the keys {sorted(inputs)}")
            preds, labels = inputs["predictions"], inputs["labels"]
        elif isinstance(inputs, (tuple, list)) and len(inputs) == 2:
            preds, labels = inputs
        else:
            raise TypeError(f"JoinLateLabels takes (predictions, labels) or {{'predictions': ..., 'labels': ...}}, got {type(inputs).__name__}")
        keyed, invalid = [], []
        for side, pcoll, name in ((_P, preds, "Predictions"), (_L, labels, "Labels")):
            out = (
                pcoll
                | f"{name}GlobalWindow" >> beam.WindowInto(GlobalWindows())
                | f"Key{name}ById"
                >> beam.ParDo(_KeyById(side, self.join)).with_output_types(typing.Tuple[str, typing.Any]).with_outputs(COUNTS_TAG, main="keyed")
            )
            keyed.append(out.keyed)
            invalid.append(out[COUNTS_TAG])
        joined = (
            keyed
            | "BothSides" >> beam.Flatten()
            | "JoinPerId" >> beam.ParDo(_JoinPerId(self.join, self.specs, self.hold_us)).with_outputs(COUNTS_TAG, main=MATCHED_TAG)
        )
        counts = (*invalid, joined[COUNTS_TAG]) | "Counts" >> beam.Flatten()
        return {MATCHED_TAG: joined[MATCHED_TAG], COUNTS_TAG: counts}
