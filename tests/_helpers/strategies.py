"""Hypothesis strategies for batches of examples.

Weights come in three flavours:
    * ``"none"``: no weight column;
    * ``"int"``: integer-valued float weights in [0, 5] (zeros included): sums are exact, so split
      invariance must hold with exact ``==``;
    * ``"float"``: arbitrary finite floats in [0, 1e6] (zeros, subnormal-free): sums are compared
      within 1e-12 relative.

Example:
    >>> from hypothesis import given
    >>> @given(binary_batches(max_size=5))
    ... def t(b):
    ...     assert len(b["y_true"]) == len(b["y_score"])
    >>> t()
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

WEIGHT_KINDS = ("none", "int", "float")

# scores: a small grid that hits the thresholds exactly, plus arbitrary floats in [0, 1]
THRESHOLDS = (0.25, 0.5, 0.75)
_score = st.one_of(
    st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0]),
    st.floats(0.0, 1.0, allow_nan=False, allow_infinity=False),
)


def weights(kind: str, n: int) -> st.SearchStrategy:
    """A strategy for an (n,) float64 weight array (or None for ``"none"``)."""
    if kind == "none":
        return st.none()
    if kind == "int":
        elem = st.integers(0, 5).map(float)
    elif kind == "float":
        elem = st.one_of(
            st.just(0.0),
            st.floats(0.0, 1e6, allow_nan=False, allow_infinity=False, allow_subnormal=False),
        )
    else:
        raise ValueError(f"weight kind must be one of {WEIGHT_KINDS}, got {kind!r}")
    return st.lists(elem, min_size=n, max_size=n).map(lambda v: np.asarray(v, dtype=np.float64))


@st.composite
def binary_batches(draw: Any, max_size: int = 40, weight_kind: str | None = None, min_size: int = 0) -> dict:
    """``{"y_true": (n,) int64, "y_score": (n,) float64, "sample_weight": (n,) float64 | None}``."""
    n = draw(st.integers(min_size, max_size))
    kind = weight_kind or draw(st.sampled_from(WEIGHT_KINDS))
    y = np.asarray(draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)), dtype=np.int64)
    s = np.asarray(draw(st.lists(_score, min_size=n, max_size=n)), dtype=np.float64)
    return {"y_true": y, "y_score": s, "sample_weight": draw(weights(kind, n))}


@st.composite
def multiclass_batches(
    draw: Any, num_classes: int | None = None, max_size: int = 40, weight_kind: str | None = None, min_size: int = 0
) -> dict:
    """``{"y_true", "y_pred": (n,) int64 in [0, K), "sample_weight", "num_classes": K}``."""
    k = num_classes or draw(st.integers(2, 5))
    n = draw(st.integers(min_size, max_size))
    kind = weight_kind or draw(st.sampled_from(WEIGHT_KINDS))
    labels = st.lists(st.integers(0, k - 1), min_size=n, max_size=n)
    y = np.asarray(draw(labels), dtype=np.int64)
    p = np.asarray(draw(labels), dtype=np.int64)
    return {"y_true": y, "y_pred": p, "sample_weight": draw(weights(kind, n)), "num_classes": k}


# slice values: strings with None (missing) and small ints
_slice_str = st.sampled_from(["a", "b", "c", None])
_slice_int = st.sampled_from([1, 2, 3])


@st.composite
def sliced_rows(
    draw: Any,
    num_classes: int | None = None,
    max_size: int = 40,
    weight_kind: str | None = None,
    with_invalid: bool = False,
) -> dict:
    """Columns (as Python lists) for a :class:`core.Evaluation` with slices ``"g"`` (strings with
    None) and ``"h"`` (ints), crossable as ``"g,h"``:
    ``{"y_true", "y_score" | "y_pred", "sample_weight" (None for weight kind "none"), "g", "h"}``.

    Binary (``num_classes=None``) batches carry scores; multiclass ones predictions in [0, K).
    With ``with_invalid=True`` some rows get a NaN score (binary), an out-of-range label, or a
    negative weight, for ``on_invalid="skip"``.
    """
    kind = weight_kind or draw(st.sampled_from(WEIGHT_KINDS))
    if num_classes is None:
        b = draw(binary_batches(max_size=max_size, weight_kind=kind))
        k = 2
    else:
        b = draw(multiclass_batches(num_classes=num_classes, max_size=max_size, weight_kind=kind))
        k = num_classes
    n = len(b["y_true"])
    cols: dict[str, Any] = {"y_true": b["y_true"].tolist()}
    if num_classes is None:
        cols["y_score"] = b["y_score"].tolist()
    else:
        cols["y_pred"] = b["y_pred"].tolist()
    cols["sample_weight"] = None if b["sample_weight"] is None else b["sample_weight"].tolist()
    if with_invalid and n:
        for i in draw(st.lists(st.integers(0, n - 1), max_size=3)):
            what = draw(st.sampled_from(["label", "score", "weight"]))
            if what == "score" and "y_score" in cols:
                cols["y_score"][i] = float("nan")
            elif what == "weight" and cols["sample_weight"] is not None:
                cols["sample_weight"][i] = -1.0
            else:
                cols["y_true"][i] = k  # out of range
    cols["g"] = draw(st.lists(_slice_str, min_size=n, max_size=n))
    cols["h"] = draw(st.lists(_slice_int, min_size=n, max_size=n))
    return cols


def take_columns(columns: dict, index: np.ndarray) -> dict:
    """Rows at ``index`` of a dict of columns (lists or arrays; None values pass through)."""
    out = {}
    for k, v in columns.items():
        if v is None or np.isscalar(v):
            out[k] = v
        elif isinstance(v, np.ndarray):
            out[k] = v[index]
        else:
            out[k] = [v[int(i)] for i in index]
    return out
