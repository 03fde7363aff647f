"""The JVM path of :func:`mergeable_metrics.spark.evaluate`: every slice's states folded by the Java aggregates
(:mod:`mergeable_metrics.spark.jvm`) in one ``groupBy(slice columns).agg(states)``, merged per slice spec and
finished on the driver by core. No Python runs on the executors, and the states are the bytes of core's own
fold, so the results equal the local engine's exactly.

It applies when every state of the plan has a JVM port, the inputs are plain columns, ``on_invalid="raise"``
and the slice specs are plain ``GROUP BY`` columns (:func:`mergeable_metrics.spark.sql_path.slices_blocker`);
otherwise :func:`jvm_blocker` says why in one line and the other paths run.

:func:`compute_jvm` is the lazy form :func:`mergeable_metrics.spark.compute_metrics` takes for the same plans (not
score rows, :func:`lazy_blocker`): the same JVM aggregation, then the groups' states merged per slice and finished by core on the
executors (the Arrow path's second stage), the values checked first so that an invalid one names its row.
"""

from __future__ import annotations

import logging
import warnings
from typing import TYPE_CHECKING, Any

from mergeable_metrics.engine import OVERALL, Evaluation, Results, UndefinedMetricWarning, assign_slices, extract_columns
from mergeable_metrics.spark import jvm
from mergeable_metrics.spark._frames import quote
from mergeable_metrics.spark.sql_path import slices_blocker

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame

_log = logging.getLogger(__name__)


def jvm_blocker(df: "DataFrame", evaluation: Evaluation) -> tuple[str | None, str]:
    """``(spec, "")`` when the JVM path can evaluate ``evaluation`` on ``df``, else ``(None, why not)``."""
    if getattr(evaluation, "paired", False):
        return None, "a baseline model (both models are folded on the Arrow path)"
    if getattr(evaluation, "_buckets", None) is not None:
        return None, 'ci="bootstrap" (states per hash bucket)'
    if evaluation.on_invalid != "raise":
        return None, 'on_invalid="skip" (skipped rows are counted per slice by the Arrow path)'
    why = slices_blocker(df, evaluation)
    if why is not None:
        return None, why
    spec, why = jvm.evaluation_spec(evaluation, sliced=True)
    if spec is None:
        return None, why
    session = df.sparkSession
    if jvm.is_connect(session) and jvm.connect_refuses(spec):
        return None, str(jvm.connect_refuses(spec))
    if not jvm.available(session):
        return None, jvm.NO_JDK
    return spec, ""


def lazy_blocker(spec: str) -> str | None:
    """Why :func:`compute_jvm` cannot take ``spec`` (its values cannot be checked row by row in a projection), or
    None: score rows (``array<double>`` per row) keep the Arrow path."""
    if int(spec.split("\x1f")[1]) == jvm.SCORE_ROW_MODE:
        return "score rows (array<double> per row) are checked row by row on the Arrow path"
    return None


def _checked_values(evaluation: Evaluation, spec: str) -> list:
    """The value columns of a frame with ``__row`` (``monotonically_increasing_id()``), each raising, at its first
    invalid value, core's message with the row's position within its Spark partition and the partition (as the
    Arrow path's): for a lazy result (:func:`compute_jvm`), which cannot fall back to the Arrow path. The JVM
    aggregate checks the values again (no row positions there). The rules are the spec's (core's texts): labels
    (and predictions) integers in [0, K), scores finite, probabilities finite then in [0, 1], regression values
    finite, weights finite and >= 0. (Not core's two-class hint: it reads the batch's other labels.)"""
    from pyspark.sql import functions as F

    from mergeable_metrics.engine import SCORES_FINITE

    fields = spec.split("\x1f")
    k, mode = int(fields[0]), int(fields[1])
    rules = {evaluation.weight_col: fields[8], fields[4]: fields[7], evaluation.label_col: fields[6]}
    out = []
    row = (F.col("__row").bitwiseAND(F.lit((1 << 33) - 1))).cast("string")
    for name in _value_columns(evaluation):
        c = F.col(quote(name))
        rule = rules.get(name)
        value = c.cast("double")
        nonfinite = value.isNull() | F.isnan(value) | (F.abs(value) == F.lit(float("inf")))
        if not rule:
            out.append(c)
            continue
        shown = (
            F.when(value.isNull(), F.lit("null"))  # a SQL null, as core names an Arrow null
            .when(F.isnan(value), F.lit("nan"))
            .when(value == F.lit(float("inf")), F.lit("inf"))
            .when(value == F.lit(float("-inf")), F.lit("-inf"))
            .otherwise(value.cast("string"))
        )

        def message(text: str, name: str = name, shown: Any = shown) -> Any:
            return F.concat(
                F.lit(f"column {name!r}: invalid value "),
                shown,
                F.lit(" at row "),
                row,
                F.lit(f": {text} [Spark partition "),
                F.spark_partition_id().cast("string"),
                F.lit("; rows are counted from 0 within the partition]"),
            )

        if name == evaluation.weight_col:
            checks = [(nonfinite | (value < 0), rule)]
        elif mode == jvm.VALUES_MODE:
            checks = [(nonfinite, rule)]
        elif name == evaluation.label_col or mode == 2:  # class ids: integers in [0, K)
            checks = [(nonfinite | (value != F.floor(value)) | (value < 0) | (value >= F.lit(float(k))), rule)]
        elif mode == 3:  # probabilities: finite (core's score rule first), then in [0, 1]
            checks = [(nonfinite, SCORES_FINITE), ((value < 0) | (value > 1), rule)]
        else:
            checks = [(nonfinite, rule)]
        checked = None
        for bad, text in checks:
            checked = (F.when if checked is None else checked.when)(bad, F.raise_error(message(text)))  # null type: the column keeps its own
        out.append(checked.otherwise(c).alias(name))
    return out


def _grouped(df: "DataFrame", exprs: list, evaluation: Evaluation, spec: str, rows: bool = False) -> tuple["DataFrame", list[str], list[str]]:
    """``(groups, slice columns, their names in groups)``: one JVM aggregation of ``df`` by every slice column
    (``__states``: each group's packed states), lazy. ``rows``: an invalid value names its row
    (:func:`_checked_values`)."""
    from pyspark.sql import functions as F

    slice_cols = list(dict.fromkeys(c for spec_ in evaluation.slices for c in spec_.columns))
    names = [f"__s{i}" for i in range(len(slice_cols))]
    base = df.select(*exprs)
    state = jvm.evaluation_column(df.sparkSession, evaluation, spec).alias("__states")
    if rows:
        base = base.select("*", F.monotonically_increasing_id().alias("__row"))
        values = _checked_values(evaluation, spec)
    else:
        values = [F.col(quote(c)) for c in _value_columns(evaluation)]
    keyed = base.select(*[F.col(quote(c)).alias(n) for c, n in zip(slice_cols, names)], *values)
    grouped = keyed.groupBy(*names).agg(state) if names else keyed.agg(state)
    return grouped, slice_cols, names


def _merge_groups(evaluation: Evaluation, table: Any, blobs: list, slice_cols: list[str], names: list[str]) -> dict[tuple, tuple]:
    """``{slice key: states}`` of some groups (their slice columns in ``table``, their packed states ``blobs``):
    every group into the overall slice and into its slice of each spec, merged exactly."""
    parts = [jvm.decode_states(evaluation, b) for b in blobs]
    merged: dict[tuple, tuple] = {}

    def add(key: tuple, states: tuple) -> None:
        got = merged.get(key)
        merged[key] = states if got is None else tuple(a.merge(b) for a, b in zip(got, states))

    for states in parts:
        add(OVERALL, states)
    if table is not None and names:
        rename = dict(zip(slice_cols, names))
        for spec_ in evaluation.slices:
            data = {c: table.column(rename[c]) for c in spec_.columns}
            sliced, n = extract_columns(data, list(spec_.columns), slice_columns=tuple(spec_.columns))
            got = assign_slices(spec_, sliced, n)
            rows = range(table.num_rows) if got.rows is None else got.rows
            for row, code in zip(rows, got.codes):
                add(got.keys[int(code)], parts[int(row)])
    return merged


def compute_jvm(df: "DataFrame", exprs: list, evaluation: Evaluation, spec: str, layout: Any) -> "DataFrame":
    """The result DataFrame of :func:`mergeable_metrics.spark.compute_metrics` on the JVM path (lazy): the rows
    folded by the JVM aggregates, one group per combination of slice values; then, on the executors, each
    partition of the (small) groups merged per slice (``mapInArrow``) and every slice's partial states merged
    and finished by core (:func:`mergeable_metrics.spark.arrow_path.compute_arrow`, the Arrow path's second
    stage). No Python sees a row; the states are the Python fold's, so the rows equal the Arrow path's."""
    from mergeable_metrics.engine import slice_key_to_json
    from mergeable_metrics.spark import arrow_path
    from mergeable_metrics.spark._frames import states_schema

    grouped, slice_cols, names = _grouped(df, exprs, evaluation, spec, rows=True)

    def to_partial(batches: Any) -> Any:
        import pyarrow as pa

        for batch in batches:
            table = pa.Table.from_batches([batch])
            merged = _merge_groups(evaluation, table, table.column("__states").to_pylist(), slice_cols, names)
            keys = list(merged)
            yield pa.RecordBatch.from_pydict(
                {"slice_key": [slice_key_to_json(k) for k in keys], "states": [evaluation.slice_codec.encode(merged[k]) for k in keys]},
                schema=pa.schema([("slice_key", pa.string()), ("states", pa.binary())]),
            )

    return arrow_path.compute_arrow(grouped.mapInArrow(to_partial, states_schema()), evaluation, layout)


def evaluate_jvm(df: "DataFrame", exprs: list, evaluation: Evaluation, spec: str) -> Results:
    """The Results of ``evaluation`` on ``df``: one JVM aggregation by every slice column, then per spec the
    exact merge of its groups' states and core's finish, on the driver."""
    grouped, slice_cols, names = _grouped(df, exprs, evaluation, spec)
    if names:
        table = grouped.toArrow()
        blobs = table.column("__states").to_pylist()
    else:
        table, blobs = None, [grouped.collect()[0]["__states"]]
    merged = _merge_groups(evaluation, table, blobs, slice_cols, names)
    if OVERALL not in merged:
        merged[OVERALL] = jvm.decode_states(evaluation, None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        results = evaluation.finish(merged, add_overall=False)
    return evaluation.collect(rows=results.to_rows())


def _value_columns(evaluation: Evaluation) -> list[str]:
    return [c for c in (evaluation.label_col, evaluation.score_col, evaluation.prediction_col, evaluation.weight_col) if isinstance(c, str)]
