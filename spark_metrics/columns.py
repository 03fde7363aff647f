"""Metrics as Spark Column expressions for a user's own ``groupBy(...).agg(...)``.

:func:`metric_columns` lowers the states of count and confusion metrics to Spark SQL aggregates:
each row maps to one *cell* (its true label and how it is predicted: the cell of
:mod:`mergeable_metrics.spark.sql_path`), and each cell's row count (and weight sum) is a native ``sum`` of
an indicator column, so Spark's partial aggregation runs before the shuffle and no Python sees
the rows. Each metric column then finishes its group with one small Python UDF over those few
sums: it builds core's states from the cells (:func:`mergeable_metrics.states.base.states_from_cells`) and computes
the metric with core, so the values are those of :func:`mergeable_metrics.spark.compute_metrics` and
``mergeable_metrics.Evaluation`` (bit for bit unweighted or with integer weights; fractional weights are
summed by Spark in float64, equal up to rounding). Spark deduplicates the identical sums of
several metric columns, so a list of metrics aggregates each cell once. The columns are plain
``pyspark.sql.functions`` expressions and a Python UDF, so they work over Spark Connect as well
(``pyspark.sql.functions`` builds Connect columns in a Connect application).

Metrics whose states are not sums of per-row cells (ROC AUC and the other score-distribution
metrics, calibration, regression, ...) cannot lower to SQL sums: with a JDK they run on the JVM
aggregates (:mod:`mergeable_metrics.spark.jvm`, the default wherever they apply: every state folded in
Java, the bytes of core's own fold); otherwise :func:`metric_columns` raises ``ValueError`` naming
them and pointing to :func:`mergeable_metrics.spark.compute_metrics`. :func:`metric_state_column` with
:func:`finish_metric_states` finish on the driver (no Python on the executors).
"""

from __future__ import annotations

import math
import warnings
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from mergeable_metrics.engine import SCORES_FINITE, WEIGHTS_RULE, label_rule
from mergeable_metrics.engine import Evaluation
from mergeable_metrics.engine import UndefinedMetricWarning
from mergeable_metrics.engine import NULL
from mergeable_metrics.engine import INTEGER_METRICS
from mergeable_metrics.engine import OVERALL
from mergeable_metrics.engine import CELL_STATES, states_from_cells
from mergeable_metrics.spark import jvm, jvm_finish
from mergeable_metrics.spark.sql_path import _BAD_LABEL, _BAD_PREDICTION, _BAD_SCORE, _BAD_WEIGHT, MAX_NATIVE_CLASSES, _cell_columns

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column


def _blocker(evaluation: Evaluation) -> str | None:
    """Why the evaluation's metrics cannot lower to aggregate columns, or None."""
    plan = evaluation.plan
    bad = [m.key for m in plan.metrics if any(cls not in CELL_STATES for cls, _ in _requires(m))]
    if bad:
        kinds = sorted({cls.kind for m in plan.metrics for cls, _ in _requires(m) if cls not in CELL_STATES})
        return f"metrics {bad} read states {kinds}, which are not sums of per-row cells"
    if not getattr(evaluation, "_plain", False):
        return "inputs need core's input formats (score matrices, one-hot, ignore_index, ...)"
    if plan.task.kind == "multiclass" and evaluation.prediction_col is None:
        return "a multiclass task needs a prediction column"
    if plan.task.num_classes > MAX_NATIVE_CLASSES:
        return f"{plan.task.num_classes} classes (more than {MAX_NATIVE_CLASSES})"
    return None


def _requires(metric: Any) -> list:
    out = list(metric.requires())
    for dep in metric.dependency_metrics().values() if metric.dependencies else ():
        out += _requires(dep)
    return out


def metric_columns(
    metrics: Sequence[str],
    label_col: str,
    score_col: str | None = None,
    prediction_col: str | None = None,
    weight_col: str | None = None,
    *,
    engine: str | None = None,
    spark: Any = None,
    **options: Any,
) -> list["Column"]:
    """Spark Column expressions of ``metrics``, for ``df.groupBy(...).agg(*metric_columns(...))``.

    Two lowerings (``engine``): ``"jvm"``, the JVM aggregates of :mod:`mergeable_metrics.spark.jvm` (every row
    folded in Java into core's own states, bit for bit those of the Python fold; the default wherever they
    apply and a JDK is there), and ``"sql"``, native ``sum`` aggregates of per-row cells (count and confusion
    metrics only). On the JVM path all the columns read one aggregate, and the count-based metrics,
    binary ``roc_auc``, ``average_precision``, ``log_loss`` and ``brier_score`` (multiclass ``log_loss`` and
    ``brier_score`` too), and the regression metrics
    of ``task="regression"`` (``r2``, ``mse``, ``rmse``, ``mae``, ``mape``, ``explained_variance``, ``pearson``, ``msle``,
    ``mean_poisson_deviance``, ...)
    (:mod:`mergeable_metrics.spark.jvm_finish`) are finished in Java too, bit for bit core's values
    (``average_precision`` is null for a group with more distinct scores than the state's capacity: see
    :func:`~mergeable_metrics.spark.jvm_finish.metric_finish`); other metrics (``mcc``, ``gini``, calibration,
    ...), and every metric of the SQL path, finish their group with a small Python UDF over its states (:func:`metric_state_column` with :func:`finish_metric_states` finish on the
    driver instead, so the executors need no Python package).

    Args:
        metrics: metric strings (``["precision", "recall", "f1", "mcc", "recall@threshold=0.7"]``);
            each column is named by the metric's key.
        label_col: label column.
        score_col: binary score column (``score >= threshold`` is positive); for ``task="regression"``, the
            predicted values; for ``task="multiclass"`` (``roc_auc``, ``average_precision``; ``log_loss``,
            ``brier_score`` and calibration read it as probabilities, each row checked as core checks it), an
            ``array<double>`` column of the K class scores of each row (JVM path only).
        prediction_col: predicted-label column (binary 0/1, multiclass ``[0, K)``; regression: predicted values).
        weight_col: sample weights (finite, >= 0).
        engine: ``"jvm"``, ``"sql"`` or None (the JVM aggregates where they apply, else SQL).
        spark: the session (default: the active one); the JVM path loads its jar into it.
        **options: other :class:`mergeable_metrics.Evaluation` options of the task: ``threshold``,
            ``threshold_rule``, ``num_classes``, ``task``, ``zero_division``, ``multiclass``, ``num_outputs`` (multioutput
            regression: ``array<double>`` target and prediction columns of D values per row, folded in the JVM and
            finished by core; ``multioutput="raw_values"`` is an array: use ``compute_metrics``).

    Returns:
        One aggregate Column per metric: a double (``example_count``: a long), NaN where the
        metric is undefined in the group.

    Raises:
        ValueError: a metric that cannot lower (the message names it and points to
            :func:`mergeable_metrics.spark.compute_metrics`), or bad options. Invalid input values (a NaN
            score, a label outside the task's classes, a negative weight) raise when the
            aggregation runs, naming the column, a value and the group's invalid rows (Spark
            refuses row ids inside aggregates: :func:`mergeable_metrics.spark.compute_metrics` names the row).

    Example::

        df.groupBy("country", "day").agg(*metric_columns(["precision", "recall", "f1"], label_col="y", score_col="p"))
    """
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    unknown = set(options) - {"threshold", "threshold_rule", "num_classes", "task", "zero_division", "multiclass", "num_outputs"}
    if unknown:
        raise ValueError(
            f"metric_columns: options {sorted(unknown)} are not available for aggregate columns (slices are the groupBy's keys); use mergeable_metrics.spark.compute_metrics"
        )
    if isinstance(metrics, str):
        metrics = [metrics]
    ev = Evaluation(label_col=label_col, score_col=score_col, prediction_col=prediction_col, weight_col=weight_col, metrics=list(metrics), **options)
    if engine not in (None, "jvm", "sql"):
        raise ValueError(f"metric_columns: engine must be 'jvm', 'sql' or None, got {engine!r}")
    if engine != "sql":
        spark, spec, why = _jvm_plan(ev, spark, required=engine == "jvm")
        if spec is not None:
            _check_scalar(ev)
            state = jvm.evaluation_column(spark, ev, spec)  # one aggregate: every value column reads it
            out = []
            for m in ev.plan.metrics:
                desc = jvm_finish.metric_finish(ev, m)
                if desc is None:  # finish not ported to Java: core's, in a Python UDF
                    out.append(F.udf(_jvm_finisher(ev, m.key), _return_type(m.key))(state).alias(m.key))
                else:
                    value = jvm_finish.finish_column(spark, desc, state)
                    out.append((value.cast("long") if m.key in INTEGER_METRICS else value).alias(m.key))
            return out
    reason = _blocker(ev)
    if reason is not None:
        raise ValueError(
            f"metric_columns: cannot lower to Spark SQL aggregates: {reason}; "
            "use mergeable_metrics.spark.compute_metrics(df, evaluation=Evaluation(..., slices=[...])) for these metrics"
        )
    keys = [m.key for m in ev.plan.metrics]
    _check_scalar(ev)

    text: list = []
    cell, weight, bad, per_label = _cell_columns(ev, text)
    k = ev.plan.task.num_classes
    n_cells = k * per_label
    weighted = weight_col is not None
    bad_code = F.when(cell < 0, cell)  # -1 labels, -2 scores, -3 predictions, -4 weights: the first check wins
    parts = [F.sum((cell == c).cast("long")).cast("double") for c in range(n_cells)]
    if weighted:
        parts += [F.sum(F.when(cell == c, weight).otherwise(F.lit(0.0))) for c in range(n_cells)]
    # row ids are non-deterministic, which Spark refuses inside aggregates: the error names the
    # column, a value of the first failing check and the group's invalid rows, not a row position
    parts += [F.sum((cell < 0).cast("long")).cast("double"), F.max(bad_code).cast("double"), F.max_by(bad, bad_code)]
    packed = F.array(*parts)
    # the text of a value that did not cast (a string column), preferred within the first failing check
    bad_text = F.max_by(text[0], bad_code * 2 + text[0].isNotNull().cast("long"))
    columns = {"label": label_col, "score": score_col, "prediction": prediction_col or score_col, "weight": weight_col}

    def finisher(key: str) -> Any:
        def finish(values, bad_text):  # no annotations: pyspark would read them as a pandas UDF type hint
            v = np.asarray([math.nan if x is None else x for x in values], dtype=np.float64)
            counts = v[:n_cells].astype(np.int64)
            wsums = v[n_cells : 2 * n_cells] if weighted else None
            tail = v[(2 if weighted else 1) * n_cells :]
            if tail[0] > 0:
                _raise_invalid(ev, columns, int(tail[1]), values[-1], int(tail[0]), bad_text)
            cells = np.flatnonzero(counts)
            out = _finish(ev, cells, counts[cells], None if wsums is None else wsums[cells], per_label)[key]
            return int(out) if key in INTEGER_METRICS else float(out)

        return finish

    out = []
    for key in keys:
        rtype = T.LongType() if key in INTEGER_METRICS else T.DoubleType()
        out.append(F.udf(finisher(key), rtype)(packed, bad_text).alias(key))
    return out


def _check_scalar(ev: Evaluation) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        zero = ev.finish({OVERALL: tuple(cls.zero(layout) for cls, layout in ev.plan.state_types)}, add_overall=False)[OVERALL].metrics
    arrays = [m.key for m in ev.plan.metrics if np.ndim(zero[m.key]) != 0]
    if arrays:
        raise ValueError(
            f"metric_columns: metrics {arrays} are arrays (per-class or matrix values); use mergeable_metrics.spark.compute_metrics, or name one class's metric"
        )


def _return_type(key: str) -> Any:
    from pyspark.sql import types as T

    return T.LongType() if key in INTEGER_METRICS else T.DoubleType()


def _active_session(spark: Any) -> Any:
    if spark is not None:
        return spark
    from pyspark.sql import SparkSession
    from pyspark.sql.utils import is_remote

    if is_remote():
        from pyspark.sql.connect.session import SparkSession as RemoteSparkSession

        return RemoteSparkSession.getActiveSession()
    return SparkSession.getActiveSession()


def _jvm_plan(ev: Evaluation, spark: Any, required: bool) -> tuple[Any, str | None, str]:
    """``(session, spec, why not)`` of the JVM path for ``ev`` (spec None: not taken; ``required``: raise instead)."""
    spec, why = jvm.evaluation_spec(ev)
    session = _active_session(spark)
    if spec is not None and session is None:
        spec, why = None, "no active SparkSession (pass spark=)"
    if spec is not None and not jvm.available(session):
        spec, why = None, jvm.NO_JDK
    if spec is not None and jvm.is_connect(session) and jvm.connect_refuses(spec):
        spec, why = None, str(jvm.connect_refuses(spec))
    if spec is None and required:
        raise ValueError(f"metric_columns: engine='jvm' cannot fold these metrics: {why}")
    return session, spec, why


def _jvm_finisher(ev: Evaluation, key: str) -> Any:
    def finish(data):  # no annotations: pyspark would read them as a pandas UDF type hint
        out = _finish_states(ev, jvm.decode_states(ev, data))[key]
        return int(out) if key in INTEGER_METRICS else float(out)

    return finish


def _finish_states(ev: Evaluation, states: tuple) -> dict[str, Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        return ev.finish({OVERALL: states}, add_overall=False)[OVERALL].metrics


def metric_state_column(
    metrics: Sequence[str],
    label_col: str,
    score_col: str | None = None,
    prediction_col: str | None = None,
    weight_col: str | None = None,
    *,
    spark: Any = None,
    name: str = "mm_states",
    **options: Any,
) -> "Column":
    """One JVM aggregate Column holding each group's states (bytes), for a finish on the driver with
    :func:`finish_metric_states`: the executors run Java only (no Python package needed there).

    Raises:
        ValueError: the JVM aggregates cannot fold these metrics (the message says why) or no JDK.
    """
    ev = Evaluation(label_col=label_col, score_col=score_col, prediction_col=prediction_col, weight_col=weight_col, metrics=list(metrics), **options)
    session, spec, _ = _jvm_plan(ev, spark, required=True)
    return jvm.evaluation_column(session, ev, spec).alias(name)


def finish_metric_states(
    rows: Any,
    metrics: Sequence[str],
    label_col: str,
    score_col: str | None = None,
    prediction_col: str | None = None,
    weight_col: str | None = None,
    *,
    column: str = "mm_states",
    overall: bool = False,
    **options: Any,
) -> list[dict[str, Any]]:
    """The metric values of collected rows of :func:`metric_state_column` (same metric arguments), on the
    driver: each row's other fields (the group keys) followed by ``{metric key: value}``.

    Args:
        rows: a DataFrame (collected here) or its collected rows.
        overall: also a last row for all the rows together (its group keys None): the merge of every
            group's states (states merge exactly, so it equals folding all the rows at once).
    """
    ev = Evaluation(label_col=label_col, score_col=score_col, prediction_col=prediction_col, weight_col=weight_col, metrics=list(metrics), **options)
    if hasattr(rows, "collect"):
        rows = rows.collect()
    out = []
    total = None
    for r in rows:
        d = r.asDict() if hasattr(r, "asDict") else dict(r)
        states = jvm.decode_states(ev, d.pop(column))
        total = states if total is None else tuple(a.merge(b) for a, b in zip(total, states))
        values = _finish_states(ev, states)
        d.update({m.key: values[m.key] for m in ev.plan.metrics})
        out.append(d)
    if overall:
        keys = {k: None for k in (out[0] if out else {}) if k not in {m.key for m in ev.plan.metrics}}
        values = _finish_states(ev, total if total is not None else jvm.decode_states(ev, None))
        out.append({**keys, **{m.key: values[m.key] for m in ev.plan.metrics}})
    return out


def _finish(ev: Evaluation, cells: np.ndarray, counts: np.ndarray, wsums: np.ndarray | None, per_label: int) -> dict[str, Any]:
    """``{metric key: value}`` of one group's cell sums (core's states and metrics)."""
    states = states_from_cells(ev.plan.state_types, cells, counts, wsums, per_label)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        return ev.finish({OVERALL: states}, add_overall=False)[OVERALL].metrics


def _raise_invalid(ev: Evaluation, columns: dict[str, str | None], code: int, value: Any, count: int, text: str | None = None) -> None:
    """The error of a group with invalid values: the first failing check's column (labels, scores,
    predictions, weights), one of its values (``text``: one that is not a number), and how many
    rows of the group are invalid."""
    k = ev.plan.task.num_classes
    column, what = {
        _BAD_LABEL: (columns["label"], label_rule("labels", k)),
        _BAD_SCORE: (columns["score"], SCORES_FINITE),
        _BAD_PREDICTION: (columns["prediction"], label_rule("predictions", k)),
        _BAD_WEIGHT: (columns["weight"], WEIGHTS_RULE),
    }[code]
    where = "(inside groupBy().agg() the row position is not known: mergeable_metrics.spark.compute_metrics names the row and its partition)"
    if text is not None:
        raise ValueError(f"column {column!r}: value {text!r} in {count} row(s) of this group is not a number ({what}) {where}")
    value = NULL if value is None else value  # a SQL null, named as Spark shows it (a NaN is nan)
    raise ValueError(
        f"column {column!r}: invalid value {value!r} in {count} row(s) of this group: {what} (inside groupBy().agg() the row "
        "position is not known: mergeable_metrics.spark.compute_metrics names the row and its partition)"
    )
