"""What is being evaluated: the :class:`Task` (kind, number of classes, threshold, undefined-value
policy, ``ignore_index``).

The task sits at the bottom of ``core`` with the input checks that read it (:mod:`mergeable_metrics.inputs.validation`,
:mod:`mergeable_metrics.inputs.formats`): it depends only on :mod:`mergeable_metrics._util.limits`. :mod:`mergeable_metrics.metrics.base` re-exports
everything here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from mergeable_metrics._util.public import public
from mergeable_metrics._util.limits import MAX_NUM_CLASSES, MAX_NUM_OUTPUTS, MAX_THRESHOLDS, as_floats, check_at_most, check_count

#: how a score meets a threshold: ``">="`` (a score equal to it is positive) or ``">"``
THRESHOLD_RULES = (">=", ">")


def check_thresholds(thresholds: Any, threshold_rule: str) -> tuple[float, ...]:
    """``thresholds`` as a tuple of floats, checked: at least one, at most
    :data:`~mergeable_metrics._util.limits.MAX_THRESHOLDS`, finite, sorted and distinct; and ``threshold_rule`` one
    of :data:`THRESHOLD_RULES`.

    Raises:
        ValueError: naming the bad value.
    """
    t = as_floats(thresholds, "thresholds")
    if not t:
        raise ValueError("thresholds: at least one threshold is needed")
    check_at_most(len(t), MAX_THRESHOLDS, "the number of distinct thresholds")
    if any(not np.isfinite(x) for x in t):
        raise ValueError(f"thresholds must be finite, got {t}")
    if list(t) != sorted(set(t)):
        raise ValueError(f"thresholds must be sorted and distinct, got {t}")
    if threshold_rule not in THRESHOLD_RULES:
        raise ValueError(f"threshold_rule must be one of {THRESHOLD_RULES}, got {threshold_rule!r}")
    return t


def check_zero_division(value: Any) -> Any:
    """Normalise ``zero_division``: 0, 1, "nan" (also float NaN) or "warn".

    Raises:
        ValueError: any other value.
    """
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    if isinstance(value, str) and value.lower() in ("nan", "warn"):
        return value.lower()
    if not isinstance(value, bool) and value in (0, 1):
        return int(value)
    if isinstance(value, str) and value in ("0", "1"):
        return int(value)
    raise ValueError(f"zero_division must be one of 0, 1, 'nan', 'warn'; got {value!r}")


TASK_KINDS = ("binary", "multiclass", "multilabel", "regression")


@public("mergeable_metrics.metrics")
@dataclass(frozen=True)
class Task:
    """What is being evaluated.

    Attributes:
        num_classes: 2 for binary tasks; K > 2 (or 2 with ``multiclass=True``) for multiclass; the
            number of labels L >= 1 for multilabel tasks; ignored for regression.
        threshold: default decision threshold for binary (and multilabel) scores.
        threshold_rule: ``">="`` (score equal to the threshold is positive, the default) or ``">"``.
        zero_division: default undefined-value policy, see :func:`check_zero_division`.
        multiclass: force multiclass semantics with ``num_classes=2``.
        kind: ``"binary"``, ``"multiclass"``, ``"multilabel"`` or ``"regression"``; None (default)
            infers binary or multiclass from ``num_classes`` and ``multiclass`` as before.
            Segmentation is a multiclass task over pixels.
        ignore_index: binary/multiclass only: rows (pixels) whose label equals it are dropped
            before folding; if it is a class id in [0, K), that class also leaves the macro
            averages and its per-class values are NaN (e.g. 255 for segmentation "void").

    Raises:
        ValueError: an unknown kind, or a ``num_classes`` / ``threshold`` / ``ignore_index`` that
            does not fit the kind.

    Example:
        >>> Task(num_classes=3).kind, Task().kind, Task(kind="regression").kind
        ('multiclass', 'binary', 'regression')
    """

    num_classes: int = 2
    threshold: float = 0.5
    threshold_rule: str = ">="
    zero_division: Any = "nan"
    multiclass: bool = False
    kind: str | None = None
    ignore_index: int | None = None
    num_outputs: int | None = None

    def __post_init__(self) -> None:
        kind = self.kind
        if kind is not None and kind not in TASK_KINDS:
            raise ValueError(f"task kind must be one of {TASK_KINDS}, got {kind!r}")
        if kind in (None, "binary", "multiclass"):
            check_count(self.num_classes, "num_classes", 2, MAX_NUM_CLASSES)
            if kind is None:
                kind = "binary" if self.num_classes == 2 and not self.multiclass else "multiclass"
            elif kind == "binary" and (self.num_classes != 2 or self.multiclass):
                raise ValueError(f"a binary task has num_classes=2 and multiclass=False, got num_classes={self.num_classes!r}")
            if kind == "multiclass" and self.num_classes == 2:
                object.__setattr__(self, "multiclass", True)
        elif kind == "multilabel":
            n = self.num_classes
            if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
                raise ValueError(f"a multilabel task needs num_classes (the number of labels L) >= 1, got {n!r}")
        check_at_most(self.num_classes, MAX_NUM_CLASSES, "num_classes", "task")
        object.__setattr__(self, "num_classes", int(self.num_classes))
        object.__setattr__(self, "kind", kind)
        check_thresholds((float(self.threshold),), self.threshold_rule)
        object.__setattr__(self, "zero_division", check_zero_division(self.zero_division))
        object.__setattr__(self, "threshold", float(self.threshold))
        ii = self.ignore_index
        if ii is not None:
            integral = isinstance(ii, (int, np.integer)) or (isinstance(ii, float) and ii.is_integer())
            if isinstance(ii, bool) or not integral:
                raise ValueError(f"ignore_index must be an integer or None, got {ii!r}")
            if kind not in ("binary", "multiclass"):
                raise ValueError(f"ignore_index applies to binary and multiclass tasks, not {kind}")
            object.__setattr__(self, "ignore_index", int(ii))
        if self.num_outputs is not None:
            if kind != "regression":
                raise ValueError(f"num_outputs applies to regression tasks, not {kind} (num_outputs={self.num_outputs!r})")
            object.__setattr__(self, "num_outputs", check_count(self.num_outputs, "num_outputs", 1, MAX_NUM_OUTPUTS))

    @property
    def ignored_class(self) -> int | None:
        """``ignore_index`` if it is a class id in [0, K) of a multiclass task (it then leaves the
        macro averages), else None."""
        ii = self.ignore_index
        if self.kind == "multiclass" and ii is not None and 0 <= ii < self.num_classes:
            return ii
        return None
