"""The sliced ``Evaluation.evaluate`` end to end (fold, finish and results) against its one-pass floor.

Usage::

    python -m benchmarks.bench_sliced_evaluate                  # flights x 20 (3.3 M rows), tailnum slices
    python -m benchmarks.bench_sliced_evaluate --replicate 2    # smaller
    python -m benchmarks.bench_sliced_evaluate --rows 20000 --repeats 1   # smoke size (the first rows only)

Data: the flights predictions of :func:`benchmarks.bench_onepass.flights_batches` (needs the
``examples`` extra), repeated ``--replicate`` times, as 65,536-row Arrow record batches; slices:
``tailnum`` (every tail number plus the missing value). Two workloads: (a) counts,
``precision, recall, f1, accuracy`` at 0.5; (b) ``roc_auc``.

Columns (CPU seconds of this process, medians of ``--repeats`` interleaved rounds,
:mod:`benchmarks._harness`):

* ``evaluate``: ``Evaluation.evaluate(batches)``: validation, slice assignment, every slice's
  states, the overall slice, then ``finish``: every slice's metric values and the
  :class:`~mergeable_metrics.results.results.Results` (one ``SliceResult`` per slice);
* ``fold`` / ``finish``: its two halves timed apart (``fold_all``, then ``Evaluation.finish`` of that
  fresh accumulator: a finish reads the folded tables once, so a second finish of the same
  accumulator would be cheaper);
* ``floor``: a hand-written one-pass fold of the same slices in pyarrow + numpy, no validation
  (:func:`benchmarks.bench_onepass.floor_counts` / :func:`~benchmarks.bench_onepass.floor_distribution`),
  followed by every slice's metric values from its table in a few vectorised numpy operations
  (``floor finish``: confusion cells to precision/recall/f1/accuracy; runs of (slice, score) to
  the Mann-Whitney AUC);
* ``ratio`` = floor / evaluate (target >= 0.5), ``fold ratio`` = floor / fold.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings

import numpy as np

from benchmarks._harness import machine_line, measure
from benchmarks.bench_onepass import BATCH, flights_batches, floor_counts, floor_distribution

WORKLOADS = (("counts: precision/recall/f1/accuracy @0.5", ["precision", "recall", "f1", "accuracy"]), ("roc_auc", ["roc_auc"]))


def floor_count_metrics(table: np.ndarray) -> dict:
    """Per row of a (slices, 4) table of cells (tn, fp, fn, tp): precision, recall, f1, accuracy."""
    tn, fp, fn, tp = (table[:, i].astype(np.float64) for i in range(4))
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = tp / (tp + fp)
        recall = tp / (tp + fn)
        return {"precision": precision, "recall": recall, "f1": 2 * tp / (2 * tp + fp + fn), "accuracy": (tp + tn) / (tp + tn + fp + fn)}


def floor_auc(runs: tuple) -> np.ndarray:
    """Per slice the AUC of runs ``(slice, key, negatives, positives)`` sorted by (slice, key)."""
    c, _, n, p = runs
    if c.size == 0:
        return np.zeros(0)
    g = int(c.max()) + 1
    n, p = n.astype(np.float64), p.astype(np.float64)
    big_p, big_n = np.bincount(c, p, g), np.bincount(c, n, g)
    cp = np.cumsum(p)
    start = np.flatnonzero(np.concatenate(([True], c[1:] != c[:-1])))
    before = np.repeat(cp[start] - p[start], np.diff(np.append(start, c.size)))  # positives before each slice
    above = big_p[c] - (cp - before)  # positives of higher score in the run's slice
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.bincount(c, n * (above + 0.5 * p), g) / (big_p * big_n)


def floor(batches: list, metrics: list[str]) -> dict:
    if metrics == ["roc_auc"]:
        merged, overall = floor_distribution(batches)
        return {"roc_auc": floor_auc(merged), "overall": floor_auc(overall)}
    tables = floor_counts(batches, ["tailnum"])
    return {"slices": floor_count_metrics(tables["tailnum"]), "overall": floor_count_metrics(tables["overall"][None, :])}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--replicate", type=int, default=20, help="copies of the 166,668 flights predictions (default 20: 3.3 M rows)")
    p.add_argument("--rows", type=int, help="keep only the first ROWS rows (smoke runs)")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--parquet", help="reuse a flights predictions Parquet file (built if absent)")
    p.add_argument("--only", choices=["counts", "roc_auc"], help="one workload")
    args = p.parse_args(argv)

    from mergeable_metrics import Evaluation
    from mergeable_metrics.evaluation.batches import fold_all

    batches = flights_batches(args.replicate, args.parquet)
    if args.rows is not None:
        import pyarrow as pa

        batches = pa.Table.from_batches(batches).slice(0, args.rows).to_batches(max_chunksize=BATCH)
    rows = sum(b.num_rows for b in batches)
    print(
        f"flights predictions x {args.replicate}: {rows:,} rows in {len(batches)} Arrow batches of {BATCH:,}; slices: tailnum; CPU s, median of {args.repeats}"
    )
    print(machine_line())
    head = f"{'workload':<42} {'slices':>6} {'evaluate':>8} {'fold':>6} {'finish':>6} {'floor':>6} {'floor fin':>9} {'ratio':>6} {'fold ratio':>10}"
    print(head)
    print("-" * len(head))
    for name, metrics in WORKLOADS:
        if args.only and (args.only == "roc_auc") != (metrics == ["roc_auc"]):
            continue
        ev = Evaluation(label_col="delayed", score_col="score", slices=["tailnum"], metrics=metrics)
        split: dict[str, list[float]] = {"fold": [], "finish": []}

        def fold_then_finish() -> None:
            """fold and finish of a fresh accumulator, each timed (finish materialises what it reads once)."""
            t0 = time.process_time()
            acc = fold_all(ev, batches)
            t1 = time.process_time()
            ev.finish(acc)
            split["fold"].append(t1 - t0)
            split["finish"].append(time.process_time() - t1)

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # undefined metrics of small slices
            if metrics == ["roc_auc"]:
                tables = floor_distribution(batches)
                floor_finish = lambda: (floor_auc(tables[0]), floor_auc(tables[1]))  # noqa: E731
            else:
                tables = floor_counts(batches, ["tailnum"])
                floor_finish = lambda: (floor_count_metrics(tables["tailnum"]), floor_count_metrics(tables["overall"][None, :]))  # noqa: E731
            t = measure(
                {
                    "evaluate": lambda: ev.evaluate(batches),
                    "fold+finish": fold_then_finish,
                    "floor": lambda: floor(batches, metrics),
                    "floor finish": floor_finish,
                },
                args.repeats,
            )
            t["fold"], t["finish"] = (float(np.median(split[k][1:] or split[k])) for k in ("fold", "finish"))  # the warm-up's left out
            slices = len(ev.evaluate(batches).slices) - 1
        ratio, fold_ratio = t["floor"] / t["evaluate"], t["floor"] / t["fold"]
        print(
            f"{name:<42} {slices:>6,} {t['evaluate']:>8.3f} {t['fold']:>6.3f} {t['finish']:>6.3f} {t['floor']:>6.3f} {t['floor finish']:>9.4f} {ratio:>6.2f} {fold_ratio:>10.2f}",
            flush=True,
        )
    print("ratio = floor / evaluate (target >= 0.5); fold ratio = floor / fold alone; floor includes its finish (floor fin)")


if __name__ == "__main__":
    sys.exit(main())
