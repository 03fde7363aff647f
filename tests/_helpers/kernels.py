"""The compiled kernels switched off for one call: the numpy reference path of the exact sums and
folds, as ``MERGEABLE_METRICS_DISABLE_NUMBA=1`` runs them, in the same process.

Example:
    >>> from tests._helpers.kernels import on_numpy_path
    >>> on_numpy_path(lambda: 1 + 1)
    2
"""

from __future__ import annotations

from typing import Any, Callable

from mergeable_metrics._util import exact_kernels as K


def on_numpy_path(fn: Callable[[], Any]) -> Any:
    """``fn()`` with the compiled kernels off (``exact_kernels.AVAILABLE`` False), then on again."""
    K.ready()  # load the kernels first: ready() must not see the patched flag on its first call
    saved, K.AVAILABLE = K.AVAILABLE, False
    try:
        return fn()
    finally:
        K.AVAILABLE = saved
