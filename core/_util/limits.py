"""Documented maxima of the size parameters, so that no setting allocates or loops without bound.

Every parameter that sets the size of a state, of a result or of a loop has a maximum; a larger
value raises ``ValueError`` naming the parameter and its maximum, before anything is allocated.

=================== ============================================= ===============================
parameter           where                                         maximum
=================== ============================================= ===============================
``n_bins``          ``ece``, ``mce``, ``reliability_diagram`` ...  :data:`MAX_N_BINS` (100,000)
``k``, ``max_k``    ``top_k_accuracy``                             :data:`MAX_TOP_K` (10,000)
``num_classes``     :class:`~mergeable_metrics.metrics.base.Task` (classes/labels)   :data:`MAX_NUM_CLASSES` (10,000)
``num_outputs``     :class:`~mergeable_metrics.metrics.base.Task` (regression)       :data:`MAX_NUM_OUTPUTS` (10,000)
thresholds          distinct thresholds of one plan                :data:`MAX_THRESHOLDS` (10,000)
``capacity``        ranking metrics' score distribution           :data:`MAX_CAPACITY` (2**26)
``quantiles``       slice spec ``COL:quantiles=N``                 :data:`MAX_QUANTILES` (10,000)
``max_slices``      slice spec ``;max_slices=N``                   :data:`MAX_SLICES` (1,000,000)
``beta``            ``fbeta`` (``inf`` allowed: recall)            :data:`MAX_BETA` (1e100)
=================== ============================================= ===============================
"""

from __future__ import annotations

from typing import Any

import numpy as np

MAX_N_BINS = 100_000
MAX_TOP_K = 10_000
MAX_NUM_CLASSES = 10_000
#: most outputs of a multioutput regression task (``Task.num_outputs``)
MAX_NUM_OUTPUTS = 10_000
MAX_THRESHOLDS = 10_000
MAX_CAPACITY = 1 << 26
MAX_QUANTILES = 10_000
MAX_SLICES = 1_000_000
MAX_BETA = 1e100


def check_at_most(value: Any, maximum: float, name: str, owner: str | None = None) -> None:
    """Raise ``ValueError`` naming ``name`` (and ``owner``, e.g. ``"metric 'ece'"``) and the
    maximum when ``value > maximum``; the value's type and lower bound are checked by the caller.

    Example:
        >>> check_at_most(10, MAX_N_BINS, "n_bins")
        >>> check_at_most(10**9, MAX_N_BINS, "n_bins", "metric 'ece'")
        Traceback (most recent call last):
        ...
        ValueError: metric 'ece': n_bins must be at most 100000, got 1000000000
    """
    if value > maximum:
        prefix = f"{owner}: " if owner else ""
        shown = f"{maximum:g}" if isinstance(maximum, float) else str(maximum)
        raise ValueError(f"{prefix}{name} must be at most {shown}, got {value!r}")


def check_count(value: Any, name: str, low: int, maximum: int, owner: str | None = None) -> int:
    """``value`` as an int in ``[low, maximum]``: an int, numpy int or integer-valued float (a
    decoded or hand-built layout); anything else (bool, NaN, inf, 1e400, strings) is a
    ``ValueError`` naming ``name``, never an ``OverflowError``.

    Example:
        >>> check_count(3.0, "num_classes", 2, MAX_NUM_CLASSES)
        3
        >>> check_count(float("inf"), "num_classes", 2, MAX_NUM_CLASSES)
        Traceback (most recent call last):
        ...
        ValueError: num_classes must be an integer >= 2, got inf
    """
    prefix = f"{owner}: " if owner else ""
    if isinstance(value, (bool, np.bool_)):
        integral = False
    elif isinstance(value, (int, np.integer)):
        integral = True
    elif isinstance(value, (float, np.floating)):
        integral = bool(np.isfinite(value)) and float(value).is_integer()
    else:
        integral = False
    if not integral or value < low:
        raise ValueError(f"{prefix}{name} must be an integer >= {low}, got {value!r}")
    check_at_most(value, maximum, name, owner)
    return int(value)


def as_floats(values: Any, name: str) -> tuple[float, ...]:
    """``values`` as a tuple of floats; a value that is not a number or beyond float64 (an int
    like ``10**400``) is a ``ValueError`` naming ``name``, never an ``OverflowError``."""
    out = []
    for v in values:
        try:
            out.append(float(v))
        except (OverflowError, TypeError, ValueError):
            shown = repr(v) if len(repr(v)) <= 60 else repr(v)[:40] + f"... ({len(repr(v))} characters)"
            raise ValueError(f"{name} must be numbers within the float64 range, got {shown}") from None
    return tuple(out)
