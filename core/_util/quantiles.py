"""The Student-t distribution in math only (core imports no scipy): :func:`t_cdf` and
:func:`t_ppf`, used by run aggregation (``mergeable_metrics.aggregate(method="mean")``); the normal quantile
is :func:`mergeable_metrics.uncertainty.intervals.normal_quantile`. Checked against ``scipy.stats`` in
``tests/core/test_aggregate.py``."""

from __future__ import annotations

import math

__all__ = ["t_cdf", "t_ppf"]


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the regularized incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 500):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    """Regularized incomplete beta function ``I_x(a, b)``."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """Cumulative distribution function of Student's t with ``df`` degrees of freedom."""
    tail = 0.5 * _betainc(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t > 0 else tail


def t_ppf(p: float, df: float) -> float:
    """Quantile of Student's t with ``df > 0`` degrees of freedom (bisection on :func:`t_cdf`,
    to about 1e-12).

    Raises:
        ValueError: ``p`` outside (0, 1) or ``df <= 0``.
    """
    if not 0.0 < p < 1.0:
        raise ValueError(f"t_ppf: p must be in (0, 1), got {p!r}")
    if not df > 0:
        raise ValueError(f"t_ppf: df must be > 0, got {df!r}")
    if p == 0.5:
        return 0.0
    tail = min(p, 1.0 - p)  # solve the tail 0.5 * I_x(df / 2, 1 / 2) = tail, x = df / (df + t^2)
    sign = 1.0 if p > 0.5 else -1.0

    def upper(t: float) -> float:
        return 0.5 * _betainc(df / 2.0, 0.5, df / (df + t * t))

    lo, hi = 0.0, 1.0
    while upper(hi) > tail:
        lo, hi = hi, hi * 2.0
    for _ in range(400):
        mid = (lo + hi) / 2.0
        if upper(mid) > tail:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-14 * hi:
            break
    return sign * (lo + hi) / 2.0
