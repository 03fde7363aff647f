"""Column extraction and validation: turn user columns into checked numpy arrays.

Every check is vectorised. A failed check raises ``ValueError`` (bad values) or ``TypeError`` (bad
types) naming the column, the first bad value and its row position, plus how many rows are bad.
With ``on_invalid="skip"`` the same checks return a boolean mask of the rows to skip instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

ON_INVALID = ("raise", "skip")


def as_array(values: Any, column: str) -> np.ndarray:
    """Convert one column to a 1-D numpy array without copying when possible.

    Args:
        values: a list/tuple, numpy array, pandas Series, or pyarrow Array/ChunkedArray.
        column: the column's name, used in error messages.

    Returns:
        A 1-D ``np.ndarray``. Missing values (pyarrow nulls, pandas NA, None) become NaN for
        numeric columns and ``None`` in object columns.

    Raises:
        TypeError: the input is not array-like or not one-dimensional.
    """
    if isinstance(values, np.ndarray):
        arr = values
    elif hasattr(values, "to_numpy") and hasattr(values, "null_count"):  # pyarrow Array/ChunkedArray
        arr = values.to_numpy(zero_copy_only=False)
    elif hasattr(values, "to_numpy"):  # pandas Series / Index, incl. nullable dtypes
        try:
            arr = values.to_numpy(dtype=np.float64, na_value=np.nan)
        except (TypeError, ValueError):
            arr = values.to_numpy(dtype=object)
            arr = np.array([None if _is_pd_na(v) else v for v in arr], dtype=object)
    elif isinstance(values, (list, tuple, range)):
        arr = np.asarray(values)
        if arr.dtype == object or arr.dtype.kind == "U":
            arr = np.asarray(values, dtype=object)
    elif np.isscalar(values) or values is None:
        raise TypeError(f"column {column!r}: expected a 1-D array-like, got scalar {values!r}")
    else:
        arr = np.asarray(values)
    if arr.ndim != 1:
        raise TypeError(f"column {column!r}: expected a 1-D column, got shape {arr.shape}")
    return arr


def _is_pd_na(v: Any) -> bool:
    if v is None:
        return True
    try:
        return bool(v != v)  # NaN, pd.NA raise in bool() -> handled below
    except TypeError:
        return True


def to_float(arr: np.ndarray, column: str, row_offset: int = 0) -> np.ndarray:
    """Convert a column to float64, turning ``None`` into NaN.

    Raises:
        TypeError: a value is not a number (e.g. a string), naming column, value and row.
    """
    if arr.dtype.kind in "fiub":
        return arr.astype(np.float64, copy=False)
    if arr.dtype == object:
        out = np.empty(arr.shape[0], dtype=np.float64)
        for i, v in enumerate(arr):  # only for object columns (lists with None, strings)
            if v is None:
                out[i] = np.nan
            elif isinstance(v, (bool, int, float, np.number, np.bool_)):
                out[i] = float(v)
            else:
                raise TypeError(
                    f"column {column!r}: value {v!r} at row {row_offset + i} is not a number"
                )
        return out
    bad = arr[0] if arr.shape[0] else arr.dtype
    raise TypeError(f"column {column!r}: expected numbers, got dtype {arr.dtype} (e.g. {bad!r})")


@dataclass(frozen=True)
class Batch:
    """A validated batch of examples, all arrays of length ``n``.

    Attributes:
        y_true: (n,) int64 labels.
        y_score: (n,) float64 scores for binary tasks (probabilities or logits), or None.
        y_pred: (n,) int64 predicted labels, or None.
        sample_weight: (n,) float64 non-negative weights, or None (all weights 1).
    """

    y_true: np.ndarray
    y_score: np.ndarray | None = None
    y_pred: np.ndarray | None = None
    sample_weight: np.ndarray | None = None

    @property
    def n(self) -> int:
        return int(self.y_true.shape[0])

    def take(self, index: np.ndarray) -> "Batch":
        """Rows at ``index`` (an int array or boolean mask) as a new Batch."""
        pick = lambda a: None if a is None else a[index]  # noqa: E731
        return Batch(self.y_true[index], pick(self.y_score), pick(self.y_pred), pick(self.sample_weight))

    def weight_sum(self) -> float:
        return float(self.n) if self.sample_weight is None else float(self.sample_weight.sum())


def _first_bad(mask: np.ndarray, values: np.ndarray, column: str, what: str, row_offset: int) -> str:
    idx = np.flatnonzero(mask)
    i = int(idx[0])
    v = values[i]
    v = v.item() if hasattr(v, "item") else v
    more = f" ({idx.size} invalid rows in this batch)" if idx.size > 1 else ""
    return f"column {column!r}: invalid value {v!r} at row {row_offset + i}: {what}{more}"


class _Checker:
    """Collects invalid-row masks (skip mode) or raises at the first failed check (raise mode)."""

    def __init__(self, n: int, on_invalid: str, row_offset: int):
        if on_invalid not in ON_INVALID:
            raise ValueError(f"on_invalid must be one of {ON_INVALID}, got {on_invalid!r}")
        self.skip = on_invalid == "skip"
        self.row_offset = row_offset
        self.invalid = np.zeros(n, dtype=bool) if self.skip else None

    def check(self, bad: np.ndarray, values: np.ndarray, column: str, what: str) -> None:
        if not bad.any():
            return
        if self.skip:
            self.invalid |= bad
        else:
            raise ValueError(_first_bad(bad, values, column, what, self.row_offset))


def _labels(arr: np.ndarray, column: str, num_classes: int, chk: _Checker, kind: str) -> np.ndarray:
    vals = to_float(arr, column, chk.row_offset)
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(vals) | (vals != np.floor(vals)) | (vals < 0) | (vals >= num_classes)
    what = (
        f"{kind} must be 0 or 1" if num_classes == 2 else f"{kind} must be integers in [0, {num_classes})"
    )
    chk.check(bad, arr if arr.dtype == object else vals, column, what)
    out = np.where(bad, 0, vals) if bad.any() else vals
    return out.astype(np.int64)


def make_batch(
    *,
    num_classes: int,
    y_true: Any,
    y_score: Any = None,
    y_pred: Any = None,
    sample_weight: Any = None,
    names: tuple[str, str, str, str] = ("y_true", "y_score", "y_pred", "sample_weight"),
    row_offset: int = 0,
    on_invalid: str = "raise",
) -> tuple[Batch, np.ndarray | None]:
    """Validate columns and build a :class:`Batch`.

    Args:
        num_classes: 2 for binary tasks (labels in {0, 1}), K for multiclass (labels in [0, K)).
        y_true: (N,) labels; ints, bools or integer-valued floats.
        y_score: (N,) finite float scores (binary tasks), or None.
        y_pred: (N,) predicted labels in the same range as ``y_true``, or None.
        sample_weight: (N,) finite non-negative weights, or None for unit weights.
        names: column names for (y_true, y_score, y_pred, sample_weight) used in messages.
        row_offset: position of this batch's first row in the whole input, for messages.
        on_invalid: "raise" (default) or "skip".

    Returns:
        ``(batch, invalid)``: in "raise" mode ``invalid`` is None; in "skip" mode it is the (N,)
        bool mask of skipped rows and ``batch`` holds only the valid rows.

    Raises:
        ValueError: columns of different lengths (always), or in "raise" mode a NaN/inf/out-of-range
            label, a NaN/inf score, or a negative/NaN/inf weight, naming column, value and row.
        TypeError: a non-numeric value (e.g. a string) in any of these columns.
    """
    n_true, n_score, n_pred, n_weight = names
    yt = as_array(y_true, n_true)
    cols = [(n_true, yt)]
    ys = yp = w = None
    if y_score is not None:
        ys = as_array(y_score, n_score)
        cols.append((n_score, ys))
    if y_pred is not None:
        yp = as_array(y_pred, n_pred)
        cols.append((n_pred, yp))
    if sample_weight is not None:
        w = as_array(sample_weight, n_weight)
        cols.append((n_weight, w))
    n = yt.shape[0]
    for name, col in cols[1:]:
        if col.shape[0] != n:
            raise ValueError(
                f"column {name!r} has {col.shape[0]} rows but column {n_true!r} has {n} rows"
            )
    chk = _Checker(n, on_invalid, row_offset)
    yt_i = _labels(yt, n_true, num_classes, chk, "labels")
    ys_f = yp_i = w_f = None
    if ys is not None:
        ys_f = to_float(ys, n_score, row_offset)
        chk.check(~np.isfinite(ys_f), ys_f, n_score, "scores must be finite (no NaN or inf)")
    if yp is not None:
        yp_i = _labels(yp, n_pred, num_classes, chk, "predictions")
    if w is not None:
        w_f = to_float(w, n_weight, row_offset)
        with np.errstate(invalid="ignore"):
            bad = ~np.isfinite(w_f) | (w_f < 0)
        chk.check(bad, w_f, n_weight, "weights must be finite and >= 0")
    batch = Batch(yt_i, ys_f, yp_i, w_f)
    if chk.skip:
        if chk.invalid.any():
            batch = batch.take(~chk.invalid)
        return batch, chk.invalid
    return batch, None
