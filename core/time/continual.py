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

Test-then-train (CapyMOA's ``ttt``, ``boundaries``, ``ttt_windowed_task_index``), with
``max_instances`` > 0: rows of the *training* stream, each with its ``position`` (0, 1, ... in
training order), the task being trained, the true class and the class predicted before training on
it (``evaluated_task`` and ``step`` null). The state keeps the true x predicted counts per window of
``eval_window_size`` positions and the rows per (window, task), so:

* ``ttt`` (:class:`PrequentialResults`, as CapyMOA's): ``ttt.cumulative`` over all rows and
  ``ttt.windowed`` per *full* window (positions ``[w W, (w + 1) W)``; a last partial window is not
  reported, as MOA's windowed evaluator), each with ``accuracy()`` and ``kappa()`` (Cohen's) and
  their confusion matrices;
* ``boundaries`` (T + 1,): ``[0, n_0, n_0 + n_1, ...]``, the position where each task starts (and
  the stream's end), ``n_t`` the rows of task ``t``;
* ``ttt_windowed_task_index``: CapyMOA's x axis of the windows, ``linspace(t, t + 1, ...)`` over the
  windows ``boundaries[t] // W .. boundaries[t + 1] // W`` of each task.

Differences from CapyMOA, on purpose: values are float64 (CapyMOA: float32); a cell never
evaluated is NaN *and listed* in :attr:`OCLMetrics.undefined` (NaN propagates into the averages
that use it, as in CapyMOA); ``R`` comes from the evaluations after each task (``step=None``),
which CapyMOA takes from its last anytime evaluation: feed both when they are the same data.
The test-then-train accuracy and kappa are fractions in [0, 1] like ``R`` (CapyMOA's
``PrequentialResults``, from MOA, gives percentages).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from mergeable_metrics._util.public import public
from mergeable_metrics.collection.plan import _refuse_update_keywords
from mergeable_metrics.inputs.validation import as_array, invalid_value_message
from mergeable_metrics._util.limits import MAX_NUM_CLASSES, check_count
from mergeable_metrics._util.nulls import is_null
from mergeable_metrics.states.base import State

__all__ = ["ContinualEvaluation", "ContinualLayout", "ContinualState", "OCLMetrics", "PrequentialResults", "EVENT_COLUMNS"]

#: the columns of an event row: an evaluation (``position`` null) or a test-then-train row of the
#: training stream (``position`` set; ``step`` and ``evaluated_task`` null)
EVENT_COLUMNS = ("trained_task", "step", "evaluated_task", "label", "prediction", "position")

#: the most tasks (and anytime evaluations per task) a state may hold
MAX_TASKS = 100_000

#: the most int64 cells of one state, ``2 T^2 (H + 1) + T K^2 + N_w (K^2 + T)`` (2**26 cells: 512 MiB)
MAX_CONTINUAL_CELLS = 1 << 26


@dataclass(frozen=True)
class ContinualLayout:
    """``num_tasks`` T >= 1, ``num_classes`` K >= 2, ``evaluations_per_task`` H >= 0,
    ``max_instances`` >= 0 test-then-train positions (0: none) in windows of ``eval_window_size``
    W >= 1, and at most :data:`MAX_CONTINUAL_CELLS` counts in all (``ValueError`` naming the
    setting otherwise, also for a decoded layout)."""

    num_tasks: int
    num_classes: int
    evaluations_per_task: int = 0
    max_instances: int = 0
    eval_window_size: int = 1000

    def __post_init__(self) -> None:
        t = check_count(self.num_tasks, "num_tasks", 1, MAX_TASKS)
        k = check_count(self.num_classes, "num_classes", 2, MAX_NUM_CLASSES)
        h = check_count(self.evaluations_per_task, "evaluations_per_task", 0, MAX_TASKS)
        n = check_count(self.max_instances, "max_instances", 0, MAX_CONTINUAL_CELLS)
        w = check_count(self.eval_window_size, "eval_window_size", 1, MAX_CONTINUAL_CELLS)
        for name, v in (("num_tasks", t), ("num_classes", k), ("evaluations_per_task", h), ("max_instances", n), ("eval_window_size", w)):
            object.__setattr__(self, name, v)
        cells = 2 * t * t * (h + 1) + t * k * k + self.num_windows * (k * k + t)
        if cells > MAX_CONTINUAL_CELLS:
            raise ValueError(
                f"num_tasks={t}, num_classes={k}, evaluations_per_task={h}, max_instances={n}, eval_window_size={w} need {cells} counts "
                f"(2 T^2 (H + 1) + T K^2 + ceil(max_instances / eval_window_size) (K^2 + T)); a continual state holds at most {MAX_CONTINUAL_CELLS}"
            )

    @property
    def num_windows(self) -> int:
        """``ceil(max_instances / eval_window_size)``: the test-then-train windows the state holds."""
        return -(-self.max_instances // self.eval_window_size)


class ContinualState(State):
    """Exact counts of continual-learning evaluations (all int64, summed by :meth:`merge`).

    Fields:
        correct, total: (T, T) correct predictions and examples of the evaluations after training
            on task ``i`` (row) on task ``j`` (column): ``R = correct / total``.
        anytime_correct, anytime_total: (T, H, T) the same for the ``h``-th evaluation during
            training on task ``i``: ``A``.
        class_cm: (T, K, K) true x predicted classes of the ``R`` evaluations after task ``t``,
            over all evaluated tasks.
        ttt_cm: (N_w, K, K) true x predicted classes of the test-then-train rows per window of
            ``eval_window_size`` positions.
        ttt_tasks: (N_w, T) test-then-train rows per (window, trained task).
        ttt_end: (1,) the largest position + 1 (0: none; merged by max).
    """

    kind = "continual"
    Layout = ContinualLayout
    FIELDS = (
        ("correct", "int64"),
        ("total", "int64"),
        ("anytime_correct", "int64"),
        ("anytime_total", "int64"),
        ("class_cm", "int64"),
        ("ttt_cm", "int64"),
        ("ttt_tasks", "int64"),
        ("ttt_end", "int64"),
    )
    COUNTS = ("correct", "total", "anytime_correct", "anytime_total", "class_cm", "ttt_cm", "ttt_tasks")
    NONNEGATIVE = ("ttt_end",)
    MAXED = ("ttt_end",)
    #: version 2 added the test-then-train fields (version-1 bytes read with them empty)
    VERSION = 2
    OLD_FIELDS = {1: FIELDS[:5]}

    @classmethod
    def upgrade(cls, version: int, layout: ContinualLayout, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        if version != 1:
            return super().upgrade(version, layout, arrays)
        return {**arrays, **{n: np.zeros(cls.shape(layout, n), np.int64) for n in ("ttt_cm", "ttt_tasks", "ttt_end")}}

    @classmethod
    def shape(cls, layout: ContinualLayout, field: str) -> tuple[int, ...]:
        t, k, h, nw = layout.num_tasks, layout.num_classes, layout.evaluations_per_task, layout.num_windows
        return {"correct": (t, t), "total": (t, t), "anytime_correct": (t, h, t), "anytime_total": (t, h, t), "class_cm": (t, k, k),
                "ttt_cm": (nw, k, k), "ttt_tasks": (nw, t), "ttt_end": (1,)}[field]  # fmt: skip

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
        if not np.array_equal(a["ttt_cm"].sum(axis=(1, 2)), a["ttt_tasks"].sum(axis=1)):
            raise ValueError("invalid continual state: ttt_cm and ttt_tasks count different test-then-train rows per window")
        n = int(a["ttt_tasks"].sum())
        end = int(a["ttt_end"][0])
        if end > self.layout.max_instances or (n > 0) != (end > 0):
            raise ValueError(f"invalid continual state: ttt_end {end} with {n} test-then-train rows and max_instances {self.layout.max_instances}")
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
        position: Any = None,
    ) -> "ContinualState":
        """The state of a batch of events (vectorised): evaluations and test-then-train rows.

        Args:
            layout: T, K, H.
            trained_task: the task being (or just) trained: an int for every row, or an (N,) column.
            evaluated_task: the task whose test data was predicted: an int or an (N,) column
                (null on test-then-train rows; None: all null).
            y_true, y_pred: (N,) class ids in ``[0, K)``.
            step: None (every row is an evaluation after training on ``trained_task``: ``R``), an
                int ``h`` in ``[0, H)`` (the ``h``-th anytime evaluation: ``A``), or an (N,) column
                of both (missing values: None/NaN/null mean ``R``).
            row_offset: position of the first row, for error messages.
            counts: None (each row is one event), or (N,) int64 >= 0 events each row stands for
                (rows grouped by an engine, e.g. Spark's ``groupBy(...).count()``).
            names: the column names of ``y_true`` and ``y_pred`` in error messages.
            position: None (no test-then-train rows) or an (N,) column: null on evaluation rows,
                the row's position in the training stream (``[0, max_instances)``) on
                test-then-train rows (see the module docstring).

        Raises:
            ValueError: a task, step, position or class outside its range, a missing or
                non-integer value, an evaluated task or step on a test-then-train row: naming
                the column, the value and the row.
        """
        y = _ints(y_true, names[0], layout.num_classes, row_offset, what="label")
        n = y.shape[0]
        p = _ints(y_pred, names[1], layout.num_classes, row_offset, n, what="prediction")
        tr = _ints(trained_task, "trained_task", layout.num_tasks, row_offset, n)
        ttt, pos = _positions(position, layout, row_offset, n)
        if evaluated_task is None:
            evaluated_task = np.full(n, None, dtype=object)
        ev = _ints(_only_off(evaluated_task, ttt, "evaluated_task", row_offset, n), "evaluated_task", layout.num_tasks, row_offset, n)
        if step is not None and ttt.any():
            step = _only_off(step, ttt, "step", row_offset, n, fill=None)
        h, final = _steps(step, layout.evaluations_per_task, row_offset, n)
        final &= ~ttt
        t, k, hh = layout.num_tasks, layout.num_classes, layout.evaluations_per_task
        w = None if counts is None else _counts(counts, n)
        hit = y == p
        any_ = ~final & ~ttt
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
        nw, win = layout.num_windows, pos // layout.eval_window_size
        ttt_cm = tally((win * k + y) * k + p, ttt, nw * k * k)
        ttt_tasks = tally(win * t + tr, ttt, nw * t)
        real = ttt if w is None else ttt & (w > 0)  # rows standing for no event do not move the end
        ttt_end = np.array([int(pos[real].max()) + 1 if real.any() else 0], np.int64)
        return cls(
            layout,
            {
                "correct": correct.reshape(t, t),
                "total": total.reshape(t, t),
                "anytime_correct": a_correct.reshape(t, hh, t),
                "anytime_total": a_total.reshape(t, hh, t),
                "class_cm": cm.reshape(t, k, k),
                "ttt_cm": ttt_cm.reshape(nw, k, k),
                "ttt_tasks": ttt_tasks.reshape(nw, t),
                "ttt_end": ttt_end,
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


def _null_mask(arr: np.ndarray) -> np.ndarray:
    if arr.dtype.kind == "f":
        return np.isnan(arr)
    if arr.dtype.kind == "O":
        return np.array([is_null(v) or (isinstance(v, (float, np.floating)) and np.isnan(v)) for v in arr], dtype=bool)
    return np.zeros(arr.shape[0], dtype=bool)


def _positions(position: Any, layout: ContinualLayout, row_offset: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``(ttt, pos)``: the mask of test-then-train rows (a position given) and (n,) positions (0 elsewhere)."""
    if position is None:
        return np.zeros(n, dtype=bool), np.zeros(n, np.intp)
    arr = as_array(position, "position", keep_nulls=True)
    if arr.shape[0] != n:
        raise ValueError(f"column 'position': {arr.shape[0]} rows, but the labels have {n}")
    ttt = ~_null_mask(arr)
    if ttt.any() and layout.max_instances == 0:
        i = int(np.flatnonzero(ttt)[0])
        v = arr[i]
        raise ValueError(invalid_value_message("position", v.item() if hasattr(v, "item") else v, row_offset + i,
                                               "test-then-train rows need max_instances > 0 (null marks an evaluation row)"))  # fmt: skip
    filled = arr.astype(object) if arr.dtype.kind == "O" else arr.copy()
    filled[~ttt] = 0
    return ttt, _ints(filled, "position", max(layout.max_instances, 1), row_offset, n)


def _only_off(values: Any, ttt: np.ndarray, column: str, row_offset: int, n: int, fill: Any = 0) -> Any:
    """``values`` with its entries on test-then-train rows (which must be null) set to ``fill``."""
    if not ttt.any():
        return values
    if isinstance(values, (int, np.integer)) and not isinstance(values, (bool, np.bool_)):
        values = np.full(n, int(values), dtype=np.int64)
    arr = as_array(values, column, keep_nulls=True)
    if arr.shape[0] != n:
        raise ValueError(f"column {column!r}: {arr.shape[0]} rows, but the labels have {n}")
    bad = ttt & ~_null_mask(arr)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        v = arr[i]
        raise ValueError(invalid_value_message(column, v.item() if hasattr(v, "item") else v, row_offset + i,
                                               f"a test-then-train row (a position given) has no {column.replace('_', ' ')} (null)"))  # fmt: skip
    out = arr.astype(object)
    out[ttt] = fill
    if fill is None and not (~ttt).any():
        return None
    return out


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


def _accuracy(cm: np.ndarray) -> np.ndarray:
    """Accuracy of (..., K, K) true x predicted counts (NaN without rows)."""
    return _ratio(np.trace(cm, axis1=-2, axis2=-1), cm.sum(axis=(-2, -1)))


def _kappa(cm: np.ndarray) -> np.ndarray:
    """Cohen's kappa of (..., K, K) counts: ``(p_o - p_e) / (1 - p_e)`` with ``p_e`` the chance
    agreement of the true and predicted class frequencies (NaN when ``p_e`` is 1 or no rows)."""
    n = cm.sum(axis=(-2, -1)).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        po = np.trace(cm, axis1=-2, axis2=-1) / n
        pe = (cm.sum(axis=-1) * cm.sum(axis=-2)).sum(axis=-1) / (n * n)
        return np.where((n > 0) & (pe < 1), (po - pe) / (1 - pe), np.nan)


@dataclass(frozen=True)
class ClassificationCounts:
    """True x predicted class counts of test-then-train rows, with CapyMOA's evaluator methods.

    ``confusion_matrix`` is (K, K) for :attr:`PrequentialResults.cumulative` and (n_windows, K, K)
    for :attr:`PrequentialResults.windowed`; ``accuracy()`` and ``kappa()`` are then a float and a
    list of floats (one per window), as CapyMOA's ``ClassificationEvaluator`` and
    ``ClassificationWindowedEvaluator``, but as fractions (MOA's are percentages)."""

    confusion_matrix: np.ndarray

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ClassificationCounts) and np.array_equal(self.confusion_matrix, other.confusion_matrix)

    __hash__ = None  # type: ignore[assignment]

    def _value(self, v: np.ndarray) -> Any:
        return float(v) if np.ndim(v) == 0 else [float(x) for x in v]

    def accuracy(self) -> Any:
        return self._value(_accuracy(self.confusion_matrix))

    def kappa(self) -> Any:
        return self._value(_kappa(self.confusion_matrix))

    @property
    def instances_seen(self) -> int:
        """The rows counted."""
        return int(self.confusion_matrix.sum())

    def metrics_dict(self) -> dict[str, Any]:
        """``{"instances", "accuracy", "kappa"}``."""
        return {"instances": self.instances_seen, "accuracy": self.accuracy(), "kappa": self.kappa()}


@dataclass(frozen=True)
class PrequentialResults:
    """Test-then-train results of the training stream, as CapyMOA's ``PrequentialResults``:
    ``cumulative`` (all rows) and ``windowed`` (each full window of ``window_size`` positions),
    :class:`ClassificationCounts` both; ``accuracy()`` / ``kappa()`` are the cumulative ones
    (CapyMOA delegates to ``cumulative`` too)."""

    window_size: int
    max_instances: int
    cumulative: ClassificationCounts
    windowed: ClassificationCounts

    def accuracy(self) -> float:
        return self.cumulative.accuracy()

    def kappa(self) -> float:
        return self.cumulative.kappa()

    def metrics_per_window(self) -> dict[str, list]:
        """``{"instances": [end position of each window], "accuracy": [...], "kappa": [...]}``."""
        w = self.windowed.confusion_matrix.shape[0]
        return {"instances": [(i + 1) * self.window_size for i in range(w)], "accuracy": self.windowed.accuracy(), "kappa": self.windowed.kappa()}

    def to_dict(self) -> dict[str, Any]:
        from mergeable_metrics.results.results import jsonable

        return {
            "window_size": self.window_size,
            "max_instances": self.max_instances,
            "cumulative": {k: jsonable(v) for k, v in self.cumulative.metrics_dict().items()},
            "windowed": {k: jsonable(v) for k, v in self.metrics_per_window().items()},
        }


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
        ttt: :class:`PrequentialResults` of the training stream (None without ``max_instances``).
        boundaries: (T + 1,) int64 position where each task starts, then the stream's end (None
            without ``max_instances``).
        ttt_windowed_task_index: (full windows,) CapyMOA's x axis of ``ttt.windowed`` in task
            units (None without ``max_instances``).
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
    ttt: PrequentialResults | None = None
    boundaries: np.ndarray | None = None
    ttt_windowed_task_index: np.ndarray | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: arrays as nested lists, NaN as None (``ttt``: :meth:`PrequentialResults.to_dict`)."""
        from mergeable_metrics.results.results import jsonable

        return {f.name: (self.ttt.to_dict() if f.name == "ttt" and self.ttt is not None else jsonable(getattr(self, f.name))) for f in fields(self)}


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


def _windowed_task_index(boundaries: np.ndarray, window_size: int) -> np.ndarray:
    """CapyMOA's ``_get_ttt_windowed_task_index``: each task's windows at ``linspace(t, t + 1, ...)``."""
    tasks = np.zeros(int(boundaries[-1]) // window_size)
    for task_id, (start, end) in enumerate(zip(boundaries[:-1], boundaries[1:])):
        win_start, win_end = int(start) // window_size, int(end) // window_size
        tasks[win_start:win_end] = np.linspace(task_id, task_id + 1, win_end - win_start)
    return tasks


def _ttt(state: ContinualState) -> tuple[PrequentialResults, np.ndarray, np.ndarray]:
    """``ttt``, ``boundaries`` and ``ttt_windowed_task_index`` of a state, after checking that the
    positions are 0..N-1 once each, in task order (as far as the counts can tell).

    Raises:
        ValueError: a position missing or repeated (the rows, the largest position + 1 and the
            windows' counts disagree), or a task's rows outside its boundaries."""
    lay, a = state.layout, state.arrays
    w, cm, tasks = lay.eval_window_size, a["ttt_cm"], a["ttt_tasks"]
    n, end = int(tasks.sum()), int(a["ttt_end"][0])
    if n != end:
        raise ValueError(
            f"test-then-train rows: {n} rows but positions up to {end - 1}: each position 0..{n - 1} must appear once (a position is missing or repeated)"
        )
    per_window = tasks.sum(axis=1)
    starts = np.arange(lay.num_windows) * w
    want = np.clip(n - starts, 0, w)
    if not np.array_equal(per_window, want):
        i = int(np.flatnonzero(per_window != want)[0])
        raise ValueError(
            f"test-then-train rows: window {i} (positions {i * w}..{(i + 1) * w - 1}) has {per_window[i]} rows, {want[i]} expected: a position is missing or repeated"
        )
    boundaries = np.concatenate([[0], np.cumsum(tasks.sum(axis=0))]).astype(np.int64)
    lo, hi = boundaries[:-1], boundaries[1:]
    overlap = np.clip(np.minimum(hi[None, :], starts[:, None] + w) - np.maximum(lo[None, :], starts[:, None]), 0, None)
    if not np.array_equal(overlap, tasks):
        i, t = (int(x) for x in np.argwhere(overlap != tasks)[0])
        raise ValueError(f"test-then-train rows: task {t} has {tasks[i, t]} rows in window {i}, {overlap[i, t]} expected from the boundaries "
                         f"{boundaries.tolist()}: each task's rows must be consecutive positions, tasks in training order")  # fmt: skip
    full = n // w
    windowed, cumulative = np.array(cm[:full]), cm.sum(axis=0)
    for arr in (windowed, cumulative, boundaries):
        arr.flags.writeable = False
    index = _windowed_task_index(boundaries, w)
    index.flags.writeable = False
    return PrequentialResults(w, lay.max_instances, ClassificationCounts(cumulative), ClassificationCounts(windowed)), boundaries, index


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
    ttt, boundaries, ttt_index = _ttt(state) if lay.max_instances else (None, None, None)
    return OCLMetrics(
        **values,
        class_cm=cm,
        task_index=np.arange(t) + 1,
        anytime_task_index=np.linspace(0, t, h * t + 1)[1:],
        n_tasks=t,
        n_classes=lay.num_classes,
        n_continual_evaluations=h,
        undefined=undefined,
        ttt=ttt,
        boundaries=boundaries,
        ttt_windowed_task_index=ttt_index,
    )


_CONTINUAL_KEYWORDS = ("trained_task", "evaluated_task", "y_true", "y_pred", "step", "position")


@public("mergeable_metrics")
class ContinualEvaluation:
    """Accuracy of a continual learner across ``num_tasks`` tasks, mergeable, in one state.

    Args:
        num_tasks: T >= 1 tasks, ids ``0..T-1`` in training order.
        num_classes: K >= 2 classes, ids ``0..K-1``.
        evaluations_per_task: H >= 0 anytime evaluations during each task's training
            (``step=0..H-1``); 0: only the evaluations after each task.
        max_instances: test-then-train rows of the training stream it may hold (positions
            ``0..max_instances-1``); 0 (default): none, and ``ttt`` / ``boundaries`` are None.
        eval_window_size: W, the window of ``ttt.windowed`` (CapyMOA's ``eval_window_size``,
            default 1000).

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

    def __init__(self, num_tasks: int, num_classes: int, evaluations_per_task: int = 0, max_instances: int = 0, eval_window_size: int = 1000):
        for name, v, lo, hi in (("num_tasks", num_tasks, 1, MAX_TASKS), ("num_classes", num_classes, 2, MAX_NUM_CLASSES),
                                ("evaluations_per_task", evaluations_per_task, 0, MAX_TASKS), ("max_instances", max_instances, 0, MAX_CONTINUAL_CELLS),
                                ("eval_window_size", eval_window_size, 1, MAX_CONTINUAL_CELLS)):  # fmt: skip
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not lo <= v <= hi:
                raise ValueError(f"{name} must be an int in [{lo}, {hi}], got {v!r}")
        self.layout = ContinualLayout(int(num_tasks), int(num_classes), int(evaluations_per_task), int(max_instances), int(eval_window_size))
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

    @property
    def max_instances(self) -> int:
        return self.layout.max_instances

    @property
    def eval_window_size(self) -> int:
        return self.layout.eval_window_size

    def update(
        self, trained_task: Any, evaluated_task: Any, y_true: Any = None, y_pred: Any = None, step: Any = None, position: Any = None, **unknown: Any
    ) -> None:
        """Fold one batch of events (see :meth:`ContinualState.from_events`): evaluations, or
        test-then-train rows of the training stream with their ``position`` (``evaluated_task``
        None): ``ev.update(task, None, y, y_pred, position=np.arange(i, i + len(y)))``.

        Other libraries' keywords (``preds=``, ``target=``, ...) are refused naming ours; nothing is folded."""
        _refuse_update_keywords(type(self).__name__, unknown, _CONTINUAL_KEYWORDS)
        for name, value in (("y_true", y_true), ("y_pred", y_pred)):
            if value is None:
                raise TypeError(f"{type(self).__name__}.update() missing required argument {name!r}")
        self._fold(ContinualState.from_events(self.layout, trained_task, evaluated_task, y_true, y_pred, step, self._rows, position=position))

    def _fold(self, part: ContinualState) -> None:
        with self._lock:
            self.state = self.state.merge(part)
            self._rows += _events(part)

    def fold_events(self, columns: Any, label_col: str = "label", prediction_col: str = "prediction") -> None:
        """Fold event rows given as columns (a dict, pandas DataFrame or Arrow table/batch) named
        :data:`EVENT_COLUMNS`, the true and predicted classes in ``label_col`` / ``prediction_col``
        (errors name them); ``step`` may be missing (every row an ``R`` evaluation) or null;
        ``position`` may be missing (no test-then-train rows) or null (an evaluation row);
        ``evaluated_task`` is null on test-then-train rows."""
        get = (lambda c: columns.column(c)) if hasattr(columns, "schema") else (lambda c: columns[c])
        names = list(columns.schema.names) if hasattr(columns, "schema") else list(columns.keys())
        want = ["trained_task", "step", "evaluated_task", label_col, prediction_col]
        missing = [c for c in want if c != "step" and c not in names]
        if missing:
            raise ValueError(f"continual events need columns {want}; missing {missing}")
        part = ContinualState.from_events(self.layout, get("trained_task"), get("evaluated_task"), get(label_col), get(prediction_col),
                                          get("step") if "step" in names else None, self._rows, names=(label_col, prediction_col),
                                          position=get("position") if "position" in names else None)  # fmt: skip
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
        out = cls(lay.num_tasks, lay.num_classes, lay.evaluations_per_task, lay.max_instances, lay.eval_window_size)
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
        ttt = f", max_instances={lay.max_instances}, eval_window_size={lay.eval_window_size}" if lay.max_instances else ""
        return f"ContinualEvaluation(num_tasks={lay.num_tasks}, num_classes={lay.num_classes}, evaluations_per_task={lay.evaluations_per_task}{ttt}; {_events(self.state)} events)"


def _events(state: ContinualState) -> int:
    """Events a state holds: evaluations (``R`` and anytime) and test-then-train rows."""
    a = state.arrays
    return int(a["total"].sum() + a["anytime_total"].sum() + a["ttt_tasks"].sum())


def _rebuild(data: bytes) -> ContinualEvaluation:
    return ContinualEvaluation.decode(data)
