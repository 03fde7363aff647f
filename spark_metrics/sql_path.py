"""Native Spark SQL aggregation of count and confusion states (no Python on the row path).

When every state of an evaluation's plan is a sum of per-row cells (example counts, binary
confusion counts at thresholds, a K x K confusion matrix), the rows never need to reach Python:
each row maps to one *cell* (its true label and how it is predicted), and Spark's own
hash aggregation sums rows per (slice, cell) with partial aggregation before the shuffle. One
job reads each row once and computes every slice spec::

    finest = df.select(label, score | prediction, weight, slice columns)
      .select(cell = label * C + predicted cell  (or a negative code for an invalid value),
              weight, slice columns, first-invalid-row id)
      .groupBy(every slice column, cell)
      .agg(count, sum(weight), min(invalid row id), min_by(invalid value, id))
    finest.groupingSets([[cell], [spec 1 columns, cell], ...])      # over the few finest rows
      .agg(grouping_id, sums, min, min_by)
      .groupBy(grouping_id, slice columns)
      .applyInArrow(cells of one slice -> core states -> core metric rows)

Every row lies in exactly one slice of a plain spec (no filters; missing values are a slice), so
re-aggregating the finest groups gives each spec's sums.

The Python step sees a handful of rows per slice (at most ``2 (T + 1)`` binary cells or ``K^2``
multiclass cells) and core builds the states from them (:func:`mergeable_metrics.states.base.states_from_cells`:
each state kind's cells summed from the joint cells and built by the kind's own
``State.from_cells``, the definition core's slice-vectorised fold uses), so unweighted (and
integer-weighted) results equal the Arrow path's bit for bit; the rules and texts of the
invalid-value errors are core's too (``mergeable_metrics.inputs.validation.label_rule``, ``SCORES_FINITE``, ...).
Fractional weights are summed by Spark in float64 in its own order (equal up to float64 rounding), so a weighted evaluation takes the Arrow path (exact
sums, :mod:`mergeable_metrics._util.exact`) unless ``native=True`` asks for this one.
Invalid values raise the same ``ValueError`` text as the Arrow path (column, value, row within
the partition, partition id) when the results are computed.

Cells (binary, thresholds ``t_1 < ... < t_T``): ``y * (T + 1) + k`` with ``k`` the number of
thresholds the score passes (``score >= t``, or ``>``). Multiclass: ``y * K + prediction``.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from mergeable_metrics.engine import SCORES_FINITE, WEIGHTS_RULE, invalid_value_message, label_rule, two_class_hint
from mergeable_metrics.engine import MAX_NUM_CLASSES, NULL
from mergeable_metrics.engine import Evaluation, extract_columns
from mergeable_metrics.engine import UndefinedMetricWarning
from mergeable_metrics.engine import Results
from mergeable_metrics.engine import OVERALL, assign_slices
from mergeable_metrics.engine import CELL_STATES, BinaryConfusionState, states_from_cells
from mergeable_metrics.spark._frames import ResultLayout, partition_note, quote

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa
    from pyspark.sql import DataFrame

#: Invalid-value codes of the cell column, in the order the Arrow path checks the columns.
_BAD_LABEL, _BAD_SCORE, _BAD_PREDICTION, _BAD_WEIGHT = -1, -2, -3, -4
#: The cell of the zero row that makes an empty input still report the overall slice.
_ZERO = -100
#: Two-class plans (compute_native): an invalid label that may be a class id (an integer v with
#: |v| < MAX_NUM_CLASSES) has its own cell ``_LABEL_BASE - (v + MAX_NUM_CLASSES)``, so the overall
#: slice's cells hold every distinct label and the error gets core's hint (``two_class_hint``:
#: ``classes=[1, 2]``, ``num_classes=3``); other invalid labels keep ``_BAD_LABEL``.
_LABEL_BASE = -1000
#: Largest K lowered (K^2 cells per slice); larger matrices take the Arrow path.
MAX_NATIVE_CLASSES = 256


def lowering_blocker(df: "DataFrame", evaluation: Evaluation) -> str | None:
    """Why ``evaluation`` cannot run as native Spark SQL aggregates on ``df``, or None if it can.

    It can when: every state is an example count, binary confusion or confusion matrix (no ROC
    AUC, calibration, regression, ...); labels and scores or predictions are plain (N,) columns
    (no input formats, ``ignore_index``, ``classes`` or score matrices; multiclass needs a
    prediction column);
    ``on_invalid="raise"``; at most 256 classes; and every slice spec is plain columns (no
    filters, buckets, ``max_slices``, spec-level ``min_slice_size``) of string, integer or boolean
    type (dates and decimals are sliced as strings), with distinct column sets.
    """

    if getattr(evaluation, "classes", None) is not None:
        return "classes= (label values are mapped to class indices on the Arrow path)"
    if getattr(evaluation, "_buckets", None) is not None:
        return 'ci="bootstrap" (every slice\'s states per hash bucket: the Arrow path folds them)'
    plan = evaluation.plan
    if getattr(evaluation, "paired", False):
        return "a baseline model (both models are folded on the Arrow path)"
    bad_states = [cls.kind for cls, _ in plan.state_types if cls not in CELL_STATES]
    if bad_states:
        return f"states {bad_states} are not sums of per-row cells"
    if not getattr(evaluation, "_plain", False):
        return "inputs need core's input formats (score matrices, one-hot, ignore_index, ...)"
    if evaluation.on_invalid != "raise":
        return 'on_invalid="skip" (skipped rows are counted per slice by the Arrow path)'
    task = plan.task
    if task.kind == "multiclass" and evaluation.prediction_col is None:
        return "a multiclass plan without a prediction column"
    if task.num_classes > MAX_NATIVE_CLASSES:
        return f"{task.num_classes} classes (more than {MAX_NATIVE_CLASSES})"
    return slices_blocker(df, evaluation)


def slices_blocker(df: "DataFrame", evaluation: Evaluation) -> str | None:
    """Why the slice specs cannot be Spark ``GROUP BY`` keys (plain columns of atomic types, distinct
    column sets, no filters, buckets or bounds), or None."""
    from pyspark.sql import types as T

    types = {f.name: f.dataType for f in df.schema.fields}
    seen: set[frozenset] = set()
    for spec in evaluation.slices:
        if spec.filters or spec.edges or spec.quantiles or spec.max_slices is not None or spec.min_slice_size is not None:
            return f"slice spec {str(spec)!r} has filters, buckets or bounds"
        cols = frozenset(spec.columns)
        if cols in seen:
            return f"two slice specs over the columns {sorted(cols)}"
        seen.add(cols)
        for c in spec.columns:
            dt = types.get(c)
            atomic_ok = isinstance(dt, (T.StringType, T.IntegralType, T.BooleanType, T.DecimalType, T.DateType, T.TimestampType))
            if not atomic_ok:
                return f"slice column {c!r} has Spark type {dt.simpleString() if dt is not None else '?'}"
    return None


def _in_range(col: Any, k: int) -> Any:
    """``0 <= col < k`` (False for null and NaN)."""
    from pyspark.sql import functions as F

    return F.coalesce((col >= 0) & (col < k) & ~F.isnan(col), F.lit(False))


def _safe(col: Any, k: int) -> Any:
    """``col`` where it is in ``[0, k)``, else 0.0: floor() and casts to long overflow (ANSI
    ``ARITHMETIC_OVERFLOW``) on +-inf, 1e300 or 2**63, and Spark may evaluate them for every row
    (common subexpressions are hoisted out of CASE WHEN), so they only ever see in-range values."""
    from pyspark.sql import functions as F

    return F.when(_in_range(col, k), col).otherwise(F.lit(0.0))


def _invalid_label(col: Any, k: int) -> Any:
    from pyspark.sql import functions as F

    return ~_in_range(col, k) | (col != F.floor(_safe(col, k)))


def _not_finite(col: Any) -> Any:
    from pyspark.sql import functions as F

    return col.isNull() | F.isnan(col) | (F.abs(col) == float("inf"))


def _cell_columns(evaluation: Evaluation, text: list | None = None) -> tuple[Any, Any, Any, int]:
    """``(cell, weight, bad value, cells per label)`` column expressions for the selected input.

    With a list ``text`` (metric_columns: the input's types are not known), the value columns are
    read with ``try_cast``: a value that does not cast is a null there, so its check fails, and
    ``text`` gets one string column, the first failing check's value as text where it did not
    cast (else null), for the message (Spark's own cast error names no column of the user's)."""
    from pyspark.sql import functions as F

    plan, ev = evaluation.plan, evaluation
    k = plan.task.num_classes
    raws: dict[int, Any] = {}

    def num(name: str) -> Any:
        if text is None:
            return F.col(quote(name)).cast("double")
        value = F.col(quote(name)).try_cast("double")
        raws[id(value)] = F.when(F.col(quote(name)).isNotNull() & value.isNull(), F.col(quote(name)).cast("string"))
        return value

    label = num(ev.label_col)
    score_name = ev.score_col or ev.prediction_col
    checks = [(_invalid_label(label, k), _BAD_LABEL, label)]
    if plan.task.kind == "multiclass":
        pred = num(ev.prediction_col)
        checks.append((_invalid_label(pred, k), _BAD_PREDICTION, pred))
        per_label, predicted = k, _safe(pred, k).cast("long")
    elif score_name is None:  # labels only (e.g. example_count): one cell per label
        per_label, predicted = 1, F.lit(0).cast("long")
    else:
        layout = next((lay for cls, lay in plan.state_types if cls is BinaryConfusionState), None)
        score = num(score_name)
        if ev.score_col is not None:
            checks.append((_not_finite(score), _BAD_SCORE, score))
        else:
            checks.append((_invalid_label(score, k), _BAD_PREDICTION, score))
        thresholds = layout.thresholds if layout is not None else ()
        passed = [(score >= t) if layout.threshold_rule == ">=" else (score > t) for t in thresholds]
        predicted = sum((p.cast("long") for p in passed), F.lit(0).cast("long")) if passed else F.lit(0).cast("long")
        per_label = len(thresholds) + 1
    weight = num(ev.weight_col) if ev.weight_col else None
    if weight is not None:
        checks.append((_not_finite(weight) | (weight < 0), _BAD_WEIGHT, weight))
    cell = _safe(label, k).cast("long") * per_label + predicted
    bad = F.lit(None).cast("double")
    bad_text = F.lit(None).cast("string")
    for cond, code, value in reversed(checks):  # the first failing check wins
        cell = F.when(cond, F.lit(code).cast("long")).otherwise(cell)
        bad = F.when(cond, value).otherwise(bad)
        bad_text = F.when(cond, raws.get(id(value), F.lit(None).cast("string"))).otherwise(bad_text)
    if text is not None:
        text.append(bad_text)
    return cell, (weight if weight is not None else F.lit(1.0)), bad, per_label


def compute_native(df: "DataFrame", exprs: list, evaluation: Evaluation, layout: ResultLayout) -> "DataFrame":
    """The native-aggregation job of :func:`mergeable_metrics.spark.compute_metrics` (lazy, like it).

    Args:
        df: the input DataFrame.
        exprs: the checked select expressions of ``evaluation.columns`` (compute_metrics').
        evaluation: an evaluation for which :func:`lowering_blocker` is None.
        layout: the result rows' layout (wide or long, as the Arrow path's).

    Returns:
        The result DataFrame (the same rows as the Arrow path).
    """
    from pyspark.sql import functions as F

    cell, weight, bad, per_label = _cell_columns(evaluation)
    if evaluation.plan.task.num_classes == 2:
        cell = _label_value_cells(cell, F.col(quote(evaluation.label_col)).cast("double"))
    slice_cols = list(dict.fromkeys(c for spec in evaluation.slices for c in spec.columns))
    names = [f"__s{i}" for i in range(len(slice_cols))]  # internal names: no clash with "__cell" etc.
    rename = dict(zip(slice_cols, names))
    # the row id is its own column first (inside CASE WHEN, Spark would number only the rows it
    # evaluates): partition id in the upper 31 bits, row within the partition below. The first
    # select reads the user's columns and writes only internal names, so no user column (say one
    # called "__rid") is shadowed
    base = (
        df.select(*exprs)
        .select(
            *[F.col(quote(c)).alias(rename[c]) for c in slice_cols],
            cell.alias("__cell"),
            weight.alias("__w"),
            bad.alias("__bad"),
            F.monotonically_increasing_id().alias("__rid"),
        )
        .select(*names, "__cell", "__w", "__bad", F.when(F.col("__cell") < 0, F.col("__rid")).alias("__id"))
    )
    # one aggregation of the raw rows by every slice column (no Expand of the rows: each row is
    # read and shuffled once), then GROUPING SETS over those few rows give the overall slice and
    # every spec: each row lies in exactly one slice of a plain spec, so the sums are the same
    finest = base.groupBy(*names, "__cell").agg(
        F.count(F.lit(1)).alias("__n"),
        F.sum("__w").alias("__wsum"),
        F.min("__id").alias("__bad_id"),
        F.min_by("__bad", "__id").alias("__bad_value"),
    )
    group_cols = names + ["__cell"]
    overall_gid = _gid(group_cols, frozenset(["__cell"]))
    specs = [()] + [tuple(spec.columns) for spec in evaluation.slices]
    if not names:  # no slices: the finest groups are the overall slice's cells
        agg = finest.select("__cell", F.lit(overall_gid).cast("long").alias("__gid"), "__n", "__wsum", "__bad_id", "__bad_value")
        zero = df.sparkSession.createDataFrame([(_ZERO, overall_gid, 0, 0.0, None, None)], agg.schema)
        merge = _merge_cells_fn(evaluation, {overall_gid: ()}, {}, per_label, layout, _null_is_none(df))
        return agg.unionByName(zero).groupBy("__gid").applyInArrow(merge, layout.spark_schema())
    sets = [[rename[c] for c in cols] + ["__cell"] for cols in specs]
    gids = {_gid(group_cols, frozenset(st)): cols for st, cols in zip(sets, specs)}
    agg = finest.groupingSets(sets, *group_cols).agg(
        F.grouping_id().alias("__gid"),
        F.sum("__n").alias("__n"),
        F.sum("__wsum").alias("__wsum"),
        F.min("__bad_id").alias("__bad_id"),
        F.min_by("__bad_value", "__bad_id").alias("__bad_value"),
    )
    zero = df.sparkSession.createDataFrame([tuple([None] * len(names)) + (_ZERO, overall_gid, 0, 0.0, None, None)], agg.schema)
    merge = _merge_cells_fn(evaluation, gids, dict(zip(names, slice_cols)), per_label, layout, _null_is_none(df))
    return agg.unionByName(zero).groupBy("__gid", *names).applyInArrow(merge, layout.spark_schema())


def _label_value_cells(cell: Any, label: Any) -> Any:
    """``cell`` with each invalid label that may be a class id in its own cell (see
    :data:`_LABEL_BASE`); the value goes through :func:`_safe` first, so no cast overflows."""
    from pyspark.sql import functions as F

    shifted = label + F.lit(float(MAX_NUM_CLASSES))
    safe = _safe(shifted, 2 * MAX_NUM_CLASSES)
    class_id = _in_range(shifted, 2 * MAX_NUM_CLASSES) & (shifted > 0) & (safe == F.floor(safe))
    return F.when((cell == _BAD_LABEL) & class_id, F.lit(_LABEL_BASE).cast("long") - F.floor(safe).cast("long")).otherwise(cell)


def _check_codes(cells: np.ndarray) -> np.ndarray:
    """The invalid-value code of each cell: label-value cells (:data:`_LABEL_BASE`) are ``_BAD_LABEL``."""
    return np.where(cells <= _LABEL_BASE, _BAD_LABEL, cells)


def _labels_hint(cells: np.ndarray, per_label: int) -> str:
    """Core's ``two_class_hint`` of the overall slice's labels: its valid cells' labels and the
    label-value cells' values; "" when some invalid label is no class id (a ``_BAD_LABEL`` cell)."""
    if (cells == _BAD_LABEL).any():
        return ""
    valid = cells[(cells >= 0)] // per_label
    named = (_LABEL_BASE - cells[cells <= _LABEL_BASE]) - MAX_NUM_CLASSES
    return two_class_hint(np.unique(np.concatenate([valid, named])).astype(np.float64))


def _gid(columns: list[str], present: frozenset) -> int:
    """Spark's ``grouping_id()``: bit ``i`` (from the left) is 1 when ``columns[i]`` is not grouped."""
    return sum(1 << (len(columns) - 1 - i) for i, c in enumerate(columns) if c not in present)


def _null_is_none(df: "DataFrame") -> frozenset:
    """Integer and boolean columns: a null in them reads as None (not NaN) on the Arrow path."""
    from pyspark.sql import types as T

    return frozenset(f.name for f in df.schema.fields if isinstance(f.dataType, (T.IntegralType, T.BooleanType)))


def _merge_cells_fn(
    evaluation: Evaluation,
    gids: dict[int, tuple],
    original: dict[str, str],
    per_label: int,
    layout: ResultLayout,
    null_is_none: frozenset,
) -> Callable[["pa.Table"], "pa.Table"]:
    """The grouped ``applyInArrow`` function: one slice's cells -> its metric rows."""
    plan = evaluation.plan
    ev = evaluation
    weighted = ev.weight_col is not None
    by_name = {spec_cols: spec for spec_cols, spec in ((tuple(s.columns), s) for s in evaluation.slices)}

    def merge(table: "pa.Table") -> "pa.Table":
        gid = table.column("__gid")[0].as_py()
        cols = gids[gid]
        cells = np.asarray(table.column("__cell").to_numpy(zero_copy_only=False), dtype=np.int64)
        invalid = (cells < 0) & (cells != _ZERO)
        if invalid.any() and not cols:  # every row is in the overall slice: it reports the error
            _raise_invalid(table, invalid, ev, null_is_none, per_label)
        keep = cells >= 0
        cells = cells[keep]
        n = np.asarray(table.column("__n").to_numpy(zero_copy_only=False), dtype=np.int64)[keep]
        wsum = np.asarray(table.column("__wsum").to_numpy(zero_copy_only=False), dtype=np.float64)[keep]
        if cols:
            data = {c: table.column(name) for name, c in original.items() if c in cols}
            sliced, rows = extract_columns(data, list(cols), slice_columns=cols)
            key = assign_slices(by_name[cols], sliced, rows).keys[0]
        else:
            key = OVERALL
        states = states_from_cells(plan.state_types, cells, n, wsum if weighted else None, per_label)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            result = evaluation.finish({key: states}, add_overall=False)[key]
        return layout.table(Results([result]).to_rows())

    return merge


def _raise_invalid(table: "pa.Table", invalid: np.ndarray, ev: Evaluation, null_is_none: frozenset, per_label: int = 1) -> None:
    """The Arrow path's error: the columns are checked in its order (labels, scores, predictions,
    weights), and within the first column that has an invalid value, the first such row (lowest
    partition, then row)."""
    cells = np.asarray(table.column("__cell").to_numpy(zero_copy_only=False), dtype=np.int64)
    codes = _check_codes(cells)
    code = max(int(c) for c in codes[invalid])  # -1 (labels) first, then -2, -3, -4
    mine = np.flatnonzero(codes == code)
    ids = np.asarray(table.column("__bad_id").to_numpy(zero_copy_only=False))[mine]
    j = int(mine[int(np.argmin(ids))])
    row_id = int(table.column("__bad_id")[j].as_py())
    count = int(np.asarray(table.column("__n").to_numpy(zero_copy_only=False))[mine].sum())
    value = table.column("__bad_value")[j].as_py()
    k = ev.plan.task.num_classes
    column, what = {
        _BAD_LABEL: (ev.label_col, label_rule("labels", k)),
        _BAD_SCORE: (ev.score_col, SCORES_FINITE),
        _BAD_PREDICTION: (ev.score_col or ev.prediction_col, label_rule("predictions", k)),
        _BAD_WEIGHT: (ev.weight_col, WEIGHTS_RULE),
    }[code]
    if value is None:  # a null: named null where the Arrow path keeps it (value columns not sliced), else as numpy reads it
        value = NULL if column in ev.keep_nulls else None if column in null_is_none else float("nan")
    partition, row = row_id >> 33, row_id & ((1 << 33) - 1)  # monotonically_increasing_id's layout
    more = f" ({count} invalid rows)" if count > 1 else ""
    if code == _BAD_LABEL and k == 2:
        what += _labels_hint(cells, per_label)
    raise ValueError(invalid_value_message(column, value, row, what, more) + " " + partition_note(partition))
