"""``MetricsCombineFn``: a Beam ``CombineFn`` over :class:`mergeable_metrics.Evaluation` accumulators.

The combine function maps Beam's vocabulary one-to-one onto core:

=====================  =====================================================
Beam                   core
=====================  =====================================================
``create_accumulator`` ``evaluation.zero()``
``add_input(s)``       buffer rows, then ``evaluation.fold(acc, rows)``
``merge_accumulators`` ``evaluation.merge_into(a, b)``
``extract_output``     ``evaluation.finish(acc)`` -> :class:`mergeable_metrics.Results`
accumulator coder      ``evaluation.encode`` / ``decode``
=====================  =====================================================

No metric math lives here: folding is core's vectorised numpy fold, merging is core's fieldwise
state merge, and values are computed only in ``finish``.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from operator import itemgetter
from typing import Any, Iterable

import apache_beam as beam
import numpy as np

from mergeable_metrics.engine import Evaluation, Results, missing_row_column, num_rows, rows_to_columns, warm_kernels

__all__ = ["MetricsAccumulator", "MetricsAccumulatorCoder", "MetricsCombineFn", "StagedColumns", "is_column_batch"]


def _module_type(module: str, name: str) -> type | None:
    """``module.name`` if that module is already imported (no import side effects), else None."""
    mod = sys.modules.get(module)
    return getattr(mod, name, None) if mod is not None else None


_SCALARS = (str, int, float, bytes, type(None), np.generic)
#: Exact types of a row's values that no column batch holds (the fast path of ``_add``).
_ROW_SCALARS = frozenset((str, int, float, bool, bytes, type(None)))


def _is_column(value: Any) -> bool:
    """True for 1-D column-like values: list, ``np.ndarray`` (ndim >= 1), pyarrow Array /
    ChunkedArray, pandas Series."""
    if isinstance(value, _SCALARS):  # fast path: the first value of a row is usually a scalar
        return False
    if isinstance(value, list):
        return True
    if isinstance(value, np.ndarray):
        return value.ndim >= 1
    for module, name in (("pyarrow", "Array"), ("pyarrow", "ChunkedArray"), ("pandas", "Series")):
        t = _module_type(module, name)
        if t is not None and isinstance(value, t):
            return True
    return False


def is_column_batch(element: Mapping, list_columns: Iterable[str] = ()) -> bool:
    """Whether a dict element is a batch of columns rather than one row.

    A dict is a column batch iff it is non-empty and *every* value is column-like: a ``list``, a
    ``np.ndarray`` with ``ndim >= 1``, a ``pyarrow.Array`` / ``ChunkedArray`` or a
    ``pandas.Series``. Anything else (scalars, None, a mix of scalars and lists, an empty dict) is
    one row. A column named in ``list_columns`` holds a list in every row (multiclass score
    vectors, multilabel indicators, one-hot or map formats): for it, column-like means a column
    *of lists* (a list or Series whose first item is a list or array, an array with ``ndim >= 2``,
    a pyarrow list array, or an empty column), since a single row's value is already a list.
    :class:`MetricsCombineFn` decides with this rule and its evaluation's list columns.

    Example:
        >>> is_column_batch({"label": [1, 0], "score": [0.9, 0.2]})
        True
        >>> is_column_batch({"label": 1, "score": 0.9, "tokens": ["a", "b"]})
        False
        >>> is_column_batch({"labels": [0, 1, 1], "scores": [0.2, 0.9, 0.7]}, list_columns=["labels", "scores"])
        False
        >>> is_column_batch({"labels": [[0, 1, 1]], "scores": [[0.2, 0.9, 0.7]]}, list_columns=["labels", "scores"])
        True
    """
    if not element:
        return False
    lists = frozenset(list_columns)
    return all(_is_column_of_lists(v) if k in lists else _is_column(v) for k, v in element.items())


def _is_column_of_lists(value: Any) -> bool:
    """A column whose rows are lists: see :func:`is_column_batch`."""
    if not _is_column(value):
        return False
    if isinstance(value, np.ndarray):
        return value.ndim >= 2 or value.size == 0 or (value.dtype == object and _is_column(value[0]))
    t = getattr(value, "type", None)
    if t is not None and hasattr(value, "null_count"):  # pyarrow
        return "list" in str(t) or len(value) == 0
    if len(value) == 0:
        return True
    first = value.iloc[0] if hasattr(value, "iloc") else value[0]
    return _is_column(first) or isinstance(first, tuple)


def row_list_columns(evaluation: Any) -> frozenset:
    """The value columns of ``evaluation`` whose value in a single row is always a list: its
    :attr:`~mergeable_metrics.Evaluation.list_columns` except those where a row may hold a scalar (a binary
    score, which may also be two class probabilities, and multiclass labels or predictions
    without an explicit format, read as one label per row; give ``label_format="onehot"`` for
    one-hot row dicts)."""
    cols = set(getattr(evaluation, "list_columns", ()))
    plan = getattr(evaluation, "plan", None)
    if plan is None:  # a SliceProfiler (the counting pass) reads slice columns only
        return frozenset(cols)
    task = plan.task
    if task.kind == "binary" and isinstance(evaluation.score_col, str):
        cols.discard(evaluation.score_col)
    if task.kind == "multiclass":
        for role, col in (("target", evaluation.label_col), ("prediction", evaluation.prediction_col)):
            if isinstance(col, str) and evaluation.formats.get(role) is None:
                cols.discard(col)
    return frozenset(cols)


def _is_table(element: Any) -> bool:
    """pyarrow RecordBatch/Table or pandas DataFrame."""
    for module, name in (("pyarrow", "RecordBatch"), ("pyarrow", "Table"), ("pandas", "DataFrame")):
        t = _module_type(module, name)
        if t is not None and isinstance(element, t):
            return True
    return False


#: Rows buffered per accumulator before a vectorised fold. Each fold updates every slice's states
#: (for ROC AUC, a union with a state of up to 40,000 bins), so larger buffers cost less per row
#: (16,384 -> 65,536 rows: about 2.5x less fold time per row for 11 slices with AUC). Rows wait as
#: columns, not dicts (see :data:`ROW_CHUNK`): 65,536 rows of three columns hold about 4 MB.
DEFAULT_BATCH_SIZE = 65_536

#: Row dicts kept as dicts before they are turned into columns (one pass per column).
ROW_CHUNK = 4096


class StagedColumns:
    """Buffered rows already turned into columns (one list per column), waiting for a fold.

    Attributes:
        columns: ``{column: list of values}`` (a key missing from a row is None).
        start: position of the first staged row in the accumulator's input (for messages).
        n: number of staged rows.
        absent: columns no staged row holds (folding then raises core's missing-column error).
        first_row: the first staged row (its keys are listed in that error).
    """

    __slots__ = ("columns", "start", "n", "absent", "first_row")

    def __init__(self, columns: dict, start: int, n: int, absent: frozenset, first_row: Mapping):
        self.columns, self.start, self.n, self.absent, self.first_row = columns, start, n, absent, first_row

    def __getstate__(self) -> tuple:
        return (self.columns, self.start, self.n, self.absent, self.first_row)

    def __setstate__(self, state: tuple) -> None:
        self.columns, self.start, self.n, self.absent, self.first_row = state

    def extend(self, columns: dict, n: int, absent: frozenset) -> None:
        for name, values in columns.items():
            self.columns[name] += values
        self.n += n
        self.absent &= absent

    def fold_into(self, evaluation: Any, acc: Any) -> Any:
        """``evaluation.fold(acc, columns)`` (with core's error for a column no row holds)."""
        if self.absent:
            names = list(getattr(evaluation, "columns", ()))
            raise missing_row_column(next((c for c in names if c in self.absent), min(self.absent)), self.first_row)
        return evaluation.fold(acc, self.columns, row_offset=self.start)


class MetricsAccumulator:
    """Beam-side accumulator: core's accumulator plus not-yet-folded rows.

    Rows are kept as dicts in ``buffer`` until :data:`ROW_CHUNK` of them (or ``batch_size``, if
    smaller) arrived, then turned into columns (``staged``: a few dozen bytes per row instead of
    a dict) until ``batch_size`` rows wait; then they are folded at once.

    Attributes:
        acc: core's accumulator ``{slice_key: tuple_of_states}`` (from ``Evaluation.zero``).
        buffer: row dicts added but not yet staged or folded.
        buffer_start: position (in this accumulator's input) of ``buffer[0]``; used only for the
            row positions in error messages.
        rows: number of rows added so far (buffered + folded); also only for messages. It is not
            encoded by :class:`MetricsAccumulatorCoder`, so positions restart at 0 after a
            shuffle.
        staged: :class:`StagedColumns` of rows added before ``buffer``, or None.
        exact: every row in ``buffer`` is exactly a ``dict`` (read with a faster path).
    """

    __slots__ = ("acc", "buffer", "buffer_start", "rows", "staged", "exact")

    def __init__(self, acc: dict, buffer: list | None = None, buffer_start: int = 0, rows: int = 0, staged: StagedColumns | None = None):
        self.acc = acc
        self.buffer = [] if buffer is None else buffer
        self.buffer_start = buffer_start
        self.rows = rows
        self.staged = staged
        self.exact = True

    def __getstate__(self) -> tuple:
        return (self.acc, self.buffer, self.buffer_start, self.rows, self.staged, self.exact)

    def __setstate__(self, state: tuple) -> None:
        self.acc, self.buffer, self.buffer_start, self.rows, self.staged, self.exact = state

    def fold_pending(self, evaluation: Any, acc: Any) -> Any:
        """Fold the staged and buffered rows into ``acc`` (this accumulator is left unchanged)."""
        if self.staged is not None:
            acc = self.staged.fold_into(evaluation, acc)
        if self.buffer:
            acc = evaluation.fold(acc, self.buffer, row_offset=self.buffer_start)
        return acc

    @property
    def pending(self) -> bool:
        """Rows are waiting to be folded."""
        return bool(self.buffer) or self.staged is not None

    def __repr__(self) -> str:
        staged = 0 if self.staged is None else self.staged.n
        return f"MetricsAccumulator(slices={len(self.acc)}, buffered={len(self.buffer)}, staged={staged}, rows={self.rows})"


class EvaluationCoder(beam.coders.Coder):
    """Base of the coders of one :class:`mergeable_metrics.Evaluation`'s values (core's codec, never pickle):
    deterministic, and equal when their evaluations' configurations are.

    Raises:
        TypeError: ``evaluation`` is not a :class:`mergeable_metrics.Evaluation`.
    """

    def __init__(self, evaluation: Evaluation):
        if not isinstance(evaluation, Evaluation):
            raise TypeError(f"evaluation must be a mergeable_metrics.Evaluation, got {type(evaluation).__name__}")
        self.evaluation = evaluation

    def is_deterministic(self) -> bool:
        return True

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.evaluation.to_config() == self.evaluation.to_config()

    def __hash__(self) -> int:
        return hash((type(self), repr(sorted(self.evaluation.to_config().items()))))


class MetricsAccumulatorCoder(EvaluationCoder):
    """Encodes a :class:`MetricsAccumulator` with core's versioned accumulator codec (no pickle).

    Buffered rows are folded into a *copy* of the accumulator before encoding, so no row is lost
    and the encoded accumulator is left unchanged. Row counters (used only in error messages) are
    not encoded. Equal accumulators give equal bytes, so the coder is deterministic.

    Args:
        evaluation: the :class:`mergeable_metrics.Evaluation` the accumulators belong to.

    Raises:
        ValueError: ``decode`` of corrupted or foreign bytes, or of states belonging to another
            evaluation configuration (from :meth:`mergeable_metrics.Evaluation.decode`);
            ``encode`` of buffered rows holding invalid values (from ``Evaluation.fold``).
        TypeError: ``evaluation`` is not a :class:`mergeable_metrics.Evaluation`.
    """

    def encode(self, value: MetricsAccumulator) -> bytes:
        acc = value.acc
        if value.pending:
            acc = value.fold_pending(self.evaluation, acc.copy())
        return self.evaluation.encode(acc)

    def decode(self, encoded: bytes) -> MetricsAccumulator:
        return MetricsAccumulator(self.evaluation.decode(encoded))

    def to_type_hint(self) -> type:
        return MetricsAccumulator

    def __repr__(self) -> str:
        return f"MetricsAccumulatorCoder(metrics={list(self.evaluation.plan.keys)})"


class MetricsCombineFn(beam.CombineFn):
    """Sliced metrics as a Beam ``CombineFn`` for ``beam.CombineGlobally`` / ``CombinePerKey``.

    Elements (values, under ``CombinePerKey``) may be:

    * a **row**: a dict ``{column: scalar}``. Rows are buffered and folded ``batch_size`` at a
      time with core's vectorised ``Evaluation.fold`` (no per-row metric math).
    * a **batch**, folded directly: a ``pyarrow.RecordBatch`` or ``pyarrow.Table``, a
      ``pandas.DataFrame``, a dict of columns (see :func:`is_column_batch`: every value a list,
      ``np.ndarray``, pyarrow Array or pandas Series, all of one length), or a list of row dicts.

    The accumulator (:class:`MetricsAccumulator`) holds core's ``{slice_key: tuple_of_states}``,
    whose states are small and fixed-size whatever the data size, plus the row buffer. It crosses
    shuffles through :class:`MetricsAccumulatorCoder` (core's versioned codec, never pickle).

    Output: a :class:`mergeable_metrics.Results` (overall slice first, then slices in spec and value order).
    Empty input (e.g. ``CombineGlobally`` over nothing) gives ``evaluation.finish(evaluation.zero())``:
    just the overall slice with ``n == 0``, weight 0 and NaN metrics (zero counts for count-like
    metrics such as ``tp`` or ``confusion_matrix``).

    Args:
        evaluation: the :class:`mergeable_metrics.Evaluation` (columns, slices, metrics). All math is core's.
        batch_size: number of buffered rows that triggers a fold (> 0; default
            :data:`DEFAULT_BATCH_SIZE`). Larger batches amortise numpy overhead and the per-slice
            state updates. Waiting rows are kept as columns (:data:`ROW_CHUNK` row dicts at a
            time are turned into one list per column), and folded on ``compact``, merging,
            encoding, ``extract_output`` and before a batch element.

    Raises:
        TypeError: at construction, ``evaluation`` is not a :class:`mergeable_metrics.Evaluation` or
            ``batch_size`` is not an int; at ``add_input``, an element of an unsupported type
            (or non-numeric values, from core).
        ValueError: at construction, ``batch_size <= 0``; when rows are folded, missing columns or
            invalid values (NaN score, label out of range, negative weight ...) with the column,
            value and row position in the message, unless the evaluation has
            ``on_invalid="skip"``. Row positions count from the start of the accumulator's input
            (a worker bundle), not of the whole PCollection. Beam may wrap the error in its own
            exception type; the message text is kept.

    Example:
        >>> import apache_beam as beam
        >>> import mergeable_metrics
        >>> ev = mergeable_metrics.Evaluation(label_col="y", score_col="s", metrics=["precision", "recall"])
        >>> with beam.Pipeline(runner="DirectRunner") as p:  # doctest: +SKIP
        ...     res = (p | beam.Create([{"y": 1, "s": 0.9}, {"y": 0, "s": 0.7}])
        ...              | beam.CombineGlobally(MetricsCombineFn(ev)))
    """

    def __init__(self, evaluation: Evaluation, batch_size: int = DEFAULT_BATCH_SIZE):
        super().__init__()
        if not isinstance(evaluation, Evaluation):
            raise TypeError(f"evaluation must be a mergeable_metrics.Evaluation, got {type(evaluation).__name__}")
        if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)):
            raise TypeError(f"batch_size must be an int, got {type(batch_size).__name__}")
        if batch_size <= 0:
            raise ValueError(f"batch_size must be > 0, got {batch_size}")
        self.evaluation = evaluation
        self.batch_size = int(batch_size)
        self._chunk = min(self.batch_size, ROW_CHUNK)
        self._columns = list(evaluation.columns)

    # -- helpers -----------------------------------------------------------------------------
    def _flush(self, a: MetricsAccumulator) -> MetricsAccumulator:
        if a.pending:
            a.fold_pending(self.evaluation, a.acc)
            a.buffer, a.staged, a.exact = [], None, True
        a.buffer_start = a.rows
        return a

    def _stage(self, a: MetricsAccumulator) -> None:
        """Turn the buffered row dicts into columns; fold once ``batch_size`` rows wait."""
        buffer = a.buffer
        columns, absent = rows_to_columns(buffer, self._columns, exact_dicts=a.exact)
        if a.staged is None:
            a.staged = StagedColumns(columns, a.buffer_start, len(buffer), absent, buffer[0])
        else:
            a.staged.extend(columns, len(buffer), absent)
        a.buffer, a.exact = [], True
        a.buffer_start = a.rows
        if a.staged.n >= self.batch_size:
            a.staged.fold_into(self.evaluation, a.acc)
            a.staged = None

    def _fold_batch(self, a: MetricsAccumulator, batch: Any) -> None:
        # Rows waiting are folded first, so every row's position (for messages) stays exact.
        self._flush(a)
        self.evaluation.fold(a.acc, batch, row_offset=a.rows)
        a.rows += num_rows(batch)
        a.buffer_start = a.rows

    def _buffer_row(self, a: MetricsAccumulator, row: Mapping, exact: bool) -> None:
        buffer = a.buffer
        if not buffer:
            a.buffer_start = a.rows
        buffer.append(row)
        a.rows += 1
        if not exact:
            a.exact = False
        if len(buffer) >= self._chunk:
            self._stage(a)

    def _is_batch(self, element: Mapping) -> bool:
        """Row or column batch: :func:`is_column_batch` with the columns whose every row holds a
        list (:func:`row_list_columns`)."""
        return is_column_batch(element, self._list_columns)

    @property
    def _list_columns(self) -> frozenset:
        cached = self.__dict__.get("_list_cols_cache")
        if cached is None:
            cached = row_list_columns(self.evaluation)
            self.__dict__["_list_cols_cache"] = cached
        return cached

    def add_elements(self, a: MetricsAccumulator, elements: list) -> None:
        """:meth:`add_inputs` of a list: when every element is a plain row (exactly a ``dict``
        holding a scalar under the first key of the first element: checked for the whole list at
        once; a dict with a scalar value is a row, see :func:`is_column_batch`), the rows join the
        buffer in one step; otherwise element by element. The same accumulator either way."""
        if elements and set(map(type, elements)) == {dict} and elements[0]:
            try:  # one C-level pass (a missing key: element by element below)
                scalars = set(map(type, map(itemgetter(next(iter(elements[0]))), elements))) <= _ROW_SCALARS
            except KeyError:
                scalars = False
            if scalars:
                buffer = a.buffer
                if not buffer:
                    a.buffer_start = a.rows
                buffer += elements
                a.rows += len(elements)
                if len(buffer) >= self._chunk:
                    self._stage(a)
                return
        for element in elements:
            self._add(a, element)

    def _add(self, a: MetricsAccumulator, element: Any) -> None:
        if type(element) is dict:
            for first in element.values():  # a scalar value: a row (no batch holds a scalar)
                if type(first) in _ROW_SCALARS:  # the row path, inlined (it runs per element)
                    buffer = a.buffer
                    if not buffer:
                        a.buffer_start = a.rows
                    buffer.append(element)
                    a.rows += 1
                    if len(buffer) >= self._chunk:
                        self._stage(a)
                    return
                break
        if type(element) is dict or isinstance(element, Mapping):
            if self._is_batch(element):
                self._fold_batch(a, element)
                return
            self._buffer_row(a, element, type(element) is dict)
        elif _is_table(element) or (isinstance(element, list) and all(isinstance(r, Mapping) for r in element)):
            self._fold_batch(a, element)
        else:
            raise TypeError(
                f"MetricsCombineFn cannot read an element of type {type(element).__name__}; pass a row dict, "
                "a dict of column arrays, a list of row dicts, a pyarrow RecordBatch/Table or a pandas DataFrame"
            )

    # -- CombineFn ---------------------------------------------------------------------------
    def setup(self) -> None:
        """Once per worker process and CombineFn instance: compile the exact-sum kernels (or load
        them from numba's on-disk cache), so no bundle pays the first-call cost."""
        warm_kernels()

    def create_accumulator(self) -> MetricsAccumulator:
        """A fresh accumulator around ``evaluation.zero()`` with an empty row buffer."""
        return MetricsAccumulator(self.evaluation.zero())

    def add_input(self, mutable_accumulator: MetricsAccumulator, element: Any) -> MetricsAccumulator:
        """Buffer one row dict (folding when the buffer is full) or fold one batch directly.

        Raises:
            TypeError / ValueError: see the class docstring.
        """
        self._add(mutable_accumulator, element)
        return mutable_accumulator

    def add_inputs(self, mutable_accumulator: MetricsAccumulator, elements: Iterable[Any]) -> MetricsAccumulator:
        """Add many elements: rows are buffered and folded ``batch_size`` at a time, batches are
        folded as they come."""
        for element in elements:
            self._add(mutable_accumulator, element)
        return mutable_accumulator

    def merge_accumulators(self, accumulators: Iterable[MetricsAccumulator]) -> MetricsAccumulator:
        """Flush and merge with ``evaluation.merge``. Only the first accumulator is mutated: the
        others' buffered rows are folded straight into it.

        Raises:
            ValueError: accumulators of different configurations (from core).
        """
        it = iter(accumulators)
        first = next(it, None)
        if first is None:
            return self.create_accumulator()
        self._flush(first)
        for other in it:
            self.evaluation.merge_into(first.acc, other.acc)
            if other.pending:
                other.fold_pending(self.evaluation, first.acc)
            first.rows += other.rows
        first.buffer_start = first.rows
        return first

    def compact(self, accumulator: MetricsAccumulator) -> MetricsAccumulator:
        """Fold the buffered rows (so the accumulator is just small states)."""
        return self._flush(accumulator)

    def extract_output(self, accumulator: MetricsAccumulator) -> Results:
        """Flush, then ``evaluation.finish``: a :class:`mergeable_metrics.Results` with every slice's
        metrics (the overall slice always present; ``n == 0`` and NaN metrics for empty input)."""
        self._flush(accumulator)
        return self.evaluation.finish(accumulator.acc)

    def get_accumulator_coder(self) -> MetricsAccumulatorCoder:
        """:class:`MetricsAccumulatorCoder` over this evaluation (core codec, no pickle)."""
        return MetricsAccumulatorCoder(self.evaluation)

    def display_data(self) -> dict[str, Any]:
        cfg = self.evaluation.to_config()
        return {
            "metrics": ", ".join(cfg["metrics"]),
            "label_col": cfg["label_col"],
            "slices": "; ".join(cfg["slices"]) or "(overall only)",
            "batch_size": self.batch_size,
        }
