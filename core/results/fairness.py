"""Fairness across slices: gaps and ratios of a metric between the slices of a spec, from
per-slice results, with fairlearn's methods (``MetricFrame.difference`` / ``ratio``).

Everything here reads the values the slices already have (each computed from its own merged
state, so exact and identical in every engine); nothing is recomputed or averaged. A
*criterion* is a metric key (any scalar metric of the results: ``"f1"``, ``"roc_auc"``,
``"recall@threshold=0.7"``) or one of the fairness criteria, each a set of metrics:

========================  ====================  ================================================
criterion                 metrics               as in fairlearn
========================  ====================  ================================================
``demographic_parity``    ``selection_rate``    ``demographic_parity_difference`` / ``_ratio``
``equal_opportunity``     ``recall`` (TPR)      ``equal_opportunity_difference`` / ``_ratio``
``equalized_odds``        ``recall``, ``fpr``   ``equalized_odds_difference`` / ``_ratio``
========================  ====================  ================================================

Per metric, over the spec's slices (the *groups*; a group whose value is undefined, NaN, is
left out of that metric only):

- ``group_min`` / ``group_max``: the smallest / largest group value;
- ``method="between_groups"`` (**fairlearn's default**): difference ``group_max - group_min``,
  ratio ``group_min / group_max``;
- ``method="to_overall"``: difference ``max |value - reference|``, ratio ``min`` over the groups of
  ``value / reference`` taken as ``min(value, reference) / max(value, reference)``; the reference
  is the overall slice, or the slice named by ``reference=``.

A criterion of several metrics takes the worst case (fairlearn's ``agg="worst_case"``): the largest
difference and the smallest ratio over its metrics. ``method`` defaults to ``"between_groups"``
(fairlearn's default), or to ``"to_overall"`` when a reference slice is named. Ratios of two zeros
are 1 (equal); a ratio of a negative value is NaN. Per slice (against the reference):
``differences`` / ``ratios`` per metric, and the largest ``|difference|`` / smallest symmetric
ratio over the defined metrics; ``worst`` names the slice with the largest. Confidence intervals
of the slices' values (``Evaluation(ci=...)``) are carried along (``ci``, ``reference_ci``); no
interval of a difference is derived from them (the slices overlap the overall slice).

One difference from fairlearn: fairlearn's ``true_positive_rate`` / ``false_positive_rate`` of a
group with no positive (negative) labels is 0 (scikit-learn's ``confusion_matrix(normalize="true")``
turns 0/0 into 0); here that group's recall (fpr) is undefined and left out of that metric's
comparison, while its other metrics (its fpr under ``equalized_odds``) are compared.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterable

import numpy as np

from mergeable_metrics.slicing.assign import slice_name

#: the fairness criteria and the metrics each compares
CRITERIA: dict[str, tuple[str, ...]] = {
    "demographic_parity": ("selection_rate",),
    "equal_opportunity": ("recall",),
    "equalized_odds": ("recall", "fpr"),
}


#: fairlearn's ``method=`` values; the first is fairlearn's default
METHODS: tuple[str, ...] = ("between_groups", "to_overall")


def criterion_metrics(criterion: str) -> tuple[str, ...]:
    """The metric keys a criterion compares: its metrics, or the metric key itself."""
    return CRITERIA.get(criterion, (criterion,))


def _symmetric_ratio(a: float, b: float) -> float:
    if math.isnan(a) or math.isnan(b) or a < 0 or b < 0:
        return math.nan
    hi = max(a, b)
    return 1.0 if hi == 0 else min(a, b) / hi


def _max(values: Iterable[float]) -> float:
    """The largest defined value (NaN when none is defined)."""
    v = [x for x in values if not math.isnan(x)]
    return max(v) if v else math.nan


def _min(values: Iterable[float]) -> float:
    v = [x for x in values if not math.isnan(x)]
    return min(v) if v else math.nan


def _jsonable(v: Any) -> Any:
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, (float, np.floating)):
        v = float(v)
        return v if math.isfinite(v) else None
    return v


@dataclass(frozen=True)
class FairnessSlice:
    """One slice against the reference.

    Attributes:
        slice: the slice key.
        n: its valid rows.
        values: ``{metric: value}`` of the slice.
        differences: ``{metric: value - reference}``.
        ratios: ``{metric: value / reference}`` (NaN when the reference is 0 or undefined).
        difference: the largest ``|difference|`` over the defined metrics (NaN when none is).
        ratio: the smallest symmetric ratio over the defined metrics (NaN when none is).
        ci: ``{metric: (lower, upper)}``: the slice's confidence intervals, when computed.
    """

    slice: tuple
    n: int
    values: dict[str, float]
    differences: dict[str, float]
    ratios: dict[str, float]
    difference: float
    ratio: float
    ci: dict[str, tuple[float, float]] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return slice_name(self.slice)

    def to_dict(self) -> dict[str, Any]:
        d = {
            "slice": {c: v for c, v in self.slice},
            "n": int(self.n),
            "values": {k: _jsonable(v) for k, v in self.values.items()},
            "differences": {k: _jsonable(v) for k, v in self.differences.items()},
            "ratios": {k: _jsonable(v) for k, v in self.ratios.items()},
            "difference": _jsonable(self.difference),
            "ratio": _jsonable(self.ratio),
        }
        if self.ci:
            d["ci"] = {k: _jsonable(list(v)) for k, v in self.ci.items()}
        return d


@dataclass(frozen=True)
class Fairness:
    """A criterion over the slices of one spec: gaps between the slices and to a reference slice.

    Attributes:
        criterion: the criterion name or metric key.
        metrics: the metric keys compared.
        spec: the spec's columns.
        reference: the reference slice's key (``()``: overall).
        reference_values: ``{metric: value}`` of the reference.
        reference_ci: its confidence intervals, when computed.
        slices: one :class:`FairnessSlice` per slice of the spec with values (the reference
            itself left out), in the results' order.
        suppressed: keys of the spec's suppressed slices (no values to compare).
        method: what :attr:`difference` and :attr:`ratio` report: ``"between_groups"``
            (fairlearn's default) or ``"to_overall"`` (against the reference).
        group_min: ``{metric: smallest value over the spec's slices}`` (undefined ones left out).
        group_max: ``{metric: largest value}``.
        differences: ``{method: {metric: difference}}`` for both methods (fairlearn's
            ``MetricFrame.difference(method=...)``).
        ratios: ``{method: {metric: ratio}}`` (``MetricFrame.ratio(method=...)``).
        reference_n: the reference slice's example count (valid rows folded), as each
            :class:`FairnessSlice`'s ``n``.
    """

    criterion: str
    metrics: tuple[str, ...]
    spec: tuple[str, ...]
    reference: tuple
    reference_values: dict[str, float]
    reference_ci: dict[str, tuple[float, float]]
    slices: list[FairnessSlice]
    suppressed: list[tuple] = field(default_factory=list)
    method: str = METHODS[0]
    group_min: dict[str, float] = field(default_factory=dict)
    group_max: dict[str, float] = field(default_factory=dict)
    differences: dict[str, dict[str, float]] = field(default_factory=dict)
    ratios: dict[str, dict[str, float]] = field(default_factory=dict)
    reference_n: int | None = None

    @property
    def difference(self) -> float:
        """The criterion's difference by :attr:`method`: the largest over its metrics
        (fairlearn's ``agg="worst_case"``; undefined metrics left out, NaN when none is defined)."""
        return _max(self.differences[self.method].values())

    @property
    def ratio(self) -> float:
        """The criterion's ratio by :attr:`method`: the smallest over its metrics."""
        return _min(self.ratios[self.method].values())

    @property
    def worst(self) -> FairnessSlice | None:
        """The slice with the largest difference (the first in order among ties); None when
        no difference is defined."""
        best = None
        for s in self.slices:
            if not math.isnan(s.difference) and (best is None or s.difference > best.difference):
                best = s
        return best

    @property
    def undefined(self) -> list[tuple]:
        """Keys of the slices with an undefined (NaN) value or difference of a compared metric
        (left out of that metric's comparison)."""
        return [s.slice for s in self.slices if any(math.isnan(v) for v in s.differences.values())]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (NaN and inf -> None): the ``"fairness"`` entries of ``metrics.json``."""
        worst = self.worst
        d = {
            "criterion": self.criterion,
            "method": self.method,
            "metrics": list(self.metrics),
            "spec": list(self.spec),
            "reference": {c: v for c, v in self.reference},
            "reference_n": None if self.reference_n is None else int(self.reference_n),
            "reference_values": {k: _jsonable(v) for k, v in self.reference_values.items()},
            "difference": _jsonable(self.difference),
            "ratio": _jsonable(self.ratio),
            "group_min": {k: _jsonable(v) for k, v in self.group_min.items()},
            "group_max": {k: _jsonable(v) for k, v in self.group_max.items()},
            "differences": {k: {m: _jsonable(v) for m, v in d.items()} for k, d in self.differences.items()},
            "ratios": {k: {m: _jsonable(v) for m, v in d.items()} for k, d in self.ratios.items()},
            "worst": None if worst is None else {c: v for c, v in worst.slice},
            "slices": [s.to_dict() for s in self.slices],
        }
        if self.reference_ci:
            d["reference_ci"] = {k: _jsonable(list(v)) for k, v in self.reference_ci.items()}
        if self.undefined:
            d["undefined"] = [{c: v for c, v in k} for k in self.undefined]
        if self.suppressed:
            d["suppressed"] = [{c: v for c, v in k} for k in self.suppressed]
        return d

    def format_table(self) -> str:
        """A fixed-width table: one row per slice, value and difference per metric, then the ratio."""
        ref = "Overall" if self.reference == () else slice_name(self.reference)
        head = [f"{self.criterion} across {', '.join(self.spec)} ({self.method}, reference {ref}): difference {_num(self.difference)}, ratio {_num(self.ratio)}"
                + (f", worst {self.worst.name}" if self.worst is not None else "")]  # fmt: skip
        header = ["slice", "n"] + [f"{m} (diff)" for m in self.metrics] + ["ratio"]
        rows = [
            [ref + " (reference)", "" if self.reference_n is None else str(self.reference_n)] + [_num(self.reference_values[m]) for m in self.metrics] + [""]
        ]
        for s in self.slices:
            rows.append([s.name, str(s.n)] + [f"{_num(s.values[m])} ({_num(s.differences[m], True)})" for m in self.metrics] + [_num(s.ratio)])
        widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
        fmt = lambda r: "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))  # noqa: E731
        return "\n".join(head + [fmt(header), "  ".join("-" * w for w in widths)] + [fmt(r) for r in rows])


def _num(v: float, sign: bool = False) -> str:
    if v is None or not math.isfinite(float(v)):
        return "null"
    return f"{float(v):+.4f}" if sign else f"{float(v):.4f}"


def parse_reference(text: str | None) -> tuple | None:
    """A reference slice from its display name: ``"country=DE"``, ``"country=DE, device=ios"``;
    None, ``""`` and ``"Overall"`` are the overall slice. Values stay text (matched against the
    slices' values as text)."""
    if text is None or text.strip() in ("", "Overall", "overall"):
        return ()
    pairs = []
    for part in text.split(","):
        if "=" not in part:
            raise ValueError(f"fairness: a reference slice is column=value[, column=value], got {text!r}")
        c, v = part.split("=", 1)
        pairs.append((c.strip(), v.strip()))
    return tuple(pairs)


def _find(slices: list[Any], key: tuple) -> Any:
    """The slice of ``key``, values compared as given or as their display text, its columns in
    any order (``{"h": "u", "g": "a"}`` finds the crossed slice ``g=a, h=u``)."""
    for s in slices:
        if s.slice == key:
            return s
    want = dict(key)
    for s in slices:
        got = dict(s.slice)
        if len(got) == len(s.slice) and got.keys() == want.keys() and all(slice_name(((c, got[c]),)) == slice_name(((c, want[c]),)) for c in want):
            return s
    return None


def compute_fairness(
    slices: Iterable[Any], criterion: str, reference: Any = None, spec: Any = None, metric_keys: Any = None, method: str | None = None
) -> Fairness:
    """The :class:`Fairness` of ``criterion`` over per-slice results.

    Args:
        slices: :class:`~mergeable_metrics.results.results.SliceResult` objects (``slice``, ``n``, ``metrics``,
            ``ci``, ``suppressed``), of one window.
        criterion: a metric key of the results or a name of :data:`CRITERIA`.
        reference: the reference slice: None / ``()`` (overall), a key tuple, a dict
            ``{"country": "DE"}`` or a display name ``"country=DE"``.
        spec: the columns of the compared slices (a name or a sequence); default: the
            reference's columns, or the only spec of the results.
        metric_keys: ``{given metric string: key in the results}`` for metrics whose
            canonical key differs from the criterion's text (optional).
        method: what ``difference`` / ``ratio`` report: ``"between_groups"`` (fairlearn's
            default; the default here unless a reference slice is named) or ``"to_overall"``
            (against the reference; the default when one is named). Both are computed.

    Raises:
        ValueError: the metric is not in the results or not scalar, the reference slice is
            absent or suppressed, ``spec`` is needed (several specs) or absent, or ``method`` is
            not one of :data:`METHODS`.
    """
    if method is not None and method not in METHODS:
        raise ValueError(f"fairness: method must be one of {METHODS} (fairlearn's; 'between_groups' is its default), got {method!r}")
    slices = list(slices)
    if isinstance(reference, str):
        reference = parse_reference(reference)
    elif isinstance(reference, dict):
        reference = tuple(reference.items())
    reference = tuple(tuple(p) for p in (reference or ()))
    metrics = tuple((metric_keys or {}).get(m, m) for m in criterion_metrics(criterion))
    ref = _find(slices, reference)
    if ref is None:
        raise ValueError(f"fairness: no reference slice {slice_name(reference)!r}; slices: {[s.name for s in slices[:20]]}")
    if ref.suppressed:
        raise ValueError(f"fairness: the reference slice {ref.name!r} is suppressed (below min_slice_size): it has no values to compare with")
    for m in metrics:
        if m not in ref.metrics:
            need = f" (criterion {criterion!r} compares {metrics})" if criterion in CRITERIA else ""
            raise ValueError(f"fairness: metric {m!r} is not in the results{need}; add it to the evaluation's metrics (metrics: {list(ref.metrics)})")
        if np.ndim(ref.metrics[m]) != 0:
            raise ValueError(f"fairness: metric {m!r} is not a scalar (per-class or curve values); name one class's metric instead")
    specs = list(dict.fromkeys(tuple(c for c, _ in s.slice) for s in slices if s.slice != ()))
    if spec is None:
        if reference != ():
            cols = tuple(c for c, _ in ref.slice)
        elif len(specs) == 1:
            cols = specs[0]
        else:
            raise ValueError(f"fairness: the results have {len(specs)} slice specs {specs}: name one with spec=")
    else:
        cols = (spec,) if isinstance(spec, str) else tuple(spec)
        if cols not in specs:
            raise ValueError(f"fairness: no slices of spec {cols}; specs: {specs}")
    if method is None:
        method = "to_overall" if reference != () else "between_groups"
    ref_values = {m: float(ref.metrics[m]) for m in metrics}
    ref_ci = {m: (float(ref.ci[m][0]), float(ref.ci[m][1])) for m in metrics if m in ref.ci}
    out, suppressed, groups = [], [], []
    for s in slices:
        if tuple(c for c, _ in s.slice) != cols:
            continue
        if s.suppressed:
            suppressed.append(s.slice)
            continue
        groups.append({m: float(s.metrics[m]) for m in metrics})
        if s.slice == ref.slice:
            continue
        values = {m: float(s.metrics[m]) for m in metrics}
        diffs = {m: values[m] - ref_values[m] for m in metrics}
        ratios = {m: values[m] / ref_values[m] if ref_values[m] != 0 and not math.isnan(ref_values[m]) else math.nan for m in metrics}
        out.append(FairnessSlice(
            s.slice, s.n, values, diffs, ratios, _max(abs(v) for v in diffs.values()),
            _min(_symmetric_ratio(values[m], ref_values[m]) for m in metrics),
            {m: (float(s.ci[m][0]), float(s.ci[m][1])) for m in metrics if m in s.ci},
        ))  # fmt: skip
    gmin = {m: _min(g[m] for g in groups) for m in metrics}
    gmax = {m: _max(g[m] for g in groups) for m in metrics}
    differences = {
        "between_groups": {m: gmax[m] - gmin[m] for m in metrics},
        "to_overall": {m: _max(abs(s.differences[m]) for s in out) for m in metrics},
    }
    ratios = {
        "between_groups": {m: _symmetric_ratio(gmin[m], gmax[m]) for m in metrics},
        "to_overall": {m: _min(_symmetric_ratio(s.values[m], ref_values[m]) for s in out) for m in metrics},
    }
    return Fairness(criterion, metrics, cols, ref.slice, ref_values, ref_ci, out, suppressed, method, gmin, gmax, differences, ratios, int(ref.n))
