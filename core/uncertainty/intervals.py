"""Confidence intervals of sampling uncertainty (``Evaluation(ci=...)``), per slice and metric.

Not to be confused with *bounds* (certified limits of an approximate state's value: compression
error only). A ``ci`` is always reported with its method and level (``Results.config["ci"]``).

Methods (``ci=``):

* ``"analytic"``: closed forms from the merged states.

  - proportions (accuracy, precision, recall, specificity, NPV, FPR, FNR, prevalence; binary,
    ``micro`` and per class ``none``): the Wilson score interval of ``successes / trials``;
  - binary ROC AUC: DeLong's variance from the score distribution's (key, positives, negatives)
    counts (Sun & Xu's placements: cumulative sums over the distinct scores, ties count one half),
    with a normal interval on the logit scale, ``logit(AUC) +- z se / (AUC (1 - AUC))`` mapped
    back: it stays inside [0, 1] and covers better than the plain ``AUC +- z se`` near 1 (see
    ``tests/core/test_ci_coverage.py``); a compressed state's bins count as tied scores;
  - means whose state holds the second moment (``mae``, ``mean_error``): ``mean +- z s / sqrt(n)``.

  Everything else (macro/weighted averages, F1, MCC, kappa, MSE, ``mean_measure``, calibration,
  curves, counts) has no analytic form here: no value, and listed in
  ``Results.config["ci"]["unsupported"]``.
* ``"posterior"``: the Dirichlet posterior of each confusion state's cells (Beta for two cells),
  ``counts + ci_prior``, sampled ``ci_replicates`` times; every confusion-derived metric
  (including macro averages, MCC and kappa) is computed from each sample (scaled to the observed
  total weight) and the interval is equal-tailed or the highest-density one (``ci_interval``).
  The draws of a slice derive from ``ci_seed``, the slice key and the state kind only (SHA-256,
  never Python's ``hash``), so every engine and partitioning gives the same floats; all metrics
  of a slice read the same draws. Non-confusion metrics (AUC, calibration, regression, counts of
  examples) are unsupported.
* ``"bootstrap"``: a one-pass, mergeable Poisson bootstrap (not in this module yet).

Weights: ``analytic`` and ``posterior`` treat sample weights as **frequency weights** (a row of
weight 3 counts as three examples: ``n`` is the total weight). For importance or survey weights
their intervals are not calibrated; use the bootstrap.

Empty and tiny slices: a slice with no (weight of) examples gets NaN limits from both methods,
never an error; one example gets a defined interval: Wilson's ``[0.2065, 1]`` for one success
at 95% (exactly 0 / 1 at the ends without successes / failures), DeLong and the normal means
NaN (they need two examples per class / two examples), the posterior the quantiles of its
samples (the prior keeps them inside (0, 1)). Huge frequency weights give intervals of almost
zero width that still contain the value. (``ci="bootstrap"``: NaN for no examples too, and for
one example the zero-width interval at its value, as any bootstrap of one row.)

:func:`slice_ci` is the one entry point :meth:`mergeable_metrics.Evaluation.finish` calls per slice.
"""

from __future__ import annotations

import hashlib
import json
import math
import weakref
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from mergeable_metrics.uncertainty.bootstrap import bootstrap_ci, resampled, warn_repeated_rows
from mergeable_metrics.metrics.classification import _BinaryRate, Prevalence
from mergeable_metrics.states.codec import slice_key_to_json
from mergeable_metrics.metrics.base import Accuracy, Metric, _PRF, recording_undefined
from mergeable_metrics.metrics.ranking import RocAuc
from mergeable_metrics.metrics.regression import MeanAbsoluteError, MeanError
from mergeable_metrics.collection.stacked import is_cell_metric
from mergeable_metrics.states.base import BinaryConfusionState, ConfusionMatrixState, ExampleCountState, State

__all__ = ["CI_OPTIONS", "CISettings", "normal_quantile", "slice_ci", "supported", "wilson"]

#: the options :class:`CISettings` reads; ``Results.config`` gathers them under ``"ci"``
CI_OPTIONS = ("ci", "ci_level", "ci_replicates", "ci_seed", "ci_prior", "ci_interval", "ci_buckets", "ci_prevalence_prior")


@dataclass(frozen=True)
class CISettings:
    """The ``ci`` options of an evaluation (see :data:`mergeable_metrics.evaluation.options.OPTIONS`)."""

    method: str | None
    level: float = 0.95
    replicates: int = 200
    seed: int = 0
    #: the confusion prior: a count per cell (float) or per cell of each state (nested tuples)
    prior: Any = 0.5
    interval: str = "equal_tailed"
    #: the evaluation's ``id_col`` (``ci="bootstrap"``: None hashes each row's content)
    id_col: str | None = None
    #: the prevalence prior (None: one Dirichlet over the cells, see :func:`posterior_cells`)
    prevalence_prior: Any = None

    @classmethod
    def from_options(cls, o: dict[str, Any]) -> "CISettings":
        return cls(
            o["ci"], o["ci_level"], o["ci_replicates"], o["ci_seed"], o["ci_prior"], o.get("ci_interval", "equal_tailed"), o.get("id_col"),
            o.get("ci_prevalence_prior"),
        )  # fmt: skip

    def to_config(self, plan: Any = None) -> dict[str, Any]:
        """``Results.config["ci"]``: ``{"method", "level", "replicates", "seed"}``, with
        ``prior`` and ``interval`` for ``posterior``, and ``unsupported``: the metric keys of
        ``plan`` that get no interval from this method."""
        out: dict[str, Any] = {"method": self.method, "level": self.level, "replicates": self.replicates, "seed": self.seed}
        if self.method == "posterior":
            out["prior"] = self.prior
            if self.prevalence_prior is not None:
                out["prevalence_prior"] = self.prevalence_prior
            out["interval"] = self.interval
        if self.method == "bootstrap":
            out["interval"] = "percentile"
            if plan is not None and hasattr(plan, "buckets"):
                out["buckets"] = plan.buckets
        if plan is not None and self.method in _METHODS:
            out["unsupported"] = [m.key for m in plan.metrics if not supported(self.method, m)]
        return out


# -- the normal quantile ---------------------------------------------------------------------
def normal_quantile(p: float) -> float:
    """The standard normal quantile ``Phi^-1(p)`` for ``p`` in (0, 1), to ~1e-15.

    Acklam's rational approximation refined by two Newton steps on ``math.erfc`` (numpy has no
    inverse error function, and core imports numpy only). ``normal_quantile(0.975) = 1.95996...``.
    """
    if not 0.0 < p < 1.0:
        raise ValueError(f"normal_quantile needs p in (0, 1), got {p!r}")
    if p > 0.5:  # symmetry; 1 - p is exact for p in [0.5, 1), the lower tail keeps its digits
        return -normal_quantile(1.0 - p)
    a = (-3.969683028665376e01, 2.209460984245205e02, -2.759285104469687e02, 1.383577518672690e02, -3.066479806614716e01, 2.506628277459239e00)
    b = (-5.447609879822406e01, 1.615858368580409e02, -1.556989798598866e02, 6.680131188771972e01, -1.328068155288572e01)
    c = (-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e00, -2.549732539343734e00, 4.374664141464968e00, 2.938163982698783e00)
    d = (7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e00, 3.754408661907416e00)
    lo = 0.02425
    if p < lo:
        q = math.sqrt(-2 * math.log(p))
        x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) / ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1)
    elif p <= 1 - lo:
        q = p - 0.5
        r = q * q
        x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q / (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1)
    else:
        q = math.sqrt(-2 * math.log(1 - p))
        x = -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) / ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1)
    for _ in range(2):  # Newton on Phi(x) - p, Phi(x) = erfc(-x / sqrt 2) / 2
        err = 0.5 * math.erfc(-x / math.sqrt(2)) - p
        x -= err * math.sqrt(2 * math.pi) * math.exp(x * x / 2)
    return x


# -- analytic --------------------------------------------------------------------------------
def wilson(successes: Any, trials: Any, level: float) -> tuple[Any, Any]:
    """Wilson score interval of ``successes / trials`` (arrays broadcast); NaN where ``trials``
    is 0 (no example: also for a slice with no weight); exactly 0 (1) as the lower (upper) limit
    when there are no successes (failures), as scipy's; one example of weight 1 gives ``[0.2065,
    1]`` at 95%. Returns floats for scalar input, arrays otherwise."""
    k, n = np.asarray(successes, dtype=np.float64), np.asarray(trials, dtype=np.float64)
    z = normal_quantile(0.5 + level / 2)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        p = np.clip(k / n, 0.0, 1.0)
        den = 1 + z * z / n
        centre = (p + z * z / (2 * n)) / den
        half = z / den * np.hypot(np.sqrt(p * (1 - p) / n), z / (2 * n))  # no (z / 2n)^2 underflow for huge weights
        # the ends are exact (centre == half at k = 0): rounding must not exclude p = 0 or 1
        lo = np.where(k <= 0, 0.0, np.clip(centre - half, 0.0, 1.0))
        hi = np.where(k >= n, 1.0, np.clip(centre + half, 0.0, 1.0))
    bad = ~(n > 0)
    lo, hi = np.where(bad, np.nan, lo), np.where(bad, np.nan, hi)
    return (float(lo), float(hi)) if lo.ndim == 0 else (lo, hi)


def _proportion(m: Metric, states: dict[str, State]) -> tuple[Any, Any] | None:
    """``(successes, trials)`` of a metric that is a proportion of (weighted) rows, else None."""
    if m.task.kind not in ("binary", "multiclass"):
        return None
    if isinstance(m, _BinaryRate):
        tp, fp, tn, fn = states["binary_confusion"].counts(m.p["threshold"])
        c = {"tp": tp, "fp": fp, "tn": tn, "fn": fn}
        return c[m.num], sum(c[x] for x in m.den)
    if isinstance(m, Prevalence):
        tp, fp, tn, fn = states["binary_confusion"].counts(m.p["threshold"])
        return tp + fn, tp + fp + tn + fn
    if isinstance(m, Accuracy):
        mat = m.matrix(states)
        return np.trace(mat), mat.sum()
    if isinstance(m, _PRF) and m.which in ("precision", "recall"):
        mat = m.matrix(states)
        tp, den = np.diag(mat), mat.sum(axis=0 if m.which == "precision" else 1)
        keep = m.kept_classes()
        avg = m.p["average"]
        lab = m.p.get("labels")
        if lab is not None:  # labels=: those classes' counts, in their order (none is ignored)
            tp, den, keep = tp[list(lab)], den[list(lab)], None
        if avg == "binary":
            return tp[1], den[1]
        if avg == "micro":
            k = np.ones(tp.shape[0], dtype=bool) if keep is None else keep
            return tp[k].sum(), den[k].sum()
        if avg is None:
            if keep is not None:
                den = np.where(keep, den, 0.0)
            return tp, den
    return None


def _is_proportion(m: Metric) -> bool:
    if m.task.kind not in ("binary", "multiclass"):
        return False
    if isinstance(m, (_BinaryRate, Prevalence, Accuracy)):
        return True
    return isinstance(m, _PRF) and m.which in ("precision", "recall") and m.p["average"] in ("binary", "micro", None)


def delong_variance(pos: np.ndarray, neg: np.ndarray) -> tuple[float, float]:
    """``(auc, variance)`` of ROC AUC by DeLong's method from weights per distinct score.

    Args:
        pos: (m,) positive weight per distinct score, ascending scores.
        neg: (m,) negative weight per distinct score, same order.

    The placement of a positive at score ``s`` is the share of negatives below ``s`` plus half
    those at ``s``; of a negative, the share of positives above plus half those at ``s`` (Sun &
    Xu's fast DeLong: cumulative sums over the distinct scores instead of a sort per class).
    ``var = S10 / P + S01 / N`` with ``S10``, ``S01`` the sample variances of the placements.
    NaN when a class has fewer than 2 (weighted) examples.
    """
    pos, neg = np.asarray(pos, dtype=np.float64), np.asarray(neg, dtype=np.float64)
    P, N = float(pos.sum()), float(neg.sum())
    if P < 2 or N < 2:
        return (float("nan") if P <= 0 or N <= 0 else float((pos * (np.cumsum(neg) - neg / 2)).sum() / (P * N))), float("nan")
    # elementwise products and sums, not np.dot: BLAS threads cost more than they save here
    v10 = (np.cumsum(neg) - neg / 2) / N  # negatives below + half the tied ones
    v01 = (P - np.cumsum(pos) + pos / 2) / P  # positives above + half the tied ones
    auc = float((pos * v10).sum() / P)
    s10 = float((pos * (v10 - auc) ** 2).sum() / (P - 1))
    s01 = float((neg * (v01 - auc) ** 2).sum() / (N - 1))
    return auc, s10 / P + s01 / N


def logit_interval(value: float, se: float, z: float) -> tuple[float, float]:
    """``value +- z se`` on the logit scale (delta method), mapped back into [0, 1]."""
    if not (math.isfinite(value) and math.isfinite(se)):
        return float("nan"), float("nan")
    if value <= 0.0 or value >= 1.0 or se == 0.0:
        return value, value
    half = z * se / (value * (1 - value))
    lg = math.log(value / (1 - value))
    return 1 / (1 + math.exp(-(lg - half))), 1 / (1 + math.exp(-(lg + half)))


def _auc_ci(m: Metric, states: dict[str, State], level: float) -> tuple[float, float]:
    a = states[m._state_type().kind].arrays
    pos, neg = (a["neg"], a["pos"]) if m.p["pos_label"] == 0 else (a["pos"], a["neg"])
    auc, var = delong_variance(pos, neg)
    return logit_interval(auc, math.sqrt(var) if var >= 0 else float("nan"), normal_quantile(0.5 + level / 2))


def _mean_ci(m: Metric, states: dict[str, State], level: float) -> tuple[float, float]:
    st = states["regression_moments"]
    n = float(st.fr("weight"))
    if not n > 1:
        return float("nan"), float("nan")
    if isinstance(m, MeanAbsoluteError):  # |e|^2 = e^2: the variance of |e| from sum w e^2
        mean = st.fr("sum_abs_e") / st.fr("weight")
        ss = st.fr("sum_ee") - mean * mean * st.fr("weight")
    else:
        mean = st.fr("sum_e") / st.fr("weight")
        ss = st.centred("e", "e")
    half = normal_quantile(0.5 + level / 2) * math.sqrt(max(float(ss), 0.0) / (n - 1) / n)
    return float(mean) - half, float(mean) + half


def _analytic_kind(m: Metric) -> Callable | None:
    if _is_proportion(m):
        return lambda st, level: wilson(*_proportion(m, st), level)
    if isinstance(m, RocAuc) and m.task.kind == "binary" and m.p["max_fpr"] is None:
        return lambda st, level: _auc_ci(m, st, level)
    if isinstance(m, (MeanAbsoluteError, MeanError)) and m.task.kind == "regression" and m.task.num_outputs is None:
        return lambda st, level: _mean_ci(m, st, level)
    return None


def analytic_ci(settings: CISettings, plan: Any, states: tuple) -> dict[str, Any]:
    """``{metric key: (lower, upper)}`` of the metrics with an analytic interval."""
    by_kind = {s.kind: s for s in states}
    out = {}
    for m in plan.metrics:
        f = _analytic_kind(m)
        if f is not None:
            out[m.key] = f(by_kind, settings.level)
    return out


# -- posterior -------------------------------------------------------------------------------
_CONFUSION = (BinaryConfusionState, ConfusionMatrixState)


def _is_confusion_derived(m: Metric) -> bool:
    kinds = [cls for cls, _ in m.requires()]
    return any(c in _CONFUSION for c in kinds) and all(c in _CONFUSION or c is ExampleCountState for c in kinds)


def confusion_cells(state: State) -> np.ndarray:
    """The (num_cells,) weights of a confusion state's cells (the inverse of its
    ``from_cells``): ``label * (T + 1) + thresholds passed`` for binary counts at T thresholds,
    ``label * K + prediction`` for a K x K matrix."""
    a = state.arrays
    if isinstance(state, ConfusionMatrixState):
        return np.asarray(a["matrix"], dtype=np.float64).reshape(-1)
    tp, fp, tn, fn = (np.asarray(a[f], dtype=np.float64) for f in ("tp", "fp", "tn", "fn"))
    neg = np.diff(np.r_[0.0, tn, tn[-1] + fp[-1]])  # cell j: passes j thresholds
    pos = np.diff(np.r_[0.0, fn, fn[-1] + tp[-1]])
    return np.maximum(np.r_[neg, pos], 0.0)


def state_from_cells(state: State, cells: np.ndarray) -> State:
    """A state of ``state``'s kind and layout holding the (num_cells,) float ``cells``."""
    if isinstance(state, ConfusionMatrixState):
        k = state.layout.num_classes
        return ConfusionMatrixState(state.layout, {"matrix": cells.reshape(k, k)})
    t1 = len(state.layout.thresholds) + 1
    neg, pos = cells[:t1], cells[t1:]
    tail = lambda x: np.cumsum(x[::-1])[::-1][1:]  # noqa: E731  (weight passing > j thresholds)
    return BinaryConfusionState(state.layout, {"tp": tail(pos), "fp": tail(neg), "tn": np.cumsum(neg)[:-1], "fn": np.cumsum(pos)[:-1]})


def draw_seed(seed: int, key: tuple, what: str) -> np.random.Generator:
    """A generator seeded from ``seed``, a slice key and a label, stable across processes."""
    digest = hashlib.sha256(json.dumps([int(seed), slice_key_to_json(key), what]).encode("utf-8")).digest()
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence([int.from_bytes(digest[i : i + 4], "little") for i in range(0, 32, 4)])))


def dirichlet_cells(cells: np.ndarray, prior: float, replicates: int, rng: np.random.Generator) -> np.ndarray:
    """(R, num_cells) samples of the posterior of the cell weights, scaled to the observed total.

    Cells get ``weight + prior`` Gamma draws (a cell with ``weight + prior = 0`` stays 0), each
    row normalised and multiplied by ``cells.sum()``. Rows of zeros when there is no weight."""
    alpha = np.asarray(cells, dtype=np.float64) + prior
    g = rng.standard_gamma(np.broadcast_to(alpha, (replicates, alpha.shape[0])))
    total = g.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(total > 0, g / total, 0.0) * float(np.sum(cells))
    return out


def _cell_shape(state: State) -> tuple[int, int]:
    """``(rows, columns)`` of a confusion state's cells: rows the true labels."""
    if isinstance(state, ConfusionMatrixState):
        k = state.layout.num_classes
        return k, k
    return 2, len(state.layout.thresholds) + 1


def _prior_array(prior: Any, shape: tuple[int, ...], name: str, state: State) -> np.ndarray:
    """``prior`` (a number or an array) broadcast to ``shape``, or ValueError naming the option."""
    a = np.asarray(prior, dtype=np.float64)
    if a.ndim == 0:
        return np.full(shape, float(a))
    if a.shape != shape:
        raise ValueError(
            f"{name} has shape {a.shape}; the {state.kind} state needs {shape} "
            + ("(rows true labels, columns predictions)" if name == "ci_prior" else "(one per class)")
        )
    return a


def posterior_cells(state: State, confusion_prior: Any, prevalence_prior: Any, replicates: int, rng: np.random.Generator) -> np.ndarray:
    """(R, num_cells) posterior samples of a confusion state's cells, scaled to its total weight.

    ``prevalence_prior`` None: one Dirichlet over the cells, ``counts + confusion_prior``
    (:func:`dirichlet_cells`). Else prob_conf_mat's two-stage model: the prevalence of the true
    classes ~ ``Dirichlet(row sums + prevalence_prior)``, each true class's row of predictions ~
    ``Dirichlet(row + confusion_prior)``, the cells their product. (With a prevalence prior equal
    to the row sums of the confusion prior the two are the same distribution.) A Dirichlet
    parameter of 0 (Haldane's prior on an empty cell) gives that cell 0 in every sample.
    """
    cells = confusion_cells(state)
    shape = _cell_shape(state)
    conf = _prior_array(confusion_prior, shape, "ci_prior", state)
    if prevalence_prior is None:
        return dirichlet_cells(cells, conf.reshape(-1), replicates, rng)
    prev = _prior_array(prevalence_prior, (shape[0],), "ci_prevalence_prior", state)
    m = cells.reshape(shape)
    with np.errstate(invalid="ignore", divide="ignore"):
        g = rng.standard_gamma(np.broadcast_to(m.sum(axis=1) + prev, (replicates, shape[0])))
        t = g.sum(axis=1, keepdims=True)
        p_class = np.where(t > 0, g / np.where(t > 0, t, 1.0), 0.0)
        h = rng.standard_gamma(np.broadcast_to(m + conf, (replicates, *shape)))
        u = h.sum(axis=2, keepdims=True)
        p_pred = np.where(u > 0, h / np.where(u > 0, u, 1.0), 0.0)
    return (p_class[:, :, None] * p_pred).reshape(replicates, -1) * float(np.sum(cells))


_CELL_PLANS: "weakref.WeakKeyDictionary[Any, Any]" = weakref.WeakKeyDictionary()


def _cell_plan(plan: Any, metrics: list[Metric]) -> Any:
    """The plan of the ``metrics`` :meth:`~mergeable_metrics.collection.plan.Plan.compute_cells` computes (cached per plan)."""
    sub = _CELL_PLANS.get(plan)
    if sub is None:
        cell = [m for m in metrics if is_cell_metric(m)]
        sub = type(plan)(cell, plan.task) if cell else None
        _CELL_PLANS[plan] = sub
    return sub


def compute_cells(plan: Any, metrics: list[Metric], states: tuple, cells: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Values of ``metrics`` from ``R`` replicate cell arrays: ``{metric key: (R, *shape)}``.

    Args:
        plan: the :class:`~mergeable_metrics.collection.plan.Plan` the metrics belong to.
        metrics: the metrics to compute (confusion-derived).
        states: the slice's states (kinds not in ``cells`` are used as they are).
        cells: ``{state kind: (R, num_cells) float array}``.

    The one place replicate values are computed: the metrics
    :meth:`mergeable_metrics.collection.plan.Plan.compute_cells` vectorises go through it (one call for all R), the
    others (e.g. ``balanced_accuracy``) through their own ``compute`` on each replicate's states.
    """
    by_kind = {s.kind: s for s in states}
    r = next(iter(cells.values())).shape[0]
    out: dict[str, np.ndarray] = {}
    sub = _cell_plan(plan, metrics)
    if sub is not None:
        given = {k: c for k, c in cells.items() if any(cls.kind == k for cls, _ in sub.state_types)}
        if any(cls is ExampleCountState for cls, _ in sub.state_types):
            given[ExampleCountState.kind] = np.full((r, 1), float(by_kind[ExampleCountState.kind]["weight"]))
        many = sub.compute_cells(given)
        out.update({m.key: np.asarray(many.values[m.key], dtype=np.float64) for m in sub.metrics})
    rest = [m for m in metrics if m.key not in out]
    if rest:
        loop: dict[str, list] = {m.key: [] for m in rest}
        with recording_undefined(), np.errstate(all="ignore"):
            for i in range(r):
                rep = {**by_kind, **{k: state_from_cells(by_kind[k], c[i]) for k, c in cells.items()}}
                for m in rest:
                    v = m.compute(rep)
                    loop[m.key].append(np.asarray(getattr(v, "value", v), dtype=np.float64))
        out.update({k: np.stack(v) for k, v in loop.items()})
    return out


def sample_interval(samples: np.ndarray, level: float, how: str = "equal_tailed") -> tuple[Any, Any]:
    """``(lower, upper)`` of (R, *shape) samples along axis 0, ignoring NaN samples (NaN where
    all are): the equal-tailed quantiles, or the shortest window holding ``ceil(level R)``
    sorted samples (``"hdi"``)."""
    s = np.sort(np.asarray(samples, dtype=np.float64), axis=0)  # NaN sort last
    flat = s.reshape(s.shape[0], -1)
    lo, hi = np.full(flat.shape[1], np.nan), np.full(flat.shape[1], np.nan)
    for j in range(flat.shape[1]):
        x = flat[:, j][~np.isnan(flat[:, j])]
        if not x.size:
            continue
        if how == "hdi":
            w = max(1, min(x.size, int(math.ceil(level * x.size))))
            widths = x[w - 1 :] - x[: x.size - w + 1]
            i = int(np.argmin(widths))
            lo[j], hi[j] = x[i], x[i + w - 1]
        else:
            lo[j], hi[j] = np.quantile(x, [(1 - level) / 2, (1 + level) / 2], method="median_unbiased")
    shape = s.shape[1:]
    if not shape:
        return float(lo[0]), float(hi[0])
    return lo.reshape(shape), hi.reshape(shape)


def include_boundary_point(interval: tuple[Any, Any], point: Any) -> tuple[Any, Any]:
    """Extend ``(lower, upper)`` to a point estimate at the edge of a metric's range (-1, 0 or 1)
    that it leaves out: Brown, Cai & DasGupta's (2001) modification of the Jeffreys interval (with
    ``x = 0`` successes the lower limit is 0, with ``x = n`` the upper limit is 1), applied to every
    posterior interval. A posterior with a prior > 0 puts no mass on the edge itself, so without it
    a slice with every prediction right (precision 1.0) gets an interval that excludes 1.0."""
    lo, hi = interval
    p = np.asarray(point, dtype=np.float64) if point is not None else None
    if p is None or np.shape(p) != np.shape(lo):
        return interval
    edge = np.isin(p, (-1.0, 0.0, 1.0))
    new_lo = np.where(edge & (p < lo), p, lo)
    new_hi = np.where(edge & (p > hi), p, hi)
    if not np.shape(lo):
        return float(new_lo), float(new_hi)
    return new_lo, new_hi


def posterior_samples(settings: CISettings, plan: Any, key: tuple, states: tuple, metrics: list[Metric] | None = None) -> dict[str, np.ndarray]:
    """``{metric key: (R, *shape) samples}`` of the confusion-derived ``metrics`` (default: all of
    the plan's) from the Dirichlet posterior of one slice's confusion states."""
    metrics = [m for m in plan.metrics if _is_confusion_derived(m)] if metrics is None else metrics
    if not metrics:
        return {}
    cells = {
        s.kind: posterior_cells(s, settings.prior, settings.prevalence_prior, settings.replicates, draw_seed(settings.seed, key, s.kind))
        for s in states
        if isinstance(s, _CONFUSION)
    }
    return compute_cells(plan, metrics, states, cells)


def posterior_ci(settings: CISettings, plan: Any, key: tuple, states: tuple, values: dict[str, Any] | None = None) -> dict[str, Any]:
    """``{metric key: (lower, upper)}`` of every confusion-derived metric (Dirichlet posterior);
    ``values``: the slice's point values, for :func:`include_boundary_point`."""
    metrics = [m for m in plan.metrics if _is_confusion_derived(m)]
    if not metrics:
        return {}
    samples = posterior_samples(settings, plan, key, states, metrics)
    values = values or {}
    return {m.key: include_boundary_point(sample_interval(samples[m.key], settings.level, settings.interval), values.get(m.key)) for m in metrics}


# -- entry points ----------------------------------------------------------------------------
_METHODS = {
    "analytic": lambda m: _analytic_kind(m) is not None,
    "posterior": _is_confusion_derived,
    "bootstrap": resampled,  # every metric but curves
}


def supported(method: str, m: Metric) -> bool:
    """Whether ``method`` gives metric ``m`` an interval."""
    return _METHODS[method](m)


def slice_ci(settings: CISettings, plan: Any, key: tuple, states: tuple, values: dict[str, Any]) -> dict[str, Any]:
    """``{metric key: (lower, upper)}`` of one slice (empty when ``settings.method`` is None).

    Args:
        settings: the evaluation's ``ci`` options.
        plan: the evaluation's :class:`~mergeable_metrics.collection.plan.Plan`.
        key: the slice key.
        states: the slice's merged states.
        values: the slice's metric values (``plan.compute``).

    Metrics the method does not support are absent (``Results.config["ci"]["unsupported"]``).
    """
    if settings.method is None:
        return {}
    if settings.method == "bootstrap":
        if settings.id_col is None:
            warn_repeated_rows(plan, states)
        return bootstrap_ci(plan, states, settings.level, settings.replicates, settings.seed, values)
    if settings.method == "analytic":
        return analytic_ci(settings, plan, states)
    if settings.method == "posterior":
        return posterior_ci(settings, plan, key, states, values)
    raise NotImplementedError(f"ci={settings.method!r} is not implemented yet")
