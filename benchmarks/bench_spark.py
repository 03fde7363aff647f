"""Spark local[2] benchmark: ``compute_metrics`` against MLlib's evaluators on one cached DataFrame.

Usage::

    python -m benchmarks.bench_spark            # 10M cached rows (MLlib binary AUC on 2M of them)
    python -m benchmarks.bench_spark --quick    # 300K rows, one repeat
    python -m benchmarks.bench_spark --rows 3000000 --binary-rows 1000000

The DataFrame (``spark.range`` with columns ``label`` 0/1 int, ``score`` double in [0, 1],
``prediction`` double (``score >= 0.5``), ``label_d`` double, ``slice`` a string with 10 values)
is generated in Spark, cached and counted before any timing. Timed, with wall-clock medians of
interleaved repeats:

* ours: ``mergeable_metrics.spark.compute_metrics(df, slices=["slice"], metrics=[example_count, roc_auc,
  precision, recall])`` collected with ``collect_results`` (11 slices with the overall one);
* the same, as before the driver-side merge and the larger Arrow batches (100,000 rows,
  ``evaluate(..., driver_merge_bytes=0)``), for the ratio of the change in one session;
* ours, native (``mergeable_metrics.spark.sql_path``: Spark SQL aggregates, no Python on the row path) for
  plans without AUC: ``metrics=[example_count, precision, recall, f1]`` with the same 11 slices
  (also timed on the Arrow path, ``native=False``), and one global ``f1`` (what MLlib's
  evaluator computes);
* ``MulticlassClassificationEvaluator(metricName="f1")`` (one global F1);
* ``BinaryClassificationEvaluator(metricName="areaUnderROC", rawPredictionCol="score")`` (one
  global AUC). It is slow (a full sort), so by default it runs once on the first
  ``--binary-rows`` rows (cached separately); its rows/s is compared with ours.

With ``--profile`` it also times the stages of the Arrow-path job on the same DataFrame, each a
prefix of the job (so the differences are what each stage adds): a ``mapInArrow`` that only
counts its rows (the JVM -> Arrow -> Python hand-over), one that folds each partition into an
accumulator (core's fold), one that also encodes the per-slice states (what crosses the
shuffle), and the whole job (shuffle of the encoded states, per-slice merge and finish).

Targets: ours at least 2x faster than the multiclass evaluator and 50x faster than the binary one
(as rows/s). The session is ``mergeable_metrics.spark.get_spark()`` (local[2], Arrow enabled).
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from benchmarks._harness import Result, format_table, machine_line, rate

METRICS = ["example_count", "roc_auc", "precision", "recall"]
NATIVE_METRICS = ["example_count", "precision", "recall", "f1"]


def make_df(spark, n: int, partitions: int = 4, seed: int = 0):
    from pyspark.sql import functions as F

    df = spark.range(0, n, numPartitions=partitions)
    u = F.rand(seed)
    df = df.select(
        (F.rand(seed + 1) < 0.5).cast("int").alias("label"),
        u.alias("u"),
        F.concat(F.lit("s"), (F.col("id") % 10).cast("string")).alias("slice"),
    )
    df = df.select(
        "label",
        F.least(F.lit(1.0), 0.3 * F.col("label") + 0.7 * F.col("u")).alias("score"),
        "slice",
    )
    return df.select("label", F.col("label").cast("double").alias("label_d"), "score", (F.col("score") >= 0.5).cast("double").alias("prediction"), "slice")


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def stage_jobs(df, evaluation) -> dict[str, object]:
    """Prefixes of the Arrow-path job of :func:`mergeable_metrics.spark.compute_metrics` (see ``--profile``):
    name -> a function running it (an action)."""
    import pyarrow as pa

    from mergeable_metrics.spark import evaluate
    from mergeable_metrics.spark._frames import arrow_input, fold_partition_batches, prepare_columns
    from mergeable_metrics.spark.aggregator import MetricsAggregator

    inp = arrow_input(df, prepare_columns(df, evaluation))
    agg = MetricsAggregator(evaluation)
    names = evaluation.columns

    def count_only(batches):
        yield pa.RecordBatch.from_pydict({"n": [sum(b.num_rows for b in batches)]})

    def fold_only(batches):
        acc = fold_partition_batches(batches, agg.zero(), agg.reduce, names)
        yield pa.RecordBatch.from_pydict({"n": [len(acc)]})

    def fold_encode(batches):
        acc = fold_partition_batches(batches, agg.zero(), agg.reduce, names)
        yield pa.RecordBatch.from_pydict({"n": [sum(len(evaluation.slice_codec.encode(v)) for _, v in acc.items())]})

    return {
        "hand-over": lambda: inp.mapInArrow(count_only, "n long").collect(),
        "fold": lambda: inp.mapInArrow(fold_only, "n long").collect(),
        "fold+encode": lambda: inp.mapInArrow(fold_encode, "n long").collect(),
        "whole job": lambda: evaluate(df, evaluation=evaluation, native=False),
    }


def profile(df, evaluation, n: int, repeats: int) -> list[Result]:
    """Wall-clock medians of the :func:`stage_jobs`, timed interleaved, as rows."""
    jobs = stage_jobs(df, evaluation)
    for fn in jobs.values():  # warm-up
        fn()
    times: dict[str, list[float]] = {k: [] for k in jobs}
    for _ in range(repeats):
        for k, fn in jobs.items():
            times[k].append(_timed(fn))
    t = {k: float(np.median(v)) for k, v in times.items()}
    out, before = [], 0.0
    for k in jobs:
        out.append(
            Result(
                "spark",
                f"Arrow path up to: {k}",
                rate(n, t[k]),
                reference="the whole job",
                ref_value=rate(n, t["whole job"]),
                ratio=t[k] / t["whole job"],
                note=f"median of {repeats}: {t[k]:.2f} s, this stage adds {t[k] - before:.2f} s",
            )  # fmt: skip
        )
        before = t[k]
    return out


def run(n: int = 10_000_000, binary_rows: int = 2_000_000, repeats: int = 3, partitions: int = 4, with_profile: bool = False) -> list[Result]:
    from pyspark.ml.evaluation import BinaryClassificationEvaluator, MulticlassClassificationEvaluator

    from mergeable_metrics import Evaluation
    from mergeable_metrics.spark import evaluate, get_spark

    spark = get_spark()
    spark.sparkContext.setLogLevel("ERROR")
    df = make_df(spark, n, partitions).cache()
    t_cache = _timed(df.count)
    ev = Evaluation(label_col="label", score_col="score", slices=["slice"], metrics=METRICS)
    ours = lambda: evaluate(df, evaluation=ev)  # noqa: E731

    def before():  # the previous configuration: 100,000-row Arrow batches, the merge on the executors
        spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "100000")
        try:
            return evaluate(df, evaluation=ev, driver_merge_bytes=0)
        finally:
            spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", batch)

    batch = spark.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch")
    ev_counts = Evaluation(label_col="label", score_col="score", slices=["slice"], metrics=NATIVE_METRICS)
    ev_global = Evaluation(label_col="label", score_col="score", metrics=["f1"])
    native = lambda: evaluate(df, evaluation=ev_counts, native=True)  # noqa: E731
    native_global = lambda: evaluate(df, evaluation=ev_global, native=True)  # noqa: E731
    arrow_counts = lambda: evaluate(df, evaluation=ev_counts, native=False)  # noqa: E731
    f1 = MulticlassClassificationEvaluator(metricName="f1", labelCol="label_d", predictionCol="prediction")
    auc = BinaryClassificationEvaluator(metricName="areaUnderROC", labelCol="label_d", rawPredictionCol="score")
    res = ours()  # warm-up: Python workers, imports
    assert before().to_json() == res.to_json()  # the same results either way
    native()
    native_global()
    f1.evaluate(df)
    times: dict[str, list[float]] = {"ours": [], "before": [], "native": [], "native_global": [], "arrow_counts": [], "f1": []}
    for _ in range(repeats):
        times["ours"].append(_timed(ours))
        times["before"].append(_timed(before))
        times["native"].append(_timed(native))
        times["native_global"].append(_timed(native_global))
        times["arrow_counts"].append(_timed(arrow_counts))
        times["f1"].append(_timed(lambda: f1.evaluate(df)))
    t = {k: float(np.median(v)) for k, v in times.items()}
    stages = profile(df, ev, n, repeats) if with_profile else []
    m = min(n, binary_rows)
    dfb = df.limit(m).cache() if m < n else df
    if m < n:
        dfb.count()
    t_auc = _timed(lambda: auc.evaluate(dfb))
    if m < n:
        dfb.unpersist()
    df.unpersist()
    overall = res[()]
    exact = overall.metrics["roc_auc"]
    out: list[Result] = []
    part = "spark"
    ours_rate = rate(n, t["ours"])
    f1_rate = rate(n, t["f1"])
    auc_rate = rate(m, t_auc)
    label = f"compute_metrics, {n:,} cached rows, 11 slices x (count, AUC, precision, recall)"
    out.append(
        Result(
            part,
            label,
            ours_rate,
            reference="MLlib MulticlassClassificationEvaluator (global F1)",
            ref_value=f1_rate,
            ratio=ours_rate / f1_rate,
            target=">= 2x",
            met=ours_rate / f1_rate >= 2,
            note=f"medians of {repeats}: ours {t['ours']:.1f} s, MLlib F1 {t['f1']:.1f} s; caching took {t_cache:.1f} s (untimed); overall AUC {float(exact):.4f}",
        )  # fmt: skip
    )
    out.append(
        Result(
            part,
            label,
            ours_rate,
            reference="MLlib BinaryClassificationEvaluator (global AUC)",
            ref_value=auc_rate,
            ratio=ours_rate / auc_rate,
            target=">= 50x",
            met=ours_rate / auc_rate >= 50,
            note=f"MLlib AUC measured once on {m:,} rows ({t_auc:.1f} s)" + (f" (a cached subset of the {n:,}; it sorts all scores)" if m < n else ""),
        )  # fmt: skip
    )
    out.append(
        Result(
            part,
            label,
            ours_rate,
            reference=f"the same before this change (100,000-row Arrow batches, merge on the executors; ours: {int(batch):,}-row batches, merge on the driver)",
            ref_value=rate(n, t["before"]),
            ratio=t["before"] / t["ours"],
            note=f"medians of {repeats}: ours {t['ours']:.1f} s, before {t['before']:.1f} s; same results",
        )  # fmt: skip
    )
    r = rate(n, t["native"])
    out.append(
        Result(
            part,
            f"compute_metrics native, {n:,} cached rows, 11 slices x (count, precision, recall, f1)",
            r,
            reference="the same plan on the Arrow path (native=False)",
            ref_value=rate(n, t["arrow_counts"]),
            ratio=t["arrow_counts"] / t["native"],
            note=f"medians of {repeats}: native {t['native']:.2f} s, Arrow path {t['arrow_counts']:.2f} s",
        )  # fmt: skip
    )
    for key, what in (("native", "11 slices x (count, precision, recall, f1)"), ("native_global", "global f1 only")):
        r = rate(n, t[key])
        out.append(
            Result(
                part,
                f"compute_metrics native, {n:,} cached rows, {what}",
                r,
                reference="MLlib MulticlassClassificationEvaluator (global F1)",
                ref_value=f1_rate,
                ratio=r / f1_rate,
                target=">= 2x",
                met=r / f1_rate >= 2,
                note=f"medians of {repeats}: ours {t[key]:.2f} s, MLlib F1 {t['f1']:.2f} s; Spark SQL aggregates (mergeable_metrics.spark.sql_path)",
            )  # fmt: skip
        )
    return out + stages


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.bench_spark", description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="300K rows, one repeat")
    p.add_argument("--rows", type=int)
    p.add_argument("--binary-rows", type=int, help="rows for MLlib's binary evaluator (default 2,000,000)")
    p.add_argument("--repeats", type=int)
    p.add_argument("--partitions", type=int, default=4)
    p.add_argument("--markdown", action="store_true")
    p.add_argument("--profile", action="store_true", help="also time the stages of the Arrow-path job")
    a = p.parse_args(argv)
    n = a.rows or (300_000 if a.quick else 10_000_000)
    repeats = a.repeats or (1 if a.quick else 3)
    binary_rows = a.binary_rows or (n if a.quick else 2_000_000)
    print(f"# bench_spark: {n:,} rows, {repeats} repeats, wall clock; {machine_line()}")
    print(format_table(run(n, binary_rows, repeats, a.partitions, a.profile), markdown=a.markdown))
    return 0


if __name__ == "__main__":
    sys.exit(main())
