"""Class labels that are not ``0..K-1``: ``classes=[...]`` (and ``pos_label=`` for binary tasks).

States count classes by index. With ``classes=["cat", "dog", "bird"]`` the label and prediction
columns hold the class *values*; each is mapped to its index in the list (``"cat"`` -> 0, ...)
before validation, so every state, merge and engine sees the usual ``[0, K)`` labels, and
per-class results are in the order of the list (:meth:`mergeable_metrics.results.results.Results.per_class` names
them). A value outside the list is an invalid row: ``ValueError`` naming the column, the value
and the row position (``on_invalid="skip"``: skipped and counted). For binary tasks the second
class is the positive one (scikit-learn's convention for sorted labels); ``pos_label=`` picks it
by value: ``classes=[-1, 1], pos_label=1`` or ``classes=["no", "yes"], pos_label="yes"``. Scores
are the positive class's (binary) or one per class in the order of ``classes`` (multiclass).

Numbers match by value (``1`` and ``1.0`` are one class); strings by equality. Class values are
JSON scalars (str, int, float; no bool, no None), distinct.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

__all__ = ["check_classes", "encode_labels"]


def _check_value(v: Any, what: str) -> Any:
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, bool) or not isinstance(v, (str, int, float)):
        raise TypeError(f"{what}: a class value is a string or a number, got {type(v).__name__} {v!r}")
    if isinstance(v, float) and not math.isfinite(v):
        raise ValueError(f"{what}: a class value is finite, got {v!r}")
    return v


def check_classes(classes: Sequence[Any] | None, pos_label: Any = None, binary: bool | None = None) -> tuple[Any, ...] | None:
    """The class values in index order (``classes[i]`` is class ``i``), checked.

    Args:
        classes: the class values, or None (labels are ``0..K-1`` already).
        pos_label: for two classes, the positive one's value: it becomes class 1.
        binary: the task is binary (two classes, not ``multiclass``); None: unknown yet.

    Returns:
        ``tuple(classes)``, the positive class last when ``pos_label`` is given; None without
        ``classes``.

    Raises:
        ValueError: fewer than two classes, duplicates, ``pos_label`` not in ``classes``, or
            ``pos_label`` without two classes (or for a multiclass task).
        TypeError: a class value that is not a string or a number.
    """
    if classes is None:
        if pos_label is not None:
            raise ValueError(f"pos_label={pos_label!r} needs classes= (the two label values, e.g. classes=[-1, 1], pos_label=1)")
        return None
    if isinstance(classes, (str, bytes)) or not hasattr(classes, "__iter__"):
        raise TypeError(f"classes: expected a list of class values, got {type(classes).__name__} {classes!r}")
    values = tuple(_check_value(v, "classes") for v in classes)
    if len(values) < 2:
        raise ValueError(f"classes: expected at least two class values, got {list(values)!r}")
    seen: dict[Any, int] = {}
    for i, v in enumerate(values):
        if v in seen:
            raise ValueError(f"classes: {v!r} is given twice (positions {seen[v]} and {i})")
        seen[v] = i
    if pos_label is None:
        return values
    pos_label = _check_value(pos_label, "pos_label")
    if len(values) != 2 or binary is False:
        raise ValueError(f"pos_label={pos_label!r} applies to binary tasks (two classes), got classes={list(values)!r}")
    if pos_label not in seen:
        raise ValueError(f"pos_label={pos_label!r} is not one of classes={list(values)!r}")
    return (values[1 - seen[pos_label]], pos_label)


def _column_array(values: Any) -> np.ndarray:
    if hasattr(values, "to_numpy") and not isinstance(values, np.ndarray):
        try:
            values = values.to_numpy(zero_copy_only=False)  # pyarrow
        except TypeError:
            values = values.to_numpy()  # pandas
    return np.asarray(values)


def encode_labels(values: Any, classes: Sequence[Any], column: str, row_offset: int = 0, skip: bool = False) -> np.ndarray:
    """The class index of every value (an int64 array of the input's shape).

    Args:
        values: labels or predictions (lists, numpy, pandas or Arrow; (N,) or label maps).
        classes: the class values in index order (:func:`check_classes`).
        column: the column's name, for messages.
        row_offset: position of the first row in the whole input, for messages.
        skip: values outside ``classes`` become ``-1`` (an invalid label the validation skips
            and counts) instead of raising.

    Raises:
        ValueError: a value outside ``classes`` (unless ``skip``), naming the column, the value,
            the row position and how many rows have such values.

    Example:
        >>> encode_labels(["dog", "cat", "bird"], ("cat", "dog", "bird"), "y").tolist()
        [1, 0, 2]
        >>> encode_labels([1, -1, 1], (-1, 1), "y").tolist()
        [1, 0, 1]
        >>> encode_labels(["cat", "fish"], ("cat", "dog"), "y", row_offset=10)
        Traceback (most recent call last):
        ...
        ValueError: column 'y': invalid value 'fish' at row 11: not one of classes=['cat', 'dog']
    """
    arr = _column_array(values)
    flat = arr.reshape(-1) if arr.ndim else arr.reshape(1)
    lut = {c: i for i, c in enumerate(classes)}
    out = None
    numeric = all(not isinstance(c, str) for c in classes)
    small_ints = numeric and all(isinstance(c, int) or float(c).is_integer() for c in classes) and max(classes) - min(classes) <= 1 << 16
    if small_ints and flat.dtype.kind in "iu":  # a lookup table over the classes' range
        lo = int(min(classes))
        table = np.full(int(max(classes)) - lo + 1, -1, dtype=np.int64)
        for c, i in lut.items():
            table[int(c) - lo] = i
        x = flat.astype(np.int64, copy=False) - lo
        inside = (x >= 0) & (x < table.size)
        out = np.where(inside, table[np.where(inside, x, 0)], -1)
    elif numeric and flat.dtype.kind in "iuf":
        keys = np.array(sorted(lut), dtype=np.float64)
        index = np.array([lut[k] for k in sorted(lut)], dtype=np.int64)
        x = flat.astype(np.float64)
        pos = np.clip(np.searchsorted(keys, x), 0, len(keys) - 1)
        hit = keys[pos] == x
        out = np.where(hit, index[pos], -1)
    elif flat.dtype.kind == "U" and len(classes) <= 32:  # fixed-width strings: one vectorised compare per class
        out = np.full(flat.size, -1, dtype=np.int64)
        for c, i in lut.items():
            if isinstance(c, str):
                out[flat == c] = i
    elif flat.dtype.kind in "US" or flat.dtype == object:  # one dict lookup per row (faster than sorting them)
        try:
            out = np.fromiter((lut.get(v, -1) for v in flat.tolist()), dtype=np.int64, count=flat.size)
        except TypeError:  # an unhashable value (a list): the slow path below names it
            out = None
    if out is None:
        out = np.fromiter((lut.get(v.item() if isinstance(v, np.generic) else v, -1) if _hashable(v) else -1 for v in flat), dtype=np.int64, count=flat.size)
    bad = np.flatnonzero(out < 0)
    if bad.size and not skip:
        first = flat[bad[0]]
        first = first.item() if isinstance(first, np.generic) else first
        row = row_offset + int(bad[0] if arr.ndim <= 1 else np.unravel_index(bad[0], arr.shape)[0])
        more = f" ({bad.size} values are outside the classes)" if bad.size > 1 else ""
        raise ValueError(f"column {column!r}: invalid value {first!r} at row {row}: not one of classes={list(classes)!r}{more}")
    return out.reshape(arr.shape) if arr.ndim else out


def _hashable(v: Any) -> bool:
    try:
        hash(v)
    except TypeError:
        return False
    return True


def resolve_classes(
    classes: Sequence[Any] | None, pos_label: Any, num_classes: int | None, multiclass: bool = False, task: Any = None
) -> tuple[tuple[Any, ...] | None, int | None]:
    """``(classes in index order, num_classes)`` of a collection's or evaluation's arguments.

    ``num_classes`` defaults to ``len(classes)``; ``task`` is the task argument (a kind name, a
    Task or None) for the check that the task is binary or multiclass.

    Raises:
        ValueError: as :func:`check_classes`; ``num_classes`` other than ``len(classes)``;
            ``classes`` for a multilabel or regression task.
    """
    kind = getattr(task, "kind", task)
    if classes is not None and kind not in (None, "binary", "multiclass"):
        raise ValueError(f"classes= applies to binary and multiclass tasks, not {kind}")
    k = len(classes) if classes is not None and not isinstance(classes, (str, bytes)) and hasattr(classes, "__len__") else None
    binary = None if k is None else (k == 2 and not multiclass and kind != "multiclass")
    checked = check_classes(classes, pos_label, binary)
    if checked is None:
        return None, num_classes
    if num_classes is not None and num_classes != len(checked):
        raise ValueError(f"num_classes={num_classes} but classes has {len(checked)} values {list(checked)!r}")
    task_k = getattr(task, "num_classes", None)
    if task_k is not None and task_k != len(checked):
        raise ValueError(f"the task has num_classes={task_k} but classes has {len(checked)} values {list(checked)!r}")
    return checked, len(checked)


def columns_reversed(given: Sequence[Any] | None, checked: tuple[Any, ...] | None) -> bool:
    """True when ``pos_label`` put the user's first class last (:func:`check_classes`): a binary
    score given as two columns (``predict_proba``, in the user's class order) is then read with
    its columns swapped, so that column 1 stays the positive class's."""
    return given is not None and checked is not None and len(checked) == 2 and tuple(given)[0] == checked[1]


def swap_score_columns(v: Any) -> Any:
    """``v`` ((N, 2) scores, a list of two columns' names or rows of two values) with its two
    columns swapped (see :func:`columns_reversed`)."""
    a = np.asarray(v, dtype=np.float64) if not isinstance(v, np.ndarray) else v
    if a.ndim != 2 or a.shape[1] != 2:
        raise ValueError(f"pos_label: two-column binary scores expected, got shape {a.shape}")
    return a[:, ::-1]
