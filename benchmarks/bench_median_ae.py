"""Median absolute error (issue 17): fold and finish of ``mergeable_metrics.Evaluation`` (the bounded quantile
state, exact and compressed; and multioutput, 3 outputs) against ``sklearn.metrics.median_absolute_error``
on the whole array.

    PYTHONPATH=. .venv/bin/python -m benchmarks.bench_median_ae [--rows N] [--repeats R]

Prints CPU seconds (``time.process_time``, median of the repeats) per workload, the ratio to
scikit-learn's and the load average.
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np

from benchmarks._harness import load_average, measure
from mergeable_metrics import Evaluation


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    y = rng.normal(0, 1, a.rows)
    p = y + rng.normal(0, 1, a.rows)
    yd, pd_ = np.round(y, 1), np.round(p, 1)  # discrete errors: few distinct values, exact state
    w = rng.random(a.rows)
    from sklearn.metrics import median_absolute_error

    y3 = rng.normal(0, 1, (a.rows, 3))
    p3 = y3 + rng.normal(0, 1, (a.rows, 3))

    def run(metric, cols, bs=100_000):
        task = dict(num_outputs=cols["y"].shape[1]) if cols["y"].ndim == 2 else dict(task="regression")
        ev = Evaluation(label_col="y", prediction_col="p", metrics=[metric], weight_col="w" if "w" in cols else None, **task)
        batches = [{k: v[i : i + bs] for k, v in cols.items()} for i in range(0, a.rows, bs)]

        def go():
            acc = ev.zero()
            for b in batches:
                ev.fold(acc, b)
            return ev.finish(acc)

        return go

    fns = {
        "sklearn median_absolute_error, continuous": lambda: median_absolute_error(y, p),
        "core, continuous, capacity 40,000 (compressed)": run("median_absolute_error", {"y": y, "p": p}),
        "core, continuous, capacity 1,000 (compressed)": run("median_absolute_error@capacity=1000", {"y": y, "p": p}),
        "sklearn median_absolute_error, weighted": lambda: median_absolute_error(y, p, sample_weight=w),
        "core, continuous, weighted (compressed)": run("median_absolute_error", {"y": y, "p": p, "w": w}),
        "sklearn median_absolute_error, discrete": lambda: median_absolute_error(yd, pd_),
        "core, discrete errors (exact)": run("median_absolute_error", {"y": yd, "p": pd_}),
        "sklearn median_absolute_error, 3 outputs raw_values": lambda: median_absolute_error(y3, p3, multioutput="raw_values"),
        "core, 3 outputs raw_values, capacity 40,000 (compressed)": run("median_absolute_error@multioutput=raw_values@capacity=40000", {"y": y3, "p": p3}),
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = measure(fns, a.repeats)
    print(f"rows: {a.rows:,}; CPU seconds, median of {a.repeats}; load: {load_average()}")
    ref = {"continuous": got["sklearn median_absolute_error, continuous"], "weighted": got["sklearn median_absolute_error, weighted"],
           "discrete": got["sklearn median_absolute_error, discrete"], "outputs": got["sklearn median_absolute_error, 3 outputs raw_values"]}  # fmt: skip
    for name, t in got.items():
        base = ref["weighted"] if "weighted" in name else ref["discrete"] if "discrete" in name else ref["outputs"] if "outputs" in name else ref["continuous"]
        print(f"| {name} | {t:.3f} s | {t / base:.1f}x sklearn |")


if __name__ == "__main__":
    main()
