"""Metrics by family, each a state kind's metrics: the Metric base, averaging and the registry of metric strings (``base``), classification, ranking, thresholds, calibration, regression, multilabel, top-k, retrieval and measures.

Imports ``states``, ``inputs`` and ``_util``.
"""

# importing the package registers every family's metrics and state kinds (the one place
# registration happens): base first, then the families in name order
from mergeable_metrics.metrics import base  # noqa: F401  (isort: skip)
from mergeable_metrics.metrics import calibration, classification, measure, multilabel, ranking, regression, regression_quantiles, regression_terms, retrieval, thresholds, topk  # noqa: F401, E402
