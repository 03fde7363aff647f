"""The Spark adapter's shared plumbing (a leaf: every other module of the adapter reads it).

* the result columns and their Spark / Arrow schemas (:func:`result_schema`);
* the checked input columns (:func:`prepare_columns`: missing or mistyped columns are named on the
  driver, before a job runs) and column quoting (:func:`quote`);
* the Arrow input of ``mapInArrow`` (:func:`arrow_input`) and the partition fold
  (:func:`fold_partition_batches`, :func:`fold_partition_fn`: one accumulator per partition, one
  row of encoded states per slice), whose errors name the Spark partition (:func:`partition_note`).

pyspark is imported inside the functions, so importing this module needs no JVM.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator

import numpy as np

from mergeable_metrics.engine import slice_key_to_json, slice_from_json
from mergeable_metrics.engine import Evaluation
from mergeable_metrics.engine import UndefinedMetricWarning
from mergeable_metrics.engine import ROW_COLUMNS, SUPPRESSED_SLICES, WINDOW_COLUMNS
from mergeable_metrics.engine import OVERALL
from mergeable_metrics.spark.aggregator import MetricsAggregator

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa
    from pyspark.sql import DataFrame

#: Columns of the long result DataFrame (``layout="long"``), in order: the keys of
#: :meth:`mergeable_metrics.Results.to_rows` (``slice``: the JSON object ``metrics.json`` writes,
#: :func:`mergeable_metrics.engine.slice_to_json`).
RESULT_COLUMNS = tuple(ROW_COLUMNS)
#: The columns of a long row that belong to one metric (cell); in the wide layout each is a column
#: of the metric (``value`` under the metric's key, the others as ``"<key>:<field>"``).
METRIC_FIELDS = tuple(ROW_COLUMNS[6:])
#: The result layouts of :func:`mergeable_metrics.spark.compute_metrics`.
LAYOUTS = ("wide", "long")

# Spark SQL / Arrow type of every long-format column core may emit
_COLUMN_TYPES = {
    "slice": "string",
    "n": "bigint",
    "weight": "double",
    "skipped": "bigint",
    "metric": "string",
    "index": "string",
    "value": "double",
    "lower": "double",
    "upper": "double",
    "ci_lower": "double",
    "ci_upper": "double",
    "baseline_value": "double",
    "delta": "double",
    "delta_lower": "double",
    "delta_upper": "double",
    "verdict": "string",
    "comparison_reason": "string",
}


def column_types() -> list[tuple[str, str]]:
    """``(column, type)`` of the long layout (types ``string`` / ``bigint`` / ``double``)."""
    unknown = [c for c in ROW_COLUMNS if c not in _COLUMN_TYPES]
    if unknown:  # core added a long-format column this adapter does not know yet
        raise RuntimeError(
            f"mergeable_metrics.spark has no Spark type for core result column(s) {unknown}; update _COLUMN_TYPES in mergeable_metrics.spark._frames"
        )
    return [(c, _COLUMN_TYPES[c]) for c in RESULT_COLUMNS]


def _spark_type(t: str | tuple) -> Any:
    from pyspark.sql import types as T

    if isinstance(t, tuple):  # ("array", ndim, element type)
        out = _spark_type(t[2])
        for _ in range(t[1]):
            out = T.ArrayType(out)
        return out
    return {"string": T.StringType(), "bigint": T.LongType(), "double": T.DoubleType(), "timestamp": T.TimestampType()}[t]


def _arrow_type(t: str | tuple) -> Any:
    import pyarrow as pa

    if isinstance(t, tuple):
        out = _arrow_type(t[2])
        for _ in range(t[1]):
            out = pa.list_(out)
        return out
    return {"string": pa.string(), "bigint": pa.int64(), "double": pa.float64(), "timestamp": pa.timestamp("us", tz="UTC")}[t]


def result_schema(evaluation: Evaluation | None = None, *, layout: str = "long", windowed: bool = False):
    """The ``pyspark.sql.types.StructType`` of :func:`~mergeable_metrics.spark.compute_metrics`'
    results: ``layout="long"`` (``RESULT_COLUMNS``; no evaluation needed) or ``"wide"`` (one
    column per metric of ``evaluation``, see :class:`ResultLayout`)."""
    return ResultLayout(evaluation, layout=layout, windowed=windowed).spark_schema()


def states_schema():
    """``slice_key string, states binary``: the partition fold's rows (:func:`fold_partition_fn`)."""
    from pyspark.sql import types as T

    return T.StructType([T.StructField("slice_key", T.StringType()), T.StructField("states", T.BinaryType())])


def _zero_rows(evaluation: Evaluation) -> tuple[dict[str, int], list[dict[str, Any]]]:
    """``({metric key: ndim}, long rows)`` of an empty overall slice: every metric's key, number
    of dimensions and fields (an array may have no cells there, e.g. a curve); computed, not
    suppressed: neither ``min_slice_size`` nor slice specs (their own sizes) are in the shallow
    copy that finishes it."""
    import copy

    from mergeable_metrics.engine import Results

    evaluation = copy.copy(evaluation)
    evaluation.min_slice_size = None
    evaluation.slices = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        result = evaluation.finish({OVERALL: evaluation.plan.zero()}, add_overall=False)[OVERALL]
    return {k: int(np.ndim(v)) for k, v in result.metrics.items()}, Results([result]).to_rows()


class ResultLayout:
    """The columns of :func:`~mergeable_metrics.spark.compute_metrics`' result rows.

    ``layout="wide"`` (default there): one row per slice: ``slice`` (JSON object, ``{}`` overall),
    [``window_start``, ``window_end``], ``n``, ``weight``, ``skipped``, then a column per metric
    under its key (double; ``array<double>`` / ``array<array<double>>`` for per-class values and
    matrices), then, when the evaluation computes them, ``"<key>:<field>"`` columns for the
    intervals (``ci_lower``, ``ci_upper``), certified bounds (``lower``, ``upper``: of scalar metrics
    when a state may compress, e.g. the score distribution of ``roc_auc``) and the
    comparison with a baseline (``baseline_value``, ``delta``, ..., ``verdict``), and
    ``suppressed_slices`` when slices may be suppressed (``min_slice_size``).
    ``layout="long"``: one row per slice and metric (cell), columns ``RESULT_COLUMNS``.

    Built on the driver (the wide columns come from the metrics of an empty slice) and shipped to
    the executors, which turn each slice's rows (:meth:`mergeable_metrics.Results.to_rows`) into
    result rows (:meth:`rows`); :meth:`core_rows` turns collected rows back.
    """

    def __init__(self, evaluation: Evaluation | None, *, layout: str = "wide", windowed: bool = False):
        if layout not in LAYOUTS:
            raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
        if layout == "wide" and evaluation is None:
            raise ValueError('layout="wide" needs the evaluation (its metrics are the columns)')
        self.wide, self.windowed = layout == "wide", windowed
        #: wide: ``(key, ndim, fields)`` of each metric, in the evaluation's order
        self.metrics: list[tuple[str, int, tuple[str, ...]]] = []
        self.suppression = self.wide and getattr(evaluation, "min_slice_size", None) is not None
        if self.wide:
            ndims, rows = _zero_rows(evaluation)
            fields: dict[str, list] = {k: [ndim, set()] for k, ndim in ndims.items()}
            for r in rows:
                fields[r["metric"]][1].update(f for f in METRIC_FIELDS[1:] if r.get(f) is not None)
            ci = getattr(getattr(evaluation, "ci", None), "method", None) is not None
            paired = bool(getattr(evaluation, "paired", False))
            # a state that may compress (a capacity) gives certified bounds once the data exceeds it
            bounded = any(getattr(lay, "capacity", None) is not None for _, lay in evaluation.plan.state_types)
            for key, (ndim, seen) in fields.items():
                want = set(seen) | ({"ci_lower", "ci_upper"} if ci else set()) | (set(METRIC_FIELDS[5:]) if paired else set())
                if ndim == 0 and bounded:
                    want |= {"lower", "upper"}
                self.metrics.append((key, ndim, tuple(f for f in METRIC_FIELDS if f == "value" or f in want)))

    def columns(self) -> list[tuple[str, Any]]:
        """``(column, type)``: ``string``, ``bigint``, ``double``, ``timestamp`` or ``("array", ndim, type)``."""
        head = [("slice", "string")] + [(c, "timestamp") for c in (WINDOW_COLUMNS if self.windowed else ())]
        if not self.wide:
            return head + column_types()[1:]
        cols = head + [("n", "bigint"), ("weight", "double"), ("skipped", "bigint")]
        for key, ndim, fields in self.metrics:
            for f in fields:
                t = _COLUMN_TYPES[f]
                cols.append((key if f == "value" else f"{key}:{f}", t if ndim == 0 else ("array", ndim, t)))
        return cols + ([(SUPPRESSED_SLICES, "bigint")] if self.suppression else [])

    def spark_schema(self):
        from pyspark.sql import types as T

        return T.StructType([T.StructField(c, _spark_type(t)) for c, t in self.columns()])

    def arrow_schema(self) -> "pa.Schema":
        import pyarrow as pa

        return pa.schema([(c, _arrow_type(t)) for c, t in self.columns()])

    def rows(self, core_rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
        """Result rows of core's long rows (:meth:`mergeable_metrics.Results.to_rows`)."""
        out: list[dict[str, Any]] = []
        wide: dict[str, dict[str, Any]] = {}
        for r in core_rows:
            row = dict(r)
            if not self.wide:
                out.append(row)
                continue
            at = (row["slice"], row.get("window_start"))
            if at not in wide:
                wide[at] = w = {c: row.get(c) for c in ("slice", *(WINDOW_COLUMNS if self.windowed else ()), "n", "weight", "skipped")}
                if self.suppression:
                    w[SUPPRESSED_SLICES] = None
                out.append(w)
            w = wide[at]
            if row["n"] is None:  # a suppressed slice's marker row
                if row["metric"] == SUPPRESSED_SLICES:
                    w[SUPPRESSED_SLICES] = int(row["value"])
                continue
            self._put(w, row)
        return out

    def _put(self, w: dict[str, Any], row: dict[str, Any]) -> None:
        key = row["metric"]
        spec = next((m for m in self.metrics if m[0] == key), None)
        if spec is None:
            raise RuntimeError(
                f'metric {key!r} has no column in the wide layout (columns from an empty slice: {[m[0] for m in self.metrics]}); use layout="long"'
            )
        _, ndim, fields = spec
        extra = [f for f in METRIC_FIELDS if f not in fields and row.get(f) is not None]
        if extra:
            raise RuntimeError(f'metric {key!r} has {extra} that the wide layout has no column for; use layout="long"')
        for f in fields:
            col = key if f == "value" else f"{key}:{f}"
            if ndim == 0:
                w[col] = row.get(f)
            else:
                idx = tuple(int(i) for i in str(row["index"]).split(","))
                cells = w.setdefault(col, {})
                cells[idx] = row.get(f)

    def table(self, core_rows: Iterable[dict[str, Any]]) -> "pa.Table":
        """:meth:`rows` as an Arrow table of :meth:`arrow_schema` (array cells nested)."""
        import pyarrow as pa

        return pa.Table.from_pylist([self._nest(r) for r in self.rows(core_rows)], schema=self.arrow_schema())

    def _nest(self, w: dict[str, Any]) -> dict[str, Any]:
        """Array metrics' ``{index: value}`` cells as nested lists."""
        for c, v in w.items():
            if isinstance(v, dict):
                shape = tuple(max(i[d] for i in v) + 1 for d in range(len(next(iter(v)))))
                arr = np.empty(shape, dtype=object)
                for idx, x in v.items():
                    arr[idx] = x
                w[c] = arr.tolist()
        return w

    def core_rows(self, rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
        """Core's long rows (for :meth:`mergeable_metrics.Results.from_rows`) of collected result rows."""
        out = []
        for r in rows:
            slice_from_json(r["slice"])  # checked here: a bad slice names the column
            key = r["slice"]
            win = {c: r.get(c) for c in WINDOW_COLUMNS if self.windowed}
            if not self.wide:
                out.append({"slice": key, **win, **{c: r.get(c) for c in RESULT_COLUMNS[1:]}})
                continue
            base = {"slice": key, **win, "n": r["n"], "weight": r["weight"], "skipped": r["skipped"]}
            if r["n"] is None:  # suppressed
                count = r.get(SUPPRESSED_SLICES)
                out.append({**base, "metric": None if count is None else SUPPRESSED_SLICES, "index": None, "value": None if count is None else float(count)})
                continue
            for key_, ndim, fields in self.metrics:
                vals = {f: r.get(key_ if f == "value" else f"{key_}:{f}") for f in fields}
                if ndim == 0:
                    out.append({**base, "metric": key_, "index": None, **vals})
                    continue
                arrays = {f: np.asarray(v, dtype=object) for f, v in vals.items() if v is not None}
                if "value" not in arrays:  # an array without cells in this slice (e.g. an empty curve)
                    continue
                for idx in np.ndindex(arrays["value"].shape):
                    cell = {f: (None if f not in arrays else arrays[f][idx]) for f in fields}
                    out.append({**base, "metric": key_, "index": ",".join(map(str, idx)), **cell})
        return out


def quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _numeric_like(dt: Any) -> bool:
    """Numbers, booleans and nulls, or (nested) arrays of them (e.g. per-class score vectors)."""
    from pyspark.sql import types as T

    if isinstance(dt, T.ArrayType):
        return _numeric_like(dt.elementType)
    return isinstance(dt, (T.NumericType, T.BooleanType, T.NullType))


def _has_decimal(dt: Any) -> bool:
    from pyspark.sql import types as T

    return _has_decimal(dt.elementType) if isinstance(dt, T.ArrayType) else isinstance(dt, T.DecimalType)


def _decimal_to_double(dt: Any) -> Any:
    from pyspark.sql import types as T

    if isinstance(dt, T.ArrayType):
        return T.ArrayType(_decimal_to_double(dt.elementType), dt.containsNull)
    return T.DoubleType() if isinstance(dt, T.DecimalType) else dt


def prepare_columns(df: "DataFrame", evaluation: Evaluation) -> list:
    """Check the input columns on the driver (no job runs) and return the select expressions.

    Value columns (label, score(s), prediction, weight, measure ...) must be numeric or boolean,
    or arrays of them; decimals are cast to double. Columns used only for slicing may have any
    atomic type; dates, timestamps and decimals reach core as Arrow values and are sliced by
    core's text of them (:func:`mergeable_metrics.slicing.assign.canonical_value`, the same in every engine);
    intervals by Spark's string form.

    Raises:
        ValueError: a column is missing (named, with the available columns listed).
        TypeError: a value column is not numeric/boolean, or a slice column is not atomic.
    """
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    available = list(df.columns)
    missing = [c for c in evaluation.columns if c not in available]
    if missing:
        what = f"column {missing[0]!r}" if len(missing) == 1 else f"columns {missing}"
        raise ValueError(f"{what} not found in the DataFrame; available columns: {available}")
    types = {f.name: f.dataType for f in df.schema.fields}
    slice_cols = {c for spec in evaluation.slices for c in spec.columns}
    value_cols = {
        c for c in (evaluation.label_col, evaluation.prediction_col, evaluation.weight_col, getattr(evaluation, "measure_col", None)) if isinstance(c, str)
    }
    score = evaluation.score_col
    value_cols |= {score} if isinstance(score, str) else set(score or ())
    value_cols |= set(evaluation.columns) - slice_cols  # any other input column core reads
    value_cols -= {getattr(evaluation, "query_col", None)}  # query ids: ints or strings
    exprs = []
    for name in evaluation.columns:
        dt = types[name]
        col = F.col(quote(name))
        labels = getattr(evaluation, "classes", None) is not None and name in (
            evaluation.label_col,
            evaluation.prediction_col,
            evaluation.inputs.baseline_prediction_col,
        )
        if name in value_cols:
            if labels and isinstance(dt, T.StringType):
                pass  # class values (classes=): core maps them to class indices
            elif not _numeric_like(dt):
                raise TypeError(
                    f"column {name!r} must be numeric or boolean (or an array of them), got Spark type "
                    f"{dt.simpleString()}; cast it first, e.g. df.withColumn({name!r}, F.col({name!r}).cast('double'))"
                )
            if _has_decimal(dt):
                col = col.cast(_decimal_to_double(dt))
        elif isinstance(dt, T.AtomicType) and not isinstance(
            dt, (T.StringType, T.BooleanType, T.BinaryType, T.IntegralType, T.FractionalType, T.DateType, T.TimestampType, T.TimestampNTZType)
        ):
            col = col.cast("string")  # intervals and other atomic types: slice by their text
        elif isinstance(dt, T.ArrayType) and isinstance(
            dt.elementType, (T.StringType, T.BooleanType, T.BinaryType, T.IntegralType, T.FractionalType, T.NullType)
        ):
            pass  # a list-valued slice column: a row is in the slice of each of its values
        elif not isinstance(dt, (T.AtomicType, T.NullType)):
            raise TypeError(f"slice column {name!r} must have an atomic type (string, number, boolean, date ...), got Spark type {dt.simpleString()}")
        exprs.append(col.alias(name))
    return exprs


def partition_note(partition: int | None) -> str:
    """The suffix naming the Spark partition of an invalid value (both paths add it)."""
    return f"[Spark partition {partition}; rows are counted from 0 within the partition]"


def _with_partition(exc: Exception, partition: int | None) -> Exception:
    msg = f"{exc} {partition_note(partition)}"
    try:
        return type(exc)(msg)
    except Exception:  # exotic constructor signature
        return ValueError(msg) if isinstance(exc, ValueError) else TypeError(msg)


def arrow_input(df: "DataFrame", exprs: list) -> "DataFrame":
    """The selected input columns under plain positional names ``_mm0, _mm1, ...`` for
    ``mapInArrow`` (PySpark's ``mapInArrow`` cannot resolve column names holding a backtick);
    :func:`fold_partition_batches` gives the batches their real names back."""
    return df.select(*exprs).toDF(*[f"_mm{i}" for i in range(len(exprs))])


def fold_partition_batches(batches: Iterator["pa.RecordBatch"], acc: Any, fold: Callable[..., Any], names: list[str]) -> Any:
    """Fold one partition's record batches (from :func:`arrow_input`, columns renamed to
    ``names``) into ``acc`` with ``fold(acc, batch, row_offset=...)``; errors name the Spark
    partition (rows are counted from 0 within it)."""
    from pyspark import TaskContext

    ctx = TaskContext.get()
    partition = ctx.partitionId() if ctx is not None else None
    offset = 0
    for batch in batches:
        batch = batch.rename_columns(names)
        try:
            fold(acc, batch, row_offset=offset)
        except (ValueError, TypeError) as e:
            raise _with_partition(e, partition) from None
        offset += batch.num_rows
    return acc


def fold_partition_fn(evaluation: Evaluation) -> Callable[[Iterator["pa.RecordBatch"]], Iterator["pa.RecordBatch"]]:
    """The ``mapInArrow`` function: one accumulator per partition, one output row per slice."""
    aggregator = MetricsAggregator(evaluation)

    def fold_partition(batches: Iterator["pa.RecordBatch"]) -> Iterator["pa.RecordBatch"]:
        import pyarrow as pa

        acc = fold_partition_batches(batches, aggregator.zero(), aggregator.reduce, evaluation.columns)
        items = acc.items()
        keys = [slice_key_to_json(k) for k, _ in items]
        states = [evaluation.slice_codec.encode(s) for _, s in items]
        yield pa.RecordBatch.from_arrays([pa.array(keys, pa.string()), pa.array(states, pa.binary())], names=["slice_key", "states"])

    return fold_partition
