"""Cost of the metric regression tests (issue 14): the paired bootstrap and the fixture's run.

``python -m benchmarks.bench_baselines`` (``--quick``: fewer repeats). CPU time medians of
interleaved repeats (:func:`benchmarks._harness.measure`):

* ``paired_difference`` with 2,000 resamples, for 0/1 hits (few distinct differences: the
  multinomial path) and for continuous per-sample values (the index path), at several n;
* ``evaluate_detailed`` of a scikit-learn ``predict_proba`` over 100,000 rows in batches of
  10,000 with a per-sample metric and two library metrics, against the bare ``predict_proba``
  calls over the same batches (the ratio is what the fixture adds to a model run).
"""

from __future__ import annotations

import argparse

import numpy as np

from benchmarks._harness import machine_line, measure
from mergeable_metrics.pipelines import baselines


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats (a smoke run)")
    args = ap.parse_args(argv)
    repeats = 3 if args.quick else 7
    rng = np.random.default_rng(0)
    print(machine_line())
    print("\n| workload | n | median CPU ms |\n|---|---|---|")
    for n in (40, 4_000, 100_000):
        hits_base = (rng.uniform(size=n) < 0.9).astype(float)
        hits_cur = np.where(rng.uniform(size=n) < 0.05, 0.0, hits_base)
        cont_base = rng.normal(size=n)
        cont_cur = cont_base + rng.normal(0.01, 1.0, size=n)
        t = measure(
            {
                "hits": lambda: baselines.paired_difference(hits_cur, hits_base),
                "continuous": lambda: baselines.paired_difference(cont_cur, cont_base),
            },
            repeats,
        )
        print(f"| paired_difference, 0/1 hits, 2,000 resamples | {n:,} | {t['hits'] * 1e3:.2f} |")
        print(f"| paired_difference, continuous, 2,000 resamples | {n:,} | {t['continuous'] * 1e3:.1f} |")

    from sklearn.linear_model import LogisticRegression

    X = rng.normal(size=(100_000, 8))
    y = (X[:, 0] + rng.normal(size=100_000) > 0).astype(int)
    clf = LogisticRegression().fit(X[:5000], y[:5000])
    batches = [(X[i : i + 10_000], y[i : i + 10_000]) for i in range(0, 100_000, 10_000)]
    metrics = {"hit": lambda out, batch: out.argmax(1) == batch[1], "auc": "roc_auc", "loss": "log_loss"}
    t = measure(
        {
            "bare": lambda: [clf.predict_proba(x) for x, _ in batches],
            "evaluate": lambda: baselines.evaluate_detailed(clf.predict_proba, batches, metrics),
        },
        repeats,
    )
    print(f"| bare predict_proba over the batches | 100,000 | {t['bare'] * 1e3:.1f} |")
    print(f"| evaluate_detailed (fingerprint, hits, roc_auc, log_loss) | 100,000 | {t['evaluate'] * 1e3:.1f} |")
    print(f"\nratio evaluate_detailed / bare predict_proba: {t['evaluate'] / t['bare']:.1f}x")


if __name__ == "__main__":
    main()
