"""The driver side of the standalone-cluster test (tests/spark_metrics/test_cluster.py).

Only one SparkSession can live in a Python process and the test session already holds a
``local[2]`` one, so the test runs this module in a subprocess against the standalone master::

    python -m tests.spark_metrics.cluster_job spark://127.0.0.1:PORT MARKER_DIR OUT.json

For every case of :data:`CASES` it runs ``compute_metrics`` on the cluster twice: as is, and with a
fault injected by :func:`probe_fn` (the first attempt of one task in *every* stage that reads the
input, and of one task of the final merge stage, fails after passing half of its rows on; Spark
retries it). It writes the raw result rows and the collected Results' ``to_json()`` of both runs
as JSON. The test computes the same cases on ``local[2]`` and with core's direct fold and compares.
The cases and the data are defined here once, for both sides.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

#: rows of the seeded input, and its partitions on both sides (parallelize + repartition shuffle)
N_ROWS = 6_000
N_PARTITIONS = 4

_THRESHOLD = ["accuracy", "precision", "recall", "f1", "tp", "fp", "tn", "fn", "example_count"]
#: name -> (mergeable_metrics.Evaluation keyword arguments, ``native`` argument of compute_metrics)
CASES: dict[str, tuple[dict[str, Any], bool]] = {
    # native Spark SQL aggregates: binary confusion and KxK confusion-matrix cells
    "binary-native": (dict(label_col="y", score_col="score", weight_col="w", slices=["carrier", "origin", "carrier,origin"],
                           metrics=_THRESHOLD), True),
    "multiclass-native": (dict(label_col="k", prediction_col="kp", num_classes=4, weight_col="w", slices=["carrier", "origin,carrier"],
                               metrics=["accuracy", "f1@macro", "f1@none", "confusion_matrix", "cohen_kappa"]), True),
    # the Arrow path: score distributions (AUC, average precision), threshold metrics, and the
    # counting job of max_slices / quantile specs. Float-valued sums (log loss, Brier) are left
    # out: their order independence is not exact yet (issue 11, item 7); integer-valued weights
    # keep every other sum exact in any order.
    "arrow-auc-max-slices": (dict(label_col="y", score_col="score", weight_col="w",
                                  slices=["tail;max_slices=5", "carrier", "dist:quantiles=4", "origin,tail;max_slices=4;by=weight"],
                                  metrics=["roc_auc", "average_precision", *_THRESHOLD]), False),
}  # fmt: skip


def make_pdf() -> Any:
    """The seeded input as a pandas DataFrame: binary and multiclass labels, scores, integer-valued
    float weights (some zero: sums stay exact in any order), string slices with nulls, a 40-value
    column for ``max_slices`` and a numeric one for quantile buckets."""
    import pandas as pd

    rng = np.random.default_rng(20261201)
    n = N_ROWS
    y = rng.integers(0, 2, n)
    k = rng.integers(0, 4, n)
    carrier = rng.choice(np.array(["AA", "B6", "DL", "UA", None], dtype=object), n, p=[0.3, 0.25, 0.2, 0.15, 0.1])
    return pd.DataFrame(
        {
            "y": y,
            "score": np.round(np.clip(0.35 * y + rng.random(n) * 0.75, 0, 1), 4),  # ties too
            "k": k,
            "kp": np.where(rng.random(n) < 0.6, k, rng.integers(0, 4, n)),
            "w": rng.integers(0, 4, n).astype(np.float64),
            "carrier": carrier,
            "origin": rng.choice(np.array(["EWR", "JFK", "LGA"]), n),
            "tail": np.char.add("N", rng.zipf(1.6, n).clip(1, 40).astype(str)).astype(object),
            "dist": rng.integers(100, 3000, n),
        }
    )


def evaluation(name: str) -> Any:
    """The ``mergeable_metrics.Evaluation`` of case ``name``."""
    import mergeable_metrics

    return mergeable_metrics.Evaluation(**CASES[name][0])


def canonical_rows(rows: list[dict]) -> list[dict]:
    """Result rows with NaN -> None, sorted: unordered long-format tables compare exactly."""
    out = [{k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()} for r in rows]
    return sorted(out, key=lambda r: (r["slice"], r["metric"], r["index"] or ""))


def probe_fn(marker_dir: str, fail_partition: int | None) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """A ``mapInArrow`` pass-through that records each task attempt and can fail it once.

    Every task attempt touches ``<marker_dir>/s<stage>-p<partition>-a<attempt>-e<executor>`` (the
    executor id comes from the executor's log URL; ``driver`` on a local master). With
    ``fail_partition`` set, the first attempt of that partition passes half of its first batch on
    and then raises, so the downstream fold has already seen rows of the failed attempt: a
    retried task must not count them twice.
    """

    def probe(batches: Iterator[Any]) -> Iterator[Any]:
        import re

        from pyspark import TaskContext

        import mergeable_metrics

        ctx = TaskContext.get()
        url = os.environ.get("SPARK_LOG_URL_STDERR", "")
        m = re.search(r"executorId=(\w+)", url)
        executor = m.group(1) if m else "driver"
        name = f"s{ctx.stageId()}-p{ctx.partitionId()}-a{ctx.attemptNumber()}-e{executor}"
        Path(marker_dir, name).write_text(str(Path(mergeable_metrics.__file__).resolve()))
        fail = ctx.partitionId() == fail_partition and ctx.attemptNumber() == 0
        for batch in batches:
            if fail and batch.num_rows:
                yield batch.slice(0, batch.num_rows // 2)
                raise RuntimeError(f"injected failure of the first attempt of task {name}")
            yield batch

    return probe


def input_frame(spark: Any) -> Any:
    """:func:`make_pdf` as a Spark DataFrame of ``N_PARTITIONS`` partitions (a shuffle: each job
    reads it anew, across the executors)."""
    return spark.createDataFrame(make_pdf()).repartition(N_PARTITIONS)


def run_case(df: Any, name: str, marker_dir: str | None = None, fail: bool = False) -> dict[str, Any]:
    """Run case ``name`` on ``df`` (:func:`input_frame`); return its raw rows (canonical) and the
    ``to_json()`` of the Results they collect into (with the profiled evaluation, as
    ``evaluate`` does).

    With ``marker_dir``, the input and the result go through :func:`probe_fn` (failing partition 1
    of every input stage and partition 0 of the merge stage on their first attempt when ``fail``).
    """
    from mergeable_metrics.spark import compute_metrics, profile_evaluation
    from mergeable_metrics.spark._frames import ResultLayout

    native = CASES[name][1]
    ev = evaluation(name)
    if marker_dir is not None:
        df = df.mapInArrow(probe_fn(marker_dir, 1 if fail else None), df.schema)
    profiled = profile_evaluation(df, ev)  # itself unless the slices need a counting pass
    out = compute_metrics(df, evaluation=profiled, native=native, layout="long")
    if marker_dir is not None:
        out = out.mapInArrow(probe_fn(marker_dir, 0 if fail else None), out.schema)
    rows = [r.asDict() for r in out.collect()]
    results = profiled.collect(rows=ResultLayout(profiled, layout="long").core_rows(rows))
    return {"rows": canonical_rows(rows), "json": results.to_json()}


def _wait_for_executors(spark: Any, count: int, timeout: float = 90.0) -> None:
    status = spark.sparkContext._jsc.sc().getExecutorMemoryStatus()
    deadline = time.monotonic() + timeout
    while status.size() < count + 1:  # + the driver's block manager
        if time.monotonic() > deadline:
            raise RuntimeError(f"only {status.size() - 1} of {count} executors registered in {timeout:.0f} s")
        time.sleep(0.2)
        status = spark.sparkContext._jsc.sc().getExecutorMemoryStatus()


def main(argv: list[str]) -> int:
    """``cluster_job MASTER_URL MARKER_DIR OUT_JSON``: run every case plain and with faults."""
    master, marker_root, out_path = argv
    from mergeable_metrics.spark import get_spark

    local_dir = str(Path(marker_root).parent / "driver-local")
    spark = get_spark(
        "mergeable-metrics-cluster-test",
        master,
        shuffle_partitions=4,
        config={
            "spark.driver.bindAddress": "127.0.0.1",
            "spark.driver.host": "127.0.0.1",
            "spark.local.dir": local_dir,
            "spark.executor.memory": "512m",
            "spark.executor.cores": "1",
            "spark.cores.max": "2",
            "spark.task.maxFailures": "2",
            "spark.executorEnv.PYTHONPATH": os.environ.get("PYTHONPATH", ""),
        },
    )
    spark.sparkContext.setLogLevel("ERROR")
    _wait_for_executors(spark, 2)
    df = input_frame(spark)
    out: dict[str, Any] = {}
    for name in CASES:
        for fail in (False, True):
            marker_dir = Path(marker_root, f"{name}-{'retried' if fail else 'plain'}")
            marker_dir.mkdir(parents=True)
            out[f"{name}/{'retried' if fail else 'plain'}"] = run_case(df, name, str(marker_dir), fail)
    spark.stop()
    Path(out_path).write_text(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
