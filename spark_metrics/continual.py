"""Continual-learning metrics on Spark: one native aggregation, then core's state.

``continual_evaluation(df, ...)`` counts the events per ``(trained_task, step, evaluated_task,
label, prediction, test-then-train window)`` with a Spark SQL ``groupBy().agg(count, max(position))``
(partial aggregation in every partition, no Python workers) and builds the exact
:class:`mergeable_metrics.ContinualEvaluation` from the few grouped rows on the driver (core validates
every value there: a valid position is grouped by its window, an invalid one stays its own group
so that core names it).
"""

from __future__ import annotations

from typing import Any

from mergeable_metrics.engine import ContinualEvaluation

__all__ = ["continual_evaluation"]


def continual_evaluation(
    df: Any,
    num_tasks: int,
    num_classes: int,
    evaluations_per_task: int = 0,
    label_col: str = "label",
    prediction_col: str = "prediction",
    max_instances: int = 0,
    eval_window_size: int = 1000,
) -> ContinualEvaluation:
    """The :class:`mergeable_metrics.ContinualEvaluation` of a DataFrame of evaluation events.

    Args:
        df: columns ``trained_task``, ``evaluated_task``, ``label_col``, ``prediction_col`` and
            optionally ``step`` (null or absent: the evaluation after the task) and ``position``
            (null or absent: an evaluation row; set: a test-then-train row of the training stream).
        num_tasks, num_classes, evaluations_per_task, max_instances, eval_window_size: as
            :class:`mergeable_metrics.ContinualEvaluation`.

    Raises:
        ValueError: a missing column, or an invalid value (naming the column and the value; the
            row is a row of the grouped counts, as Spark aggregates before the driver checks).
    """
    from pyspark.sql import functions as F

    ev = ContinualEvaluation(num_tasks, num_classes, evaluations_per_task, max_instances, eval_window_size)
    need = ["trained_task", "evaluated_task", label_col, prediction_col]
    missing = [c for c in need if c not in df.columns]
    if missing:
        raise ValueError(f"continual events need columns {need} (+ optional 'step'); missing {missing}")
    step = F.col("step") if "step" in df.columns else F.lit(None).cast("long")
    pos = F.col("position") if "position" in df.columns else F.lit(None).cast("long")
    valid = (pos >= 0) & (pos < max_instances) & (pos == F.floor(pos))
    # a valid position is grouped by its window (max(position) keeps the window and the stream's end); an invalid one by itself
    key = F.when(valid, F.floor(pos / eval_window_size).cast("double")).otherwise(pos.cast("double"))
    grouped = df.groupBy(
        F.col("trained_task").alias("t"), step.alias("h"), F.col("evaluated_task").alias("e"), F.col(label_col).alias("y"), F.col(prediction_col).alias("p"),
        valid.alias("valid"), key.alias("w"),
    ).agg(F.count(F.lit(1)).alias("count"), F.max(pos).alias("pos"))  # fmt: skip
    table = grouped.toArrow() if hasattr(grouped, "toArrow") else None
    names = ("t", "h", "e", "y", "p", "count", "pos")
    if table is None:  # pragma: no cover (PySpark < 4)
        rows = grouped.collect()
        cols = {k: [r[k] for r in rows] for k in names}
    else:
        cols = {k: table.column(k) for k in names}
    if len(cols["count"]):
        try:
            ev.state = ev.state.merge(
                type(ev.state).from_events(
                    ev.layout,
                    cols["t"],
                    cols["e"],
                    cols["y"],
                    cols["p"],
                    cols["h"],
                    counts=cols["count"],
                    names=(label_col, prediction_col),
                    position=cols["pos"] if "position" in df.columns else None,
                )  # fmt: skip
            )
        except ValueError as err:
            raise ValueError(f"{err} (row of the grouped event counts)") from None
    return ev
