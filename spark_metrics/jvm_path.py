"""The JVM path of :func:`mergeable_metrics.spark.evaluate`: every slice's states folded by the Java aggregates
(:mod:`mergeable_metrics.spark.jvm`) in one ``groupBy(slice columns).agg(states)``, merged per slice spec and
finished on the driver by core. No Python runs on the executors, and the states are the bytes of core's own
fold, so the results equal the local engine's exactly.

It applies when every state of the plan has a JVM port, the inputs are plain columns, ``on_invalid="raise"``
and the slice specs are plain ``GROUP BY`` columns (:func:`mergeable_metrics.spark.sql_path.slices_blocker`);
otherwise :func:`jvm_blocker` says why in one line and the other paths run.

:func:`compute_jvm` is the form :func:`mergeable_metrics.spark.compute_metrics` takes for the same plans: the same
job and driver-side merge and finish, the rows returned as a local DataFrame. An invalid value makes the Java
check raise (its column and value): both callers then take the Arrow path, whose message names the row and
partition (and carries core's hints).
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
    why = slices_blocker(df, evaluation) or _array_blocker(df, evaluation)
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


def _array_blocker(df: "DataFrame", evaluation: Evaluation) -> str | None:
    """Why a value column holds arrays where the JVM fold reads one number per row (a binary score given as
    an ``array<double>`` of two class probabilities, ``predict_proba``'s rows: the Arrow path reads them), or
    None. Arrays are read in the JVM for multiclass scores and multioutput regression only."""
    from pyspark.sql import types as T

    task = evaluation.plan.task
    cols = [c for c in (evaluation.label_col, evaluation.score_col, evaluation.prediction_col) if isinstance(c, str)]  # (K score columns: a list)
    rows: set[str] = {c for c in cols if c == evaluation.score_col} if task.kind == "multiclass" else set()
    if task.kind == "regression" and getattr(task, "num_outputs", None) is not None:
        rows = set(cols)
    types = {f.name: f.dataType for f in df.schema.fields}
    for c in cols:
        if c not in rows and isinstance(types.get(c), T.ArrayType):
            return f"column {c!r} holds arrays (e.g. a binary score as two class probabilities per row), read on the Arrow path"
    return None


def _grouped(df: "DataFrame", exprs: list, evaluation: Evaluation, spec: str) -> tuple["DataFrame", list[str], list[str]]:
    """``(groups, slice columns, their names in groups)``: one JVM aggregation of ``df`` by every slice column
    (``__states``: each group's packed states), lazy."""
    from pyspark.sql import functions as F

    slice_cols = list(dict.fromkeys(c for spec_ in evaluation.slices for c in spec_.columns))
    names = [f"__s{i}" for i in range(len(slice_cols))]
    state = jvm.evaluation_column(df.sparkSession, evaluation, spec).alias("__states")
    values = [F.col(quote(c)) for c in _value_columns(evaluation)]
    keyed = df.select(*exprs).select(*[F.col(quote(c)).alias(n) for c, n in zip(slice_cols, names)], *values)
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


def jvm_rows(df: "DataFrame", exprs: list, evaluation: Evaluation, spec: str) -> list[dict[str, Any]]:
    """Core's long rows (:meth:`mergeable_metrics.Results.to_rows`) of ``evaluation`` on ``df``: one JVM
    aggregation by every slice column (one job; no Python on the executors), then, on the driver, per spec the
    exact merge of its groups' states and core's finish. An invalid value raises the Java check's error (its
    column and value, not its row)."""
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
    return results.to_rows()


def evaluate_jvm(df: "DataFrame", exprs: list, evaluation: Evaluation, spec: str) -> Results:
    """The Results of ``evaluation`` on ``df`` (:func:`jvm_rows`, collected)."""
    return evaluation.collect(rows=jvm_rows(df, exprs, evaluation, spec))


def compute_jvm(df: "DataFrame", exprs: list, evaluation: Evaluation, spec: str, layout: Any) -> "DataFrame":
    """The result DataFrame of :func:`mergeable_metrics.spark.compute_metrics` on the JVM path: :func:`jvm_rows`
    (the job runs now; the driver merges and finishes the groups' small states, as :func:`evaluate_jvm` does),
    as a local DataFrame of ``layout``'s rows. No Python runs on the executors; the states are the Python fold's,
    so the rows equal the Arrow path's."""
    rows = jvm_rows(df, exprs, evaluation, spec)
    return df.sparkSession.createDataFrame(layout.table(rows), schema=layout.spark_schema())


def _value_columns(evaluation: Evaluation) -> list[str]:
    return [c for c in (evaluation.label_col, evaluation.score_col, evaluation.prediction_col, evaluation.weight_col) if isinstance(c, str)]
