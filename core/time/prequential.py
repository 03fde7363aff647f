"""Prequential (test-then-train) evaluation: windowed and cumulative metrics over a stream.

Every example is predicted before it is learned, so the stream of (label, prediction) pairs is
evaluated in order, as MOA and CapyMOA do: metrics of each tumbling window of ``window_size``
examples (``windowed``) and of every example up to the end of each window (``cumulative``),
in a table indexed by example position (``instances``: how many examples the stream held at the
end of the window).

The state is the one-pass sliced fold of :class:`mergeable_metrics.Evaluation` with the window as the slice:
``window = position // window_size``, where ``position`` is the example's 0-based position in
the stream, counted across folded batches or, for data folded in pieces on several workers,
read from ``position_col``. The cumulative metrics are computed from prefix merges of the window
states, so both tables are exact, and any batching, sharding and merge order gives the same
result.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from collections.abc import Mapping
from typing import Any, Iterable

import numpy as np

from mergeable_metrics._util.public import public
from mergeable_metrics.evaluation.accumulator import Accumulator
from mergeable_metrics.evaluation.batches import is_single_batch, num_rows, rows_to_columns
from mergeable_metrics.evaluation.evaluation import Evaluation
from mergeable_metrics.metrics.base import UndefinedMetricWarning
from mergeable_metrics.collection.plan import undefined_warning
from mergeable_metrics.results.results import jsonable
from mergeable_metrics.slicing.assign import OVERALL

__all__ = ["PrequentialEvaluation", "PrequentialResults", "WINDOW_COLUMN"]

#: the internal slice column holding each example's window
WINDOW_COLUMN = "__window__"

#: Evaluation options whose output PrequentialResults do not carry (rejected, never ignored)
_NOT_IN_RESULTS = ("ci", "baseline_score_col", "baseline_prediction_col", "min_slice_size")


@dataclass(frozen=True)
class PrequentialResults:
    """Windowed and cumulative metrics of a stream, one entry per window (in stream order).

    Attributes:
        window_size: examples per window W.
        windows: window ids (``position // W``) that hold examples, ascending.
        instances: (len(windows),) examples of the stream up to each window's end, skipped
            invalid rows included (``(window + 1) * W`` without gaps, the last one the stream's length).
        n: valid examples in each window; skipped: invalid rows skipped in it (``on_invalid="skip"``).
        windowed: ``{metric key: [value per window]}`` (each window on its own).
        cumulative: ``{metric key: [value per window]}`` (every example up to the window's end).
        config: the evaluation's configuration plus ``window_size``.
    """

    window_size: int
    windows: list[int]
    instances: list[int]
    n: list[int]
    skipped: list[int]
    windowed: dict[str, list[Any]]
    cumulative: dict[str, list[Any]]
    config: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (NaN as None)."""
        return {
            "window_size": self.window_size,
            "windows": self.windows,
            "instances": self.instances,
            "n": self.n,
            "skipped": self.skipped,
            "windowed": {k: jsonable(v) for k, v in self.windowed.items()},
            "cumulative": {k: jsonable(v) for k, v in self.cumulative.items()},
            "config": self.config,
        }

    def _frame(self, values: dict[str, list[Any]]) -> Any:
        import pandas as pd

        cols = {"instances": self.instances, "window": self.windows, "n": self.n, "skipped": self.skipped}
        for k, v in values.items():
            cols[k] = list(v)
        return pd.DataFrame(cols)

    def windowed_frame(self) -> Any:
        """The windowed metrics as a pandas DataFrame (columns ``instances``, ``window``, ``n``, metrics)."""
        return self._frame(self.windowed)

    def cumulative_frame(self) -> Any:
        """The cumulative metrics as a pandas DataFrame (same columns)."""
        return self._frame(self.cumulative)


@public("mergeable_metrics")
class PrequentialEvaluation:
    """Test-then-train metrics over a stream in tumbling windows of ``window_size`` examples.

    Args:
        window_size: W >= 1 examples per window.
        position_col: a column of 0-based stream positions (ints in [0, 2**63)), needed when pieces of
            the stream are folded separately (engines, workers); None: positions count the
            rows folded, across :meth:`fold` calls, from ``row_offset``.
        **options: :class:`mergeable_metrics.Evaluation` options (``label_col``, ``prediction_col`` or
            ``score_col``, ``metrics``, ``num_classes``, ...; not ``slices``, nor the options whose
            output :class:`PrequentialResults` do not hold: ``ci``, ``baseline_score_col``,
            ``baseline_prediction_col``, ``min_slice_size``).

    Raises:
        ValueError: a bad ``window_size`` or option; ``slices`` or an option the results do not hold given.
    """

    def __init__(self, window_size: int, position_col: str | None = None, **options: Any):
        if isinstance(window_size, bool) or not isinstance(window_size, (int, np.integer)) or window_size < 1:
            raise ValueError(f"window_size must be an int >= 1, got {window_size!r}")
        if options.get("slices"):
            raise ValueError("prequential evaluation slices by window only: give no slices")
        dropped = [k for k in _NOT_IN_RESULTS if options.get(k) is not None]
        if dropped:  # PrequentialResults hold no intervals, comparisons or suppressed windows
            raise ValueError(
                f"prequential evaluation does not support {', '.join(dropped)}: its results hold per-window values only (give none of {', '.join(_NOT_IN_RESULTS)})"
            )
        self.window_size = int(window_size)
        self.position_col = position_col
        self.evaluation = Evaluation(**{**options, "slices": [WINDOW_COLUMN]})
        self._read = [c for c in self.evaluation.columns if c != WINDOW_COLUMN] + ([position_col] if position_col else [])

    def zero(self) -> Accumulator:
        return self.evaluation.zero()

    def _positions(self, data: Any, n: int, row_offset: int) -> np.ndarray:
        if self.position_col is None:
            return np.arange(row_offset, row_offset + n, dtype=np.int64)
        from mergeable_metrics.inputs.validation import as_array, invalid_value_message

        names = data.schema.names if hasattr(data, "schema") else list(data.keys()) if isinstance(data, Mapping) else list(data.columns)
        if self.position_col not in names:
            raise ValueError(f"missing column {self.position_col!r} (position_col)")
        pos = as_array(data.column(self.position_col) if hasattr(data, "schema") else data[self.position_col], self.position_col)
        top = np.iinfo(np.int64).max
        if pos.dtype.kind in "iu":
            bad = pos > top if pos.dtype.kind == "u" else pos < 0
        else:
            bad = np.array([isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) or not 0 <= v <= top for v in pos], dtype=bool)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            v = pos[i]
            raise ValueError(
                invalid_value_message(self.position_col, v.item() if hasattr(v, "item") else v, row_offset + i, "positions must be integers in [0, 2**63)")
            )
        return pos.astype(np.int64)

    def with_window(self, data: Any, row_offset: int = 0) -> Any:
        """``data`` as a batch with the window column (``position // window_size``) added: a dict
        of its columns (row dicts, Arrow) or a DataFrame; None for an empty batch. Engines call it
        before their fold (``position_col`` rows) or fold through :meth:`fold`."""
        if isinstance(data, (list, tuple)):  # row dicts
            data = rows_to_columns(data, self._read)[0]
        n = num_rows(data)
        if n == 0:
            return None
        window = self._positions(data, n, row_offset) // self.window_size
        if hasattr(data, "schema"):  # pyarrow Table / RecordBatch: its columns, as they are
            return {**{c: data.column(c) for c in self._read}, WINDOW_COLUMN: window}
        if isinstance(data, Mapping):
            return {**data, WINDOW_COLUMN: window}
        return data.assign(**{WINDOW_COLUMN: window})  # pandas

    def fold(self, acc: Accumulator, data: Any, row_offset: int = 0) -> Accumulator:
        """Fold one batch of the stream (rows at positions ``row_offset...`` or ``position_col``)."""
        batch = self.with_window(data, row_offset)
        return acc if batch is None else self.evaluation.fold(acc, batch, row_offset=row_offset)

    def merge(self, a: Accumulator, b: Accumulator) -> Accumulator:
        return self.evaluation.merge(a, b)

    def merge_into(self, a: Accumulator, b: Accumulator) -> Accumulator:
        return self.evaluation.merge_into(a, b)

    def encode(self, acc: Accumulator) -> bytes:
        return self.evaluation.encode(acc)

    def decode(self, data: bytes) -> Accumulator:
        return self.evaluation.decode(data)

    def finish(self, acc: Accumulator) -> PrequentialResults:
        """Windowed and cumulative metrics of every window that holds examples."""
        acc = dict(acc.items())
        windows = sorted(int(k[0][1]) for k in acc if k != OVERALL)
        plan = self.evaluation.plan
        keys = list(plan.keys)
        windowed: dict[str, list[Any]] = {k: [] for k in keys}
        cumulative: dict[str, list[Any]] = {k: [] for k in keys}
        n, skipped, instances = [], [], []
        seen = 0
        window_states, prefixes = [], []
        running = plan.zero()
        for w in windows:
            states = acc[((WINDOW_COLUMN, w),)]
            running = plan.merge(running, states)
            window_states.append(states)
            prefixes.append(running)
            n.append(int(states[0]["count"]))
            skipped.append(int(states[0]["skipped"]))
            seen += n[-1] + skipped[-1]
            instances.append(seen)
        # every window's (and every prefix's) metrics at once, stacked on a leading axis
        undefined: dict[str, list[tuple[str, Any]]] = {}
        fills: dict[str, Any] = {}
        for out, many, what in ((windowed, plan.compute_many(window_states), "window"), (cumulative, plan.compute_many(prefixes), "up to window")):
            for i in range(len(windows)):
                values, _, undef = many.element(i)
                for key, v in values.items():
                    out[key].append(v)
                for key, (classes, fill) in undef.items():
                    if fill in ("nan", "warn"):
                        undefined.setdefault(key, []).append((f"{what} {windows[i]}", classes))
                        fills[key] = "nan" if fill == "nan" or fills.get(key) == "nan" else fill
        for key, where in undefined.items():  # one warning per metric, as Evaluation.finish
            warnings.warn(undefined_warning(key, where, fills[key]), UndefinedMetricWarning, stacklevel=2)
        config = {**self.evaluation.to_config(), "window_size": self.window_size}
        config.pop("slices", None)
        if self.position_col is not None:
            config["position_col"] = self.position_col
        return PrequentialResults(self.window_size, windows, instances, n, skipped, windowed, cumulative, config)

    def evaluate(self, batches: Iterable[Any] | Any) -> PrequentialResults:
        """Fold batches in stream order and finish (the local engine)."""
        if is_single_batch(batches):
            batches = [batches]
        acc = self.zero()
        offset = 0
        for b in batches:
            self.fold(acc, b, row_offset=offset)
            offset += num_rows(b)
        return self.finish(acc)
