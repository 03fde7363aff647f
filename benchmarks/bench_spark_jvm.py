"""Spark local[2] benchmark of the JVM path (:mod:`mergeable_metrics.spark.jvm`): Java aggregates folding core's states.

Usage::

    python -m benchmarks.bench_spark_jvm              # 3M cached rows, 5 interleaved repeats
    python -m benchmarks.bench_spark_jvm --quick      # 300K rows, 2 repeats

The DataFrame is :func:`benchmarks.bench_spark.make_df`'s (label 0/1, score in [0, 1], prediction, 10 slice
values), cached and counted before any timing. Timed, wall-clock medians of interleaved repeats (in alternating
order), each job collected to the driver; the note also gives the median CPU seconds of each job (the driver's
and every process under it: the JVM, executors of ``local[n]`` included, and its Python workers), steadier than
the wall clock on a shared machine:

* global F1: ours (``metric_state_column(["f1"])`` collected, finished on the driver; and ``metric_columns``,
  whose count metrics finish in Java, in the same aggregate: no Python worker) against ``MulticlassClassificationEvaluator(metricName="f1")`` (target: >= 2x);
* 11 slices (10 values and the overall slice) x (count, precision, recall, f1) against the plain SQL floor
  ``groupBy(slice, label, prediction).count()`` (target: >= 0.8 of its speed): ``groupBy("slice")`` with
  ``finish_metric_states(..., overall=True)`` (the overall slice merged on the driver from the 10 groups'
  states), and ``rollup("slice")`` with ``metric_columns`` (Spark aggregates every row twice);
* with the float kinds ported (roc_auc): global ``roc_auc`` against ``BinaryClassificationEvaluator``
  (>= 20x; MLlib's evaluator sorts every row, so it is timed once, in the first round) and against
  ``groupBy(label, round(score, 4)).count()`` (>= 0.8); 11 slices x (count, roc_auc, precision, recall)
  against ``groupBy(slice, label, round(score, 4)).count()`` (>= 0.8), also as ``rollup("slice")`` with
  ``metric_columns`` (roc_auc finished in Java since issue 26 round 4; and, for comparison, with core's finish
  in a Python UDF as before);
* regression (issue 26 round 5; target ``label_d``, prediction ``score``): global ``r2`` (``metric_columns``)
  against MLlib's ``RegressionEvaluator``; 11 slices x (count, r2, mse, mae, mape) with ``rollup("slice")`` and
  ``metric_columns`` (Java finish, and a Python UDF finish for comparison) against plain SQL float sums of the same
  moments (``rollup("slice").agg(sum(...))``: not exact); ``compute_metrics`` (JVM fold) against its Arrow path;
* ``compute_metrics`` of classification plans (issue 26 item 2), 11 slices, the JVM path against the Arrow path
  (``native=False``): binary ``roc_auc``, ``average_precision``, ``f1``, ``log_loss`` (and ``evaluate``'s JVM
  path), and a weighted 4-class plan of predictions (``f1@macro``, ``accuracy``, ``precision@macro``,
  ``recall@macro``; 4 classes from the score, a fractional weight; the frame cached at its first use).
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from benchmarks._harness import machine_line
from benchmarks.bench_spark import make_df

COUNTS = ["example_count", "precision", "recall", "f1"]


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _cpu_clock(spark):
    """A function returning the CPU seconds used so far by this Python driver and every process under it (``utime +
    stime + cutime + cstime`` of ``/proc/<pid>/stat``): the session's JVM (the executors of ``local[n]``) and its
    Python daemon and workers (``mapInArrow``, ``applyInArrow``: the Arrow path's folds and merges); None where
    ``/proc`` is missing. (Before helper cm26 it counted the JVM and the driver only, which left out the Python
    workers' time.) On a shared machine the wall clock also counts other processes' time slices."""
    import os

    try:
        spark._jvm.java.lang.ProcessHandle.current().pid()  # a classic session: its JVM is a child of this process
        tick = os.sysconf("SC_CLK_TCK")
        open(f"/proc/{os.getpid()}/stat").close()
    except Exception:  # pragma: no cover - no /proc, or a Connect session
        return None
    root = os.getpid()

    def clock() -> float:
        parent: dict[int, int] = {}
        ticks: dict[int, int] = {}
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                with open(f"/proc/{name}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:  # the process ended meanwhile
                continue
            parent[int(name)] = int(fields[1])
            ticks[int(name)] = sum(int(x) for x in fields[11:15])
        total = 0
        for pid, t in ticks.items():
            p = pid
            while p not in (root, 0, 1) and p in parent:
                p = parent[p]
            if p == root:
                total += t
        return total / tick

    return clock


def jobs(spark, df) -> dict[str, object]:
    from pyspark.ml.evaluation import MulticlassClassificationEvaluator
    from pyspark.sql import functions as F

    from mergeable_metrics.spark import finish_metric_states, jvm, metric_columns, metric_state_column

    out: dict[str, object] = {}
    f1 = MulticlassClassificationEvaluator(metricName="f1", labelCol="label_d", predictionCol="prediction")
    out["mllib_f1"] = lambda: f1.evaluate(df)
    args = dict(label_col="label", score_col="score")
    out["ours_f1_driver"] = lambda: finish_metric_states(df.agg(metric_state_column(["f1"], **args)).collect(), ["f1"], **args)
    out["ours_f1_columns"] = lambda: df.agg(*metric_columns(["f1"], engine="jvm", **args)).collect()
    # issue 26 round 6: the same two jobs folded by the typed Aggregator (jvm.NATIVE_COUNTS off), with the built
    # Columns cached (this round) and rebuilt per call (round 5's code)
    out["ours_f1_driver_aggregator"] = lambda: _aggregator(out["ours_f1_driver"])
    out["ours_f1_driver_round5"] = lambda: _aggregator(out["ours_f1_driver"], cached=False)
    out["ours_f1_columns_round5"] = lambda: _aggregator(out["ours_f1_columns"], cached=False)
    out["floor_sliced"] = lambda: df.groupBy("slice", "label", "prediction").count().collect()
    out["ours_sliced_driver"] = lambda: finish_metric_states(
        df.groupBy("slice").agg(metric_state_column(COUNTS, **args)).collect(), COUNTS, overall=True, **args
    )
    out["ours_sliced_columns"] = lambda: df.rollup("slice").agg(*metric_columns(COUNTS, engine="jvm", **args)).collect()
    try:
        from mergeable_metrics import Evaluation

        auc_ok = jvm.evaluation_spec(Evaluation(metrics=["roc_auc"], **args))[0] is not None
    except Exception:  # pragma: no cover
        auc_ok = False
    if auc_ok:
        from pyspark.ml.evaluation import BinaryClassificationEvaluator

        auc = BinaryClassificationEvaluator(metricName="areaUnderROC", rawPredictionCol="score", labelCol="label_d")
        out["mllib_auc"] = lambda: auc.evaluate(df)
        out["ours_auc_driver"] = lambda: finish_metric_states(df.agg(metric_state_column(["roc_auc"], **args)).collect(), ["roc_auc"], **args)
        sliced = ["example_count", "roc_auc", "precision", "recall"]
        out["ours_auc_sliced"] = lambda: finish_metric_states(
            df.groupBy("slice").agg(metric_state_column(sliced, **args)).collect(), sliced, overall=True, **args
        )
        out["ours_auc_sliced_columns"] = lambda: df.rollup("slice").agg(*metric_columns(sliced, engine="jvm", **args)).collect()
        out["ours_auc_sliced_columns_udf"] = lambda: _python_finish(lambda: df.rollup("slice").agg(*metric_columns(sliced, engine="jvm", **args)).collect())
        out["floor_auc_sliced"] = lambda: df.groupBy("slice", "label", F.round("score", 4)).count().collect()
        out["floor_auc"] = lambda: df.groupBy("label", F.round("score", 4)).count().collect()
    # regression (issue 26 round 5): target label_d (0/1), prediction score
    from pyspark.ml.evaluation import RegressionEvaluator

    from mergeable_metrics import Evaluation
    from mergeable_metrics.spark import collect_results, compute_metrics

    reg = dict(label_col="label_d", score_col="score", task="regression")
    out["mllib_r2"] = lambda: RegressionEvaluator(metricName="r2", labelCol="label_d", predictionCol="score").evaluate(df)
    out["ours_r2_columns"] = lambda: df.agg(*metric_columns(["r2"], engine="jvm", **reg)).collect()
    out["ours_reg_sliced_columns"] = lambda: df.rollup("slice").agg(*metric_columns(REGRESSION, engine="jvm", **reg)).collect()
    out["ours_reg_sliced_columns_udf"] = lambda: _python_finish(lambda: df.rollup("slice").agg(*metric_columns(REGRESSION, engine="jvm", **reg)).collect())
    e = F.col("score") - F.col("label_d")
    y = F.col("label_d")
    out["floor_reg_sliced"] = lambda: (
        df.rollup("slice")
        .agg(F.count("*"), F.sum(y), F.sum(y * y), F.sum(e * e), F.sum(F.abs(e)), F.sum(F.abs(e) / F.greatest(F.abs(y), F.lit(2.0**-52))))
        .collect()
    )
    ev = Evaluation(metrics=REGRESSION, slices=["slice"], **reg)
    out["ours_reg_compute_metrics"] = lambda: collect_results(compute_metrics(df, evaluation=ev), ev)
    out["arrow_reg_compute_metrics"] = lambda: collect_results(compute_metrics(df, evaluation=ev, native=False), ev)
    # issue 26 item 2 (helper cm26): compute_metrics of classification plans, the JVM path (the driver merges and
    # finishes the groups' states) against the Arrow path; a binary plan and a weighted 4-class plan, 11 slices
    from mergeable_metrics.spark import evaluate

    binary = Evaluation(label_col="label", score_col="score", metrics=BINARY, slices=["slice"])
    out["ours_bin_compute_metrics"] = lambda: collect_results(compute_metrics(df, evaluation=binary), binary)
    out["arrow_bin_compute_metrics"] = lambda: collect_results(compute_metrics(df, evaluation=binary, native=False), binary)
    out["ours_bin_evaluate"] = lambda: evaluate(df, evaluation=binary)
    t = F.least(F.lit(3), F.floor(F.col("score") * 4)).cast("int")  # 4 classes from the score, predictions off by the label
    dfm = df.select(
        "slice", t.alias("t"), ((t + F.col("label") * (F.col("prediction") + 1)).cast("int") % 4).alias("q"), (F.col("score") + 0.25).alias("w")
    ).cache()
    multi = Evaluation(label_col="t", prediction_col="q", weight_col="w", task="multiclass", num_classes=4, metrics=MULTICLASS, slices=["slice"])
    out["ours_mc_compute_metrics"] = lambda: collect_results(compute_metrics(dfm, evaluation=multi), multi)
    out["arrow_mc_compute_metrics"] = lambda: collect_results(compute_metrics(dfm, evaluation=multi, native=False), multi)
    return out


#: the binary plan of compute_metrics' classification jobs
BINARY = ["roc_auc", "average_precision", "f1", "log_loss"]
#: the weighted 4-class plan of compute_metrics' classification jobs
MULTICLASS = ["f1@macro", "accuracy", "precision@macro", "recall@macro"]


#: the regression metrics of the regression jobs
REGRESSION = ["example_count", "r2", "mse", "mae", "mape"]


def _aggregator(fn, cached: bool = True):
    """``fn()`` with the count kinds folded by the typed Aggregator (before issue 26 round 6); ``cached=False``:
    the aggregate Column rebuilt on every call, as before round 6."""
    from mergeable_metrics.spark import jvm

    jvm.NATIVE_COUNTS = False
    try:
        if not cached:
            jvm._columns.clear()
        return fn()
    finally:
        jvm.NATIVE_COUNTS = True
        if not cached:
            jvm._columns.clear()


def _python_finish(fn):
    """``fn()`` with roc_auc (and the other float metrics) finished by core in a Python UDF, as before round 4."""
    from unittest import mock

    from mergeable_metrics.spark import jvm_finish

    with mock.patch.dict(jvm_finish._FLOAT_FINISH, clear=True), mock.patch.dict(jvm_finish._REGRESSION_FINISH, clear=True):
        return fn()


def run(n: int, repeats: int, partitions: int = 4, only: list[str] | None = None) -> list[tuple[str, float, float, str]]:
    from mergeable_metrics.spark import get_spark, jvm

    spark = get_spark()
    spark.sparkContext.setLogLevel("ERROR")
    if not jvm.available(spark):
        raise SystemExit(jvm.NO_JDK)
    df = make_df(spark, n, partitions).cache()
    df.count()
    fns = jobs(spark, df)
    if only:
        fns = {k: v for k, v in fns.items() if k in only}
    once = {"mllib_auc"}  # a full sort of every row: minutes under load, so timed once (in the first round)
    for k, fn in fns.items():  # warm-up: registration, code generation
        if k not in once:
            fn()
    times: dict[str, list[float]] = {k: [] for k in fns}
    cpu: dict[str, list[float]] = {k: [] for k in fns}
    clock = _cpu_clock(spark)
    for i in range(repeats):
        for k, fn in list(fns.items())[:: 1 if i % 2 == 0 else -1]:  # alternating order (issue 26 round 7)
            if k not in once or i == 0:
                c0 = clock() if clock else 0.0
                times[k].append(_timed(fn))
                cpu[k].append((clock() - c0) if clock else float("nan"))
    t = {k: float(np.median(v)) for k, v in times.items()}
    c = {k: float(np.median(v)) for k, v in cpu.items()}
    rows = []

    def row(name: str, ours: str, ref: str, target: float) -> None:
        if ours not in t or ref not in t:
            return
        ratio = t[ref] / t[ours]
        cpu_note = f"; CPU {c[ours]:.2f} s vs {c[ref]:.2f} s: {c[ref] / c[ours]:.2f}x" if clock else ""
        rows.append((name, t[ours], ratio, f"vs {ref} {t[ref]:.2f} s (target >= {target:g}x: {'met' if ratio >= target else 'NOT met'}){cpu_note}"))

    row("global f1, driver finish", "ours_f1_driver", "mllib_f1", 2.0)
    row("global f1, metric_columns (Java finish)", "ours_f1_columns", "mllib_f1", 2.0)
    row("global f1, driver finish, typed Aggregator (Column cached)", "ours_f1_driver_aggregator", "mllib_f1", 2.0)
    row("global f1, driver finish, round 5 (typed Aggregator, Column rebuilt)", "ours_f1_driver_round5", "mllib_f1", 2.0)
    row("global f1, metric_columns, round 5 (typed Aggregator, Column rebuilt)", "ours_f1_columns_round5", "mllib_f1", 2.0)
    row("11 slices x (count, P, R, F1), driver finish", "ours_sliced_driver", "floor_sliced", 0.8)
    row("11 slices x (count, P, R, F1), rollup + metric_columns (Java finish)", "ours_sliced_columns", "floor_sliced", 0.8)
    row("global roc_auc vs MLlib", "ours_auc_driver", "mllib_auc", 20.0)  # rows of jobs not run (--only, no JVM port) are left out
    row("global roc_auc vs SQL floor", "ours_auc_driver", "floor_auc", 0.8)
    row("11 slices x (count, roc_auc, P, R) vs sliced SQL floor", "ours_auc_sliced", "floor_auc_sliced", 0.8)
    row("11 slices x (count, roc_auc, P, R), rollup + metric_columns (Java finish)", "ours_auc_sliced_columns", "floor_auc_sliced", 0.8)
    row("11 slices x (count, roc_auc, P, R), rollup + metric_columns (roc_auc: Python UDF finish)", "ours_auc_sliced_columns_udf", "floor_auc_sliced", 0.8)
    row("global r2, metric_columns (Java finish) vs MLlib RegressionEvaluator", "ours_r2_columns", "mllib_r2", 1.0)
    row("11 slices x (count, r2, mse, mae, mape), rollup + metric_columns (Java finish) vs SQL float sums", "ours_reg_sliced_columns", "floor_reg_sliced", 0.8)
    row("11 slices x regression, rollup + metric_columns (Python UDF finish)", "ours_reg_sliced_columns_udf", "floor_reg_sliced", 0.8)
    row("11 slices x regression, compute_metrics JVM fold vs its Arrow path", "ours_reg_compute_metrics", "arrow_reg_compute_metrics", 1.0)
    row("11 slices x (roc_auc, AP, f1, log_loss), compute_metrics JVM path vs its Arrow path", "ours_bin_compute_metrics", "arrow_bin_compute_metrics", 1.0)
    row("11 slices x (roc_auc, AP, f1, log_loss), compute_metrics JVM path vs evaluate's", "ours_bin_compute_metrics", "ours_bin_evaluate", 1.0)
    row(
        "11 slices x weighted 4-class (f1, accuracy, P, R @macro), compute_metrics JVM path vs its Arrow path",
        "ours_mc_compute_metrics",
        "arrow_mc_compute_metrics",
        1.0,
    )
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.bench_spark_jvm", description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="300K rows, 2 repeats")
    p.add_argument("--rows", type=int)
    p.add_argument("--repeats", type=int)
    p.add_argument("--partitions", type=int, default=4)
    p.add_argument("--only", help="comma-separated job names (e.g. ours_auc_sliced_columns,ours_auc_sliced_columns_udf,floor_auc_sliced)")
    a = p.parse_args(argv)
    n = a.rows or (300_000 if a.quick else 3_000_000)
    repeats = a.repeats or (2 if a.quick else 5)
    print(f"# bench_spark_jvm: {n:,} cached rows, medians of {repeats} interleaved repeats, wall clock; {machine_line()}")
    print("| workload | ours (s) | speed ratio | note |\n|---|---|---|---|")
    for name, sec, ratio, note in run(n, repeats, a.partitions, a.only.split(",") if a.only else None):
        print(f"| {name} | {sec:.2f} | {ratio:.2f}x | {note} |")
    print(f"# after: {machine_line()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
