"""Cost of exact sums (issue 11, item 7): folds of the states with float sums, in the engines'
65,536-row read batches, unweighted and weighted.

Usage::

    python -m benchmarks.bench_exact            # 4M rows, 3 repeats (medians), rows per CPU-second
    python -m benchmarks.bench_exact --quick    # 1M rows

Only public state APIs (``zero``, ``fold``) are used, so the same script measures the code before
exact sums (run it with that checkout on ``PYTHONPATH``) and after, on the same data.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

BATCH = 1 << 16


def _workloads():
    from mergeable_metrics.metrics.calibration import CalibrationBinsLayout, CalibrationBinsState, ProbabilitySumsLayout, ProbabilitySumsState
    from mergeable_metrics.metrics.measure import MeanMeasureLayout, MeanMeasureState
    from mergeable_metrics.metrics.regression import RegressionLayout, RegressionMomentsState
    from mergeable_metrics.states.score_distribution import ScoreDistributionLayout, ScoreDistributionState
    from mergeable_metrics.states.base import (
        BinaryConfusionLayout,
        BinaryConfusionState,
        ConfusionMatrixLayout,
        ConfusionMatrixState,
        ExampleCountLayout,
        ExampleCountState,
    )

    return [
        ("example_count", ExampleCountState, ExampleCountLayout(), "binary"),
        ("binary_confusion (1 threshold)", BinaryConfusionState, BinaryConfusionLayout((0.5,)), "binary"),
        ("binary_confusion (3 thresholds)", BinaryConfusionState, BinaryConfusionLayout((0.25, 0.5, 0.75)), "binary"),
        ("confusion_matrix (10 classes)", ConfusionMatrixState, ConfusionMatrixLayout(10), "multiclass"),
        ("probability_sums (log loss, brier)", ProbabilitySumsState, ProbabilitySumsLayout(), "binary"),
        ("calibration_bins (ece, 10 bins)", CalibrationBinsState, CalibrationBinsLayout((10,)), "binary"),
        ("calibration_bins (multiclass ece, 10 classes, 10 bins)", CalibrationBinsState, CalibrationBinsLayout((10,), 10), "multiclass_proba"),
        ("probability_sums (multiclass log loss, 10 classes)", ProbabilitySumsState, ProbabilitySumsLayout(False, 10), "multiclass_proba"),
        ("mean_measure", MeanMeasureState, MeanMeasureLayout(), "measure"),
        ("regression_moments", RegressionMomentsState, RegressionLayout(), "regression"),
        ("score_distribution (roc_auc)", ScoreDistributionState, ScoreDistributionLayout(), "binary"),
    ]


def _batches(kind: str, n: int, weighted: bool, seed: int = 0):
    from mergeable_metrics.inputs.validation import Batch

    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    s = np.clip(0.3 * y + 0.7 * rng.random(n), 0.0, 1.0)
    w = rng.random(n) if weighted else None
    yc, pc = rng.integers(0, 10, n), rng.integers(0, 10, n)
    yr = rng.normal(100.0, 10.0, n)
    P = rng.dirichlet(np.ones(10), n) if kind == "multiclass_proba" else None
    out = []
    for i in range(0, n, BATCH):
        sl = slice(i, i + BATCH)
        ww = None if w is None else w[sl]
        if kind == "binary":
            out.append(Batch(y[sl], s[sl], None, ww))
        elif kind == "multiclass":
            out.append(Batch(yc[sl], None, pc[sl], ww))
        elif kind == "multiclass_proba":
            out.append(Batch(yc[sl], P[sl], None, ww))
        elif kind == "measure":
            out.append(Batch(None, None, None, ww, values=s[sl]))
        else:
            out.append(Batch(yr[sl], None, yr[sl] + s[sl], ww))
    return out


def run(n: int, repeats: int) -> list[tuple[str, str, float]]:
    rows = []
    for name, cls, layout, kind in _workloads():
        for weighted in (False, True):
            batches = _batches(kind, n, weighted)
            times = []
            for _ in range(repeats):
                t = time.process_time()
                st = cls.zero(layout)
                for b in batches:
                    st = st.fold(b)
                times.append(time.process_time() - t)
            rows.append((name, "weighted" if weighted else "unweighted", n / float(np.median(times)) / 1e6))
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.bench_exact", description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="1M rows")
    p.add_argument("--rows", type=int)
    p.add_argument("--repeats", type=int, default=3)
    a = p.parse_args(argv)
    n = a.rows or (1_000_000 if a.quick else 4_000_000)
    print(f"# {n:,} rows in {BATCH:,}-row batches, median of {a.repeats}, load {os.getloadavg()[0]:.1f}, numpy {np.__version__}")
    print("| state | weights | Mrow/cpu-s |")
    print("|---|---|---|")
    for name, w, r in run(n, a.repeats):
        print(f"| {name} | {w} | {r:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
