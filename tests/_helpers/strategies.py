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

import decimal as _decimal
import math as _math
from typing import Any, Sequence

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
def multiclass_batches(draw: Any, num_classes: int | None = None, max_size: int = 40, weight_kind: str | None = None, min_size: int = 0) -> dict:
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
    """Columns (as Python lists) for a :class:`mergeable_metrics.Evaluation` with slices ``"g"`` (strings with
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


# -- hostile inputs for the fuzz suite (tests/fuzz) ------------------------------------------------
# A column is drawn as a list of Python *cells* (mostly valid values, a few hostile ones at random
# positions), then wrapped in a *container* (list, numpy array of some dtype, pandas Series, pyarrow
# array). ``wrap`` returns the container and the cells as the library will see them (numpy's and
# pyarrow's conversions applied: float16 rounding, strings from a mixed numpy array, nulls), which
# is what the oracle (tests/fuzz/oracle.py) classifies.
NAN, INF = float("nan"), float("inf")
FLOAT_MAX_INT = 2**1023 * (2 - 2**-52)  # the largest int float() converts

# hostile cells any value column may receive (the oracle classifies them per role)
_HOSTILE_ANY = [None, NAN, INF, -INF, "1", "abc", "", b"0", True, False, 2**64, 2**63 - 1, -(2**63), 2**53 + 1, 1e300, -1e300, 5e-324, -0.0]
# values far beyond float range (float() raises OverflowError) are listed apart: see the
# "NEW-A" exclusion in tests/fuzz/oracle.py
HUGE_INTS = [10**400, -(10**400)]
# nested cells in a plain (N,) column: ragged / mixed with scalars (issue 11 item 14's kin)
NESTED = [[0.5], [0, 1], [], (1,), {"a": 1}]
DECIMALS = [_decimal.Decimal("0"), _decimal.Decimal("1"), _decimal.Decimal("0.25"), _decimal.Decimal("NaN")]

CONTAINERS = ("list", "numpy", "numpy-typed", "pandas", "pandas-nullable", "arrow")
_NUMPY_DTYPES = ("int8", "int64", "uint64", "float16", "float32", "float64", "bool", "object")


@st.composite
def hostile_column(draw: Any, valid: st.SearchStrategy, n: int, hostile: Sequence[Any] = (), max_bad: int = 3) -> list:
    """n cells from ``valid`` with up to ``max_bad`` cells replaced by hostile ones (``_HOSTILE_ANY``,
    Decimals and ``hostile``)."""
    cells = draw(st.lists(valid, min_size=n, max_size=n))
    if n and draw(st.booleans()):
        pool = list(_HOSTILE_ANY) + DECIMALS + list(hostile)
        for _ in range(draw(st.integers(1, max_bad))):
            cells[draw(st.integers(0, n - 1))] = draw(st.sampled_from(pool))
    return cells


def label_cells(k: int) -> st.SearchStrategy:
    """Valid labels in [0, k) as ints, integer-valued floats, and bools (binary)."""
    options = [st.integers(0, k - 1), st.integers(0, k - 1).map(float)]
    if k == 2:
        options.append(st.booleans())
    return st.one_of(*options)


SCORE_CELLS = st.one_of(
    st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0, 0, 1]),
    st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False),
)
WEIGHT_CELLS = st.one_of(st.sampled_from([0, 1, 2, 0.0, 0.5, 3.0]), st.floats(0.0, 1e6, allow_nan=False, allow_infinity=False, allow_subnormal=False))


def _py(v: Any) -> Any:
    """A numpy/pandas/Arrow scalar as the plain Python value (NA and NaT -> None)."""
    if v is None:
        return None
    try:
        import pandas as pd

        if v is pd.NA or v is pd.NaT:
            return None
    except ImportError:  # pragma: no cover
        pass
    return v.item() if isinstance(v, np.generic) else v


def wrap(cells: list, container: str, dtype: str | None = None) -> tuple[Any, list] | None:
    """``(column object, effective cells)`` for ``cells`` in ``container``, or None when that
    container cannot hold them (e.g. int8 for 300, pyarrow for mixed str/int)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            if container == "list":
                return cells, list(cells)
            if container in ("numpy", "numpy-typed"):
                arr = np.asarray(cells) if container == "numpy" else np.asarray(cells, dtype=dtype)
                if arr.ndim != 1 or (
                    container == "numpy-typed" and dtype not in ("object",) and any(v is None or isinstance(v, (str, bytes, _decimal.Decimal)) for v in cells)
                ):
                    return None
                if arr.dtype.kind in "iu" and any(isinstance(v, float) and not _math.isfinite(v) for v in cells):
                    return None
                if dtype in ("int8", "int64", "uint64") and any(isinstance(v, float) and not float(v).is_integer() for v in cells):
                    return None  # numpy truncates 0.5 -> 0: not an input a user would get by accident
                if arr.dtype.kind in "iu" and any(isinstance(v, int) and int(arr[i]) != v for i, v in enumerate(cells)):
                    return None  # wrapped around
                return arr, [_py(v) for v in arr.tolist()] if arr.dtype != object else [_py(v) for v in arr]
            if container in ("pandas", "pandas-nullable"):
                import pandas as pd

                if container == "pandas":
                    s = pd.Series(cells, dtype=object if any(isinstance(v, (list, dict)) for v in cells) else None)
                else:
                    if not all(v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)) for v in cells):
                        return None
                    ints = all(v is None or (isinstance(v, int) and -(2**63) <= v < 2**63) for v in cells)
                    s = pd.Series(cells, dtype="Int64" if ints else "Float64")
                na = s.isna().tolist()  # pandas reads NaN, Decimal('NaN'), NaT, pd.NA as missing
                eff = [None if m else _py(x) for m, x in zip(na, s.astype(object).tolist())]
                return s, eff
            if container == "arrow":
                import pyarrow as pa

                arr = pa.array(cells)
                return arr, arr.to_pylist()
        except (ValueError, TypeError, OverflowError, ArithmeticError, Exception):  # noqa: B014 -- the container refused the cells
            return None
    raise ValueError(f"unknown container {container!r}")


@st.composite
def wrapped(draw: Any, cells: list) -> tuple[Any, list]:
    """``cells`` in a drawn container (falling back to a list when it cannot hold them)."""
    container = draw(st.sampled_from(CONTAINERS))
    dtype = draw(st.sampled_from(_NUMPY_DTYPES)) if container == "numpy-typed" else None
    out = wrap(cells, container, dtype)
    return out if out is not None else (cells, list(cells))


# slice values: one type family per column (distinct values must stay distinct slices)
ODD_STRINGS = [
    "",
    " ",
    "a",
    "A",
    "null",
    "None",
    "nan",
    "NaN",
    "a=b",
    "a,b",
    "a|b",
    "a;b",
    "a:b",
    "a\\b",
    "é",
    "日本",
    "\t",
    "__OTHER__",
    "0",
    "-0",
    "1e3",
    "x" * 40,
]
SLICE_FAMILIES = {
    "str": st.sampled_from(ODD_STRINGS),
    "int": st.sampled_from([0, 1, -1, 7, 2**31, 2**53, 2**53 + 1, 2**63 - 1, -(2**63)]),
    "float": st.sampled_from([0.0, -0.0, 1.5, -2.25, 1e-300, 1e300, 0.1, NAN, 3.0, INF, -INF]),
    "bool": st.booleans(),
}
ODD_COLUMN_NAMES = ["y", "label", "y true", "Score (p)", "w,1", "a=b", "a|b", "é", "日本", "`tick`", "x.y", "__index__", "count", "slice", "n"]


@st.composite
def slice_column(draw: Any, n: int, family: str | None = None) -> tuple[str, list]:
    """``(family, n cells)``: values of one family (str, int, float, bool) with None mixed in."""
    family = family or draw(st.sampled_from(sorted(SLICE_FAMILIES)))
    values = draw(st.lists(SLICE_FAMILIES[family], min_size=1, max_size=4, unique_by=lambda v: repr(v)))
    cells = draw(st.lists(st.sampled_from(values + [None]), min_size=n, max_size=n))
    return family, cells


def split_points(n: int) -> st.SearchStrategy:
    """Sorted cut positions in [0, n] (repeats give empty batches)."""
    return st.lists(st.integers(0, n), max_size=3).map(sorted)


def cut(cells: list, points: Sequence[int]) -> list[list]:
    """``cells`` cut at ``points`` into consecutive (possibly empty) batches."""
    bounds = [0, *points, len(cells)]
    return [cells[a:b] for a, b in zip(bounds, bounds[1:])]


# -- whole tables (engines and the CLI) ------------------------------------------------------------
_ARROW_SLICE_TYPE = {"str": "string", "int": "int64", "float": "double", "bool": "bool"}


@st.composite
def table_cases(draw: Any, max_rows: int = 30) -> dict:
    """A table every engine can hold (one Arrow type per column) with hostile values: labels
    out of range, NaN/inf/null labels and scores, negative/NaN/inf/null weights, a slice column
    of one type family with nulls, odd column names. Returns ``{"n", "k", "multiclass", "label",
    "target", "weight", "slice", "family", "columns": {name: (role, cells, arrow type)},
    "on_invalid"}`` (the slice column's role is ``"slice"``)."""
    multiclass = draw(st.booleans())
    k = draw(st.integers(3, 4)) if multiclass else 2
    n = draw(st.integers(0, max_rows))
    names = draw(st.lists(st.sampled_from(ODD_COLUMN_NAMES), min_size=4, max_size=4, unique=True))
    label, target, weight, gname = names
    weighted = draw(st.booleans())

    def labels(role: str) -> tuple[list, str]:
        if draw(st.booleans()):  # int64 column
            bad = [-1, k, 2**63 - 1, -(2**63), None]
            return draw(hostile_ints(st.integers(0, k - 1), n, bad)), "int64"
        bad = [NAN, INF, -INF, 0.5, 1e300, -1.0, float(k), None]
        return draw(hostile_ints(st.integers(0, k - 1).map(float), n, bad)), "double"

    cols: dict[str, tuple[str, list, str]] = {}
    cells, t = labels("label")
    cols[label] = ("label", cells, t)
    if multiclass:
        cells, t = labels("prediction")
        cols[target] = ("prediction", cells, t)
    else:
        cols[target] = ("score", draw(hostile_ints(st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0, 0.3, 0.9]), n, [NAN, INF, -INF, None, 1e300, -1e300])), "double")
    if weighted:
        cols[weight] = ("weight", draw(hostile_ints(st.sampled_from([0.0, 1.0, 2.0, 0.5, 3.0]), n, [-1.0, NAN, INF, None, -0.0, 1e300])), "double")
    family, g = draw(slice_column(n))
    cols[gname] = ("slice", g, _ARROW_SLICE_TYPE[family])
    return {
        "n": n, "k": k, "multiclass": multiclass, "label": label, "target": target, "weight": weight if weighted else None,
        "slice": gname, "family": family, "columns": cols, "on_invalid": draw(st.sampled_from(["raise", "skip"])),
    }  # fmt: skip


@st.composite
def hostile_ints(draw: Any, valid: st.SearchStrategy, n: int, bad: Sequence[Any]) -> list:
    """n cells from ``valid`` with, half of the time, up to 3 replaced by cells of ``bad`` (values
    of the column's own type)."""
    cells = draw(st.lists(valid, min_size=n, max_size=n))
    if n and draw(st.booleans()):
        for _ in range(draw(st.integers(1, 3))):
            cells[draw(st.integers(0, n - 1))] = draw(st.sampled_from(list(bad)))
    return cells


def arrow_table(case: dict) -> Any:
    """The case's columns as a pyarrow Table (NaN stays NaN, None is null)."""
    import pyarrow as pa

    return pa.table({name: pa.array(cells, type=pa.type_for_alias(t)) for name, (_, cells, t) in case["columns"].items()})
