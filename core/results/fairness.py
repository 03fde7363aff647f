"""Fairness across slices: gaps and ratios of a metric between each slice of a spec and a
reference slice (the overall slice, or a named one), from per-slice results.

Everything here reads the values the slices already have (each computed from its own merged
state, so exact and identical in every engine); nothing is recomputed or averaged. A
*criterion* is a metric key (any scalar metric of the results: ``"f1"``, ``"roc_auc"``,
``"recall@threshold=0.7"``) or one of the fairness criteria, each a set of metrics:

========================  ====================  ================================================
criterion                 metrics               as in fairlearn (``method="to_overall"``)
========================  ====================  ================================================
``demographic_parity``    ``selection_rate``    ``demographic_parity_difference`` / ``_ratio``
``equal_opportunity``     ``recall`` (TPR)      ``equal_opportunity_difference`` / ``_ratio``
``equalized_odds``        ``recall``, ``fpr``   ``equalized_odds_difference`` / ``_ratio``
========================  ====================  ================================================

Per slice and metric: ``difference = value - reference`` (signed) and ``ratio = value /
reference``. Per slice: ``difference`` is the largest ``|difference|`` over the criterion's
metrics and ``ratio`` the smallest symmetric ratio ``min(value, reference) / max(value,
reference)`` (1 when both are 0; NaN for a negative value or an undefined one). The criterion's
``difference`` and ``ratio`` are the worst over the slices (NaN slices left out and listed in
``undefined``), and ``worst`` names the slice with the largest difference. Confidence intervals
of the slices' values (``Evaluation(ci=...)``) are carried along (``ci``, ``reference_ci``); no
interval of a difference is derived from them (the slices overlap the overall slice).
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


def criterion_metrics(criterion: str) -> tuple[str, ...]:
    """The metric keys a criterion compares: its metrics, or the metric key itself."""
    return CRITERIA.get(criterion, (criterion,))


def _symmetric_ratio(a: float, b: float) -> float:
    if math.isnan(a) or math.isnan(b) or a < 0 or b < 0:
        return math.nan
    hi = max(a, b)
    return 1.0 if hi == 0 else min(a, b) / hi


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
        difference: the largest ``|difference|`` over the metrics (NaN if one is undefined).
        ratio: the smallest symmetric ratio over the metrics.
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
    """A criterion over the slices of one spec, against a reference slice.

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
    """

    criterion: str
    metrics: tuple[str, ...]
    spec: tuple[str, ...]
    reference: tuple
    reference_values: dict[str, float]
    reference_ci: dict[str, tuple[float, float]]
    slices: list[FairnessSlice]
    suppressed: list[tuple] = field(default_factory=list)

    @property
    def difference(self) -> float:
        """The largest slice difference (NaN slices left out; NaN when none is defined)."""
        d = [s.difference for s in self.slices if not math.isnan(s.difference)]
        return max(d) if d else math.nan

    @property
    def ratio(self) -> float:
        """The smallest slice ratio (NaN slices left out; NaN when none is defined)."""
        r = [s.ratio for s in self.slices if not math.isnan(s.ratio)]
        return min(r) if r else math.nan

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
        """Keys of the slices whose difference is undefined (NaN)."""
        return [s.slice for s in self.slices if math.isnan(s.difference)]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (NaN and inf -> None): the ``"fairness"`` entries of ``metrics.json``."""
        worst = self.worst
        d = {
            "criterion": self.criterion,
            "metrics": list(self.metrics),
            "spec": list(self.spec),
            "reference": {c: v for c, v in self.reference},
            "reference_values": {k: _jsonable(v) for k, v in self.reference_values.items()},
            "difference": _jsonable(self.difference),
            "ratio": _jsonable(self.ratio),
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
        head = [f"{self.criterion} across {', '.join(self.spec)} against {ref}: difference {_num(self.difference)}, ratio {_num(self.ratio)}"
                + (f", worst {self.worst.name}" if self.worst is not None else "")]  # fmt: skip
        header = ["slice", "n"] + [f"{m} (diff)" for m in self.metrics] + ["ratio"]
        rows = [[ref + " (reference)", ""] + [_num(self.reference_values[m]) for m in self.metrics] + [""]]
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


def compute_fairness(slices: Iterable[Any], criterion: str, reference: Any = None, spec: Any = None, metric_keys: Any = None) -> Fairness:
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

    Raises:
        ValueError: the metric is not in the results or not scalar, the reference slice is
            absent or suppressed, or ``spec`` is needed (several specs) or absent.
    """
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
    ref_values = {m: float(ref.metrics[m]) for m in metrics}
    ref_ci = {m: (float(ref.ci[m][0]), float(ref.ci[m][1])) for m in metrics if m in ref.ci}
    out, suppressed = [], []
    for s in slices:
        if tuple(c for c, _ in s.slice) != cols or s.slice == ref.slice:
            continue
        if s.suppressed:
            suppressed.append(s.slice)
            continue
        values = {m: float(s.metrics[m]) for m in metrics}
        diffs = {m: values[m] - ref_values[m] for m in metrics}
        ratios = {m: values[m] / ref_values[m] if ref_values[m] != 0 and not math.isnan(ref_values[m]) else math.nan for m in metrics}
        d = [abs(v) for v in diffs.values()]
        r = [_symmetric_ratio(values[m], ref_values[m]) for m in metrics]
        out.append(FairnessSlice(
            s.slice, s.n, values, diffs, ratios, math.nan if any(math.isnan(x) for x in d) else max(d),
            math.nan if any(math.isnan(x) for x in r) else min(r),
            {m: (float(s.ci[m][0]), float(s.ci[m][1])) for m in metrics if m in s.ci},
        ))  # fmt: skip
    return Fairness(criterion, metrics, cols, ref.slice, ref_values, ref_ci, out, suppressed)
