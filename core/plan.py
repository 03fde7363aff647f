"""Plans: a set of metrics compiled to the deduplicated tuple of states they need.

:class:`Plan` is the object both engines run: ``zero / fold / merge / compute / encode / decode``
over a tuple of states. Precision, recall, F1 and accuracy at one threshold share one
:class:`~core.states.BinaryConfusionState`; metrics at several thresholds share one state holding
all of them. :class:`MetricCollection` and :class:`BinaryMetrics` are the user-facing, stateful
wrappers (torchmetrics-style ``update`` / ``merge`` / ``compute``).
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

import numpy as np

from core import codec
from core._inputs import Batch, make_batch
from core.metrics import DEFAULT_METRICS, Interval, Metric, Task, resolve
from core.states import ExampleCountState, State


class Plan:
    """Metrics resolved for a task and compiled to their shared states.

    Args:
        metrics: metric strings (``"f1@macro"``) or :class:`~core.metrics.Metric` objects; None
            for the task's defaults (binary: accuracy, precision, recall, f1; multiclass: accuracy,
            macro precision/recall/F1 and weighted F1). Duplicate keys are computed once.
        task: the :class:`~core.metrics.Task`.

    Raises:
        ValueError: an unknown metric, bad metric parameters, or a metric not defined for the task.

    The first state is always the :class:`~core.states.ExampleCountState` (``n``, weight, skipped).
    """

    def __init__(self, metrics: Sequence[str | Metric] | None, task: Task):
        self.task = task
        if metrics is None:
            metrics = DEFAULT_METRICS[task.kind]
        if isinstance(metrics, (str, Metric)):
            metrics = [metrics]
        resolved: dict[str, Metric] = {}
        for m in metrics:
            r = resolve(m, task)
            resolved.setdefault(r.key, r)
        self.metrics: tuple[Metric, ...] = tuple(resolved.values())
        reqs: dict[type[State], list[Any]] = {ExampleCountState: []}
        for m in self.metrics:
            for cls, req in m.requires():
                reqs.setdefault(cls, []).append(req)
        self.state_types: tuple[tuple[type[State], Any], ...] = tuple(
            (cls, cls.layout_for(r, task)) for cls, r in reqs.items()
        )

    @property
    def keys(self) -> tuple[str, ...]:
        """Canonical metric strings, in request order (the names used in results)."""
        return tuple(m.key for m in self.metrics)

    def zero(self) -> tuple[State, ...]:
        """The identity tuple of states."""
        return tuple(cls.zero(layout) for cls, layout in self.state_types)

    def from_batch(self, batch: Batch) -> tuple[State, ...]:
        return tuple(cls.from_batch(layout, batch) for cls, layout in self.state_types)

    def fold(self, states: tuple[State, ...], batch: Batch) -> tuple[State, ...]:
        """Fold one validated batch into ``states`` (returns new states)."""
        if batch.n == 0:
            return states
        return self.merge(states, self.from_batch(batch))

    def merge(self, a: tuple[State, ...], b: tuple[State, ...]) -> tuple[State, ...]:
        """Fieldwise merge; raises ``ValueError`` naming the setting if configurations differ."""
        if len(a) != len(b):
            raise ValueError(f"cannot merge state tuples of different plans ({len(a)} vs {len(b)} states)")
        return tuple(x.merge(y) for x, y in zip(a, b))

    def merge_all(self, many: Iterable[tuple[State, ...]]) -> tuple[State, ...]:
        out = self.zero()
        for s in many:
            out = self.merge(out, s)
        return out

    def compute(self, states: tuple[State, ...]) -> dict[str, Any]:
        """Metric values from merged states: ``{metric key: float | np.ndarray}``."""
        return self.compute_with_intervals(states)[0]

    def compute_with_intervals(self, states: tuple[State, ...]) -> tuple[dict[str, Any], dict[str, tuple[float, float]]]:
        """``(values, intervals)``: values as :meth:`compute`; ``intervals[key] = (lower, upper)``
        for metrics that returned an :class:`~core.metrics.Interval` (approximate states)."""
        by_kind = {s.kind: s for s in states}
        values: dict[str, Any] = {}
        intervals: dict[str, tuple[float, float]] = {}
        for m in self.metrics:
            v = m.compute(by_kind)
            if isinstance(v, Interval):
                intervals[m.key] = (float(v.lower), float(v.upper))
                v = v.value
            values[m.key] = v
        return values, intervals

    def encode(self, states: tuple[State, ...]) -> bytes:
        return codec.encode_states(states)

    def decode(self, data: bytes) -> tuple[State, ...]:
        """Decode and check the states belong to this plan (``ValueError`` otherwise)."""
        states = codec.decode_states(data)
        self.check(states)
        return states

    def check(self, states: tuple[State, ...]) -> None:
        want = [(cls.kind, layout) for cls, layout in self.state_types]
        got = [(s.kind, s.layout) for s in states]
        if want != got:
            raise ValueError(f"states do not belong to this plan: expected {want}, got {got}")

    def describe(self) -> dict[str, Any]:
        """JSON-ready description of the task, metrics and states."""
        t = self.task
        return {
            "task": t.kind,
            "num_classes": t.num_classes,
            "threshold": t.threshold,
            "threshold_rule": t.threshold_rule,
            "zero_division": t.zero_division,
            "metrics": list(self.keys),
            "states": [f"{cls.kind} {layout}" for cls, layout in self.state_types],
        }


def _fmt_value(v: Any) -> str:
    if isinstance(v, np.ndarray):
        return np.array2string(v, precision=4, separator=", ")
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


class MetricCollection:
    """A set of metrics updated together, sharing their states.

    Args:
        *metrics: metric strings or :class:`~core.metrics.Metric` objects (none: task defaults).
        num_classes: None or 2 for binary tasks (labels in {0, 1}); K > 2 for multiclass
            (labels and predictions in [0, K)).
        threshold: default decision threshold for binary scores (``score >= threshold`` is
            positive with the default ``threshold_rule=">="``).
        threshold_rule: ``">="`` or ``">"``.
        zero_division: 0, 1, "nan" (our default) or "warn" (0.0 plus a warning), as scikit-learn.
        multiclass: treat ``num_classes=2`` as a multiclass task (both classes averaged).

    Example:
        >>> mc = MetricCollection("precision", "recall", "f1")
        >>> mc.update([1, 0, 1, 1], y_score=[0.9, 0.6, 0.4, 0.5])
        >>> {k: round(v, 4) for k, v in mc.compute().items()}
        {'precision': 0.6667, 'recall': 0.6667, 'f1': 0.6667}
    """

    def __init__(
        self,
        *metrics: str | Metric,
        num_classes: int | None = None,
        threshold: float = 0.5,
        threshold_rule: str = ">=",
        zero_division: Any = "nan",
        multiclass: bool = False,
    ):
        task = Task(num_classes or 2, threshold, threshold_rule, zero_division, multiclass)
        self.plan = Plan(list(metrics) or None, task)
        self.states = self.plan.zero()
        self._rows = 0

    @property
    def task(self) -> Task:
        return self.plan.task

    def update(self, y_true: Any, y_score: Any = None, y_pred: Any = None, sample_weight: Any = None) -> None:
        """Fold one batch.

        Args:
            y_true: (N,) labels: 0/1 (binary) or [0, K) ints; lists, numpy, pandas or Arrow.
            y_score: (N,) finite float scores (binary tasks; thresholded for predictions).
            y_pred: (N,) predicted labels (binary 0/1 or multiclass [0, K)).
            sample_weight: (N,) finite non-negative weights; None for 1.

        Raises:
            ValueError: length mismatch, out-of-range or NaN labels/predictions, NaN/inf scores,
                negative or NaN weights (naming column, value and row); binary tasks given neither
                scores nor predictions; multiclass tasks given no predictions.
            TypeError: non-numeric values.
        """
        if self.task.kind == "binary" and y_score is None and y_pred is None:
            raise ValueError("binary metrics need y_score or y_pred")
        if self.task.kind == "multiclass" and y_pred is None:
            raise ValueError("multiclass metrics need y_pred (predicted labels)")
        batch, _ = make_batch(
            num_classes=self.task.num_classes,
            y_true=y_true,
            y_score=y_score,
            y_pred=y_pred,
            sample_weight=sample_weight,
            row_offset=self._rows,
        )
        self.states = self.plan.fold(self.states, batch)
        self._rows += batch.n

    def merge(self, other: "MetricCollection") -> "MetricCollection":
        """Merge another collection's states into this one (returns self).

        Raises:
            ValueError: the other collection has a different configuration (names the setting).
        """
        self.states = self.plan.merge(self.states, other.states)
        self._rows += other._rows
        return self

    def reset(self) -> None:
        self.states = self.plan.zero()
        self._rows = 0

    def compute(self) -> dict[str, Any]:
        """``{metric key: value}``; scalars as float, per-class and matrices as numpy arrays."""
        return self.plan.compute(self.states)

    def encode(self) -> bytes:
        return self.plan.encode(self.states)

    def load(self, data: bytes) -> "MetricCollection":
        """Replace the states by decoded bytes from :meth:`encode` of an equal collection."""
        self.states = self.plan.decode(data)
        return self

    def __repr__(self) -> str:
        t = self.task
        head = f"{type(self).__name__}(task={t.kind}, num_classes={t.num_classes}, threshold={t.threshold:g} ({t.threshold_rule}), zero_division={t.zero_division})"
        values = self.compute()
        lines = [head, "├── states"]
        for i, s in enumerate(self.states):
            lines.append(f"│   {'└' if i == len(self.states) - 1 else '├'}── {s.summary()}")
        lines.append("└── metrics")
        for i, m in enumerate(self.plan.metrics):
            kinds = ", ".join(cls.kind for cls, _ in m.requires() if cls is not ExampleCountState) or "example_count"
            lines.append(f"    {'└' if i == len(self.plan.metrics) - 1 else '├'}── {m.key} = {_fmt_value(values[m.key])}  [{kinds}]")
        return "\n".join(lines)


class BinaryMetrics(MetricCollection):
    """Binary confusion metrics at one threshold: ``tp, fp, tn, fn, precision, recall, f1, accuracy``.

    Args:
        threshold: ``score >= threshold`` is predicted positive (``>`` with ``threshold_rule=">"``).
        zero_division: value for undefined ratios; default NaN (see :class:`MetricCollection`).
        threshold_rule: ``">="`` or ``">"``.

    Undefined values: precision with no predicted positives, recall with no positives, F1 with
    neither, and accuracy with no examples are NaN unless ``zero_division`` says otherwise
    (accuracy over no examples is always NaN). Merging collections of different thresholds raises
    ``ValueError``. Source: ``sklearn.metrics.precision_recall_fscore_support(average="binary")``.

    Example:
        >>> bm = BinaryMetrics(threshold=0.5)
        >>> bm.update([1, 0, 1, 0], [0.8, 0.7, 0.2, 0.1])
        >>> r = bm.compute()
        >>> r["tp"], r["fp"], r["tn"], r["fn"], r["precision"], r["accuracy"]
        (1.0, 1.0, 1.0, 1.0, 0.5, 0.5)
    """

    METRICS = ("tp", "fp", "tn", "fn", "precision", "recall", "f1", "accuracy")

    def __init__(self, threshold: float = 0.5, zero_division: Any = "nan", threshold_rule: str = ">="):
        super().__init__(*self.METRICS, threshold=threshold, threshold_rule=threshold_rule, zero_division=zero_division)

    def update(self, y_true: Any, y_score: Any, sample_weight: Any = None) -> None:  # type: ignore[override]
        """Fold a batch of (N,) labels in {0, 1}, (N,) finite scores, optional (N,) weights."""
        super().update(y_true, y_score=y_score, sample_weight=sample_weight)

    def compute(self) -> dict[str, float]:
        return {k: float(v) for k, v in super().compute().items()}
