"""Posterior summaries per slice and metric (prob_conf_mat's ``summarize_posterior``).

:meth:`mergeable_metrics.Evaluation.posterior` samples the Dirichlet posterior of each slice's
confusion states (the draws, priors and seeds of ``ci="posterior"``: ``ci_prior``,
``ci_prevalence_prior``, ``ci_replicates``, ``ci_seed``, see
:mod:`mergeable_metrics.uncertainty.intervals`) and summarises every confusion-derived metric with
:func:`summarize_posterior`: the median, the mean, the mode, the highest-density interval and the
equal-tailed interval at ``ci_level``, and the samples themselves on request. The intervals are
those of the samples alone: unlike ``SliceResult.ci`` they are not extended to an observed value
at the edge of the metric's range.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from mergeable_metrics.uncertainty.intervals import CISettings, _is_confusion_derived, posterior_samples, sample_interval

__all__ = ["PosteriorSummary", "histogram_mode", "slice_posteriors", "summarize_posterior"]


@dataclass(frozen=True)
class PosteriorSummary:
    """Summary of one metric's posterior samples in one slice (arrays of the metric's shape for
    per-class metrics; NaN where no sample is finite).

    Attributes:
        median: the samples' median.
        mean: the samples' mean (the posterior mean).
        mode: the centre of the fullest bin of a histogram of the samples (numpy's ``"auto"``
            bins within the metric's finite bounds, as prob_conf_mat estimates it); the value
            itself when every sample is equal.
        hdi: ``(lower, upper)``, the shortest window holding ``ceil(level R)`` sorted samples.
        equal_tailed: ``(lower, upper)``, the ``(1 - level) / 2`` and ``(1 + level) / 2``
            quantiles (``median_unbiased``).
        level: the probability inside both intervals.
        samples: the (R, *shape) samples when asked for (``samples=True``), else None.
    """

    median: Any
    mean: Any
    mode: Any
    hdi: tuple[Any, Any]
    equal_tailed: tuple[Any, Any]
    level: float
    samples: np.ndarray | None = None

    @property
    def metric_uncertainty(self) -> Any:
        """The width of the HDI (prob_conf_mat's ``MU``)."""
        return np.subtract(self.hdi[1], self.hdi[0])

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: ``median``, ``mean``, ``mode``, ``hdi``, ``equal_tailed``, ``level`` (NaN
        as None; no samples)."""

        def j(v: Any) -> Any:
            a = np.asarray(v, dtype=np.float64)
            return [j(x) for x in a] if a.ndim else (float(a) if math.isfinite(float(a)) else None)

        return {
            "median": j(self.median),
            "mean": j(self.mean),
            "mode": j(self.mode),
            "hdi": [j(self.hdi[0]), j(self.hdi[1])],
            "equal_tailed": [j(self.equal_tailed[0]), j(self.equal_tailed[1])],
            "level": self.level,
        }


def histogram_mode(samples: np.ndarray, bounds: tuple[float, float] | None = None) -> float:
    """The mode of (R,) samples: the centre of the fullest bin of ``np.histogram(bins="auto")``
    over their range clipped to finite ``bounds``; NaN without finite samples; the value when all
    are equal."""
    x = np.asarray(samples, dtype=np.float64)
    x = x[np.isfinite(x)]
    if not x.size:
        return float("nan")
    lo, hi = float(x.min()), float(x.max())
    if lo == hi:
        return lo
    if bounds is not None:
        lo = max(lo, float(bounds[0])) if math.isfinite(float(bounds[0])) else lo
        hi = min(hi, float(bounds[1])) if math.isfinite(float(bounds[1])) else hi
    counts, edges = np.histogram(x, bins="auto", range=(lo, hi))
    i = int(np.argmax(counts))
    return float((edges[i] + edges[i + 1]) / 2)


def summarize_posterior(samples: Any, level: float = 0.95, bounds: tuple[float, float] | None = None, keep_samples: bool = False) -> PosteriorSummary:
    """Summarise (R,) or (R, *shape) samples of a posterior along axis 0 (NaN samples left out).

    Args:
        samples: the posterior samples.
        level: the probability inside the HDI and the equal-tailed interval, in (0, 1).
        bounds: the metric's range (for the mode's histogram).
        keep_samples: keep the samples in the summary.

    Example:
        >>> s = summarize_posterior(np.array([0.1, 0.2, 0.2, 0.3, 0.9]), level=0.6)
        >>> float(s.median), round(float(s.mean), 2), s.hdi
        (0.2, 0.34, (0.2, 0.3))
    """
    x = np.asarray(samples, dtype=np.float64)
    if not 0.0 < float(level) < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    shape = x.shape[1:]
    flat = x.reshape(x.shape[0], -1)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns: NaN, no warning
        med = np.nanmedian(flat, axis=0)
        mean = np.nanmean(flat, axis=0)
    mode = np.array([histogram_mode(flat[:, j], bounds) for j in range(flat.shape[1])])
    hdi = sample_interval(x, level, "hdi")
    et = sample_interval(x, level, "equal_tailed")

    def shaped(a: np.ndarray) -> Any:
        return float(a[0]) if not shape else a.reshape(shape)

    return PosteriorSummary(shaped(med), shaped(mean), shaped(mode), hdi, et, float(level), x if keep_samples else None)


def slice_posteriors(settings: CISettings, plan: Any, key: tuple, states: tuple, samples: bool = False) -> dict[str, PosteriorSummary]:
    """``{metric key: PosteriorSummary}`` of every confusion-derived metric of one slice."""
    metrics = [m for m in plan.metrics if _is_confusion_derived(m)]
    drawn = posterior_samples(settings, plan, key, states, metrics)
    return {m.key: summarize_posterior(drawn[m.key], settings.level, tuple(m.bounds), samples) for m in metrics}
