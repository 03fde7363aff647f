"""Score-distribution benchmark: fold speed, accuracy and state size of mergeable ROC AUC / AP.

Usage::

    python -m benchmarks.bench_auc            # 10 million rows per dataset (about a minute or two)
    python -m benchmarks.bench_auc --quick    # 1 million rows, a few seconds
    python -m benchmarks.bench_auc --rows 3000000 --repeats 7 --profile

For each dataset (continuous probabilities, raw logits of both signs, a cluster 1e-9 wide, and
scores rounded to 3 decimals) it prints:

* ``fold Mrow/s`` and ``fold Mrow/cpu-s``: millions of rows folded into a
  :class:`mergeable_metrics.states.ScoreDistributionState` from one validated batch (``from_batch``) per wall-clock
  second and per CPU second of this (single-threaded) process, medians of ``--repeats`` runs. On a
  shared machine the CPU-time rate is the one-core rate; the wall rate shows the load;
* ``1M-batch`` / ``64K-batch Mrow/cpu-s``: the same data folded as 1M-row (65,536-row, on the
  first 2M rows) batches, each folded into the running state with ``State.fold`` (how the engines
  stream it; 65,536 is the CLI's default read size);
* ``sklearn Mrow/s`` / ``Mrow/cpu-s``: ``sklearn.metrics.roc_auc_score`` on the same arrays, in the
  same run (median of ``--sklearn-repeats``); ``speedup`` = sklearn CPU time / fold CPU time;
* ``AUC err`` / ``AP err``: |value - exact| against scikit-learn's exact ``roc_auc_score`` /
  ``average_precision_score``; ``AUC width`` / ``AP width``: width of the certified interval (0 for an
  exact state); ``in bounds``: whether the exact values lie inside the reported intervals;
* ``level``, ``bins`` and ``state KiB`` (encoded bytes of one state).

``--profile`` adds a cProfile breakdown of one fold per dataset.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import time
import warnings

import numpy as np

from mergeable_metrics.inputs.validation import Batch
from mergeable_metrics.metrics.base import Interval, Task, resolve
from mergeable_metrics.states.score_distribution import ScoreDistributionLayout, ScoreDistributionState


def datasets(n: int, seed: int) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """(name, y_true int64, y_score float64) triples of ``n`` rows."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n).astype(np.int64)
    logit = rng.normal(size=n) + 1.0 * y  # a model with AUC ~ 0.76
    prob = 1.0 / (1.0 + np.exp(-logit))
    return [
        ("probabilities", y, prob),
        ("logits", y, logit),
        ("narrow 1e-9", y, 0.5 + 1e-9 * prob),
        ("rounded 3 dp", y, np.round(prob, 3)),
    ]


def _median_time(fn, repeats: int) -> tuple[float, float]:
    """Median (wall seconds, CPU seconds of this process) over ``repeats`` runs. On a shared,
    loaded machine the CPU time is the better measure of work done on one core."""
    wall, cpu = [], []
    for _ in range(repeats):
        c0, t0 = time.process_time(), time.perf_counter()
        fn()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return float(np.median(wall)), float(np.median(cpu))


def _fold_batches(layout: ScoreDistributionLayout, batch: Batch, size: int) -> ScoreDistributionState:
    state = ScoreDistributionState.zero(layout)
    for i in range(0, batch.n, size):
        state = state.fold(batch.take(slice(i, i + size)))
    return state


def run(n: int, repeats: int, sklearn_repeats: int, seed: int, capacity: int, profile: bool) -> list[dict]:
    from sklearn.metrics import average_precision_score, roc_auc_score

    layout = ScoreDistributionLayout(capacity)
    task = Task()
    auc_m, ap_m = resolve("roc_auc", task), resolve("average_precision", task)
    rows = []
    for name, y, score in datasets(n, seed):
        batch = Batch(y_true=y, y_score=score)
        state = ScoreDistributionState.from_batch(layout, batch)  # warm-up
        t_fold, c_fold = _median_time(lambda: ScoreDistributionState.from_batch(layout, batch), repeats)
        streamed = _fold_batches(layout, batch, 1_000_000)
        assert streamed == state, "folding 1M-row batches changed the state"
        t_stream, c_stream = _median_time(lambda: _fold_batches(layout, batch, 1_000_000), max(1, repeats // 2))
        small = batch.take(slice(0, min(n, 2_000_000)))  # 64K-row batches (the CLI's default read size)
        assert _fold_batches(layout, small, 65_536) == ScoreDistributionState.from_batch(layout, small), "64K folds changed the state"
        t_small, c_small = _median_time(lambda: _fold_batches(layout, small, 65_536), max(1, repeats // 2))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t_sk, c_sk = _median_time(lambda: roc_auc_score(y, score), sklearn_repeats)
            exact_auc = roc_auc_score(y, score)
            exact_ap = average_precision_score(y, score)
        states = {"score_distribution": state}
        auc, ap = auc_m.compute(states), ap_m.compute(states)

        def err(v, exact):
            if isinstance(v, Interval):
                return abs(v.value - exact), v.upper - v.lower, v.lower <= exact <= v.upper
            return abs(v - exact), 0.0, v == exact

        auc_err, auc_w, auc_in = err(auc, exact_auc)
        ap_err, ap_w, ap_in = err(ap, exact_ap)
        rows.append(
            {
                "dataset": name,
                "rows": n,
                "fold Mrow/s": n / t_fold / 1e6,
                "fold Mrow/cpu-s": n / c_fold / 1e6,
                "1M-batch Mrow/cpu-s": n / c_stream / 1e6,
                "64K-batch Mrow/cpu-s": small.n / c_small / 1e6,
                "sklearn Mrow/s": n / t_sk / 1e6,
                "sklearn Mrow/cpu-s": n / c_sk / 1e6,
                "speedup": c_sk / c_fold,
                "AUC err": auc_err,
                "AUC width": auc_w,
                "AP err": ap_err,
                "AP width": ap_w,
                "in bounds": auc_in and ap_in,
                "level": state.level,
                "bins": state.num_bins,
                "state KiB": len(state.encode()) / 1024,
            }
        )
        if profile:
            pr = cProfile.Profile()
            pr.enable()
            ScoreDistributionState.from_batch(layout, batch)
            pr.disable()
            out = io.StringIO()
            pstats.Stats(pr, stream=out).sort_stats("tottime").print_stats(8)
            print(f"--- profile of one fold: {name}\n" + "\n".join(out.getvalue().splitlines()[4:20]))
    return rows


def format_table(rows: list[dict]) -> str:
    cols = list(rows[0])
    fmt = {
        "rows": "{:,}",
        "fold Mrow/s": "{:.1f}",
        "fold Mrow/cpu-s": "{:.1f}",
        "1M-batch Mrow/cpu-s": "{:.1f}",
        "64K-batch Mrow/cpu-s": "{:.1f}",
        "sklearn Mrow/s": "{:.2f}",
        "sklearn Mrow/cpu-s": "{:.2f}",
        "speedup": "{:.0f}x",
        "AUC err": "{:.1e}",
        "AUC width": "{:.1e}",
        "AP err": "{:.1e}",
        "AP width": "{:.1e}",
        "state KiB": "{:.0f}",
    }
    cells = [[fmt.get(c, "{}").format(r[c]) for c in cols] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(cols)]
    line = lambda vals: "| " + " | ".join(v.rjust(w) if i else v.ljust(w) for i, (v, w) in enumerate(zip(vals, widths))) + " |"  # noqa: E731
    return "\n".join([line(cols), "|" + "|".join("-" * (w + 2) for w in widths) + "|"] + [line(r) for r in cells])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.bench_auc", description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="1M rows, 3 repeats: a few seconds")
    p.add_argument("--rows", type=int, help="rows per dataset (default 10,000,000; 1,000,000 with --quick)")
    p.add_argument("--repeats", type=int, help="fold repeats (median; default 5, 3 with --quick)")
    p.add_argument("--sklearn-repeats", type=int, default=1, help="roc_auc_score repeats (median; default 1)")
    p.add_argument("--capacity", type=int, default=ScoreDistributionLayout().capacity, help="state capacity (bins)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--profile", action="store_true", help="print a cProfile breakdown of one fold per dataset")
    a = p.parse_args(argv)
    n = a.rows or (1_000_000 if a.quick else 10_000_000)
    repeats = a.repeats or (3 if a.quick else 5)
    import platform

    print(f"# bench_auc: {n:,} rows per dataset, capacity {a.capacity:,}, fold repeats {repeats}, "
          f"numpy {np.__version__}, python {platform.python_version()}, {platform.machine()}")  # fmt: skip
    rows = run(n, repeats, a.sklearn_repeats, a.seed, a.capacity, a.profile)
    print(format_table(rows))
    return 0 if all(r["in bounds"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
