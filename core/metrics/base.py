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

import copy
import difflib
import functools
import inspect
import math
import re
import warnings
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Iterator, NamedTuple

import numpy as np

from mergeable_metrics._util.public import public
from mergeable_metrics._util.limits import MAX_BETA, check_at_most
from mergeable_metrics.states.base import BinaryConfusionLayout, BinaryConfusionState, ConfusionMatrixState, ExampleCountState, State
from mergeable_metrics.inputs.task import TASK_KINDS, Task, check_zero_division  # noqa: F401  (re-exported: mergeable_metrics.metrics.base.Task)

ZERO_DIVISION = (0, 1, "nan", "warn")
AVERAGES = ("binary", "micro", "macro", "weighted", "samples", None)


@public("mergeable_metrics")
class UndefinedMetricWarning(UserWarning):
    """A metric's value is undefined (zero denominator) and ``zero_division="warn"`` gave 0.0."""


@dataclass
class _Undefined:
    """One undefined-value event recorded while a metric computes."""

    classes: tuple[int, ...] | None  # None: the (scalar) value itself
    fill: Any  # the value reported instead: NaN, 0, 1 or "warn" (0.0 plus a warning)


_RECORDER: ContextVar[list | None] = ContextVar("mm_undefined_recorder", default=None)


@contextmanager
def recording_undefined() -> Iterator[list]:
    """Collect :func:`record_undefined` events (used by :meth:`mergeable_metrics.collection.plan.Plan.compute_detailed`)."""
    token = _RECORDER.set([])
    try:
        yield _RECORDER.get()
    finally:
        _RECORDER.reset(token)


def record_undefined(classes: Any = None, fill: Any = "nan") -> bool:
    """Record that a value (or the given classes of it) is undefined.

    Metrics call this (directly or through :func:`_divide`) so results can list the undefined
    ``(metric, class, slice)`` and warn once per metric. Returns False when nothing is recording
    (the metric was computed outside a plan).
    """
    rec = _RECORDER.get()
    if rec is None:
        return False
    cls = None if classes is None else tuple(int(c) for c in np.atleast_1d(classes))
    rec.append(_Undefined(cls, fill))
    return True


def _divide(num: np.ndarray | float, den: np.ndarray | float, zero_division: Any, what: str, classes: Any = None) -> np.ndarray:
    """``num / den`` with ``zero_division`` where ``den == 0`` (scikit-learn's ``_prf_divide``).

    ``classes``: the class ids of the entries (recorded as undefined), or None for a scalar value.
    """
    num = np.asarray(num, dtype=np.float64)
    den = np.asarray(den, dtype=np.float64)
    mask = den == 0
    out = num / np.where(mask, 1.0, den)
    if mask.any():
        fill = np.nan if zero_division in ("nan",) else 0.0 if zero_division == "warn" else float(zero_division)
        cls = None if classes is None else np.asarray(classes)[np.flatnonzero(mask.reshape(-1))]
        if not record_undefined(cls, zero_division) and zero_division == "warn":
            warnings.warn(f"{what} is ill-defined (zero denominator); set to 0.0", UndefinedMetricWarning, stacklevel=4)
        out = np.where(mask, fill, out)
    return out


def nanaverage(values: np.ndarray, weights: np.ndarray | None = None) -> float:
    """Average ignoring NaN entries, computed exactly as scikit-learn's ``_nanaverage`` (so the
    value is bit-identical to it): ``np.nanmean`` unweighted, ``np.average`` over the non-NaN
    entries weighted (its multiply-then-sum, not a dot product, which rounds differently), the
    unweighted mean when the remaining weights sum to zero; NaN if all are NaN or there are none."""
    values = np.asarray(values, dtype=np.float64)
    keep = ~np.isnan(values)
    if not keep.any():
        return float("nan")
    if weights is None:
        return float(np.nanmean(values))
    w = np.asarray(weights)[keep]
    if w.sum() == 0:
        return float(np.average(values[keep]))
    return float(np.average(values[keep], weights=w))


@dataclass(frozen=True)
class Interval:
    """A metric value with a certified interval ``lower <= exact value <= upper``.

    Metrics computed from an approximate (compressed) state return this instead of a float;
    results keep ``value`` under the metric's name and ``[lower, upper]`` under ``bounds``
    (``SliceResult.bounds``; not a confidence interval, see :mod:`mergeable_metrics.uncertainty.intervals`).
    """

    value: float
    lower: float
    upper: float


REGISTRY: dict[str, type["Metric"]] = {}


def register_named(registry: dict[str, type], cls: type, what: str) -> None:
    """Register ``cls`` under its ``name`` and ``aliases`` (nothing when it sets no ``name`` of its
    own): how metrics, averaging methods and aggregators are found by name.

    Raises:
        ValueError: a name or alias already used by another class (re-defining the same class,
            e.g. on a module reload, is allowed); nothing is registered then.
    """
    if "name" not in cls.__dict__ or not cls.name:  # type: ignore[attr-defined]
        return
    names = (cls.name, *cls.aliases)  # type: ignore[attr-defined]
    for n in names:  # check every name before registering any (no partial registration)
        other = registry.get(n)
        reload = other is not None and (other.__module__, other.__qualname__) == (cls.__module__, cls.__qualname__)
        if other is not None and other is not cls and not reload:
            raise ValueError(f"{what} name or alias {n!r} of {cls.__module__}.{cls.__qualname__} is already used by {other.__module__}.{other.__qualname__}")
    for n in names:
        registry[n] = cls


AVERAGINGS: dict[str, type["Averaging"]] = {}


@public("mergeable_metrics.metrics")
class Averaging:
    """Base class of the ways a per-class metric becomes one value: the ``@macro`` of
    ``"f1@macro"``. Subclasses set ``name`` to register (``aliases`` unique, a clash raises at
    definition); ``"precision@<name>"`` then works for precision, recall, F1, F-beta, IoU and
    Dice (``average=<name>``).

    Class attributes:
        name: canonical name, the value of ``average`` in metric strings and keys.
        aliases: other names that find it (keys use ``name``).
        full_name: human-readable name for tables and reports.
        tasks: the task kinds it applies to.
        pooled: True for the built-ins that sum counts over classes before the ratio
            (``binary``: the positive class only; ``micro``; ``samples``; ``none`` keeps the
            (K,) array); they are computed by the metrics themselves and :meth:`reduce` is not
            called.

    User subclasses implement :meth:`reduce`, e.g. the harmonic mean of the per-class values::

        class Harmonic(Averaging):
            name = "harmonic"

            def reduce(self, values, support):
                v = values[~np.isnan(values)]
                return float(v.size / np.sum(1.0 / v)) if v.size and np.all(v > 0) else float("nan")
    """

    name: ClassVar[str] = ""
    aliases: ClassVar[tuple[str, ...]] = ()
    full_name: ClassVar[str] = ""
    tasks: ClassVar[tuple[str, ...]] = ("binary", "multiclass", "multilabel")
    pooled: ClassVar[bool] = False
    #: metric strings whose values :meth:`reduce` receives as keywords (prob_conf_mat's
    #: ``dependencies`` of an averaging: ``("recall@none",)`` gives ``reduce(values, support,
    #: **{"recall@none": ...})``), computed from the same states for the same task
    dependencies: ClassVar[tuple[str, ...]] = ()
    #: prob_conf_mat's name for the scikit-learn option it matches (docs only)
    sklearn_equivalent: ClassVar[str | None] = None

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        register_named(AVERAGINGS, cls, "averaging")
        if "name" in cls.__dict__ and cls.name and not cls.pooled and cls.reduce is Averaging.reduce and not hasattr(cls, "compute_average"):
            for n in [n for n, c in AVERAGINGS.items() if c is cls]:  # nothing of a failed class stays registered
                del AVERAGINGS[n]
            raise TypeError(f"averaging {cls.__qualname__} ({cls.name!r}) defines no computation: implement reduce(values, support)")

    def dependency_values(self, task: Any, states: dict[str, "State"]) -> dict[str, Any]:
        """``{dependency string: value}`` of :attr:`dependencies` for ``task`` from ``states``."""
        return {d: resolve(d, task).compute(states) for d in self.dependencies}

    def dependency_requires(self, task: Any) -> list[tuple[type["State"], Any]]:
        """The states :attr:`dependencies` read for ``task``."""
        out: list[tuple[type[State], Any]] = []
        for d in self.dependencies:
            out += resolve(d, task).requires()
        return out

    def reduce(self, values: np.ndarray, support: np.ndarray, **dependencies: Any) -> float:
        """One value from the (K,) per-class values (NaN where undefined; classes left out by
        ``ignore_index`` are already removed) and their (K,) weighted true counts (support);
        ``dependencies``: the values of :attr:`dependencies`, keyed as declared.

        A subclass may implement prob_conf_mat's ``compute_average(metric_values, **dependencies)``
        instead: it receives a (1, K) array (one sample) and returns one value per sample."""
        if hasattr(self, "compute_average"):
            out = self.compute_average(np.asarray(values, dtype=np.float64)[None, :], **dependencies)
            return float(np.asarray(out, dtype=np.float64).reshape(-1)[0])
        raise NotImplementedError(f"averaging {self.name!r} computes inside the metric (pooled)")

    def __repr__(self) -> str:
        return f"<averaging {self.name}>"


class BinaryAveraging(Averaging):
    """The positive class (1) only (scikit-learn's ``average="binary"``)."""

    name, full_name, tasks, pooled = "binary", "Positive class", ("binary",), True


class MicroAveraging(Averaging):
    """Counts summed over classes before the ratio (``average="micro"``)."""

    name, full_name, pooled = "micro", "Micro average", True


class MacroAveraging(Averaging):
    """Unweighted mean of the per-class values, NaN classes left out (``average="macro"``)."""

    name, full_name = "macro", "Macro average"

    def reduce(self, values: np.ndarray, support: np.ndarray, **dependencies: Any) -> float:
        return nanaverage(values)


class WeightedAveraging(Averaging):
    """Mean of the per-class values weighted by support, NaN classes left out (``average="weighted"``)."""

    name, full_name = "weighted", "Support-weighted average"

    def reduce(self, values: np.ndarray, support: np.ndarray, **dependencies: Any) -> float:
        return nanaverage(values, support)


class SamplesAveraging(Averaging):
    """Per row, then the (weighted) mean over rows: multilabel only (``average="samples"``)."""

    name, full_name, tasks, pooled = "samples", "Samples average", ("multilabel",), True


class NoAveraging(Averaging):
    """No average: the (K,) per-class values (``average=None``, ``@none``)."""

    name, full_name, pooled = "none", "Per class", True


def get_averaging(average: "str | None") -> Averaging:
    """The :class:`Averaging` of an ``average`` value (None is ``"none"``).

    Raises:
        ValueError: no averaging of that name (the message lists the known ones).
    """
    key = "none" if average is None else average
    cls = AVERAGINGS.get(key) if isinstance(key, str) else None
    if cls is None:
        raise ValueError(f"average must be one of {known_averages()}, got {average!r}")
    return cls()


def known_averages() -> tuple:
    """The built-in ``average`` values (:data:`AVERAGES`) followed by the user-registered ones."""
    extra = tuple(n for n, c in AVERAGINGS.items() if n == c.name and n not in ("none", *[a for a in AVERAGES if a]))
    return AVERAGES + extra


@public("mergeable_metrics")
class Metric:
    """Base class. Subclasses set ``name`` to register; ``aliases`` must be unique.

    Class attributes:
        name: canonical name (registry key).
        aliases: other names that resolve to this metric.
        params: accepted keyword parameters with their defaults (``None`` = take from the task).
        positional: the parameter a bare ``@value`` sets (``"average"`` for classification).
        higher_is_better, bounds, sklearn, exact, tasks: metadata.
        reference: a non-scikit-learn reference implementation (docs and tests), if any.
        undefined: when the value is undefined (docs; the policy is NaN plus an
            :class:`UndefinedMetricWarning` unless ``zero_division`` says otherwise).
        full_name: human-readable name for tables and reports (``"ROC AUC"``).
        data_format: ``{role: input format}`` this metric expects (``{"target": "onehot"}``;
            roles ``target``, ``prediction``, ``score``; formats of :mod:`mergeable_metrics.inputs.formats`), used
            when the caller names no format for that role (OnlineMetrics' ``data_format``); the
            format's validation and conversion stay in :mod:`mergeable_metrics.inputs.formats`.
        dependencies: metric strings this metric is computed from (``("precision", "recall")``):
            a plan computes each once from the shared states and passes their values to
            :meth:`compute_from` (see :meth:`dependency_metrics` for their parameters).
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
    reference: ClassVar[str | None] = None
    undefined: ClassVar[str] = ""
    nan_entries_undefined: ClassVar[bool] = True  # NaN entries of an array value are "undefined"
    full_name: ClassVar[str] = ""
    dependencies: ClassVar[tuple[str, ...]] = ()
    data_format: ClassVar[dict[str, str]] = {}
    #: prob_conf_mat's names of the same contract: ``is_multiclass`` (False: binary only, ``tasks``
    #: ``("binary",)``; True: ``("binary", "multiclass")``), ``sklearn_equivalent`` (= ``sklearn``)
    is_multiclass: ClassVar[bool] = True
    sklearn_equivalent: ClassVar[str | None] = None

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        bad = set(cls.data_format) - {"target", "prediction", "score"}
        if bad:
            raise ValueError(f"metric {cls.__name__}: data_format roles must be target, prediction or score, got {sorted(bad)}")
        if "__init__" in cls.__dict__:  # parameters it takes itself belong in its key too
            cls.__init__ = _keeping_init_parameters(cls.__dict__["__init__"])  # type: ignore[method-assign]
        register_named(REGISTRY, cls, "metric")
        try:
            _extension_contract(cls)
        except (TypeError, ValueError):
            for n in [n for n, c in REGISTRY.items() if c is cls]:  # nothing of a failed class stays registered
                del REGISTRY[n]
            raise

    def __init__(self, task: Task, **params: Any):
        if task.kind not in self.tasks:
            fix = f"pass task={self.tasks[0]!r}" if len(self.tasks) == 1 else f"pass task= one of {list(self.tasks)}"
            raise ValueError(f"metric {self.name!r} is not defined for {task.kind} tasks (only {self.tasks}): {fix}")
        unknown = set(params) - set(self.params)
        if unknown:
            raise ValueError(f"metric {self.name!r}: unknown parameter(s) {sorted(unknown)}; accepted: {sorted(self.params)}")
        self.task = task
        self.given = dict(params)
        self.p = {**self.params, **params}
        try:
            self.configure()
        except (ValueError, TypeError, OverflowError) as e:
            if str(e).startswith(f"metric {self.name!r}"):
                raise
            # name the metric and the parameters for errors raised below configure (float('abc'), ...)
            kind = TypeError if isinstance(e, TypeError) else ValueError
            raise kind(f"metric {self.name!r}: bad parameter value in {self.given}: {e}") from None

    def configure(self) -> None:
        """Validate and normalise ``self.p`` (subclasses)."""

    def requires(self) -> list[tuple[type[State], Any]]:
        """The ``(state class, requirement)`` pairs this metric reads. A metric with
        :attr:`dependencies` reads what they read (its :meth:`compute` computes them), so every
        reader of ``requires()`` (interval methods, replicate states, engines) hands it their
        states."""
        out = [(ExampleCountState, None)]
        for dep in self.dependency_metrics().values() if self.dependencies else ():
            out += dep.requires()
        return out

    def needs(self) -> frozenset[str]:
        """The inputs this metric reads, a subset of ``{"target", "prediction", "score",
        "score_matrix", "probability", "measure"}``: ``prediction`` is satisfied by predicted labels
        or by scores (thresholded or argmax), ``score`` needs scores (binary: hard 0/1 predictions
        also do), ``score_matrix`` an (N, K) score matrix, ``probability`` scores that are
        probabilities (validated in [0, 1]; matrix rows summing to 1), ``measure`` a measure column.
        A metric with :attr:`dependencies` needs what they need."""
        if self.dependencies:
            return frozenset().union(*(m.needs() for m in self.dependency_metrics().values()))
        return frozenset({"target", "prediction"})

    @classmethod
    def info(cls) -> dict[str, Any]:
        """Registry metadata for docs and tables: name, aliases, tasks, state kinds per task,
        exact, bounds, ``higher_is_better``, scikit-learn equivalent, reference, summary."""
        states: dict[str, list[str]] = {}
        for kind in cls.tasks:
            task = Task(num_classes=3 if kind == "multiclass" else 2, kind=kind)
            states[kind] = ["?"]
            # a metric may need parameters to be built: try a positional/None parameter at 0.5
            needed = {k: 0.5 for k, v in cls.params.items() if v is None and k == cls.positional}
            for kw in ({}, needed):
                try:
                    m = cls(task, **kw)
                    states[kind] = [c.kind for c, _ in m.requires() if c is not ExampleCountState] or ["example_count"]
                    break
                except Exception:
                    continue
        doc = (cls.__doc__ or "").strip().split("\n\n")[0].replace("\n", " ")
        return {
            "name": cls.name,
            "full_name": cls.display_name(),
            "aliases": list(cls.aliases),
            "tasks": list(cls.tasks),
            "states": states,
            "exact": cls.exact,
            "bounds": list(cls.bounds),
            "higher_is_better": cls.higher_is_better,
            "sklearn": cls.sklearn,
            "reference": cls.reference,
            "summary": " ".join(doc.split()),
        }

    @classmethod
    def display_name(cls) -> str:
        """:attr:`full_name`, or for a metric that sets none its name in words
        (``"my_rate"`` -> ``"My rate"``)."""
        return cls.full_name or cls.name.replace("_", " ").capitalize()

    def compute(self, states: dict[str, State]) -> Any:
        """The value from the states (by kind). Metrics with :attr:`dependencies` compute them
        and return :meth:`compute_from` (a plan computes each dependency once instead)."""
        if self.dependencies:
            return self.compute_from({name: m.compute(states) for name, m in self.dependency_metrics().items()})
        raise NotImplementedError

    def counts(self, states: dict[str, State]) -> dict[str, Any]:
        """The counts of the states this value is computed from, for display (e.g.
        :class:`mergeable_metrics.collection.tracker.SingleMetric`'s ``repr``: ``accuracy: value=0.75 | correct=3 | n=4``):
        ``{name: number or (K,) array}``. By default the example count ``n``."""
        st = states.get("example_count")
        return {} if st is None else {"n": st["count"].item()}

    def compute_from(self, values: dict[str, Any]) -> Any:
        """The value from the values of :attr:`dependencies`, keyed as declared (subclasses
        with dependencies). Values of approximate states come as plain numbers (the certified
        bounds of a dependency are not propagated)."""
        if hasattr(self, "compute_metric"):  # prob_conf_mat's name, the dependencies as keywords
            return self.compute_metric(**values)
        raise NotImplementedError(f"metric {self.name!r} declares dependencies {self.dependencies} but no compute_from")

    def dependency_metrics(self) -> dict[str, "Metric"]:
        """The configured metrics of :attr:`dependencies`, keyed as declared: each string
        resolved for this metric's task, with the parameters given to this metric that the
        dependency also accepts (``fowlkes_mallows@threshold=0.7`` reads ``precision`` and
        ``recall`` at 0.7); parameters in the dependency string win.

        Raises:
            ValueError: an unknown dependency or one that cannot take the parameters.
        """
        cached = self.__dict__.get("_dependency_metrics")
        if cached is not None:
            return cached
        out: dict[str, Metric] = {}
        for text in self.dependencies:
            dep = resolve(text, self.task)
            passed = {k: v for k, v in self.given.items() if k in type(dep).params and k not in dep.given}
            out[text] = type(dep)(self.task, **{**passed, **dep.given}) if passed else dep
        self.__dict__["_dependency_metrics"] = out
        return out

    @property
    def key(self) -> str:
        """The metric's key in results: its display name when it has one (:meth:`named`),
        else :attr:`resolved_key`."""
        return self.__dict__.get("display_name") or self.resolved_key

    def named(self, display_name: str) -> "Metric":
        """A copy of this metric whose results are keyed ``display_name`` (e.g. ``"val_f1"``);
        :attr:`resolved_key` stays the canonical string.

        Raises:
            ValueError: an empty name, or one containing ``@`` (reserved for parameters).
            TypeError: a name that is not a string.
        """
        if not isinstance(display_name, str):
            raise TypeError(f"a metric's display name is a string, got {type(display_name).__name__} {display_name!r}")
        if not display_name.strip() or "@" in display_name:
            raise ValueError(f"a metric's display name is a non-empty string without '@', got {display_name!r} (for {self.resolved_key!r})")
        out = copy.copy(self)
        out.__dict__["display_name"] = display_name
        return out

    @property
    def resolved_key(self) -> str:
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


def _overrides(cls: type, attr: str) -> bool:
    """Whether ``cls`` or a base below :class:`Metric` defines ``attr``."""
    return any(attr in c.__dict__ for c in cls.__mro__ if c is not Metric and issubclass(c, Metric))


def _extension_contract(cls: type["Metric"]) -> None:
    """Check a metric class when it is defined (prob_conf_mat's contract, under both names).

    * ``sklearn_equivalent`` and ``sklearn`` are one attribute (a class sets either).
    * ``is_multiclass`` and ``tasks`` agree: ``is_multiclass = False`` alone makes the metric binary
      only (computed per class with an average, ``name@macro``, or refused on a multiclass task);
      a class setting both inconsistently raises.
    * a registered class computes something: ``compute(states)``, or ``dependencies`` with
      ``compute_from(values)`` or prob_conf_mat's ``compute_metric(**dependencies)``, whose
      arguments must be exactly the dependencies.

    Raises:
        ValueError: ``sklearn`` and ``sklearn_equivalent`` differ; ``is_multiclass`` contradicts
            ``tasks``; ``compute_metric``'s arguments do not match ``dependencies`` (naming the
            missing and the extra ones).
        TypeError: a named class with no computation (naming the methods it may define).
    """
    own = cls.__dict__
    where = f"metric {cls.__qualname__}" + (f" ({own['name']!r})" if own.get("name") else "")
    if "sklearn_equivalent" in own and "sklearn" in own and own["sklearn"] != own["sklearn_equivalent"]:
        raise ValueError(f"{where}: sklearn={own['sklearn']!r} and sklearn_equivalent={own['sklearn_equivalent']!r} differ (they are one attribute)")
    if "sklearn_equivalent" in own and "sklearn" not in own:
        cls.sklearn = own["sklearn_equivalent"]
    else:
        cls.sklearn_equivalent = cls.sklearn
    if "is_multiclass" in own:
        want = ("binary", "multiclass") if own["is_multiclass"] else ("binary",)
        if "tasks" in own and ("multiclass" in own["tasks"]) != bool(own["is_multiclass"]):
            raise ValueError(f"{where}: is_multiclass={own['is_multiclass']!r} contradicts tasks={own['tasks']!r}")
        if "tasks" not in own:
            cls.tasks = want
    else:
        cls.is_multiclass = "multiclass" in cls.tasks
    if "compute_metric" in own:
        params = [p for p in inspect.signature(own["compute_metric"]).parameters.values() if p.name != "self"]
        if any(p.kind is p.VAR_KEYWORD for p in params):
            names = set(cls.dependencies)
        else:
            names = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
        missing, extra = [d for d in cls.dependencies if d not in names], sorted(names - set(cls.dependencies))
        if missing or extra or not cls.dependencies:
            raise ValueError(
                f"{where}: compute_metric's arguments must be its dependencies {tuple(cls.dependencies)}: "
                + ", ".join(x for x in (f"missing {missing}" if missing else "", f"not dependencies {extra}" if extra else "") if x)
                + ("no dependencies declared" if not cls.dependencies else "")
            )
    if own.get("name"):
        computes = _overrides(cls, "compute") or (cls.dependencies and (_overrides(cls, "compute_from") or _overrides(cls, "compute_metric")))
        if not computes:
            hint = (
                "compute_from(values) or compute_metric(...)"
                if cls.dependencies
                else "compute(states), or dependencies with compute_from(values) / compute_metric(...)"
            )
            raise TypeError(f"{where} defines no computation: implement {hint}")


def _keeping_init_parameters(init: Callable[..., None]) -> Callable[..., None]:
    """A subclass's ``__init__`` that records in ``given`` (so in :attr:`Metric.resolved_key`)
    every parameter it took itself rather than passing on to :meth:`Metric.__init__`: a named
    parameter given a value other than its default, and every ``**kwargs`` entry it consumed
    (``mymetric@bar=2`` and ``mymetric@bar=3`` are two keys, never one)."""
    if getattr(init, "_keeps_init_parameters", False):
        return init
    sig = inspect.signature(init)

    @functools.wraps(init)
    def __init__(self: "Metric", *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        try:
            arguments = list(sig.bind(self, *args, **kwargs).arguments.items())[2:]  # past self, task
        except TypeError:
            return
        for name, value in arguments:
            param = sig.parameters[name]
            if param.kind is param.VAR_POSITIONAL:
                items = [(f"{name}{i}", v) for i, v in enumerate(value)]
            elif param.kind is param.VAR_KEYWORD:
                items = list(value.items())  # given by the caller: what reached Metric.__init__ is in given
            elif param.default is not param.empty and _same_value(value, param.default):
                continue
            else:
                items = [(name, value)]
            for k, v in items:
                if k not in self.given:
                    self.given[k] = v

    __init__._keeps_init_parameters = True  # type: ignore[attr-defined]
    return __init__


def _same_value(a: Any, b: Any) -> bool:
    """``a == b`` as one bool (False when they cannot be compared, e.g. arrays of other shapes)."""
    if a is b:
        return True
    try:
        return bool(np.array_equal(a, b)) if isinstance(a, np.ndarray) or isinstance(b, np.ndarray) else bool(a == b)
    except (TypeError, ValueError):
        return False


def same_configuration(a: "Metric", b: "Metric") -> bool:
    """Whether two metrics of one key compute the same thing: one class, the same normalised
    parameters and the same attributes (a metric's own attributes included)."""
    if type(a) is not type(b) or a.resolved_key != b.resolved_key or a.task != b.task:
        return False
    skip = {"display_name", "_dependency_metrics", "task", "given"}
    for k in (a.__dict__.keys() | b.__dict__.keys()) - skip:  # an attribute set on one: the class's on the other
        v, w = getattr(a, k, None), getattr(b, k, None)
        if isinstance(v, dict) and isinstance(w, dict):
            if v.keys() != w.keys() or not all(_same_value(v[i], w[i]) for i in v):
                return False
        elif not _same_value(v, w):
            return False
    return True


def _fmt(v: Any) -> str:
    if v is None:
        return "none"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(int(v)) if v.is_integer() and abs(v) < 1e15 else repr(v)
    return str(v)


def _parse_value(text: str) -> Any:
    low = text.strip().lower()
    if low == "none":
        return None
    if low in ("true", "false"):
        return low == "true"
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return text.strip()


def metric_full_name(key: str) -> str:
    """Human-readable name of a metric key: the metric's ``full_name`` then its parameters,
    ``"f1@macro"`` -> ``"F1 score (macro)"``, ``"roc_auc"`` -> ``"ROC AUC"``; an unknown name is
    returned as it is."""
    name, _, rest = key.partition("@")
    cls = REGISTRY.get(name)
    if cls is None:
        return key
    return cls.display_name() + (f" ({rest.replace('@', ', ')})" if rest else "")


def parse_metric_string(text: str) -> tuple[str, list[Any], dict[str, Any]]:
    """Split ``"name@a@k=v"`` into ``(name, [a], {"k": v})``; numbers are parsed, "none" is None.
    prob_conf_mat's ``"name+k=v+j=w"`` (``+`` before a keyword) is read the same way.

    Raises:
        ValueError: an empty name or parameter, or a parameter given twice.
    """
    if not isinstance(text, str):
        raise TypeError(f"metric must be a string or Metric, got {type(text).__name__}")
    # prob_conf_mat's "name+foo=True+bar=2" beside "name@foo=True": a "+" before "key=" separates
    # parameters too (a "+" inside a value, as in "1e+3", does not)
    name, *rest = [p.strip() for p in re.split(r"@|\+(?=\s*[A-Za-z_]\w*\s*=)", text.strip())]
    if not name or any(not p for p in rest):
        raise ValueError(f"malformed metric string {text!r}")
    positional, keyword = [], {}
    for p in rest:
        if "=" in p:
            k, v = p.split("=", 1)
            if k.strip() in keyword:
                raise ValueError(f"parameter {k.strip()!r} given twice in {text!r}")
            keyword[k.strip()] = _parse_value(v)
        else:
            positional.append(_parse_value(p))
    return name, positional, keyword


def _squash(name: str) -> str:
    """``"areaUnderPR"`` / ``"auc-pr"`` / ``"AUC_PR"`` -> ``"areaunderpr"`` / ``"aucpr"``: lower case,
    letters and digits only (how other libraries' spellings of one name are compared)."""
    return re.sub(r"[^a-z0-9]", "", name.lower())


_PR_AREA_NOTE = "scikit-learn's name for the area under the precision-recall curve; its trapezoid-rule estimate is 'pr_auc_trapezoid'"

# Other libraries' names for a metric this library has under another name (Spark MLlib's evaluators,
# XGBoost / LightGBM / H2O eval metrics, MLflow, TFMA, Keras, scikit-learn scorer strings), squashed
# (see _squash) -> (our metric string, a note or ""). Only used to suggest a name in the message of
# an unknown metric: none of them is accepted as a metric name.
_FOREIGN_NAMES: dict[str, tuple[str, str]] = {
    **{
        k: ("average_precision", _PR_AREA_NOTE)
        for k in (
            "aucpr",  # XGBoost, H2O, torcheval's BinaryAUPRC
            "prauc",  # H2O, CatBoost's PRAUC
            "auprc",
            "aupr",
            "areaunderpr",  # Spark's BinaryClassificationEvaluator
            "areaunderprcurve",
            "precisionrecallauc",  # MLflow's default evaluator
            "aucprecisionrecall",  # TFMA's AUCPrecisionRecall
            "prcurveauc",
        )
    },
    **{k: ("roc_auc", "") for k in ("areaunderroc", "aucroc", "rocauc", "auroccurve", "areaunderroccurve")},
    # Spark's MulticlassClassificationEvaluator and RegressionEvaluator
    "weightedprecision": ("precision@weighted", ""),
    "weightedrecall": ("recall@weighted", ""),
    "weightedtruepositiverate": ("recall@weighted", ""),
    "weightedfmeasure": ("f1@weighted", ""),
    "fmeasure": ("f1", ""),
    "var": ("explained_variance", ""),
    # scikit-learn's multiclass ROC scorers
    "rocaucovr": ("roc_auc@multi_class=ovr", ""),
    "rocaucovo": ("roc_auc@multi_class=ovo", ""),
    "rocaucovrweighted": ("roc_auc@weighted@multi_class=ovr", ""),
    "rocaucovoweighted": ("roc_auc@weighted@multi_class=ovo", ""),
    # XGBoost / LightGBM / Keras
    "mlogloss": ("log_loss", ""),
    "binarylogloss": ("log_loss", ""),
    "multilogloss": ("log_loss", ""),
    "l1": ("mean_absolute_error", ""),
    "l2": ("mean_squared_error", ""),
    "binaryaccuracy": ("accuracy", ""),
    "categoricalaccuracy": ("accuracy", ""),
    "sparsecategoricalaccuracy": ("accuracy", ""),
    "topkcategoricalaccuracy": ("top_k_accuracy", ""),
    "sparsetopkcategoricalaccuracy": ("top_k_accuracy", ""),
}


def unknown_metric_hint(name: str) -> str:
    """`` (did you mean 'x'?)`` for an unknown metric name, or ``""``.

    In order: the name without scikit-learn's ``_score`` / ``_loss`` / ``_error`` suffix; another
    library's name for one of ours (:data:`_FOREIGN_NAMES`, also after scikit-learn's ``neg_``
    scorer prefix or torchmetrics' ``Binary`` / ``Multiclass`` / ``Multilabel`` class prefix); a
    scikit-learn scorer string with an average (``f1_macro`` -> ``f1@macro``); a registered name
    or alias spelled with other case or separators (``meanAbsoluteError``); the closest registered name."""
    lower = name.lower()
    # scikit-learn's function names end in _score / _loss / _error: the name without it first
    stem = re.sub(r"_(score|loss|error)$", "", lower)
    if stem in REGISTRY:
        return f" (did you mean {stem!r}?)"
    squashed: dict[str, str] = {}
    for k, cls in REGISTRY.items():  # the spelling the user meant; the metric's own name where two squash alike
        if k == cls.name or _squash(k) not in squashed:
            squashed[_squash(k)] = k
    candidates = []
    for text in (lower, stem):
        s = _squash(text)
        s = re.sub(r"^neg", "", s) if text.startswith("neg_") else s  # scikit-learn's neg_log_loss scorer
        candidates += [s, re.sub(r"^(binary|multiclass|multilabel)(?=[a-z])", "", s)]  # torchmetrics' BinaryAUROC
        candidates += [re.sub(r"(score|loss|error)$", "", c) for c in candidates[-2:]]
    for s in candidates:
        if s in _FOREIGN_NAMES:
            suggestion, note = _FOREIGN_NAMES[s]
            return f" (did you mean {suggestion!r}?{' ' + note if note else ''})"
    # scikit-learn's scorer strings: f1_macro, precision_weighted, recall_micro, jaccard_samples
    m = re.fullmatch(r"(.+)_(macro|micro|weighted|samples)", lower)
    if m and m.group(1) in REGISTRY and REGISTRY[m.group(1)].params.get("average", "absent") != "absent":
        return f" (did you mean {m.group(1) + '@' + m.group(2)!r}?)"
    for s in candidates:
        if s in squashed:
            return f" (did you mean {squashed[s]!r}?)"
    close = difflib.get_close_matches(stem, list(REGISTRY), n=1, cutoff=0.6)
    close = close or difflib.get_close_matches(lower, list(REGISTRY), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


@public("mergeable_metrics.metrics")
def resolve(metric: "str | Metric", task: Task) -> Metric:
    """Resolve a metric string (or pass through a configured :class:`Metric`) for ``task``.

    Raises:
        ValueError: unknown metric name (the message lists the known ones), bad parameters, or a
            metric not defined for the task.
    """
    if isinstance(metric, Metric):
        return metric
    if hasattr(metric, "for_task") and not isinstance(metric, str):  # a spec such as mergeable_metrics.metrics.measure.MeanMeasure
        return metric.for_task(task)
    name, positional, keyword = parse_metric_string(metric)
    cls = REGISTRY.get(name) or REGISTRY.get(name.lower())
    if cls is None:
        raise ValueError(
            f"unknown metric {name!r}{unknown_metric_hint(name)}; every name and alias is in the metrics table (docs/metrics.md; mergeable_metrics.metrics.base.REGISTRY)"
        )
    per_class = _per_class_request(cls, task, positional)
    if per_class is not None:
        return OneVsRest(task, cls, per_class, **keyword)
    if positional:
        if cls.positional is None or len(positional) > 1:
            raise ValueError(f"metric {name!r} takes no positional parameter, got {positional} in {metric!r}")
        if cls.positional in keyword:
            raise ValueError(f"{cls.positional} given twice in {metric!r}")
        keyword[cls.positional] = positional[0]
    return cls(task, **keyword)


def _binary_confusion_only(cls: type[Metric]) -> bool:
    """Whether ``cls`` is a binary-only metric of the binary confusion counts (what
    :class:`OneVsRest` can compute per class)."""
    if "multiclass" in cls.tasks or "binary" not in cls.tasks or cls is OneVsRest:
        return False
    try:
        m = cls(Task(num_classes=2))
        return all(c in (BinaryConfusionState, ExampleCountState) for c, _ in m.requires())
    except Exception:
        return False


def _per_class_request(cls: type[Metric], task: Task, positional: list[Any]) -> Any:
    """The ``average`` of a binary-only confusion metric asked for per class (``"fmi@macro"``,
    ``"fmi@none"``, a registered averaging), or None: resolve as usual. A binary-only metric on a
    multiclass task with no average is refused (naming the per-class spellings)."""
    if cls.positional is not None or len(positional) > 1:
        return None
    if positional:
        key = "none" if positional[0] is None else positional[0]
        if not isinstance(key, str) or key not in AVERAGINGS or not _binary_confusion_only(cls):
            return None
        if task.kind not in ("binary", "multiclass"):
            return None
        return key
    if task.kind == "multiclass" and _binary_confusion_only(cls):
        raise ValueError(
            f"metric {cls.name!r} is not defined for multiclass tasks (binary only, is_multiclass=False): it is computed per class "
            f"(one vs rest) with an average, e.g. {cls.name + '@none'!r} (per class) or {cls.name + '@macro'!r}; it is never run on the multiclass matrix"
        )
    return None


class OneVsRest(Metric):
    """A binary-only metric of the confusion counts computed per class, one class against the
    rest, then reduced with an :class:`Averaging` (prob_conf_mat's binary metrics with an
    averaging: ``"fmi@macro"``, ``"fmi@none"`` per class, ``"fmi@<registered averaging>"``).

    Class ``c`` as the positive class: ``tp = M[c, c]``, ``fn = M[c].sum() - tp``,
    ``fp = M[:, c].sum() - tp``, the rest ``tn`` (``M`` the confusion matrix, rows true; a binary
    task's 2 x 2 matrix at its threshold). The averaging receives the (K,) values, the support
    (true weight per class) and its own ``dependencies``. Not registered: :func:`resolve` builds it.
    """

    params = {}  # the inner metric's, per instance
    tasks = ("binary", "multiclass")

    def __init__(self, task: Task, inner: type[Metric], average: Any, **params: Any):
        self.inner_cls = inner
        self.average = "none" if average is None else average
        self.averaging = get_averaging(average)
        if self.averaging.name in ("binary", "samples", "micro"):
            raise ValueError(
                f"metric {inner.name!r}@{self.averaging.name}: a per-class binary metric takes a reducing average (none, macro, weighted or a registered one)"
            )
        binary = Task(num_classes=2, threshold=task.threshold, threshold_rule=task.threshold_rule, zero_division=task.zero_division)
        self.inner = inner(binary, **params) if task.kind == "multiclass" else inner(task, **params)
        self.name = inner.name  # type: ignore[misc]
        self.bounds = inner.bounds  # type: ignore[misc]
        self.higher_is_better = inner.higher_is_better  # type: ignore[misc]
        self.params = dict(inner.params)  # type: ignore[misc]
        super().__init__(task, **params)
        t = self.inner.p.get("threshold")
        self.threshold = self.task.threshold if t is None or task.kind != "binary" else float(t)

    def requires(self) -> list[tuple[type[State], Any]]:
        out: list[tuple[type[State], Any]] = [(ExampleCountState, None)]
        if self.task.kind == "binary":
            out += [(BinaryConfusionState, self.threshold)]
        else:
            out += [(ConfusionMatrixState, self.task.num_classes)]
        return out + self.averaging.dependency_requires(self.task)

    def dependency_metrics(self) -> dict[str, Metric]:
        return {}

    def matrix(self, states: dict[str, State]) -> np.ndarray:
        if self.task.kind == "binary":
            return states["binary_confusion"].confusion_matrix(self.threshold)
        return np.asarray(states["confusion_matrix"]["matrix"], dtype=np.float64)

    def compute(self, states: dict[str, State]) -> Any:
        m = self.matrix(states)
        total = float(m.sum())
        values = []
        for c in range(m.shape[0]):
            tp = float(m[c, c])
            fn, fp = float(m[c].sum()) - tp, float(m[:, c].sum()) - tp
            tn = total - tp - fn - fp
            t = self.inner.p.get("threshold")
            t = self.threshold if t is None else float(t)
            one = BinaryConfusionState(BinaryConfusionLayout((t,)), {k: np.array([v]) for k, v in (("tp", tp), ("fp", fp), ("tn", tn), ("fn", fn))})
            values.append(float(self.inner.compute({**states, "binary_confusion": one})))
        v = np.array(values)
        if self.averaging.name == "none":
            return v
        deps = self.averaging.dependency_values(self.task, states) if self.averaging.dependencies else {}
        return self.averaging.reduce(v, m.sum(axis=1), **deps)

    @property
    def resolved_key(self) -> str:
        given = {k: v for k, v in self.given.items() if k not in ("inner", "average")}  # (the wrapper's own arguments)
        return "@".join([self.inner_cls.name, self.averaging.name] + [f"{k}={_fmt(given[k])}" for k in sorted(given)])


# ---------------------------------------------------------------------------------------------
class ExampleCount(Metric):
    """Number of examples (rows) folded, before weighting. TFMA's ``example_count``."""

    name = "example_count"
    full_name = "Example count"
    higher_is_better = None
    bounds = (0.0, math.inf)
    tasks = TASK_KINDS

    def needs(self) -> frozenset[str]:
        return frozenset()

    def compute(self, states: dict[str, State]) -> int:
        return int(states["example_count"]["count"])


class WeightedExampleCount(Metric):
    """Sum of ``sample_weight`` over the examples (equals ``example_count`` unweighted)."""

    name = "weighted_example_count"
    full_name = "Weighted example count"
    higher_is_better = None
    bounds = (0.0, math.inf)
    tasks = TASK_KINDS

    def needs(self) -> frozenset[str]:
        return frozenset()

    def compute(self, states: dict[str, State]) -> float:
        return float(states["example_count"]["weight"])


class TaskKindSupport(NamedTuple):
    """How the shared classification metrics (precision, recall, F-beta, IoU, accuracy) read a
    task kind whose state is defined in a module above this one (see :func:`register_task_kind`).

    Attributes:
        requires: ``metric -> [(state class, layout argument)]``, as :meth:`Metric.requires`.
        prf: ``(metric, states) -> value`` of a precision / recall / F-beta / IoU metric.
        accuracy: ``(metric, states) -> float`` of ``accuracy``.
    """

    requires: Callable[[Any], list[tuple[type[State], Any]]]
    prf: Callable[[Any, dict[str, State]], Any]
    accuracy: Callable[[Any, dict[str, State]], float]


_TASK_KINDS_SUPPORTED: dict[str, TaskKindSupport] = {}


def register_task_kind(kind: str, support: TaskKindSupport) -> None:
    """Let the shared classification metrics read the states of task ``kind`` (other than binary
    and multiclass, which this module reads itself). :mod:`mergeable_metrics.metrics.multilabel` registers
    ``"multilabel"``; the metrics and the registry stay below the modules of such state kinds.

    Raises:
        ValueError: ``kind`` is not a task kind, or is registered twice.
    """
    if kind not in TASK_KINDS or kind in ("binary", "multiclass"):
        raise ValueError(f"register_task_kind: kind must be one of {TASK_KINDS[2:]}, got {kind!r}")
    if kind in _TASK_KINDS_SUPPORTED:
        raise ValueError(f"task kind {kind!r} is registered twice")
    _TASK_KINDS_SUPPORTED[kind] = support


def _task_kind_support(metric: Metric) -> TaskKindSupport:
    support = _TASK_KINDS_SUPPORTED.get(metric.task.kind)
    if support is None:
        raise ValueError(f"metric {metric.name!r}: no state reads {metric.task.kind} tasks (import mergeable_metrics)")
    return support


_CLASS_VALUES: ContextVar[tuple | None] = ContextVar("mm_class_values", default=None)


@contextmanager
def class_values(classes: "tuple | list | None") -> Iterator[None]:
    """Metrics configured inside read ``labels=`` as these class values (``classes=`` of a
    collection or evaluation; :class:`mergeable_metrics.collection.plan.Plan` sets it while it resolves its metrics)."""
    token = _CLASS_VALUES.set(None if classes is None else tuple(classes))
    try:
        yield
    finally:
        _CLASS_VALUES.reset(token)


def labels_param(metric: "Metric", value: Any) -> tuple[tuple[int, ...], str] | None:
    """``labels=`` of a metric: ``(class indices in the order given, canonical text)``, or None.

    ``value`` is the text ``"a|b|c"`` (metric strings), one label, or a sequence. With
    ``classes=`` (:func:`class_values`) labels are class values (``"cat|bird"``); otherwise class
    ids in ``[0, K)`` (labels of a multilabel task: columns in ``[0, L)``). The canonical text
    (``"cat|bird"``, ``"2|0"``) names the labels in the metric's key.

    Raises:
        ValueError: an empty list, a label given twice, a label that is not one of the task's
            classes or the class left out by ``ignore_index`` (each naming the label).
    """
    if value is None:
        return None
    where = f"metric {metric.name!r}: labels"
    raw: list[Any] = []
    if isinstance(value, str):
        raw = [x.strip() for x in value.split("|")] if value.strip() else []
        items = [_parse_value(x) for x in raw]
    elif isinstance(value, (list, tuple, np.ndarray)):
        items = [v.item() if isinstance(v, np.generic) else v for v in value]
    else:
        items = [value.item() if isinstance(value, np.generic) else value]
    if not items:
        raise ValueError(f"{where} is empty; give class labels separated by '|' (labels=0|2)")
    classes = _CLASS_VALUES.get()
    k = metric.task.num_classes
    out: list[int] = []
    for n, v in enumerate(items):
        if classes is not None:
            # numbers match by value (1 and 1.0), strings by equality, as mergeable_metrics.inputs.labels maps them;
            # in a metric string "1" also names the class "1"
            idx = next((i for i, c in enumerate(classes) if not isinstance(v, bool) and isinstance(c, str) == isinstance(v, str) and c == v), None)
            if idx is None and raw:
                idx = next((i for i, c in enumerate(classes) if isinstance(c, str) and c == raw[n]), None)
                v = raw[n] if idx is not None else v
                items[n] = v
            if idx is None:
                raise ValueError(f"{where}: {v!r} is not one of classes={list(classes)!r}")
            if isinstance(v, str) and "|" in v:
                raise ValueError(f"{where}: the class {v!r} contains '|', which separates labels in the metric's key")
        else:
            if isinstance(v, float) and v.is_integer():
                v = int(v)
            if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < k:
                what = "labels" if metric.task.kind == "multilabel" else "classes"
                raise ValueError(f"{where}: {v!r} is not one of the task's {what} 0..{k - 1} (class values need classes=)")
            idx = v
        if idx in out:
            raise ValueError(f"{where}: {v!r} is given twice")
        if idx == metric.task.ignored_class:
            raise ValueError(f"{where}: {v!r} is the class left out by ignore_index={metric.task.ignore_index}")
        out.append(idx)
    shown = items if classes is not None else out
    return tuple(out), "|".join(_fmt(v) for v in shown)


def key_labels(key: str) -> list[Any] | None:
    """The ``labels=`` of a canonical metric string (``"f1@none@labels=cat|bird"`` ->
    ``["cat", "bird"]``: class values with ``classes=``, else class ids), or None without them."""
    try:
        _, _, keyword = parse_metric_string(key)
    except (TypeError, ValueError):
        return None
    text = keyword.get("labels")
    return None if text is None else [_parse_value(x) for x in str(text).split("|")]


def _take_labels(metric: "Metric", values: Any) -> Any:
    """``values`` restricted to the metric's ``labels`` (their first axis), in that order."""
    lab = metric.p.get("labels")
    return values if lab is None else np.asarray(values)[list(lab)]


class _Classification(Metric):
    """Shared parameter handling: ``threshold`` (binary), ``average``, ``zero_division``."""

    params = {"threshold": None, "average": None, "zero_division": None}
    positional = "average"
    tasks = ("binary", "multiclass", "multilabel")

    def configure(self) -> None:
        p = self.p
        if p["threshold"] is not None and self.task.kind not in ("binary", "multilabel"):
            raise ValueError(f"metric {self.name!r}: threshold applies to binary and multilabel tasks only")
        p["threshold"] = self.task.threshold if p["threshold"] is None else float(p["threshold"])
        if not math.isfinite(p["threshold"]):
            raise ValueError(f"metric {self.name!r}: threshold must be finite, got {p['threshold']}")
        if "average" in self.given:
            avg = p["average"]
            try:
                averaging = get_averaging(avg)
            except ValueError as e:
                raise ValueError(f"metric {self.name!r}: {e}") from None
            if avg == "binary" and self.task.kind != "binary":
                raise ValueError(f"metric {self.name!r}: average='binary' needs a binary task")
            if avg == "samples" and self.task.kind != "multilabel":
                raise ValueError(f"metric {self.name!r}: average='samples' needs a multilabel task")
            if self.task.kind not in averaging.tasks:
                raise ValueError(f"metric {self.name!r}: average={averaging.name!r} is defined for {averaging.tasks} tasks only")
            if avg not in AVERAGES:  # a user averaging: its canonical name (aliases find it)
                p["average"] = averaging.name
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
        if self.task.kind == "multiclass":
            return [(ConfusionMatrixState, self.task.num_classes)]
        return _task_kind_support(self).requires(self)

    def kept_classes(self) -> np.ndarray | None:
        """(K,) bool mask of the classes that enter averages: all but ``task.ignored_class``
        (None when no class is ignored)."""
        ign = self.task.ignored_class
        if ign is None:
            return None
        keep = np.ones(self.task.num_classes, dtype=bool)
        keep[ign] = False
        return keep

    def matrix(self, states: dict[str, State]) -> np.ndarray:
        """The K x K (2 x 2 for binary) confusion matrix this metric reads."""
        if self.task.kind == "binary":
            return states["binary_confusion"].confusion_matrix(self.p["threshold"])
        return np.asarray(states["confusion_matrix"]["matrix"], dtype=np.float64)


def set_labels(metric: "Metric") -> None:
    """Check and normalise a metric's ``labels`` (:func:`labels_param`): ``p["labels"]`` becomes
    the class indices and the key names them canonically."""
    checked = labels_param(metric, metric.p.get("labels"))
    if checked is not None:
        metric.p["labels"], metric.given["labels"] = checked


def configure_labels(metric: "Metric") -> None:
    """:func:`set_labels` of an averaged metric: not with ``average="binary"`` (the positive
    class only) or ``"samples"`` (per-row sums over every label)."""
    avg = metric.p.get("average")
    if metric.p.get("labels") is not None and avg in ("binary", "samples"):
        raise ValueError(
            f"metric {metric.name!r}: labels= needs average micro, macro, weighted or none, not "
            f"{avg!r}" + (" (binary: the positive class only)" if avg == "binary" else "")
        )
    set_labels(metric)


class _PRF(_Classification):
    """Precision, recall and F-beta from a confusion matrix, as ``precision_recall_fscore_support``
    with ``labels=range(K)``, or the ``labels`` given: a subset or reordering of the classes
    (``@none`` in that order; ``micro`` sums their counts only; ``macro`` / ``weighted`` average
    them), classes absent from the data included (their values are undefined: ``zero_division``)."""

    params = {**_Classification.params, "labels": None}
    which: ClassVar[str] = ""

    def configure(self) -> None:
        super().configure()
        configure_labels(self)

    def beta(self) -> float:
        return 1.0

    def compute(self, states: dict[str, State]) -> Any:
        if self.task.kind not in ("binary", "multiclass"):
            return _task_kind_support(self).prf(self, states)
        m = self.matrix(states)
        avg, zd = self.p["average"], self.p["zero_division"]
        tp, pred, true = np.diag(m).copy(), m.sum(axis=0), m.sum(axis=1)
        classes: np.ndarray | None = np.arange(tp.shape[0])
        keep = self.kept_classes()
        if self.p.get("labels") is not None:  # the labels given, in their order (none is ignored)
            tp, pred, true, classes = (_take_labels(self, a) for a in (tp, pred, true, classes))
            keep = None
        elif keep is not None and avg != "binary":  # the ignored class leaves every average
            tp, pred, true, classes = tp[keep], pred[keep], true[keep], classes[keep]
        if avg == "binary":
            tp, pred, true, classes = tp[1:], pred[1:], true[1:], None
        elif avg == "micro":
            tp, pred, true = tp.sum(keepdims=True), pred.sum(keepdims=True), true.sum(keepdims=True)
            classes = None
        what = f"{self.key}"
        v = prf_values(self.which, tp, pred, true, self.beta(), zd, what, classes)
        if avg is None:
            if keep is not None:
                full = np.full(keep.shape[0], np.nan)
                full[keep] = v
                return full
            return v
        if avg in ("binary", "micro"):
            return float(v[0])
        return get_averaging(avg).reduce(v, true)

    def counts(self, states: dict[str, State]) -> dict[str, Any]:
        """Per class (the positive class with ``average="binary"``): ``tp`` and ``fp``
        (precision), ``fn`` (recall), both (F-scores), or ``intersection`` and ``union`` (IoU)."""
        if self.task.kind not in ("binary", "multiclass"):
            return super().counts(states)
        m = self.matrix(states)
        tp = np.diag(m).copy()
        fp, fn = m.sum(axis=0) - tp, m.sum(axis=1) - tp
        tp, fp, fn = (_take_labels(self, a) for a in (tp, fp, fn))
        if self.p["average"] == "binary":
            tp, fp, fn = tp[1:], fp[1:], fn[1:]
        out = {"precision": {"tp": tp, "fp": fp}, "recall": {"tp": tp, "fn": fn}, "jaccard": {"intersection": tp, "union": tp + fp + fn}}
        got = out.get(self.which, {"tp": tp, "fp": fp, "fn": fn})
        return {k: v.item() if self.p["average"] == "binary" else v for k, v in got.items()}


def prf_values(which: str, tp: np.ndarray, pred: np.ndarray, true: np.ndarray, beta: float, zd: Any, what: str, classes: Any = None) -> np.ndarray:
    """Precision (``tp / pred``), recall (``tp / true``), Jaccard / IoU (``tp / (pred + true -
    tp)``) or F-beta (``(1 + b^2) tp / (b^2 true + pred)``) per entry, with ``zero_division`` where
    undefined (scikit-learn's ``precision_recall_fscore_support`` and ``jaccard_score``)."""
    if which == "precision":
        return _divide(tp, pred, zd, what, classes)
    if which == "recall":
        return _divide(tp, true, zd, what, classes)
    if which == "jaccard":
        return _divide(tp, pred + true - tp, zd, what, classes)
    if math.isinf(beta):  # the limit is recall (scikit-learn: beta=inf gives recall)
        return _divide(tp, true, zd, what, classes)
    b2 = beta**2
    return _divide((1 + b2) * tp, b2 * true + pred, zd, what, classes)


class Precision(_PRF):
    """Precision ``tp / (tp + fp)``. Source: ``sklearn.metrics.precision_score``.

    Binary: at ``threshold`` (positive class 1). Multiclass: per class, then ``average``
    (micro, macro, weighted; ``none`` returns the (K,) array). Undefined -> ``zero_division``.
    """

    name = "precision"
    full_name = "Precision"
    aliases = ("ppv", "positive_predictive_value", "precision_score")
    which = "precision"
    sklearn = "sklearn.metrics.precision_score"


class Recall(_PRF):
    """Recall ``tp / (tp + fn)``. Source: ``sklearn.metrics.recall_score``."""

    name = "recall"
    full_name = "Recall"
    aliases = ("sensitivity", "tpr", "true_positive_rate", "recall_score")
    which = "recall"
    sklearn = "sklearn.metrics.recall_score"


class F1(_PRF):
    """F1 ``2 tp / (2 tp + fp + fn)``. Source: ``sklearn.metrics.f1_score``."""

    name = "f1"
    full_name = "F1 score"
    aliases = ("f1_score",)
    which = "f1"
    sklearn = "sklearn.metrics.f1_score"


class FBeta(_PRF):
    """F-beta ``(1 + b^2) tp / ((1 + b^2) tp + b^2 fn + fp)``. Source: ``sklearn.metrics.fbeta_score``."""

    name = "fbeta"
    full_name = "F-beta score"
    aliases = ("fbeta_score",)
    which = "fbeta"
    params = {**_PRF.params, "beta": 1.0}
    sklearn = "sklearn.metrics.fbeta_score"

    def configure(self) -> None:
        super().configure()
        b = float(self.p["beta"])
        if not (b >= 0) or math.isnan(b):
            raise ValueError(f"metric 'fbeta': beta must be >= 0, got {self.p['beta']!r}")
        if not math.isinf(b):  # beta**2 (and its products with weight sums) must stay finite
            check_at_most(b, MAX_BETA, "a finite beta", "metric 'fbeta'")
        self.p["beta"] = b

    def beta(self) -> float:
        return self.p["beta"]


class Accuracy(_Classification):
    """Fraction (by weight) of correct predictions: ``trace(C) / sum(C)``; NaN with no examples.

    Multilabel tasks: subset accuracy (every label of a row right), as scikit-learn.
    Source: ``sklearn.metrics.accuracy_score`` (which raises on empty input; we return NaN).
    """

    name = "accuracy"
    full_name = "Accuracy"
    aliases = ("acc", "accuracy_score")
    params = {"threshold": None}
    positional = None
    sklearn = "sklearn.metrics.accuracy_score"

    def configure(self) -> None:
        self.p.update(average="binary" if self.task.kind == "binary" else "micro", zero_division="nan")
        p = self.p
        if p["threshold"] is not None and self.task.kind not in ("binary", "multilabel"):
            raise ValueError(f"metric {self.name!r}: threshold applies to binary and multilabel tasks only")
        p["threshold"] = self.task.threshold if p["threshold"] is None else float(p["threshold"])

    def _show_positional(self) -> bool:
        return False

    def compute(self, states: dict[str, State]) -> float:
        if self.task.kind not in ("binary", "multiclass"):
            return _task_kind_support(self).accuracy(self, states)
        m = self.matrix(states)
        total = m.sum()
        return float(np.trace(m) / total) if total > 0 else float("nan")

    def counts(self, states: dict[str, State]) -> dict[str, Any]:
        """``correct`` (the confusion matrix's trace) and ``n`` (its sum), weighted."""
        if self.task.kind not in ("binary", "multiclass"):
            return super().counts(states)
        m = self.matrix(states)
        return {"correct": float(np.trace(m)), "n": float(m.sum())}


class _Count(_Classification):
    """Weighted confusion count at the threshold (binary; multilabel: (L,) per label)."""

    params = {"threshold": None}
    positional = None
    tasks = ("binary", "multilabel")
    higher_is_better = None
    bounds = (0.0, math.inf)
    index: ClassVar[int] = 0

    def configure(self) -> None:
        self.p.update(average="binary", zero_division="nan")
        self.p["threshold"] = self.task.threshold if self.p["threshold"] is None else float(self.p["threshold"])

    def _show_positional(self) -> bool:
        return False

    def compute(self, states: dict[str, State]) -> Any:
        if self.task.kind == "multilabel":
            return states["multilabel"].label_counts(self.p["threshold"])[self.index]
        return states["binary_confusion"].counts(self.p["threshold"])[self.index]


class TruePositives(_Count):
    """Weighted count of positives predicted positive."""

    name, index = "tp", 0
    full_name = "True positives"
    aliases = ("true_positives",)


class FalsePositives(_Count):
    """Weighted count of negatives predicted positive."""

    name, index = "fp", 1
    full_name = "False positives"
    aliases = ("false_positives",)
    higher_is_better = False


class TrueNegatives(_Count):
    """Weighted count of negatives predicted negative."""

    name, index = "tn", 2
    full_name = "True negatives"
    aliases = ("true_negatives",)


class FalseNegatives(_Count):
    """Weighted count of positives predicted negative."""

    name, index = "fn", 3
    full_name = "False negatives"
    aliases = ("false_negatives",)
    higher_is_better = False


class ConfusionMatrix(_Classification):
    """The (K, K) weighted confusion matrix, rows = true label, columns = prediction
    (``[[tn, fp], [fn, tp]]`` for binary), as scikit-learn. ``normalize`` as scikit-learn's:
    ``"true"`` divides each row by its sum (rows sum to 1), ``"pred"`` each column, ``"all"`` the
    whole matrix; a row or column without examples is 0, as in scikit-learn. ``rows="predicted"``
    (``confusion_matrix@rows=predicted``) gives the transpose, rows = prediction and columns = true
    label (OnlineMetrics' orientation; normalised before it is turned). ``labels=a|b|...`` keeps
    the rows and columns of those classes in that order, as scikit-learn's ``labels`` (rows of
    other classes leave the matrix), before it is normalised. Source:
    ``sklearn.metrics.confusion_matrix(normalize=..., labels=...)`` (``.T`` for ``rows="predicted"``)."""

    name = "confusion_matrix"
    full_name = "Confusion matrix"
    params = {"threshold": None, "normalize": None, "rows": "true", "labels": None}
    positional = None
    tasks = ("binary", "multiclass")
    higher_is_better = None
    bounds = (0.0, math.inf)
    sklearn = "sklearn.metrics.confusion_matrix"

    def configure(self) -> None:
        if self.p["rows"] is True:  # "rows=true" reads as a boolean
            self.p["rows"] = "true"
        if self.p["rows"] not in ("true", "predicted"):
            raise ValueError(f"metric 'confusion_matrix': rows must be 'true' (scikit-learn's orientation) or 'predicted', got {self.p['rows']!r}")
        Accuracy.configure(self)  # type: ignore[arg-type]
        n = self.p["normalize"]
        if isinstance(n, bool):  # "normalize=true" reads as a boolean
            n = self.p["normalize"] = "true" if n else None
        if n not in (None, "true", "pred", "all"):
            raise ValueError(f"metric {self.name!r}: normalize must be true, pred or all, got {n!r}")
        if n is not None:
            self.bounds = (0.0, 1.0)
        set_labels(self)

    def _show_positional(self) -> bool:
        return False

    def compute(self, states: dict[str, State]) -> np.ndarray:
        m = self.matrix(states)
        if self.p["labels"] is not None:  # the rows and columns of the labels, in their order
            lab = list(self.p["labels"])
            m = m[np.ix_(lab, lab)]
        m = normalize_matrix(m, self.p["normalize"])
        return np.ascontiguousarray(m.T) if self.p["rows"] == "predicted" else m


def normalize_matrix(m: np.ndarray, how: str | None) -> np.ndarray:
    """``m`` (..., K, K) normalised over its rows (``"true"``), columns (``"pred"``) or whole
    (``"all"``) as ``sklearn.metrics.confusion_matrix(normalize=...)`` does (0 where the sum is 0);
    ``None``: ``m`` itself."""
    if how is None:
        return m
    axis = {"true": (-1,), "pred": (-2,), "all": (-2, -1)}[how]
    sums = m.sum(axis=axis, keepdims=True)
    return np.where(sums > 0, m / np.where(sums > 0, sums, 1.0), 0.0)


DEFAULT_METRICS = {
    "binary": ("accuracy", "precision", "recall", "f1"),
    "multiclass": ("accuracy", "precision@macro", "recall@macro", "f1@macro", "f1@weighted"),
    "multilabel": ("accuracy", "hamming_loss", "precision@micro", "recall@micro", "f1@micro", "f1@macro"),
    "regression": ("mse", "rmse", "mae", "r2"),
}
