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

:class:`Evaluation`'s options are one table, :data:`core.options.OPTIONS`.
"""

from core.aggregation import Aggregator, aggregate
from core.evaluation import Evaluation, extract_columns
from core.metrics import REGISTRY, Averaging, Metric, Task, UndefinedMetricWarning, resolve
from core.plan import BinaryMetrics, MetricCollection, Plan
from core.ranking import RankingMetric  # registers roc_auc, average_precision, curves, ...
from core.results import Results, SliceResult
from core.score_distribution import Class0ScoreDistributionState, ScoreDistributionLayout, ScoreDistributionState
from core.slicing import SliceSpec
from core.states import (
    BinaryConfusionLayout,
    BinaryConfusionState,
    ConfusionMatrixLayout,
    ConfusionMatrixState,
    ExampleCountLayout,
    ExampleCountState,
    State,
)

# metric families (importing them registers their metrics and state kinds)
from core import calibration, classification, formats, measure, multilabel, regression, regression_quantiles, regression_terms, retrieval, thresholds, topk  # noqa: E402,F401
from core.calibration import CalibrationBinsState, ProbabilitySumsState  # noqa: E402
from core.formats import FORMATS, InputFormat, register_format  # noqa: E402
from core.measure import MeanMeasure, MeanMeasureState  # noqa: E402
from core.tracker import SingleMetric, merge  # noqa: E402
from core.multilabel import MultilabelState  # noqa: E402
from core.regression import RegressionMomentsState  # noqa: E402
from core.topk import TopKState  # noqa: E402
from core.continual import ContinualEvaluation, ContinualState, OCLMetrics  # noqa: E402
from core.prequential import PrequentialEvaluation, PrequentialResults  # noqa: E402
from core.windows import TimeWindows, WindowedEvaluation  # noqa: E402

__all__ = [
    "Aggregator",
    "Averaging",
    "aggregate",
    "FORMATS",
    "BinaryConfusionLayout",
    "BinaryConfusionState",
    "CalibrationBinsState",
    "InputFormat",
    "MeanMeasure",
    "MeanMeasureState",
    "SingleMetric",
    "MultilabelState",
    "ProbabilitySumsState",
    "RegressionMomentsState",
    "TopKState",
    "register_format",
    "BinaryMetrics",
    "ContinualEvaluation",
    "ContinualState",
    "OCLMetrics",
    "PrequentialEvaluation",
    "PrequentialResults",
    "TimeWindows",
    "WindowedEvaluation",
    "ConfusionMatrixLayout",
    "ConfusionMatrixState",
    "Evaluation",
    "ExampleCountLayout",
    "ExampleCountState",
    "Metric",
    "MetricCollection",
    "Plan",
    "REGISTRY",
    "RankingMetric",
    "Results",
    "Class0ScoreDistributionState",
    "ScoreDistributionLayout",
    "ScoreDistributionState",
    "SliceResult",
    "SliceSpec",
    "State",
    "Task",
    "UndefinedMetricWarning",
    "extract_columns",
    "merge",
    "resolve",
]
