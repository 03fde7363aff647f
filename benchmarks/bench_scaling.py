"""Scaling and memory of the local engine: rows/s and peak RSS at 1M, 10M and 50M Parquet rows.

Usage::

    python -m benchmarks.bench_scaling                 # 1M, 10M, 50M rows (files cached in --data-dir)
    python -m benchmarks.bench_scaling --quick         # 200K, 1M rows
    python -m benchmarks.bench_scaling --sizes 1000000,5000000

Each size is one Parquet file (1M-row row groups; columns ``label`` int64, ``score`` float64,
``slice`` string with 10 values; written once and reused) evaluated by
``mergeable_metrics.pipelines.engines.run_local`` (the CLI's local engine: 65,536-row record batches folded one at a
time) with ``slices=["slice"]`` and ``metrics=[example_count, roc_auc, precision, recall]``, in a
fresh subprocess per size. The child reports wall and CPU seconds, its peak RSS (``VmHWM``)
and its RSS after imports, and the encoded size of every slice's states.

Targets: wall time linear in rows (rows/s flat from 1M to 50M), peak RSS growing less than 10% from
1M to 50M rows, per-slice state size independent of the row count.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

from benchmarks._harness import Result, format_table, machine_line, rate

METRICS = ["example_count", "roc_auc", "precision", "recall"]


def _peak_rss_mib() -> float:
    """Peak RSS of this process since its ``exec``: ``VmHWM`` on Linux. (``ru_maxrss`` is not
    used: after ``fork`` + ``exec`` it keeps the parent's peak, e.g. the runner's 10M-row arrays.)"""
    try:
        with open("/proc/self/status") as f:
            return next(int(ln.split()[1]) for ln in f if ln.startswith("VmHWM:")) / 1024.0
    except (OSError, StopIteration):  # pragma: no cover - not Linux
        r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return r / 1024.0 if sys.platform != "darwin" else r / 2**20


def _current_rss_mib() -> float:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:  # pragma: no cover - not Linux
        return float("nan")


def child(path: str) -> dict:
    """Run the local engine over ``path`` in this (fresh) process; report time, memory and the
    encoded size of each slice's states (captured from the accumulator ``run_local`` finishes)."""
    import logging

    from mergeable_metrics import Evaluation
    from mergeable_metrics.slicing.assign import slice_name
    from mergeable_metrics.pipelines.engines import run_local

    logging.getLogger("pipelines").setLevel(logging.WARNING)
    ev = Evaluation(label_col="label", score_col="score", slices=["slice"], metrics=METRICS)
    captured: dict = {}
    finish = ev.finish

    def capture(acc, **kw):
        captured["acc"] = acc
        return finish(acc, **kw)

    ev.finish = capture  # run_local calls evaluation.finish(acc) once, at the end
    base = _current_rss_mib()
    t0, c0 = time.perf_counter(), time.process_time()
    res = run_local(ev, path)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    sizes = {slice_name(k): len(ev.plan.encode(v)) for k, v in captured["acc"].items()}
    return {
        "wall": wall,
        "cpu": cpu,
        "peak_rss_mib": _peak_rss_mib(),
        "base_rss_mib": base,
        "rows": res[()].n,
        "slices": len(res.slices),
        "state_bytes": sizes,
    }


def run_child(path: str) -> dict:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    res = subprocess.run([sys.executable, "-m", "benchmarks.bench_scaling", "--child", path], capture_output=True, text=True, cwd=root)
    if res.returncode != 0:
        raise RuntimeError(f"bench_scaling child failed on {path}: {res.stderr.strip()[-2000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def run(sizes: tuple[int, ...] = (1_000_000, 10_000_000, 50_000_000), data_dir: str = "/tmp/mm-bench") -> list[Result]:
    from benchmarks.bench_beam import write_parquet

    part = "scaling"
    runs = {}
    for n in sizes:
        path = write_parquet(os.path.join(data_dir, f"beam_{n}.parquet"), n)
        runs[n] = run_child(path)
    out: list[Result] = []
    first, last = sizes[0], sizes[-1]
    r0 = rate(first, runs[first]["wall"])
    for n in sizes:
        r = runs[n]
        v = rate(n, r["wall"])
        is_last = n == last and n != first
        out.append(
            Result(
                part,
                f"local engine, {n:,} Parquet rows, 11 slices x (count, AUC, precision, recall)",
                v,
                reference=f"same at {first:,} rows" if n != first else "",
                ref_value=r0 if n != first else None,
                ratio=v / r0 if n != first else None,
                target="rows/s flat (linear time)" if is_last else "",
                met=(v / r0 >= 0.8) if is_last else None,
                note=f"wall {r['wall']:.1f} s, CPU {r['cpu']:.1f} s ({rate(n, r['cpu']) / 1e6:.1f} M rows/cpu-s)",
            )
        )
    a, b = runs[first], runs[last]
    growth = 100.0 * (b["peak_rss_mib"] / a["peak_rss_mib"] - 1)
    out.append(
        Result(
            "memory",
            f"local engine peak RSS at {last:,} rows",
            b["peak_rss_mib"],
            unit="MiB",
            reference=f"at {first:,} rows",
            ref_value=a["peak_rss_mib"],
            ratio=b["peak_rss_mib"] / a["peak_rss_mib"],
            target="grows < 10%",
            met=growth < 10,
            note=f"growth {growth:+.1f}%; RSS after imports {a['base_rss_mib']:.0f} MiB; peaks "
            + ", ".join(f"{n:,}: {runs[n]['peak_rss_mib']:.0f} MiB" for n in sizes),
        )
    )
    sa, sb = a["state_bytes"], b["state_bytes"]
    out.append(
        Result(
            "memory",
            f"per-slice state size (largest of {len(sb)} slices) at {last:,} rows",
            max(sb.values()),
            unit="B",
            reference=f"at {first:,} rows",
            ref_value=max(sa.values()),
            ratio=max(sb.values()) / max(sa.values()),
            target="independent of rows",
            met=max(sb.values()) <= 1.05 * max(sa.values()),
            note="encoded bytes per slice (count + binary confusion + score distribution, capacity 40,000 bins): "
            + "; ".join(f"{n:,} rows: {min(runs[n]['state_bytes'].values()):,}-{max(runs[n]['state_bytes'].values()):,} B" for n in sizes),
        )
    )
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.bench_scaling", description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="200K and 1M rows")
    p.add_argument("--sizes", help="comma-separated row counts (default 1000000,10000000,50000000)")
    p.add_argument("--data-dir", default="/tmp/mm-bench")
    p.add_argument("--markdown", action="store_true")
    p.add_argument("--child", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.child:
        print(json.dumps(child(a.child)))
        return 0
    sizes = tuple(int(x) for x in a.sizes.split(",")) if a.sizes else ((200_000, 1_000_000) if a.quick else (1_000_000, 10_000_000, 50_000_000))
    print(f"# bench_scaling: sizes {', '.join(f'{n:,}' for n in sizes)}, wall clock, one subprocess per size; {machine_line()}")
    print(format_table(run(sizes, a.data_dir), markdown=a.markdown))
    return 0


if __name__ == "__main__":
    sys.exit(main())
