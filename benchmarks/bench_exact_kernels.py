"""Microbenchmark of the compiled exact-sum kernels (issue 25, item 1) against float64 numpy.

Per 65,536 values, CPU time (``time.process_time``), median of interleaved repeats: the kernel's
raw exact sum (``exact_kernels.sum_products``: validation, range scan and the one pass; limbs not
yet canonical) and the whole ``exact.exact_sum_products`` (canonicalised and rounded), against
``np.sum`` / ``np.dot`` / ``np.bincount`` on the same arrays. ``ratio`` = float time / kernel time.

    OPENBLAS_NUM_THREADS=1 python -m benchmarks.bench_exact_kernels [--repeats 31]

(one BLAS thread: ``np.dot``'s spinning threads would bill idle CPU time to the process)
"""

from __future__ import annotations

import argparse
import os

import statistics
import time

import numpy as np

from mergeable_metrics._util import exact as E
from mergeable_metrics._util import exact_kernels as K

N = 1 << 16


def _cpu(fn, inner: int) -> float:
    t0 = time.process_time()
    for _ in range(inner):
        fn()
    return (time.process_time() - t0) / inner


def cases():
    rng = np.random.default_rng(0)
    y = rng.normal(100.0, 10.0, N)
    s = rng.random(N)
    w = rng.random(N)
    g4 = rng.integers(0, 4, N)
    g4096 = rng.integers(0, 4096, N)
    yw = y * w
    return [
        ("sum y (normal(100, 10))", lambda: K.sum_products([y], None, 1), lambda: E.exact_sum_products([y]), lambda: np.sum(y), "np.sum"),
        ("sum s (uniform [0, 1))", lambda: K.sum_products([s], None, 1), lambda: E.exact_sum_products([s]), lambda: np.sum(s), "np.sum"),
        ("sum w * y", lambda: K.sum_products([w, y], None, 1), lambda: E.exact_sum_products([w, y]), lambda: np.dot(w, y), "np.dot"),
        (
            "sum y * w * y",
            lambda: K.sum_products([y, w, y], None, 1),
            lambda: E.exact_sum_products([y, w, y]),
            lambda: np.dot(yw, y),
            "np.dot (y*w precomputed)",
        ),
        ("y into 4 bins", lambda: K.sum_products([y], g4, 4), lambda: E.exact_sum_products([y], g4, 4), lambda: np.bincount(g4, y, 4), "np.bincount"),
        (
            "w * y into 4 bins",
            lambda: K.sum_products([w, y], g4, 4),
            lambda: E.exact_sum_products([w, y], g4, 4),
            lambda: np.bincount(g4, w * y, 4),
            "np.bincount(w*y)",
        ),
        (
            "w into 4,096 bins",
            lambda: K.sum_products([w], g4096, 4096),
            lambda: E.exact_sum_products([w], g4096, 4096),
            lambda: np.bincount(g4096, w, 4096),
            "np.bincount",
        ),
    ]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=31)
    ap.add_argument("--inner", type=int, default=20)
    a = ap.parse_args(argv)
    K.warm()
    cs = cases()
    times = {name: ([], [], []) for name, *_ in cs}
    for _ in range(a.repeats):
        for name, kern, full, flt, _floor in cs:
            for lst, fn in zip(times[name], (kern, full, flt)):
                lst.append(_cpu(fn, a.inner))
    print(f"load average {os.getloadavg()[0]:.1f}; {N:,} values; CPU time, medians of {a.repeats} x {a.inner}")
    print("| exact sum of | kernel (us) | exact_sum_products (us) | float64 (us) | float64 / kernel | float64 / exact_sum_products | ns/value (kernel) |")
    print("|---|---|---|---|---|---|---|")
    for name, *_rest, floor in cs:
        k, f, x = (statistics.median(t) * 1e6 for t in times[name])
        print(f"| {name} | {k:,.0f} | {f:,.0f} | {x:,.0f} ({floor}) | {x / k:.2f} | {x / f:.2f} | {k * 1e3 / N:.2f} |")


if __name__ == "__main__":
    main()
