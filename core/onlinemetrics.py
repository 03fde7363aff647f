"""OnlineMetrics' constructors, defaults and functions (``from mergeable_metrics import onlinemetrics as om``).

For users of OnlineMetrics.jl: each constructor returns a
:class:`~mergeable_metrics.SingleMetric` configured with OnlineMetrics' defaults, so that
``om.Precision(2)`` gives what OnlineMetrics' ``Precision(2)`` gives (macro-averaged), where the
metric string ``"precision"`` keeps scikit-learn's default (binary, the positive class only).

=====================================  ==================================================  ===============
OnlineMetrics                          here                                                default
=====================================  ==================================================  ===============
``Accuracy(n)``                        ``SingleMetric("accuracy")``                         --
``Precision(n; agg=:macro)``           ``"precision@macro"`` (``agg``: macro, micro, None)   macro
``Recall(n; agg=:macro)``              ``"recall@macro"``                                   macro
``F1Score(n; agg=:macro)``             ``"f1@macro"``                                       macro
``IoU(n)``                             ``"iou@none"``: per class (``agg`` as above)          per class
``mIoU(n)`` / ``MIoU(n)``              ``"miou"``: the mean of the per-class IoUs            --
``ConfusionMatrix(n)``                 ``"confusion_matrix@rows=predicted"``                 rows = predictions
``AverageMeasure(measure, name)``      :class:`~mergeable_metrics.metrics.MeanMeasure`       batch-size weighted
``MetricCollection(m1, m2, ...)``      one :class:`~mergeable_metrics.MetricCollection`      --
``step!(m, ŷ, y)``                     ``m.update(y, y_pred=ŷ)`` or :func:`step`             --
``value(m)``                           ``m.compute()`` or :func:`value`                      --
``merge(m1, m2, ...)``                 :func:`merge`                                         --
``one_hot`` / data formats             :func:`format`, :func:`validate`                      --
=====================================  ==================================================  ===============

Two differences, both documented in ``docs/onlinemetrics.md``: an undefined ratio is NaN (or
``zero_division``), where OnlineMetrics adds ``eps`` to both sides (its ``value`` before any step
is 0.0 for accuracy, 1.0 for precision); :meth:`~mergeable_metrics.SingleMetric.update` takes
scikit-learn's order (``y_true`` first), while :func:`step` keeps OnlineMetrics' (``y_pred``
first).
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any, Callable

import numpy as np

from mergeable_metrics.collection.plan import MetricCollection as _Collection
from mergeable_metrics.collection.tracker import SingleMetric, merge
from mergeable_metrics.inputs.formats import format_values, validate_values
from mergeable_metrics.metrics.measure import MeanMeasure, MeanMeasureMetric
from mergeable_metrics.states.base import State, _layout_diff

__all__ = [
    "Accuracy", "AverageMeasure", "ConfusionMatrix", "F1Score", "IoU", "MIoU", "MetricCollection", "Precision", "Recall",
    "format", "mIoU", "merge", "step", "validate", "value",
]  # fmt: skip

#: OnlineMetrics' ``agg`` values -> our averages (``None`` / ``"nothing"``: per class)
_AGG = {"macro": "macro", "micro": "micro", None: "none", "none": "none", "nothing": "none"}


def _classes(nclasses: int) -> dict[str, Any]:
    """The task of an ``nclasses``-class metric: multiclass semantics for 2 classes too (every
    class is averaged, as OnlineMetrics does)."""
    if isinstance(nclasses, bool) or not isinstance(nclasses, (int, np.integer)) or nclasses < 2:
        raise ValueError(f"nclasses must be an integer >= 2, got {nclasses!r}")
    return {"num_classes": int(nclasses), "multiclass": True}


def _agg(agg: Any, what: str) -> str:
    key = agg.lstrip(":").lower() if isinstance(agg, str) else agg
    if key not in _AGG:
        raise ValueError(f"{what}: agg must be 'macro', 'micro' or None (per class), got {agg!r}")
    return _AGG[key]


def Accuracy(nclasses: int = 2, *, name: str = "accuracy", **options: Any) -> SingleMetric:
    """OnlineMetrics' ``Accuracy(nclasses)``: ``correct / n``.

    Example:
        >>> m = Accuracy(2)
        >>> m.update([0, 1, 1, 1], y_pred=[0, 1, 0, 1])  # scikit-learn's order: true labels first
        >>> m
        accuracy: value=0.75 | correct=3 | n=4
    """
    return SingleMetric("accuracy", name=name, **_classes(nclasses), **options)


def Precision(nclasses: int, *, agg: Any = "macro", name: str = "precision", **options: Any) -> SingleMetric:
    """OnlineMetrics' ``Precision(nclasses; agg=:macro)``: ``tp / (tp + fp)`` per class, then
    ``agg``: ``"macro"`` (default: the mean over classes), ``"micro"`` (pooled counts) or None
    (the per-class values)."""
    return SingleMetric(f"precision@{_agg(agg, 'Precision')}", name=name, **_classes(nclasses), **options)


def Recall(nclasses: int, *, agg: Any = "macro", name: str = "recall", **options: Any) -> SingleMetric:
    """OnlineMetrics' ``Recall(nclasses; agg=:macro)``: ``tp / (tp + fn)`` per class, then ``agg``
    (see :func:`Precision`)."""
    return SingleMetric(f"recall@{_agg(agg, 'Recall')}", name=name, **_classes(nclasses), **options)


def F1Score(nclasses: int, *, agg: Any = "macro", name: str = "f1", **options: Any) -> SingleMetric:
    """``F1Score(nclasses; agg=:macro)``: the per-class F1 ``2 tp / (2 tp + fp + fn)``, then ``agg``
    (see :func:`Precision`; macro: the mean of the per-class F1s, as scikit-learn's ``f1_score(average="macro")``)."""
    return SingleMetric(f"f1@{_agg(agg, 'F1Score')}", name=name, **_classes(nclasses), **options)


def IoU(nclasses: int, *, agg: Any = None, name: str = "IoU", **options: Any) -> SingleMetric:
    """``IoU(nclasses)``: intersection over union ``tp / (tp + fp + fn)`` per class (the default,
    an (nclasses,) array); ``agg="macro"`` is :func:`mIoU`, ``"micro"`` pools the counts."""
    return SingleMetric(f"iou@{_agg(agg, 'IoU')}", name=name, **_classes(nclasses), **options)


def mIoU(nclasses: int, *, name: str = "mIoU", **options: Any) -> SingleMetric:
    """``mIoU(nclasses)`` (OnlineMetrics' ``MIoU``): the mean over classes of the per-class IoU.

    Example:
        >>> m = mIoU(2)
        >>> m.update([0, 0, 1, 1], y_pred=[0, 0, 1, 0])
        >>> m
        mIoU: value=0.583333 | intersection=[2, 1] | union=[3, 2]
    """
    return SingleMetric("miou", name=name, **_classes(nclasses), **options)


#: OnlineMetrics' older spelling
MIoU = mIoU


def ConfusionMatrix(nclasses: int, *, name: str = "confusion_matrix", **options: Any) -> SingleMetric:
    """OnlineMetrics' ``ConfusionMatrix(nclasses)`` in its orientation: rows are predictions,
    columns true labels (``"confusion_matrix@rows=predicted"``; the metric string
    ``"confusion_matrix"`` keeps scikit-learn's rows = true labels). Weighted counts, float64."""
    return SingleMetric("confusion_matrix@rows=predicted", name=name, **_classes(nclasses), **options)


class _PredictionFirst:
    """``fn(y_pred, y_true)`` (OnlineMetrics' argument order) called as ``(y_true, y_pred)``."""

    def __init__(self, fn: Callable[..., Any]):
        self.fn = fn

    def __call__(self, y_true: Any, y_pred: Any) -> Any:
        return self.fn(y_pred, y_true)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _PredictionFirst) and other.fn == self.fn

    def __hash__(self) -> int:
        return hash(self.fn)


def AverageMeasure(measure: Callable[..., Any], name: str, **options: Any) -> SingleMetric:
    """OnlineMetrics' ``AverageMeasure(measure, name)``: the mean of ``measure(y_pred, y_true)``
    (its argument order) over mini-batches, each batch weighted by its size (a per-sample
    function, one value per row, gives the same mean). ``options``: the task options
    (default ``task="regression"``: the inputs are read as numbers).

    Example:
        >>> loss = AverageMeasure(lambda p, y: float(np.mean(np.abs(p - y))), "mae")
        >>> s = step(loss, [1.5, 2.0], [1.0, 2.0])
        >>> s = step(loss, [3.0], [0.0], s)
        >>> round(value(loss, s), 6)
        1.166667
    """
    options.setdefault("task", "regression")
    return SingleMetric(MeanMeasure(_PredictionFirst(measure), name=name), **options)


def MetricCollection(*metrics: SingleMetric, prefix: str = "") -> _Collection:
    """OnlineMetrics' ``MetricCollection(metrics...; prefix="")``: one
    :class:`~mergeable_metrics.MetricCollection` of the trackers' metrics, keyed by their names
    (with ``prefix``), whose metrics share their states (one confusion matrix for accuracy,
    precision and mIoU). Its ``repr`` is a tree with each metric's value and counts.

    Raises:
        TypeError: an argument that is not a tracker made here (or a :class:`~mergeable_metrics.SingleMetric`).
        ValueError: trackers of different task settings (naming the setting), or two of one name.
    """
    if not metrics:
        raise TypeError("MetricCollection needs at least one metric, e.g. MetricCollection(Accuracy(2), Precision(2))")
    for m in metrics:
        if not isinstance(m, SingleMetric):
            raise TypeError(f"MetricCollection takes trackers (Accuracy(2), Precision(2), ...), got {type(m).__name__}")
    # averaged measures read the raw inputs (their function does): any task; the others share one
    others = [m for m in metrics if not isinstance(m.metric, MeanMeasureMetric)]
    first = (others or list(metrics))[0]
    for m in others[1:]:
        if m.task != first.task:
            setting = next(f.name for f in dataclasses.fields(m.task) if getattr(m.task, f.name) != getattr(first.task, f.name))
            raise ValueError(
                f"MetricCollection: {m.name!r} has {setting}={getattr(m.task, setting)!r} where {first.name!r} has {setting}={getattr(first.task, setting)!r}"
            )
        if m.formats != first.formats or m.classes != first.classes:
            raise ValueError(f"MetricCollection: {m.name!r} reads other input formats or classes than {first.name!r}")
    names = [prefix + m.name for m in metrics]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"MetricCollection: two metrics named {dup[0]!r}; give one a name=")
    extra = {} if first.classes is None else {"classes": list(first.classes)}
    specs = [
        MeanMeasure(getattr(m.metric, "fn", None), name=n) if isinstance(m.metric, MeanMeasureMetric) else m.metric.named(n) for m, n in zip(metrics, names)
    ]
    return _Collection(*specs, task=first.task, formats=first.formats, **extra)


def step(metric: Any, y_pred: Any, y_true: Any, state: Any = None, **inputs: Any) -> tuple[State, ...]:
    """The functional form of OnlineMetrics' ``step!(metric, ŷ, y)``: the state after folding one
    batch into ``state`` (None: the metric's empty state), as a new value; ``metric`` (a tracker
    or a collection, used for its configuration) and ``state`` are left unchanged.
    ``inputs``: ``sample_weight=``, ``y_score=`` (scores instead of ``y_pred``), ``measure=``.

    The state is a tuple of immutable :class:`~mergeable_metrics.states.base.State` values:
    merge two with ``metric.plan.merge(a, b)``, read the value with :func:`value`, send it as
    bytes with ``metric.plan.encode(state)`` / ``metric.plan.decode(data)``.

    Example:
        >>> m = Precision(2)
        >>> s = step(m, [0, 1, 1, 0], [0, 1, 0, 0])
        >>> value(m, s), m.compute() != m.compute()  # m itself is still empty (NaN)
        (0.75, True)
    """
    if not isinstance(metric, _Collection):
        raise TypeError(f"step() takes a tracker or a MetricCollection, got {type(metric).__name__}")
    work = copy.copy(metric)  # its own lock; the configuration is shared, the states are values
    work.states = metric.plan.zero() if state is None else _checked(metric, state)
    work.update(y_true, y_pred=y_pred, **inputs)
    return work.states


def value(metric: Any, state: Any = None) -> Any:
    """OnlineMetrics' ``value(metric)``: the value of ``state`` (a :func:`step` result; None: the
    metric's own states): a tracker's value, or a collection's ``{name: value}``.

    Raises:
        ValueError: a state of other kinds or of another configuration than ``metric``'s
            (naming the setting), also in :func:`step`.
    """
    if not isinstance(metric, _Collection):
        raise TypeError(f"value() takes a tracker or a MetricCollection, got {type(metric).__name__}")
    if state is None:
        return metric.compute()
    work = copy.copy(metric)
    work.states = _checked(metric, state)
    return work.compute()


def _checked(metric: _Collection, state: Any) -> tuple[State, ...]:
    """``state`` as a tuple, checked to be ``metric``'s state kinds and layouts.

    Raises:
        ValueError: other kinds, or a layout of another configuration (naming the setting).
    """
    states = tuple(state)
    want = metric.plan.state_types
    if len(states) != len(want) or any(type(st) is not cls for st, (cls, _) in zip(states, want)):
        got = [getattr(st, "kind", type(st).__name__) for st in states]
        raise ValueError(f"states of kinds {got} do not belong to this metric's plan {[c.kind for c, _ in want]}")
    for st, (cls, layout) in zip(states, want):
        if st.layout != layout:
            raise ValueError(f"{cls.kind} state of another configuration: {_layout_diff(layout, st.layout)}")
    return states


def format(values: Any, to: str | None = "onehot", fmt: str | None = None, *, num_classes: int = 2, role: str = "target", column: str = "values") -> Any:
    """A column in another data format (OnlineMetrics' ``one_hot`` / ``onecold``): ``values`` read
    in ``fmt`` (None: the default for the shape; an (N, 1) column holds class indices), validated,
    returned as ``to``: ``"onehot"`` (default, (N, K) int64), ``"labels"`` ((N,) class indices) or
    ``"scores"`` (role ``"score"``). See :func:`mergeable_metrics.metrics.format_values`.

    Example:
        >>> format([[1], [0], [2]], num_classes=3).tolist()
        [[0, 1, 0], [1, 0, 0], [0, 0, 1]]
        >>> format([[0, 0, 1], [0, 1, 0]], "labels", num_classes=3).tolist()
        [2, 1]
    """
    return format_values(values, to, fmt, num_classes=num_classes, role=role, column=column)


def validate(values: Any, fmt: str | None = None, *, num_classes: int = 2, role: str = "target", column: str = "values") -> None:
    """Check a column against a data format (``"labels"``, ``"onehot"``, ``"probabilities"``,
    ...; None: the default for its shape) without folding it. See
    :func:`mergeable_metrics.metrics.validate_values`.

    Raises:
        ValueError: the first invalid value, naming the column, the value and its row.
    """
    validate_values(values, fmt, num_classes=num_classes, role=role, column=column)
