"""Cost of ``ci="bootstrap"`` (issue 13): the flights example with R = 200 replicates against the
same evaluation without intervals.

Usage::

    python -m benchmarks.bench_bootstrap                       # flights predictions, README command 1's slices
    python -m benchmarks.bench_bootstrap --parquet flights.parquet --repeats 3

Data: the flights example's scored July-December 2013 flights (166,668 rows,
``mergeable_metrics.pipelines.examples.flights``; built if ``--parquet`` is absent), 65,536-row Arrow batches, the
example's slices (``carrier``, ``origin``, ``carrier,origin``: 55 slices) and metrics
(``mergeable_metrics.pipelines.evaluate.FLIGHTS_METRICS``). Local engine (``Evaluation.evaluate``), CPU time of this
process, interleaved medians (:func:`benchmarks._harness.measure`). The reference is TFMA's
bootstrap, which re-runs the whole computation per replicate: about 12x its evaluation without
intervals (issue 13's measurement).
"""

from __future__ import annotations

import argparse
import sys
import warnings

from benchmarks._harness import Result, format_table, machine_line, measure

TARGET = 3.0
TFMA_BOOTSTRAP_RATIO = 12.0


def run(parquet: str | None = None, replicates: int = 200, buckets: int | None = None, repeats: int = 3) -> list[Result]:
    """The two timings and their ratio as :class:`~benchmarks._harness.Result` rows."""
    import pyarrow.parquet as pq

    from mergeable_metrics import Evaluation
    from mergeable_metrics.pipelines.evaluate import FLIGHTS_METRICS

    if parquet is None:
        import os
        import tempfile

        from mergeable_metrics.pipelines.examples.flights import build_flights_predictions

        parquet = os.path.join(tempfile.mkdtemp(), "flights.parquet")
        build_flights_predictions(parquet)
    table = pq.read_table(parquet, columns=["delayed", "score", "carrier", "origin"])
    batches = table.to_batches(max_chunksize=65_536)
    kw = dict(label_col="delayed", score_col="score", slices=["carrier", "origin", "carrier,origin"], metrics=FLIGHTS_METRICS)
    plain = Evaluation(**kw)
    boot = Evaluation(**kw, ci="bootstrap", ci_replicates=replicates, **({"ci_buckets": buckets} if buckets else {}))

    def go(ev):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ev.evaluate(batches)

    times = measure({"plain": lambda: go(plain), "bootstrap": lambda: go(boot)}, repeats=repeats, warmup=False)
    b = boot.plan.buckets
    n_slices = len(go(plain).slices)
    ratio = times["bootstrap"] / times["plain"]
    return [
        Result(
            "bootstrap", f"flights {table.num_rows:,} rows, {n_slices} slices, {len(FLIGHTS_METRICS)} metrics: ci=bootstrap R={replicates}, B={b}",
            times["bootstrap"], unit="s", reference="the same evaluation without ci", ref_value=times["plain"], ratio=ratio,
            target=f"<= {TARGET:g}x (TFMA's bootstrap: ~{TFMA_BOOTSTRAP_RATIO:g}x)", met=ratio <= TARGET,
            note=f"CPU seconds, median of {repeats} interleaved runs; ratio = bootstrap / without ci",
        ),
    ]  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.bench_bootstrap", description=__doc__.split("\n\n")[0])
    p.add_argument("--parquet", help="the flights predictions Parquet file (built when absent)")
    p.add_argument("--replicates", type=int, default=200)
    p.add_argument("--buckets", type=int, help="ci_buckets (default: the option's default)")
    p.add_argument("--repeats", type=int, default=3)
    a = p.parse_args(argv)
    print(f"# python -m benchmarks.bench_bootstrap {' '.join(argv if argv is not None else sys.argv[1:])}  ({machine_line()})", flush=True)
    print(format_table(run(a.parquet, a.replicates, a.buckets, a.repeats)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
