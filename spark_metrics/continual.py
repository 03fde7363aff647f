"""Continual-learning metrics on Spark: one native aggregation, then core's state.

``continual_evaluation(df, ...)`` counts the events per ``(trained_task, step, evaluated_task,
label, prediction)`` with a Spark SQL ``groupBy().count()`` (partial aggregation in every
partition, no Python workers) and builds the exact :class:`mergeable_metrics.ContinualEvaluation` from the few
grouped rows on the driver (core validates every value there).
"""

from __future__ import annotations

from typing import Any

from mergeable_metrics.engine import ContinualEvaluation

__all__ = ["continual_evaluation"]


def continual_evaluation(
    df: Any, num_tasks: int, num_classes: int, evaluations_per_task: int = 0, label_col: str = "label", prediction_col: str = "prediction"
) -> ContinualEvaluation:
    """The :class:`mergeable_metrics.ContinualEvaluation` of a DataFrame of evaluation events.

    Args:
        df: columns ``trained_task``, ``evaluated_task``, ``label_col``, ``prediction_col`` and
            optionally ``step`` (null or absent: the evaluation after the task).
        num_tasks, num_classes, evaluations_per_task: as :class:`mergeable_metrics.ContinualEvaluation`.

    Raises:
        ValueError: a missing column, or an invalid value (naming the column and the value; the
            row is a row of the grouped counts, as Spark aggregates before the driver checks).
    """
    from pyspark.sql import functions as F

    ev = ContinualEvaluation(num_tasks, num_classes, evaluations_per_task)
    need = ["trained_task", "evaluated_task", label_col, prediction_col]
    missing = [c for c in need if c not in df.columns]
    if missing:
        raise ValueError(f"continual events need columns {need} (+ optional 'step'); missing {missing}")
    step = F.col("step") if "step" in df.columns else F.lit(None).cast("long")
    grouped = df.groupBy(
        F.col("trained_task").alias("t"), step.alias("h"), F.col("evaluated_task").alias("e"), F.col(label_col).alias("y"), F.col(prediction_col).alias("p")
    ).count()
    table = grouped.toArrow() if hasattr(grouped, "toArrow") else None
    if table is None:  # pragma: no cover (PySpark < 4)
        rows = grouped.collect()
        cols = {k: [r[k] for r in rows] for k in ("t", "h", "e", "y", "p", "count")}
    else:
        cols = {k: table.column(k) for k in ("t", "h", "e", "y", "p", "count")}
    if len(cols["count"]):
        try:
            ev.state = ev.state.merge(
                type(ev.state).from_events(
                    ev.layout, cols["t"], cols["e"], cols["y"], cols["p"], cols["h"], counts=cols["count"], names=(label_col, prediction_col)
                )
            )
        except ValueError as err:
            raise ValueError(f"{err} (row of the grouped event counts)") from None
    return ev
