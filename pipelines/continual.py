"""Continual-learning evaluation from the command line (``--task continual``, ``--example split-digits``).

The input holds one row per evaluation event: ``trained_task``, ``step`` (null, or absent: the
evaluation after the task), ``evaluated_task``, the true class (``--label``, default ``label``) and
the predicted class (``--prediction``, default ``prediction``); with ``--max-instances N``, rows of
the training stream with a ``position`` (0..N-1; ``evaluated_task`` null) are its test-then-train
rows (``ttt``, ``boundaries``, windows of ``--eval-window-size``). Every engine folds the events into
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
_AXES = ("task_index", "anytime_task_index", "n_tasks", "n_classes", "n_continual_evaluations", "undefined", "ttt", "boundaries", "ttt_windowed_task_index")


def ocl_results(metrics: OCLMetrics, events: int, config: dict[str, Any] | None = None) -> Results:
    """:class:`mergeable_metrics.Results` with one overall slice holding every :class:`mergeable_metrics.time.continual.OCLMetrics` value
    (``accuracy_matrix``, ``forward_transfer``, ...; ``n`` = events folded), so the JSON, Parquet
    and report writers serve continual results as any other. With test-then-train rows, also
    ``ttt_accuracy`` / ``ttt_kappa`` (cumulative) and ``ttt_windowed_accuracy`` /
    ``ttt_windowed_kappa`` (per full window); ``boundaries`` and ``ttt_windowed_task_index`` go to
    the config."""
    values = {k: v for k, v in vars(metrics).items() if k not in _AXES}
    ttt: dict[str, Any] = {}
    if metrics.ttt is not None:
        import numpy as np

        values.update(
            ttt_accuracy=metrics.ttt.cumulative.accuracy(),
            ttt_kappa=metrics.ttt.cumulative.kappa(),
            ttt_windowed_accuracy=np.asarray(metrics.ttt.windowed.accuracy(), dtype=np.float64),
            ttt_windowed_kappa=np.asarray(metrics.ttt.windowed.kappa(), dtype=np.float64),
        )
        ttt = {
            "max_instances": metrics.ttt.max_instances,
            "eval_window_size": metrics.ttt.window_size,
            "boundaries": metrics.boundaries.tolist(),
            "ttt_windowed_task_index": metrics.ttt_windowed_task_index.tolist(),
        }
    cfg = {
        "task": "continual",
        "num_tasks": metrics.n_tasks,
        "num_classes": metrics.n_classes,
        "evaluations_per_task": metrics.n_continual_evaluations,
        "task_index": metrics.task_index.tolist(),
        "anytime_task_index": metrics.anytime_task_index.tolist(),
        "undefined": metrics.undefined,
        **ttt,
        **(config or {}),
    }
    return Results([SliceResult(slice=(), n=int(events), weight=float(events), skipped=0, metrics=values)], cfg)


def _columns(label_col: str, prediction_col: str, names: Sequence[str]) -> list[str]:
    want = ["trained_task", "evaluated_task", label_col, prediction_col]
    return want + [c for c in ("step", "position") if c in names]


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
    max_instances: int = 0,
    eval_window_size: int = 1000,
) -> ContinualEvaluation:
    """Fold the event rows of ``path`` on ``engine`` (local, beam or spark); ``max_instances`` and
    ``eval_window_size`` as :class:`mergeable_metrics.ContinualEvaluation` (test-then-train rows).

    Raises:
        ValueError: a missing column or an invalid value (column, value and row).
    """
    config = (num_tasks, num_classes, evaluations_per_task, max_instances, eval_window_size)
    ev = ContinualEvaluation(*config)
    fmt = io.detect_format(path, fmt)
    data = io.dataset(path, fmt)
    columns = _columns(label_col, prediction_col, data.schema.names)
    io.check_columns(data, columns, path)
    if engine == "local":
        offset = 0
        for batch in io.iter_batches(path, columns, fmt, batch_size):
            cols = {n: batch.column(i) for i, n in enumerate(batch.schema.names)}
            part = ContinualEvaluation(*config)
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
                    | "Fold"
                    >> beam.CombineGlobally(
                        ContinualCombineFn(num_tasks, num_classes, evaluations_per_task, label_col, prediction_col, max_instances, eval_window_size)
                    )
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
        return continual_evaluation(df, num_tasks, num_classes, evaluations_per_task, label_col, prediction_col, max_instances, eval_window_size)
    raise ValueError(f"unknown engine {engine!r}")


def event_count(ev: ContinualEvaluation) -> int:
    """Events folded into ``ev`` (``R`` and anytime evaluations, test-then-train rows)."""
    a = ev.state.arrays
    return int(a["total"].sum() + a["anytime_total"].sum() + a["ttt_tasks"].sum())


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
    if metrics.ttt is not None:
        acc = metrics.ttt.windowed.accuracy()
        lines.append(f"{'ttt_accuracy':<26} {_num(metrics.ttt.accuracy())}  (test-then-train, {metrics.ttt.cumulative.instances_seen} rows)")
        lines.append(f"{'ttt_kappa':<26} {_num(metrics.ttt.kappa())}")
        lines.append(f"{'boundaries':<26} {metrics.boundaries.tolist()}")
        lines.append(
            f"ttt windowed accuracy ({len(acc)} windows of {metrics.ttt.window_size}): "
            + " ".join(_num(v) for v in acc[:20])
            + (" ..." if len(acc) > 20 else "")
        )
    if metrics.undefined:
        lines.append("undefined (never evaluated): " + ", ".join(u["metric"] for u in metrics.undefined))
    return "\n".join(lines)


def _num(v: float) -> str:
    return "nan" if v != v else f"{v:.4f}"


__all__ += ["EVENT_COLUMNS", "event_count", "format_ocl"]
