"""Column extraction and validation: turn user columns into checked numpy arrays.

Every check is vectorised. A failed check raises ``ValueError`` (bad values) or ``TypeError`` (bad
types) naming the column, the first bad value and its row position, plus how many rows are bad.
With ``on_invalid="skip"`` the same checks return a boolean mask of the rows to skip instead.

The value checks (:func:`check_labels`, :func:`check_finite`, :func:`check_weights`, and
:func:`to_float` for values that are not numbers; a missing value fails the check of its role)
are defined here once, for the plain (N,) path (:func:`plain_batch`) and for every input format
of :mod:`mergeable_metrics.inputs.formats`, which builds on this module (this module never imports it).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import numpy as np

from mergeable_metrics._util.nulls import NULL
from mergeable_metrics._util.limits import MAX_NUM_CLASSES

ON_INVALID = ("raise", "skip")


def as_array(values: Any, column: str, keep_nulls: bool = False) -> np.ndarray:
    """Convert one column to a 1-D numpy array without copying when possible.

    Args:
        values: a list/tuple, numpy array, pandas Series, or pyarrow Array/ChunkedArray.
        column: the column's name, used in error messages.
        keep_nulls: keep each missing value of a numeric column as given, for messages: an
            Arrow null is :data:`NULL` (shown ``null``) and a pandas NA is None, in an object
            array (value columns; only columns holding one). A real NaN stays NaN.

    Returns:
        A 1-D ``np.ndarray``. Missing values (pyarrow nulls, pandas NA, None) become NaN for
        numeric columns and ``None`` in object columns (with ``keep_nulls``: see above).

    Raises:
        TypeError: the input is not array-like or not one-dimensional.
    """
    if isinstance(values, np.ndarray):
        arr = values
    elif hasattr(values, "to_numpy") and hasattr(values, "null_count"):  # pyarrow Array/ChunkedArray
        if keep_nulls and values.null_count and str(values.type).startswith(("int", "uint", "float", "double", "halffloat", "bool", "decimal")):
            arr = values.to_numpy(zero_copy_only=False).astype(object)
            arr[values.is_null().to_numpy(zero_copy_only=False)] = NULL
        elif keep_nulls and values.null_count and str(values.type) == "null":  # only nulls: nothing tells the type
            arr = np.full(len(values), NULL, dtype=object)
        elif values.null_count and str(values.type).startswith(("int", "uint")):
            # exact ints and None (not floats with NaN): a slice value must not depend on
            # whether its batch happens to hold a null
            arr = values.fill_null(0).to_numpy(zero_copy_only=False).astype(object)
            arr[values.is_null().to_numpy(zero_copy_only=False)] = None
        else:
            arr = values.to_numpy(zero_copy_only=False)
    elif hasattr(values, "to_numpy"):  # pandas Series / Index
        dtype = getattr(values, "dtype", None)
        if isinstance(dtype, np.dtype) and dtype.kind != "O":  # plain numpy dtype: keep it
            arr = values.to_numpy()
        elif isinstance(dtype, np.dtype):  # object: strings with None/NaN
            arr = _missing_to_none(values, values.to_numpy(dtype=object))
        elif str(dtype).lower().startswith(("int", "uint")):
            # nullable integers: exact ints, and None for NA, as for Arrow above
            if values.isna().any():  # Series and extension arrays (pd.array) alike
                arr = _missing_to_none(values, values.to_numpy(dtype=object))
            else:
                arr = values.to_numpy(dtype=np.int64)
        elif getattr(dtype, "kind", "O") == "f" and keep_nulls and values.isna().any():  # nullable Float64: None for NA
            arr = _missing_to_none(values, values.to_numpy(dtype=object))
        elif getattr(dtype, "kind", "O") == "f":  # nullable Float64: NaN for NA
            arr = values.to_numpy(dtype=np.float64, na_value=np.nan)
        elif getattr(dtype, "kind", "O") == "b" and not values.isna().any():  # boolean without NA
            arr = values.to_numpy(dtype=np.bool_)
        else:  # boolean with NA, string, category, ...: objects with None, exactly like a list
            arr = _missing_to_none(values, values.to_numpy(dtype=object))
    elif isinstance(values, (list, tuple, range)):
        try:
            arr = np.asarray(values)
        except ValueError:  # lists among scalars, or ragged lists: numpy's "inhomogeneous shape"
            arr = _objects(values)
        else:
            if arr.dtype == object or arr.dtype.kind in "US":
                # text or bytes among numbers: numpy would turn every number into text, and the
                # error would name the first number, not the non-number and its row
                arr = _objects(values)
    elif np.isscalar(values) or values is None:
        raise TypeError(f"column {column!r}: expected a 1-D array-like, got scalar {values!r}")
    else:
        arr = np.asarray(values)
    if arr.ndim != 1:
        raise TypeError(f"column {column!r}: expected a 1-D column, got shape {arr.shape}")
    return arr


def _objects(values: list | tuple) -> np.ndarray:
    """The cells of a list as a 1-D object array, one cell per row (nested lists kept as cells,
    so the value checks name the row that holds one)."""
    arr = np.empty(len(values), dtype=object)
    for i, v in enumerate(values):
        arr[i] = v
    return arr


def _missing_to_none(series: Any, arr: np.ndarray) -> np.ndarray:
    """Replace the pandas-missing entries (None, NaN, pd.NA, NaT) of an object array by None."""
    na = np.asarray(series.isna()) if hasattr(series, "isna") else np.equal(arr, None)
    if na.any():
        arr = arr.copy()
        arr[na] = None
    return arr


def parse_numbers(flat: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Read a 1-D object array of numbers as float64, one value at a time.

    ``None`` is NaN; bools, ints, floats, numpy numbers and :class:`decimal.Decimal` are
    converted. Anything else is *not a number*, strings too (``"1"`` is text, not a label: text
    files are converted by their reader, see ``mergeable_metrics.pipelines.io``); an int too large for float64 is
    *out of range*.

    Returns:
        ``(values, not_a_number, out_of_range)``: the (n,) floats (NaN where a value is bad) and
        the two (n,) boolean masks of bad values.
    """
    n = flat.shape[0]
    out = np.empty(n, dtype=np.float64)
    nan_mask = np.zeros(n, dtype=bool)
    big_mask = np.zeros(n, dtype=bool)
    for i, v in enumerate(flat):
        if v is None or v is NULL:
            out[i] = np.nan
            continue
        try:
            if isinstance(v, (bool, int, float, np.number, np.bool_, Decimal)):
                out[i] = float(v)
                continue
        except OverflowError:
            big_mask[i] = True
        else:
            nan_mask[i] = True
        out[i] = np.nan
    return out, nan_mask, big_mask


def bad_number_message(column: Any, value: Any, row: int, out_of_range: bool, count: int, entry: Any = None) -> str:
    """The message for a value that is not a number (or an int beyond float64), naming the
    column, the value, its row (and entry, in matrices) and how many such values the batch has."""
    shown = repr(value)
    if len(shown) > 60:
        shown = shown[:40] + f"... ({len(shown)} characters)"
    where = f"row {row}" + ("" if entry is None else f", entry {entry}")
    what = "is out of the float64 range" if out_of_range else "is not a number"
    more = f" ({count} such values in this batch)" if count > 1 else ""
    return f"column {column!r}: value {shown} at {where} {what}{more}"


def column_name(column: Any) -> str:
    """A column's name for messages: several per-class columns read as one matrix are joined."""
    return ",".join(column) if isinstance(column, (list, tuple)) else str(column)


def to_float(arr: np.ndarray, column: Any, row_offset: int = 0, checker: "_Checker | None" = None) -> np.ndarray:
    """Convert a column of any rank to float64, turning ``None`` into NaN.

    Object and string columns are read with :func:`parse_numbers` (Decimals are converted;
    strings are not numbers).

    Args:
        arr: the (N,) column, or an (N, ...) matrix or map column.
        column: its name, or the per-class column names of an (N, K) matrix, for messages.
        row_offset: position of the batch's first row in the whole input, for messages.
        checker: with a skip-mode :class:`_Checker`, bad values are flagged as invalid rows (and
            become NaN) instead of raising.

    Raises:
        TypeError: a value is not a number (e.g. a string), naming the column, the first such
            value, its row and (in matrices) its entry, unless ``checker`` skips the row.
        ValueError: an integer too large for float64, likewise.
    """
    if arr.dtype.kind in "fiub":
        return arr.astype(np.float64, copy=False)
    if arr.dtype.kind in "USM" or arr.dtype == object:
        flat = arr.reshape(-1)
        if flat.dtype != object:
            flat = flat.astype(object)
        out, nan_mask, big_mask = parse_numbers(flat)
        bad = nan_mask | big_mask
        if bad.any():
            if checker is not None and checker.skip:
                checker.invalid |= bad if arr.ndim == 1 else bad.reshape(arr.shape[0], -1).any(axis=1)
            else:
                i = int(np.flatnonzero(bad)[0])
                pos = np.unravel_index(i, arr.shape)
                entry: Any = tuple(int(p) for p in pos[1:]) or None
                name = column_name(column)
                if entry is not None and isinstance(column, (list, tuple)) and len(entry) == 1 and entry[0] < len(column):
                    name, entry = column[entry[0]], None  # per-class columns: name the column
                elif entry is not None and len(entry) == 1:
                    entry = entry[0]
                msg = bad_number_message(name, flat[i], row_offset + int(pos[0]), bool(big_mask[i]), int(bad.sum()), entry)
                raise (ValueError if big_mask[i] else TypeError)(msg)
        return out.reshape(arr.shape)
    bad = arr.reshape(-1)[0] if arr.size else arr.dtype
    raise TypeError(f"column {column_name(column)!r}: expected numbers, got dtype {arr.dtype} (e.g. {bad!r})")


class BatchRowError(ValueError):
    """An invalid value a state's fold finds (not the validation: e.g. an error ``|p - y|`` that
    overflows float64), named by its row in the batch as ``row {row} of the batch``; a caller
    that knows where the batch starts names the input row instead (:meth:`at`)."""

    def __init__(self, message: str, row: int) -> None:
        super().__init__(message)
        self.row = row

    def at(self, row_offset: int) -> "BatchRowError":
        """The same error naming the input row (the batch's first row is ``row_offset``)."""
        return BatchRowError(str(self).replace(f"row {self.row} of the batch", f"row {self.row + row_offset}", 1), self.row + row_offset)


@dataclass(frozen=True)
class Batch:
    """A validated batch of examples, all arrays of length ``n``.

    An *element* is one example as the states see it: a row, or one pixel of a segmentation row.

    Attributes:
        y_true: (n,) int64 labels (binary, multiclass), (n, L) int64 0/1 indicators (multilabel),
            (n,) float64 targets (regression; (n, D) with ``num_outputs=D``), or None when only a
            measure is folded.
        y_score: (n,) float64 binary scores, (n, K) float64 class scores (multiclass; rows are
            probabilities for the "probabilities"/"logits" formats), (n, L) label scores
            (multilabel), or None.
        y_pred: (n,) int64 predicted labels, (n, L) int64 0/1 (multilabel), (n,) float64
            predictions (regression; (n, D) with ``num_outputs=D``), or None.
        sample_weight: (n,) float64 non-negative weights, or None (all weights 1).
        values: (n,) float64 per-example measure (mean-of-measure metrics), or None.
        row_of: (n,) int64 input row of each element when elements are not the input rows
            (pixels of label maps, or rows left after ``ignore_index``), else None. Sorted.
        y_score_class0: (n,) float64 scores of class 0 when a binary score was given as two
            columns (N, 2) (``y_score`` then holds column 1), else None. Metrics with
            ``pos_label=0`` rank by it.
        baseline: the same elements read with a baseline model's scores or predictions
            (``Evaluation(baseline_score_col=...)``; labels, weights and ``row_of`` are this
            batch's), or None. :meth:`take` takes the same elements of both.
        query: (n,) int64 query keys (the 64-bit hashes of ``query_col``'s ids, see
            :mod:`mergeable_metrics.metrics.retrieval`), or None.
    """

    y_true: np.ndarray | None
    y_score: np.ndarray | None = None
    y_pred: np.ndarray | None = None
    sample_weight: np.ndarray | None = None
    values: np.ndarray | None = None
    row_of: np.ndarray | None = None
    y_score_class0: np.ndarray | None = None
    baseline: "Batch | None" = None
    query: np.ndarray | None = None
    #: (n,) int64 bootstrap hash bucket of each element (``ci="bootstrap"``; see
    #: :mod:`mergeable_metrics.uncertainty.bootstrap`), or None
    bucket: np.ndarray | None = None
    #: (n,) int64 example ids (``Evaluation(id_col=...)`` for metrics keyed by example, e.g.
    #: ``multilabel_confusion_matrix@samplewise=true``), or None
    ids: np.ndarray | None = None
    #: exact sums the validation already computed (the plain measure column's, whose compiled
    #: pass is its finiteness check too): ``(values, sample_weight, (limbs, exp) of sum values
    #: [x weight], (limbs, exp) of sum weight or None)``; a state uses them only while
    #: ``values`` and ``sample_weight`` are these very arrays (:meth:`take` leaves them behind);
    #: or, for single-output regression, ``("regression_moments", y_true, y_pred, sample_weight,
    #: (weight_raw, (D, exp), max_abs_e))`` (:func:`mergeable_metrics._util.exact_kernels.regression_stacked`)
    sums: Any = None
    #: counts the validation's compiled pass computed while it checked plain (N,) int64 labels
    #: (:func:`mergeable_metrics.inputs.formats.make_batch` with ``count_cells``): ``(key,
    #: y_true, other, sample_weight, counts)``, ``key`` ``("pairs", K)`` (``other`` the
    #: predictions; counts the (K * K,) int64 cell counts or, weighted, the raw ``(limbs, exp)``
    #: of the cells' exact weight sums) or ``("threshold", t, strict)`` (``other`` the scores;
    #: ``(npos, npred, tp)`` or, weighted, the raw sums of tn, fp, fn, tp); a state uses them
    #: only while the batch holds these very arrays (:meth:`take` leaves them behind)
    cells: Any = None

    def cells_for(self, key: tuple, other: np.ndarray | None) -> Any:
        """The precomputed counts of :attr:`cells` for ``key`` over this batch's labels, ``other``
        and weights, or None."""
        c = self.cells
        if c is None or c[0] != key or c[1] is not self.y_true or c[2] is not other or c[3] is not self.sample_weight:
            return None
        return c[4]

    @property
    def n(self) -> int:
        for a in (self.y_true, self.y_pred, self.y_score, self.values, self.sample_weight):
            if a is not None:
                return int(a.shape[0])
        return 0

    def take(self, index: np.ndarray) -> "Batch":
        """Elements at ``index`` (an int array or boolean mask) as a new Batch."""
        pick = lambda a: None if a is None else a[index]  # noqa: E731
        return Batch(
            pick(self.y_true),
            pick(self.y_score),
            pick(self.y_pred),
            pick(self.sample_weight),
            pick(self.values),
            pick(self.row_of),
            pick(self.y_score_class0),
            None if self.baseline is None else self.baseline.take(index),
            pick(self.query),
            pick(self.bucket),
            pick(self.ids),
        )

    def weight_sum(self) -> float:
        return float(self.n) if self.sample_weight is None else float(self.sample_weight.sum())


def invalid_value_message(column: Any, value: Any, row: int, what: str, more: str = "") -> str:
    """``column 'c': invalid value v at row r: <rule><more>``: the error text of an invalid value."""
    return f"column {column!r}: invalid value {value!r} at row {row}: {what}{more}"


def _first_bad(mask: np.ndarray, values: np.ndarray, column: Any, what: str, row_offset: int) -> str:
    if mask.ndim > 1:  # matrices / maps: name the row and the offending entry
        rows = np.flatnonzero(mask.reshape(mask.shape[0], -1).any(axis=1))
        pos = np.unravel_index(int(np.flatnonzero(mask.reshape(-1))[0]), mask.shape)
        i, entry = int(pos[0]), tuple(int(e) for e in pos[1:])
        v = values[pos] if values.shape == mask.shape else values[i]
        v = v.item() if hasattr(v, "item") else v
        more = f" ({rows.size} invalid rows in this batch)" if rows.size > 1 else ""
        if isinstance(column, (list, tuple)) and len(entry) == 1 and entry[0] < len(column):
            where = f"column {column[entry[0]]!r}: invalid value {v!r} at row {row_offset + i}"
        else:
            name = ",".join(column) if isinstance(column, (list, tuple)) else column
            e = entry[0] if len(entry) == 1 else entry
            where = f"column {name!r}: invalid value {v!r} at row {row_offset + i}, entry {e}"
        return f"{where}: {what}{more}"
    idx = np.flatnonzero(mask)
    i = int(idx[0])
    v = values[i]
    if isinstance(v, np.ndarray):  # a whole row of a matrix (row-level check)
        v = np.round(v, 6).tolist() if v.size <= 8 else f"{np.round(v[:8], 6).tolist()[:-1]} ... ({v.size} entries)"
    v = v.item() if hasattr(v, "item") else v
    more = f" ({idx.size} invalid rows in this batch)" if idx.size > 1 else ""
    if isinstance(column, (list, tuple)):
        column = ",".join(column)
    return invalid_value_message(column, v, row_offset + i, what, more)


class _Checker:
    """Collects invalid-row masks (skip mode) or raises at the first failed check (raise mode)."""

    def __init__(self, n: int, on_invalid: str, row_offset: int):
        if on_invalid not in ON_INVALID:
            raise ValueError(f"on_invalid must be one of {ON_INVALID}, got {on_invalid!r}")
        self.skip = on_invalid == "skip"
        self.row_offset = row_offset
        self.invalid = np.zeros(n, dtype=bool) if self.skip else None

    def check(self, bad: np.ndarray, values: np.ndarray, column: Any, what: str) -> None:
        """Flag rows where ``bad`` is True; ``bad`` is (n,) or (n, ...) for per-entry checks of
        matrices and maps (the message then names the row and the entry)."""
        if not bad.any():
            return
        if self.skip:
            self.invalid |= bad if bad.ndim == 1 else bad.reshape(bad.shape[0], -1).any(axis=1)
        else:
            raise ValueError(_first_bad(bad, values, column, what, self.row_offset))

    def flag(self, bad: np.ndarray, message: Any) -> None:
        """Flag the rows where the (n,) ``bad`` is True (skip mode), or raise
        ``ValueError(message(first bad row, count))``."""
        if not bad.any():
            return
        if self.skip:
            self.invalid |= bad
        else:
            raise ValueError(message(int(np.flatnonzero(bad)[0]), int(bad.sum())))


def _valid_labels(arr: np.ndarray, num_classes: int) -> np.ndarray | None:
    """Fast path of :func:`_labels`: the (n,) int64 labels when every value of a bool, integer or
    float column is an integer in [0, num_classes), checked with whole-array reductions and no
    float copy (an int64 column is returned as is). None when some value may be invalid: the
    caller then runs the full check, which names the value and row (or builds the skip mask)."""
    kind = arr.dtype.kind
    if kind == "b":
        return arr.astype(np.int64)
    if arr.shape[0] == 0 or kind not in "iuf":
        return None
    if kind in "iu":
        # as unsigned, a negative value is huge: one max() checks 0 <= v < num_classes
        u = arr if kind == "u" else arr.view(arr.dtype.str.replace("i", "u"))
        return arr.astype(np.int64, copy=False) if u.max() < num_classes else None
    lo, hi = arr.min(), arr.max()  # NaN propagates: both comparisons are then False
    if not (lo >= 0 and hi < num_classes):
        return None
    out = arr.astype(np.int64)
    return out if np.array_equal(out, arr) else None  # integer-valued floats only


def _all_finite(x: np.ndarray) -> bool:
    """Whether every value of a float array is finite, with one reduction and no temporary: NaN
    and inf propagate into the sum (a finite sum that overflows only sends x to the full check)."""
    if x.size == 0:
        return True
    with np.errstate(over="ignore", invalid="ignore"):
        return bool(np.isfinite(np.add.reduce(x, axis=None)))


# -- the value checks: one definition for the plain path and every input format ----------------
#: The rule a score (or any float that must be finite) breaks, as messages state it.
SCORES_FINITE = "scores must be finite (no NaN or inf)"
#: The rule a weight breaks.
WEIGHTS_RULE = "weights must be finite and >= 0"


def label_rule(kind: str, num_classes: int, ignore_index: int | None = None) -> str:
    """The rule a label (``kind``: ``"labels"`` or ``"predictions"``) breaks, as messages state it:
    0 or 1 for two classes, integers in [0, K) otherwise, or ``ignore_index``."""
    what = f"{kind} must be 0 or 1" if num_classes == 2 else f"{kind} must be integers in [0, {num_classes})"
    return what if ignore_index is None else f"{what} or ignore_index {ignore_index}"


def check_labels(
    arr: np.ndarray, column: Any, num_classes: int, chk: "_Checker", kind: str = "labels", ignore_index: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Check class labels of any rank: integers in [0, num_classes) (or ``ignore_index``).

    Missing values (None, NaN) and values that are not numbers are invalid too.

    Args:
        arr: (N,) labels, or (N, ...) label maps.
        column: the column name(s), for messages.
        num_classes: K.
        chk: the batch's checker (raises, or flags the rows in skip mode).
        kind: ``"labels"`` or ``"predictions"``, for messages.
        ignore_index: a label value that is allowed besides [0, K).

    Returns:
        ``(values, bad)``: the float64 values (NaN where not a number) and the mask of invalid
        entries.
    """
    try:
        vals = to_float(arr, column, chk.row_offset, chk)
    except TypeError as e:  # text labels: they need the class list
        raise TypeError(f"{e}; {classes_hint(arr, kind)}") from None
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(vals) | (vals != np.floor(vals)) | (vals < 0) | (vals >= num_classes)
        if ignore_index is not None:
            bad &= vals != ignore_index
    rule = label_rule(kind, num_classes, ignore_index)
    if num_classes == 2 and not chk.skip and bad.any():
        rule += two_class_hint(vals)
    chk.check(bad, arr if arr.dtype == object else vals, column, rule)
    return vals, bad


def two_class_hint(vals: np.ndarray) -> str:
    """The settings that read integer labels the two-class default refuses: ``classes=[a, b]`` for
    two other values, ``task='multiclass', num_classes=K`` for labels 0..K-1; "" otherwise.
    ``vals``: the (float) labels, or their distinct values (the Spark SQL path passes those)."""
    with np.errstate(invalid="ignore"):
        if not (np.isfinite(vals).all() and (vals == np.floor(vals)).all() and np.abs(vals).max() < MAX_NUM_CLASSES):
            return ""  # no plausible class ids
    seen = np.unique(vals).astype(np.int64).tolist()
    if len(seen) == 2:
        return f"; for two classes named {seen[0]} and {seen[1]} pass classes={seen!r} (--classes {seen[0]},{seen[1]})"
    if seen[0] >= 0:
        k = seen[-1] + 1
        return f"; for {k} classes pass task='multiclass', num_classes={k} (--task multiclass --num-classes {k})"
    return ""


def classes_hint(arr: np.ndarray, kind: str = "labels", most: int = 6) -> str:
    """How to read text class values: the ``classes=`` / ``--classes`` setting, listing the
    (first ``most``, sorted) distinct text values of ``arr``."""
    seen = sorted({str(v) for v in np.asarray(arr, dtype=object).reshape(-1)[:10_000] if isinstance(v, (str, np.str_))})
    shown = seen[:most]
    more = ", ..." if len(seen) > most else ""
    return (
        f"{kind} that are class names need the classes in class order: classes={shown!r}{more} "
        f"(--classes {','.join(shown)}{',...' if more else ''}); for two classes the second is the positive one, or the one pos_label= / --pos-label names"
    )


def check_finite(arr: np.ndarray, column: Any, chk: "_Checker", what: str = SCORES_FINITE) -> np.ndarray:
    """Check floats of any rank are finite (no NaN, inf or missing value); the float64 values."""
    vals = to_float(arr, column, chk.row_offset, chk)
    if not _all_finite(vals):
        chk.check(~np.isfinite(vals), arr if arr.dtype == object else vals, column, what)  # a missing value named as given
    return vals


def check_weights(arr: np.ndarray, column: Any, chk: "_Checker") -> np.ndarray:
    """Check (N,) sample weights are finite and >= 0 (no missing value); the float64 weights."""
    w = to_float(arr, column, chk.row_offset, chk)
    if not (w.shape[0] == 0 or (w.min() >= 0 and _all_finite(w))):  # min() is NaN if any is
        with np.errstate(invalid="ignore"):
            bad = ~np.isfinite(w) | (w < 0)
        chk.check(bad, arr if arr.dtype == object else w, column, WEIGHTS_RULE)
    return w


def _labels(arr: np.ndarray, column: str, num_classes: int, chk: _Checker, kind: str) -> np.ndarray:
    """(N,) int64 labels: the whole-array fast path, else :func:`check_labels` (invalid ones 0)."""
    fast = _valid_labels(arr, num_classes)
    if fast is not None:
        return fast
    vals, bad = check_labels(arr, column, num_classes, chk, kind)
    out = np.where(bad, 0, vals) if bad.any() else vals
    return out.astype(np.int64)


def plain_batch(
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
    """Validate (N,) binary/multiclass columns and build a :class:`Batch`: the fast path.

    Every other input (matrices, maps, input formats, other tasks) is read by
    :func:`mergeable_metrics.inputs.formats.build_batch`; :func:`mergeable_metrics.inputs.formats.make_batch` picks the path. Both run the
    same checks (:func:`check_labels`, :func:`check_finite`, :func:`check_weights`), so a bad
    value gets the same message and the same skipping on either path.

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
    yt = as_array(y_true, n_true, keep_nulls=True)
    cols = [(n_true, yt)]
    ys = yp = w = None
    if y_score is not None:
        ys = as_array(y_score, n_score, keep_nulls=True)
        cols.append((n_score, ys))
    if y_pred is not None:
        yp = as_array(y_pred, n_pred, keep_nulls=True)
        cols.append((n_pred, yp))
    if sample_weight is not None:
        w = as_array(sample_weight, n_weight, keep_nulls=True)
        cols.append((n_weight, w))
    n = yt.shape[0]
    for name, col in cols[1:]:
        if col.shape[0] != n:
            raise ValueError(f"column {name!r} has {col.shape[0]} rows but column {n_true!r} has {n} rows")
    chk = _Checker(n, on_invalid, row_offset)
    yt_i = _labels(yt, n_true, num_classes, chk, "labels")
    ys_f = yp_i = w_f = None
    if ys is not None:
        ys_f = check_finite(ys, n_score, chk)
    if yp is not None:
        yp_i = _labels(yp, n_pred, num_classes, chk, "predictions")
    if w is not None:
        w_f = check_weights(w, n_weight, chk)
    batch = Batch(yt_i, ys_f, yp_i, w_f)
    if chk.skip:
        if chk.invalid.any():
            batch = batch.take(~chk.invalid)
        return batch, chk.invalid
    return batch, None
