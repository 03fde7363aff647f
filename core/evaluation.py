"""Sliced evaluation over columnar batches: the one object every engine runs.

An :class:`Evaluation` knows the columns (label, score or prediction, weight), the slice specs and
the :class:`~core.plan.Plan`. Its accumulator is a plain dict ``{slice_key: tuple_of_states}``
that always contains the overall slice ``()``. Engines call ``zero``, ``fold`` (per batch),
``merge`` (any order, any grouping), ``finish``, and ``encode_accumulator`` /
``decode_accumulator`` to ship partial states.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Iterable, Sequence

import numpy as np

from core import codec
from core._inputs import ON_INVALID, as_array, make_batch
from core.metrics import Metric, Task
from core.plan import Plan
from core.results import Results, SliceResult
from core.slicing import OVERALL, group_rows, parse_slices, sort_key, split_by_code
from core.states import ExampleCountState

Accumulator = dict  # {slice_key: tuple[State, ...]}


def _available(data: Any) -> list[str]:
    if hasattr(data, "schema") and hasattr(data, "column"):
        return list(data.schema.names)
    if hasattr(data, "columns"):
        return [str(c) for c in data.columns]
    if isinstance(data, Mapping):
        return list(data.keys())
    return []


def extract_columns(data: Any, names: Sequence[str]) -> tuple[dict[str, np.ndarray], int]:
    """Pull named columns out of one batch as numpy arrays.

    Args:
        data: a dict of columns (lists/arrays), a pandas DataFrame, a pyarrow RecordBatch/Table,
            or a list of row dicts (a missing key in a row is a missing value).
        names: the columns to extract.

    Returns:
        ``({name: (n,) array}, n)``.

    Raises:
        ValueError: a column is absent (the message lists the available columns) or columns
            differ in length.
        TypeError: ``data`` is none of the supported kinds.
    """
    if isinstance(data, list):
        if data and not isinstance(data[0], Mapping):
            raise TypeError(f"rows must be dicts, got {type(data[0]).__name__}")
        if data:
            keys = set().union(*(r.keys() for r in data[:1]))
            for name in names:
                if name not in keys and all(name not in r for r in data):
                    raise ValueError(f"column {name!r} not found in the rows; available: {sorted(keys)}")
        cols = {name: as_array([r.get(name) for r in data], name) for name in names}
        return cols, len(data)
    if hasattr(data, "schema") and hasattr(data, "column"):  # pyarrow RecordBatch / Table
        get = lambda name: data.column(name)  # noqa: E731
    elif isinstance(data, Mapping) or hasattr(data, "columns"):
        get = lambda name: data[name]  # noqa: E731
    else:
        raise TypeError(f"cannot read columns from {type(data).__name__}; pass a dict, DataFrame, Arrow batch or list of rows")
    avail = _available(data)
    cols = {}
    for name in names:
        if name not in avail:
            raise ValueError(f"column {name!r} not found; available columns: {avail}")
        cols[name] = as_array(get(name), name)
    lengths = {c.shape[0] for c in cols.values()}
    if len(lengths) > 1:
        raise ValueError(f"columns have different lengths: { {k: v.shape[0] for k, v in cols.items()} }")
    n = lengths.pop() if lengths else (data.num_rows if hasattr(data, "num_rows") else len(data))
    return cols, n


def num_rows(data: Any) -> int:
    """Number of rows in a batch of any kind :func:`extract_columns` reads."""
    if hasattr(data, "num_rows"):
        return int(data.num_rows)
    if isinstance(data, Mapping):
        return len(next(iter(data.values()))) if data else 0
    return len(data)


class Evaluation:
    """Column mapping + slices + metrics, with accumulator operations for any engine.

    Args:
        label_col: column of true labels: 0/1 (binary) or [0, K) (multiclass).
        score_col: column of finite float scores (binary); thresholded at ``threshold``.
        prediction_col: column of predicted labels (binary 0/1, or multiclass [0, K)).
            Exactly one of ``score_col`` / ``prediction_col`` is required.
        weight_col: optional column of finite non-negative sample weights.
        slices: slice specs (``"carrier"``, ``"carrier,origin"``, lists); the overall slice is
            always computed.
        metrics: metric strings (see :mod:`core.metrics`); None for the task's defaults.
        num_classes: None/2 for binary, K > 2 for multiclass (needs ``prediction_col``).
        threshold, threshold_rule, zero_division, multiclass: see :class:`~core.plan.MetricCollection`.
        on_invalid: ``"raise"`` (default): invalid rows raise ``ValueError`` naming column, value
            and row; ``"skip"``: they are skipped and counted per slice (``skipped`` in results).

    Raises:
        ValueError: bad configuration (both or neither of score/prediction columns, unknown metric,
            bad ``on_invalid`` ...).
    """

    def __init__(
        self,
        *,
        label_col: str,
        score_col: str | None = None,
        prediction_col: str | None = None,
        weight_col: str | None = None,
        slices: Iterable[Any] | str | None = None,
        metrics: Sequence[str | Metric] | None = None,
        num_classes: int | None = None,
        threshold: float = 0.5,
        threshold_rule: str = ">=",
        zero_division: Any = "nan",
        on_invalid: str = "raise",
        multiclass: bool = False,
    ):
        if (score_col is None) == (prediction_col is None):
            raise ValueError("give exactly one of score_col or prediction_col")
        if on_invalid not in ON_INVALID:
            raise ValueError(f"on_invalid must be one of {ON_INVALID}, got {on_invalid!r}")
        task = Task(num_classes or 2, threshold, threshold_rule, zero_division, multiclass)
        if task.kind == "multiclass" and prediction_col is None:
            raise ValueError("multiclass evaluation needs prediction_col (predicted labels)")
        self.label_col = label_col
        self.score_col = score_col
        self.prediction_col = prediction_col
        self.weight_col = weight_col
        self.slices = parse_slices(slices)
        self.on_invalid = on_invalid
        self.plan = Plan(metrics, task)
        self._init_args = dict(
            label_col=label_col, score_col=score_col, prediction_col=prediction_col, weight_col=weight_col,
            slices=[str(s) for s in self.slices], metrics=list(self.plan.keys), num_classes=num_classes,
            threshold=threshold, threshold_rule=threshold_rule, zero_division=task.zero_division,
            on_invalid=on_invalid, multiclass=multiclass,
        )  # fmt: skip

    # -- configuration ---------------------------------------------------------------------
    def to_config(self) -> dict[str, Any]:
        """JSON-ready constructor arguments; ``Evaluation(**e.to_config())`` is equivalent."""
        return dict(self._init_args)

    @property
    def columns(self) -> list[str]:
        """Every input column this evaluation reads (label, score/prediction, weight, slices)."""
        cols = [self.label_col, self.score_col or self.prediction_col]
        if self.weight_col:
            cols.append(self.weight_col)
        for s in self.slices:
            cols += [c for c in s.columns if c not in cols]
        return [c for c in cols if c is not None]

    def describe(self) -> dict[str, Any]:
        return {**self.plan.describe(), **{k: v for k, v in self._init_args.items() if k != "metrics"}}

    # -- accumulator -------------------------------------------------------------------------
    def zero(self) -> Accumulator:
        """A fresh accumulator: just the overall slice's zero states."""
        return {OVERALL: self.plan.zero()}

    def fold(self, acc: Accumulator, data: Any, row_offset: int = 0) -> Accumulator:
        """Fold one batch of rows into ``acc`` (mutated and returned).

        Args:
            acc: an accumulator from :meth:`zero`.
            data: dict of columns, pandas DataFrame, pyarrow RecordBatch/Table, or list of row dicts.
            row_offset: position of the batch's first row in the whole input (for messages).

        Raises:
            ValueError / TypeError: missing columns or invalid values (see
                :func:`core._inputs.make_batch`), unless ``on_invalid="skip"``.
        """
        cols, n = extract_columns(data, self.columns)
        if n == 0:
            return acc
        batch, invalid = make_batch(
            num_classes=self.plan.task.num_classes,
            y_true=cols[self.label_col],
            y_score=cols[self.score_col] if self.score_col else None,
            y_pred=cols[self.prediction_col] if self.prediction_col else None,
            sample_weight=cols[self.weight_col] if self.weight_col else None,
            names=(self.label_col, self.score_col or "", self.prediction_col or "", self.weight_col or ""),
            row_offset=row_offset,
            on_invalid=self.on_invalid,
        )
        n_skipped = int(invalid.sum()) if invalid is not None else 0
        self._add(acc, OVERALL, self.plan.fold(self.plan.zero(), batch), n_skipped)
        for spec in self.slices:
            codes, keys = group_rows(spec, cols)
            skipped = np.zeros(len(keys), dtype=np.int64)
            if n_skipped:
                skipped = np.bincount(codes[invalid], minlength=len(keys))
                codes = codes[~invalid]
            for g, idx in enumerate(split_by_code(codes, len(keys))):
                if idx.size == 0 and skipped[g] == 0:
                    continue
                states = self.plan.from_batch(batch.take(idx)) if idx.size else self.plan.zero()
                self._add(acc, keys[g], states, int(skipped[g]))
        return acc

    def _add(self, acc: Accumulator, key: tuple, states: tuple, skipped: int) -> None:
        if skipped:
            states = (states[0].merge(ExampleCountState.skipped_rows(skipped)),) + states[1:]
        old = acc.get(key)
        acc[key] = states if old is None else self.plan.merge(old, states)

    def merge(self, a: Accumulator, b: Accumulator) -> Accumulator:
        """Merge ``b`` into ``a`` (``a`` is mutated and returned; ``b`` is left unchanged).

        Raises:
            ValueError: the accumulators come from evaluations of different configuration.
        """
        for key, states in b.items():
            old = a.get(key)
            a[key] = states if old is None else self.plan.merge(old, states)
        return a

    def merge_all(self, accs: Iterable[Accumulator]) -> Accumulator:
        out = self.zero()
        for a in accs:
            self.merge(out, a)
        return out

    def encode_accumulator(self, acc: Accumulator) -> bytes:
        """Versioned bytes (see :mod:`core.codec`); equal accumulators give equal bytes."""
        return codec.encode_accumulator(acc)

    def decode_accumulator(self, data: bytes) -> Accumulator:
        """Inverse of :meth:`encode_accumulator`; checks the states belong to this plan.

        Raises:
            ValueError: corrupted or foreign bytes, or states of another configuration.
        """
        acc = codec.decode_accumulator(data)
        for states in acc.values():
            self.plan.check(states)
        return acc

    def finish(self, acc: Accumulator) -> Results:
        """Compute every slice's metrics; overall first, then slices in spec and value order."""
        spec_order = [s.columns for s in self.slices]
        if OVERALL not in acc:
            acc = {OVERALL: self.plan.zero(), **acc}
        out = []
        for key in sorted(acc, key=lambda k: sort_key(k, spec_order)):
            states = acc[key]
            counts = states[0]
            values, intervals = self.plan.compute_with_intervals(states)
            out.append(
                SliceResult(
                    slice=key,
                    n=int(counts["count"]),
                    weight=float(counts["weight"]),
                    skipped=int(counts["skipped"]),
                    metrics=values,
                    intervals=intervals,
                )
            )
        return Results(out, self.describe())

    def collect(self, slices: Iterable[SliceResult] | None = None, rows: Iterable[dict] | None = None) -> Results:
        """Assemble engine output into :class:`~core.results.Results` in the canonical order:
        per-slice results (Beam) or long-format rows (Spark)."""
        spec_order = [s.columns for s in self.slices]
        if rows is not None:
            return Results.from_rows(list(rows), self.describe(), spec_order, self.plan.keys)
        return Results.from_slices(list(slices or []), self.describe(), spec_order)

    def evaluate(self, batches: Iterable[Any]) -> Results:
        """Fold an iterable of batches in order and finish (the local engine)."""
        acc = self.zero()
        offset = 0
        for b in batches:
            self.fold(acc, b, row_offset=offset)
            offset += num_rows(b)
        return self.finish(acc)
