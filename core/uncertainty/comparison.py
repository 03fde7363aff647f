"""Paired comparison of two models on the same rows (``Evaluation(baseline_score_col=...)``).

An evaluation with a baseline model runs a :class:`PairedPlan`: each slice's tuple of states
holds the candidate's states (the plan's own, first, so everything that reads a plan's states
reads the candidate's), then the baseline's copies of them (without a second example count: both
models see the same rows), then one :class:`~mergeable_metrics.uncertainty.paired_state.PairedConfusionState` (label x
candidate prediction x baseline prediction) for binary and multiclass tasks. Engines carry the
longer tuple unchanged (zero, fold, merge, encode and decode are the plan's).

Per slice and metric, :func:`slice_comparison` reports ``delta = candidate - baseline``, its paired
interval and a verdict (:func:`verdict`). Which paired interval each metric gets:

======================  ======================================================================
comparison method       metrics and interval
======================  ======================================================================
``"analytic"``          accuracy (binary at the task threshold, multiclass), recall, specificity,
                        FPR and FNR (binary, at the task threshold): Newcombe's (1998) hybrid
                        score interval for a difference of paired proportions ("method 10",
                        Wilson intervals of both proportions combined with the phi correlation
                        of the paired 2 x 2 table, continuity-corrected phi); the denominators
                        (all rows, positives, negatives) are the same for both models.
``"posterior"``         every metric computed from confusion counts at the task threshold
                        (precision, F1, MCC, kappa, macro averages, per-class arrays, ...): the
                        equal-tailed interval of the delta over ``ci_replicates`` seeded samples
                        of the Dirichlet posterior of the joint cells (prior ``ci_prior`` per
                        cell; ``ci_interval="hdi"``: the highest-density interval), both
                        models' metrics computed from the same sample.
``"bootstrap"``         every metric with fixed-shape replicate values, ROC AUC, AP and
                        calibration included (:func:`paired_bootstrap`: replicate ``r`` of both
                        models weights the same hash buckets of rows by the same Poisson
                        weights): the percentile interval of the replicate deltas
                        ``candidate_r - baseline_r`` (:func:`mergeable_metrics.uncertainty.bootstrap.percentile_interval`).
======================  ======================================================================

The comparison method is ``ci`` when set, else ``"analytic"`` (a verdict needs an interval).
Metrics without a better direction (``higher_is_better`` None: counts, confusion matrices,
curves) get no comparison; their baseline values are in ``baseline_metrics`` as every metric's.
A metric without a paired interval under the method gets ``ci=None``, the verdict
``"indistinguishable"`` and a ``reason`` (e.g. ROC AUC without the bootstrap: the states hold
each model's score distribution, not the joint one, so no paired DeLong is possible).
"""

from __future__ import annotations

import math
import warnings
from typing import Any, Sequence

import numpy as np

from mergeable_metrics.inputs.validation import Batch
from mergeable_metrics.uncertainty.bootstrap import (
    BucketedPlan,
    fixed_shape_keys,
    percentile_interval,
    replicate_intervals,
    replicate_values,
    replicate_weights,
)
from mergeable_metrics.uncertainty.intervals import dirichlet_cells, draw_seed, sample_interval, wilson
from mergeable_metrics.metrics.base import Metric
from mergeable_metrics.uncertainty.paired_state import MAX_PAIRED_CLASSES, PairedConfusionState
from mergeable_metrics.collection.plan import Plan
from mergeable_metrics.results.results import Comparison
from mergeable_metrics.states.base import BinaryConfusionState, ConfusionMatrixState, ExampleCountState

__all__ = ["PairedPlan", "comparison_method", "newcombe_interval", "paired_bootstrap", "paired_proportion", "posterior_deltas", "slice_comparison", "verdict"]

VERDICTS = ("better", "worse", "indistinguishable")


class PairedPlan(Plan):
    """The plan of an evaluation with a baseline model: the candidate's states, the baseline's
    copies and the joint confusion state (see the module docstring).

    Metric keys, the task, the input needs and :meth:`compute_detailed` (the candidate's values)
    are the candidate plan's; :attr:`roles` says which model each state folds.

    Args:
        candidate: the evaluation's plan of metrics.
    """

    def __init__(self, candidate: Plan):
        self.__dict__.update(candidate.__dict__)
        self.candidate = candidate
        own = candidate.state_types
        base = own[1:]  # one example count: the rows are the same
        t = candidate.task
        joint: tuple = ()
        has_confusion = any(cls in (BinaryConfusionState, ConfusionMatrixState) for cls, _ in own)
        if t.kind in ("binary", "multiclass") and has_confusion and t.num_classes <= MAX_PAIRED_CLASSES:
            joint = ((PairedConfusionState, PairedConfusionState.layout_for([], t)),)
        self.state_types = own + base + joint
        #: per state: ``"candidate"``, ``"baseline"`` (folds :attr:`Batch.baseline`) or ``"joint"``
        self.roles: tuple[str, ...] = ("candidate",) * len(own) + ("baseline",) * len(base) + ("joint",) * len(joint)

    @property
    def fingerprint(self) -> dict[str, Any]:
        return {**self.candidate.fingerprint, "paired": True}

    def fold(self, states: tuple, batch: Batch) -> tuple:
        """Fold a paired batch: the baseline's states read ``batch.baseline``."""
        if batch.n == 0:
            return states
        if batch.baseline is None:
            raise ValueError("a paired plan folds batches with the baseline model's inputs (Batch.baseline)")
        return tuple(s.fold(batch.baseline if r == "baseline" else batch) for s, r in zip(states, self.roles))

    def split(self, states: tuple) -> tuple[tuple, tuple, Any]:
        """``(candidate states, baseline states, joint state or None)``; both models' tuples are
        in the candidate plan's layout (the example count shared)."""
        k = len(self.candidate.state_types)
        cand = tuple(states[:k])
        base = (states[0],) + tuple(states[k : 2 * k - 1])
        joint = states[2 * k - 1] if len(states) > 2 * k - 1 else None
        return cand, base, joint

    def compute_detailed(self, states: tuple) -> tuple:
        return self.candidate.compute_detailed(self.split(states)[0])

    def compute_many(self, states_list: Sequence[tuple]) -> Any:
        """The candidate's metrics of many paired state tuples (:meth:`Plan.compute_many`)."""
        return self.candidate.compute_many([self.split(s)[0] for s in states_list])

    def describe(self) -> dict[str, Any]:
        return {**self.candidate.describe(), "states": [f"{cls.kind} {layout}" for cls, layout in self.state_types]}


def paired_bootstrap(
    plan: BucketedPlan, states: tuple, level: float, replicates: int, seed: int, values: dict[str, Any] | None = None
) -> tuple[dict[str, Any], dict[str, tuple[np.ndarray, np.ndarray]]]:
    """The paired bootstrap of one slice of ``ci="bootstrap"`` with a baseline model.

    Replicate ``r`` of each model is the sum of that model's bucket states weighted by the same
    ``w[r, b]`` (:func:`mergeable_metrics.uncertainty.bootstrap.replicate_weights`): both models are resampled over the
    same rows, so ``candidate_r - baseline_r`` is the paired bootstrap of the delta (ROC AUC and
    every other metric with a fixed-shape value included).

    Args:
        plan: the evaluation's :class:`~mergeable_metrics.uncertainty.bootstrap.BucketedPlan` of a :class:`PairedPlan`.
        states: the slice's bucketed paired states.
        level, replicates, seed: the ``ci_*`` options.
        values: the candidate's metric values (only metrics of fixed-shape values are resampled);
            None: every metric.

    Returns:
        ``(ci, replicate values)``: the candidate's percentile intervals ``{key: (lower,
        upper)}`` (as :func:`mergeable_metrics.uncertainty.bootstrap.bootstrap_ci` without a baseline) and ``{key:
        ((R, ...) candidate, (R, ...) baseline)}`` for :func:`slice_comparison`.
    """
    paired = plan.base
    if not isinstance(plan, BucketedPlan) or not isinstance(paired, PairedPlan):
        raise ValueError('the paired bootstrap needs the bucketed states of an evaluation with a baseline model folded with ci="bootstrap"')
    models = plan.__dict__.get("_models")
    if models is None:  # each model's states per bucket, in the candidate's layout
        models = plan.__dict__["_models"] = BucketedPlan(paired.candidate, plan.buckets)
    cand, base = [], []
    if plan.stacked:  # the point states, then the bucket-stacked ones, of each model
        k = len(paired.state_types)
        for part in (states[:k], states[k:]):
            c, b, _ = paired.split(part)
            cand.extend(c)
            base.extend(b)
    else:
        for group in plan.groups(states):
            c, b, _ = paired.split(group)
            cand.extend(c)
            base.extend(b)
    w = replicate_weights(seed, replicates, plan.buckets)
    keys = fixed_shape_keys(values)
    rc = replicate_values(models, tuple(cand), w, keys)
    rb = replicate_values(models, tuple(base), w, keys)
    return replicate_intervals(rc, level), {k: (v, rb[k]) for k, v in rc.items() if k in rb}


def comparison_method(ci: str | None) -> str:
    """The paired interval method of a comparison: ``ci``, or ``"analytic"`` when it is None."""
    return ci or "analytic"


# -- analytic: Newcombe's interval for paired proportions -------------------------------------
def newcombe_interval(a: float, b: float, c: float, d: float, level: float) -> tuple[float, float]:
    """Newcombe's (1998) interval of ``p1 - p2 = (b - c) / n`` for paired proportions.

    Args:
        a, b, c, d: the paired 2 x 2 table: both models succeed, only the candidate (first)
            succeeds, only the baseline succeeds, neither (row counts, or frequency weights).
        level: the confidence level.

    Returns:
        ``(lower, upper)`` ("method 10": Wilson intervals of ``p1 = (a + b) / n`` and
        ``p2 = (a + c) / n`` combined with the phi coefficient of the table, continuity-corrected
        towards 0 when ``ad - bc`` is positive); NaN for an empty table.

    Source: R. G. Newcombe, Improved confidence intervals for the difference between binomial
    proportions based on paired data, Statistics in Medicine 17 (1998) 2635-2650.
    """
    n = a + b + c + d
    if not n > 0:
        return float("nan"), float("nan")
    p1, p2 = (a + b) / n, (a + c) / n
    l1, u1 = wilson(a + b, n, level)
    l2, u2 = wilson(a + c, n, level)
    margins = (a + b) * (c + d) * (a + c) * (b + d)
    phi = 0.0
    if margins > 0:
        ad_bc = a * d - b * c
        phi = (ad_bc - n / 2) / math.sqrt(margins) if ad_bc > n / 2 else ad_bc / math.sqrt(margins) if ad_bc < 0 else 0.0
    theta = p1 - p2
    dl = math.sqrt(max((p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2, 0.0))
    du = math.sqrt(max((u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2, 0.0))
    return max(-1.0, theta - dl), min(1.0, theta + du)


#: metric name -> (label rows in the denominator: None for all, else the label; the prediction
#: that is a "success": None for "equals the label", else that prediction)
_PAIRED_PROPORTIONS = {"accuracy": (None, None), "recall": (1, 1), "fnr": (1, 0), "specificity": (0, 0), "fpr": (0, 1)}


def paired_proportion(metric: Metric, joint: PairedConfusionState | None) -> tuple[float, float, float, float] | None:
    """The paired 2 x 2 table ``(a, b, c, d)`` (see :func:`newcombe_interval`) of a metric that
    is a proportion over rows both models share (accuracy; recall, FNR over the positives;
    specificity, FPR over the negatives), from the joint confusion state; None for other metrics
    or thresholds than the joint state's."""
    if joint is None or metric.name not in _PAIRED_PROPORTIONS:
        return None
    task, lay = metric.task, joint.layout
    if task.kind == "binary":
        if metric.p.get("threshold") != lay.threshold or metric.p.get("average", "binary") != "binary":
            return None
    elif task.kind != "multiclass" or metric.name != "accuracy":
        return None
    rows, good = _PAIRED_PROPORTIONS[metric.name]
    cells = np.asarray(joint.arrays["cells"], dtype=np.float64)
    k = cells.shape[0]
    y = np.arange(k)[:, None]
    pred = np.arange(k)[None, :]
    success = (pred == y) if good is None else np.broadcast_to(pred == good, (k, k))  # (label, prediction)
    if rows is not None:
        cells = cells[rows : rows + 1]
        success = success[rows : rows + 1]
    sc = success[:, :, None]  # candidate: axis 1
    sb = success[:, None, :]  # baseline: axis 2
    a = float(cells[sc & sb].sum())
    b = float(cells[sc & ~sb].sum())
    c = float(cells[~sc & sb].sum())
    d = float(cells[~sc & ~sb].sum())
    return a, b, c, d


# -- posterior: Dirichlet samples of the joint cells ------------------------------------------
_CONFUSION_KINDS = (ExampleCountState, BinaryConfusionState, ConfusionMatrixState)


def posterior_ready(metric: Metric, joint: PairedConfusionState | None) -> bool:
    """Whether a metric is computed from confusion counts the joint state holds (its
    thresholds are the joint state's)."""
    if joint is None:
        return False
    for cls, req in metric.requires():
        if cls not in _CONFUSION_KINDS:
            return False
        if cls is BinaryConfusionState and float(req) != joint.layout.threshold:
            return False
    return True


def posterior_deltas(metrics: list[Metric], joint: PairedConfusionState, n: int, samples: np.ndarray) -> dict[str, np.ndarray]:
    """``{metric key: (R, ...) candidate - baseline}`` from (R, K, K, K) samples of the joint
    cells: both models' confusion cells are margins of the same sample, and their metrics come
    from :meth:`mergeable_metrics.collection.plan.Plan.compute_cells` (vectorised over the samples)."""
    k = samples.shape[1]
    plan = Plan(metrics, metrics[0].task)
    kinds = {cls.kind for cls, _ in plan.state_types}

    def cells(matrix: np.ndarray) -> dict[str, np.ndarray]:  # (R, K, K): label x prediction
        out = {"example_count": matrix.sum(axis=(1, 2))[:, None]}
        if "confusion_matrix" in kinds:
            out["confusion_matrix"] = matrix.reshape(-1, k * k)
        if "binary_confusion" in kinds:  # one threshold: cells label * 2 + predicted = [tn, fp, fn, tp]
            out["binary_confusion"] = matrix.reshape(-1, 4)
        return out

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cand = plan.compute_cells(cells(samples.sum(axis=3))).values
        base = plan.compute_cells(cells(samples.sum(axis=2))).values
    return {m.key: np.asarray(cand[m.key], dtype=np.float64) - np.asarray(base[m.key], dtype=np.float64) for m in metrics}


# -- verdicts ---------------------------------------------------------------------------------
def verdict(delta: float, ci: tuple[float, float] | None, higher_is_better: bool | None, tolerance: float) -> str:
    """``"better"`` when the change in the metric's good direction exceeds ``tolerance`` and the
    paired interval excludes 0 on that side; ``"worse"`` symmetrically; else
    ``"indistinguishable"`` (also without an interval, a direction, or a defined delta)."""
    if ci is None or higher_is_better is None or not (delta == delta):
        return "indistinguishable"
    lo, hi = ci
    if not (lo == lo and hi == hi):
        return "indistinguishable"
    sign = 1.0 if higher_is_better else -1.0
    good, g_lo, g_hi = sign * delta, min(sign * lo, sign * hi), max(sign * lo, sign * hi)
    if good > tolerance and g_lo > 0:
        return "better"
    if good < -tolerance and g_hi < 0:
        return "worse"
    return "indistinguishable"


def _comparison(delta: Any, ci: tuple | None, m: Metric, tolerance: float, reason: str | None) -> Comparison:
    hib = m.higher_is_better
    if np.ndim(delta) == 0:
        delta = float(delta)
        ci = None if ci is None else (float(ci[0]), float(ci[1]))
        if not math.isfinite(delta):  # undefined for a model (e.g. precision without predicted positives)
            ci, reason = None, "undefined for the candidate or the baseline model (delta is null)"
        return Comparison(delta, ci, verdict(delta, ci, hib, tolerance), reason)
    d = np.asarray(delta, dtype=np.float64)
    if ci is None:
        verdicts = ["indistinguishable"] * d.size
    else:
        lo, hi = np.broadcast_to(ci[0], d.shape), np.broadcast_to(ci[1], d.shape)
        verdicts = [verdict(float(x), (float(a), float(b)), hib, tolerance) for x, a, b in zip(d.reshape(-1), lo.reshape(-1), hi.reshape(-1))]
    return Comparison(d, ci, np.array(verdicts, dtype=object).reshape(d.shape).tolist(), reason)


def slice_comparison(
    plan: PairedPlan,
    key: tuple,
    states: tuple,
    values: dict[str, Any],
    baseline_values: dict[str, Any],
    *,
    method: str,
    level: float,
    replicates: int,
    seed: int,
    prior: float,
    tolerance: float,
    interval: str = "equal_tailed",
    replicate_values: dict[str, tuple[np.ndarray, np.ndarray]] | None = None,
) -> dict[str, Comparison]:
    """``{metric key: Comparison}`` of one slice.

    Args:
        plan: the evaluation's paired plan.
        key: the slice key (seeds the posterior samples).
        states: the slice's merged states (the paired plan's tuple).
        values, baseline_values: both models' metric values.
        method: ``"analytic"``, ``"posterior"`` or ``"bootstrap"`` (see the module docstring).
        level, replicates, seed, prior, interval: the ``ci_*`` options (``interval``:
            ``"equal_tailed"`` or ``"hdi"`` for the posterior deltas; the bootstrap's deltas get
            the percentile interval of :func:`mergeable_metrics.uncertainty.bootstrap.percentile_interval`).
        tolerance: the verdict's tolerance.
        replicate_values: ``ci="bootstrap"``: ``{metric key: ((R, ...) candidate, (R, ...)
            baseline)}`` replicate values of the same resampled rows; None when unavailable.
    """
    _, _, joint = plan.split(states)
    counts = states[0]
    n = int(counts.arrays["count"])
    out: dict[str, Comparison] = {}
    post: dict[str, np.ndarray] = {}
    if method == "posterior":
        ready = [m for m in plan.metrics if m.higher_is_better is not None and posterior_ready(m, joint)]
        if ready and joint is not None and np.ndim(prior) != 0:
            raise ValueError("ci_prior as an array (one per confusion cell) applies to one model's intervals; the comparison with a baseline needs a number")
        if ready and joint is not None:
            cells = np.asarray(joint.arrays["cells"], dtype=np.float64)
            flat = dirichlet_cells(cells.reshape(-1), prior, replicates, draw_seed(seed, key, "comparison"))
            post = posterior_deltas(ready, joint, n, flat.reshape((replicates,) + cells.shape))
    for m in plan.metrics:
        c, b = values[m.key], baseline_values.get(m.key)
        if m.higher_is_better is None or b is None or np.shape(c) != np.shape(b):
            continue  # counts, matrices and curves: no better direction (their values are in baseline_metrics)
        delta = np.asarray(c, dtype=np.float64) - np.asarray(b, dtype=np.float64)
        ci: tuple | None = None
        reason = None
        if method == "analytic":
            table = paired_proportion(m, joint)
            if table is None:
                reason = "no analytic paired interval for this metric (paired proportions only: accuracy, recall, specificity, fpr, fnr); use ci='posterior' or 'bootstrap'"
            elif sum(table) <= 0:
                reason = "no rows in the metric's denominator"
            else:
                ci = newcombe_interval(*table, level)
        elif method == "posterior":
            if m.key in post:
                ci = sample_interval(post[m.key], level, interval)
                if np.ndim(ci[0]) == 0 and not math.isfinite(ci[0]):
                    ci, reason = None, "undefined in every posterior sample"
            else:
                reason = "not computed from confusion counts at the task threshold: no posterior paired interval; use ci='bootstrap'"
        elif method == "bootstrap":
            reps = (replicate_values or {}).get(m.key)
            if reps is None:
                reason = "no paired bootstrap replicates for this metric"
            else:
                # the percentile interval of the paired deltas, as the candidate's own bootstrap interval
                ci = percentile_interval(np.asarray(reps[0], dtype=np.float64) - np.asarray(reps[1], dtype=np.float64), level)
        out[m.key] = _comparison(delta, ci, m, tolerance, reason)
    return out
