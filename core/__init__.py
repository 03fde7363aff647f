"""mergeable-metrics core: engine-free states, metrics, registry, plans, slicing, codec, results.

Imports numpy only (never apache_beam or pyspark).
"""

from core.evaluation import Evaluation, extract_columns
from core.metrics import REGISTRY, Metric, Task, UndefinedMetricWarning, resolve
from core.plan import BinaryMetrics, MetricCollection, Plan
from core.results import Results, SliceResult
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

__all__ = [
    "BinaryConfusionLayout",
    "BinaryConfusionState",
    "BinaryMetrics",
    "ConfusionMatrixLayout",
    "ConfusionMatrixState",
    "Evaluation",
    "ExampleCountLayout",
    "ExampleCountState",
    "Metric",
    "MetricCollection",
    "Plan",
    "REGISTRY",
    "Results",
    "SliceResult",
    "SliceSpec",
    "State",
    "Task",
    "UndefinedMetricWarning",
    "extract_columns",
    "resolve",
]
