"""The Arrow null of value columns, kept as given so that messages name it.

:func:`mergeable_metrics.inputs.validation.as_array` (``keep_nulls=True``, the value columns of a batch) keeps each
null of an Arrow numeric column as :data:`NULL` in an object array: a message then names the
value given (``column 's': invalid value null at row 3``), not the NaN it would read as. Every
check reads it as a missing value, like None.
"""

from __future__ import annotations

from typing import Any

__all__ = ["NULL", "is_null"]


class _Null:
    """The one Arrow (or JSON) null marker: ``repr`` is ``null``; pickles as itself."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "null"

    def __reduce__(self) -> str:
        return "NULL"


#: The Arrow null of value columns read with ``as_array(..., keep_nulls=True)``.
NULL = _Null()


def is_null(v: Any) -> bool:
    """Whether ``v`` is a missing value given as None or an Arrow null (:data:`NULL`)."""
    return v is None or v is NULL
