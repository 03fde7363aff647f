"""Slice keys and slice specs.

A slice key is a tuple of ``(column, value)`` pairs in the spec's column order; the overall slice is
``()``. A spec names one or more columns, crossed when several (``"carrier,origin"``). Missing values
(None, NaN) form their own slice value ``None`` (``null`` in JSON): no row is ever dropped, and
every row always reaches the overall slice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Sequence

import numpy as np

OVERALL: tuple = ()


@dataclass(frozen=True)
class SliceSpec:
    """Columns whose value combinations define slices.

    Attributes:
        columns: non-empty tuple of distinct column names, crossed in this order.
    """

    columns: tuple[str, ...]

    def __post_init__(self) -> None:
        cols = tuple(c.strip() for c in self.columns)
        if not cols or any(not c for c in cols) or len(set(cols)) != len(cols):
            raise ValueError(f"a slice spec needs distinct, non-empty column names; got {self.columns!r}")
        object.__setattr__(self, "columns", cols)

    @classmethod
    def parse(cls, spec: "str | Sequence[str] | SliceSpec") -> "SliceSpec":
        """``"carrier,origin"``, ``["carrier", "origin"]`` or a SliceSpec.

        Raises:
            ValueError: empty or repeated column names.
        """
        if isinstance(spec, SliceSpec):
            return spec
        if isinstance(spec, str):
            return cls(tuple(spec.split(",")))
        return cls(tuple(spec))

    def __str__(self) -> str:
        return ",".join(self.columns)


def parse_slices(specs: Iterable[Any] | str | None) -> tuple[SliceSpec, ...]:
    """Normalise slice specs: None -> (), ``"a,b"`` -> one crossed spec, a list -> one spec each.

    Duplicate specs are kept once.
    """
    if specs is None:
        return ()
    if isinstance(specs, (str, SliceSpec)):
        specs = [specs]
    out: list[SliceSpec] = []
    for s in specs:
        p = SliceSpec.parse(s)
        if p not in out:
            out.append(p)
    return tuple(out)


def native(v: Any) -> Any:
    """A slice value as a plain JSON-able Python value (missing -> None)."""
    if v is None:
        return None
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and v != v:
        return None
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    return v


def _encode_column(values: np.ndarray, column: str) -> tuple[np.ndarray, list[Any]]:
    """Codes (n,) int64 into ``uniques``; missing values get the code ``len(uniques) - 1`` with
    value None (only when present)."""
    n = values.shape[0]
    if values.dtype.kind == "f":
        missing = np.isnan(values)
    elif values.dtype == object:
        missing = np.equal(values, None) | (values != values)
    else:
        missing = np.zeros(n, dtype=bool)
    present = values[~missing] if missing.any() else values
    if present.dtype == object:
        kinds = {type(v) for v in present[:1000]}
        if all(issubclass(k, str) for k in kinds):
            present = present.astype(str)  # vectorised unique on fixed-width unicode
    try:
        uniq, inv = np.unique(present, return_inverse=True)
    except TypeError:
        kinds = sorted({type(v).__name__ for v in present})
        raise TypeError(f"slice column {column!r} mixes value types {kinds}; convert it to one type") from None
    uniques = [native(u) for u in uniq]
    if missing.any():
        codes = np.full(n, len(uniques), dtype=np.int64)
        codes[~missing] = inv.reshape(-1)
        uniques.append(None)
    else:
        codes = inv.reshape(-1).astype(np.int64, copy=False)
    return codes, uniques


def group_rows(spec: SliceSpec, columns: dict[str, np.ndarray]) -> tuple[np.ndarray, list[tuple]]:
    """Assign each row to its slice under ``spec``.

    Args:
        spec: the slice spec.
        columns: name -> (n,) array for at least ``spec.columns``.

    Returns:
        ``(codes, keys)``: (n,) int64 slice index per row, and the slice key of each index.

    Raises:
        TypeError: a slice column mixes incomparable value types.
    """
    codes = None
    keys: list[tuple] = [()]
    for col in spec.columns:
        c, uniq = _encode_column(columns[col], col)
        if codes is None:
            codes, keys = c, [((col, u),) for u in uniq]
        else:
            combined = codes * len(uniq) + c
            used, codes = np.unique(combined, return_inverse=True)
            codes = codes.reshape(-1)
            keys = [keys[int(u) // len(uniq)] + ((col, uniq[int(u) % len(uniq)]),) for u in used]
    assert codes is not None
    return codes, keys


def split_by_code(codes: np.ndarray, num: int) -> list[np.ndarray]:
    """Row indices of each code 0..num-1 (stable order), via one argsort."""
    order = np.argsort(codes, kind="stable")
    bounds = np.cumsum(np.bincount(codes, minlength=num))
    return np.split(order, bounds[:-1])


def slice_name(key: tuple) -> str:
    """Display form: ``"carrier=AA, origin=JFK"``; the overall slice is ``"Overall"``."""
    if not key:
        return "Overall"
    return ", ".join(f"{c}={'null' if v is None else v}" for c, v in key)


def sort_key(key: tuple, spec_order: Sequence[tuple[str, ...]]) -> tuple:
    """Deterministic order: overall first, then by spec order, then by values (None last)."""
    cols = tuple(c for c, _ in key)
    try:
        spec_i = list(spec_order).index(cols)
    except ValueError:
        spec_i = len(spec_order)
    vals = tuple((v is None, type(v).__name__ if v is not None else "", v if v is not None else 0) for _, v in key)
    return (len(key) > 0, spec_i, cols, vals)
