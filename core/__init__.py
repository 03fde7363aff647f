"""mergeable-metrics core: engine-free states, metrics, registry, plans, slicing, codec, results.

Imports numpy only (never apache_beam or pyspark).

Merging, one convention: an object you ``update`` (``MetricCollection``, ``BinaryMetrics``,
``SingleMetric``, ``ContinualEvaluation``) merges ``other`` into itself in place and returns
itself (``for w in workers: total.merge(w)``; ``c = a.merge(b)`` is ``a``); values passed around
are immutable to ``merge``, which returns a new value and leaves both inputs unchanged
(``state.merge(other)``, ``plan.merge(a, b)``, ``evaluation.merge(a, b)``,
``profiler.merge(a, b)``, ``profile.merge(other)``); ``merge_into`` merges into its first
argument (or ``self``) in place and returns it, where engines merge many partial results into one
(``evaluation.merge_into(a, b)``, ``profiler.merge_into(a, b)``, ``profile.merge_into(other)``;
states have none). The module-level :func:`merge` ``(a, b, ...)`` returns a new object of any of
these and leaves its inputs unchanged. ``fold`` of an accumulator (``evaluation.fold(acc, batch)``,
``profiler.fold``) mutates and returns it.

:class:`Evaluation`'s options are one table, :data:`mergeable_metrics.evaluation.options.OPTIONS`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

#: every public name and the module that defines it; imported on first use (PEP 562), so that
#: ``import mergeable_metrics.pipelines.pytest_plugin`` (loaded by pytest at start-up) and the
#: adapters' light modules import no numpy until a name is used
_EXPORTS: dict[str, str] = {
    "Aggregator": "mergeable_metrics.aggregation",
    "Averaging": "mergeable_metrics.metrics.base",
    "aggregate": "mergeable_metrics.aggregation",
    "FORMATS": "mergeable_metrics.inputs.formats",
    "BinaryConfusionLayout": "mergeable_metrics.states.base",
    "BinaryConfusionState": "mergeable_metrics.states.base",
    "CalibrationBinsState": "mergeable_metrics.metrics.calibration",
    "InputFormat": "mergeable_metrics.inputs.formats",
    "MeanMeasure": "mergeable_metrics.metrics.measure",
    "MeanMeasureState": "mergeable_metrics.metrics.measure",
    "SingleMetric": "mergeable_metrics.collection.tracker",
    "MultilabelState": "mergeable_metrics.metrics.multilabel",
    "ProbabilitySumsState": "mergeable_metrics.metrics.calibration",
    "RegressionMomentsState": "mergeable_metrics.metrics.regression",
    "TopKState": "mergeable_metrics.metrics.topk",
    "register_format": "mergeable_metrics.inputs.formats",
    "BinaryMetrics": "mergeable_metrics.collection.plan",
    "ContinualEvaluation": "mergeable_metrics.time.continual",
    "ContinualState": "mergeable_metrics.time.continual",
    "OCLMetrics": "mergeable_metrics.time.continual",
    "PrequentialEvaluation": "mergeable_metrics.time.prequential",
    "PrequentialResults": "mergeable_metrics.time.prequential",
    "TimeWindows": "mergeable_metrics.time.windows",
    "WindowedEvaluation": "mergeable_metrics.time.windows",
    "ConfusionMatrixLayout": "mergeable_metrics.states.base",
    "ConfusionMatrixState": "mergeable_metrics.states.base",
    "Evaluation": "mergeable_metrics.evaluation.evaluation",
    "ExampleCountLayout": "mergeable_metrics.states.base",
    "ExampleCountState": "mergeable_metrics.states.base",
    "Metric": "mergeable_metrics.metrics.base",
    "MetricCollection": "mergeable_metrics.collection.plan",
    "Plan": "mergeable_metrics.collection.plan",
    "REGISTRY": "mergeable_metrics.metrics.base",
    "RankingMetric": "mergeable_metrics.metrics.ranking",
    "Results": "mergeable_metrics.results.results",
    "Class0ScoreDistributionState": "mergeable_metrics.states.score_distribution",
    "ScoreDistributionLayout": "mergeable_metrics.states.score_distribution",
    "ScoreDistributionState": "mergeable_metrics.states.score_distribution",
    "SliceResult": "mergeable_metrics.results.results",
    "SliceSpec": "mergeable_metrics.slicing.assign",
    "State": "mergeable_metrics.states.base",
    "Task": "mergeable_metrics.metrics.base",
    "UndefinedMetricWarning": "mergeable_metrics.metrics.base",
    "extract_columns": "mergeable_metrics.evaluation.evaluation",
    "merge": "mergeable_metrics.collection.tracker",
    "resolve": "mergeable_metrics.metrics.base",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'mergeable_metrics' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


if TYPE_CHECKING:  # static type checkers and IDEs see the eager imports
    from mergeable_metrics.aggregation import Aggregator, aggregate  # noqa: F401
    from mergeable_metrics.collection.plan import BinaryMetrics, MetricCollection, Plan  # noqa: F401
    from mergeable_metrics.collection.tracker import SingleMetric, merge  # noqa: F401
    from mergeable_metrics.evaluation.evaluation import Evaluation, extract_columns  # noqa: F401
    from mergeable_metrics.inputs.formats import FORMATS, InputFormat, register_format  # noqa: F401
    from mergeable_metrics.metrics.base import Averaging, Metric, REGISTRY, Task, UndefinedMetricWarning, resolve  # noqa: F401
    from mergeable_metrics.metrics.calibration import CalibrationBinsState, ProbabilitySumsState  # noqa: F401
    from mergeable_metrics.metrics.measure import MeanMeasure, MeanMeasureState  # noqa: F401
    from mergeable_metrics.metrics.multilabel import MultilabelState  # noqa: F401
    from mergeable_metrics.metrics.ranking import RankingMetric  # noqa: F401
    from mergeable_metrics.metrics.regression import RegressionMomentsState  # noqa: F401
    from mergeable_metrics.metrics.topk import TopKState  # noqa: F401
    from mergeable_metrics.results.results import Results, SliceResult  # noqa: F401
    from mergeable_metrics.slicing.assign import SliceSpec  # noqa: F401
    from mergeable_metrics.states.base import BinaryConfusionLayout, BinaryConfusionState, ConfusionMatrixLayout, ConfusionMatrixState, ExampleCountLayout, ExampleCountState, State  # noqa: F401
    from mergeable_metrics.states.score_distribution import Class0ScoreDistributionState, ScoreDistributionLayout, ScoreDistributionState  # noqa: F401
    from mergeable_metrics.time.continual import ContinualEvaluation, ContinualState, OCLMetrics  # noqa: F401
    from mergeable_metrics.time.prequential import PrequentialEvaluation, PrequentialResults  # noqa: F401
    from mergeable_metrics.time.windows import TimeWindows, WindowedEvaluation  # noqa: F401
