"""Continual-learning evaluation from the command line (``--task continual``, ``--example split-digits``).

The input holds one row per evaluation event: ``trained_task``, ``step`` (null, or absent: the
evaluation after the task), ``evaluated_task``, the true class (``--label``, default ``label``) and
the predicted class (``--prediction``, default ``prediction``). Every engine folds the events into
one :class:`mergeable_metrics.ContinualEvaluation` (local: streamed record batches; Beam:
``CombineGlobally(ContinualCombineFn)``; Spark: one native ``groupBy().count()``) and the same
:class:`mergeable_metrics.time.continual.OCLMetrics` is written: ``metrics.json`` / ``metrics.parquet`` (one overall slice whose
metrics are the OCLMetrics fields), ``run.json`` and the HTML report (R, A and the accuracy curves).
"""

from __future__ import annotations

import base64
import glob
import os
import shutil
import tempfile
from typing import Any, Sequence

from mergeable_metrics import ContinualEvaluation, Results, SliceResult
from mergeable_metrics.time.continual import OCLMetrics
from mergeable_metrics.time.continual import EVENT_COLUMNS
from mergeable_metrics.pipelines import io
from mergeable_metrics.pipelines.progress import stage

__all__ = ["ocl_results", "run_continual"]

#: OCLMetrics fields that are not metric values (sizes and plot axes): kept in the config
_AXES = ("task_index", "anytime_task_index", "n_tasks", "n_classes", "n_continual_evaluations", "undefined")


def ocl_results(metrics: OCLMetrics, events: int, config: dict[str, Any] | None = None) -> Results:
    """:class:`mergeable_metrics.Results` with one overall slice holding every :class:`mergeable_metrics.time.continual.OCLMetrics` value
    (``accuracy_matrix``, ``forward_transfer``, ...; ``n`` = events folded), so the JSON, Parquet
    and report writers serve continual results as any other."""
    values = {k: v for k, v in vars(metrics).items() if k not in _AXES}
    cfg = {
        "task": "continual",
        "num_tasks": metrics.n_tasks,
        "num_classes": metrics.n_classes,
        "evaluations_per_task": metrics.n_continual_evaluations,
        "task_index": metrics.task_index.tolist(),
        "anytime_task_index": metrics.anytime_task_index.tolist(),
        "undefined": metrics.undefined,
        **(config or {}),
    }
    return Results([SliceResult(slice=(), n=int(events), weight=float(events), skipped=0, metrics=values)], cfg)


def _columns(label_col: str, prediction_col: str, names: Sequence[str]) -> list[str]:
    want = ["trained_task", "evaluated_task", label_col, prediction_col]
    return want + (["step"] if "step" in names else [])


def run_continual(
    engine: str,
    path: str,
    num_tasks: int,
    num_classes: int,
    evaluations_per_task: int = 0,
    label_col: str = "label",
    prediction_col: str = "prediction",
    fmt: str | None = None,
    beam_args: Sequence[str] = (),
    spark_master: str = "local[2]",
    batch_size: int = 65536,
) -> ContinualEvaluation:
    """Fold the event rows of ``path`` on ``engine`` (local, beam or spark).

    Raises:
        ValueError: a missing column or an invalid value (column, value and row).
    """
    ev = ContinualEvaluation(num_tasks, num_classes, evaluations_per_task)
    fmt = io.detect_format(path, fmt)
    data = io.dataset(path, fmt)
    columns = _columns(label_col, prediction_col, data.schema.names)
    io.check_columns(data, columns, path)
    if engine == "local":
        offset = 0
        for batch in io.iter_batches(path, columns, fmt, batch_size):
            cols = {n: batch.column(i) for i, n in enumerate(batch.schema.names)}
            part = ContinualEvaluation(num_tasks, num_classes, evaluations_per_task)
            part._rows = offset
            part.fold_events(cols, label_col, prediction_col)
            ev.merge(part)
            offset += batch.num_rows
        return ev
    if engine == "beam":
        import apache_beam as beam
        from apache_beam.options.pipeline_options import PipelineOptions

        from mergeable_metrics.beam.continual import ContinualCombineFn

        args = list(beam_args)
        if not any(a.startswith("--runner") for a in args):
            args.append("--runner=DirectRunner")
        tmp = tempfile.mkdtemp(prefix="mm-beam-")
        stage("beam", "folding continual-learning events (CombineGlobally(ContinualCombineFn))")
        try:
            with beam.Pipeline(options=PipelineOptions(args)) as p:
                files = p | "Files" >> beam.Create(io.list_files(path, fmt))
                if fmt == "parquet":
                    batches = files | "Read" >> beam.io.ReadAllFromParquetBatched(columns=columns)
                else:
                    batches = files | "Read" >> beam.FlatMap(lambda f: io.iter_batches(f, columns, fmt, batch_size))
                (
                    batches
                    | "Fold" >> beam.CombineGlobally(ContinualCombineFn(num_tasks, num_classes, evaluations_per_task, label_col, prediction_col))
                    | "Encode" >> beam.Map(lambda e: base64.b64encode(e.encode()).decode("ascii"))
                    | "Write" >> beam.io.WriteToText(os.path.join(tmp, "state"), file_name_suffix=".txt")
                )
            for f in sorted(glob.glob(os.path.join(tmp, "state*.txt"))):
                with open(f) as fh:
                    for line in fh.read().split():
                        ev.merge(ContinualEvaluation.decode(base64.b64decode(line)))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return ev
    if engine == "spark":
        from mergeable_metrics.pipelines.engines import read_spark
        from mergeable_metrics.spark import get_spark
        from mergeable_metrics.spark.continual import continual_evaluation

        stage("spark", "starting Spark (master %s)", spark_master)
        from mergeable_metrics.pipelines.errors import engine_stderr

        with engine_stderr():  # a JVM started here logs to the CLI's log file
            spark = get_spark(master=spark_master)
        schema = io.input_schema(path, fmt, columns, columns)
        df = read_spark(spark, os.path.abspath(path), schema, columns)
        stage("spark", "counting continual-learning events (one native groupBy)")
        return continual_evaluation(df, num_tasks, num_classes, evaluations_per_task, label_col, prediction_col)
    raise ValueError(f"unknown engine {engine!r}")


def event_count(ev: ContinualEvaluation) -> int:
    """Events folded into ``ev`` (``R`` and anytime evaluations)."""
    a = ev.state.arrays
    return int(a["total"].sum() + a["anytime_total"].sum())


def format_ocl(metrics: OCLMetrics) -> str:
    """R and the summary values as text (the CLI prints it)."""
    import numpy as np

    t = metrics.n_tasks
    lines = ["accuracy matrix R (row: after training on task i; column: evaluated on task j)"]
    lines.append("       " + "".join(f"{j:>8d}" for j in range(t)))
    for i in range(t):
        lines.append(f"{i:>6d} " + "".join("     nan" if np.isnan(v) else f"{v:8.4f}" for v in metrics.accuracy_matrix[i]))
    for name in (
        "accuracy_final",
        "accuracy_all_avg",
        "accuracy_seen_avg",
        "anytime_accuracy_all_avg",
        "anytime_accuracy_seen_avg",
        "forward_transfer",
        "backward_transfer",
    ):
        v = getattr(metrics, name)
        lines.append(f"{name:<26} {'nan' if np.isnan(v) else f'{v:.4f}'}")
    if metrics.undefined:
        lines.append("undefined (never evaluated): " + ", ".join(u["metric"] for u in metrics.undefined))
    return "\n".join(lines)


__all__ += ["EVENT_COLUMNS", "event_count", "format_ocl"]
