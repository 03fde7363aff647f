"""Event-time windows: per-window, per-slice metrics from the same mergeable states.

A :class:`TimeWindows` spec names a time column, a window ``size`` and an optional ``slide``:
tumbling (fixed) windows ``[k * size, (k + 1) * size)`` without a slide, sliding windows of
``size`` starting every ``slide`` otherwise (a row is in every window that holds its time, i.e.
``ceil(size / slide)`` of them when ``slide`` divides ``size``). Windows are aligned to the Unix
epoch, exactly as Beam's ``FixedWindows(size)`` / ``SlidingWindows(size, slide)`` and Spark's
``F.window(col, size, slide)``, so the three engines give the same windows.

:class:`WindowedEvaluation` keeps one :class:`mergeable_metrics.Evaluation` accumulator per window
(``{(start_us, end_us): Accumulator}``); windows merge key by key, so any batching, partitioning
and merge order gives the same per-window states, and :meth:`WindowedEvaluation.finish` gives one
:class:`mergeable_metrics.Results` whose slices carry ``window_start`` / ``window_end`` (UTC ``datetime``),
ordered by window, then overall first and slices in order. Each window is one evaluation:
``min_slice_size`` suppression applies per window.

Time values: ``datetime`` (naive = UTC), ``numpy.datetime64``, pandas / Arrow timestamps,
ISO-8601 strings, or numbers (seconds since the epoch, as Beam's timestamps). Missing or
unreadable times raise ``ValueError`` naming the column, the value and the row (a row without a
time has no window; it is never dropped silently).

Example:
    >>> w = WindowedEvaluation(("ts", "1h"), label_col="y", prediction_col="p", metrics=["accuracy"])
    >>> r = w.evaluate({"ts": [0, 1800, 3600], "y": [1, 0, 1], "p": [1, 1, 1]})
    >>> [(s.window_start.hour, s.n, s.metrics["accuracy"]) for s in r]
    [(0, 2, 0.5), (1, 1, 1.0)]
"""

from __future__ import annotations

import datetime as _dt
import re
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Iterable

import numpy as np

from mergeable_metrics._util.public import public
from mergeable_metrics.inputs.validation import as_array, invalid_value_message
from mergeable_metrics.evaluation.accumulator import Accumulator
from mergeable_metrics.evaluation.batches import fold_all, is_single_batch, num_rows
from mergeable_metrics.evaluation.evaluation import Evaluation, resolve_evaluation
from mergeable_metrics.results.results import Results, SliceResult, window_bound
from mergeable_metrics.slicing.values import canonical_value

__all__ = [
    "MAX_US",
    "MIN_US",
    "TIME_RANGE_RULE",
    "TimeWindows",
    "WindowedEvaluation",
    "format_duration",
    "parse_duration",
    "to_micros",
    "window_from_micros",
    "window_slice_values",
]

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
_UNITS = {
    "us": 1, "microsecond": 1, "microseconds": 1,
    "ms": 1_000, "millisecond": 1_000, "milliseconds": 1_000,
    "s": 1_000_000, "sec": 1_000_000, "second": 1_000_000, "seconds": 1_000_000,
    "m": 60_000_000, "min": 60_000_000, "minute": 60_000_000, "minutes": 60_000_000,
    "h": 3_600_000_000, "hour": 3_600_000_000, "hours": 3_600_000_000,
    "d": 86_400_000_000, "day": 86_400_000_000, "days": 86_400_000_000,
    "w": 604_800_000_000, "week": 604_800_000_000, "weeks": 604_800_000_000,
}  # fmt: skip
_PART = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([a-z]+)\s*")


def parse_duration(value: Any, name: str = "duration", allow_zero: bool = False) -> int:
    """A duration in microseconds (> 0, or >= 0 with ``allow_zero``).

    The one duration grammar of the project (windows, ``--window``, the late-label join's
    ``max_label_delay`` and watermark delays).

    Args:
        value: ``"1h"``, ``"15m"``, ``"90s"``, ``"1h30m"``, Spark's ``"1 hour"`` / ``"15 minutes"``
            (units us, ms, s, m/min, h, d, w and their English names), a number of seconds (also
            as text: ``"45"``), or a ``datetime.timedelta``.
        name: what the duration is (in error messages).
        allow_zero: accept a zero duration (e.g. a maximum label delay of 0: same-time labels only).

    Raises:
        ValueError: not a positive (or, with ``allow_zero``, non-negative) finite duration, or an
            unknown unit.
    """
    if isinstance(value, _dt.timedelta):
        us = value // _dt.timedelta(microseconds=1)
    elif isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
        if not np.isfinite(value):
            raise ValueError(f"{name} must be a finite duration, got {value!r}")
        us = int(round(float(value) * 1_000_000))
    elif isinstance(value, str):
        text, pos, us = value.strip().lower(), 0, 0
        try:
            seconds = float(text) if text and text[0] in "+-.0123456789" else None
        except ValueError:
            seconds = None
        if seconds is not None:
            if not np.isfinite(seconds):
                raise ValueError(f"{name} must be a finite duration, got {value!r}")
            us, pos = int(round(seconds * 1_000_000)), len(text)
        if not text:
            raise ValueError(f"{name} {value!r}: expected e.g. '1h', '15m', '90s', '1 hour' (units: us, ms, s, m, h, d, w)")
        while pos < len(text):
            m = _PART.match(text, pos)
            if m is None or m.group(2) not in _UNITS:
                raise ValueError(f"{name} {value!r}: expected e.g. '1h', '15m', '90s', '1 hour' (units: us, ms, s, m, h, d, w)")
            us += int(round(float(m.group(1)) * _UNITS[m.group(2)]))
            pos = m.end()
    else:
        raise ValueError(f"{name} must be a string such as '1h', a timedelta or seconds, got {value!r}")
    if us < 0 or (us == 0 and not allow_zero):
        raise ValueError(f"{name} must be {'>=' if allow_zero else '>'} 0, got {value!r}")
    return us


def format_duration(us: int) -> str:
    """Microseconds as the shortest exact text of :func:`parse_duration` (``3600000000 -> "1h"``)."""
    for unit in ("w", "d", "h", "m", "s", "ms"):
        if us % _UNITS[unit] == 0:
            return f"{us // _UNITS[unit]}{unit}"
    return f"{us}us"


def window_from_micros(us: int) -> _dt.datetime:
    """Microseconds since the epoch as a UTC ``datetime``."""
    return _EPOCH + _dt.timedelta(microseconds=int(us))


#: the event-time range (microseconds since the epoch): Python's ``datetime`` and Spark's
#: timestamps, 0001-01-01T00:00:00 .. 9999-12-31T23:59:59.999999 UTC
MIN_US, MAX_US = -62_135_596_800_000_000, 253_402_300_799_999_999
TIME_RANGE_RULE = "event times must lie within 0001-01-01T00:00:00 .. 9999-12-31T23:59:59.999999 UTC"
_UNIT_US = {"W": 604_800_000_000, "D": 86_400_000_000, "h": 3_600_000_000, "m": 60_000_000, "s": 1_000_000, "ms": 1_000, "us": 1}


def _datetime64_micros(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(micros, nat, out_of_range)`` of a datetime64 array of any unit (no int64 wrap-around:
    a coarse unit is checked against the range before it is scaled)."""
    unit, count = np.datetime_data(a.dtype)
    if unit in ("Y", "M"):
        a, unit, count = a.astype("datetime64[D]"), "D", 1
    nat = np.isnat(a)
    if unit not in _UNIT_US:  # finer than microseconds: always in range (ns: 1677 .. 2262)
        out = a.astype("datetime64[us]").astype(np.int64)  # floor: the same window as the finer time
        return np.where(nat, 0, out), nat, np.zeros(len(a), dtype=bool)
    f = _UNIT_US[unit] * count
    iv = a.astype(np.int64)
    oor = ~nat & ((iv < -(-MIN_US // f)) | (iv > MAX_US // f))
    return np.where(nat | oor, 0, iv) * f, nat, oor


def _one_micros(v: Any) -> int | None:
    """Microseconds of one value (a Python int, maybe outside int64); None: missing or unreadable."""
    if v is None or isinstance(v, bool):
        return None
    if isinstance(v, np.datetime64):
        us, nat, oor = _datetime64_micros(np.array([v]))
        return None if nat[0] else MAX_US + 1 if oor[0] else int(us[0])
    if isinstance(v, (_dt.datetime, str)):
        try:
            b = window_bound(v)
        except ValueError:
            return None
        return (b - _EPOCH) // _dt.timedelta(microseconds=1)
    if isinstance(v, (int, np.integer)):
        return int(v) * 1_000_000
    if isinstance(v, (float, np.floating)) and np.isfinite(v):
        return int(round(float(v) * 1_000_000))
    return None


def _outside(us: np.ndarray, window: "TimeWindows | None") -> np.ndarray:
    """Which times (int64 microseconds, within ``[MIN_US, MAX_US]``) have a window outside the range."""
    if window is None:
        return np.zeros(len(us), dtype=bool)
    last_end = (us // window.slide_us) * window.slide_us + window.size_us
    first_start = ((us - window.size_us) // window.slide_us + 1) * window.slide_us
    return (last_end > MAX_US) | (first_start < MIN_US)


def to_micros(values: Any, column: str, row_offset: int = 0, window: "TimeWindows | None" = None) -> np.ndarray:
    """A time column as int64 microseconds since the epoch (see the module docstring).

    Args:
        values: (n,) times.
        column: the column's name (messages).
        row_offset: the position of the first row (messages).
        window: the windows the times go into: each window holding a time must lie in the range too.

    Raises:
        ValueError: a missing or unreadable time, or a time (with ``window``: a window of it)
            outside 0001-01-01 .. 9999-12-31T23:59:59.999999 UTC (:data:`TIME_RANGE_RULE`; integer
            seconds never wrap around int64), naming the column, the value and the row.
    """
    arr = as_array(values, column)
    oor = np.zeros(len(arr), dtype=bool)
    if arr.dtype.kind == "M":
        out, bad, oor = _datetime64_micros(arr)
    elif arr.dtype.kind in "iu":
        bad = np.zeros(len(arr), dtype=bool)
        oor = (arr < MIN_US // 1_000_000) | (arr > MAX_US // 1_000_000)
        out = np.where(oor, 0, arr).astype(np.int64) * 1_000_000
    elif arr.dtype.kind == "f":
        bad = ~np.isfinite(arr)
        scaled = np.where(bad, 0.0, arr) * 1_000_000
        oor = (scaled < MIN_US) | (scaled > MAX_US)
        out = np.round(np.where(oor, 0.0, scaled)).astype(np.int64)
    else:
        cache: dict[Any, int | None] = {}
        out = np.zeros(len(arr), dtype=np.int64)
        bad = np.zeros(len(arr), dtype=bool)
        for i, v in enumerate(arr):
            try:
                us = cache[v] if v in cache else cache.setdefault(v, _one_micros(v))
            except TypeError:  # unhashable
                us = None
            if us is None:
                bad[i] = True
            elif not MIN_US <= us <= MAX_US:
                oor[i] = True
            else:
                out[i] = us
    oor |= ~bad & ~oor & _outside(out, window)
    if bad.any() or oor.any():
        i = int(np.flatnonzero(bad | oor)[0])
        v = arr[i]
        shown = _Shown(str(v)) if isinstance(v, np.datetime64) else v.item() if hasattr(v, "item") else v
        if oor[i]:
            more = f" (with their whole {format_duration(window.size_us)} window{'s' if window.sliding else ''})" if window is not None else ""
            raise ValueError(
                invalid_value_message(column, shown, row_offset + i, TIME_RANGE_RULE + more, f" ({int(oor.sum())} such rows)" if oor.sum() > 1 else "")
            )
        raise ValueError(
            invalid_value_message(
                column, shown, row_offset + i,
                "event times must be datetimes, ISO-8601 strings or seconds since the epoch (microsecond precision)",
                f" ({int(bad.sum())} such rows)" if bad.sum() > 1 else "",
            )
        )  # fmt: skip
    return out


class _Shown(str):
    """A value shown as it prints (``NaT``), not as its repr, in an error message."""

    def __repr__(self) -> str:
        return str(self)


@public("mergeable_metrics")
@dataclass(frozen=True, init=False)
class TimeWindows:
    """Tumbling or sliding event-time windows over a time column (aligned to the epoch).

    Args:
        time_col: the column of event times.
        size: window length (see :func:`parse_duration`: ``"1h"``, ``"1 hour"``, a timedelta, seconds).
        slide: None (tumbling windows), or the period between window starts (sliding windows;
            ``slide <= size``).

    Attributes:
        size_us / slide_us: the durations in microseconds (``slide_us == size_us`` for tumbling).

    Raises:
        ValueError: a bad duration, or ``slide > size`` (rows between windows would be lost).
    """

    time_col: str
    size_us: int
    slide_us: int

    def __init__(self, time_col: str, size: Any, slide: Any = None):
        if not isinstance(time_col, str) or not time_col:
            raise ValueError(f"window time column must be a non-empty string, got {time_col!r}")
        size_us = parse_duration(size, "window size")
        slide_us = size_us if slide is None else parse_duration(slide, "window slide")
        if slide_us > size_us:
            raise ValueError(f"window slide {slide!r} is longer than the window size {size!r}: rows between windows would be in none")
        object.__setattr__(self, "time_col", time_col)
        object.__setattr__(self, "size_us", size_us)
        object.__setattr__(self, "slide_us", slide_us)

    @classmethod
    def of(cls, spec: Any) -> "TimeWindows":
        """A spec from a :class:`TimeWindows`, a tuple ``(col, size[, slide])``, a dict
        (:meth:`to_config`) or the CLI's text ``"COL:DURATION[:SLIDE]"`` (``"ts:1h:15m"``)."""
        if isinstance(spec, TimeWindows):
            return spec
        if isinstance(spec, Mapping):
            return cls(spec["time_col"], spec["size"], spec.get("slide"))
        if isinstance(spec, (tuple, list)) and 2 <= len(spec) <= 3:
            return cls(*spec)
        if isinstance(spec, str):
            parts = spec.split(":")
            if len(parts) >= 3:  # COL:SIZE:SLIDE unless the last part is no duration (a ':' in COL)
                try:
                    return cls(":".join(parts[:-2]), parts[-2], parts[-1])
                except ValueError:
                    pass
            if len(parts) >= 2:
                return cls(":".join(parts[:-1]), parts[-1])
        raise ValueError(f"window {spec!r}: expected COL:DURATION[:SLIDE] (e.g. 'ts:1h', 'ts:1h:15m') or (col, size[, slide])")

    @property
    def sliding(self) -> bool:
        return self.slide_us != self.size_us

    def to_config(self) -> dict[str, Any]:
        """``{"time_col", "size", "slide"}`` (durations as text; slide None when tumbling)."""
        return {"time_col": self.time_col, "size": format_duration(self.size_us), "slide": format_duration(self.slide_us) if self.sliding else None}

    def __str__(self) -> str:
        c = self.to_config()
        return f"{c['time_col']}:{c['size']}" + (f":{c['slide']}" if c["slide"] else "")

    def assign(self, times_us: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Rows and their window starts: ``(rows, starts)``, int64 arrays of equal length, one
        entry per (row, window) pair (a row of sliding windows appears once per window)."""
        t = np.asarray(times_us, dtype=np.int64)
        last = (t // self.slide_us) * self.slide_us  # the latest window start <= t
        rows, starts = [], []
        for j in range(-(-self.size_us // self.slide_us)):
            s = last - j * self.slide_us
            keep = s + self.size_us > t
            rows.append(np.flatnonzero(keep))
            starts.append(s[keep])
        return np.concatenate(rows), np.concatenate(starts)


def window_slice_values(windows: TimeWindows, times_us: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``window_start`` / ``window_end`` of each time as slice values, for slice specs that name
    the window (e.g. ``window_start,carrier``): canonical ISO-8601 text (UTC, no offset:
    ``"2013-07-01T01:00:00"``, :func:`mergeable_metrics.slicing.values.canonical_value`) of the tumbling window
    holding each time.

    Args:
        windows: tumbling :class:`TimeWindows` (its ``time_col`` is not read).
        times_us: ``(N,)`` microseconds since the epoch (float NaN: a missing time).

    Returns:
        Two ``(N,)`` object arrays of text, None where the time is missing.

    Raises:
        ValueError: sliding windows (a time is in several of them: no one value per row).
    """
    if windows.sliding:
        raise ValueError(f"window slice values need tumbling windows, got the sliding windows {windows}")
    t = np.asarray(times_us, dtype=np.float64)
    ok = np.isfinite(t)
    _, starts = windows.assign(t[ok].astype(np.int64))  # tumbling: one window per time, in order
    uniq, inverse = np.unique(starts, return_inverse=True)
    text_s = np.array([canonical_value(np.datetime64(int(u), "us")) for u in uniq] + [None], dtype=object)
    text_e = np.array([canonical_value(np.datetime64(int(u) + windows.size_us, "us")) for u in uniq] + [None], dtype=object)
    idx = np.full(len(t), len(uniq), dtype=np.int64)
    idx[ok] = inverse.reshape(-1)
    return text_s[idx], text_e[idx]


def take_rows(data: Any, idx: np.ndarray, columns: Iterable[str] | None = None) -> Any:
    """Rows ``idx`` of a batch (dict of columns, row dicts, pandas DataFrame, pyarrow Table /
    RecordBatch), of the same kind (dicts: only ``columns`` when given)."""
    if hasattr(data, "schema") and hasattr(data, "take"):  # pyarrow
        return data.take(idx)
    if hasattr(data, "iloc"):
        return data.iloc[idx]
    if isinstance(data, Mapping):
        keys = list(data) if columns is None else [c for c in columns if c in data]
        out = {}
        for k in keys:
            v = data[k]
            if isinstance(v, np.ndarray):
                out[k] = v[idx]
            elif hasattr(v, "take") and hasattr(v, "null_count"):  # pyarrow Array
                out[k] = v.take(idx)
            elif hasattr(v, "iloc"):
                out[k] = v.iloc[idx]
            else:
                out[k] = [v[i] for i in idx.tolist()]
        return out
    return [data[i] for i in idx.tolist()]  # row dicts


def _time_column(data: Any, col: str) -> Any:
    if hasattr(data, "schema") and hasattr(data, "column"):
        if col not in data.schema.names:
            raise ValueError(f"missing column {col!r} (window time column); available: {data.schema.names}")
        return data.column(col)
    if isinstance(data, Mapping) or hasattr(data, "columns"):
        names = list(data.keys()) if isinstance(data, Mapping) else list(data.columns)
        if col not in names:
            raise ValueError(f"missing column {col!r} (window time column); available: {names}")
        return data[col]
    if data and col not in data[0]:
        raise ValueError(f"missing column {col!r} (window time column) in the rows; available: {sorted(data[0])}")
    return [r.get(col) for r in data]


@public("mergeable_metrics")
class WindowedEvaluation:
    """An :class:`mergeable_metrics.Evaluation` per event-time window (see the module docstring).

    Args:
        window: a :class:`TimeWindows`, ``(col, size[, slide])`` or ``"COL:DURATION[:SLIDE]"``.
        evaluation: the :class:`mergeable_metrics.Evaluation`; if None, one is built from ``options``.
        **options: :class:`mergeable_metrics.Evaluation` options when ``evaluation`` is None.

    The accumulator is ``{(start_us, end_us): Accumulator}``.

    Raises:
        ValueError: a bad window or option; ``max_slices`` / quantile slices (their counting
            pass is not per window yet).
    """

    def __init__(self, window: Any, evaluation: Evaluation | None = None, **options: Any):
        self.window = TimeWindows.of(window)
        self.evaluation = resolve_evaluation(evaluation, options)
        if self.evaluation.needs_profile:
            raise ValueError("max_slices and quantile slices are not supported with windows (their counting pass is not per window)")

    # -- accumulators -------------------------------------------------------------------------
    def zero(self) -> dict[tuple[int, int], Accumulator]:
        return {}

    def window_of(self, start_us: int) -> tuple[int, int]:
        return (int(start_us), int(start_us) + self.window.size_us)

    def fold(self, acc: dict, data: Any, row_offset: int = 0) -> dict:
        """Fold one batch: each row into the accumulator of every window holding its time."""
        n = num_rows(data)
        if n == 0:
            return acc
        times = to_micros(_time_column(data, self.window.time_col), self.window.time_col, row_offset, self.window)
        rows, starts = self.window.assign(times)
        order = np.lexsort((rows, starts))
        rows, starts = rows[order], starts[order]
        bounds = np.flatnonzero(np.diff(starts)) + 1
        for piece in np.split(np.arange(len(rows)), bounds):
            if not len(piece):
                continue
            key = self.window_of(starts[piece[0]])
            idx = rows[piece]
            sub = data if len(idx) == n and self.window.slide_us == self.window.size_us else take_rows(data, idx, self.evaluation.columns)
            try:
                self.fold_window(acc, key, sub, row_offset)
            except (ValueError, TypeError):  # raise the error with the batch's row positions
                self.evaluation.fold(self.evaluation.zero(), data, row_offset=row_offset)
                raise
        return acc

    def fold_window(self, acc: dict, window: tuple[int, int], data: Any, row_offset: int = 0) -> dict:
        """Fold rows known to be in ``window`` (``(start_us, end_us)``), e.g. an engine's
        group of one window's rows."""
        key = (int(window[0]), int(window[1]))
        target = acc.get(key)
        if target is None:
            target = acc[key] = self.evaluation.zero()
        self.evaluation.fold(target, data, row_offset=row_offset)
        return acc

    def merge(self, a: dict, b: dict) -> dict:
        """A new accumulator: ``a`` and ``b`` merged window by window (inputs unchanged)."""
        out = {k: self.evaluation.merge(v, self.evaluation.zero()) for k, v in a.items()}
        return self.merge_into(out, b)

    def merge_into(self, a: dict, b: dict) -> dict:
        for k, v in b.items():
            if k in a:
                self.evaluation.merge_into(a[k], v)
            else:
                a[k] = self.evaluation.merge(v, self.evaluation.zero())
        return a

    # -- results ------------------------------------------------------------------------------
    def describe(self) -> dict[str, Any]:
        """The evaluation's config plus ``"window"`` (:meth:`TimeWindows.to_config`)."""
        return {**self.evaluation.describe(), "window": self.window.to_config()}

    def finish(self, acc: dict) -> Results:
        """Every window's results (windows in time order; within one, overall first)."""
        slices: list[SliceResult] = []
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for key in sorted(acc):
                start, end = window_from_micros(key[0]), window_from_micros(key[1])
                slices += [s.with_window(start, end) for s in self.evaluation.finish(acc[key])]
        _rewarn(caught)
        return Results(slices, self.describe())

    def collect(self, slices: Iterable[SliceResult] | None = None, rows: Iterable[dict] | None = None) -> Results:
        """Assemble engine output (Beam's per-slice results, Spark's long rows) that carries
        window bounds into :class:`mergeable_metrics.Results`: each window through ``evaluation.collect``
        (canonical order, suppression), windows in time order."""
        raw = Results.from_rows(list(rows)) if rows is not None else Results.from_slices(list(slices or []))
        out: list[SliceResult] = []
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for (start, end), r in raw.by_window().items():
                out += [s.with_window(start, end) for s in self.evaluation.collect(slices=r.slices)]
        _rewarn(caught)
        return Results(out, self.describe())

    def evaluate(self, batches: Any) -> Results:
        """Fold an iterable of batches (or one batch) and finish (the local engine)."""
        return self.finish(fold_all(self, [batches] if is_single_batch(batches) else batches))


def _rewarn(caught: list) -> None:
    """Re-emit recorded warnings once per (category, message): one per metric, not per window."""
    seen: set = set()
    for w in caught:
        key = (w.category, str(w.message).split(" in slice")[0])
        if key not in seen:
            seen.add(key)
            warnings.warn(w.message, w.category, stacklevel=3)
