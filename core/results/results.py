"""Per-slice results in a stable shape: JSON (NaN -> null), long-format rows, pandas, a text table."""

from __future__ import annotations

import dataclasses
import datetime as _dt
import difflib
import json
import math
from dataclasses import dataclass, field
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from mergeable_metrics._util.public import public
from mergeable_metrics.states.codec import slice_key_from_json
from mergeable_metrics.results.fairness import Fairness, compute_fairness
from mergeable_metrics.metrics.base import REGISTRY, Task, key_labels, resolve
from mergeable_metrics.collection.plan import MetricKeys, MetricValues, make_task, metric_aliases
from mergeable_metrics.slicing.assign import slice_name, sort_key


def jsonable(value: Any) -> Any:
    """Numbers/arrays as plain JSON values; NaN and +-inf become None (``null``)."""
    if isinstance(value, np.ndarray):
        return [jsonable(v) for v in value.tolist()]
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def window_bound(value: Any) -> _dt.datetime | None:
    """A window bound as a timezone-aware UTC ``datetime`` (None stays None).

    Accepts a ``datetime`` (naive ones are taken as UTC; ``pandas.Timestamp`` is one), an
    ISO-8601 string (``"2013-01-01T05:00:00+00:00"``, ``"...Z"``) or a ``numpy.datetime64``.

    Raises:
        TypeError: another type (e.g. a bare number: seconds or microseconds would be a guess).
    """
    if value is None:
        return None
    if isinstance(value, np.datetime64):
        if np.isnat(value):
            return None
        us = int(value.astype("datetime64[us]").astype(np.int64))
        return _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc) + _dt.timedelta(microseconds=us)
    if isinstance(value, str):
        value = _dt.datetime.fromisoformat(value)
    if isinstance(value, _dt.datetime):
        if hasattr(value, "to_pydatetime"):  # pandas.Timestamp
            value = value.to_pydatetime()
        return value.replace(tzinfo=_dt.timezone.utc) if value.tzinfo is None else value.astimezone(_dt.timezone.utc)
    raise TypeError(f"a window bound is a datetime, an ISO-8601 string or a numpy.datetime64, got {type(value).__name__} {value!r}")


def window_label(start: _dt.datetime | None, end: _dt.datetime | None) -> str:
    """``"2013-01-01T05:00:00+00:00/2013-01-01T06:00:00+00:00"`` (ISO-8601 interval); ``""`` outside windows."""
    return "" if start is None else f"{start.isoformat()}/{end.isoformat() if end is not None else ''}"


#: the long-format columns of a comparison (in the rows of slices with a baseline model only;
#: see SliceResult.comparison)
COMPARISON_COLUMNS = ["baseline_value", "delta", "delta_lower", "delta_upper", "verdict", "comparison_reason"]
#: long-format columns: ``lower`` / ``upper`` are certified bounds (approximate states),
#: ``ci_lower`` / ``ci_upper`` the confidence interval (``ci=``), then the comparison's
ROW_COLUMNS = ["slice", "n", "weight", "skipped", "metric", "index", "value", "lower", "upper", "ci_lower", "ci_upper", *COMPARISON_COLUMNS]
#: long-format columns of windowed results (after ``slice``; only when a slice has a window)
WINDOW_COLUMNS = ["window_start", "window_end"]
#: ``metric`` of the long-format marker row of withheld suppressed slices (``value`` = how many)
SUPPRESSED_SLICES = "suppressed_slices"

#: metrics whose value is an int (``mergeable_metrics.metrics.base.ExampleCount``); long-format rows carry every value
#: as a double, :meth:`Results.from_rows` makes these ints again
INTEGER_METRICS = frozenset({"example_count"})


def slice_to_json(key: tuple) -> str:
    """The ``slice`` column of long rows (and of Spark's results): the slice as the JSON object
    ``metrics.json`` writes (``{"country":"US","age":3}``; ``{}`` for the overall slice)."""
    return json.dumps(dict(key), separators=(",", ":"), allow_nan=False)


def slice_from_json(text: str) -> tuple:
    """Inverse of :func:`slice_to_json`: the slice key ``((column, value), ...)`` (columns in the
    object's order).

    Raises:
        ValueError: not a JSON object of column names to scalar values.
    """
    try:
        obj = json.loads(text)
    except (TypeError, ValueError):
        obj = None
    if not isinstance(obj, dict) or any(isinstance(v, (list, dict)) for v in obj.values()):
        raise ValueError(f"column 'slice' must hold a JSON object of column names to values (as metrics.json's \"slice\"), got {str(text)[:200]!r}")
    return tuple(obj.items())


def _reports_nan_entries(key: str) -> bool:
    cls = REGISTRY.get(key.split("@", 1)[0])
    return True if cls is None else bool(getattr(cls, "nan_entries_undefined", True))


def undefined_entries(metrics: dict[str, Any], ignored_class: int | None = None, labels: dict[str, list[int]] | None = None) -> list[dict[str, Any]]:
    """Which metric values (and which classes of per-class values) are undefined (NaN).

    Args:
        metrics: ``{metric key: value}`` of one slice.
        ignored_class: a class left out on purpose (``ignore_index``); not listed.
        labels: ``{metric key: class id of each first-axis entry}`` for metrics given
            ``labels=`` (:meth:`Results.label_ids`); other arrays' entry i is class i.

    Returns:
        ``[{"metric": key}, {"metric": key, "classes": [i, ...]}, ...]`` in metric order: a scalar
        NaN lists the metric; an array lists the first-axis indices (classes) holding NaN.
        Derived from the values alone, so every engine reports the same list.
    """
    out: list[dict[str, Any]] = []
    for k, v in metrics.items():
        arr = np.asarray(v, dtype=np.float64) if not isinstance(v, str) else np.asarray(0.0)
        nan = np.isnan(arr)
        if not nan.any():
            continue
        if arr.ndim == 0:
            out.append({"metric": k})
        elif _reports_nan_entries(k):
            ids = (labels or {}).get(k)
            at = [int(i) if ids is None or len(ids) != arr.shape[0] else int(ids[i]) for i in np.flatnonzero(nan.reshape(nan.shape[0], -1).any(axis=1))]
            classes = [i for i in at if i != ignored_class]
            if classes:
                out.append({"metric": k, "classes": classes})
    return out


def ignored_class_of(config: dict[str, Any]) -> int | None:
    """The class id ``ignore_index`` removes from averages, from a results config."""
    ii, k = config.get("ignore_index"), config.get("num_classes")
    if config.get("task") == "multiclass" and isinstance(ii, int) and isinstance(k, int) and 0 <= ii < k:
        return ii
    return None


def ci_label(results: "Results") -> str | None:
    """``"95% CI, posterior"``: the level and method of the results' confidence intervals, from
    ``results.config["ci"]`` (None without ``ci``)."""
    ci = (results.config or {}).get("ci")
    if not isinstance(ci, dict) or not ci.get("method"):
        return None
    return f"{100 * float(ci.get('level', 0.95)):.10g}% CI, {ci['method']}"


@dataclass(frozen=True)
class Comparison:
    """A candidate model against a baseline on the same rows, for one metric of one slice.

    Attributes:
        delta: ``candidate - baseline`` (float, or an array for per-class metrics).
        ci: ``(lower, upper)`` paired confidence interval of ``delta`` (None when not computed).
        verdict: ``"better"``, ``"worse"`` or ``"indistinguishable"`` (from the metric's
            ``higher_is_better``, the interval and the tolerance); per-class metrics: a list,
            one verdict per class (see :func:`mergeable_metrics.uncertainty.comparison.verdict`).
        reason: why there is no interval or no verdict in a direction (e.g. no paired method
            for the metric under the comparison's method), else None (JSON only when set).
    """

    delta: Any
    ci: tuple[Any, Any] | None
    verdict: Any
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d = {"delta": jsonable(self.delta), "ci": None if self.ci is None else jsonable(list(self.ci)), "verdict": self.verdict}
        if self.reason is not None:
            d["reason"] = self.reason
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Comparison":
        """Inverse of :meth:`to_dict` (None -> NaN; lists -> arrays)."""
        ci = d.get("ci")
        return cls(_from_json(d["delta"]), None if ci is None else (_from_json(ci[0]), _from_json(ci[1])), d["verdict"], d.get("reason"))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Comparison):
            return NotImplemented
        same = lambda x, y: np.array_equal(np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64), equal_nan=True)  # noqa: E731
        cis = (self.ci is None) == (other.ci is None) and (self.ci is None or all(same(a, b) for a, b in zip(self.ci, other.ci)))
        return same(self.delta, other.delta) and cis and self.verdict == other.verdict and self.reason == other.reason

    __hash__ = None  # type: ignore[assignment]


#: how a scalar comparison reads (:func:`comparison_mark`): the mark's word -> its short text mark
COMPARISON_MARKS = {"better": "+", "worse": "-", "indistinguishable": "=", "not tested": "?", "undefined": "u"}


def comparison_mark(c: Comparison, candidate: Any = None, baseline: Any = None) -> tuple[str, str]:
    """``(mark, reason)`` of a scalar comparison as a reader should see it: ``"undefined"`` when the
    delta is null (the reason names the model whose value is undefined: pass both models' values),
    ``"not tested"`` when no paired interval was computed (the reason says why), else the verdict
    (``"indistinguishable"`` then means that the paired interval holds 0 or the change is within the
    tolerance). The stored ``verdict`` stays as :func:`mergeable_metrics.uncertainty.comparison.verdict` gives it."""
    delta = float(c.delta)
    if not math.isfinite(delta):
        undefined = [who for who, v in (("candidate", candidate), ("baseline", baseline)) if v is not None and np.ndim(v) == 0 and not math.isfinite(float(v))]
        if len(undefined) == 2:
            why = "both models' values are null"
        elif undefined:
            why = f"the {undefined[0]}'s value is null"
        else:
            why = "undefined for the candidate or the baseline model (delta is null)"
        return "undefined", why
    if c.ci is None or not (math.isfinite(float(c.ci[0])) and math.isfinite(float(c.ci[1]))):
        return "not tested", c.reason or "no paired interval was computed for this metric"
    return str(c.verdict), c.reason or ""


@public("mergeable_metrics")
@dataclass(frozen=True)
class SliceResult:
    """Metric values of one slice.

    Attributes:
        slice: the slice key as core's accumulators hold it, a tuple of ``(column, value)`` pairs
            (``()`` = overall); :attr:`key` is the same slice as a dict, the shape users see
            everywhere else (``metrics.json``, the ``slice`` column of long rows and of Spark).
        n: number of valid examples folded (int).
        weight: sum of their weights (float; equals ``n`` unweighted).
        skipped: invalid rows skipped under ``on_invalid="skip"`` (0 otherwise).
        metrics: ``{metric key: float | np.ndarray}``; NaN where undefined.
        bounds: ``{metric key: (lower, upper)}`` certified bounds of metrics computed from
            approximate states (compression error only, not sampling uncertainty; empty when
            every value is exact).
        suppressed: the slice is below its ``min_slice_size``: ``n``, ``weight`` and ``skipped``
            are None and ``metrics`` is empty (JSON: ``"n": null, ..., "suppressed": true``).
        folded_values: for a ``__other__`` slice (``max_slices``), how many distinct slice
            values it sums; None otherwise (JSON ``"folded_values"`` only when set).
        ci: ``{metric key: (lower, upper)}`` confidence intervals of sampling uncertainty
            (``Evaluation(ci=...)``; per-class metrics: arrays); empty without ``ci``.
        comparison: ``{metric key: Comparison}`` against the baseline model
            (``Evaluation(baseline_score_col=...)``); empty without a baseline.
        baseline_metrics: the baseline model's own metric values; empty without a baseline.
        suppressed_slices: for the one entry that stands for a spec's suppressed slices when
            their names are withheld (``slice`` values ``"__suppressed__"``, see
            :mod:`mergeable_metrics.evaluation.suppression`), how many slices it stands for; None otherwise.
        window_start: start of the event-time window the result is of (timezone-aware UTC
            ``datetime``, inclusive; see :mod:`mergeable_metrics.time.windows`); None outside windows.
        window_end: end of that window (exclusive); None outside windows.

    ``undefined`` lists the NaN values (see :func:`undefined_entries`); ``to_dict`` includes it as
    ``"undefined"`` when non-empty.
    """

    slice: tuple
    n: int
    weight: float
    skipped: int
    metrics: dict[str, Any]
    bounds: dict[str, tuple[float, float]] = field(default_factory=dict)
    suppressed: bool = False
    folded_values: int | None = None
    suppressed_slices: int | None = None
    ci: dict[str, Any] = field(default_factory=dict)
    comparison: dict[str, Comparison] = field(default_factory=dict)
    baseline_metrics: dict[str, Any] = field(default_factory=dict)
    window_start: _dt.datetime | None = None
    window_end: _dt.datetime | None = None

    @property
    def window(self) -> tuple[_dt.datetime, _dt.datetime] | None:
        """``(window_start, window_end)``, or None outside windows."""
        return None if self.window_start is None else (self.window_start, self.window_end)

    def with_window(self, start: Any, end: Any) -> "SliceResult":
        """A copy carrying the window bounds (see :func:`window_bound` for accepted values)."""
        return dataclasses.replace(self, window_start=window_bound(start), window_end=window_bound(end))

    def _window_dict(self) -> dict[str, Any]:
        if self.window_start is None:
            return {}
        return {"window_start": self.window_start.isoformat(), "window_end": None if self.window_end is None else self.window_end.isoformat()}

    @property
    def key(self) -> dict[str, Any]:
        """The slice as ``{column: value}`` (``{}`` for the overall slice): ``metrics.json``'s
        ``"slice"``; the ``slice`` column of :meth:`Results.to_rows` and of Spark's results is
        its JSON (:func:`slice_to_json`). A new dict each time."""
        return dict(self.slice)

    @property
    def name(self) -> str:
        """The display name: ``"Overall"``, ``"country=US"``, ``"country=US, age=3"``."""
        return slice_name(self.slice)

    @property
    def undefined(self) -> list[dict[str, Any]]:
        """Undefined (NaN) metrics and classes of this slice, e.g.
        ``[{"metric": "precision"}, {"metric": "f1@none", "classes": [2]}]``."""
        return undefined_entries(self.metrics)

    def to_dict(self, ignored_class: int | None = None, labels: dict[str, list[int]] | None = None) -> dict[str, Any]:
        if self.suppressed:
            d = {"slice": self.key, **self._window_dict(), "n": None, "weight": None, "skipped": None, "metrics": {}, "suppressed": True}
            if self.suppressed_slices is not None:
                d["suppressed_slices"] = int(self.suppressed_slices)
            return d
        d = {
            "slice": self.key,
            **self._window_dict(),
            "n": int(self.n),
            "weight": float(self.weight),
            "skipped": int(self.skipped),
            "metrics": {k: jsonable(v) for k, v in self.metrics.items()},
        }
        if self.bounds:
            d["bounds"] = {k: jsonable(list(v)) for k, v in self.bounds.items()}
        if self.ci:
            d["ci"] = {k: jsonable(list(v)) for k, v in self.ci.items()}
        if self.baseline_metrics:
            d["baseline_metrics"] = {k: jsonable(v) for k, v in self.baseline_metrics.items()}
        if self.comparison:
            d["comparison"] = {k: c.to_dict() for k, c in self.comparison.items()}
        undefined = undefined_entries(self.metrics, ignored_class, labels)
        if undefined:
            d["undefined"] = undefined
        if self.folded_values is not None:
            d["folded_values"] = int(self.folded_values)
        return d

    @classmethod
    def published(
        cls, slice: tuple, n: int, weight: float, skipped: int, metrics: dict[str, Any], bounds: dict, folded_values: int | None = None
    ) -> "SliceResult":
        """``SliceResult(slice=slice, n=n, weight=weight, skipped=skipped, metrics=metrics,
        bounds=bounds, folded_values=folded_values)`` (every other field its default), equal to
        it field for field, built without the dataclass ``__init__`` (a finish builds one per
        slice, thousands at a time)."""
        out = object.__new__(cls)
        d = out.__dict__
        d.update(_SLICE_DEFAULTS)
        d.update(
            slice=slice,
            n=n,
            weight=weight,
            skipped=skipped,
            metrics=metrics,
            bounds=bounds,
            folded_values=folded_values,
            ci={},
            comparison={},
            baseline_metrics={},
        )
        return out


#: the plain defaults of :class:`SliceResult`'s fields (those with a default factory are set by
#: :meth:`SliceResult.published` itself)
_SLICE_DEFAULTS = {f.name: f.default for f in dataclasses.fields(SliceResult) if f.default is not dataclasses.MISSING}
_SLICE_FACTORIES = {f.name for f in dataclasses.fields(SliceResult) if f.default_factory is not dataclasses.MISSING}
assert _SLICE_FACTORIES <= {"bounds", "ci", "comparison", "baseline_metrics"}, _SLICE_FACTORIES  # what published() sets


def _requested_names(config: Any) -> dict[str, str]:
    """``{name the user wrote: result key}`` of ``config["metric_names"]`` (display names, which
    are result keys themselves, map to their canonical strings and are left out by the callers'
    ``key in metrics`` checks)."""
    names = (config or {}).get("metric_names") if isinstance(config, dict) else None
    keys = {k for k in ((config or {}).get("metrics") or ()) if isinstance(k, str)} if isinstance(config, dict) else set()
    # a display name is a result key (config["metrics"]) beside its canonical string: never a copy
    return {k: v for k, v in (names or {}).items() if isinstance(k, str) and isinstance(v, str) and k != v and k not in keys}


def _window_order(s: SliceResult) -> tuple:
    """Sort key of a result's window: results outside windows first, then by (start, end)."""
    if s.window_start is None:
        return (0,)
    return (1, s.window_start, s.window_end or s.window_start)


class _AmbiguousSlice(KeyError):
    """A slice named by key, name or dict that is in several windows."""


def _metric_keys(config: Mapping[str, Any]) -> MetricKeys | None:
    """The :class:`~mergeable_metrics.collection.plan.MetricKeys` of an evaluation's ``config`` (its task and classes),
    or None when the config does not describe a task."""
    if not isinstance(config.get("task"), str):
        return None
    try:
        task = make_task(
            config["task"],
            config.get("num_classes"),
            config.get("threshold", 0.5),
            config.get("threshold_rule", ">="),
            config.get("zero_division", "nan"),
            bool(config.get("multiclass", False)),
            config.get("ignore_index"),
            config.get("num_outputs"),
        )
    except (TypeError, ValueError):
        return None
    return MetricKeys(task, config.get("classes"))


@public("mergeable_metrics")
@dataclass(frozen=True)
class Results:
    """All slices' results, overall first, in a deterministic order.

    Results of event-time windows (:mod:`mergeable_metrics.time.windows`, Beam windows, Spark ``window=``) are one
    ``Results`` whose slices carry ``window_start`` / ``window_end``, ordered by window, then
    overall first and slices in order within each window. :attr:`windows` lists the windows,
    :meth:`window` gives one window's results and :meth:`by_window` all of them.

    Attributes:
        slices: list of :class:`SliceResult`.
        config: JSON-ready description of the evaluation (task, metrics, columns, slices).
    """

    slices: list[SliceResult]
    config: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        names = (self.config or {}).get("metric_names") or {}
        canonical = _metric_keys(self.config or {})
        # every slice's values (and its bounds, intervals, comparisons and baseline values) also
        # answer the names the user wrote, in any spelling (see MetricValues)
        known: dict[tuple, dict[str, str]] = {}  # metric_aliases of each set of keys (the slices mostly share one)

        def aliases_of(values: Any) -> dict[str, str]:
            keys = tuple(values)
            got = known.get(keys)
            if got is None:
                got = known[keys] = metric_aliases(names, keys)
            return got

        for s in self.slices:
            if not isinstance(s.metrics, MetricValues) or (names and not s.metrics.aliases) or s.metrics.canonical is None:
                aliases = aliases_of(s.metrics) if names else getattr(s.metrics, "aliases", {})
                object.__setattr__(s, "metrics", MetricValues(s.metrics, aliases, canonical))
            for attr in ("bounds", "ci", "comparison", "baseline_metrics"):
                values = getattr(s, attr)
                if values and not (isinstance(values, MetricValues) and values.canonical is not None):
                    object.__setattr__(s, attr, MetricValues(values, aliases_of(values) if names else {}, canonical))

    @property
    def resolved_names(self) -> dict[str, str]:
        """``{name the user wrote: canonical metric string}`` where they differ (``{"f1":
        "f1@macro", "val_f1": "f1@macro"}``; ``config["metric_names"]``). Every slice's
        ``metrics`` answers those names too: ``results.overall.metrics["f1"]``."""
        return dict((self.config or {}).get("metric_names") or {})

    @property
    def classes(self) -> list[Any] | None:
        """The class values in index order (``classes=`` of the evaluation; ``config["classes"]``),
        or None when the labels were ``0..K-1``."""
        c = (self.config or {}).get("classes")
        return None if c is None else list(c)

    def class_names(self, k: int) -> list[str]:
        """Display names of classes ``0..k-1``: the ``classes`` values as strings, else ``"0"``, ``"1"``, ..."""
        c = self.classes
        return [str(v) for v in c[:k]] + [str(i) for i in range(len(c), k)] if c is not None else [str(i) for i in range(k)]

    def per_class(self, metric: str, slice: Any = ()) -> dict[Any, Any]:
        """A per-class metric of one slice as ``{class: value}``, by class value when the evaluation
        has ``classes`` (``{"cat": 0.67, "dog": 0.8, ...}``), else by class index.

        Args:
            metric: a per-class metric key (``"f1@none"``; the requested name works too); rows of
                a matrix (``"confusion_matrix"``: true class -> row of predicted counts).
            slice: the slice, named any way :meth:`__getitem__` takes (default overall).

        Raises:
            KeyError: no such slice or metric.
            ValueError: the metric's value is a scalar.
        """
        s = self[slice]
        if metric not in s.metrics:
            raise KeyError(f"no metric {metric!r} in slice {s.name!r}; metrics: {list(s.metrics)}")
        v = np.asarray(s.metrics[metric])
        if v.ndim == 0:
            raise ValueError(f"metric {metric!r} is a scalar ({float(v)!r}), not a per-class value")
        c = self.classes
        labels = c if c is not None and len(c) == v.shape[0] else list(range(v.shape[0]))
        given = self.metric_labels(metric)
        if given is not None and len(given) == v.shape[0]:
            labels = given
        return {lab: (float(x) if np.ndim(x) == 0 else x) for lab, x in zip(labels, v)}

    def label_ids(self) -> dict[str, list[int]]:
        """``{metric key: class id of each per-class entry}`` of the metrics given ``labels=``
        (class values mapped to their index in ``classes``)."""
        out: dict[str, list[int]] = {}
        keys = {k for s in self.slices for k in s.metrics}
        c = self.classes
        for k in keys:
            given = self.metric_labels(k)
            if given is None:
                continue
            if c is None:
                out[k] = [int(v) for v in given]
            else:  # the key names class values as text: numbers match by value, "1" the class "1" too
                found = [
                    next((i for i, cv in enumerate(c) if (isinstance(cv, str) == isinstance(v, str) and cv == v) or str(cv) == str(v)), None) for v in given
                ]
                if None not in found:
                    out[k] = found
        return out

    def metric_labels(self, metric: str) -> list[Any] | None:
        """The classes of a metric's per-class entries when it was given ``labels=``
        (``"f1@none@labels=cat|bird"`` -> ``["cat", "bird"]``, class values with ``classes=``,
        else class ids), or None (entry i is class i)."""
        if "labels=" in metric:
            return key_labels(metric)
        canonical = self.resolved_names.get(metric)
        return None if canonical is None else key_labels(canonical)

    def __getitem__(self, key: Any) -> SliceResult:
        """One slice's result, named any way a slice is named.

        Args:
            key: the slice key tuple (``(("country", "DE"),)``; ``()`` is overall), its display
                name (``"country=DE"``, ``"country=DE, device=ios"``, ``"Overall"``; missing values
                are ``null``), a dict (``{"country": "DE"}``; ``{}`` is overall), an int position
                in :attr:`slices` (negative counts from the end), or a :class:`SliceResult`.

        In windowed results a slice named by key, name or dict is usually in several windows:
        the lookup then raises ``KeyError`` (use ``results.window(start)[key]``); an int position
        or a :class:`SliceResult` (matched with its window) always works.

        Raises:
            KeyError: no such slice (the message lists some slice names), or the slice is in
                several windows.
            IndexError: an int position out of range.
            TypeError: a key of another type.
        """
        if isinstance(key, SliceResult) and key.window_start is not None:
            found = next((s for s in self.slices if s.slice == key.slice and s.window == key.window), None)
            if found is None:
                raise KeyError(f"no slice {key.name!r} in window {window_label(*key.window)}")
            return found
        if isinstance(key, SliceResult):
            key = key.slice
        if isinstance(key, bool):
            raise TypeError(f"a slice is named by a key tuple, a name string, a dict or an int position, got {key!r}")
        if isinstance(key, (int, np.integer)):
            try:
                return self.slices[int(key)]
            except IndexError:
                raise IndexError(f"slice position {int(key)} out of range: the results have {len(self.slices)} slices") from None
        if isinstance(key, str):
            matches = [s for s in self.slices if s.name == key]
        elif isinstance(key, Mapping):  # any column order: {"device": "ios", "country": "DE"}
            want = tuple(key.items())
            matches = [s for s in self.slices if s.slice == want or (len(s.slice) == len(want) > 1 and dict(s.slice) == dict(want))]
        elif isinstance(key, (tuple, list)):
            matches = [s for s in self.slices if s.slice == tuple(tuple(p) for p in key)]
        else:
            raise TypeError(f"a slice is named by a key tuple, a name string, a dict or an int position, got {type(key).__name__}")
        if len(matches) > 1:
            raise _AmbiguousSlice(
                f"slice {key!r} is in {len(matches)} windows; name the window first: results.window(start)[...] "
                f"(windows: {[window_label(*w) for w in self.windows[:5]]}{' ...' if len(self.windows) > 5 else ''})"
            )
        found = matches[0] if matches else None
        if found is None:
            raise KeyError(self._unknown(key))
        return found

    def _unknown(self, key: Any) -> str:
        """The message of an unknown slice: the closest slice names, else the first ones."""
        names = list(dict.fromkeys(s.name for s in self.slices))
        if isinstance(key, str):
            wanted = key
        elif isinstance(key, Mapping):
            wanted = slice_name(tuple(key.items()))
        else:
            try:
                wanted = slice_name(tuple(tuple(p) for p in key))
            except (TypeError, ValueError):
                wanted = str(key)
        close = difflib.get_close_matches(wanted, names, n=5, cutoff=0.5)
        if close:
            return f"no slice {key!r}; did you mean {', '.join(map(repr, close))}? ({len(names)} slices)"
        return f"no slice {key!r}; slices: {names[:20]}{' ...' if len(names) > 20 else ''}"

    def get(self, key: Any, default: Any = None) -> SliceResult | None:
        """The slice named ``key`` (any way :meth:`__getitem__` takes), or ``default`` when
        there is no such slice (a key of a wrong type still raises ``TypeError``)."""
        try:
            return self[key]
        except _AmbiguousSlice:
            raise
        except (KeyError, IndexError):
            return default

    def __iter__(self) -> Iterator[SliceResult]:
        return iter(self.slices)

    def __len__(self) -> int:
        return len(self.slices)

    @property
    def overall(self) -> SliceResult:
        """The overall slice (``KeyError`` for results of several windows: see :meth:`window`)."""
        return self[()]

    @property
    def windows(self) -> list[tuple[_dt.datetime, _dt.datetime]]:
        """The ``(window_start, window_end)`` pairs of the results, in order (``[]`` outside windows)."""
        out: dict[tuple, None] = {}
        for s in self.slices:
            if s.window_start is not None:
                out.setdefault(s.window, None)
        return list(out)

    def window(self, start: Any, end: Any = None) -> "Results":
        """The results of one window (its slices, overall first), with the same config.

        Args:
            start: the window's ``window_start`` (a ``datetime``, naive = UTC, or an ISO-8601 string).
            end: its ``window_end``; needed only when several windows start at ``start``
                (sliding windows of different sizes never mix in one Results, so rarely).

        Raises:
            KeyError: no such window (the message lists some), or ``end`` is needed.
        """
        start, end = window_bound(start), window_bound(end)
        chosen = [w for w in self.windows if w[0] == start and (end is None or w[1] == end)]
        if len(chosen) != 1:
            what = "no window" if not chosen else f"{len(chosen)} windows"
            raise KeyError(
                f"{what} starting at {start.isoformat()}{'' if end is None else ' ending at ' + end.isoformat()}; windows: {[window_label(*w) for w in self.windows[:5]]}"
            )
        return Results([s for s in self.slices if s.window == chosen[0]], self.config)

    def by_window(self) -> dict[tuple[_dt.datetime, _dt.datetime], "Results"]:
        """``{(window_start, window_end): Results}`` of every window, in order."""
        groups: dict[tuple, list[SliceResult]] = {}
        for s in self.slices:
            if s.window_start is not None:
                groups.setdefault(s.window, []).append(s)
        return {w: Results(v, self.config) for w, v in groups.items()}

    def fairness(self, criterion: str, reference: Any = None, spec: Any = None, method: str | None = None) -> Fairness:
        """Gaps and ratios of a metric between the slices of a spec, and to a reference slice
        (:mod:`mergeable_metrics.results.fairness`): ``results.fairness("equal_opportunity")``,
        ``results.fairness("f1", reference="country=US")``.

        Args:
            criterion: ``"demographic_parity"`` (``selection_rate``), ``"equal_opportunity"``
                (``recall``), ``"equalized_odds"`` (``recall`` and ``fpr``) or any scalar metric
                key of the results (also as written in the metrics, e.g. ``"precision_at_recall@recall=0.8"``).
            reference: the overall slice (None, default) or a slice: a display name
                (``"country=US"``), a dict or a key tuple.
            spec: the compared slices' columns (default: the reference's, or the only spec).
            method: what ``difference`` / ``ratio`` report, fairlearn's names:
                ``"between_groups"`` (``group_max - group_min``; fairlearn's default, and the
                default here unless a reference is named) or ``"to_overall"`` (the largest gap
                to the reference; the default when one is named). Both are computed
                (``differences`` / ``ratios``), with ``group_min`` / ``group_max``.

        Raises:
            ValueError: a metric not in the results, an absent or suppressed reference, several
                specs without ``spec``, or windowed results (use ``results.window(start)``).
        """
        if self.windows:
            raise ValueError("fairness compares the slices of one window: results.window(start).fairness(...)")
        return compute_fairness(self.slices, criterion, reference, spec, self._metric_keys(criterion), method)

    def _metric_keys(self, text: str) -> dict[str, str]:
        """``{text: canonical key}`` when ``text`` is a metric string written otherwise than its
        key in these results (``"threshold_at_recall@recall=0.8"`` -> ``"threshold_at_recall@0.8"``)."""
        shown = next((s for s in self.slices if not s.suppressed), None)
        if shown is None or dict.__contains__(shown.metrics, text):
            return {}
        alias = getattr(shown.metrics, "aliases", {}).get(text)  # a name the user wrote (MetricValues)
        if alias is not None and dict.__contains__(shown.metrics, alias):
            return {text: alias}
        if "@" not in text:
            return {}
        cfg = self.config or {}
        try:
            task = Task(num_classes=cfg.get("num_classes") or 2, kind=cfg.get("task") or None)
            key = resolve(text, task).key
        except (ValueError, TypeError):
            return {}
        return {text: key} if key in shown.metrics else {}

    def to_dict(self) -> dict[str, Any]:
        """``{"slices": [{"slice": {col: value}, "n", "weight", "skipped", "metrics",
        ["bounds"], ["ci"], ["undefined"]}], "config", "skipped"}``; NaN becomes None (``null``);
        ``undefined`` lists the slice's undefined metrics and classes when there are any.

        A metric the user asked for under another string than its key (``"f1"`` of a multiclass
        task is ``"f1@macro"``; ``config["metric_names"]``) is in ``"metrics"`` under both, so the
        name asked for is a key of ``metrics.json`` too; :meth:`from_dict` reads it once."""
        ignored = ignored_class_of(self.config)
        requested = _requested_names(self.config)
        if self.windows:  # windowed: each window's invalid rows (a row of sliding windows in each of them)
            overall = [s for s in self.slices if s.slice == ()]
            skipped = None if any(s.suppressed for s in overall) else sum(int(s.skipped) for s in overall)
        else:
            skipped = (None if self.overall.suppressed else int(self.overall.skipped)) if self.slices else 0
        ids = self.label_ids()
        slices = [s.to_dict(ignored, ids) for s in self.slices]
        for d in slices if requested else ():
            m = d["metrics"]
            for name, key in requested.items():
                if key in m and name not in m:
                    m[name] = m[key]
        return {"slices": slices, "skipped": skipped, "config": self.config}

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False)

    def to_rows(self) -> list[dict[str, Any]]:
        """Long format: one row per (slice, metric, index) with keys ``slice`` (the slice as the
        JSON object ``metrics.json`` writes, :func:`slice_to_json`: ``{"country":"US"}``, ``{}``
        overall), ``n``, ``weight``, ``skipped``, ``metric``, ``index`` (None for
        scalars, ``"i"`` or ``"i,j"`` for arrays), ``value`` (float; NaN where undefined) and
        ``lower`` / ``upper`` (certified bounds of approximate metrics, else None) and
        ``ci_lower`` / ``ci_upper`` (the confidence interval of ``ci=``, per cell for arrays;
        None without one, NaN where it is undefined). Windowed results' rows also have
        ``window_start`` / ``window_end`` (UTC ``datetime``) after ``slice``."""
        rows = []
        for s in self.slices:
            win = {} if s.window_start is None else {"window_start": s.window_start, "window_end": s.window_end}
            if s.suppressed:  # one marker row: no counts, no metric (from_rows reads it back)
                row = {"slice": slice_to_json(s.slice), **win, **dict.fromkeys(ROW_COLUMNS[1:])}
                if s.suppressed_slices is not None:  # withheld names: the row says how many slices
                    row.update(metric=SUPPRESSED_SLICES, value=float(s.suppressed_slices))
                rows.append(row)
                continue
            base = {
                "slice": slice_to_json(s.slice),
                **win,
                "n": int(s.n),
                "weight": float(s.weight),
                "skipped": int(s.skipped),
            }
            for k, v in s.metrics.items():
                arr = np.asarray(v, dtype=np.float64)
                lo, hi = s.bounds.get(k, (None, None))
                ci = s.ci.get(k)
                if ci is not None:
                    ci = (np.broadcast_to(np.asarray(ci[0], dtype=np.float64), arr.shape), np.broadcast_to(np.asarray(ci[1], dtype=np.float64), arr.shape))
                if arr.ndim == 0:
                    c_lo, c_hi = (None, None) if ci is None else (float(ci[0]), float(ci[1]))
                    rows.append({
                        **base, "metric": k, "index": None, "value": float(arr), "lower": lo, "upper": hi, "ci_lower": c_lo, "ci_upper": c_hi,
                        **_comparison_cells(s, k, ()),
                    })  # fmt: skip
                else:
                    for idx in np.ndindex(arr.shape):
                        c_lo, c_hi = (None, None) if ci is None else (float(ci[0][idx]), float(ci[1][idx]))
                        rows.append({
                            **base, "metric": k, "index": ",".join(map(str, idx)), "value": float(arr[idx]), "lower": None, "upper": None,
                            "ci_lower": c_lo, "ci_upper": c_hi, **_comparison_cells(s, k, idx),
                        })  # fmt: skip
        return rows

    def to_pandas(self, wide: bool = False, slice_columns: bool = False):
        """Results as a ``pandas.DataFrame`` (needs pandas).

        Args:
            wide: False (default): long format, the rows of :meth:`to_rows` (columns
                ``ROW_COLUMNS``; array metrics one row per cell). True: one row per slice
                (overall first, as Spark's wide layout) with columns ``slice`` (the JSON object
                of :meth:`to_rows`), ``n``, ``weight``, ``skipped`` and one
                float column per scalar metric (NaN where undefined); array metrics and
                bounds and intervals are left out (they are in the long format).
            slice_columns: False (default): the slice is only the ``slice`` column, the JSON
                text ``metrics.json`` writes (``'{"country":"DE"}'``, ``'{}'`` overall). True:
                also one column per slice feature right after it (as TFMA's slicing columns),
                holding the feature's value as the slice has it (``"DE"``, ``3``, ``True``) and
                None in slices without that feature (the overall slice, other specs); a
                feature named like another column (``n``, ``weight``, a metric) is
                ``"slice:<name>"``. Filter with ``df[df["country"] == "DE"]``.
        """
        import pandas as pd

        win = WINDOW_COLUMNS if self.windows else []
        if not wide:
            df = pd.DataFrame(self.to_rows(), columns=[ROW_COLUMNS[0], *win, *ROW_COLUMNS[1:]])
            return self._with_slice_columns(df) if slice_columns else df
        shown = [s for s in self.slices if not s.suppressed]
        names = [k for k, v in shown[0].metrics.items() if np.ndim(v) == 0] if shown else []
        rows = [
            {
                "slice": slice_to_json(s.slice),
                "window_start": s.window_start,
                "window_end": s.window_end,
                "n": None,
                "weight": None,
                "skipped": None,
                **dict.fromkeys(names, float("nan")),
            }
            if s.suppressed
            else {
                "slice": slice_to_json(s.slice),
                "window_start": s.window_start,
                "window_end": s.window_end,
                "n": int(s.n),
                "weight": float(s.weight),
                "skipped": int(s.skipped),
                **{k: float(s.metrics[k]) for k in names},
            }
            for s in self.slices
        ]
        df = pd.DataFrame(rows, columns=["slice", *win, "n", "weight", "skipped", *names])
        return self._with_slice_columns(df) if slice_columns else df

    def _with_slice_columns(self, df: Any) -> Any:
        """``df`` (one row per slice or per slice and metric cell, its ``slice`` column the JSON
        text) with one object column per slice feature after ``slice`` (see :meth:`to_pandas`)."""
        import pandas as pd

        features = list(dict.fromkeys(c for s in self.slices for c, _ in s.slice))
        keys = {slice_to_json(s.slice): dict(s.slice) for s in self.slices}  # the values as the slices hold them
        taken = set(df.columns)
        cols = {}
        for f in features:
            name = f"slice:{f}" if f in taken or f in cols else f
            cols[name] = pd.Series([keys[t].get(f) for t in df["slice"]], index=df.index, dtype=object)
        out = df.copy()
        for i, (name, values) in enumerate(cols.items()):
            out.insert(1 + i, name, values)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Results":
        """Rebuild from :meth:`to_dict` output (None -> NaN; lists -> arrays).

        Reads ``metrics.json`` of older releases too: their certified bounds were named
        ``"intervals"``."""
        slices = []
        requested = _requested_names(data.get("config"))
        for s in data["slices"]:
            metrics = {}
            for k, v in s["metrics"].items():
                if k in requested and requested[k] in s["metrics"]:
                    continue  # the name asked for beside its key (to_dict): read once, under the key
                if isinstance(v, list):
                    metrics[k] = np.array(v, dtype=np.float64)
                else:
                    metrics[k] = float("nan") if v is None else v
            bounds = {k: (_float(v[0]), _float(v[1])) for k, v in s.get("bounds", s.get("intervals", {})).items()}
            ci = {k: (_from_json(v[0]), _from_json(v[1])) for k, v in s.get("ci", {}).items()}
            win = {"window_start": window_bound(s.get("window_start")), "window_end": window_bound(s.get("window_end"))}
            if s.get("suppressed"):
                slices.append(
                    SliceResult(tuple(s["slice"].items()), None, None, None, {}, suppressed=True, suppressed_slices=s.get("suppressed_slices"), **win)
                )
                continue
            slices.append(
                SliceResult(
                    tuple(s["slice"].items()), s["n"], s.get("weight", s["n"]), s.get("skipped", 0), metrics, bounds,
                    folded_values=s.get("folded_values"), ci=ci, **win,
                    baseline_metrics={k: _from_json(v) for k, v in s.get("baseline_metrics", {}).items()},
                    comparison={k: Comparison.from_dict(c) for k, c in s.get("comparison", {}).items()},
                )
            )  # fmt: skip
        return cls(slices, data.get("config", {}))

    @classmethod
    def from_rows(cls, rows: list[dict[str, Any]], config: dict[str, Any] | None = None, spec_order: Any = (), metric_order: Any = ()) -> "Results":
        """Rebuild from long-format rows (:meth:`to_rows`, e.g. collected from Spark).

        Array metrics are reassembled from their ``index`` cells; slices are sorted as in
        :meth:`mergeable_metrics.evaluation.evaluation.Evaluation.finish` (overall first, then ``spec_order``), by window
        first when rows carry ``window_start`` / ``window_end`` (see :func:`window_bound`).

        Raises:
            ValueError: a ``slice`` that is not a JSON object of column names to values; two
                rows of the same slice (compared as decoded values, so ``{"x":-0.0}`` and
                ``{"x":0.0}`` are one slice) give the same metric cell, or
                disagree on the slice's counts, or a slice is both suppressed and computed: one
                of them would otherwise be dropped silently.
        """
        by_slice: dict[tuple, dict[str, Any]] = {}
        cells: dict[tuple, dict[str, dict[tuple, float]]] = {}
        ci_cells: dict[tuple, dict[str, dict[tuple, tuple[float, float]]]] = {}
        suppressed: dict[tuple, int | None] = {}
        seen: set[tuple] = set()
        compared: dict[tuple, dict[str, dict[Any, dict]]] = {}  # slice -> metric -> index -> row

        def duplicate(key: tuple, what: str) -> ValueError:
            where = "" if key[1] is None else f" in window {window_label(*key[1])}"
            return ValueError(f"two result rows for slice {slice_name(key[0])!r} ({key[0]!r}){where} give {what}; one would be dropped")

        for r in rows:
            start = window_bound(r.get("window_start"))
            # files written before the slice became one JSON object carry it in ``slice_key`` (pairs)
            sk = slice_key_from_json(r["slice_key"]) if r.get("slice_key") is not None else slice_from_json(r["slice"])
            key = (sk, None if start is None else (start, window_bound(r.get("window_end"))))
            if r.get("n") is None and r.get("metric") in (None, SUPPRESSED_SLICES):  # a suppressed slice's marker row
                if key in suppressed or key in by_slice:
                    raise duplicate(key, "the slice twice")
                suppressed[key] = None if r.get("metric") is None else int(r["value"])
                continue
            if key in suppressed:
                raise duplicate(key, "the slice twice")
            counts = {"n": int(r["n"]), "weight": float(r["weight"]), "skipped": int(r["skipped"])}
            info = by_slice.setdefault(key, {**counts, "metrics": {}, "bounds": {}, "ci": {}})
            if any(r.get(c) is not None for c in COMPARISON_COLUMNS):
                compared.setdefault(key, {}).setdefault(r["metric"], {})[r.get("index")] = r
            if any(info[c] != v for c, v in counts.items()):
                raise duplicate(key, f"different counts ({ {c: info[c] for c in counts} } and {counts})")
            cell = (key, r["metric"], r.get("index"))
            if cell in seen:
                raise duplicate(key, f"metric {r['metric']!r}" + (f" cell {r['index']}" if r.get("index") is not None else "") + " twice")
            seen.add(cell)
            value = float("nan") if r["value"] is None else float(r["value"])
            if r.get("index") is None:
                # rows hold doubles; an integer metric is an int again, as every engine reports it
                info["metrics"][r["metric"]] = int(value) if r["metric"] in INTEGER_METRICS and value == value else value
                if r.get("lower") is not None or r.get("upper") is not None:
                    info["bounds"][r["metric"]] = (float(r["lower"]), float(r["upper"]))
                if r.get("ci_lower") is not None or r.get("ci_upper") is not None:
                    info["ci"][r["metric"]] = (_float(r.get("ci_lower")), _float(r.get("ci_upper")))
            else:
                info["metrics"].setdefault(r["metric"], None)
                idx = tuple(int(i) for i in str(r["index"]).split(","))
                cells.setdefault(key, {}).setdefault(r["metric"], {})[idx] = value
                if r.get("ci_lower") is not None or r.get("ci_upper") is not None:
                    ci_cells.setdefault(key, {}).setdefault(r["metric"], {})[idx] = (_float(r.get("ci_lower")), _float(r.get("ci_upper")))
        for key, per_metric in cells.items():
            for name, values in per_metric.items():
                shape = tuple(max(i[d] for i in values) + 1 for d in range(len(next(iter(values)))))
                arr = np.full(shape, np.nan)
                for idx, v in values.items():
                    arr[idx] = v
                by_slice[key]["metrics"][name] = arr
                ci_of = ci_cells.get(key, {}).get(name)
                if ci_of is not None:
                    lo, hi = np.full(shape, np.nan), np.full(shape, np.nan)
                    for idx, (a, b) in ci_of.items():
                        lo[idx], hi[idx] = a, b
                    by_slice[key]["ci"][name] = (lo, hi)
        for key, per_metric in compared.items():
            _rows_comparison(by_slice[key], per_metric)
        rank = {m: i for i, m in enumerate(metric_order)}
        for info in by_slice.values():
            info["metrics"] = dict(sorted(info["metrics"].items(), key=lambda kv: rank.get(kv[0], len(rank))))
            for part in ("baseline_metrics", "comparison"):
                if part in info:
                    info[part] = dict(sorted(info[part].items(), key=lambda kv: rank.get(kv[0], len(rank))))
        for key in set(suppressed) - set(by_slice):
            by_slice[key] = {"n": None, "weight": None, "skipped": None, "metrics": {}, "suppressed": True, "suppressed_slices": suppressed[key]}
        order = sorted(by_slice, key=lambda k: ((0,) if k[1] is None else (1, *k[1]), sort_key(k[0], list(spec_order))))
        win = lambda w: {} if w is None else {"window_start": w[0], "window_end": w[1]}  # noqa: E731
        return cls([SliceResult(k, **by_slice[(k, w)], **win(w)) for k, w in order], config or {})

    @classmethod
    def from_slices(cls, slices: list[SliceResult], config: dict[str, Any] | None = None, spec_order: Any = ()) -> "Results":
        """Sort per-slice results (e.g. collected from a Beam PCollection) into a Results."""
        return cls(sorted(slices, key=lambda s: (_window_order(s), sort_key(s.slice, list(spec_order)))), config or {})

    def format_table(self, max_rows: int = 60) -> str:
        """A readable fixed-width table: one row per slice, one column per scalar metric; with
        ``ci``, each value is followed by its interval in parentheses and a last line names the
        method and level (and the metrics without an interval)."""
        if not self.slices:
            return "(no results)"
        computed = [s for s in self.slices if not s.suppressed]
        names = [k for k, v in computed[0].metrics.items() if np.ndim(v) == 0] if computed else []
        windowed = bool(self.windows)
        header = (["window"] if windowed else []) + ["slice", "n"] + names + (["skipped"] if any(s.skipped for s in computed) else [])
        shown = self.slices[:max_rows]
        # columns of whole numbers (counts) print without decimals
        shown_c = [s for s in shown if not s.suppressed]
        whole = {k for k in names if all(_is_whole(s.metrics[k]) for s in shown_c) and any(abs(float(s.metrics[k])) > 1 for s in shown_c)}
        rows = []
        for s in shown:
            if s.suppressed:
                what = "suppressed" if s.suppressed_slices is None else f"{s.suppressed_slices} suppressed"
                rows.append(([window_label(*s.window)] if windowed else []) + [s.name, what] + ["-"] * (len(header) - 2 - windowed))
                continue
            r = (
                ([window_label(*s.window) if s.window else ""] if windowed else [])
                + [s.name, str(s.n)]
                + [_cell(s.metrics[k], k in whole) + _ci_cell(s.ci.get(k)) for k in names]
            )
            if header[-1] == "skipped":
                r.append(str(s.skipped))
            rows.append(r)
        widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
        fmt = lambda r: "  ".join(c.ljust(w) if i <= windowed else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))  # noqa: E731
        lines = [fmt(header), "  ".join("-" * w for w in widths)] + [fmt(r) for r in rows]
        if len(self.slices) > max_rows:
            lines.append(f"... {len(self.slices) - max_rows} more slices")
        label = ci_label(self)
        if label:
            missing = [k for k in names if k in set(self.config["ci"].get("unsupported", ()))]
            lines.append(f"(lower, upper): {label}" + (f"; no interval for {', '.join(missing)}" if missing else ""))
        if any(s.comparison for s in computed):
            lines += ["", self.format_comparison(max_rows)]
        return "\n".join(lines)

    def format_comparison(self, max_rows: int = 60) -> str:
        """The comparison with the baseline model as a fixed-width table: one row per slice, one
        column per scalar metric, ``delta [lower, upper] mark`` (:func:`comparison_mark`: ``+`` better,
        ``-`` worse, ``=`` indistinguishable, ``?`` not tested: no paired interval, ``u`` undefined)."""
        shown = [s for s in self.slices if not s.suppressed and s.comparison]
        if not shown:
            return "(no comparison)"
        names = [k for k, c in shown[0].comparison.items() if np.ndim(c.delta) == 0]
        comp = self.config.get("comparison", {})
        head = (
            f"comparison: delta = candidate - baseline, {comp.get('method', 'analytic')} {comp.get('level', 0.95):.0%} paired interval, "
            f"mark + better, - worse, = indistinguishable (the interval holds 0), ? not tested (no paired interval), "
            f"u undefined (a model's value is null), tolerance {comp.get('tolerance', 0.0):g}"
        )
        rows = []
        for s in shown[:max_rows]:
            r = [s.name]
            for k in names:
                c = s.comparison.get(k)
                if c is None:
                    r.append("")
                    continue
                d = float(c.delta)
                text = f"{d:+.4f}" if math.isfinite(d) else "null"
                if c.ci is not None and math.isfinite(float(c.ci[0])):
                    text += f" [{float(c.ci[0]):+.4f}, {float(c.ci[1]):+.4f}]"
                r.append(f"{text} {COMPARISON_MARKS[comparison_mark(c, s.metrics.get(k), s.baseline_metrics.get(k))[0]]}")
            rows.append(r)
        header = ["slice"] + names
        widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
        fmt = lambda r: "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))  # noqa: E731
        lines = [head, fmt(header), "  ".join("-" * w for w in widths)] + [fmt(r) for r in rows]
        if len(shown) > max_rows:
            lines.append(f"... {len(shown) - max_rows} more slices")
        return "\n".join(lines)


def _rows_comparison(info: dict[str, Any], per_metric: dict[str, dict[Any, dict]]) -> None:
    """Rebuild ``baseline_metrics`` and ``comparison`` of one slice from its rows' comparison
    columns (:func:`_comparison_cells`; array metrics from their ``index`` cells)."""
    num = lambda v: float("nan") if v is None else float(v)  # noqa: E731
    base, comp = info.setdefault("baseline_metrics", {}), info.setdefault("comparison", {})
    for metric, cells in per_metric.items():
        if None in cells:  # a scalar metric
            r = cells[None]
            base[metric] = int(num(r["baseline_value"])) if metric in INTEGER_METRICS and r["baseline_value"] is not None else num(r["baseline_value"])
            if r.get("verdict") is not None:
                ci = None if r.get("delta_lower") is None and r.get("delta_upper") is None else (num(r["delta_lower"]), num(r["delta_upper"]))
                comp[metric] = Comparison(num(r["delta"]), ci, r["verdict"], r.get("comparison_reason"))
            continue
        idx = {tuple(int(i) for i in str(k).split(",")): r for k, r in cells.items()}
        shape = tuple(max(i[d] for i in idx) + 1 for d in range(len(next(iter(idx)))))
        arrays = {c: np.full(shape, np.nan) for c in ("baseline_value", "delta", "delta_lower", "delta_upper")}
        verdicts = np.full(shape, None, dtype=object)
        for i, r in idx.items():
            for c, a in arrays.items():
                a[i] = num(r.get(c))
            verdicts[i] = r.get("verdict")
        base[metric] = arrays["baseline_value"]
        first = next(iter(idx.values()))
        if first.get("verdict") is not None:
            has_ci = any(r.get("delta_lower") is not None for r in idx.values())
            ci = (arrays["delta_lower"], arrays["delta_upper"]) if has_ci else None
            comp[metric] = Comparison(arrays["delta"], ci, verdicts.tolist(), first.get("comparison_reason"))


def _comparison_cells(s: SliceResult, key: str, idx: tuple) -> dict[str, Any]:
    """The comparison columns of one (metric, index) row (None without a baseline model)."""
    if not s.comparison and not s.baseline_metrics:
        return dict.fromkeys(COMPARISON_COLUMNS)
    pick = lambda v: None if v is None else float(np.asarray(v, dtype=np.float64)[idx])  # noqa: E731
    out: dict[str, Any] = {"baseline_value": pick(s.baseline_metrics.get(key))}
    c = s.comparison.get(key)
    if c is None:
        return {**out, "delta": None, "delta_lower": None, "delta_upper": None, "verdict": None, "comparison_reason": None}
    verdict = c.verdict
    for i in idx:
        verdict = verdict[i]
    out.update(
        delta=pick(c.delta), delta_lower=None if c.ci is None else pick(c.ci[0]), delta_upper=None if c.ci is None else pick(c.ci[1]),
        verdict=verdict, comparison_reason=c.reason,
    )  # fmt: skip
    return out


def _float(v: Any) -> float:
    """A JSON / row number as a float (None -> NaN)."""
    return float("nan") if v is None else float(v)


def _from_json(v: Any) -> Any:
    """A JSON interval end: a float (None -> NaN), or a float64 array for per-class lists."""
    return np.array(v, dtype=np.float64) if isinstance(v, list) else _float(v)


def _is_whole(v: Any) -> bool:
    v = float(v)
    return not math.isfinite(v) or v.is_integer()


def _ci_cell(ci: Any) -> str:
    if ci is None or np.ndim(ci[0]) != 0:
        return ""
    return f" ({_cell(ci[0])}, {_cell(ci[1])})"


def _cell(v: Any, whole: bool = False) -> str:
    v = float(v)
    if not math.isfinite(v):
        return "null"
    return f"{v:.0f}" if whole else f"{v:.4f}"
