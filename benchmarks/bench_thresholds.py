"""Threshold metrics (issue 17): CPU time of ``compute`` from one score distribution of
200,000 random scores (compressed to at most 40,000 bins), against ``roc_auc`` alone and scikit-learn's ``metric_at_thresholds`` (a Python loop
calling ``f1_score`` per threshold).

Run: ``python -m benchmarks.bench_thresholds [--rows N] [--sklearn-rows M]`` (medians of 3 runs).
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def _cpu(fn, repeats: int = 3) -> float:
    ts = []
    for _ in range(repeats):
        t = time.process_time()
        fn()
        ts.append(time.process_time() - t)
    return sorted(ts)[len(ts) // 2]


def main(argv=None) -> None:
    from mergeable_metrics import MetricCollection

    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--sklearn-rows", type=int, default=2_000, help="rows (= thresholds) of the scikit-learn loop")
    a = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    y, s = rng.integers(0, 2, a.rows), rng.random(a.rows)
    rows = []
    for metrics in (["roc_auc"], ["roc_auc", "best_threshold@f1", "best_threshold@youden", "threshold_at_recall@0.9"],
                    ["roc_auc", "metric_at_thresholds@metric=f1"], ["roc_auc", "metric_at_thresholds@metric=f1@thresholds=0.1|0.3|0.5|0.7|0.9"]):  # fmt: skip
        mc = MetricCollection(*metrics)
        mc.update(y, y_score=s)
        rows.append((" + ".join(metrics), _cpu(mc.compute)))
    from sklearn.metrics import f1_score, metric_at_thresholds

    ys, ss = y[: a.sklearn_rows], s[: a.sklearn_rows]
    mc = MetricCollection("metric_at_thresholds@metric=f1")
    mc.update(ys, y_score=ss)
    ours = _cpu(mc.compute)
    theirs = _cpu(lambda: metric_at_thresholds(ys, ss, f1_score), repeats=1)
    print(f"| workload ({a.rows:,} random scores, <= 40,000 bins) | compute CPU (median of 3) |\n|---|---|")
    for name, t in rows:
        cell = name.replace("|", "\\|")  # a Markdown table cell
        print(f"| `{cell}` | {t:.3f} s |")
    print(f"\nmetric_at_thresholds(f1) at {a.sklearn_rows:,} thresholds: ours {ours:.3f} s, scikit-learn {theirs:.3f} s, ratio {theirs / ours:.0f}x")


if __name__ == "__main__":
    main()
