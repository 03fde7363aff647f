"""Pluggable input formats: how a column's values become :class:`~mergeable_metrics.inputs.validation.Batch` fields.

A format is a pair of functions kept apart from the metric math: ``validate`` flags invalid entries
(the error names the column, the value, the row and, for matrices and maps, the entry), and
``convert`` turns valid values into the batch field of its *role*. Adding a format needs no metric
change: register an :class:`InputFormat` with :func:`register_format`.

Roles: ``target`` (true labels / targets), ``prediction`` (predicted labels / values), ``score``
(scores, probabilities, logits) and ``measure`` (a per-example value for mean-of-measure metrics).

Built-in formats (``N`` rows, ``K`` classes, ``L`` labels, ``H x W`` pixels):

============== ==================== ============================== ===============================
name           roles                shape                          becomes
============== ==================== ============================== ===============================
labels         target, prediction   (N,) ints                      (N,) int64 labels
onehot         target, prediction   (N, K) 0/1, one 1 per row      argmax -> (N,) labels
indicator      target, prediction   (N, L) 0/1 (multilabel)        (N, L) int64
scores         score                (N,) or (N, K) / (N, L)        float64 scores (finite)
probabilities  score                (N,), (N, K) rows sum to 1     float64 probabilities
logits         score                (N,) or (N, K) / (N, L)        sigmoid / softmax probabilities
label_map      target, prediction   (N, H, W) ints                 (N*H*W,) labels, one per pixel
score_map      score                (N, K, H, W)                   (N*H*W, K) scores per pixel
values         all (regression)     (N,) finite floats             (N,) float64
multioutput    target, prediction,  (N, D) finite floats           (N, D) float64 (regression
               score (regression)                                  with ``num_outputs=D``)
============== ==================== ============================== ===============================

Defaults (when no format is named) follow the task and the array's number of dimensions, e.g. a
multiclass score column of shape (N, K) is ``scores`` (argmax gives the predicted labels) and a
(N, K, H, W) one is ``score_map``. A binary (N, 2) score matrix (e.g. ``predict_proba`` output)
gives ``Batch.y_score`` = column 1 (thresholds, calibration and ``pos_label=1`` ranking) and
``Batch.y_score_class0`` = column 0 (ranking metrics with ``pos_label=0``).

Example:
    >>> from mergeable_metrics.metrics.base import Task
    >>> b, _ = build_batch(task=Task(num_classes=3), columns={"target": [[0, 1, 0], [0, 0, 1]],
    ...                    "score": [[0.2, 0.5, 0.3], [0.1, 0.1, 0.8]]}, formats={"target": "onehot"})
    >>> b.y_true.tolist(), b.y_pred.tolist()
    ([1, 2], [1, 2])
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from mergeable_metrics._util import exact_kernels as _kernels
from mergeable_metrics._util.public import public
from mergeable_metrics.inputs.validation import (
    ON_INVALID,
    _all_finite,
    _valid_labels,
    SCORES_FINITE,
    Batch,
    _Checker,
    as_array,
    check_finite,
    check_labels,
    check_weights,
    column_name,
    plain_batch,
    to_float,
)
from mergeable_metrics._util.nulls import NULL, is_null

ROLES = ("target", "prediction", "score", "measure")

#: Tolerance of "probability rows sum to 1": ``|sum - 1| <= PROBABILITY_SUM_TOL * K``.
PROBABILITY_SUM_TOL = 1e-6


@dataclass(frozen=True)
class FormatContext:
    """What a format's functions know: the task, the role, the column name(s) and the checker.

    Attributes:
        task: the :class:`~mergeable_metrics.metrics.base.Task`.
        role: one of :data:`ROLES`.
        column: the column name, or the list of column names stacked into a matrix.
        checker: flags invalid entries (raise or skip); call ``checker.check(bad, values,
            column, what)`` with an (N,) or (N, ...) boolean mask.
        needs: the plan's input needs (e.g. ``"probability"``).
    """

    task: Any
    role: str
    column: Any
    checker: _Checker
    needs: frozenset = frozenset()


@dataclass(frozen=True)
class Converted:
    """A converted column: the batch field's values (one per element) and, for formats whose
    elements are not rows (maps), the (E,) row index of each element."""

    values: np.ndarray
    row_of: np.ndarray | None = None


@public("mergeable_metrics.metrics")
@dataclass(frozen=True)
class InputFormat:
    """One input format.

    Attributes:
        name: registry key.
        roles: roles it can fill.
        tasks: task kinds it applies to.
        example_ndims: accepted numbers of dimensions per example (0: a scalar per row,
            1: a vector, 2: an H x W map, 3: a K x H x W map).
        validate: ``validate(values, ctx)``: flag invalid entries through ``ctx.checker``;
            raise ``ValueError`` for a wrong shape.
        convert: ``convert(values, ctx) -> Converted`` for validated values.
        description: one line for docs.
    """

    name: str
    roles: tuple[str, ...]
    tasks: tuple[str, ...]
    example_ndims: tuple[int, ...]
    validate: Callable[[np.ndarray, FormatContext], None]
    convert: Callable[[np.ndarray, FormatContext], Converted]
    description: str = ""


FORMATS: dict[str, InputFormat] = {}

#: Default format per (task kind, role) and array ndim.
DEFAULTS: dict[tuple[str, str], dict[int, str]] = {
    ("binary", "target"): {1: "labels", 2: "onehot", 3: "label_map"},
    ("binary", "prediction"): {1: "labels", 2: "onehot", 3: "label_map"},
    ("binary", "score"): {1: "scores", 2: "probabilities"},
    ("multiclass", "target"): {1: "labels", 2: "onehot", 3: "label_map"},
    ("multiclass", "prediction"): {1: "labels", 2: "onehot", 3: "label_map"},
    ("multiclass", "score"): {2: "scores", 4: "score_map"},
    ("multilabel", "target"): {2: "indicator"},
    ("multilabel", "prediction"): {2: "indicator"},
    ("multilabel", "score"): {2: "scores"},
    ("regression", "target"): {1: "values", 2: "multioutput"},
    ("regression", "prediction"): {1: "values", 2: "multioutput"},
    ("regression", "score"): {1: "values", 2: "multioutput"},
}


@public("mergeable_metrics.metrics")
def register_format(fmt: InputFormat, *, replace: bool = False) -> InputFormat:
    """Add a format to :data:`FORMATS`.

    Raises:
        ValueError: the name is taken (unless ``replace``) or a role is unknown.
        TypeError: ``fmt`` is not an :class:`InputFormat`.
    """
    if not isinstance(fmt, InputFormat):
        raise TypeError(f"expected an InputFormat, got {type(fmt).__name__}")
    if fmt.name in FORMATS and not replace:
        raise ValueError(f"input format {fmt.name!r} is already registered")
    bad = set(fmt.roles) - set(ROLES)
    if bad:
        raise ValueError(f"input format {fmt.name!r}: unknown roles {sorted(bad)}; roles are {ROLES}")
    FORMATS[fmt.name] = fmt
    return fmt


def get_format(name: str) -> InputFormat:
    """The registered format ``name`` (ValueError listing the known ones otherwise)."""
    try:
        return FORMATS[name]
    except KeyError:
        raise ValueError(f"unknown input format {name!r}; known formats: {sorted(FORMATS)}") from None


# -- reading arrays of any rank ---------------------------------------------------------------
def _is_missing(v: Any) -> bool:
    """A missing cell: None, a float NaN, or pandas' NA / NaT."""
    return is_null(v) or (isinstance(v, float) and v != v) or type(v).__name__ in ("NAType", "NaTType")


def _first_present(values: Any) -> Any:
    """The first cell that is not missing (None if every cell is): it decides whether a column
    holds lists or scalars."""
    for v in values:
        if not _is_missing(v):
            return v
    return None


def _is_list_type(t: Any) -> bool:
    import pyarrow as pa

    return pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)


class OtherRow:
    """The entries of a list-column row that is not a list of the expected length
    (``row_length`` of :func:`as_nd_array`): a missing row (None, an Arrow null) or a list of
    another length. The format's check reports such a row per row (:func:`check_row_lengths`:
    raise naming the row, the value and the length, or skip it with ``on_invalid="skip"``).

    Attributes:
        length: the row's length, or None for a missing row.
        shown: the row as messages name it (``None``, ``null``, ``[5.0]``).
    """

    __slots__ = ("length", "shown")

    def __init__(self, length: int | None, shown: str):
        self.length = length
        self.shown = shown

    def __repr__(self) -> str:
        return self.shown


def _shown_row(v: Any) -> str:
    text = repr(v.tolist() if isinstance(v, np.ndarray) else list(v) if isinstance(v, tuple) else v)
    return text if len(text) <= 60 else text[:40] + f"... ({len(text)} characters)"


def _with_other_rows(n: int, row_length: int, good: np.ndarray, dense: np.ndarray, marks: dict[int, OtherRow]) -> np.ndarray:
    """(n, row_length) object array: the rows of ``dense`` at ``good``, the :class:`OtherRow`
    marks elsewhere."""
    out = np.empty((n, row_length), dtype=object)
    if good.size:
        out[good] = dense
    for i, m in marks.items():
        out[i, :] = m
    return out


def _arrow_rows(arr: Any, column: str, row_offset: int, row_length: int) -> np.ndarray | None:
    """A one-level Arrow list column read with an expected row length: null rows and rows of
    another length become :class:`OtherRow` marks (an object array); None when every row fits
    or the list type's fixed size differs (read as usual, and checked by the format)."""
    import pyarrow as pa

    if pa.types.is_fixed_size_list(arr.type):
        if arr.type.list_size != row_length or not arr.null_count:
            return None
        lengths = np.full(len(arr), row_length)
    else:
        lengths = arr.value_lengths().fill_null(-1).to_numpy(zero_copy_only=False)
    valid = ~arr.is_null().to_numpy(zero_copy_only=False)
    ok = valid & (lengths == row_length)
    if ok.all():
        return None
    good = np.flatnonzero(ok)
    dense = _arrow_dense(arr.take(pa.array(good)), column, row_offset, good) if good.size else np.zeros((0, row_length))
    marks = {int(i): OtherRow(None, "null") if not valid[i] else OtherRow(int(lengths[i]), _shown_row(arr[int(i)].as_py())) for i in np.flatnonzero(~ok)}
    return _with_other_rows(len(arr), row_length, good, dense, marks)


def _arrow_nd(arr: Any, column: str, row_offset: int = 0, row_length: int | None = None) -> np.ndarray:
    """A pyarrow (fixed-size) list array, possibly nested, as an N-D numpy array.

    A null row (or a null value inside a row) is a missing value: its entries are NaN, so the
    format's checks find it like any missing value (raise naming its row, or skip it). With
    ``row_length`` (a one-level list column), null rows and rows of another length are
    :class:`OtherRow` marks instead.
    """
    import pyarrow as pa

    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    inner = arr.flatten()
    if row_length is not None and not _is_list_type(inner.type):
        if inner.null_count:  # a null value inside a row: the rows one by one, each null named null
            rows = [r if r is None else [NULL if x is None else x for x in r] for r in arr.to_pylist()]
            return _stack_objects(rows, column, row_offset=row_offset, row_length=row_length, missing="null")
        marked = _arrow_rows(arr, column, row_offset, row_length)
        if marked is not None:
            return marked
    while _is_list_type(inner.type):
        if inner.null_count:  # a null list inside a row: read the rows one by one
            return _stack_objects(arr.to_pylist(), column, row_offset=row_offset)
        inner = inner.flatten()
    if not arr.null_count:
        return _arrow_dense(arr, column, row_offset)
    n = len(arr)
    rows = np.flatnonzero(~arr.is_null().to_numpy(zero_copy_only=False))
    if rows.size == 0 and not pa.types.is_fixed_size_list(arr.type):
        return np.full(n, np.nan)  # no row tells the row length: a missing value per row
    dense = _arrow_dense(arr.take(pa.array(rows)), column, row_offset, rows)
    out = np.full((n,) + dense.shape[1:], np.nan, dtype=np.float64 if dense.dtype.kind in "fiub" else object)
    out[rows] = dense
    return out


def _arrow_dense(arr: Any, column: str, row_offset: int, rows: np.ndarray | None = None) -> np.ndarray:
    """:func:`_arrow_nd` of an array without null lists; ``rows``: the input row of each of its
    rows (when null rows were taken out), for messages."""
    import pyarrow as pa

    shape = [len(arr)]
    level = 0
    while _is_list_type(arr.type):
        if pa.types.is_fixed_size_list(arr.type):
            size = arr.type.list_size
        else:
            lengths = arr.value_lengths().to_numpy(zero_copy_only=False)
            if lengths.size and (lengths != lengths[0]).any():
                i = int(np.flatnonzero(lengths != lengths[0])[0])
                where = f"row {row_offset + (int(rows[i]) if rows is not None else i)}" if level == 0 else f"entry {i}"
                raise ValueError(
                    f"column {column!r}: rows have different lengths ({int(lengths[0])} at the first, "
                    f"{int(lengths[i])} at {where}); a matrix column needs equal lengths"
                )
            size = int(lengths[0]) if lengths.size else 0
        shape.append(size)
        arr = arr.flatten()
        level += 1
    values = arr.to_numpy(zero_copy_only=False)
    return values.reshape(shape)


#: Deepest nesting of per-row lists the formats read: (N, K, H, W) score maps are 3 levels per row.
MAX_ROW_DEPTH = 3


def _stack_objects(arr: Any, column: str, depth: int = 1, row_offset: int = 0, row_length: int | None = None, missing: str = "None") -> np.ndarray:
    """Stack a sequence (or object array) of per-row lists/arrays into an N-D array (equal
    lengths required; at most :data:`MAX_ROW_DEPTH` levels of lists inside a row). A missing
    row (None, NaN, NA) is a missing value: its entries are NaN.

    With ``row_length``, a missing row and a flat list of another length are :class:`OtherRow`
    marks (shown as ``missing`` and as the list) in an (N, row_length) object array, checked
    per row by the format."""
    rows: list = []
    first_shape = None
    marks: dict[int, OtherRow] = {}
    for i, v in enumerate(arr):
        if _is_missing(v):
            if row_length is not None:
                marks[i] = OtherRow(None, missing)
            rows.append(None)
            continue
        row = row_offset + i if depth == 1 else i
        if isinstance(v, (list, tuple)) and any(isinstance(x, (list, tuple, np.ndarray)) for x in v):
            if depth >= MAX_ROW_DEPTH:
                raise ValueError(
                    f"column {column!r}: row {row} nests lists more than {MAX_ROW_DEPTH} levels deep; the input formats read at most (N, K, H, W) arrays"
                )
            a = _stack_objects(v, column, depth + 1)
        else:
            a = np.asarray(v)
            if a.dtype.kind in "US" or (a.dtype == object and a.ndim > 0):
                a = np.asarray(v, dtype=object)  # keep each value as given: a string is named, not the row's dtype
            if row_length is not None and a.ndim == 1 and a.shape[0] != row_length:
                marks[i] = OtherRow(a.shape[0], _shown_row(v))
                rows.append(None)
                continue
        if a.ndim == 0:
            raise ValueError(f"column {column!r}: row {row} holds a scalar {v!r} where a list is expected")
        if first_shape is None:
            first_shape = a.shape
        elif a.shape != first_shape:
            raise ValueError(
                f"column {column!r}: rows have different shapes ({first_shape} at the first, {a.shape} at row {row}); a matrix column needs equal lengths"
            )
        rows.append(a)
    if marks:
        good = np.array([i for i, a in enumerate(rows) if a is not None], dtype=np.int64)
        dense = np.stack([rows[i] for i in good]) if good.size else np.zeros((0, row_length))
        if dense.ndim == 2 and dense.shape[1] == row_length:
            return _with_other_rows(len(rows), int(row_length), good, dense, marks)
        # rows of another rank (nested lists): the format names the shape; missing rows are NaN
        first_shape = dense.shape[1:]
        rows = [None if i in marks and marks[i].length is None else a for i, a in enumerate(rows)]
        if any(i in marks and marks[i].length is not None for i in range(len(rows))):
            i = next(i for i in marks if marks[i].length is not None)
            raise ValueError(
                f"column {column!r}: rows have different shapes ({first_shape} at the first, ({marks[i].length},) at row {row_offset + i}); "
                "a matrix column needs equal lengths"
            )
    if first_shape is None:  # no rows, or only missing ones: nothing tells the row shape
        return np.full(len(rows), np.nan) if rows else np.zeros((0,), dtype=np.float64)
    if len(rows) > 0 and any(a is None for a in rows):
        missing = np.full(first_shape, np.nan)
        rows = [missing if a is None else a for a in rows]
    return np.stack(rows)


def as_nd_array(values: Any, column: str, row_offset: int = 0, row_length: int | None = None, keep_nulls: bool = False) -> np.ndarray:
    """Read one column whose rows may be vectors or maps.

    A missing row (None, NaN, an Arrow null) of a list column becomes a row of NaN entries: a
    missing value, which the format's checks report (naming its row) or skip like any other.

    Args:
        values: a numpy array of any rank, nested lists, a pandas Series of lists/arrays, a
            pyarrow (fixed-size) list array or chunked array (nested for maps), or any 1-D column
            :func:`mergeable_metrics.inputs.validation.as_array` reads.
        column: the column name, used in messages.
        row_offset: position of the batch's first row in the input, for messages.
        row_length: the length every row of a list column should have (``num_outputs`` of a
            multioutput regression task), or None. A missing row or a list of another length is
            then not an error here but an :class:`OtherRow` mark, which the format's check
            reports per row (so ``on_invalid="skip"`` skips it). A dense (N, K) array (or a
            fixed-size list type) of another width is left to the format's shape check.
        keep_nulls: a missing value of a (N,) column is kept as given for messages (see
            :func:`mergeable_metrics.inputs.validation.as_array`).

    Returns:
        An (N, ...) numpy array.

    Raises:
        ValueError: rows of different lengths, or lists among scalars (naming the row).
        TypeError: not array-like.
    """
    t = getattr(values, "type", None)
    if t is not None and hasattr(values, "null_count") and "list" in str(t):
        return _arrow_nd(values, column, row_offset, row_length)
    if isinstance(values, np.ndarray):
        arr = values
    elif isinstance(values, (list, tuple)):
        # the first present row decides (a later list among scalars fails in as_array with the column named)
        first = _first_present(values)
        if isinstance(first, (list, tuple, np.ndarray)) or (row_length is not None and values and first is None):
            return _stack_objects(values, column, row_offset=row_offset, row_length=row_length)
        arr = as_array(values, column, keep_nulls)
        if arr.dtype == object:
            i = next((i for i, v in enumerate(values) if isinstance(v, (list, tuple, np.ndarray))), None)
            if i is not None:
                j = next(j for j, v in enumerate(values) if not _is_missing(v))
                raise ValueError(
                    f"column {column!r}: row {row_offset + i} holds a list {values[i]!r} but row {row_offset + j} holds a scalar; give one kind per column"
                )
        return arr
    elif hasattr(values, "to_numpy") and not hasattr(values, "null_count"):  # pandas
        first = _first_present(values) if str(getattr(values, "dtype", "")) == "object" else 0.0
        if isinstance(first, (list, tuple, np.ndarray)) or (row_length is not None and len(values) and first is None):
            return _stack_objects(values.to_numpy(dtype=object), column, row_offset=row_offset, row_length=row_length)
        return as_array(values, column, keep_nulls)
    elif hasattr(values, "null_count"):  # pyarrow non-list
        return as_array(values, column, keep_nulls)
    elif np.isscalar(values) or values is None:
        raise TypeError(f"column {column!r}: expected an array-like, got scalar {values!r}")
    else:
        arr = np.asarray(values)
    if (
        arr.dtype == object
        and arr.ndim == 1
        and (isinstance(_first_present(arr), (list, tuple, np.ndarray)) or (row_length is not None and arr.size and _first_present(arr) is None))
    ):
        return _stack_objects(arr, column, row_offset=row_offset, row_length=row_length)
    return arr


def _check_labels(arr: np.ndarray, ctx: FormatContext) -> np.ndarray:
    """:func:`mergeable_metrics.inputs.validation.check_labels` for a label or prediction column of the format's role."""
    ii = ctx.task.ignore_index if ctx.role == "target" else None
    kind = "labels" if ctx.role == "target" else "predictions"
    vals, _ = check_labels(arr, ctx.column, ctx.task.num_classes, ctx.checker, kind, ii)
    return vals


def _check_width(arr: np.ndarray, ctx: FormatContext, axis: int, what: str) -> None:
    want = ctx.task.num_classes
    if ctx.task.kind == "binary" and ctx.role == "score":
        ok = arr.shape[axis] in (1, 2)
        want_s = "1 or 2"
    else:
        ok = arr.shape[axis] == want
        want_s = str(want)
    if arr.shape[0] and not ok:
        raise ValueError(f"column {column_name(ctx.column)!r}: {what} need {want_s} entries per row (num_classes), got shape {arr.shape}")


def _finite(arr: np.ndarray, ctx: FormatContext, what: str = SCORES_FINITE) -> np.ndarray:
    return check_finite(arr, ctx.column, ctx.checker, what)


def check_probabilities(vals: np.ndarray, ctx: FormatContext, class_axis: int | None) -> None:
    """Entries in [0, 1]; with a class axis (multiclass, binary (N, 2)), each example's
    probabilities sum to 1 within ``PROBABILITY_SUM_TOL * K``."""
    with np.errstate(invalid="ignore"):
        bad = (vals < 0) | (vals > 1)
    ctx.checker.check(bad, vals, ctx.column, "probabilities must be in [0, 1]")
    if class_axis is None or vals.shape[0] == 0:
        return
    k = vals.shape[class_axis]
    sums = vals.sum(axis=class_axis)
    with np.errstate(invalid="ignore"):
        off = np.abs(sums - 1) > PROBABILITY_SUM_TOL * max(k, 1)
    if off.ndim == 1:
        ctx.checker.check(off, vals, ctx.column, f"probability rows must sum to 1 (got {float(sums[np.argmax(off)]):.6g})")
    else:  # maps: name the first pixel
        ctx.checker.check(off, sums, ctx.column, "class probabilities of a pixel must sum to 1")


def _class_axis(ctx: FormatContext, vals: np.ndarray) -> int | None:
    if ctx.task.kind == "multilabel" or vals.ndim == 1:
        return None
    return 1


# -- the built-in formats ----------------------------------------------------------------------
def _labels_validate(arr: np.ndarray, ctx: FormatContext) -> None:
    if arr.ndim == 1 and _valid_labels(arr, ctx.task.num_classes) is not None:
        return  # every label an integer in [0, K) (whole-array reductions): nothing to flag
    _check_labels(arr, ctx)


def _labels_convert(arr: np.ndarray, ctx: FormatContext) -> Converted:
    fast = _valid_labels(arr, ctx.task.num_classes) if arr.ndim == 1 else None
    if fast is not None:  # the same int64 labels as below, without the float round trip
        return Converted(fast)
    return Converted(to_float(arr, ctx.column).astype(np.int64))


def _onehot_validate(arr: np.ndarray, ctx: FormatContext) -> None:
    _check_width(arr, ctx, 1, "one-hot rows")
    vals = to_float(arr, ctx.column, ctx.checker.row_offset, ctx.checker)
    ctx.checker.check(~((vals == 0) | (vals == 1)), vals, ctx.column, "one-hot entries must be 0 or 1")
    ok_entries = ((vals == 0) | (vals == 1)).all(axis=1)
    ctx.checker.check(ok_entries & (vals.sum(axis=1) != 1), vals, ctx.column, "a one-hot row needs exactly one 1")


def _onehot_convert(arr: np.ndarray, ctx: FormatContext) -> Converted:
    return Converted(np.argmax(to_float(arr, ctx.column), axis=1).astype(np.int64))


def _indicator_validate(arr: np.ndarray, ctx: FormatContext) -> None:
    if arr.shape[0] and arr.shape[1] != ctx.task.num_classes:
        raise ValueError(f"column {column_name(ctx.column)!r}: multilabel rows need {ctx.task.num_classes} entries (num_classes), got shape {arr.shape}")
    vals = to_float(arr, ctx.column, ctx.checker.row_offset, ctx.checker)
    kind = "labels" if ctx.role == "target" else "predictions"
    ctx.checker.check(~((vals == 0) | (vals == 1)), vals, ctx.column, f"multilabel {kind} must be 0 or 1")


def _indicator_convert(arr: np.ndarray, ctx: FormatContext) -> Converted:
    return Converted(to_float(arr, ctx.column).astype(np.int64))


def _scores_validate(arr: np.ndarray, ctx: FormatContext) -> None:
    if arr.ndim == 2:
        _check_width(arr, ctx, 1, "score rows")
    vals = _finite(arr, ctx)
    if "probability" in ctx.needs:
        check_probabilities(vals, ctx, _class_axis(ctx, vals))


def _scores_convert(arr: np.ndarray, ctx: FormatContext) -> Converted:
    vals = to_float(arr, ctx.column)
    if ctx.task.kind == "binary" and vals.ndim == 2 and vals.shape[1] == 1:
        vals = vals[:, 0]  # (N, 1): one score column, as (N,); (N, 2) is split by build_batch
    return Converted(np.ascontiguousarray(vals, dtype=np.float64))


def _probabilities_validate(arr: np.ndarray, ctx: FormatContext) -> None:
    if arr.ndim == 2:
        _check_width(arr, ctx, 1, "probability rows")
    vals = _finite(arr, ctx, "probabilities must be finite (no NaN or inf)")
    axis = _class_axis(ctx, vals)
    if ctx.task.kind == "binary" and vals.ndim == 2 and vals.shape[1] == 1:
        axis = None
    check_probabilities(vals, ctx, axis)


def _logits_validate(arr: np.ndarray, ctx: FormatContext) -> None:
    if arr.ndim == 2:
        _check_width(arr, ctx, 1, "logit rows")
    _finite(arr, ctx, "logits must be finite (no NaN or inf)")


def _sigmoid(x: np.ndarray) -> np.ndarray:
    out = np.empty_like(x)
    pos = x >= 0
    out[pos] = 1.0 / (1.0 + np.exp(-x[pos]))
    e = np.exp(x[~pos])
    out[~pos] = e / (1.0 + e)
    return out


def softmax(x: np.ndarray, axis: int = 1) -> np.ndarray:
    """Numerically stable softmax along ``axis``."""
    z = x - x.max(axis=axis, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=axis, keepdims=True)


def _logits_convert(arr: np.ndarray, ctx: FormatContext) -> Converted:
    vals = to_float(arr, ctx.column)
    if ctx.task.kind == "multilabel" or vals.ndim == 1 or (ctx.task.kind == "binary" and vals.shape[1] == 1):
        p = _sigmoid(vals.reshape(vals.shape[0], -1) if vals.ndim == 2 else vals)
        return Converted(p[:, 0] if p.ndim == 2 and ctx.task.kind == "binary" else p)
    return Converted(softmax(vals, axis=1))  # binary (N, 2): split by build_batch


def _label_map_validate(arr: np.ndarray, ctx: FormatContext) -> None:
    _check_labels(arr, ctx)


def _label_map_convert(arr: np.ndarray, ctx: FormatContext) -> Converted:
    n = arr.shape[0]
    per = int(np.prod(arr.shape[1:]))
    labels = to_float(arr, ctx.column).reshape(-1).astype(np.int64)
    return Converted(labels, np.repeat(np.arange(n, dtype=np.int64), per))


def _score_map_validate(arr: np.ndarray, ctx: FormatContext) -> None:
    _check_width(arr, ctx, 1, "score maps (N, K, H, W)")
    vals = _finite(arr, ctx)
    if "probability" in ctx.needs:
        check_probabilities(vals, ctx, 1)


def _score_map_convert(arr: np.ndarray, ctx: FormatContext) -> Converted:
    vals = to_float(arr, ctx.column)
    n, k = vals.shape[:2]
    per = int(np.prod(vals.shape[2:]))
    scores = np.ascontiguousarray(np.moveaxis(vals.reshape(n, k, per), 1, 2).reshape(n * per, k))
    return Converted(scores, np.repeat(np.arange(n, dtype=np.int64), per))


def _values_validate(arr: np.ndarray, ctx: FormatContext) -> None:
    d = getattr(ctx.task, "num_outputs", None)
    if d is not None and ctx.role != "measure" and arr.shape[0]:
        raise ValueError(
            f"column {column_name(ctx.column)!r}: a multioutput regression task (num_outputs={d}) reads (N, {d}) "
            f"{ctx.role} values (a list or fixed-size list per row), got shape {arr.shape}"
        )
    what = "values must be finite (no NaN or inf)" if ctx.role != "target" else "targets must be finite (no NaN or inf)"
    _finite(arr, ctx, what)


def _values_convert(arr: np.ndarray, ctx: FormatContext) -> Converted:
    return Converted(np.ascontiguousarray(to_float(arr, ctx.column), dtype=np.float64))


def check_row_lengths(arr: np.ndarray, ctx: FormatContext, what: str) -> np.ndarray:
    """Report the :class:`OtherRow` marks of a list column read with a row length (a missing
    row, a list of another length): raise naming the column, the value, the row and the length
    found, or flag the rows in skip mode. Returns ``arr`` with NaN in the marked rows (the value
    checks then look at the other rows)."""
    if arr.dtype != object or arr.ndim != 2 or not arr.shape[0] or not arr.shape[1]:
        return arr
    marked = np.fromiter((isinstance(v, OtherRow) for v in arr[:, 0]), dtype=bool, count=arr.shape[0])
    if not marked.any():
        return arr

    def message(i: int, count: int) -> str:
        m, row = arr[i, 0], ctx.checker.row_offset + i
        more = f" ({count} such rows in this batch)" if count > 1 else ""
        if m.length is None:
            return f"column {column_name(ctx.column)!r}: invalid value {m!r} at row {row}: {what}{more}"
        return f"column {column_name(ctx.column)!r}: row {row} holds {m.length} entries {m!r}: {what}{more}"

    ctx.checker.flag(marked, message)
    out = arr.copy()
    out[marked] = np.nan
    return out


def _multioutput_validate(arr: np.ndarray, ctx: FormatContext) -> None:
    d = getattr(ctx.task, "num_outputs", None)
    if arr.shape[0] and d is None:
        raise ValueError(
            f"column {column_name(ctx.column)!r}: {ctx.role} values of shape {arr.shape} are multioutput; "
            f"set num_outputs={arr.shape[1]} for multioutput regression (or give (N,) values)"
        )
    if arr.shape[0] and arr.shape[1] != d:
        raise ValueError(f"column {column_name(ctx.column)!r}: multioutput {ctx.role} rows need {d} entries (num_outputs), got shape {arr.shape}")
    arr = check_row_lengths(arr, ctx, f"multioutput {ctx.role} rows are lists of {d} values (num_outputs={d})")
    what = "targets must be finite (no NaN or inf)" if ctx.role == "target" else "values must be finite (no NaN or inf)"
    _finite(arr, ctx, what)


_CLS = ("binary", "multiclass")
_ALL = ("binary", "multiclass", "multilabel", "regression")
for _f in (
    InputFormat("labels", ("target", "prediction"), _CLS, (0,), _labels_validate, _labels_convert,
                "(N,) integer labels in [0, K) (binary: 0/1)"),
    InputFormat("onehot", ("target", "prediction"), _CLS, (1,), _onehot_validate, _onehot_convert,
                "(N, K) one-hot rows (exactly one 1); argmax gives the label"),
    InputFormat("indicator", ("target", "prediction"), ("multilabel",), (1,), _indicator_validate, _indicator_convert,
                "(N, L) 0/1 label indicators (multilabel)"),
    InputFormat("scores", ("score",), ("binary", "multiclass", "multilabel"), (0, 1), _scores_validate, _scores_convert,
                "finite scores: (N,) binary, (N, K) multiclass (argmax predicts), (N, L) multilabel"),
    InputFormat("probabilities", ("score",), ("binary", "multiclass", "multilabel"), (0, 1), _probabilities_validate, _scores_convert,
                "probabilities in [0, 1]; multiclass rows sum to 1; binary (N, 2): column 1 (column 0 for pos_label=0)"),
    InputFormat("logits", ("score",), ("binary", "multiclass", "multilabel"), (0, 1), _logits_validate, _logits_convert,
                "finite logits, turned into probabilities (sigmoid for binary/multilabel, softmax for multiclass)"),
    InputFormat("label_map", ("target", "prediction"), _CLS, (2,), _label_map_validate, _label_map_convert,
                "(N, H, W) label maps (segmentation); every pixel is an element"),
    InputFormat("score_map", ("score",), ("multiclass",), (3,), _score_map_validate, _score_map_convert,
                "(N, K, H, W) score maps (segmentation); argmax over K predicts each pixel"),
    InputFormat("values", ("target", "prediction", "score", "measure"), _ALL, (0,), _values_validate, _values_convert,
                "(N,) finite floats: regression targets and predictions, or a measure"),
    InputFormat("multioutput", ("target", "prediction", "score"), ("regression",), (1,), _multioutput_validate, _values_convert,
                "(N, D) finite floats: multioutput regression targets and predictions (num_outputs=D)"),
):  # fmt: skip
    register_format(_f)


def resolve_format(task: Any, role: str, arr: np.ndarray, name: str | None, column: Any) -> InputFormat:
    """The format of one column: ``name`` if given (checked against role, task and shape), else the
    default for the task, role and ``arr.ndim``.

    Raises:
        ValueError: an unknown format, a format that does not fit the role or task, or a shape
            no format of the task reads.
    """
    if role == "measure":
        fmt = get_format(name or "values")
    elif name:
        fmt = get_format(name)
        if role not in fmt.roles:
            raise ValueError(f"column {column_name(column)!r}: input format {fmt.name!r} cannot be used for {role} values (only {fmt.roles})")
        if task.kind not in fmt.tasks:
            raise ValueError(f"column {column_name(column)!r}: input format {fmt.name!r} does not apply to {task.kind} tasks")
    else:
        options = DEFAULTS.get((task.kind, role), {})
        fname = options.get(arr.ndim)
        if fname is None:
            shapes = ", ".join(f"{FORMATS[f].name} ({_shape_text(FORMATS[f], nd)})" for nd, f in sorted(options.items()))
            raise ValueError(
                f"column {column_name(column)!r}: a {task.kind} task cannot read {role} values of shape {arr.shape}; expected one of: {shapes or 'none'}"
            )
        fmt = FORMATS[fname]
    if arr.shape[0] and arr.ndim - 1 not in fmt.example_ndims:
        nd = fmt.example_ndims[0] + 1
        raise ValueError(f"column {column_name(column)!r}: input format {fmt.name!r} expects {_shape_text(fmt, nd)} values, got shape {arr.shape}")
    return fmt


def _shape_text(fmt: InputFormat, ndim: int) -> str:
    return {1: "(N,)", 2: "(N, K)", 3: "(N, H, W)", 4: "(N, K, H, W)"}.get(ndim, f"{ndim}-D")


def row_length(task: Any, role: str) -> int | None:
    """The length every row of a ``role`` list column has (``num_outputs`` for the targets,
    predictions and scores of a multioutput regression task), or None."""
    return getattr(task, "num_outputs", None) if role in ("target", "prediction", "score") else None


def _as_column(values: Any, column: Any, row_offset: int = 0, row_length: int | None = None) -> np.ndarray:
    """A column, or several 1-D columns given as a list of names stacked into (N, K)."""
    if (
        isinstance(values, (list, tuple))
        and isinstance(column, (list, tuple))
        and len(values) == len(column)
        and len(column) > 0
        and not isinstance(values[0], (int, float))
    ):
        cols = [as_array(v, c, keep_nulls=True) for v, c in zip(values, column)]
        lengths = {c.shape[0] for c in cols}
        if len(lengths) > 1:
            raise ValueError(f"columns {list(column)} have different lengths")
        return _stack_columns(cols)
    return as_nd_array(values, column_name(column), row_offset, row_length, keep_nulls=True)


def _stack_columns(cols: list[np.ndarray]) -> np.ndarray:
    """(N,) columns of equal length stacked into (N, K): float64, or an object matrix when not
    all are numeric (read, and checked naming the column, by ``to_float``)."""
    if not cols:
        return np.zeros((0, 0))
    if all(c.dtype.kind in "fiub" for c in cols):
        if len(cols) == 1:  # one column: an (N, 1) view, no copy (nothing writes into batch arrays)
            return cols[0].astype(np.float64, copy=False).reshape(-1, 1)
        return np.stack([c.astype(np.float64, copy=False) for c in cols], axis=1)
    return np.stack([c.astype(object) for c in cols], axis=1)


def _columns(cols: list[np.ndarray]) -> np.ndarray:
    """(N,) converted columns as (N, K): one column is reshaped (no copy), more are stacked."""
    return cols[0].reshape(-1, 1) if len(cols) == 1 else np.stack(cols, axis=1)


def build_batch(
    *,
    task: Any,
    columns: dict[str, Any],
    names: dict[str, Any] | None = None,
    sample_weight: Any = None,
    weight_name: str = "sample_weight",
    formats: dict[str, str | None] | None = None,
    needs: frozenset = frozenset(),
    row_offset: int = 0,
    on_invalid: str = "raise",
) -> tuple[Batch, np.ndarray | None]:
    """Validate columns with their formats and build a :class:`~mergeable_metrics.inputs.validation.Batch`.

    Steps: read each column (any rank) -> choose its format -> ``validate`` (raise, or collect the
    invalid rows with ``on_invalid="skip"``) -> drop invalid rows -> ``convert`` -> derive
    predictions from scores where needed (multiclass argmax) -> drop elements whose label is
    ``task.ignore_index``.

    Args:
        task: the :class:`~mergeable_metrics.metrics.base.Task`.
        columns: role -> values (None for absent roles). A score given as a list of per-class
            columns (with ``names["score"]`` a list of the same length) is stacked to (N, K).
        names: role -> column name(s) for messages (defaults ``y_true``, ``y_pred``, ``y_score``,
            ``measure``).
        sample_weight: (N,) finite non-negative per-row weights (pixels of a map share their
            row's weight), or None.
        weight_name: the weight column's name for messages.
        formats: role -> format name (None or missing: the default for the task and shape).
        needs: the plan's input needs (``"probability"`` validates scores as probabilities).
        row_offset: position of the batch's first row in the input, for messages.
        on_invalid: ``"raise"`` or ``"skip"`` (invalid rows are dropped and reported in the mask).

    Returns:
        ``(batch, invalid)``: ``invalid`` is None in "raise" mode, else the (N,) skipped-row mask.

    Raises:
        ValueError: columns of different lengths, wrong shapes, unknown formats, or (in "raise"
            mode) invalid values, naming the column, the value, the row and the entry.
        TypeError: non-numeric values.
    """
    if on_invalid not in ON_INVALID:
        raise ValueError(f"on_invalid must be one of {ON_INVALID}, got {on_invalid!r}")
    names = {"target": "y_true", "prediction": "y_pred", "score": "y_score", "measure": "measure", **(names or {})}
    formats = formats or {}
    arrs: dict[str, np.ndarray] = {}
    for role in ROLES:
        v = columns.get(role)
        if v is None:
            continue
        arrs[role] = _measure_columns(v, names[role]) if role == "measure" else _as_column(v, names[role], row_offset, row_length(task, role))
    for role in ("target", "prediction"):  # an (N, 1) label column (OnlineMetrics' one_hot reads it so): class indices
        a = arrs.get(role)
        if a is not None and a.ndim == 2 and a.shape[1] == 1 and task.kind in ("binary", "multiclass") and formats.get(role) in (None, "labels"):
            arrs[role] = a[:, 0]
    w = as_array(sample_weight, weight_name, keep_nulls=True) if sample_weight is not None else None
    if not arrs:
        raise ValueError("no input columns: give labels, predictions, scores or a measure")
    first = next(iter(arrs))
    n = arrs[first].shape[0]
    for role, a in list(arrs.items())[1:] + ([("weight", w)] if w is not None else []):
        if a.shape[0] != n:
            nm = weight_name if role == "weight" else column_name(names[role])
            raise ValueError(f"column {nm!r} has {a.shape[0]} rows but column {column_name(names[first])!r} has {n} rows")
    chk = _Checker(n, on_invalid, row_offset)
    if n == 0:
        return _empty_batch(task, arrs), (np.zeros(0, dtype=bool) if chk.skip else None)
    many = "measure" in arrs and arrs["measure"].ndim == 2  # named measures: (N, M), one column per name
    fmts = {role: resolve_format(task, role, a[:, 0] if many and role == "measure" else a, formats.get(role), names[role]) for role, a in arrs.items()}
    ctxs = {role: FormatContext(task, role, names[role], chk, frozenset(needs)) for role in arrs}
    for role, a in arrs.items():
        if many and role == "measure":  # each measure column on its own, so errors name it
            for j, nm in enumerate(names["measure"]):
                fmts[role].validate(a[:, j], FormatContext(task, role, nm, chk, frozenset(needs)))
            continue
        fmts[role].validate(a, ctxs[role])
    if w is not None:
        w = check_weights(w, weight_name, chk)
    invalid = chk.invalid
    if chk.skip and invalid.any():
        keep = ~invalid
        arrs = {r: a[keep] for r, a in arrs.items()}
        w = w[keep] if w is not None else None
        if not keep.any():
            return _empty_batch(task, arrs), invalid
    conv = {
        role: Converted(_columns([fmts[role].convert(a[:, j], FormatContext(task, role, nm, chk)).values for j, nm in enumerate(names[role])]))
        if many and role == "measure" else fmts[role].convert(a, ctxs[role])
        for role, a in arrs.items()
    }  # fmt: skip
    row_of = None
    map_role = None
    for role, c in conv.items():
        if c.row_of is not None:
            if row_of is None:
                row_of, map_role = c.row_of, role
            elif c.row_of.shape != row_of.shape:
                raise ValueError(
                    f"columns {column_name(names[map_role])!r} and {column_name(names[role])!r} have maps of different sizes "
                    f"({row_of.shape[0]} vs {c.row_of.shape[0]} pixels in this batch)"
                )
    if row_of is not None:
        for role, c in conv.items():
            if c.row_of is None and role != "measure":
                raise ValueError(
                    f"column {column_name(names[role])!r} has one value per row but column {column_name(names[map_role])!r} holds maps; give maps for both"
                )
    get = lambda role: conv[role].values if role in conv else None  # noqa: E731
    y_true, y_pred, y_score, values = get("target"), get("prediction"), get("score"), get("measure")
    if values is not None and row_of is not None:
        values = values[row_of]
    if task.kind == "regression" and y_pred is None and y_score is not None:
        y_pred, y_score = y_score, None
    if task.kind == "multiclass" and y_pred is None and y_score is not None:
        y_pred = np.argmax(y_score, axis=1).astype(np.int64)
    score0 = None
    if task.kind == "binary" and y_score is not None and y_score.ndim == 2:  # (N, 2): class 0, class 1
        score0, y_score = np.ascontiguousarray(y_score[:, 0]), np.ascontiguousarray(y_score[:, 1])
    we = w[row_of] if (w is not None and row_of is not None) else w
    batch = Batch(y_true, y_score, y_pred, we, values, row_of, score0)
    ii = task.ignore_index
    if ii is not None and y_true is not None:
        drop = y_true == ii
        if drop.any():
            base = row_of if row_of is not None else np.arange(y_true.shape[0], dtype=np.int64)
            batch = Batch(y_true, y_score, y_pred, we, values, base, score0).take(~drop)
    return batch, (invalid if chk.skip else None)


def _measure_columns(values: Any, names: Any) -> np.ndarray:
    """The measure role: one (N,) column, or for named measures (``names`` a list) the list of
    their (N,) columns stacked into (N, M).

    Raises:
        ValueError: measure columns of different lengths, or a list of values without one name each.
    """
    if not isinstance(names, (list, tuple)):
        return as_array(values, names, keep_nulls=True)
    if not isinstance(values, (list, tuple)) or len(values) != len(names):
        raise ValueError(f"named measures {list(names)}: expected one column of values per name")
    cols = [as_array(v, nm, keep_nulls=True) for v, nm in zip(values, names)]
    for c, nm in zip(cols, names):
        if c.ndim != 1 or c.shape[0] != cols[0].shape[0]:
            raise ValueError(f"column {nm!r} has shape {c.shape} but column {names[0]!r} has {cols[0].shape[0]} rows: measures are (N,) columns")
    return _stack_columns(cols)


def _empty_batch(task: Any, arrs: dict[str, np.ndarray]) -> Batch:
    label_dtype = np.float64 if task.kind == "regression" else np.int64
    d = getattr(task, "num_outputs", None)
    empty = lambda: np.zeros((0,) if d is None else (0, d), dtype=label_dtype)  # noqa: E731
    return Batch(
        empty() if "target" in arrs else None,
        np.zeros(0) if "score" in arrs else None,
        empty() if "prediction" in arrs else None,
        None,
        (np.zeros((0,) + arrs["measure"].shape[1:]) if "measure" in arrs else None),
    )


# -- one entry point: the plain (N,) fast path or the formats ------------------------------------
@dataclass(frozen=True)
class InputTask:
    """What the input formats read of a task when :func:`make_batch` is given none: a binary or
    multiclass task with ``num_classes`` classes (a :class:`~mergeable_metrics.metrics.base.Task` has the same
    attributes)."""

    num_classes: int = 2
    kind: str = "binary"
    ignore_index: int | None = None


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
    task: Any = None,
    formats: dict[str, str | None] | None = None,
    values: Any = None,
    measure_name: str = "measure",
    needs: frozenset[str] | set[str] = frozenset(),
    count_cells: tuple | None = None,
    regression_sums: bool = False,
) -> tuple[Batch, np.ndarray | None]:
    """Validate columns and build a :class:`~mergeable_metrics.inputs.validation.Batch`, on the fast path when it applies.

    Binary/multiclass (N,) labels, scores and predictions go through
    :func:`mergeable_metrics.inputs.validation.plain_batch`; any other input (a task of another kind, input formats
    such as one-hot, probability matrices or label maps, ``ignore_index``, a measure, or
    probability checks) through :func:`build_batch`. Both paths run the same value checks.

    Args:
        num_classes: 2 for binary tasks (labels in {0, 1}), K for multiclass (labels in [0, K)).
        y_true: (N,) labels (or any shape a format reads).
        y_score: scores, or None.
        y_pred: predicted labels, or None.
        sample_weight: (N,) finite non-negative weights, or None for unit weights.
        names: column names for (y_true, y_score, y_pred, sample_weight) used in messages.
        row_offset: position of this batch's first row in the whole input, for messages.
        on_invalid: "raise" (default) or "skip".
        task: the :class:`~mergeable_metrics.metrics.base.Task` (None: binary for 2 classes, else multiclass).
        formats: role -> input format name, for :func:`build_batch`.
        values: a per-example measure, or None.
        measure_name: the measure column's name, for messages.
        needs: the plan's input needs (e.g. ``"probability"``).
        count_cells: the counts a state of the plan takes from plain (N,) int64 labels
            (:attr:`mergeable_metrics.collection.plan.Plan.count_cells`): ``("pairs", K)`` (a
            K x K confusion matrix) or ``("threshold", t, strict)`` (binary counts at one
            threshold). In raise mode, such labels (with predictions, or finite scores) are
            checked by the compiled pass that counts them (:attr:`Batch.cells`); a value it
            refuses sends the batch to the reference checks, which name it.
        regression_sums: the caller folds the batch into a single-output regression moments
            state: plain float64 targets and predictions are checked by the compiled pass that
            computes that state's exact sums (:attr:`Batch.sums`), not by separate reductions.

    Returns:
        ``(batch, invalid)``: in "raise" mode ``invalid`` is None; in "skip" mode it is the (N,)
        bool mask of skipped rows and ``batch`` holds only the valid rows.

    Raises:
        ValueError: columns of different lengths (always), or in "raise" mode an invalid value,
            naming column, value and row.
        TypeError: a non-numeric value (e.g. a string).
    """
    _check_binary_score_width(task, num_classes, y_score, names[1], formats)
    if on_invalid == "raise" and y_score is None:
        fast = _plain_floats(task, y_true, y_pred, values, sample_weight, formats, needs, measure_name, regression_sums)
        if fast is not None:
            return fast, None
    if on_invalid == "raise" and count_cells is not None:
        fast = _plain_label_cells(task, num_classes, y_true, y_score, y_pred, sample_weight, formats, needs, count_cells)
        if fast is not None:
            return fast, None
    if on_invalid == "raise" and count_cells is None and y_pred is None and values is None:
        fast = _plain_scores(task, num_classes, y_true, y_score, sample_weight, formats, needs)
        if fast is not None:
            return fast, None
    if not _needs_formats(task, num_classes, y_true, y_score, y_pred, formats, values, needs):
        return plain_batch(
            num_classes=num_classes, y_true=y_true, y_score=y_score, y_pred=y_pred, sample_weight=sample_weight,
            names=names, row_offset=row_offset, on_invalid=on_invalid,
        )  # fmt: skip
    if task is None:
        task = InputTask(num_classes, "binary" if num_classes == 2 else "multiclass")
    return build_batch(
        task=task,
        columns={"target": y_true, "score": y_score, "prediction": y_pred, "measure": values},
        names={"target": names[0], "score": names[1], "prediction": names[2], "measure": measure_name},
        sample_weight=sample_weight,
        weight_name=names[3],
        formats=formats or {},
        needs=frozenset(needs),
        row_offset=row_offset,
        on_invalid=on_invalid,
    )


def _float_column(a: Any, n: int | None) -> bool:
    """A plain (not a subclass: masked arrays go through the formats) C-contiguous (n,) float64
    numpy column (n: any length when None)."""
    return type(a) is np.ndarray and a.dtype == np.float64 and a.ndim == 1 and a.flags.c_contiguous and (n is None or a.shape[0] == n)


_PLAIN_NEEDS = frozenset({"target", "prediction", "measure"})
#: the tag of :attr:`Batch.sums` computed by the regression moments' kernel in the validation:
#: ``(REGRESSION_SUMS, y_true, y_pred, sample_weight, (weight_raw, (D, exp), max_abs_e))``
REGRESSION_SUMS = "regression_moments"


def _plain_floats(
    task: Any, y_true: Any, y_pred: Any, values: Any, sample_weight: Any, formats: Any, needs: Any, measure_name: Any, regression_sums: bool = False
) -> Batch | None:
    """The batch :func:`build_batch` makes of plain (N,) float64 numpy columns, without its
    per-column format machinery: single-output regression targets and predictions, or one
    measure column (named: an (N, 1) view), every value finite and every weight finite and >= 0.
    None for anything else, and for any invalid value: :func:`build_batch` then reads the columns
    and raises its messages. The arrays are the caller's (as :func:`build_batch` keeps them).

    With ``regression_sums`` (regression), the compiled pass of the regression moments' exact
    sums is the check (:func:`mergeable_metrics._util.exact_kernels.regression_stacked`: finite
    targets, predictions and weights, no negative weight) and its sums travel with the batch;
    when it declines (an invalid value, or an error ``|p - y|`` that overflows) the reductions
    below decide, so the messages are the reference path's."""
    if task is None or (formats and any(v for v in formats.values())) or getattr(task, "ignore_index", None) is not None:
        return None
    if needs and not _PLAIN_NEEDS.issuperset(needs):
        return None
    if task.kind == "regression" and values is None and getattr(task, "num_outputs", None) is None:
        if not (_float_column(y_true, None) and _float_column(y_pred, y_true.shape[0]) and y_true.shape[0]):
            return None
        cols = (y_true, y_pred)
    elif y_true is None and y_pred is None and values is not None:
        v = values[0] if isinstance(measure_name, list) and isinstance(values, list) and len(values) == len(measure_name) == 1 else values
        if not (_float_column(v, None) and v.shape[0]) or (isinstance(measure_name, list) and v is values):
            return None
        cols = (v,)
    else:
        return None
    n = cols[0].shape[0]
    w = sample_weight
    if len(cols) == 1 and n <= _kernels.CHUNK and _kernels.ready() and (w is None or _float_column(w, n)):
        # one compiled pass checks the values and weights and computes the mean's exact sums
        # (no separate validation pass); anything invalid goes to build_batch, which names it
        sums = _kernels.mean_batch_sums(cols[0], w)
        if sums is None:
            return None
        values = cols[0].reshape(-1, 1) if isinstance(measure_name, list) else cols[0]
        return Batch(None, None, None, w, values, sums=(values, w, *sums))
    if regression_sums and len(cols) == 2 and n <= _kernels.CHUNK and _kernels.ready() and (w is None or _float_column(w, n)):
        # one compiled pass checks the targets, predictions and weights and computes the moments' sums
        fused = _kernels.regression_stacked(y_true, y_pred, w)
        if fused is not None:
            return Batch(y_true, None, y_pred, w, None, sums=(REGRESSION_SUMS, y_true, y_pred, w, fused))
    if w is not None and not (_float_column(w, n) and w.min() >= 0 and _all_finite(w)):  # min() is NaN if any is
        return None
    if not all(_all_finite(c) for c in cols):
        return None
    if len(cols) == 2:
        return Batch(y_true, None, y_pred, w, None)
    return Batch(None, None, None, w, cols[0].reshape(-1, 1) if isinstance(measure_name, list) else cols[0])


def _int_column(a: Any) -> bool:
    """A plain (not a subclass) C-contiguous (n,) int64 numpy column with n > 0."""
    return type(a) is np.ndarray and a.dtype == np.int64 and a.ndim == 1 and a.flags.c_contiguous and a.shape[0] > 0


_LABEL_NEEDS = frozenset({"target", "prediction", "score"})


def _plain_label_cells(
    task: Any, num_classes: int, y_true: Any, y_score: Any, y_pred: Any, sample_weight: Any, formats: Any, needs: Any, count_cells: tuple
) -> Batch | None:
    """The batch :func:`plain_batch` makes of plain (N,) int64 labels with (N,) int64 predictions
    (``count_cells`` ``("pairs", K)``) or (N,) float64 scores (``("threshold", t, strict)``,
    binary), checked by the compiled pass that counts the plan's cells (labels in [0, K), or 0 / 1
    with finite scores) instead of the per-column reductions; the counts travel with the batch
    (:attr:`Batch.cells`). Weights are checked as :func:`plain_batch` checks them. None for any
    other input and for any invalid value: :func:`plain_batch` then reads the columns and raises
    its message (nothing is folded). The arrays are the caller's (as :func:`plain_batch` keeps
    them)."""
    if task is None or task.kind not in ("binary", "multiclass") or task.ignore_index is not None or task.num_classes != num_classes:
        return None
    if (formats and any(v for v in formats.values())) or (needs and not _LABEL_NEEDS.issuperset(needs)):
        return None
    if not _int_column(y_true):
        return None
    n = y_true.shape[0]
    if n > _kernels.CHUNK or not _kernels.ready():
        return None
    w = sample_weight
    if w is not None and not (_float_column(w, n) and w.min() >= 0 and _all_finite(w)):  # min() is NaN if any is
        return None
    if count_cells[0] == "pairs":
        if y_score is not None or count_cells[1] != num_classes or not (_int_column(y_pred) and y_pred.shape[0] == n):
            return None
        got = _kernels.pair_cells(y_true, y_pred, num_classes, w)
        if got is None:
            return None
        return Batch(y_true, None, y_pred, w, cells=(count_cells, y_true, y_pred, w, got))
    if count_cells[0] == "threshold":
        if task.kind != "binary" or y_pred is not None or not _float_column(y_score, n):
            return None
        if w is None:
            got = _kernels.binary_counts(y_true, y_score, count_cells[1], count_cells[2])  # checks labels and scores
        else:  # the cells' weight sums check the labels; the scores' finiteness read from the cache after them
            got = _kernels.binary_cells(y_true, y_score, count_cells[1], count_cells[2], w)
            if got is not None and not _all_finite(y_score):
                got = None
        if got is None:
            return None
        return Batch(y_true, y_score, None, w, cells=(count_cells, y_true, y_score, w, got))
    return None


#: the tag of :attr:`Batch.sums` of a batch of binary labels and scores whose weights' exact sum
#: the validation's compiled pass computed: ``(SCORE_WEIGHT_SUM, sample_weight, None, (limbs, exp))``
#: (read by :meth:`mergeable_metrics.collection.plan.Plan.fold`: the example count's weight)
SCORE_WEIGHT_SUM = "score_weight_sum"
_SCORE_NEEDS = frozenset({"target", "score"})


def _plain_scores(task: Any, num_classes: int, y_true: Any, y_score: Any, sample_weight: Any, formats: Any, needs: Any) -> Batch | None:
    """The batch :func:`plain_batch` makes of plain (N,) int64 binary labels, (N,) float64 scores
    and (N,) float64 weights (or none) for a plan that reads only labels and scores (ranking
    metrics: ``roc_auc``, ``average_precision``, ...), checked by one compiled pass
    (:func:`mergeable_metrics._util.exact_kernels.score_batch_sums`: labels 0 or 1, finite scores,
    finite weights >= 0) instead of a reduction per column; the pass sums the weights exactly too
    (the example count's weight: :attr:`Batch.sums`, tagged :data:`SCORE_WEIGHT_SUM`). None for
    any other input and for any invalid value: :func:`plain_batch` then reads the columns and
    raises its message (nothing is folded). The arrays are the caller's (as :func:`plain_batch`
    keeps them)."""
    if task is None or task.kind != "binary" or task.ignore_index is not None or num_classes != 2 or task.num_classes != 2:
        return None
    if (formats and any(v for v in formats.values())) or not needs or not _SCORE_NEEDS.issuperset(needs):
        return None
    if not _int_column(y_true):
        return None
    n = y_true.shape[0]
    w = sample_weight
    if not _float_column(y_score, n) or (w is not None and not _float_column(w, n)) or n > _kernels.CHUNK or not _kernels.ready():
        return None
    got = _kernels.score_batch_sums(y_true, y_score, w)
    if got is None:
        return None
    if w is None:
        return Batch(y_true, y_score, None, None)
    return Batch(y_true, y_score, None, w, sums=(SCORE_WEIGHT_SUM, w, None, got))


def _check_binary_score_width(task: Any, num_classes: int, y_score: Any, name: str, formats: dict[str, str | None] | None) -> None:
    """A binary task (the default) given K > 2 scores per row: a multiclass score column. Raises
    ValueError naming the column, K and the settings that read it (in skip mode too: it is the
    column's shape, not a row's value), before the labels fail as "must be 0 or 1"."""
    binary = getattr(task, "kind", None) == "binary" if task is not None else num_classes == 2
    if not binary or y_score is None or (formats or {}).get("score"):
        return
    if isinstance(y_score, np.ndarray) and y_score.ndim == 2:
        width = y_score.shape[1]
    elif isinstance(y_score, np.ndarray) and y_score.ndim == 1 and y_score.dtype == object:
        first = _first_present(y_score)
        width = len(first) if isinstance(first, (list, tuple, np.ndarray)) else None
    else:
        width = None
    if width is not None and width > 2:
        raise ValueError(
            f"column {name!r} holds {width} scores per row, but the task is binary (2 classes, the default): a score column "
            f"of width {width} is a multiclass one; pass task='multiclass', num_classes={width} (--task multiclass --num-classes "
            f"{width}), or give one score per row (the positive class's) for a binary task"
        )


def _is_plain_1d(values: Any) -> bool:
    """True for inputs the (N,) path reads: None, or anything that is not visibly 2-D or nested."""
    if values is None:
        return True
    if isinstance(values, np.ndarray):
        return values.ndim == 1 and not (values.dtype == object and isinstance(_first_present(values), (list, tuple, np.ndarray)))
    t = getattr(values, "type", None)
    if t is not None and hasattr(t, "id"):  # pyarrow Array / ChunkedArray: list types are matrices
        return "list" not in str(t)
    if isinstance(values, (list, tuple)):
        return not isinstance(_first_present(values), (list, tuple, np.ndarray))
    dtype = getattr(values, "dtype", None)
    if dtype is not None and str(dtype) == "object" and hasattr(values, "iloc"):
        return not isinstance(_first_present(values), (list, tuple, np.ndarray))
    return True


def _needs_formats(task: Any, num_classes: int, y_true: Any, y_score: Any, y_pred: Any, formats: Any, values: Any, needs: Any) -> bool:
    """Whether a batch needs :func:`build_batch` rather than the plain (N,) path."""
    if task is not None and (task.kind not in ("binary", "multiclass") or task.ignore_index is not None):
        return True
    if formats and any(v for v in formats.values()):
        return True
    if values is not None or y_true is None or (needs and {"probability", "score_matrix", "measure"} & set(needs)):
        return True
    kind = task.kind if task is not None else ("binary" if num_classes == 2 else "multiclass")
    if kind == "multiclass" and y_score is not None:
        return True
    return not (_is_plain_1d(y_true) and _is_plain_1d(y_score) and _is_plain_1d(y_pred))


# -- public conversion and validation of one column (OnlineMetrics' data formats) ---------------
def _column_task(fmt: str | None, num_classes: int, task: Any) -> Any:
    from mergeable_metrics.inputs.task import Task

    if task is not None:
        return task
    if fmt == "indicator":
        return Task(num_classes=num_classes, kind="multilabel")
    if fmt in ("values", "multioutput"):
        return Task(kind="regression")
    return Task(num_classes=num_classes)


@public("mergeable_metrics.metrics")
def validate_values(values: Any, fmt: str | None = None, *, num_classes: int = 2, role: str = "target", task: Any = None, column: str = "values") -> None:
    """Check one column against an input format without folding it: ``fmt`` (``"labels"``,
    ``"onehot"``, ``"probabilities"``, ... see :data:`FORMATS`; None: the default for the shape),
    for ``num_classes`` classes (or the :class:`~mergeable_metrics.metrics.base.Task` ``task``) in
    ``role`` (``"target"``, ``"prediction"``, ``"score"``). An (N, 1) label column is read as
    class indices.

    Raises:
        ValueError: the first invalid value, naming ``column``, the value and its row; or a shape
            or format that does not fit.

    Example:
        >>> validate_values([[0, 1], [1, 1]], "onehot", column="y")
        Traceback (most recent call last):
        ...
        ValueError: column 'y': invalid value [1.0, 1.0] at row 1: a one-hot row needs exactly one 1
    """
    format_values(values, None, fmt, num_classes=num_classes, role=role, task=task, column=column)


@public("mergeable_metrics.metrics")
def format_values(
    values: Any, to: str | None = "labels", fmt: str | None = None, *, num_classes: int = 2, role: str = "target", task: Any = None, column: str = "values"
) -> Any:
    """One column read in its input format ``fmt`` (None: the default for its shape; an (N, 1)
    column is class indices), validated, and returned in the format ``to``: ``"labels"`` (N,)
    int64 class indices (OnlineMetrics' ``onecold``; scores: their argmax), ``"onehot"`` an (N, K)
    int64 one-hot matrix (OnlineMetrics' ``one_hot``), ``"scores"`` the (N,) / (N, K) float64
    scores the metrics read (probabilities, or the softmax / sigmoid of logits); None: nothing
    (validation only).

    Raises:
        ValueError: an invalid value (naming ``column``, the value and its row), a shape or format
            that does not fit, or an unknown ``to``.

    Example:
        >>> format_values([[0], [2], [1]], "onehot", num_classes=3).tolist()
        [[1, 0, 0], [0, 0, 1], [0, 1, 0]]
        >>> format_values([[0.1, 0.7, 0.2], [0.8, 0.1, 0.1]], "labels", num_classes=3, role="score").tolist()
        [1, 0]
    """
    if to not in (None, "labels", "onehot", "scores"):
        raise ValueError(f"format_values: to must be 'labels', 'onehot', 'scores' or None, got {to!r}")
    t = _column_task(fmt, num_classes, task)
    batch, _ = build_batch(task=t, columns={role: values}, names={role: column}, formats={role: fmt})
    if to is None:
        return None
    if role == "score":
        s = batch.y_score
        if batch.y_score_class0 is not None:  # a binary (N, 2) matrix: both columns
            s = np.stack([batch.y_score_class0, s], axis=1)
        if to == "scores":
            return s
        labels = (s >= t.threshold).astype(np.int64) if s.ndim == 1 else np.argmax(s, axis=1).astype(np.int64)
    elif to == "scores":
        raise ValueError(f"format_values: to='scores' needs score values (role='score'), not {role}")
    else:
        labels = batch.y_true if role == "target" else batch.y_pred
    if to == "labels" or t.kind == "multilabel":
        return labels
    return np.eye(t.num_classes, dtype=np.int64)[labels]
