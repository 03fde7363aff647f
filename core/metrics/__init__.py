"""Metrics by family, each a state kind's metrics: the Metric base, averaging and the registry of metric strings (``base``), classification, ranking, thresholds, calibration, regression, multilabel, top-k, retrieval and measures.

Imports ``states``, ``inputs`` and ``_util``.

The extension tier (``from mergeable_metrics.metrics import Metric, REGISTRY, Task, ...``): the
:class:`Metric` base and the :data:`REGISTRY` of metric strings, :class:`Averaging`, the
:class:`Task`, :func:`resolve` (a metric string -> a configured metric), the family bases
(:class:`RankingMetric`, :class:`MeanMeasure`), input formats (:func:`register_format`,
:func:`format_values` and :func:`validate_values` for one column) and the
families' state kinds; see ``docs/add_a_metric.md``. The cell states are
:mod:`mergeable_metrics.states`'.
"""

# importing the package registers every family's metrics and state kinds (the one place
# registration happens): base first, then the families in name order
from mergeable_metrics.metrics import base  # noqa: F401  (isort: skip)
from mergeable_metrics.metrics import (
    calibration,
    classification,
    measure,
    multilabel,
    ranking,
    regression,
    regression_quantiles,
    regression_terms,
    retrieval,
    thresholds,
    topk,
)  # noqa: F401, E402

# the extension tier: what a user needs to add a metric, an averaging or an input format
from mergeable_metrics.inputs.formats import FORMATS, InputFormat, format_values, register_format, validate_values  # noqa: E402
from mergeable_metrics.inputs.task import Task  # noqa: E402
from mergeable_metrics.metrics.base import REGISTRY, Averaging, Metric, UndefinedMetricWarning, resolve  # noqa: E402
from mergeable_metrics.metrics.calibration import CalibrationBinsState, ProbabilitySumsState  # noqa: E402
from mergeable_metrics.metrics.measure import MeanMeasure, MeanMeasureState  # noqa: E402
from mergeable_metrics.metrics.multilabel import MultilabelState  # noqa: E402
from mergeable_metrics.metrics.ranking import RankingMetric  # noqa: E402
from mergeable_metrics.metrics.regression import RegressionMomentsState  # noqa: E402
from mergeable_metrics.metrics.topk import TopKState  # noqa: E402

__all__ = [
    "Averaging", "CalibrationBinsState", "FORMATS", "InputFormat", "MeanMeasure", "MeanMeasureState", "Metric",
    "MultilabelState", "ProbabilitySumsState", "REGISTRY", "RankingMetric", "RegressionMomentsState", "Task",
    "TopKState", "UndefinedMetricWarning", "format_values", "register_format", "resolve", "validate_values",
]  # fmt: skip
