"""Sufficient-statistic states: the cell states (example counts, binary confusion at thresholds, the K x K matrix), score distributions and their canonical binning, and the versioned codec of state bytes.

Imports ``inputs`` and ``_util``; a state kind knows nothing of the metrics computed from it.
"""

from mergeable_metrics.states.base import (  # noqa: E402
    BinaryConfusionLayout,
    BinaryConfusionState,
    ConfusionMatrixLayout,
    ConfusionMatrixState,
    ExampleCountLayout,
    ExampleCountState,
    State,
)
from mergeable_metrics.states.score_distribution import Class0ScoreDistributionState, ScoreDistributionLayout, ScoreDistributionState  # noqa: E402

__all__ = [
    "BinaryConfusionLayout", "BinaryConfusionState", "Class0ScoreDistributionState", "ConfusionMatrixLayout",
    "ConfusionMatrixState", "ExampleCountLayout", "ExampleCountState", "ScoreDistributionLayout",
    "ScoreDistributionState", "State",
]  # fmt: skip
