"""Reading batches: the columns of one batch of any supported kind, and the row counts engines need.

Every engine hands ``core`` batches as a dict of columns (lists/arrays), a pandas DataFrame, a
pyarrow RecordBatch/Table, or a list of row dicts; :func:`extract_columns` reads the named columns
of any of them into numpy arrays (slice columns holding lists into
:class:`~mergeable_metrics.slicing.assign.ListColumn`), and :func:`fold_all` folds a sequence of batches into any
``zero`` / ``fold`` owner (an :class:`~mergeable_metrics.Evaluation`, the slice profiler) with row offsets
counted across batches. :mod:`mergeable_metrics.evaluation.evaluation` re-exports these names.
"""

from __future__ import annotations

from collections.abc import Mapping
from operator import itemgetter
from typing import Any, Iterable, Sequence

import numpy as np

from mergeable_metrics.inputs.validation import as_array
from mergeable_metrics.inputs.formats import as_nd_array
from mergeable_metrics.slicing.assign import read_slice_column


def _available(data: Any) -> list[str]:
    if hasattr(data, "schema") and hasattr(data, "column"):
        return list(data.schema.names)
    if hasattr(data, "columns"):
        return [str(c) for c in data.columns]
    if isinstance(data, Mapping):
        return list(data.keys())
    return []


def extract_columns(
    data: Any,
    names: Sequence[str],
    nd: Iterable[str] = (),
    slice_columns: Iterable[str] = (),
    row_offset: int = 0,
    row_lengths: Mapping[str, int] | None = None,
    keep_nulls: Iterable[str] = (),
) -> tuple[dict[str, np.ndarray], int]:
    """Pull named columns out of one batch as numpy arrays.

    Args:
        data: a dict of columns (lists/arrays), a pandas DataFrame, a pyarrow RecordBatch/Table,
            or a list of row dicts (a missing key in a row is a missing value).
        names: the columns to extract.
        nd: columns whose rows may be vectors or maps (list-valued / fixed-size-list Arrow
            columns, nested lists, 2-D+ arrays); they are read with
            :func:`mergeable_metrics.inputs.formats.as_nd_array` into (n, ...) arrays.
        slice_columns: columns read only for slicing; rows holding lists make them a
            :class:`mergeable_metrics.slicing.assign.ListColumn` (see :func:`mergeable_metrics.slicing.assign.read_slice_column`).
        row_offset: position of the batch's first row in the input (for messages).
        row_lengths: ``{column of nd: the length of each of its rows}`` (``num_outputs`` of
            multioutput regression): a missing row or a list of another length is then marked
            for the format's per-row check (see :class:`mergeable_metrics.inputs.formats.OtherRow`), not an error.
        keep_nulls: value columns whose missing values are kept as given for messages (an
            Arrow null as :data:`mergeable_metrics._util.nulls.NULL`, see :func:`mergeable_metrics.inputs.validation.as_array`); not
            for columns that are also sliced (a missing slice value is None).

    Returns:
        ``({name: (n,) or (n, ...) array, or ListColumn}, n)``.

    Raises:
        ValueError: a column is absent (the message lists the available columns) or columns
            differ in length.
        TypeError: ``data`` is none of the supported kinds.
    """
    nd = set(nd)
    row_lengths = row_lengths or {}
    keep = set(keep_nulls)
    sliced = set(slice_columns) - nd

    def read(values: Any, name: str) -> np.ndarray:
        if name in sliced:
            return read_slice_column(values, name, row_offset)
        if name in nd:
            return as_nd_array(values, name, row_offset, row_lengths.get(name), keep_nulls=name in keep)
        return as_array(values, name, keep_nulls=name in keep)

    if isinstance(data, list):
        if data and not isinstance(data[0], Mapping):
            raise TypeError(f"rows must be dicts, got {type(data[0]).__name__}")
        values, absent = rows_to_columns(data, names)
        if absent:
            raise missing_row_column(next(n for n in names if n in absent), data[0])
        cols = {name: read(values[name], name) for name in names}
        return cols, len(data)
    if hasattr(data, "schema") and hasattr(data, "column"):  # pyarrow RecordBatch / Table
        get = lambda name: data.column(name)  # noqa: E731
    elif isinstance(data, Mapping) or hasattr(data, "columns"):
        get = lambda name: data[name]  # noqa: E731
    else:
        raise TypeError(f"cannot read columns from {type(data).__name__}; pass a dict, DataFrame, Arrow batch or list of rows")
    avail = _available(data)
    cols = {}
    for name in names:
        if name not in avail:
            raise ValueError(f"column {name!r} not found; available columns: {avail}")
        cols[name] = read(get(name), name)
    lengths = {c.shape[0] for c in cols.values()}
    if len(lengths) > 1:
        raise ValueError(f"columns have different lengths: { {k: v.shape[0] for k, v in cols.items()} }")
    n = lengths.pop() if lengths else (data.num_rows if hasattr(data, "num_rows") else len(data))
    return cols, n


def rows_to_columns(rows: Sequence[Mapping], names: Iterable[str], exact_dicts: bool = False) -> tuple[dict[str, list], frozenset]:
    """The values of row dicts, one list per column (a key missing from a row is None), one
    pass per column; and the columns no row holds (:func:`missing_row_column` names them).

    Args:
        rows: row mappings.
        names: the columns to read.
        exact_dicts: every row is exactly a ``dict`` (not a subclass): values are then read
            with ``operator.itemgetter`` (about twice as fast as ``.get``; a subclass's
            ``__missing__`` could answer differently).
    """
    out: dict[str, list] = {}
    absent = []
    keys = rows[0].keys() if rows else ()
    for name in names:
        if exact_dicts and name in keys:
            try:
                out[name] = list(map(itemgetter(name), rows))
                continue
            except KeyError:  # missing from some rows: None there
                pass
        out[name] = [r.get(name) for r in rows]
        if rows and name not in keys and all(name not in r for r in rows):
            absent.append(name)
    return out, frozenset(absent)


def missing_row_column(name: str, first_row: Mapping) -> ValueError:
    """The error for a column no row holds (``first_row``'s keys listed)."""
    return ValueError(f"column {name!r} not found in the rows; available: {sorted(first_row.keys())}")


def num_rows(data: Any) -> int:
    """Number of rows in a batch of any kind :func:`extract_columns` reads."""
    if hasattr(data, "num_rows"):
        return int(data.num_rows)
    if isinstance(data, Mapping):
        return len(next(iter(data.values()))) if data else 0
    return len(data)


def is_single_batch(data: Any) -> bool:
    """True for one table (a dict of columns, a pyarrow Table/RecordBatch, a pandas DataFrame)
    rather than an iterable of batches."""
    return isinstance(data, Mapping) or hasattr(data, "num_rows") or (hasattr(data, "iloc") and hasattr(data, "columns"))


def fold_all(owner: Any, batches: Iterable[Any]) -> Any:
    """``owner.zero()`` with every batch folded in order (``owner.fold(acc, batch, row_offset=)``),
    row offsets counted across batches; for :class:`Evaluation` and the slice profiler."""
    acc = owner.zero()
    offset = 0
    for b in batches:
        owner.fold(acc, b, row_offset=offset)
        offset += num_rows(b)
    return acc
