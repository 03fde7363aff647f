"""The joint confusion state of two models folded over the same rows (``baseline_score_col``).

:class:`PairedConfusionState` counts every row in one cell ``(label, candidate prediction,
baseline prediction)``: a K x K x K table (binary: 2 x 2 x 2 at the task's threshold). Both
models' confusion matrices are its margins, and the paired statistics of a comparison (the
discordant pairs of McNemar / Newcombe, a Dirichlet posterior over the joint cells) are exact
functions of it, so they merge like any other state (fieldwise exact sums).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from mergeable_metrics.inputs.validation import Batch
from mergeable_metrics._util.exact import ExactSums, exact_sum
from mergeable_metrics._util.limits import check_count
from mergeable_metrics.states.base import State
from mergeable_metrics.inputs.task import check_thresholds

__all__ = ["MAX_PAIRED_CLASSES", "PairedConfusionLayout", "PairedConfusionState", "predicted_labels"]

#: Largest K with a joint state (K**3 cells per slice); larger tasks compare without one.
MAX_PAIRED_CLASSES = 16


@dataclass(frozen=True)
class PairedConfusionLayout:
    """``num_classes`` K; binary tasks: the ``threshold`` and ``threshold_rule`` that turn scores
    into predictions (None for multiclass, whose batches hold predicted labels)."""

    num_classes: int = 2
    threshold: float | None = 0.5
    threshold_rule: str = ">="

    def __post_init__(self) -> None:
        object.__setattr__(self, "num_classes", check_count(self.num_classes, "num_classes", 2, MAX_PAIRED_CLASSES))
        if self.threshold is not None:
            object.__setattr__(self, "threshold", check_thresholds((self.threshold,), self.threshold_rule)[0])


def predicted_labels(layout: PairedConfusionLayout, batch: Batch) -> np.ndarray:
    """(n,) int predicted labels of one model's batch, as its confusion state reads them: binary
    scores at the threshold (``score >= t``, or ``>``), else the predicted labels ``y_pred``."""
    if layout.threshold is not None and batch.y_score is not None:
        above = np.greater_equal if layout.threshold_rule == ">=" else np.greater
        return above(batch.y_score, layout.threshold).astype(np.intp)
    if batch.y_pred is None:
        raise ValueError("a paired confusion state needs predictions (or binary scores) of both models")
    if layout.threshold is not None:  # binary hard predictions: 1 passes every threshold in (0, 1]
        return (batch.y_pred >= layout.threshold).astype(np.intp) if layout.threshold_rule == ">=" else (batch.y_pred > layout.threshold).astype(np.intp)
    return batch.y_pred.astype(np.intp, copy=False)


class PairedConfusionState(State):
    """Weighted joint confusion counts of two models: ``cells[y, c, b]`` sums the rows with label
    ``y``, candidate prediction ``c`` and baseline prediction ``b`` (exact sums, :mod:`mergeable_metrics._util.exact`).

    ``cells.sum(axis=2)`` is the candidate's confusion matrix and ``cells.sum(axis=1)`` the
    baseline's (rows true, columns predicted, as ``sklearn.metrics.confusion_matrix``). Folded
    from a batch whose :attr:`~mergeable_metrics.inputs.validation.Batch.baseline` holds the baseline's predictions.
    """

    kind = "paired_confusion"
    Layout = PairedConfusionLayout
    FIELDS = (("cells", "float64"),)
    COUNTS = ("cells",)
    EXACT = ("cells",)

    @classmethod
    def shape(cls, layout: PairedConfusionLayout, field: str) -> tuple[int, ...]:
        k = layout.num_classes
        return (k, k, k)

    @classmethod
    def layout_for(cls, requirements: list[Any], task: Any) -> PairedConfusionLayout:
        binary = task.kind == "binary"
        return PairedConfusionLayout(task.num_classes, task.threshold if binary else None, task.threshold_rule)

    @classmethod
    def num_cells(cls, layout: PairedConfusionLayout) -> int:
        return layout.num_classes**3

    @classmethod
    def cells(cls, layout: PairedConfusionLayout, batch: Batch) -> np.ndarray:
        """``(label * K + candidate prediction) * K + baseline prediction``."""
        if batch.baseline is None:
            raise ValueError("a paired confusion state needs a batch with the baseline model's predictions (Batch.baseline)")
        k = layout.num_classes
        cell = np.multiply(batch.y_true, k * k, dtype=np.intp)
        cell += predicted_labels(layout, batch) * k
        cell += predicted_labels(layout, batch.baseline)
        return cell

    @classmethod
    def from_cells(cls, layout: PairedConfusionLayout, counts: np.ndarray, weights: ExactSums | None) -> "PairedConfusionState":
        shape = cls.shape(layout, "cells")
        if weights is None:
            return cls(layout, {"cells": np.asarray(counts, dtype=np.float64).reshape(shape)})
        return cls(layout, {"cells": weights.take(slice(None), shape=shape)})

    @classmethod
    def from_batch(cls, layout: PairedConfusionLayout, batch: Batch) -> "PairedConfusionState":
        cell = cls.cells(layout, batch)
        size = cls.num_cells(layout)
        if batch.sample_weight is not None:
            return cls.from_cells(layout, None, exact_sum(batch.sample_weight, index=cell, size=size))
        return cls.from_cells(layout, np.bincount(cell, minlength=size), None)

    def summary(self) -> str:
        c = self.arrays["cells"]
        return f"{self.kind} K={self.layout.num_classes}: {c.sum():g} rows, {float(c.sum() - np.trace(c.sum(axis=0))):g} where the models disagree"
