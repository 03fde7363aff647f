"""Run the benchmarks and print one table: our figure, the reference from the same run, the ratio.

Usage::

    python -m benchmarks.run                   # everything, full size (core+beam+scaling+spark: ~6 min here)
    python -m benchmarks.run --quick           # small sizes, core + beam + scaling: < 60 s (CI smoke)
    python -m benchmarks.run --only core,spark # some parts (core, beam, spark, scaling, auc, slices)
    python -m benchmarks.run --markdown results.md

Parts (each also runs alone as ``python -m benchmarks.bench_<part>``):

* ``core``    (:mod:`benchmarks.bench_core`): state folds against numpy floors and scikit-learn,
  rows per CPU-second of one process.
* ``beam``    (:mod:`benchmarks.bench_beam`): DirectRunner, 2M dict rows against ``Count.PerKey``,
  Arrow tables in memory and from Parquet against the same source without metrics, and against
  TFMA 0.52 (measured in its own virtualenv when present); wall and CPU time.
* ``spark``   (:mod:`benchmarks.bench_spark`): local[2], ``compute_metrics`` against MLlib's
  evaluators on one cached DataFrame.
* ``scaling`` (:mod:`benchmarks.bench_scaling`): the local engine at 1M / 10M / 50M Parquet rows:
  rows/s, peak RSS, per-slice state size.
* ``bootstrap`` (:mod:`benchmarks.bench_bootstrap`): ``ci="bootstrap"`` (R = 200) on the flights
  example against the same evaluation without intervals (target <= 3x; TFMA's bootstrap ~12x).
* ``float``   (:mod:`benchmarks.bench_float_speed`): exact at float speed (issue 25): the public
  ``MetricCollection.update`` in 65,536-row batches against a float64 numpy floor and scikit-learn.
* ``auc``     (:mod:`benchmarks.bench_auc`) and ``slices`` (:mod:`benchmarks.bench_slices`): the
  score-distribution and slice-cardinality benchmarks; they print their own tables.

``--quick`` runs ``core``, ``beam`` (no TFMA) and ``scaling`` at small sizes (Spark's start-up alone
takes longer than the budget on a loaded 2-core machine; name it with ``--only`` to run it quick).
Results are recorded in BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import datetime
import os
import subprocess
import sys
import time
import traceback

from benchmarks._harness import Result, format_table, machine_line

PARTS = ("core", "beam", "spark", "scaling", "auc", "slices", "bootstrap", "float")
QUICK_PARTS = ("core", "beam", "scaling")


def run_part(part: str, quick: bool, args: argparse.Namespace) -> list[Result]:
    """Run one part and return its rows (``auc`` and ``slices`` print their own tables)."""
    if part == "core":
        from benchmarks import bench_core

        return bench_core.run(n=1_000_000 if quick else 10_000_000, repeats=3 if quick else 5, clock=args.clock)
    if part == "beam":
        from benchmarks import bench_beam

        tfma = None if (quick or args.no_tfma) else (args.tfma_python or "auto")
        return bench_beam.run(
            dict_n=50_000 if quick else 2_000_000,
            arrow_n=1_000_000 if quick else 10_000_000,
            repeats=1 if quick else 2,
            data_dir=args.data_dir,
            tfma=tfma,
            tfma_rows=args.tfma_rows,
        )
    if part == "spark":
        from benchmarks import bench_spark

        return bench_spark.run(n=200_000 if quick else 10_000_000, binary_rows=200_000 if quick else 1_000_000, repeats=1 if quick else 2)
    if part == "scaling":
        from benchmarks import bench_scaling

        return bench_scaling.run((100_000, 300_000) if quick else (1_000_000, 10_000_000, 50_000_000), args.data_dir)
    if part == "bootstrap":
        from benchmarks import bench_bootstrap

        return bench_bootstrap.run(replicates=50 if quick else 200, repeats=1 if quick else 3)
    if part == "float":
        from benchmarks import bench_float_speed

        return bench_float_speed.run(n=200_000 if quick else 2_000_000, repeats=1 if quick else 3)
    if part in ("auc", "slices"):
        # a fresh process: bench_slices measures its children's peak RSS with ru_maxrss, which a
        # child inherits from its parent (this runner, after the core part, holds ~1 GB at peak)
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        cmd = [sys.executable, "-m", f"benchmarks.bench_{part}"] + (["--quick"] if quick else [])
        res = subprocess.run(cmd, cwd=root)
        if part == "slices" and res.returncode != 0:  # bench_auc exits 1 when a value is out of its bounds
            raise RuntimeError(f"{' '.join(cmd[1:])} exited {res.returncode}")
        return []
    raise ValueError(f"unknown part {part!r}; choose from {PARTS}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="small sizes; parts core, beam, scaling unless --only")
    p.add_argument("--only", help=f"comma-separated parts from {', '.join(PARTS)}")
    p.add_argument("--clock", choices=["cpu", "wall"], default="cpu", help="clock of the core part (engines always use wall)")
    p.add_argument("--data-dir", default="/tmp/mm-bench", help="where generated Parquet files are written (and reused)")
    p.add_argument("--tfma-python", help="python of a virtualenv with tensorflow-model-analysis 0.52 (default: /tmp/tfma-venv/bin/python if present)")
    p.add_argument("--tfma-rows", type=int, default=50_000)
    p.add_argument("--no-tfma", action="store_true", help="print TFMA's quoted figure instead of measuring it")
    p.add_argument("--markdown", metavar="PATH", help="also write the table as Markdown to PATH")
    a = p.parse_args(argv)
    parts = tuple(x.strip() for x in a.only.split(",")) if a.only else (QUICK_PARTS if a.quick else PARTS)
    bad = [x for x in parts if x not in PARTS]
    if bad:
        p.error(f"unknown part(s) {bad}; choose from {', '.join(PARTS)}")
    started = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    cmd = "python -m benchmarks.run" + (" " + " ".join(argv if argv is not None else sys.argv[1:])).rstrip()
    print(f"# {cmd}  ({started}; {machine_line()})", flush=True)
    if a.quick and not a.only:
        print(f"# --quick: parts {', '.join(parts)} (skipped: {', '.join(x for x in PARTS if x not in parts)})", flush=True)
    results: list[Result] = []
    failed: list[str] = []
    t_all = time.perf_counter()
    for part in parts:
        t0 = time.perf_counter()
        print(f"\n## {part}", flush=True)
        try:
            rows = run_part(part, a.quick, a)
        except Exception as e:  # noqa: BLE001 - one failing part must not hide the others
            traceback.print_exc()
            failed.append(f"{part}: {type(e).__name__}: {e}")
            results.append(Result(part, "(part failed)", None, note=f"{type(e).__name__}: {e}"[:300]))
            continue
        if rows:
            print(format_table(rows), flush=True)
        results += rows
        print(f"({part}: {time.perf_counter() - t0:.0f} s)", flush=True)
    print(f"\n## all parts ({time.perf_counter() - t_all:.0f} s; load average now {machine_line().split('load average ')[1]})")
    print(format_table(results))
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(f"Command: `{cmd}` ({started})\n\nMachine: {machine_line()}\n\n{format_table(results, markdown=True)}\n")
    if failed:
        print("\nFAILED parts:\n  " + "\n  ".join(failed))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
