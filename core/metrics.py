"""Metric definitions, the registry and metric strings.

A metric is a pure function from states to a value, plus metadata (canonical name, aliases,
bounds, ``higher_is_better``, the states it needs, its scikit-learn equivalent). Subclassing
:class:`Metric` with a ``name`` registers it; an alias that clashes raises at definition time.

Metric strings name a metric and its parameters: ``"f1"``, ``"f1@macro"`` (a bare value is the
``average``), ``"precision@threshold=0.7"``, ``"fbeta@beta=2@weighted"``,
``"recall@none"`` (per-class values). :func:`resolve` turns a string into a configured metric for
a :class:`Task`; ``metric.key`` is its canonical string, used as the name in results.

Undefined values follow scikit-learn's ``zero_division`` (0, 1, "nan" or "warn"); **our default is
"nan"**: a ratio with a zero denominator is NaN (``"warn"`` gives 0.0 and an
:class:`UndefinedMetricWarning`, as in scikit-learn). Any average over zero examples is NaN.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from core.states import (
    BinaryConfusionLayout,
    BinaryConfusionState,
    ConfusionMatrixLayout,
    ConfusionMatrixState,
    ExampleCountState,
    State,
)

ZERO_DIVISION = (0, 1, "nan", "warn")
AVERAGES = ("binary", "micro", "macro", "weighted", None)


class UndefinedMetricWarning(UserWarning):
    """A metric's value is undefined (zero denominator) and ``zero_division="warn"`` gave 0.0."""


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


@dataclass(frozen=True)
class Task:
    """What is being evaluated.

    Attributes:
        num_classes: 2 for binary tasks; K > 2 (or 2 with ``multiclass=True``) for multiclass.
        threshold: default decision threshold for binary scores.
        threshold_rule: ``">="`` (score equal to the threshold is positive, the default) or ``">"``.
        zero_division: default undefined-value policy, see :func:`check_zero_division`.
        multiclass: force multiclass semantics with ``num_classes=2``.
    """

    num_classes: int = 2
    threshold: float = 0.5
    threshold_rule: str = ">="
    zero_division: Any = "nan"
    multiclass: bool = False

    def __post_init__(self) -> None:
        ConfusionMatrixLayout(self.num_classes)  # validates num_classes
        BinaryConfusionLayout((float(self.threshold),), self.threshold_rule)  # validates both
        object.__setattr__(self, "zero_division", check_zero_division(self.zero_division))
        object.__setattr__(self, "threshold", float(self.threshold))

    @property
    def kind(self) -> str:
        return "binary" if self.num_classes == 2 and not self.multiclass else "multiclass"


def _divide(num: np.ndarray | float, den: np.ndarray | float, zero_division: Any, what: str) -> np.ndarray:
    """``num / den`` with ``zero_division`` where ``den == 0`` (scikit-learn's ``_prf_divide``)."""
    num = np.asarray(num, dtype=np.float64)
    den = np.asarray(den, dtype=np.float64)
    mask = den == 0
    out = num / np.where(mask, 1.0, den)
    if mask.any():
        if zero_division == "warn":
            warnings.warn(f"{what} is ill-defined (zero denominator); set to 0.0", UndefinedMetricWarning, stacklevel=4)
            fill = 0.0
        else:
            fill = np.nan if zero_division == "nan" else float(zero_division)
        out = np.where(mask, fill, out)
    return out


def nanaverage(values: np.ndarray, weights: np.ndarray | None = None) -> float:
    """Average ignoring NaN entries; NaN if all are NaN or there are none; if the remaining
    weights sum to zero, the unweighted mean (scikit-learn's ``_nanaverage``)."""
    values = np.asarray(values, dtype=np.float64)
    keep = ~np.isnan(values)
    if not keep.any():
        return float("nan")
    if weights is None:
        return float(values[keep].mean())
    w = np.asarray(weights, dtype=np.float64)[keep]
    if w.sum() == 0:
        return float(values[keep].mean())
    return float(np.dot(values[keep], w) / w.sum())


@dataclass(frozen=True)
class Interval:
    """A metric value with a certified interval ``lower <= exact value <= upper``.

    Metrics computed from an approximate (compressed) state return this instead of a float;
    results keep ``value`` under the metric's name and ``[lower, upper]`` under ``intervals``.
    """

    value: float
    lower: float
    upper: float


REGISTRY: dict[str, type["Metric"]] = {}


class Metric:
    """Base class. Subclasses set ``name`` to register; ``aliases`` must be unique.

    Class attributes:
        name: canonical name (registry key).
        aliases: other names that resolve to this metric.
        params: accepted keyword parameters with their defaults (``None`` = take from the task).
        positional: the parameter a bare ``@value`` sets (``"average"`` for classification).
        higher_is_better, bounds, sklearn, exact, tasks: metadata.
    """

    name: ClassVar[str] = ""
    aliases: ClassVar[tuple[str, ...]] = ()
    params: ClassVar[dict[str, Any]] = {}
    positional: ClassVar[str | None] = None
    higher_is_better: ClassVar[bool | None] = True
    bounds: ClassVar[tuple[float, float]] = (0.0, 1.0)
    sklearn: ClassVar[str | None] = None
    exact: ClassVar[bool] = True
    tasks: ClassVar[tuple[str, ...]] = ("binary", "multiclass")
    description: ClassVar[str] = ""

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        if "name" not in cls.__dict__ or not cls.name:
            return
        for n in (cls.name, *cls.aliases):
            other = REGISTRY.get(n)
            if other is not None and other is not cls and other.__qualname__ != cls.__qualname__:
                raise ValueError(f"metric name or alias {n!r} of {cls.__name__} is already used by {other.__name__}")
            REGISTRY[n] = cls

    def __init__(self, task: Task, **params: Any):
        if task.kind not in self.tasks:
            raise ValueError(f"metric {self.name!r} is not defined for {task.kind} tasks (only {self.tasks})")
        unknown = set(params) - set(self.params)
        if unknown:
            raise ValueError(
                f"metric {self.name!r}: unknown parameter(s) {sorted(unknown)}; accepted: {sorted(self.params)}"
            )
        self.task = task
        self.given = dict(params)
        self.p = {**self.params, **params}
        self.configure()

    def configure(self) -> None:
        """Validate and normalise ``self.p`` (subclasses)."""

    def requires(self) -> list[tuple[type[State], Any]]:
        """The ``(state class, requirement)`` pairs this metric reads."""
        return [(ExampleCountState, None)]

    def compute(self, states: dict[str, State]) -> Any:
        raise NotImplementedError

    @property
    def key(self) -> str:
        """Canonical metric string: the name, then the positional value, then other given
        parameters in sorted order."""
        parts = [self.name]
        pos = self.positional
        if pos is not None and self._show_positional():
            parts.append(_fmt(self.p[pos]))
        for k in sorted(self.given):
            if k != pos:
                parts.append(f"{k}={_fmt(self.given[k])}")
        return "@".join(parts)

    def _show_positional(self) -> bool:
        return self.positional in self.given

    def __repr__(self) -> str:
        return f"<metric {self.key}>"


def _fmt(v: Any) -> str:
    if v is None:
        return "none"
    if isinstance(v, float):
        return repr(int(v)) if v.is_integer() and abs(v) < 1e15 else repr(v)
    return str(v)


def _parse_value(text: str) -> Any:
    low = text.strip().lower()
    if low == "none":
        return None
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return text.strip()


def parse_metric_string(text: str) -> tuple[str, list[Any], dict[str, Any]]:
    """Split ``"name@a@k=v"`` into ``(name, [a], {"k": v})``; numbers are parsed, "none" is None.

    Raises:
        ValueError: an empty name or parameter.
    """
    if not isinstance(text, str):
        raise TypeError(f"metric must be a string or Metric, got {type(text).__name__}")
    name, *rest = [p.strip() for p in text.strip().split("@")]
    if not name or any(not p for p in rest):
        raise ValueError(f"malformed metric string {text!r}")
    positional, keyword = [], {}
    for p in rest:
        if "=" in p:
            k, v = p.split("=", 1)
            keyword[k.strip()] = _parse_value(v)
        else:
            positional.append(_parse_value(p))
    return name, positional, keyword


def resolve(metric: "str | Metric", task: Task) -> Metric:
    """Resolve a metric string (or pass through a configured :class:`Metric`) for ``task``.

    Raises:
        ValueError: unknown metric name (the message lists the known ones), bad parameters, or a
            metric not defined for the task.
    """
    if isinstance(metric, Metric):
        return metric
    name, positional, keyword = parse_metric_string(metric)
    cls = REGISTRY.get(name) or REGISTRY.get(name.lower())
    if cls is None:
        raise ValueError(f"unknown metric {name!r}; known metrics: {', '.join(sorted(REGISTRY))}")
    if positional:
        if cls.positional is None or len(positional) > 1:
            raise ValueError(f"metric {name!r} takes no positional parameter, got {positional} in {metric!r}")
        if cls.positional in keyword:
            raise ValueError(f"{cls.positional} given twice in {metric!r}")
        keyword[cls.positional] = positional[0]
    return cls(task, **keyword)


# ---------------------------------------------------------------------------------------------
class ExampleCount(Metric):
    """Number of examples (rows) folded, before weighting. TFMA's ``example_count``."""

    name = "example_count"
    higher_is_better = None
    bounds = (0.0, math.inf)

    def compute(self, states: dict[str, State]) -> int:
        return int(states["example_count"]["count"])


class WeightedExampleCount(Metric):
    """Sum of ``sample_weight`` over the examples (equals ``example_count`` unweighted)."""

    name = "weighted_example_count"
    higher_is_better = None
    bounds = (0.0, math.inf)

    def compute(self, states: dict[str, State]) -> float:
        return float(states["example_count"]["weight"])


class _Classification(Metric):
    """Shared parameter handling: ``threshold`` (binary), ``average``, ``zero_division``."""

    params = {"threshold": None, "average": None, "zero_division": None}
    positional = "average"

    def configure(self) -> None:
        p = self.p
        if p["threshold"] is not None and self.task.kind != "binary":
            raise ValueError(f"metric {self.name!r}: threshold applies to binary tasks only")
        p["threshold"] = self.task.threshold if p["threshold"] is None else float(p["threshold"])
        if not math.isfinite(p["threshold"]):
            raise ValueError(f"metric {self.name!r}: threshold must be finite, got {p['threshold']}")
        if "average" in self.given:
            avg = p["average"]
            if avg not in AVERAGES:
                raise ValueError(f"metric {self.name!r}: average must be one of {AVERAGES}, got {avg!r}")
            if avg == "binary" and self.task.kind != "binary":
                raise ValueError(f"metric {self.name!r}: average='binary' needs a binary task")
        else:
            p["average"] = "binary" if self.task.kind == "binary" else "macro"
        zd = p["zero_division"]
        p["zero_division"] = self.task.zero_division if zd is None else check_zero_division(zd)

    def _show_positional(self) -> bool:
        # multiclass keys always name their average; binary keys only a non-binary one
        return self.p["average"] != "binary"

    def requires(self) -> list[tuple[type[State], Any]]:
        if self.task.kind == "binary":
            return [(BinaryConfusionState, self.p["threshold"])]
        return [(ConfusionMatrixState, self.task.num_classes)]

    def matrix(self, states: dict[str, State]) -> np.ndarray:
        """The K x K (2 x 2 for binary) confusion matrix this metric reads."""
        if self.task.kind == "binary":
            return states["binary_confusion"].confusion_matrix(self.p["threshold"])
        return np.asarray(states["confusion_matrix"]["matrix"], dtype=np.float64)


class _PRF(_Classification):
    """Precision, recall and F-beta from a confusion matrix, as ``precision_recall_fscore_support``
    with ``labels=range(K)``."""

    which: ClassVar[str] = ""

    def beta(self) -> float:
        return 1.0

    def compute(self, states: dict[str, State]) -> Any:
        m = self.matrix(states)
        avg, zd = self.p["average"], self.p["zero_division"]
        tp, pred, true = np.diag(m).copy(), m.sum(axis=0), m.sum(axis=1)
        if avg == "binary":
            tp, pred, true = tp[1:], pred[1:], true[1:]
        elif avg == "micro":
            tp, pred, true = tp.sum(keepdims=True), pred.sum(keepdims=True), true.sum(keepdims=True)
        what = f"{self.key}"
        if self.which == "precision":
            v = _divide(tp, pred, zd, what)
        elif self.which == "recall":
            v = _divide(tp, true, zd, what)
        else:
            b2 = self.beta() ** 2
            v = _divide((1 + b2) * tp, b2 * true + pred, zd, what)
        if avg is None:
            return v
        if avg in ("binary", "micro"):
            return float(v[0])
        return nanaverage(v, true if avg == "weighted" else None)


class Precision(_PRF):
    """Precision ``tp / (tp + fp)``. Source: ``sklearn.metrics.precision_score``.

    Binary: at ``threshold`` (positive class 1). Multiclass: per class, then ``average``
    (micro, macro, weighted; ``none`` returns the (K,) array). Undefined -> ``zero_division``.
    """

    name = "precision"
    aliases = ("ppv", "positive_predictive_value")
    which = "precision"
    sklearn = "sklearn.metrics.precision_score"


class Recall(_PRF):
    """Recall ``tp / (tp + fn)``. Source: ``sklearn.metrics.recall_score``."""

    name = "recall"
    aliases = ("sensitivity", "tpr", "true_positive_rate")
    which = "recall"
    sklearn = "sklearn.metrics.recall_score"


class F1(_PRF):
    """F1 ``2 tp / (2 tp + fp + fn)``. Source: ``sklearn.metrics.f1_score``."""

    name = "f1"
    aliases = ("f1_score",)
    which = "f1"
    sklearn = "sklearn.metrics.f1_score"


class FBeta(_PRF):
    """F-beta ``(1 + b^2) tp / ((1 + b^2) tp + b^2 fn + fp)``. Source: ``sklearn.metrics.fbeta_score``."""

    name = "fbeta"
    aliases = ("fbeta_score",)
    which = "fbeta"
    params = {**_Classification.params, "beta": 1.0}
    sklearn = "sklearn.metrics.fbeta_score"

    def configure(self) -> None:
        super().configure()
        b = float(self.p["beta"])
        if not (b >= 0) or math.isnan(b):
            raise ValueError(f"metric 'fbeta': beta must be >= 0, got {self.p['beta']!r}")
        self.p["beta"] = b

    def beta(self) -> float:
        return self.p["beta"]


class Accuracy(_Classification):
    """Fraction (by weight) of correct predictions: ``trace(C) / sum(C)``; NaN with no examples.

    Source: ``sklearn.metrics.accuracy_score`` (which raises on empty input; we return NaN).
    """

    name = "accuracy"
    aliases = ("acc",)
    params = {"threshold": None}
    positional = None
    sklearn = "sklearn.metrics.accuracy_score"

    def configure(self) -> None:
        self.p.update(average="binary" if self.task.kind == "binary" else "micro", zero_division="nan")
        p = self.p
        if p["threshold"] is not None and self.task.kind != "binary":
            raise ValueError("metric 'accuracy': threshold applies to binary tasks only")
        p["threshold"] = self.task.threshold if p["threshold"] is None else float(p["threshold"])

    def _show_positional(self) -> bool:
        return False

    def compute(self, states: dict[str, State]) -> float:
        m = self.matrix(states)
        total = m.sum()
        return float(np.trace(m) / total) if total > 0 else float("nan")


class _Count(_Classification):
    """Weighted confusion count at the threshold (binary only)."""

    params = {"threshold": None}
    positional = None
    tasks = ("binary",)
    higher_is_better = None
    bounds = (0.0, math.inf)
    index: ClassVar[int] = 0

    def configure(self) -> None:
        self.p.update(average="binary", zero_division="nan")
        self.p["threshold"] = self.task.threshold if self.p["threshold"] is None else float(self.p["threshold"])

    def _show_positional(self) -> bool:
        return False

    def compute(self, states: dict[str, State]) -> float:
        return states["binary_confusion"].counts(self.p["threshold"])[self.index]


class TruePositives(_Count):
    """Weighted count of positives predicted positive."""

    name, index = "tp", 0
    aliases = ("true_positives",)


class FalsePositives(_Count):
    """Weighted count of negatives predicted positive."""

    name, index = "fp", 1
    aliases = ("false_positives",)
    higher_is_better = False


class TrueNegatives(_Count):
    """Weighted count of negatives predicted negative."""

    name, index = "tn", 2
    aliases = ("true_negatives",)


class FalseNegatives(_Count):
    """Weighted count of positives predicted negative."""

    name, index = "fn", 3
    aliases = ("false_negatives",)
    higher_is_better = False


class ConfusionMatrix(_Classification):
    """The (K, K) weighted confusion matrix, rows = true label, columns = prediction
    (``[[tn, fp], [fn, tp]]`` for binary). Source: ``sklearn.metrics.confusion_matrix``."""

    name = "confusion_matrix"
    params = {"threshold": None}
    positional = None
    higher_is_better = None
    bounds = (0.0, math.inf)
    sklearn = "sklearn.metrics.confusion_matrix"

    def configure(self) -> None:
        Accuracy.configure(self)  # type: ignore[arg-type]

    def _show_positional(self) -> bool:
        return False

    def compute(self, states: dict[str, State]) -> np.ndarray:
        return self.matrix(states)


DEFAULT_METRICS = {
    "binary": ("accuracy", "precision", "recall", "f1"),
    "multiclass": ("accuracy", "precision@macro", "recall@macro", "f1@macro", "f1@weighted"),
}
