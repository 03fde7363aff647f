"""Continual-learning metrics: accuracy across tasks, as CapyMOA's ``OCLMetrics`` reports them.

A learner is trained on ``T`` tasks in order and evaluated, on every task's test data, after it
finished training on each task (the accuracy matrix ``R``) and, optionally, ``H`` times *during*
training on each task (the anytime matrix ``A``). :class:`ContinualEvaluation` folds the
evaluation events into one exact, mergeable state (:class:`ContinualState`: correct and total
counts per (trained task, [step,] evaluated task), and the per-class confusion of the ``R``
evaluations), and :meth:`ContinualEvaluation.compute` turns it into :class:`OCLMetrics`, with
CapyMOA's attribute names, shapes and formulas (``capymoa.ocl.evaluation.OCLMetrics``):

* ``R[i, j]`` = accuracy on task ``j`` after training on tasks ``0..i``;
  ``A[i * H + h, j]`` = accuracy on task ``j`` at the ``h``-th evaluation while training on task ``i``;
* ``accuracy_all[t] = mean_j R[t, j]``, ``accuracy_seen[t] = mean_{j <= t} R[t, j]``, their means
  ``*_avg``, ``accuracy_final = accuracy_all[T - 1]``, and the same from ``A`` (``anytime_*``);
* ``forward_transfer = 2 / (T (T - 1)) * sum_{i < j} R[i, j]`` and
  ``backward_transfer = 2 / (T (T - 1)) * sum_{j < i} (R[i, j] - R[j, j])``;
* ``class_cm[t]`` (K, K): true x predicted class counts of the ``R`` evaluations after training
  on task ``t``, summed over the evaluated tasks.

Differences from CapyMOA, on purpose: values are float64 (CapyMOA: float32); a cell never
evaluated is NaN *and listed* in :attr:`OCLMetrics.undefined` (NaN propagates into the averages
that use it, as in CapyMOA); ``R`` comes from the evaluations after each task (``step=None``),
which CapyMOA takes from its last anytime evaluation: feed both when they are the same data.
CapyMOA's test-then-train fields (``ttt``, ``boundaries``, ``ttt_windowed_task_index``) are not
here: prequential results are their own evaluation.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from mergeable_metrics._util.public import public
from mergeable_metrics.inputs.validation import as_array, invalid_value_message
from mergeable_metrics._util.limits import MAX_NUM_CLASSES, check_count
from mergeable_metrics._util.nulls import is_null
from mergeable_metrics.states.base import State

__all__ = ["ContinualEvaluation", "ContinualLayout", "ContinualState", "OCLMetrics", "EVENT_COLUMNS"]

#: the columns of an evaluation event row, in the order :meth:`ContinualEvaluation.update` takes them
EVENT_COLUMNS = ("trained_task", "step", "evaluated_task", "label", "prediction")

#: the most tasks (and anytime evaluations per task) a state may hold
MAX_TASKS = 100_000

#: the most int64 cells of one state, ``2 T^2 (H + 1) + T K^2`` (2**26 cells: 512 MiB)
MAX_CONTINUAL_CELLS = 1 << 26


@dataclass(frozen=True)
class ContinualLayout:
    """``num_tasks`` T >= 1, ``num_classes`` K >= 2, ``evaluations_per_task`` H >= 0, and at most
    :data:`MAX_CONTINUAL_CELLS` counts in all (``ValueError`` naming the setting otherwise, also
    for a decoded layout)."""

    num_tasks: int
    num_classes: int
    evaluations_per_task: int = 0

    def __post_init__(self) -> None:
        t = check_count(self.num_tasks, "num_tasks", 1, MAX_TASKS)
        k = check_count(self.num_classes, "num_classes", 2, MAX_NUM_CLASSES)
        h = check_count(self.evaluations_per_task, "evaluations_per_task", 0, MAX_TASKS)
        for name, v in (("num_tasks", t), ("num_classes", k), ("evaluations_per_task", h)):
            object.__setattr__(self, name, v)
        cells = 2 * t * t * (h + 1) + t * k * k
        if cells > MAX_CONTINUAL_CELLS:
            raise ValueError(
                f"num_tasks={t}, num_classes={k}, evaluations_per_task={h} need {cells} counts "
                f"(2 T^2 (H + 1) + T K^2); a continual state holds at most {MAX_CONTINUAL_CELLS}"
            )


class ContinualState(State):
    """Exact counts of continual-learning evaluations (all int64, summed by :meth:`merge`).

    Fields:
        correct, total: (T, T) correct predictions and examples of the evaluations after training
            on task ``i`` (row) on task ``j`` (column): ``R = correct / total``.
        anytime_correct, anytime_total: (T, H, T) the same for the ``h``-th evaluation during
            training on task ``i``: ``A``.
        class_cm: (T, K, K) true x predicted classes of the ``R`` evaluations after task ``t``,
            over all evaluated tasks.
    """

    kind = "continual"
    Layout = ContinualLayout
    FIELDS = (
        ("correct", "int64"),
        ("total", "int64"),
        ("anytime_correct", "int64"),
        ("anytime_total", "int64"),
        ("class_cm", "int64"),
    )
    COUNTS = ("correct", "total", "anytime_correct", "anytime_total", "class_cm")

    @classmethod
    def shape(cls, layout: ContinualLayout, field: str) -> tuple[int, ...]:
        t, k, h = layout.num_tasks, layout.num_classes, layout.evaluations_per_task
        return {"correct": (t, t), "total": (t, t), "anytime_correct": (t, h, t), "anytime_total": (t, h, t), "class_cm": (t, k, k)}[field]

    @classmethod
    def layout_for(cls, requirements: list[Any], task: Any) -> ContinualLayout:
        raise ValueError("continual states are made by mergeable_metrics.ContinualEvaluation, not by a metric plan")

    def validate(self, integral: bool = False) -> "ContinualState":
        super().validate(integral)
        a = self.arrays
        for c, t in (("correct", "total"), ("anytime_correct", "anytime_total")):
            bad = a[c] > a[t]
            if bad.any():
                at = tuple(int(i) for i in np.argwhere(bad)[0])
                raise ValueError(f"invalid continual state: {c}{list(at)} = {a[c][at]} exceeds {t}{list(at)} = {a[t][at]}")
        cm = a["class_cm"].sum(axis=(1, 2))
        if not np.array_equal(cm, a["total"].sum(axis=1)):
            raise ValueError("invalid continual state: class_cm does not sum to the evaluations' totals")
        hits = np.trace(a["class_cm"], axis1=1, axis2=2)
        if not np.array_equal(hits, a["correct"].sum(axis=1)):
            t = int(np.flatnonzero(hits != a["correct"].sum(axis=1))[0])
            raise ValueError(f"invalid continual state: class_cm[{t}] has {hits[t]} correct predictions, correct[{t}] sums to {a['correct'][t].sum()}")
        return self

    @classmethod
    def from_events(
        cls,
        layout: ContinualLayout,
        trained_task: Any,
        evaluated_task: Any,
        y_true: Any,
        y_pred: Any,
        step: Any = None,
        row_offset: int = 0,
        counts: Any = None,
        names: tuple[str, str] = ("label", "prediction"),
    ) -> "ContinualState":
        """The state of a batch of evaluation events (vectorised).

        Args:
            layout: T, K, H.
            trained_task: the task being (or just) trained: an int for every row, or an (N,) column.
            evaluated_task: the task whose test data was predicted: an int or an (N,) column.
            y_true, y_pred: (N,) class ids in ``[0, K)``.
            step: None (every row is an evaluation after training on ``trained_task``: ``R``), an
                int ``h`` in ``[0, H)`` (the ``h``-th anytime evaluation: ``A``), or an (N,) column
                of both (missing values: None/NaN/null mean ``R``).
            row_offset: position of the first row, for error messages.
            counts: None (each row is one event), or (N,) int64 >= 0 events each row stands for
                (rows grouped by an engine, e.g. Spark's ``groupBy(...).count()``).
            names: the column names of ``y_true`` and ``y_pred`` in error messages.

        Raises:
            ValueError: a task, step or class outside its range, a missing or non-integer value:
                naming the column, the value and the row.
        """
        y = _ints(y_true, names[0], layout.num_classes, row_offset, what="label")
        n = y.shape[0]
        p = _ints(y_pred, names[1], layout.num_classes, row_offset, n, what="prediction")
        tr = _ints(trained_task, "trained_task", layout.num_tasks, row_offset, n)
        ev = _ints(evaluated_task, "evaluated_task", layout.num_tasks, row_offset, n)
        h, final = _steps(step, layout.evaluations_per_task, row_offset, n)
        t, k, hh = layout.num_tasks, layout.num_classes, layout.evaluations_per_task
        w = None if counts is None else _counts(counts, n)
        hit = y == p
        any_ = ~final
        cell = (tr * max(hh, 1) + h) * t + ev

        def tally(index: np.ndarray, mask: np.ndarray, size: int) -> np.ndarray:
            if w is None:
                return np.bincount(index[mask], minlength=size).astype(np.int64)
            out = np.zeros(size, np.int64)
            np.add.at(out, index[mask], w[mask])
            return out

        total = tally(tr * t + ev, final, t * t)
        correct = tally(tr * t + ev, final & hit, t * t)
        cm = tally((tr * k + y) * k + p, final, t * k * k)
        a_total = tally(cell, any_, t * hh * t)
        a_correct = tally(cell, any_ & hit, t * hh * t)
        return cls(
            layout,
            {
                "correct": correct.reshape(t, t),
                "total": total.reshape(t, t),
                "anytime_correct": a_correct.reshape(t, hh, t),
                "anytime_total": a_total.reshape(t, hh, t),
                "class_cm": cm.reshape(t, k, k),
            },
        )


def _counts(counts: Any, n: int) -> np.ndarray:
    c = as_array(counts, "count")
    if c.shape[0] != n or c.dtype.kind not in "iu" or (c < 0).any():
        raise ValueError(f"counts must be {n} non-negative integers, got {c.dtype}{c.shape}")
    return c.astype(np.int64)


def _ints(values: Any, column: str, size: int, row_offset: int, n: int | None = None, what: str | None = None) -> np.ndarray:
    """(n,) intp values in ``[0, size)`` of a column or one int broadcast to ``n`` rows."""
    if n is not None and isinstance(values, (int, np.integer)) and not isinstance(values, (bool, np.bool_)):
        values = np.full(n, int(values), dtype=np.int64)
    arr = as_array(values, column, keep_nulls=True)
    if n is not None and arr.shape[0] != n:
        raise ValueError(f"column {column!r}: {arr.shape[0]} rows, but the labels have {n}")
    rule = f"{(what or column).replace('_', ' ')}s must be integers in [0, {size})"
    if arr.dtype.kind in "iu":
        bad = (arr < 0) | (arr >= size)
    elif arr.dtype.kind == "f":
        with np.errstate(invalid="ignore"):
            bad = ~np.isfinite(arr) | (arr != np.floor(arr)) | (arr < 0) | (arr >= size)
    else:  # objects (None, text) or bools: each value checked
        bad = np.array(
            [
                isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer, float, np.floating)) or not (0 <= v < size and float(v).is_integer())
                for v in arr
            ],
            dtype=bool,
        )
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        v = arr[i]
        raise ValueError(invalid_value_message(column, v.item() if hasattr(v, "item") else v, row_offset + i, rule))
    return arr.astype(np.intp)


def _steps(step: Any, hh: int, row_offset: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``(h, final)``: (n,) anytime step ids (0 where final) and the mask of ``R`` rows."""
    if step is None:
        return np.zeros(n, np.intp), np.ones(n, dtype=bool)
    if isinstance(step, (int, np.integer)) and not isinstance(step, (bool, np.bool_)):
        step = np.full(n, int(step), dtype=np.int64)
    arr = as_array(step, "step")
    if arr.shape[0] != n:
        raise ValueError(f"column 'step': {arr.shape[0]} rows, but the labels have {n}")
    if arr.dtype.kind == "f":
        final = np.isnan(arr)
    elif arr.dtype.kind == "O":  # None, an Arrow null or a float NaN (a list, an object array, row dicts)
        final = np.array([is_null(v) or (isinstance(v, (float, np.floating)) and np.isnan(v)) for v in arr], dtype=bool)
    else:
        final = np.zeros(n, dtype=bool)
    if (~final).any() and hh == 0:
        i = int(np.flatnonzero(~final)[0])
        v = arr[i]
        raise ValueError(invalid_value_message("step", v.item() if hasattr(v, "item") else v, row_offset + i,
                                               "anytime steps need evaluations_per_task > 0 (None/null marks the evaluation after a task)"))  # fmt: skip
    filled = arr.astype(object) if arr.dtype.kind == "O" else arr.copy()
    filled[final] = 0  # the R rows: checked as step 0, then masked out
    return _ints(filled, "step", max(hh, 1), row_offset), final


@dataclass(frozen=True)
class OCLMetrics:
    """Continual-learning metrics (CapyMOA's ``OCLMetrics`` names and shapes; float64), of T tasks,
    H anytime evaluations per task and K classes.

    Attributes:
        accuracy_matrix: (T, T) ``R``.
        anytime_accuracy_matrix: (T * H, T) ``A`` with its first two axes flattened.
        accuracy_all, accuracy_seen: (T,) mean of ``R[t]`` over all tasks / over tasks ``0..t``.
        accuracy_all_avg, accuracy_seen_avg: their means. accuracy_final: ``accuracy_all[T - 1]``.
        anytime_accuracy_all, anytime_accuracy_seen: (T * H,) the same from ``A``;
        anytime_accuracy_all_avg, anytime_accuracy_seen_avg: their means.
        forward_transfer, backward_transfer: see :mod:`mergeable_metrics.time.continual` (0 pairs when T = 1: NaN).
        class_cm: (T, K, K) int64 true x predicted classes of the ``R`` evaluations after each task.
        task_index: (T,) ``1..T``; anytime_task_index: (T * H,) ``linspace(0, T, T * H + 1)[1:]``
            (x axes for plotting, as CapyMOA).
        n_tasks, n_classes, n_continual_evaluations: T, K, H.
        undefined: the NaN entries: ``[{"metric": name, "entries": [[i, j], ...]}, ...]`` for the
            matrices (cells never evaluated) and ``{"metric": name}`` for scalars.
    """

    accuracy_matrix: np.ndarray
    anytime_accuracy_matrix: np.ndarray
    accuracy_all: np.ndarray
    accuracy_all_avg: float
    accuracy_seen: np.ndarray
    accuracy_seen_avg: float
    accuracy_final: float
    anytime_accuracy_all: np.ndarray
    anytime_accuracy_all_avg: float
    anytime_accuracy_seen: np.ndarray
    anytime_accuracy_seen_avg: float
    forward_transfer: float
    backward_transfer: float
    class_cm: np.ndarray
    task_index: np.ndarray
    anytime_task_index: np.ndarray
    n_tasks: int
    n_classes: int
    n_continual_evaluations: int
    undefined: list = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: arrays as nested lists, NaN as None."""
        from mergeable_metrics.results.results import jsonable

        return {f.name: jsonable(getattr(self, f.name)) for f in fields(self)}


def _ratio(c: np.ndarray, t: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(t > 0, c / np.maximum(t, 1), np.nan)


def _seen_means(m: np.ndarray, task_of_row: np.ndarray) -> np.ndarray:
    """Row ``r`` of ``m`` averaged over columns ``0..task_of_row[r]`` (NaN propagates)."""
    cols = np.arange(m.shape[1])
    mask = cols[None, :] <= task_of_row[:, None]
    return np.where(mask, m, 0.0).sum(axis=1) / mask.sum(axis=1)


def _mean(a: np.ndarray) -> float:
    return float(np.mean(a)) if a.size else float("nan")


def ocl_metrics(state: ContinualState) -> OCLMetrics:
    """:class:`OCLMetrics` of a state (see :mod:`mergeable_metrics.time.continual` for the formulas)."""
    lay = state.layout
    t, h = lay.num_tasks, lay.evaluations_per_task
    a = state.arrays
    r = _ratio(a["correct"], a["total"])
    anytime = _ratio(a["anytime_correct"], a["anytime_total"]).reshape(t * h, t)
    rows = np.arange(t)
    acc_all = r.mean(axis=1)
    acc_seen = _seen_means(r, rows)
    any_all = anytime.mean(axis=1) if t * h else np.zeros(0)
    any_seen = _seen_means(anytime, np.repeat(rows, h)) if t * h else np.zeros(0)
    pairs = t * (t - 1) / 2
    # NaN (a pair never evaluated) propagates: np.where keeps it in the cells summed
    upper, lower = np.triu(np.ones((t, t), bool), 1), np.tril(np.ones((t, t), bool), -1)
    fwt = float(np.where(upper, r, 0.0).sum() / pairs) if pairs else float("nan")
    bwt = float(np.where(lower, r - np.diag(r)[None, :], 0.0).sum() / pairs) if pairs else float("nan")
    values = dict(
        accuracy_matrix=r,
        anytime_accuracy_matrix=anytime,
        accuracy_all=acc_all,
        accuracy_all_avg=_mean(acc_all),
        accuracy_seen=acc_seen,
        accuracy_seen_avg=_mean(acc_seen),
        accuracy_final=float(acc_all[-1]),
        anytime_accuracy_all=any_all,
        anytime_accuracy_all_avg=_mean(any_all),
        anytime_accuracy_seen=any_seen,
        anytime_accuracy_seen_avg=_mean(any_seen),
        forward_transfer=fwt,
        backward_transfer=bwt,
    )
    undefined: list[dict[str, Any]] = []
    for name, v in values.items():
        arr = np.asarray(v, dtype=np.float64)
        nan = np.isnan(arr)
        if arr.ndim == 0 and nan:
            undefined.append({"metric": name})
        elif arr.ndim == 2 and nan.any():
            undefined.append({"metric": name, "entries": np.argwhere(nan).tolist()})
        elif arr.ndim == 1 and nan.any():
            undefined.append({"metric": name, "entries": np.flatnonzero(nan).tolist()})
    for name in ("accuracy_matrix", "anytime_accuracy_matrix", "accuracy_all", "accuracy_seen", "anytime_accuracy_all", "anytime_accuracy_seen"):
        values[name].flags.writeable = False
    cm = np.array(a["class_cm"])
    cm.flags.writeable = False
    return OCLMetrics(
        **values,
        class_cm=cm,
        task_index=np.arange(t) + 1,
        anytime_task_index=np.linspace(0, t, h * t + 1)[1:],
        n_tasks=t,
        n_classes=lay.num_classes,
        n_continual_evaluations=h,
        undefined=undefined,
    )


@public("mergeable_metrics")
class ContinualEvaluation:
    """Accuracy of a continual learner across ``num_tasks`` tasks, mergeable, in one state.

    Args:
        num_tasks: T >= 1 tasks, ids ``0..T-1`` in training order.
        num_classes: K >= 2 classes, ids ``0..K-1``.
        evaluations_per_task: H >= 0 anytime evaluations during each task's training
            (``step=0..H-1``); 0: only the evaluations after each task.

    ``update`` folds events in place (torchmetrics style, thread-safe); :meth:`merge`
    merges another in place and returns ``self``, :func:`mergeable_metrics.merge` returns a
    new evaluation; :meth:`encode` / :meth:`decode` give
    versioned, checksummed bytes; :meth:`compute` the :class:`OCLMetrics`.

    Example:
        >>> ev = ContinualEvaluation(num_tasks=2, num_classes=2)
        >>> ev.update(0, 0, [0, 1], [0, 1])      # after task 0, on task 0: 2 of 2 right
        >>> ev.update(0, 1, [0, 1], [1, 1])      # after task 0, on task 1: 1 of 2
        >>> ev.update(1, 0, [0, 1], [0, 0])      # after task 1, on task 0: 1 of 2
        >>> ev.update(1, 1, [0, 1], [0, 1])
        >>> m = ev.compute()
        >>> m.accuracy_matrix.tolist(), m.forward_transfer, m.backward_transfer
        ([[1.0, 0.5], [0.5, 1.0]], 0.5, -0.5)
    """

    def __init__(self, num_tasks: int, num_classes: int, evaluations_per_task: int = 0):
        for name, v, lo, hi in (("num_tasks", num_tasks, 1, MAX_TASKS), ("num_classes", num_classes, 2, MAX_NUM_CLASSES),
                                ("evaluations_per_task", evaluations_per_task, 0, MAX_TASKS)):  # fmt: skip
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not lo <= v <= hi:
                raise ValueError(f"{name} must be an int in [{lo}, {hi}], got {v!r}")
        self.layout = ContinualLayout(int(num_tasks), int(num_classes), int(evaluations_per_task))
        self.state = ContinualState.zero(self.layout)
        self._lock = threading.Lock()
        self._rows = 0

    @property
    def num_tasks(self) -> int:
        return self.layout.num_tasks

    @property
    def num_classes(self) -> int:
        return self.layout.num_classes

    @property
    def evaluations_per_task(self) -> int:
        return self.layout.evaluations_per_task

    def update(self, trained_task: Any, evaluated_task: Any, y_true: Any, y_pred: Any, step: Any = None) -> None:
        """Fold one batch of evaluation events (see :meth:`ContinualState.from_events`)."""
        self._fold(ContinualState.from_events(self.layout, trained_task, evaluated_task, y_true, y_pred, step, self._rows))

    def _fold(self, part: ContinualState) -> None:
        with self._lock:
            self.state = self.state.merge(part)
            self._rows += int(part.arrays["total"].sum() + part.arrays["anytime_total"].sum())

    def fold_events(self, columns: Any, label_col: str = "label", prediction_col: str = "prediction") -> None:
        """Fold event rows given as columns (a dict, pandas DataFrame or Arrow table/batch) named
        :data:`EVENT_COLUMNS`, the true and predicted classes in ``label_col`` / ``prediction_col``
        (errors name them); ``step`` may be missing (every row an ``R`` evaluation) or null."""
        get = (lambda c: columns.column(c)) if hasattr(columns, "schema") else (lambda c: columns[c])
        names = list(columns.schema.names) if hasattr(columns, "schema") else list(columns.keys())
        want = ["trained_task", "step", "evaluated_task", label_col, prediction_col]
        missing = [c for c in want if c != "step" and c not in names]
        if missing:
            raise ValueError(f"continual events need columns {want}; missing {missing}")
        part = ContinualState.from_events(self.layout, get("trained_task"), get("evaluated_task"), get(label_col), get(prediction_col),
                                          get("step") if "step" in names else None, self._rows, names=(label_col, prediction_col))  # fmt: skip
        self._fold(part)

    def _check(self, other: "ContinualEvaluation") -> None:
        if not isinstance(other, ContinualEvaluation):
            raise TypeError(f"cannot merge {type(other).__name__} into a ContinualEvaluation")
        if other.layout != self.layout:
            diff = [f"{f.name} {getattr(self.layout, f.name)} != {getattr(other.layout, f.name)}" for f in fields(self.layout)
                    if getattr(self.layout, f.name) != getattr(other.layout, f.name)]  # fmt: skip
            raise ValueError(f"cannot merge continual evaluations of different configuration: {'; '.join(diff)}")

    #: ``merge`` merges in place (an object you ``update``); :func:`mergeable_metrics.merge` copies first
    MERGES_IN_PLACE = True

    def merge(self, other: "ContinualEvaluation") -> "ContinualEvaluation":
        """Merge ``other`` into this evaluation in place and return ``self`` (``other`` is left
        unchanged): ``for w in workers: total.merge(w)``; :func:`mergeable_metrics.merge` returns a new one.

        Raises:
            TypeError / ValueError: ``other`` is no evaluation, or one of another configuration
                (naming the setting); this one is left unchanged.
        """
        self._check(other)
        part, rows = other.state, other._rows
        with self._lock:
            self.state = self.state.merge(part)
            self._rows += rows
        return self

    def encode(self) -> bytes:
        """Versioned, checksummed bytes of the state (:mod:`mergeable_metrics.states.codec`)."""
        return self.state.encode()

    @classmethod
    def decode(cls, data: bytes) -> "ContinualEvaluation":
        """A new evaluation from :meth:`encode` bytes (validated; ``ValueError`` on corrupted bytes);
        ``total.merge(ContinualEvaluation.decode(blob))`` merges a worker's bytes in."""
        state = ContinualState.decode(data)
        lay = state.layout
        out = cls(lay.num_tasks, lay.num_classes, lay.evaluations_per_task)
        out.state = state
        return out

    def compute(self) -> OCLMetrics:
        return ocl_metrics(self.state)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ContinualEvaluation) and other.state == self.state

    def __reduce__(self) -> tuple:
        return (_rebuild, (self.encode(),))

    def __repr__(self) -> str:
        lay = self.layout
        n = int(self.state.arrays["total"].sum() + self.state.arrays["anytime_total"].sum())
        return f"ContinualEvaluation(num_tasks={lay.num_tasks}, num_classes={lay.num_classes}, evaluations_per_task={lay.evaluations_per_task}; {n} events)"


def _rebuild(data: bytes) -> ContinualEvaluation:
    return ContinualEvaluation.decode(data)
