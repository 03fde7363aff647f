"""A self-contained HTML report of :class:`mergeable_metrics.Results`, and the plots behind it.

:func:`write_report` renders one HTML file (Jinja2 template ``pipelines/templates/report.html.j2``)
with the overall and per-slice tables (sortable: click a column header, or open the file with
``#sort=TABLE:COLUMN:asc|desc``), and matplotlib figures embedded as inline base64 PNG images.
Nothing is fetched from the network when viewing it: a Content-Security-Policy in the page forbids
any load other than inline data.

Figures appear only when their data exists in the results:

==========================  ===================================================================
figure (``data-figure``)     shown when
==========================  ===================================================================
``roc``                      a ``roc_curve`` metric is present (legend: ``roc_auc`` if present)
``pr``                       a ``precision_recall_curve`` metric (legend: ``average_precision``)
``reliability``              a ``reliability_diagram`` metric (title: ``ece`` if present)
``confusion_matrix``         a ``confusion_matrix`` metric
``predicted_vs_actual``      a regression run with slices and ``mean_prediction``, ``mean_label``
``residuals``                a regression run with slices and ``mean_prediction``, ``mean_error``
                             (both per slice: the regression states hold sums, not rows)
``slices``                   one bar chart per scalar metric when there are slices besides the
                             overall one, ordered by the metric with small slices (fewer than
                             ``small_slice_size`` rows, default 100) hatched and last; certified
                             ``bounds`` are drawn as error bars, confidence intervals (``ci``) as
                             grey bars
``windows``                  windowed results: event-time windows (slices carrying
                             ``window_start``; the tables then show the latest window), or
                             ``windows=``, or a ``window_col`` in ``results.config`` naming a slice column
``accuracy_matrix``          a continual-learning accuracy matrix metric (a metric class with
                             ``report_figure = "accuracy_matrix"``, or named ``accuracy_matrix``)
==========================  ===================================================================

Every table row and chart label gives the slice's ``n``; headers and titles use short metric
names (:func:`short_name`: without ``capacity`` and ``drop_intermediate``), the full key is in
the tooltip (``title=``) or the caption. The ``weight`` column appears only when a weight column
is used; the threshold only where it applies (:func:`threshold_applies`).

A metric class may set ``report_figure`` to one of ``"roc"``, ``"pr"``, ``"reliability"``,
``"confusion_matrix"``, ``"accuracy_matrix"`` to opt into a figure without a change here.

The ``plot_*`` functions return a ``matplotlib.figure.Figure`` (built without pyplot, so no
display or backend is needed); pass ``ax=`` to draw into an existing axes instead
(``report.plot_roc(results)`` ...; :mod:`core` never imports this module).
"""

from __future__ import annotations

import base64
import datetime as _dt
import io as _io
import json
import math
import os
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from mergeable_metrics.metrics.base import metric_full_name
from mergeable_metrics.pipelines.errors import require
from mergeable_metrics.results.results import COMPARISON_MARKS, Results, SliceResult, ci_label, comparison_mark, jsonable
from mergeable_metrics.slicing.assign import slice_name

TEMPLATES = Path(__file__).resolve().parent / "templates"
TEMPLATE = "report.html.j2"

#: canonical metric name -> figure kind
FIGURE_KINDS = {
    "roc_curve": "roc",
    "precision_recall_curve": "pr",
    "reliability_diagram": "reliability",
    "confusion_matrix": "confusion_matrix",
    "accuracy_matrix": "accuracy_matrix",
    "continual_accuracy_matrix": "accuracy_matrix",
    "task_accuracy_matrix": "accuracy_matrix",
}
#: scalar metrics that are counts, not rates: no per-slice bar chart by default
COUNT_METRICS = {"tp", "fp", "tn", "fn", "example_count", "weighted_example_count"}
MAX_CURVE_SLICES = 6


# -- metric lookup -------------------------------------------------------------------------
def base_name(key: str) -> str:
    """``"roc_auc@capacity=1000"`` -> ``"roc_auc"``."""
    return key.split("@", 1)[0].strip()


def metric_class(key: str) -> Any:
    """The registered metric class of a metric key (aliases resolve), or None."""
    from mergeable_metrics.metrics.base import REGISTRY

    name = base_name(key)
    return REGISTRY.get(name) or REGISTRY.get(name.lower())


def canonical_name(key: str) -> str:
    cls = metric_class(key)
    return cls.name if cls is not None else base_name(key)


#: metric parameters that set how a value is approximated or drawn, not what is measured: short
#: display names leave them out (the full key stays in tooltips, legends and captions)
DISPLAY_OMITTED_PARAMS = frozenset({"capacity", "drop_intermediate", "max_k"})
#: slices with fewer rows are marked "small" in the per-slice bar charts (``small_slice_size=``)
SMALL_SLICE_SIZE = 100


def short_name(key: str) -> str:
    """The display name of a metric key: without the parameters of
    :data:`DISPLAY_OMITTED_PARAMS` (``"average_precision@capacity=1000"`` ->
    ``"average_precision"``; ``"f1@threshold=0.7"`` stays as it is)."""
    name, *params = [p.strip() for p in key.split("@")]
    return "@".join([name, *(p for p in params if p.split("=", 1)[0].strip() not in DISPLAY_OMITTED_PARAMS)])


def display_names(keys: Iterable[str]) -> dict[str, str]:
    """Key -> display name (:func:`short_name`; the full key where two keys would share one)."""
    keys = list(keys)
    short = {k: short_name(k) for k in keys}
    seen: dict[str, int] = {}
    for v in short.values():
        seen[v] = seen.get(v, 0) + 1
    return {k: v if seen[v] == 1 else k for k, v in short.items()}


def n_text(s: SliceResult) -> str:
    """``"n=1,234"``: the rows of a slice, as every table and chart label shows them."""
    return f"n={int(s.n):,}" if s.n is not None else "n=suppressed"


def is_weighted(results: Results) -> bool:
    """True when a weight column was used (``weight_col`` in the config, or a weight unlike n)."""
    if (results.config or {}).get("weight_col"):
        return True
    return any(s.n is not None and s.weight is not None and float(s.weight) != float(s.n) for s in results.slices)


def class_labels(results: Results, k: int, metric: str | None = None) -> list[str]:
    """Names of ``k`` classes: the ``labels=`` of ``metric`` when it has ``k`` of them, else
    ``results.config["classes"]`` when it has ``k`` of them, else 0..k-1."""
    given = None if metric is None else results.metric_labels(metric)
    if given is not None and len(given) == k:
        return [str(c) for c in given]
    classes = (results.config or {}).get("classes")
    if isinstance(classes, (list, tuple)) and len(classes) == k:
        return [str(c) for c in classes]
    return [str(i) for i in range(k)]


#: metrics computed at a decision threshold on scores (a binary / multilabel ``threshold`` applies)
def threshold_applies(results: Results) -> bool:
    """True when the run's ``threshold`` changes a value: a binary or multilabel task scored with
    ``score_col`` and at least one metric with a ``threshold`` parameter (precision, f1, ...)."""
    cfg = results.config or {}
    if cfg.get("task") not in ("binary", "multilabel") or not cfg.get("score_col"):
        return False
    first = _first(results)
    keys = list(first.metrics) if first is not None else list(cfg.get("metrics") or ())
    return any("threshold" in (getattr(metric_class(k), "params", None) or {}) for k in keys)


def figure_kind(key: str) -> str | None:
    """The figure a metric feeds (see the module docstring), or None."""
    cls = metric_class(key)
    kind = getattr(cls, "report_figure", None) if cls is not None else None
    return kind or FIGURE_KINDS.get(canonical_name(key))


def slice_counts(results: Results) -> tuple[int, int]:
    """``(published, suppressed)``: the slices with values, and the slices withheld below their
    ``min_slice_size`` (an entry standing for several withheld slices counts them all). The run
    box, the header and the notes beside the tables all give these two numbers."""
    published = sum(1 for s in results.slices if not getattr(s, "suppressed", False))
    return published, sum(s.suppressed_slices or 1 for s in results.slices if getattr(s, "suppressed", False))


def computed(results: Results) -> list[SliceResult]:
    """The slices that have values (not ``suppressed`` below their ``min_slice_size``)."""
    return [s for s in results.slices if not getattr(s, "suppressed", False)]


def _first(results: Results) -> SliceResult | None:
    shown = computed(results)
    return shown[0] if shown else None


def metric_keys(results: Results, kind: str | None = None, canonical: str | None = None) -> list[str]:
    """Metric keys of the results (in order) feeding figure ``kind`` or of canonical name."""
    first = _first(results)
    if first is None:
        return []
    keys = list(first.metrics)
    names = getattr(results, "resolved_names", {})  # display names: their metric is the canonical string's
    if kind is not None:
        keys = [k for k in keys if figure_kind(names.get(k, k)) == kind]
    if canonical is not None:
        keys = [k for k in keys if canonical_name(names.get(k, k)) == canonical]
    return keys


def scalar_metrics(results: Results, include_counts: bool = False) -> list[str]:
    """Keys of the scalar metrics (in order); counts (tp, fp, ...) only with ``include_counts``."""
    first = _first(results)
    if first is None:
        return []
    out = []
    for k, v in first.metrics.items():
        if np.ndim(v) != 0 or isinstance(v, str):
            continue
        if not include_counts and canonical_name(k) in COUNT_METRICS:
            continue
        out.append(k)
    return out


def _pick(results: Results, kind: str, metric: str | None) -> str:
    keys = metric_keys(results, kind)
    first = _first(results)
    if metric is not None:
        if metric in keys or (first is not None and metric in first.metrics):
            return metric
        raise ValueError(f"metric {metric!r} is not in the results; available: {list(first.metrics) if first is not None else []}")
    if not keys:
        names = {"roc": "roc_curve", "pr": "precision_recall_curve", "reliability": "reliability_diagram",
                 "confusion_matrix": "confusion_matrix", "accuracy_matrix": "accuracy_matrix"}  # fmt: skip
        raise ValueError(f"no {names.get(kind, kind)} metric in the results; add it to the metrics (e.g. metrics=[..., {names.get(kind, kind)!r}])")
    return keys[0]


def _slice(results: Results, key: Any) -> SliceResult:
    found = key if isinstance(key, SliceResult) else results[key]
    if getattr(found, "suppressed", False):
        raise ValueError(f"slice {found.name!r} is suppressed (fewer rows than its min_slice_size): it has no values to plot")
    return found


def curve_slices(results: Results, metric: str, slices: Iterable[Any] | None = None, max_slices: int = MAX_CURVE_SLICES) -> list[SliceResult]:
    """Slices whose curves are drawn: ``slices`` if given; else the overall slice plus the largest
    (by weight) slices of the first one-column slice spec, at most ``max_slices`` of them."""
    if slices is not None:
        return [_slice(results, s) for s in slices]
    out = [s for s in computed(results) if s.slice == ()]
    by_spec: dict[tuple, list[SliceResult]] = {}
    for s in computed(results):
        if s.slice:
            by_spec.setdefault(tuple(c for c, _ in s.slice), []).append(s)
    for cols, members in by_spec.items():
        if len(cols) == 1:
            members = [m for m in members if _curve_ok(m.metrics.get(metric))]
            out += sorted(members, key=lambda m: -float(m.weight))[:max_slices]
            break
    return out


def _curve_ok(v: Any) -> bool:
    if v is None:
        return False
    a = np.asarray(v, dtype=np.float64)
    return a.ndim == 2 and a.shape[0] > 0 and np.isfinite(a[:, :2]).all()


# -- matplotlib helpers --------------------------------------------------------------------
def _mpl(module: str) -> Any:
    """A matplotlib module, or one line naming the extra (``pip install 'mergeable-metrics[report]'``)."""
    return require(module, "report", "the report's figures")


def _new_axes(ax: Any, figsize: tuple[float, float]) -> tuple[Any, Any]:
    if ax is not None:
        return ax.figure, ax
    Figure = _mpl("matplotlib.figure").Figure

    fig = Figure(figsize=figsize, layout="constrained")
    return fig, fig.add_subplot()


def _fmt(v: Any, digits: int = 4) -> str:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return str(v)
    if not math.isfinite(f):
        return "null" if math.isnan(f) else ("inf" if f > 0 else "-inf")
    if f.is_integer() and abs(f) >= 1:
        return f"{int(f):,}"
    return f"{f:.{digits}f}"


def _value_text(key: str, v: Any) -> str:
    """A metric value as the report prints it: counts as integers, rates to 4 decimals."""
    return _fmt(v) if canonical_name(key) in COUNT_METRICS or not math.isfinite(float(v)) else f"{float(v):.4f}"


def _ci_pair(s: SliceResult, key: str) -> tuple[float, float] | None:
    """A scalar metric's confidence interval in ``s`` (None when absent or not scalar)."""
    ci = s.ci.get(key) if getattr(s, "ci", None) else None
    if ci is None or np.ndim(ci[0]) != 0:
        return None
    return float(ci[0]), float(ci[1])


def _legend_value(s: SliceResult, key: str | None) -> str:
    if key is None or key not in s.metrics:
        return f" ({n_text(s)})"
    v = s.metrics[key]
    text = f" ({n_text(s)}, {canonical_name(key)} {_fmt(v, 3)}"
    if key in s.bounds:
        lo, hi = s.bounds[key]
        text += f" [{_fmt(lo, 3)}, {_fmt(hi, 3)}]"
    return text + ")"


def class_curves(curve: Any) -> list[np.ndarray]:
    """The per-class curves of a multiclass curve metric (``(K, n, 3)``, NaN-padded: see
    ``mergeable_metrics.metrics.ranking._Curve``), each ``(n_c, 3)`` without its padding rows."""
    a = np.asarray(curve, dtype=np.float64)
    return [c[~np.isnan(c).all(axis=1)] for c in a] if a.ndim == 3 else []


def _per_class(results: Results, key: str, slices: Iterable[Any] | None) -> SliceResult | None:
    """The slice whose per-class curves are drawn when ``key`` is a multiclass curve (the first
    of ``slices``, default the overall slice), else None."""
    first = _first(results)
    if first is None or np.ndim(first.metrics.get(key)) != 3:
        return None
    return _slice(results, next(iter(slices))) if slices is not None else next((s for s in computed(results) if s.slice == ()), first)


def _draw_class_curves(ax: Any, results: Results, s: SliceResult, key: str, x: int, y: int, step: str) -> None:
    curves = class_curves(s.metrics[key])
    names = class_labels(results, len(curves))
    for c, (curve, name) in enumerate(zip(curves, names)):
        if curve.shape[0] and np.isfinite(curve[:, :2]).all():
            ax.plot(curve[:, x], curve[:, y], lw=1.4, color=f"C{c % 10}", drawstyle=step, label=f"class {name} vs rest")


def plot_roc(results: Results, slices: Iterable[Any] | None = None, metric: str | None = None, *, ax: Any = None) -> Any:
    """ROC curves (false positive rate vs true positive rate) of the overall slice and a few
    slices (see :func:`curve_slices`), from a ``roc_curve`` metric (``(n, 3)``: fpr, tpr,
    threshold). A multiclass ``roc_curve`` (``(K, n, 3)``) draws one one-vs-rest curve per class
    of one slice (the first of ``slices``, default the overall one). Raises ValueError without
    one."""
    key = _pick(results, "roc", metric)
    auc = next(iter(metric_keys(results, canonical="roc_auc")), None)
    fig, ax = _new_axes(ax, (6.0, 5.0))
    one = _per_class(results, key, slices)
    if one is not None:
        _draw_class_curves(ax, results, one, key, 0, 1, "default")
        ax.plot([0, 1], [0, 1], ls=":", color="grey", lw=1, label="chance")
        ax.set(
            xlim=(0, 1), ylim=(0, 1.01), xlabel="false positive rate", ylabel="true positive rate", title=f"ROC curves per class ({one.name}, {n_text(one)})"
        )
        ax.legend(loc="lower right", fontsize="small")
        ax.grid(alpha=0.3)
        return fig
    for i, s in enumerate(curve_slices(results, key, slices)):
        c = np.asarray(s.metrics[key], dtype=np.float64)
        if not _curve_ok(c):
            continue
        ax.plot(c[:, 0], c[:, 1], lw=2.4 if not s.slice else 1.2, color="black" if not s.slice else f"C{i}",
                label=s.name + _legend_value(s, auc), drawstyle="default")  # fmt: skip
    ax.plot([0, 1], [0, 1], ls=":", color="grey", lw=1, label="chance")
    ax.set(xlim=(0, 1), ylim=(0, 1.01), xlabel="false positive rate", ylabel="true positive rate", title=f"ROC curve ({short_name(key)})")
    ax.legend(loc="lower right", fontsize="small")
    ax.grid(alpha=0.3)
    return fig


def plot_pr(results: Results, slices: Iterable[Any] | None = None, metric: str | None = None, *, ax: Any = None) -> Any:
    """Precision-recall curves of the overall slice and a few slices, from a
    ``precision_recall_curve`` metric (``(n, 3)``: precision, recall, threshold); per class for a
    multiclass one, as :func:`plot_roc`."""
    key = _pick(results, "pr", metric)
    ap = next(iter(metric_keys(results, canonical="average_precision")), None)
    fig, ax = _new_axes(ax, (6.0, 5.0))
    one = _per_class(results, key, slices)
    if one is not None:
        _draw_class_curves(ax, results, one, key, 1, 0, "steps-post")
        ax.set(xlim=(0, 1), ylim=(0, 1.01), xlabel="recall", ylabel="precision", title=f"Precision-recall curves per class ({one.name}, {n_text(one)})")
        ax.legend(loc="lower left", fontsize="small")
        ax.grid(alpha=0.3)
        return fig
    for i, s in enumerate(curve_slices(results, key, slices)):
        c = np.asarray(s.metrics[key], dtype=np.float64)
        if not _curve_ok(c):
            continue
        ax.plot(c[:, 1], c[:, 0], lw=2.4 if not s.slice else 1.2, color="black" if not s.slice else f"C{i}",
                drawstyle="steps-post", label=s.name + _legend_value(s, ap))  # fmt: skip
    ax.set(xlim=(0, 1), ylim=(0, 1.01), xlabel="recall", ylabel="precision", title=f"Precision-recall curve ({short_name(key)})")
    ax.legend(loc="lower left", fontsize="small")
    ax.grid(alpha=0.3)
    return fig


def plot_reliability(results: Results, slice: Any = (), metric: str | None = None, *, ax: Any = None) -> Any:
    """Reliability diagram of one slice from a ``reliability_diagram`` metric (``(B, 3)``: bin
    weight, mean score, fraction of positives): fraction of positives against mean score per
    bin, the diagonal of perfect calibration, and the bin weights as a histogram below.

    A multiclass diagram (``(K + 1, B, 3)``: each class one-vs-rest, then the top label) draws
    one line per class ("class c vs rest") and the top-label line (confidence against accuracy,
    legend with the top-label ``ece`` if present); the histogram shows the top-label bins."""
    key = _pick(results, "reliability", metric)
    s = _slice(results, slice)
    raw = np.asarray(s.metrics[key], dtype=np.float64)
    ece = next(iter(metric_keys(results, canonical="ece")), None)
    if raw.ndim == 3:
        return _plot_reliability_classes(results, s, raw, ece, ax)
    d = raw.reshape(-1, 3)
    if ax is None:
        Figure = _mpl("matplotlib.figure").Figure

        fig = Figure(figsize=(6.0, 6.0), layout="constrained")
        ax, hist = fig.subplots(2, 1, sharex=True, height_ratios=[3, 1])
    else:
        fig, hist = ax.figure, None
    nb = d.shape[0]
    ok = d[:, 0] > 0
    ax.plot([0, 1], [0, 1], ls=":", color="grey", label="perfectly calibrated")
    ax.plot(d[ok, 1], d[ok, 2], marker="o", color="C0", label=f"{s.name}{_legend_value(s, ece)}")
    ax.set(xlim=(0, 1), ylim=(0, 1), ylabel="fraction of positives", title=f"Reliability diagram ({nb} bins)")
    ax.legend(loc="upper left", fontsize="small")
    ax.grid(alpha=0.3)
    if hist is not None:
        edges = np.arange(nb) / nb
        hist.bar(edges, d[:, 0], width=1.0 / nb, align="edge", color="C0", alpha=0.5, edgecolor="white")
        hist.set(xlim=(0, 1), xlabel="mean predicted score (bin)", ylabel="weight")
        hist.grid(alpha=0.3)
    else:
        ax.set_xlabel("mean predicted score (bin)")
    return fig


def _plot_reliability_classes(results: Results, s: SliceResult, d: np.ndarray, ece: str | None, ax: Any) -> Any:
    """The multiclass reliability diagram of :func:`plot_reliability` (``d``: (K + 1, B, 3))."""
    if ax is None:
        Figure = _mpl("matplotlib.figure").Figure

        fig = Figure(figsize=(6.0, 6.0), layout="constrained")
        ax, hist = fig.subplots(2, 1, sharex=True, height_ratios=[3, 1])
    else:
        fig, hist = ax.figure, None
    k, nb = d.shape[0] - 1, d.shape[1]
    ax.plot([0, 1], [0, 1], ls=":", color="grey", label="perfectly calibrated")
    for c, name in enumerate(class_labels(results, k)):
        ok = d[c, :, 0] > 0
        ax.plot(d[c, ok, 1], d[c, ok, 2], marker=".", lw=1.2, color=f"C{c % 10}", label=f"class {name} vs rest")
    top = d[k]
    ok = top[:, 0] > 0
    value = "" if ece is None or np.ndim(s.metrics.get(ece)) != 0 else f", {short_name(ece)} {_fmt(s.metrics[ece], 3)}"
    ax.plot(top[ok, 1], top[ok, 2], marker="o", lw=2.2, color="black", label=f"top label ({s.name}, {n_text(s)}{value})")
    ax.set(xlim=(0, 1), ylim=(0, 1), ylabel="fraction of positives / accuracy", title=f"Reliability diagram per class ({nb} bins)")
    ax.legend(loc="upper left", fontsize="small")
    ax.grid(alpha=0.3)
    if hist is not None:
        hist.bar(np.arange(nb) / nb, top[:, 0], width=1.0 / nb, align="edge", color="grey", alpha=0.5, edgecolor="white")
        hist.set(xlim=(0, 1), xlabel="mean predicted probability / confidence (bin)", ylabel="weight (top label)")
        hist.grid(alpha=0.3)
    else:
        ax.set_xlabel("mean predicted probability / confidence (bin)")
    return fig


def _heatmap(ax: Any, m: np.ndarray, row_labels: Sequence[str], col_labels: Sequence[str], cmap: str, fmt: Any, sub: np.ndarray | None = None) -> Any:
    im = ax.imshow(m, cmap=cmap, aspect="auto")
    ax.set_xticks(range(m.shape[1]), [str(c) for c in col_labels])
    ax.set_yticks(range(m.shape[0]), [str(r) for r in row_labels])
    if m.size <= 400:
        finite = m[np.isfinite(m)]
        mid = (finite.max() + finite.min()) / 2 if finite.size else 0
        for (i, j), v in np.ndenumerate(m):
            text = fmt(v) + (f"\n{sub[i, j]:.1%}" if sub is not None and np.isfinite(sub[i, j]) else "")
            ax.text(j, i, text, ha="center", va="center", fontsize=9 if m.size <= 36 else 7,
                    color="white" if np.isfinite(v) and v > mid else "black")  # fmt: skip
    return im


def _count_text(v: float) -> str:
    """A whole count as an integer with thousands separators (``0``, ``125,351``)."""
    return f"{int(round(v)):,}" if math.isfinite(v) else "null"


def plot_confusion_matrix(results: Results, slice: Any = (), metric: str | None = None, *, ax: Any = None) -> Any:
    """Heatmap of a ``confusion_matrix`` metric of one slice: rows = true label, columns =
    predicted label (the other way round for ``confusion_matrix@rows=predicted``; class names from
    ``results.config["classes"]`` when present); cells show the count (an integer when every cell
    is whole; the weight, to 2 decimals, otherwise) and the share of their row."""
    key = _pick(results, "confusion_matrix", metric)
    s = _slice(results, slice)
    m = np.asarray(s.metrics[key], dtype=np.float64)
    if m.ndim != 2:
        raise ValueError(f"{key!r} of slice {s.name!r} is not a matrix (shape {m.shape})")
    k = m.shape[0]
    fig, ax = _new_axes(ax, (max(4.5, 0.55 * k + 3), max(4.0, 0.5 * k + 2.5)))
    rows = m.sum(axis=1, keepdims=True)
    share = np.divide(m, rows, out=np.full_like(m, np.nan), where=rows > 0)
    labels = class_labels(results, k, key)
    whole = bool(np.all(m[np.isfinite(m)] == np.round(m[np.isfinite(m)])))
    im = _heatmap(ax, m, labels, labels, "Blues", _count_text if whole else (lambda v: _fmt(v, 2)), share)
    fig.colorbar(im, ax=ax, shrink=0.8, label="weight" if is_weighted(results) else "count")
    across, down = ("true label", "predicted label") if "rows=predicted" in key else ("predicted label", "true label")
    ax.set(xlabel=across, ylabel=down, title=f"Confusion matrix ({s.name}, {n_text(s)})")
    return fig


def plot_accuracy_matrix(results: Results, slice: Any = (), metric: str | None = None, *, ax: Any = None) -> Any:
    """Continual-learning accuracy matrix of one slice as a heatmap: row i = after training on
    task i, column j = accuracy on task j (a ``(T, T)`` metric; NaN cells are blank)."""
    key = _pick(results, "accuracy_matrix", metric)
    s = _slice(results, slice)
    m = np.asarray(s.metrics[key], dtype=np.float64)
    if m.ndim != 2:
        raise ValueError(f"{key!r} of slice {s.name!r} is not a matrix (shape {m.shape})")
    fig, ax = _new_axes(ax, (max(4.5, 0.55 * m.shape[1] + 3), max(4.0, 0.5 * m.shape[0] + 2.5)))
    im = _heatmap(ax, m, [str(i) for i in range(m.shape[0])], [str(j) for j in range(m.shape[1])], "viridis", lambda v: _fmt(v, 2))
    fig.colorbar(im, ax=ax, shrink=0.8, label=canonical_name(key))
    ax.set(xlabel="evaluated on task", ylabel="after training on task", title=f"Accuracy matrix ({s.name}, {n_text(s)})")
    return fig


def plot_anytime_accuracy_matrix(results: Results, slice: Any = (), *, ax: Any = None) -> Any:
    """Continual-learning anytime accuracy matrix ``A`` (``anytime_accuracy_matrix``, (T * H, T)):
    row ``i.h`` = the ``h``-th evaluation while training on task ``i``, column j = task j."""
    s = _slice(results, slice)
    m = np.asarray(s.metrics["anytime_accuracy_matrix"], dtype=np.float64)
    t = m.shape[1]
    h = m.shape[0] // t if t else 0
    fig, ax = _new_axes(ax, (max(4.5, 0.55 * t + 3), max(4.0, 0.3 * m.shape[0] + 2.5)))
    rows = [f"{i}.{k}" for i in range(t) for k in range(h)]
    im = _heatmap(ax, m, rows, [str(j) for j in range(t)], "viridis", lambda v: _fmt(v, 2))
    fig.colorbar(im, ax=ax, shrink=0.8, label="accuracy")
    ax.set(xlabel="evaluated on task", ylabel="training on task . evaluation", title=f"Anytime accuracy matrix ({s.name}, {n_text(s)})")
    return fig


def plot_continual_curves(results: Results, slice: Any = (), *, ax: Any = None) -> Any:
    """Accuracy on all tasks and on the tasks seen so far, after each task (markers) and at the
    anytime evaluations during training (lines), against the task position (CapyMOA's axes)."""
    s = _slice(results, slice)
    cfg = results.config or {}
    fig, ax = _new_axes(ax, (8.0, 4.5))
    x = np.asarray(cfg.get("task_index") or np.arange(1, len(s.metrics["accuracy_all"]) + 1), dtype=np.float64)
    xa = np.asarray(cfg.get("anytime_task_index") or [], dtype=np.float64)
    for i, (what, label) in enumerate((("all", "all tasks"), ("seen", "seen tasks"))):
        any_v = np.asarray(s.metrics.get(f"anytime_accuracy_{what}", []), dtype=np.float64)
        if any_v.size and xa.size == any_v.size:
            ax.plot(xa, any_v, color=f"C{i}", alpha=0.7, label=f"anytime, {label}")
        ax.plot(x, np.asarray(s.metrics[f"accuracy_{what}"], dtype=np.float64), "o", color=f"C{i}", label=f"after each task, {label}")
    ax.set(xlabel="tasks trained", ylabel="accuracy", title=f"Continual-learning accuracy ({n_text(s)})", ylim=(-0.02, 1.02))
    ax.legend(fontsize="small")
    ax.grid(alpha=0.3)
    return fig


def plot_ttt_accuracy(results: Results, slice: Any = (), *, ax: Any = None) -> Any:
    """The test-then-train accuracy of the training stream per window (``ttt_windowed_accuracy``)
    against CapyMOA's ``ttt_windowed_task_index`` (task units), a dashed line at each task boundary
    (labelled with its position, ``boundaries``) and the cumulative accuracy as a dotted line."""
    s = _slice(results, slice)
    cfg = results.config or {}
    fig, ax = _new_axes(ax, (8.0, 4.0))
    acc = np.asarray(s.metrics.get("ttt_windowed_accuracy", []), dtype=np.float64)
    x = np.asarray(cfg.get("ttt_windowed_task_index") or [], dtype=np.float64)
    if x.size != acc.size:
        x = np.arange(1, acc.size + 1, dtype=np.float64)
    ax.plot(x, acc, "-", color="C0", marker="." if acc.size < 60 else None, label=f"windows of {cfg.get('eval_window_size', '?')} rows")
    cum = s.metrics.get("ttt_accuracy")
    if cum is not None and math.isfinite(float(cum)):
        ax.axhline(float(cum), color="C1", linestyle=":", label=f"cumulative {float(cum):.3f}")
    bounds = cfg.get("boundaries") or []
    for t, b in enumerate(bounds[1:-1], start=1):
        ax.axvline(t, color="grey", linestyle="--", alpha=0.7)
        ax.annotate(f"task {t} @ {b}", (t, 0.02), xytext=(3, 0), textcoords="offset points", fontsize=7, color="grey")
    ax.set(xlabel="task (training stream position within each task)", ylabel="accuracy", ylim=(-0.02, 1.02),
           title=f"Test-then-train accuracy of the training stream ({n_text(s)})")  # fmt: skip
    ax.legend(fontsize="small")
    ax.grid(alpha=0.3)
    return fig


def _regression_points(results: Results, need: Sequence[str]) -> tuple[list[SliceResult], dict[str, str]]:
    """The slices (overall first) of a regression run with finite values of the canonical
    metrics ``need``, and canonical name -> key. Raises ValueError when a metric is missing."""
    keys = {c: next(iter(metric_keys(results, canonical=c)), None) for c in need}
    missing = [c for c, k in keys.items() if k is None]
    if missing:
        raise ValueError(f"no {', '.join(missing)} metric in the results; add it to the metrics (e.g. metrics=[..., {missing[0]!r}])")
    shown = [s for s in computed(results) if all(np.ndim(s.metrics.get(k)) == 0 and math.isfinite(float(s.metrics[k])) for k in keys.values())]
    return shown, keys  # type: ignore[return-value]


def _point_sizes(shown: Sequence[SliceResult]) -> np.ndarray:
    n = np.array([float(s.n or 0) for s in shown])
    return 20.0 + 280.0 * np.sqrt(n / n.max()) if n.size and n.max() > 0 else np.full(len(shown), 40.0)


def _label_points(ax: Any, shown: Sequence[SliceResult], x: np.ndarray, y: np.ndarray, max_labels: int = 12) -> None:
    order = sorted(range(len(shown)), key=lambda i: -float(shown[i].n or 0))[:max_labels]
    for i in order:
        ax.annotate(f"{shown[i].name} ({n_text(shown[i])})", (x[i], y[i]), xytext=(4, 3), textcoords="offset points", fontsize=7)


def plot_predicted_vs_actual(results: Results, *, ax: Any = None) -> Any:
    """Predicted against actual, per slice, for a regression run: each slice is a point at
    (``mean_prediction``, ``mean_label``) sized by its ``n`` (overall: black), with the diagonal
    of unbiased predictions. The regression states hold sums, not rows, so this is the
    slice-level view (a per-row scatter needs the rows); the largest slices are labelled.
    Raises ValueError without ``mean_prediction`` and ``mean_label`` metrics."""
    shown, keys = _regression_points(results, ("mean_prediction", "mean_label"))
    fig, ax = _new_axes(ax, (6.0, 5.0))
    x = np.array([float(s.metrics[keys["mean_prediction"]]) for s in shown])
    y = np.array([float(s.metrics[keys["mean_label"]]) for s in shown])
    colors = ["black" if not s.slice else "C0" for s in shown]
    ax.scatter(x, y, s=_point_sizes(shown), c=colors, alpha=0.6, edgecolors="white")
    if x.size:
        lo, hi = float(min(x.min(), y.min())), float(max(x.max(), y.max()))
        pad = 0.05 * (hi - lo or 1.0)
        ax.plot([lo - pad, hi + pad], [lo - pad, hi + pad], ls=":", color="grey", lw=1, label="predicted = actual")
        ax.legend(loc="upper left", fontsize="small")
    _label_points(ax, shown, x, y)
    ax.set(xlabel="mean predicted value (mean_prediction)", ylabel="mean actual value (mean_label)", title="Predicted vs actual, per slice")
    ax.grid(alpha=0.3)
    return fig


def plot_residuals(results: Results, *, ax: Any = None) -> Any:
    """Residuals of a regression run, per slice: the mean residual (``mean_error``, predicted
    minus actual: above 0 the slice is over-predicted) against the mean prediction, each slice a
    point sized by its ``n`` (overall: black), with the zero line. Slice-level for the same reason as
    :func:`plot_predicted_vs_actual`. Raises ValueError without ``mean_error`` and
    ``mean_prediction`` metrics."""
    shown, keys = _regression_points(results, ("mean_prediction", "mean_error"))
    fig, ax = _new_axes(ax, (6.0, 4.5))
    x = np.array([float(s.metrics[keys["mean_prediction"]]) for s in shown])
    y = np.array([float(s.metrics[keys["mean_error"]]) for s in shown])
    ax.scatter(x, y, s=_point_sizes(shown), c=["black" if not s.slice else "C1" for s in shown], alpha=0.6, edgecolors="white")
    ax.axhline(0.0, ls=":", color="grey", lw=1)
    _label_points(ax, shown, x, y)
    ax.set(xlabel="mean predicted value (mean_prediction)", ylabel="mean residual, predicted - actual (mean_error)", title="Residuals, per slice")
    ax.grid(alpha=0.3)
    return fig


def _bar_slices(results: Results, metric: str, max_slices: int) -> tuple[list[SliceResult], int]:
    others = [s for s in computed(results) if s.slice]
    if len(others) <= max_slices:
        return others, 0
    keep = {id(s) for s in sorted(others, key=lambda s: -float(s.weight))[:max_slices]}
    return [s for s in others if id(s) in keep], len(others) - max_slices


def _bar_order(shown: list[SliceResult], metric: str, small_slice_size: int) -> list[SliceResult]:
    """Slices by the metric's value, best first (highest first unless lower is better), undefined
    (NaN) values last; small slices (fewer than ``small_slice_size`` rows) after all the others,
    in the same order among themselves, so that a tiny slice's 1.000 never tops the chart; ties
    keep the slice order."""
    sign = -1.0 if getattr(metric_class(metric), "higher_is_better", True) is False else 1.0

    def key(i_s: tuple[int, SliceResult]) -> tuple[bool, int, float, int]:
        s = i_s[1]
        v = float(s.metrics[metric])
        small = s.n is not None and int(s.n) < small_slice_size
        return (small, 0, -sign * v, i_s[0]) if math.isfinite(v) else (small, 1, 0.0, i_s[0])

    return [s for _, s in sorted(enumerate(shown), key=key)]


def plot_slices(results: Results, metric: str, *, max_slices: int = 60, bounds: bool = True, small_slice_size: int = SMALL_SLICE_SIZE, ax: Any = None) -> Any:
    """Horizontal bar chart of one scalar metric per slice (overall value as a dashed line).

    Bars are ordered by the metric, best at the top (highest first, lowest first for a metric
    whose lower values are better), undefined (NaN) values last and marked ``null``. Every bar
    is labelled with the slice and its ``n``; slices with fewer than ``small_slice_size`` rows
    (default 100) come after all the others (ordered the same way), hatched, pale and labelled
    ``small``: their values are noisy. Confidence intervals
    (``ci=``) are drawn as grey error bars; certified bounds of approximate metrics as black
    error bars with caps (``bounds=True``). With more than ``max_slices`` slices, the largest
    (by weight) are shown. The title shows the short metric name (:func:`short_name`) and the
    axis range, the x-axis label the full key. The axis is scaled to the values
    (:func:`bar_axis`), and a legend says which slice spec each bar colour is.
    """
    first = _first(results)
    if first is None or metric not in first.metrics:
        raise ValueError(f"metric {metric!r} is not in the results; available: {scalar_metrics(results, True)}")
    if np.ndim(first.metrics[metric]) != 0:
        raise ValueError(f"metric {metric!r} is not scalar; plot_slices draws scalar metrics")
    shown, hidden = _bar_slices(results, metric, max_slices)
    shown = _bar_order(shown, metric, small_slice_size)
    own = ax is None
    fig, ax = _new_axes(ax, (6.4, 2.0 + 0.2 * max(len(shown), 1)))
    specs = list(dict.fromkeys(tuple(c for c, _ in s.slice) for s in shown))
    y = np.arange(len(shown))[::-1]
    vals = np.array([float(s.metrics[metric]) for s in shown], dtype=np.float64)
    small = np.array([s.n is not None and int(s.n) < small_slice_size for s in shown], dtype=bool)
    colors = [f"C{specs.index(tuple(c for c, _ in s.slice)) % 10}" for s in shown]
    cis = [_ci_pair(s, metric) for s in shown]
    lo_x, hi_x, from_zero = bar_axis(metric, vals, cis, [s.bounds.get(metric) for s in shown] if bounds else [], overall_value(results, metric))
    bars = ax.barh(y, np.where(np.isfinite(vals), vals - lo_x, 0.0), left=lo_x, color=colors, height=0.7)
    for bar, is_small in zip(bars, small):
        if is_small:
            bar.set_alpha(0.35)
            bar.set_hatch("///")
    if any(c is not None for c in cis):
        lo = np.array([vals[i] - c[0] if c is not None else 0.0 for i, c in enumerate(cis)])
        hi = np.array([c[1] - vals[i] if c is not None else 0.0 for i, c in enumerate(cis)])
        err = np.nan_to_num(np.vstack([np.maximum(lo, 0), np.maximum(hi, 0)]))
        ax.errorbar(np.nan_to_num(vals), y, xerr=err, fmt="none", ecolor="0.45", capsize=0, lw=3, alpha=0.8)
    if bounds and any(metric in s.bounds for s in shown):
        lo = np.array([vals[i] - s.bounds[metric][0] if metric in s.bounds else 0.0 for i, s in enumerate(shown)])
        hi = np.array([s.bounds[metric][1] - vals[i] if metric in s.bounds else 0.0 for i, s in enumerate(shown)])
        ax.errorbar(np.nan_to_num(vals), y, xerr=np.vstack([np.maximum(lo, 0), np.maximum(hi, 0)]), fmt="none", ecolor="black", capsize=3, lw=1)
    for yi, v in zip(y, vals):
        if not math.isfinite(v):
            ax.text(lo_x, yi, " null", va="center", fontsize=8, color="crimson")
    ax.set_yticks(y, [f"{s.name} ({n_text(s)}{', small' if sm else ''})" for s, sm in zip(shown, small)], fontsize=8)
    for tick, sm in zip(ax.get_yticklabels(), small):
        if sm:
            tick.set_color("0.4")
    overall = next((s for s in computed(results) if s.slice == ()), None)
    name = short_name(metric)
    notes = []
    if overall is not None and math.isfinite(float(overall.metrics[metric])):
        ax.axvline(float(overall.metrics[metric]), ls="--", color="black", lw=1)
        notes.append(f"dashed: overall {_value_text(metric, overall.metrics[metric])} ({n_text(overall)})")
    if small.any():
        notes.append(f"hatched, at the bottom: small slices, n < {small_slice_size:,}")
    if hidden:
        notes.append(f"the {len(shown)} largest of {len(shown) + hidden} slices")
    notes.append(f"axis {_axis_text(lo_x)} to {_axis_text(hi_x)}" + ("" if from_zero else " (scaled to the values, not from 0: compare bar ends, not lengths)"))
    ax.set_title("\n".join([f"{name} per slice", *(textwrap.fill(x, 60) for x in notes)]), fontsize=9)
    ax.set_xlabel(metric)
    ax.set_xlim(lo_x, hi_x)
    ax.grid(axis="x", alpha=0.3)
    if specs:  # bar colour = slice spec
        Patch = _mpl("matplotlib.patches").Patch

        handles = [Patch(color=f"C{i % 10}", label=" x ".join(spec)) for i, spec in enumerate(specs)]
        style = {"handles": handles, "title": "bar colour: slices by", "fontsize": 7, "title_fontsize": 7, "ncols": min(len(specs), 4)}
        if own:  # below the axes, in the layout
            fig.legend(loc="outside lower center", frameon=False, **style)
        else:
            ax.legend(loc="best", **style)
    return fig


def overall_value(results: Results, metric: str) -> float | None:
    """The overall slice's finite scalar value of ``metric`` (None when absent or undefined)."""
    overall = next((s for s in computed(results) if s.slice == ()), None)
    if overall is None or np.ndim(overall.metrics.get(metric)) != 0:
        return None
    v = float(overall.metrics[metric])
    return v if math.isfinite(v) else None


def _axis_text(v: float) -> str:
    return f"{v:.4g}" if v != 0 else "0"


def bar_axis(
    metric: str, vals: np.ndarray, cis: Sequence[tuple[float, float] | None], bounds: Sequence[Any], overall: float | None
) -> tuple[float, float, bool]:
    """``(lower, upper, from_zero)``: the x-axis of a per-slice bar chart, scaled to the values
    (with their intervals, bounds and the overall value) and padded by 5% of their range, within
    the metric's own range (``bounds`` of its class, e.g. 0 to 1 for a rate). The axis starts at 0
    when 0 is in the metric's range and the values' lowest is within half their highest of 0
    (a fixed 0 to 1 axis draws an ECE of 0.005 as no bar and accuracies of 0.88 to 0.94 as equal)."""
    pts = [float(v) for v in vals if math.isfinite(float(v))]
    for pair in [*cis, *bounds]:
        if pair is not None:
            pts += [float(x) for x in pair if math.isfinite(float(x))]
    if overall is not None:
        pts.append(overall)
    cls = metric_class(metric)
    lo_b, hi_b = tuple(float(b) for b in getattr(cls, "bounds", (-math.inf, math.inf))) if cls is not None else (-math.inf, math.inf)
    if not pts:
        return (lo_b if math.isfinite(lo_b) else 0.0), (hi_b if math.isfinite(hi_b) else 1.0), True
    lo, hi = min(pts), max(pts)
    if lo >= 0 and lo <= 0.5 * hi:  # near 0: bars from 0 read as lengths
        lo = 0.0
    elif hi <= 0 and hi >= 0.5 * lo:
        hi = 0.0
    pad = 0.05 * (hi - lo) if hi > lo else max(abs(hi) * 0.05, 1e-3)
    lo_x = lo if lo == 0.0 else max(lo - pad, lo_b)
    hi_x = hi if hi == 0.0 and lo < 0 else min(hi + pad, hi_b)
    return lo_x, hi_x, lo_x <= 0.0 <= hi_x


# -- windows (hook) ------------------------------------------------------------------------
def window_series(results: Results | None = None, windows: Sequence[tuple[Any, Results]] | None = None) -> list[tuple[str, SliceResult]]:
    """The overall slice of each window, in order, as ``[(label, SliceResult)]``.

    Sources, first found wins: ``windows`` (``[(label, Results)]``, e.g. one result per day);
    ``results.windows`` (same shape) when a Results carries it; or, when ``results.config`` has
    ``"window_col"`` naming a slice column, the one-column slices on it (in slice order).
    Empty when there are none (the report then has no windows section).
    """
    if windows is None and results is not None:
        windows = getattr(results, "windows", None)
        if windows and isinstance(results, Results):  # event-time windows: slices carry their bounds
            windows = [(_window_text(w), r) for w, r in results.by_window().items()]
    if windows:
        out = []
        for label, r in windows:
            s = r.overall if isinstance(r, Results) else r
            if not getattr(s, "suppressed", False):
                out.append((str(label), s))
        return out
    col = (results.config or {}).get("window_col") if results is not None else None
    if col:
        return [(str(s.slice[0][1]), s) for s in computed(results) if len(s.slice) == 1 and s.slice[0][0] == col]
    return []


def _window_text(window: tuple[Any, Any]) -> str:
    """A short label of a window: its start, ISO-8601 without the UTC offset (``2013-01-01 05:00``)."""
    start = window[0]
    return start.strftime("%Y-%m-%d %H:%M" + (":%S" if start.second or start.microsecond else "")) if hasattr(start, "strftime") else str(start)


def plot_windows(series: Sequence[tuple[str, SliceResult]], metrics: Sequence[str] | None = None, *, ax: Any = None) -> Any:
    """Scalar metrics over windows (one line per metric; certified bounds shaded)."""
    if not series:
        raise ValueError("no windowed results to plot")
    names = list(metrics) if metrics else [k for k, v in series[0][1].metrics.items() if np.ndim(v) == 0 and canonical_name(k) not in COUNT_METRICS]
    fig, ax = _new_axes(ax, (8.0, 4.5))
    x = np.arange(len(series))
    for i, k in enumerate(names[:8]):
        v = np.array([float(s.metrics.get(k, np.nan)) for _, s in series])
        ax.plot(x, v, marker="o", color=f"C{i}", label=short_name(k))
        if any(k in s.bounds for _, s in series):
            lo = np.array([s.bounds.get(k, (np.nan, np.nan))[0] for _, s in series], dtype=np.float64)
            hi = np.array([s.bounds.get(k, (np.nan, np.nan))[1] for _, s in series], dtype=np.float64)
            ax.fill_between(x, lo, hi, color=f"C{i}", alpha=0.2)
    step = max(1, len(series) // 20)
    ax.set_xticks(x[::step], [f"{lbl} ({n_text(s)})" for lbl, s in series][::step], rotation=45, ha="right", fontsize=8)
    ax.set(xlabel="window", ylabel="value", title="Metrics over windows")
    ax.legend(fontsize="small")
    ax.grid(alpha=0.3)
    return fig


# -- the HTML report -----------------------------------------------------------------------
@dataclass
class ReportFigure:
    """One embedded figure: ``id`` (HTML id), ``kind`` (``data-figure``), title, caption, PNG,
    and the ``metric`` key it is drawn from ("" for figures of several metrics)."""

    id: str
    kind: str
    title: str
    caption: str
    png_base64: str
    width: int = 0
    height: int = 0
    metric: str = ""

    @property
    def src(self) -> str:
        return "data:image/png;base64," + self.png_base64


def figure_png(fig: Any, dpi: int = 100) -> str:
    """A matplotlib figure as base64 PNG text."""
    buf = _io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in text).strip("-").lower()


def _curve_caption(results: Results, key: str) -> str:
    if _per_class(results, key, None) is not None:
        return f"From {key!r}: one curve per class (that class against the rest), overall slice ({n_text(results.overall)})."
    return f"From {key!r}: the overall slice (black) and the largest slices of the first one-column slice spec; legends give n."


def build_figures(
    results: Results,
    *,
    windows: Sequence[tuple[Any, Results]] | None = None,
    bounds: bool = True,
    max_slices: int = 60,
    bar_metrics: Sequence[str] | None = None,
    small_slice_size: int = SMALL_SLICE_SIZE,
    dpi: int = 100,
) -> list[ReportFigure]:
    """Every figure the data supports, in report order (see the module docstring)."""
    figs: list[ReportFigure] = []
    overall = _first(results)
    if overall is None:
        return figs

    def add(kind: str, fid: str, title: str, caption: str, fig: Any, metric: str = "") -> None:
        png = figure_png(fig, dpi)
        raw = base64.b64decode(png[:44])  # PNG header: width and height at bytes 16-24
        figs.append(ReportFigure(fid, kind, title, caption, png, int.from_bytes(raw[16:20], "big"), int.from_bytes(raw[20:24], "big"), metric))

    for key in metric_keys(results, "roc"):
        add("roc", f"fig-roc-{_slug(key)}", f"ROC curve ({short_name(key)})", _curve_caption(results, key), plot_roc(results, metric=key), key)
    for key in metric_keys(results, "pr"):
        add("pr", f"fig-pr-{_slug(key)}", f"Precision-recall curve ({short_name(key)})", _curve_caption(results, key), plot_pr(results, metric=key), key)
    for key in metric_keys(results, "reliability"):
        ece = next(iter(metric_keys(results, canonical="ece")), None)
        ece_text = f"; {ece} = {_value_text(ece, overall.metrics[ece])}" if ece is not None and np.ndim(overall.metrics[ece]) == 0 else ""
        add(
            "reliability",
            f"fig-reliability-{_slug(key)}",
            "Reliability diagram",
            f"From {key!r}, slice {overall.name} ({n_text(overall)}){ece_text}: equal-width score bins; "
            + (
                "one line per class (that class against the rest) and the top label (confidence against accuracy); the histogram shows the top-label bins' weight."
                if np.ndim(overall.metrics[key]) == 3
                else "the histogram shows each bin's weight."
            ),
            plot_reliability(results, overall, metric=key),
            key,
        )
    for key in metric_keys(results, "confusion_matrix"):
        if np.ndim(overall.metrics[key]) == 2:
            what = "weight" if is_weighted(results) else "count"
            add(
                "confusion_matrix",
                f"fig-confusion-matrix-{_slug(key)}",
                "Confusion matrix",
                f"From {key!r}, slice {overall.name} ({n_text(overall)}): "
                + ("rows are predictions, columns true labels" if "rows=predicted" in key else "rows are true labels, columns predictions")
                + f"; each cell shows the {what} and its share of the row.",
                plot_confusion_matrix(results, overall, metric=key),
                key,
            )
    if (results.config or {}).get("task") == "regression" and len(computed(results)) > 1:
        why = "one point per slice, sized by n (the regression states hold sums, not rows)"
        if metric_keys(results, canonical="mean_prediction") and metric_keys(results, canonical="mean_label"):
            add(
                "predicted_vs_actual",
                "fig-predicted-vs-actual",
                "Predicted vs actual",
                f"Mean prediction against mean actual value, {why}; dotted: predicted = actual.",
                plot_predicted_vs_actual(results),
            )
        if metric_keys(results, canonical="mean_prediction") and metric_keys(results, canonical="mean_error"):
            add(
                "residuals",
                "fig-residuals",
                "Residuals",
                f"Mean residual (predicted - actual) against mean prediction, {why}; above the dotted line a slice is over-predicted.",
                plot_residuals(results),
            )
    if len(computed(results)) > 1:
        for key in bar_metrics if bar_metrics is not None else scalar_metrics(results):
            cap = f"From {key!r}. Bars are the slices' values, best first, each labelled with its n; the dashed line is the overall value; small slices (n < {small_slice_size:,}: noisy values) are hatched, pale and listed last"
            label = ci_label(results)
            if label and any(_ci_pair(s, key) is not None for s in results.slices):
                cap += f"; grey bars: {label}"
            if bounds and any(key in s.bounds for s in results.slices):
                cap += "; black error bars are certified bounds (the metric comes from an approximate state)"
            add(
                "slices",
                f"fig-slices-{_slug(key)}",
                f"{short_name(key)} per slice",
                cap + ".",
                plot_slices(results, key, max_slices=max_slices, bounds=bounds, small_slice_size=small_slice_size),
                key,
            )
    series = window_series(results, windows)
    if series:
        add("windows", "fig-windows", "Metrics over windows", f"{len(series)} windows, overall slice of each.", plot_windows(series))
    for key in metric_keys(results, "accuracy_matrix"):
        if np.ndim(overall.metrics[key]) == 2:
            add(
                "accuracy_matrix",
                f"fig-accuracy-matrix-{_slug(key)}",
                "Continual-learning accuracy matrix",
                f"From {key!r}: row i is the model after training on task i, column j its accuracy on task j.",
                plot_accuracy_matrix(results, overall, metric=key),
                key,
            )
    if np.size(overall.metrics.get("anytime_accuracy_matrix", [])):
        add(
            "anytime_accuracy_matrix",
            "fig-anytime-accuracy-matrix",
            "Anytime accuracy matrix",
            "Row i.h is the h-th evaluation while training on task i, column j the accuracy on task j.",
            plot_anytime_accuracy_matrix(results, overall),
        )
    if "accuracy_all" in overall.metrics and "accuracy_seen" in overall.metrics and np.ndim(overall.metrics["accuracy_all"]) == 1:
        add(
            "continual_curves",
            "fig-continual-curves",
            "Accuracy across tasks",
            "Mean accuracy over all tasks and over the tasks seen so far, after each task (markers) and during training (lines).",
            plot_continual_curves(results, overall),
        )
    if np.size(overall.metrics.get("ttt_windowed_accuracy", [])):
        add(
            "ttt_accuracy",
            "fig-ttt-accuracy",
            "Test-then-train accuracy",
            "Accuracy of the training stream's predictions made before training on each row, per window, with the task boundaries (dashed).",
            plot_ttt_accuracy(results, overall),
        )
    return figs


def _cell(
    value: Any, bounds: tuple[float, float] | None, show_bounds: bool, count: bool = False, ci: tuple[float, float] | None = None, ci_name: str | None = None
) -> dict[str, Any]:
    f = float(value)
    text = _fmt(f) if count or not math.isfinite(f) else f"{f:.4f}"
    titles, sub = [], []  # sub: bounds and interval, on a second line so that wide tables fit
    if bounds is not None and show_bounds:
        sub.append(f"[{_fmt(bounds[0])}, {_fmt(bounds[1])}]")
        titles.append("brackets: certified bounds of an approximate state (compression error, not a confidence interval)")
    if ci is not None:
        sub.append(f"({_fmt(ci[0], 3)} to {_fmt(ci[1], 3)})")
        titles.append(f"parentheses: {ci_name}: {_fmt(ci[0])} to {_fmt(ci[1])}")
    title = "; ".join(titles)
    if math.isnan(f):
        title = "undefined (NaN; null in metrics.json)"
    return {"text": text, "sub": " ".join(sub), "sort": "" if not math.isfinite(f) else repr(f), "title": title, "null": math.isnan(f)}


def _ci_text(s: SliceResult, key: str, unsupported: bool, ci_name: str | None) -> dict[str, str]:
    """The overall table's interval cell: ``{"text", "title"}``."""
    if ci_name is None:
        return {"text": "", "title": ""}
    if unsupported or key not in s.ci:
        return {"text": "n/a", "title": f"no {ci_name.split(', ', 1)[-1]} interval for this metric"}
    lo, hi = s.ci[key]
    if np.ndim(lo) == 0:
        return {"text": f"{_fmt(lo)} to {_fmt(hi)}", "title": ci_name}
    return {"text": f"{_array_summary(lo)} to {_array_summary(hi)}", "title": f"{ci_name}, per entry"}


#: the comparison method's paired interval, as the report labels it
_COMPARISON_METHODS = {
    "analytic": "Newcombe paired score interval (accuracy, recall, specificity, fpr, fnr)",
    "posterior": "Dirichlet posterior of the joint confusion cells",
    "bootstrap": "paired bootstrap",
}


def _comparison_table(results: Results, max_rows: int) -> dict[str, Any] | None:
    """The "Model comparison" section: per slice and metric, delta, its paired interval and the
    verdict (None without a baseline model)."""
    shown = [s for s in computed(results) if s.comparison]
    if not shown:
        return None
    metrics = [k for k, c in shown[0].comparison.items() if np.ndim(c.delta) == 0]
    cfg = results.config or {}
    comp = cfg.get("comparison", {})
    method = comp.get("method", "analytic")
    label = (
        f"delta = candidate ({cfg.get('score_col') or cfg.get('prediction_col')}) - baseline "
        f"({cfg.get('baseline_score_col') or cfg.get('baseline_prediction_col')}); brackets: {comp.get('level', 0.95):.0%} paired interval, "
        f"{method}: {_COMPARISON_METHODS.get(method, method)}; tolerance {comp.get('tolerance', 0.0):g}"
    )
    rows = []
    for s in shown[:max_rows]:
        cells = []
        for k in metrics:
            c = s.comparison.get(k)
            if c is None:
                cells.append({"text": "", "sort": "", "title": "", "verdict": ""})
                continue
            d = float(c.delta)
            text = "null" if not math.isfinite(d) else f"{d:+.4f}"
            interval = ""
            if c.ci is not None and math.isfinite(float(c.ci[0])):
                interval = f"[{float(c.ci[0]):+.4f}, {float(c.ci[1]):+.4f}]"
            base, cand = s.baseline_metrics.get(k), s.metrics.get(k)
            mark, reason = comparison_mark(c, cand, base)
            values = [f"{who} {_fmt(v)}" for who, v in (("candidate", cand), ("baseline", base)) if v is not None and np.ndim(v) == 0]
            title = "; ".join([*values, *([reason] if reason else [])])
            cells.append(
                {
                    "text": text,
                    "interval": interval,
                    "sort": "" if not math.isfinite(d) else repr(d),
                    "title": title,
                    "mark": mark,
                    "reason": reason,
                    "verdict": mark.replace(" ", "-"),
                }
            )
        rows.append({"name": s.name, "n": s.n, "cells": cells})
    counts = {m: sum(1 for r in rows for c in r["cells"] if c.get("mark") == m) for m in COMPARISON_MARKS}
    not_tested: dict[str, list[str]] = {}  # reason -> the metrics not tested for it (shown once, above the table)
    short = display_names(metrics)
    for r in rows:
        for k, c in zip(metrics, r["cells"]):
            if c.get("mark") == "not tested" and short[k] not in not_tested.setdefault(c["reason"], []):
                not_tested[c["reason"]].append(short[k])
    return {
        "not_tested": not_tested,
        "label": label,
        "metrics": metrics,
        "short_names": display_names(metrics),
        "rows": rows,
        "hidden": max(0, len(shown) - max_rows),
        "mark_counts": counts,
    }


def _array_summary(v: Any, classes: Sequence[Any] | None = None) -> str:
    a = np.asarray(v, dtype=np.float64)
    if classes is not None and a.ndim == 1 and a.size == len(classes) and a.size <= 12:  # per-class: by class name
        return ", ".join(f"{c}: {_fmt(x)}" for c, x in zip(classes, a))
    if a.size <= 12:
        return json.dumps(jsonable(np.round(a, 4)))
    return f"array of shape {tuple(a.shape)} (see the figures; all values in metrics.json / metrics.parquet)"


def render_report(
    results: Results,
    *,
    title: str | None = None,
    run_info: dict[str, Any] | None = None,
    extra: dict[str, Any] | None = None,
    windows: Sequence[tuple[Any, Results]] | None = None,
    bounds: bool = True,
    max_slices: int = 60,
    max_table_rows: int = 5000,
    small_slice_size: int = SMALL_SLICE_SIZE,
    dpi: int = 100,
    fairness: Sequence[Any] | None = None,
) -> str:
    """The report as an HTML string (self-contained: inline CSS, JS and PNG images).

    Args:
        results: the results to show.
        title: page title (default "Evaluation report").
        run_info: shown in the summary (engine, input, rows, seconds ...).
        extra: more JSON-ready facts shown in the summary (e.g. the example's description).
        windows: windowed results ``[(label, Results)]`` for the "over windows" figure.
        bounds: show certified bounds in the tables and as error bars.
        max_slices: bars per per-slice chart (the largest slices by weight).
        max_table_rows: rows of the per-slice table (the rest is counted, not shown).
        small_slice_size: slices with fewer rows are marked small (hatched) in the bar charts.
        dpi: resolution of the embedded figures.
        fairness: :class:`mergeable_metrics.results.fairness.Fairness` results (``results.fairness(...)``) shown in
            a "Fairness across slices" section.
    """
    jinja2 = require("jinja2", "report", "the HTML report")

    if windows is None and results.windows:  # windowed results: "Over time" across windows; tables of the latest
        windows = [(_window_text(w), r) for w, r in results.by_window().items()]
        last = results.windows[-1]
        extra = {**(extra or {}), "windows": len(windows), "window shown in the tables": f"{last[0].isoformat()} / {last[1].isoformat()}"}
        results = results.window(*last)
    n_suppressed = slice_counts(results)[1]
    if n_suppressed:  # min_slice_size: nothing to show for them; counted beside the tables
        extra = {**(extra or {}), "suppressed_slices": n_suppressed}
        results = Results([s for s in results.slices if not s.suppressed], results.config)
    figures = build_figures(results, windows=windows, bounds=bounds, max_slices=max_slices, small_slice_size=small_slice_size, dpi=dpi)
    figure_of: dict[str, str] = {}  # metric key -> id of the first figure drawn from it
    for f in figures:
        if f.metric:
            figure_of.setdefault(f.metric, f.id)
    scalars = scalar_metrics(results, include_counts=True)
    overall = next((s for s in computed(results) if s.slice == ()), None)
    ci_name = ci_label(results)
    unsupported = set(((results.config or {}).get("ci") or {}).get("unsupported", ()))
    overall_rows = []
    if overall is not None:
        shorts = display_names(overall.metrics)
        for k, v in overall.metrics.items():
            short = shorts[k]
            if np.ndim(v) == 0 and not isinstance(v, str):
                cell = _cell(v, overall.bounds.get(k), bounds, canonical_name(k) in COUNT_METRICS)
            elif k in figure_of:  # a matrix or curve is shown as its figure, never as a nested list
                what = {"confusion_matrix": "heatmap", "accuracy_matrix": "heatmap", "roc": "curve", "pr": "curve"}.get(figure_kind(k) or "", "diagram")
                cell = {
                    "text": f"shown as the {what} below",
                    "sort": "",
                    "title": "all values in metrics.json / metrics.parquet",
                    "null": False,
                    "href": "#" + figure_of[k],
                }
            else:
                cell = {"text": _array_summary(v, results.metric_labels(k) or results.classes), "sort": "", "title": "", "null": False}
            cls = metric_class(k)
            hib = getattr(cls, "higher_is_better", None)
            ci_cell = {"text": "", "title": ""} if k in figure_of and np.ndim(v) != 0 else _ci_text(overall, k, k in unsupported, ci_name)
            overall_rows.append(
                {
                    "metric": short,
                    "key": k,
                    "name": metric_full_name(k),
                    "cell": cell,
                    "ci": ci_cell,
                    "direction": {True: "higher is better", False: "lower is better"}.get(hib, ""),
                }
            )
    slice_rows = []
    for s in results.slices[:max_table_rows]:
        if getattr(s, "suppressed", False):
            blank = {"text": "suppressed", "sort": "", "title": "fewer rows than min_slice_size: no values", "null": True}
            slice_rows.append({"name": s.name, "n": None, "weight": "suppressed", "weight_sort": "", "skipped": "", "cells": [blank] * len(scalars)})
            continue
        slice_rows.append(
            {
                "name": s.name,
                "small": s.slice != () and s.n is not None and int(s.n) < small_slice_size,
                "n": s.n,
                "weight": _fmt(s.weight),
                "weight_sort": repr(float(s.weight)),
                "skipped": s.skipped,
                "cells": [_cell(s.metrics[k], s.bounds.get(k), bounds, canonical_name(k) in COUNT_METRICS, _ci_pair(s, k), ci_name) for k in scalars],
            }
        )
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=True, undefined=jinja2.StrictUndefined)
    info = {k: v for k, v in (run_info or {}).items() if v is not None}
    config = results.config or {}
    summary = [("confidence intervals", ci_name)] if ci_name else []
    shown_threshold = threshold_applies(results)
    for k in (
        "task",
        "label_col",
        "score_col",
        "prediction_col",
        "baseline_score_col",
        "baseline_prediction_col",
        "tolerance",
        "weight_col",
        "threshold",
        "classes",
        "pos_label",
        "slices",
    ):
        if k == "threshold" and not shown_threshold:  # argmax, regression, predicted labels, threshold-free metrics
            continue
        if config.get(k) not in (None, [], ""):
            summary.append((k, config[k] if isinstance(config[k], (str, int, float)) else json.dumps(config[k])))
    return env.get_template(TEMPLATE).render(
        title=title or "Evaluation report",
        generated=_dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        run_info=info,
        summary=summary,
        extra_json=json.dumps(extra, indent=2, default=str) if extra else "",
        config_json=json.dumps(config, indent=2, default=str),
        overall_rows=overall_rows,
        scalars=scalars,
        short_names=display_names(scalars),
        full_names={m: metric_full_name(m) for m in scalars},
        weighted=is_weighted(results),
        overall_n=n_text(overall) if overall is not None else "",
        small_slice_size=small_slice_size,
        slice_rows=slice_rows,
        comparison=_comparison_table(results, max_table_rows),
        fairness=[_fairness_table(f, max_table_rows) for f in fairness or ()],
        hidden_rows=max(0, len(results.slices) - max_table_rows),
        show_skipped=any(s.skipped for s in results.slices),
        figures=figures,
        sections=_sections(figures),
        n_slices=len(results.slices),
        windowed=bool(windows),
        suppressed_slices=n_suppressed,
        suppressed_note=(
            f"{n_suppressed:,} more slice{'s are' if n_suppressed != 1 else ' is'} suppressed (fewer rows than min_slice_size"
            + (f" = {(results.config or {}).get('min_slice_size'):g}" if (results.config or {}).get("min_slice_size") else "")
            + ", or withheld with such a slice): not shown, no values published."
        ),
        ci_name=ci_name,
        ci_unsupported=[
            short_name(k)
            for k in (overall.metrics if overall is not None else ())
            if k in unsupported and not (k in figure_of and np.ndim(overall.metrics[k]) != 0)
        ],
    )


def _fairness_table(f: Any, max_rows: int) -> dict[str, Any]:
    """One :class:`mergeable_metrics.results.fairness.Fairness` as a table: the reference row, then a row per slice."""

    def num(v: float, signed: bool = False) -> dict[str, Any]:
        ok = v is not None and math.isfinite(float(v))
        return {"text": (f"{float(v):+.4f}" if signed else f"{float(v):.4f}") if ok else "null", "sort": repr(float(v)) if ok else "", "title": ""}

    def value(v: float, ci: Any) -> dict[str, Any]:
        c = num(v)
        if ci is not None:
            c["text"] += f" ({_fmt(ci[0])}, {_fmt(ci[1])})"
            c["title"] = "the slice's confidence interval"
        return c

    ref_name = "Overall" if f.reference == () else slice_name(f.reference)
    worst = f.worst
    rows = [{"name": f"{ref_name} (reference)", "n": "" if f.reference_n is None else f.reference_n, "worst": False,
             "cells": [c for m in f.metrics for c in (value(f.reference_values[m], f.reference_ci.get(m)), {"text": "", "sort": "", "title": ""})] + [{"text": "", "sort": "", "title": ""}]}]  # fmt: skip
    for s in f.slices[:max_rows]:
        cells = [c for m in f.metrics for c in (value(s.values[m], s.ci.get(m)), num(s.differences[m], True))]
        rows.append({"name": s.name, "n": s.n, "worst": worst is not None and s.slice == worst.slice, "cells": cells + [num(s.ratio)]})
    how = "group max - group min, fairlearn's default" if f.method == "between_groups" else f"largest gap to {ref_name}"
    summary = f"{f.method} ({how}): difference {num(f.difference)['text']}, ratio {num(f.ratio)['text']}" + (
        f", worst slice {worst.name}" if worst is not None else ""
    )
    if f.undefined:
        summary += f"; undefined in {len(f.undefined)} slice(s)"
    if f.suppressed:
        summary += f"; {len(f.suppressed)} suppressed slice(s) not compared"
    title = f"{f.criterion} across {', '.join(f.spec)}, against {ref_name}" + (f" ({', '.join(f.metrics)})" if tuple(f.metrics) != (f.criterion,) else "")
    return {"title": title, "summary": summary, "metrics": list(f.metrics), "rows": rows}


def _sections(figures: list[ReportFigure]) -> list[dict[str, Any]]:
    order = [
        ("curves", "Curves and calibration", ("roc", "pr", "reliability", "confusion_matrix", "predicted_vs_actual", "residuals")),
        ("slices", "Per-slice metrics", ("slices",)),
        ("windows", "Over time", ("windows",)),
        ("continual", "Continual learning", ("accuracy_matrix", "anytime_accuracy_matrix", "continual_curves", "ttt_accuracy")),
    ]
    out = []
    for sid, title, kinds in order:
        figs = [f for f in figures if f.kind in kinds]
        if figs:
            out.append({"id": sid, "title": title, "figures": figs})
    return out


def write_report(results: Results, path: str | os.PathLike, **options: Any) -> Path:
    """Write :func:`render_report` to ``path`` (parent directories are created); returns it."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(render_report(results, **options), encoding="utf-8")
    return p
