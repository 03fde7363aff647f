"""One metric tracked over batches: :class:`SingleMetric` (OnlineMetrics' ``Metric``), and
:func:`merge` (OnlineMetrics' ``merge(metrics...)``): a new object merging any number of them.

A :class:`~mergeable_metrics.collection.plan.MetricCollection` of one metric whose :meth:`~SingleMetric.compute` is the
metric's value itself (a float, or an array for per-class metrics), not a one-key dict, with a
display ``name`` and a one-line ``repr`` of the value and the counts it comes from.
"""

from __future__ import annotations

import copy
from typing import Any


from mergeable_metrics._util.public import public
from mergeable_metrics.metrics.base import Metric
from mergeable_metrics.collection.plan import MetricCollection, show_metric

__all__ = ["SingleMetric", "merge"]


@public("mergeable_metrics")
class SingleMetric(MetricCollection):
    """One metric updated over batches; :meth:`compute` returns its value.

    Args:
        metric: a metric string (``"f1@macro"``, ``"precision@none"``), a
            :class:`~mergeable_metrics.metrics.base.Metric` or a :class:`~mergeable_metrics.metrics.measure.MeanMeasure`.
        name: the display name (default: the metric's key).
        **options: the task options of :class:`~mergeable_metrics.collection.plan.MetricCollection` (``num_classes``,
            ``threshold``, ``task``, ``formats``, ...).

    ``update``, ``merge`` (in place, returns this tracker; :func:`merge` gives a new one),
    ``reset``, ``encode`` and ``decode`` (a new tracker of decoded bytes) are the collection's
    (merging trackers of another configuration raises ``ValueError`` naming the setting).

    Example:
        >>> m = SingleMetric("accuracy", name="My Accuracy Metric")
        >>> m.update([0, 1, 1, 1], y_pred=[0, 1, 0, 1])
        >>> m.compute()
        0.75
        >>> m
        My Accuracy Metric: value=0.75 | correct=3 | n=4
    """

    def __init__(self, metric: "str | Metric | Any", *, name: str | None = None, **options: Any):
        if isinstance(metric, (list, tuple)):
            raise TypeError("SingleMetric tracks one metric: use MetricCollection for several")
        super().__init__(metric, **options)
        self.name = name if name is not None else self.metric.key

    @property
    def metric(self) -> Metric:
        """The configured metric."""
        return self.plan.metrics[0]

    def compute(self) -> Any:
        """The metric's value: a float, or a numpy array for per-class metrics (NaN where
        undefined, with an :class:`~mergeable_metrics.metrics.base.UndefinedMetricWarning`)."""
        return super().compute()[self.metric.key]

    def counts(self) -> dict[str, Any]:
        """The counts the value is computed from (see :meth:`mergeable_metrics.metrics.base.Metric.counts`)."""
        return self.metric.counts({s.kind: s for s in self.states})

    def __repr__(self) -> str:
        value = self.plan.compute_with_bounds(self.states, warn=False)[0][self.metric.key]
        return show_metric(self.name, value, self.counts())


@public("mergeable_metrics")
def merge(*objects: Any) -> Any:
    """A new object holding every one of ``objects`` merged; the inputs are left unchanged
    (OnlineMetrics' ``merge(metrics...)``): ``merge(m1, m2)``, ``merge(*workers)``.

    Objects you ``update`` (:class:`~mergeable_metrics.collection.plan.MetricCollection`, :class:`~mergeable_metrics.collection.plan.BinaryMetrics`,
    :class:`SingleMetric`, :class:`~mergeable_metrics.time.continual.ContinualEvaluation`: their ``merge`` works in
    place) are copied first and the others merged into the copy; values (states,
    :class:`~mergeable_metrics.evaluation.profile.SliceProfile`, ...: their ``merge`` returns a new value) are merged
    pairwise. One object: a copy of it.

    Raises:
        TypeError: no object, an object without ``merge`` (an :class:`~mergeable_metrics.evaluation.accumulator.Accumulator`
            merges with its evaluation: ``evaluation.merge(a, b)``), or objects of different types.
        ValueError: objects of different configurations (naming the setting).
    """
    if not objects:
        raise TypeError("merge() needs at least one object to merge")
    first = objects[0]
    if not callable(getattr(first, "merge", None)):
        raise TypeError(
            f"merge() merges objects with a merge method (collections, trackers, states, profiles), got {type(first).__name__}"
            "; accumulators merge with the evaluation that made them: evaluation.merge(a, b)"
        )
    if getattr(type(first), "MERGES_IN_PLACE", False):
        out = copy.copy(first)  # its own lock and reference to the immutable states
        for other in objects[1:]:
            out.merge(other)
        return out
    if len(objects) == 1:
        return copy.deepcopy(first)
    out = first
    for other in objects[1:]:
        out = out.merge(other)  # pure: a new value each time
    return out
