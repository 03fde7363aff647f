"""Ranking and retrieval metrics (``query_col``): fold and finish of ``mergeable_metrics.Evaluation`` against
scikit-learn's ``ndcg_score`` called per query (its 2-D form needs equal-length queries).

    PYTHONPATH=. .venv/bin/python -m benchmarks.bench_retrieval [--rows N] [--queries Q] [--repeats R]

Prints CPU seconds (``time.process_time``, median of the repeats) per part and the ratios.
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings

import numpy as np

from mergeable_metrics import Evaluation

METRICS = ["ndcg@k=10", "map@k=10", "mrr", "retrieval_precision@k=10", "retrieval_recall@k=10", "hit_rate@k=10", "r_precision", "dcg@k=10"]


def _cpu(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t = time.process_time()
        fn()
        times.append(time.process_time() - t)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--queries", type=int, default=50_000)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    q = rng.integers(0, a.queries, a.rows)
    rel = rng.integers(0, 4, a.rows).astype(float)
    s = rng.random(a.rows)
    ev = Evaluation(label_col="rel", score_col="s", query_col="q", metrics=METRICS)
    ndcg = Evaluation(label_col="rel", score_col="s", query_col="q", metrics=["ndcg@k=10"])
    rows = {}
    for bs in (100_000, 10_000):
        batches = [{"q": q[i : i + bs], "rel": rel[i : i + bs], "s": s[i : i + bs]} for i in range(0, a.rows, bs)]

        def fold(e=ev, batches=batches):
            acc = e.zero()
            for b in batches:
                e.fold(acc, b)
            return acc

        rows[f"fold, batches of {bs:,}"] = _cpu(fold, a.repeats)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rows[f"fold (one batch) + finish, {len(METRICS)} metrics"] = _cpu(lambda: ev.finish(ev.fold(ev.zero(), {"q": q, "rel": rel, "s": s})), a.repeats)
        rows["ndcg@10 alone: fold (one batch) + finish"] = _cpu(lambda: ndcg.finish(ndcg.fold(ndcg.zero(), {"q": q, "rel": rel, "s": s})), a.repeats)

    from sklearn.metrics import ndcg_score

    order = np.argsort(q, kind="stable")
    starts = np.flatnonzero(np.r_[True, q[order][1:] != q[order][:-1]])
    groups = np.split(order, starts[1:])

    def sk():
        return np.mean([ndcg_score([rel[g]], [s[g]], k=10) for g in groups if g.size > 1 and rel[g].sum() > 0])

    rows["sklearn ndcg_score per query (k=10)"] = _cpu(sk, 1)
    print(f"rows={a.rows:,} queries={a.queries:,} repeats={a.repeats} (CPU seconds, median)")
    ref = rows["sklearn ndcg_score per query (k=10)"]
    for name, t in rows.items():
        print(f"  {name:<45} {t:8.2f} s   {t / ref:6.3f} x sklearn")


if __name__ == "__main__":
    main()
