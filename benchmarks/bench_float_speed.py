"""Exact at float speed (issue 25): folds through the public ``MetricCollection.update`` against
the same sums in plain float64 numpy (the floor) and scikit-learn.

Usage::

    python -m benchmarks.bench_float_speed              # 2M rows, 65,536-row batches, 3 repeats
    python -m benchmarks.bench_float_speed --rows 200000 --repeats 1   # a smoke run

For each workload, unweighted and weighted: ``ours`` folds every batch with
``MetricCollection.update`` and computes the values once; the ``floor`` computes the same
sufficient statistics in float64 numpy over the same batches (element-wise products and
``sum``, no BLAS ``dot``: OpenBLAS's spinning threads would bill the floor for idle CPU time) (not exact, not order-independent)
and the values from them; ``sklearn`` calls scikit-learn once on the whole arrays. ``roc_auc``'s
floor is a fixed 4,096-bin histogram of the scores per label. CPU time of this process
(``time.process_time``), medians of interleaved repeats (:func:`benchmarks._harness.measure`).
Ratios are throughput ratios: ``vs floor`` = floor time / our time (target >= 0.5; ``roc_auc``
>= 0.25), ``vs sklearn`` = scikit-learn time / our time (target >= 1).
"""

from __future__ import annotations

import argparse
import sys
import warnings

import numpy as np

from benchmarks._harness import Result, machine_line, measure

BATCH = 1 << 16


def _data(n: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    s = np.clip(0.3 * y + 0.7 * rng.random(n), 1e-6, 1 - 1e-6)
    yr = rng.normal(100.0, 10.0, n)
    return {
        "y": y,
        "s": s,
        "w": rng.random(n),
        "yr": yr,
        "pr": yr + rng.normal(0.0, 3.0, n),
        "yc": rng.integers(0, 10, n),
        "pc": rng.integers(0, 10, n),
        "v": rng.gamma(2.0, 1.0, n),
    }


def _batches(n: int):
    return [slice(i, min(n, i + BATCH)) for i in range(0, n, BATCH)]


def _ours(kind: str, d: dict, weighted: bool):
    from mergeable_metrics import MetricCollection

    n = d["y"].shape[0]
    w = d["w"] if weighted else None

    def run():
        if kind == "regression":
            mc = MetricCollection("r2", "mse", "mae", task="regression")
        elif kind == "logloss":
            mc = MetricCollection("log_loss", "brier_score")
        elif kind == "binary":
            mc = MetricCollection("precision", "recall", "f1")
        elif kind == "multiclass":
            mc = MetricCollection("f1@macro", num_classes=10)
        elif kind == "roc_auc":
            mc = MetricCollection("roc_auc")
        else:
            mc = MetricCollection(measures=["loss"])
        for sl in _batches(n):
            ww = None if w is None else w[sl]
            if kind == "regression":
                mc.update(d["yr"][sl], y_pred=d["pr"][sl], sample_weight=ww)
            elif kind == "multiclass":
                mc.update(d["yc"][sl], y_pred=d["pc"][sl], sample_weight=ww)
            elif kind == "mean":
                mc.update(measure=d["v"][sl], sample_weight=ww)
            else:
                mc.update(d["y"][sl], d["s"][sl], sample_weight=ww)
        return mc.compute()

    return run


def _floor(kind: str, d: dict, weighted: bool):
    n = d["y"].shape[0]

    def run():
        acc = None
        for sl in _batches(n):
            w = d["w"][sl] if weighted else None
            if kind == "regression":
                y, p = d["yr"][sl], d["pr"][sl]
                e = p - y
                if w is None:
                    t = np.array([y.shape[0], y.sum(), (y * y).sum(), (e * e).sum(), np.abs(e).sum()])
                else:
                    wy = w * y
                    t = np.array([w.sum(), wy.sum(), (wy * y).sum(), (w * e * e).sum(), (w * np.abs(e)).sum()])
            elif kind == "logloss":
                y, s = d["y"][sl], d["s"][sl]
                ll = -np.log(np.where(y == 1, s, 1.0 - s))
                sq = (s - y) ** 2
                t = np.array([y.shape[0], ll.sum(), sq.sum()]) if w is None else np.array([w.sum(), (w * ll).sum(), (w * sq).sum()])
            elif kind == "binary":
                cell = 2 * d["y"][sl] + (d["s"][sl] >= 0.5)
                t = np.bincount(cell, weights=w, minlength=4)
            elif kind == "multiclass":
                t = np.bincount(10 * d["yc"][sl] + d["pc"][sl], weights=w, minlength=100)
            elif kind == "roc_auc":
                b = np.minimum((d["s"][sl] * 4096).astype(np.int64), 4095)
                t = np.bincount(2 * b + d["y"][sl], weights=w, minlength=2 * 4096)
            else:
                v = d["v"][sl]
                t = np.array([v.shape[0], v.sum()]) if w is None else np.array([w.sum(), (w * v).sum()])
            acc = t if acc is None else acc + t
        if kind == "regression":
            W, sy, syy, see, sae = acc
            return 1.0 - see / (syy - sy * sy / W), see / W, sae / W
        if kind == "binary":
            tn, fp, fn, tp = acc
            return tp / (tp + fp), tp / (tp + fn), 2 * tp / (2 * tp + fp + fn)
        if kind == "multiclass":
            m = acc.reshape(10, 10)
            tp = np.diag(m)
            return float(np.mean(2 * tp / (m.sum(0) + m.sum(1))))
        if kind == "roc_auc":
            h = acc.reshape(4096, 2)
            neg, pos = h[:, 0], h[:, 1]
            below = np.cumsum(neg) - neg
            return float((pos * (below + 0.5 * neg)).sum() / (pos.sum() * neg.sum()))
        return acc[1:] / acc[0]

    return run


def _sklearn(kind: str, d: dict, weighted: bool):
    from sklearn import metrics as skm

    w = d["w"] if weighted else None

    def run():
        if kind == "regression":
            return (
                skm.r2_score(d["yr"], d["pr"], sample_weight=w),
                skm.mean_squared_error(d["yr"], d["pr"], sample_weight=w),
                skm.mean_absolute_error(d["yr"], d["pr"], sample_weight=w),
            )
        if kind == "logloss":
            return skm.log_loss(d["y"], d["s"], sample_weight=w), skm.brier_score_loss(d["y"], d["s"], sample_weight=w)
        if kind == "binary":
            return skm.precision_recall_fscore_support(d["y"], d["s"] >= 0.5, average="binary", sample_weight=w)
        if kind == "multiclass":
            return skm.f1_score(d["yc"], d["pc"], average="macro", sample_weight=w)
        if kind == "roc_auc":
            return skm.roc_auc_score(d["y"], d["s"], sample_weight=w)
        return np.average(d["v"], weights=w)  # scikit-learn has no mean metric: the np.average its metrics use

    return run


WORKLOADS = (
    ("regression", "regression r2/mse/mae"),
    ("logloss", "log loss + Brier"),
    ("binary", "binary P/R/F1 @0.5"),
    ("multiclass", "10-class f1@macro"),
    ("roc_auc", "roc_auc (floor: 4,096-bin histogram)"),
    ("mean", "mean of a measure"),
)


def run(n: int = 2_000_000, repeats: int = 3, only: tuple[str, ...] | None = None) -> list[Result]:
    d = _data(n)
    rows: list[Result] = []
    print(f"# {n:,} rows in {BATCH:,}-row batches, CPU time, medians of {repeats} interleaved runs; {machine_line()}")
    print("| workload | weights | ours (M rows/s) | floor (M rows/s) | sklearn (M rows/s) | ours/floor | ours/sklearn | targets |")
    print("|---|---|---|---|---|---|---|---|")
    for kind, label in WORKLOADS:
        if only and kind not in only:
            continue
        for weighted in (False, True):
            fns = {"ours": _ours(kind, d, weighted), "floor": _floor(kind, d, weighted), "sklearn": _sklearn(kind, d, weighted)}
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                t = measure(fns, repeats)
            vs_floor, vs_sk = t["floor"] / t["ours"], t["sklearn"] / t["ours"]
            need = 0.25 if kind == "roc_auc" else 0.5
            met = vs_floor >= need and vs_sk >= 1.0
            wl = "weighted" if weighted else "unweighted"
            print(
                f"| {label} | {wl} | {n / t['ours'] / 1e6:.1f} | {n / t['floor'] / 1e6:.1f} | {n / t['sklearn'] / 1e6:.1f} | "
                f"{vs_floor:.2f} | {vs_sk:.2f} | {'met' if met else 'NOT met'} |",
                flush=True,
            )
            name = f"{label}, {wl}"
            rows.append(
                Result(
                    "float",
                    name,
                    n / t["ours"],
                    reference="float64 numpy floor",
                    ref_value=n / t["floor"],
                    ratio=vs_floor,
                    target=f">= {need}x",
                    met=vs_floor >= need,
                )
            )
            rows.append(
                Result("float", name, n / t["ours"], reference="scikit-learn", ref_value=n / t["sklearn"], ratio=vs_sk, target=">= 1x", met=vs_sk >= 1.0)
            )
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.bench_float_speed", description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=2_000_000)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--only", help="comma-separated workloads: " + ", ".join(k for k, _ in WORKLOADS))
    a = p.parse_args(argv)
    run(a.rows, a.repeats, tuple(a.only.split(",")) if a.only else None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
