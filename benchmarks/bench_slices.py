"""Slice benchmarks: the sliced fold against its one-pass floor, and peak memory of ``max_slices``.

Usage::

    python -m benchmarks.bench_slices                 # sliced fold vs floor, flights x 20 (see benchmarks.bench_onepass)
    python -m benchmarks.bench_slices --quick         # the same on flights x 2
    python -m benchmarks.bench_slices --memory        # memory: 2M rows; 1e3, 1e4, 1e5, 1e6 distinct values
    python -m benchmarks.bench_slices --memory --quick     # 300K rows; 1e3, 1e4, 1e5
    python -m benchmarks.bench_slices --memory --contrast  # also the unbounded spec (no max_slices), up to 1e4

The default table is :mod:`benchmarks.bench_onepass` (issue 12's three workloads). The memory
table (``--memory``):

For each number ``D`` of distinct values of a string slice column (``"u0000042"``-like ids: half
the rows a Zipf-like head, half a sweep that makes exactly ``D`` values appear), the rows are
generated batch by batch (65,536 rows, never all in memory) and evaluated with
``Evaluation(slices=["user;max_slices=50"], metrics=[accuracy, precision, recall, f1])`` in two
fresh subprocesses, one per pass, like the local engine does:

* ``profile`` pass (the exact counting pass, ``mergeable_metrics.evaluation.profile``): ``peak RSS`` of the process
  (``ru_maxrss``), ``traced peak`` (tracemalloc: Python + numpy allocations), the merged profile's
  size (``profile KiB``) and its time;
* ``fold`` pass with the resolved profile: the same peaks, the number of slices in the accumulator
  (at most 50 + ``__other__`` + overall), the encoded accumulator size and one slice's encoded
  state size (``slice state B``), and its time.

The fold pass's memory is flat in ``D``: the accumulator holds at most ``N + 2`` slices' states.
The counting pass grows by about 25 bytes per distinct value (numpy arrays, not Python objects).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc

import numpy as np

BATCH = 65_536
METRICS = ["accuracy", "precision", "recall", "f1"]


def batches(rows: int, distinct: int, seed: int = 0):
    """Deterministic batches (dict of columns) of ``rows`` rows with exactly ``distinct`` values
    (when ``rows >= distinct``)."""
    for b, start in enumerate(range(0, rows, BATCH)):
        stop = min(rows, start + BATCH)
        rng = np.random.default_rng([seed, b])
        n = stop - start
        sweep = ((np.arange(start, stop, dtype=np.int64) // 2) * 7919) % distinct  # every value once per 2*distinct rows
        head = np.minimum(rng.pareto(1.2, n).astype(np.int64), distinct - 1)
        ids = np.where(np.arange(start, stop) % 2 == 0, sweep, head)
        user = np.array([f"u{i:07d}" for i in ids.tolist()], dtype=object)
        y = rng.integers(0, 2, n)
        s = np.clip(0.3 * y + 0.7 * rng.random(n), 0.0, 1.0)
        yield {"y": y, "s": s, "user": user}


def _evaluation(bounded: bool):
    from mergeable_metrics import Evaluation

    return Evaluation(label_col="y", score_col="s", slices=["user;max_slices=50" if bounded else "user"], metrics=METRICS)


def _rss_mib() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return r / 1024.0 if sys.platform != "darwin" else r / 2**20


def child(args: argparse.Namespace) -> None:
    """One pass in this (fresh) process; prints one JSON line."""
    ev = _evaluation(args.child != "unbounded")
    tracemalloc.start()
    t0 = time.perf_counter()
    out: dict = {}
    if args.child == "profile":
        prof = ev.profiler()
        acc = prof.zero()
        for b in batches(args.rows, args.distinct):
            prof.fold(acc, b)
        summary = prof.finish(acc)
        with open(args.summary, "w") as f:
            f.write(summary.to_json())
        out.update(profile_kib=acc.nbytes / 1024, distinct_seen=summary.parts["keys user;max_slices=50"]["distinct"])
    else:
        if args.child == "fold":
            from mergeable_metrics.evaluation.profile import ProfileSummary

            with open(args.summary) as f:
                ev = ev.with_profile(ProfileSummary.from_json(f.read()))
        acc = ev.zero()
        for b in batches(args.rows, args.distinct):
            ev.fold(acc, b)
        one = next(k for k in acc.slices() if k)
        out.update(
            slices=len(acc),
            acc_kib=len(ev.encode(acc)) / 1024,
            slice_state_bytes=len(ev.plan.encode(acc[one])),
            folded=ev.finish(acc)[(("user", "__other__"),)].folded_values if args.child == "fold" else None,
        )
    out["seconds"] = time.perf_counter() - t0
    out["traced_peak_mib"] = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    out["peak_rss_mib"] = _rss_mib()
    print(json.dumps(out))


def run_child(mode: str, rows: int, distinct: int, summary: str) -> dict:
    cmd = [sys.executable, "-m", "benchmarks.bench_slices", "--child", mode, "--rows", str(rows), "--distinct", str(distinct), "--summary", summary]
    res = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return json.loads(res.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=None)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--contrast", action="store_true", help="also run the unbounded spec (no max_slices) for D <= 1e4")
    p.add_argument("--memory", action="store_true", help="the peak-memory table of max_slices=50 (else: the one-pass table)")
    p.add_argument("--replicate", type=int, help="one-pass table: copies of the flights predictions (default 20; --quick 2)")
    p.add_argument("--repeats", type=int, default=5, help="one-pass table: interleaved rounds (median)")
    p.add_argument("--child", choices=["profile", "fold", "unbounded"], help=argparse.SUPPRESS)
    p.add_argument("--distinct", type=int, help=argparse.SUPPRESS)
    p.add_argument("--summary", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        child(args)
        return
    if not args.memory:
        from benchmarks import bench_onepass

        replicate = args.replicate or (2 if args.quick else 20)
        bench_onepass.main(["--replicate", str(replicate), "--repeats", str(1 if args.quick else args.repeats)])
        return
    rows = args.rows or (300_000 if args.quick else 2_000_000)
    sizes = [1_000, 10_000, 100_000] + ([] if args.quick else [1_000_000])
    print(f"rows={rows:,}  batch={BATCH:,}  spec='user;max_slices=50'  metrics={','.join(METRICS)}  python {sys.version.split()[0]}")
    head = f"{'distinct':>9} | {'profile: RSS MiB':>16} {'traced MiB':>10} {'profile KiB':>11} {'s':>5} | {'fold: RSS MiB':>13} {'traced MiB':>10} {'slices':>6} {'acc KiB':>7} {'slice state B':>13} {'folded':>7} {'s':>5}"
    print(head)
    print("-" * len(head))
    with tempfile.TemporaryDirectory() as tmp:
        for d in sizes:
            summary = os.path.join(tmp, f"summary-{d}.json")
            a = run_child("profile", rows, d, summary)
            b = run_child("fold", rows, d, summary)
            print(
                f"{d:>9,} | {a['peak_rss_mib']:>16.1f} {a['traced_peak_mib']:>10.1f} {a['profile_kib']:>11.1f} {a['seconds']:>5.1f} | "
                f"{b['peak_rss_mib']:>13.1f} {b['traced_peak_mib']:>10.1f} {b['slices']:>6} {b['acc_kib']:>7.1f} {b['slice_state_bytes']:>13} {b['folded']:>7,} {b['seconds']:>5.1f}",
                flush=True,
            )
        if args.contrast:
            print("\nunbounded spec 'user' (every distinct value is a slice):")
            for d in [1_000, 10_000]:
                c = run_child("unbounded", rows, d, "")
                print(
                    f"{d:>9,} | fold: RSS {c['peak_rss_mib']:.1f} MiB, traced {c['traced_peak_mib']:.1f} MiB, {c['slices']:,} slices, acc {c['acc_kib']:.0f} KiB, {c['seconds']:.1f} s",
                    flush=True,
                )


if __name__ == "__main__":
    main()
