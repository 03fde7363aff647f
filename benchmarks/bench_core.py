"""Core fold benchmark: state folds against numpy floors and scikit-learn, in one process.

Usage::

    python -m benchmarks.bench_core            # 10M rows (scikit-learn on the first 2M), 5 repeats
    python -m benchmarks.bench_core --quick    # 1M rows, 3 repeats: a few seconds
    python -m benchmarks.bench_core --clock wall

Workloads (labels int64 0/1 or 0..9, scores float64 in [0, 1), weights float64 in [0, 1)):

* binary counts at one threshold (``BinaryConfusionState.from_batch``), unweighted and weighted,
  against the numpy floor (``count_nonzero`` of ``s >= t`` and ``(s >= t) & y`` with bool labels)
  and ``sklearn.metrics.confusion_matrix`` (thresholding included);
* the 10-class confusion matrix (``ConfusionMatrixState.from_batch``) against ``np.bincount`` of
  ``y * 10 + p`` and ``confusion_matrix``;
* regression moments (``RegressionMomentsState.from_batch``) against ``sklearn.metrics.r2_score``;
* the score distribution behind ROC AUC (``ScoreDistributionState.from_batch``) against
  ``sklearn.metrics.roc_auc_score`` (exact);
* "+ validation" rows: the same with ``mergeable_metrics.inputs.formats.make_batch`` (the checks every engine runs:
  labels in range, finite scores, finite non-negative weights) before the fold.

Rates are rows per CPU-second of this process by default (``--clock cpu``; see
:mod:`benchmarks._harness`), medians of interleaved repeats.
"""

from __future__ import annotations

import argparse
import sys
import warnings

import numpy as np

from benchmarks._harness import Result, format_table, machine_line, measure, rate

# The issue's reference figures on its machine (2 cores, quiet): absolute targets are also shown
# scaled by this run's numpy floor / the issue's floor.
ISSUE_FLOOR_BINARY = 1_100e6
ISSUE_FLOOR_BINCOUNT = 300e6


def make_data(n: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    return {
        "y": y,
        "yb": y.astype(bool),
        "s": np.clip(0.3 * y + 0.7 * rng.random(n), 0.0, 1.0),
        "w": rng.random(n),
        "yc": rng.integers(0, 10, n),
        "pc": rng.integers(0, 10, n),
        "yr": rng.normal(100.0, 10.0, n),
    }


def run(n: int = 10_000_000, repeats: int = 5, clock: str = "cpu", sk_rows: int = 2_000_000, seed: int = 0) -> list[Result]:
    from sklearn.metrics import confusion_matrix, r2_score, roc_auc_score

    from mergeable_metrics.inputs.validation import Batch
    from mergeable_metrics.inputs.formats import make_batch
    from mergeable_metrics.metrics.regression import RegressionLayout, RegressionMomentsState
    from mergeable_metrics.states.score_distribution import ScoreDistributionLayout, ScoreDistributionState
    from mergeable_metrics.states.base import BinaryConfusionLayout, BinaryConfusionState, ConfusionMatrixLayout, ConfusionMatrixState

    d = make_data(n, seed)
    y, yb, s, w, yc, pc = d["y"], d["yb"], d["s"], d["w"], d["yc"], d["pc"]
    yr = d["yr"]
    pr = yr + np.random.default_rng(seed + 1).normal(0.0, 3.0, n)
    m = min(n, sk_rows)
    ys, ss, ws, ycs, pcs = y[:m], s[:m], w[:m], yc[:m], pc[:m]
    layout = BinaryConfusionLayout((0.5,))
    cm_layout = ConfusionMatrixLayout(10)
    out: list[Result] = []
    part = "core"
    sk_note = f"scikit-learn timed on the first {m:,} of {n:,} rows" if m < n else ""

    # -- binary counts at one threshold --------------------------------------------------------
    def floor_binary():
        p = s >= 0.5
        return np.count_nonzero(p & yb), np.count_nonzero(p), np.count_nonzero(yb)

    batch = Batch(y, s)
    batch_w = Batch(y, s, sample_weight=w)
    t = measure(
        {
            "floor": floor_binary,
            "fold": lambda: BinaryConfusionState.from_batch(layout, batch),
            "fold_w": lambda: BinaryConfusionState.from_batch(layout, batch_w),
            "val": lambda: BinaryConfusionState.from_batch(layout, make_batch(num_classes=2, y_true=y, y_score=s)[0]),
            "val_w": lambda: BinaryConfusionState.from_batch(layout, make_batch(num_classes=2, y_true=y, y_score=s, sample_weight=w)[0]),
        },
        repeats,
        clock,
    )
    tk = measure(
        {
            "sk": lambda: confusion_matrix(ys, (ss >= 0.5).astype(np.int64)),
            "sk_w": lambda: confusion_matrix(ys, (ss >= 0.5).astype(np.int64), sample_weight=ws),
        },
        max(1, repeats // 2),
        clock,
    )
    floor = rate(n, t["floor"])
    sk, sk_w = rate(m, tk["sk"]), rate(m, tk["sk_w"])
    scale = floor / ISSUE_FLOOR_BINARY
    out.append(
        Result(
            part,
            "numpy floor: binary counts @1 threshold (count_nonzero, bool labels)",
            floor,
            reference="issue's machine (quiet)",
            ref_value=ISSUE_FLOOR_BINARY,
            ref_source="quoted",
            ratio=scale,
            note="ratio = this run's floor / the issue's floor: how fast this machine is right now",
        )
    )
    for key, label, target_abs, sk_rate in (("fold", "unweighted", 400e6, sk), ("fold_w", "weighted", 150e6, sk_w)):
        v = rate(n, t[key])
        ok = (v >= target_abs or v >= target_abs * scale) and v / sk_rate >= 15
        out.append(
            Result(
                part,
                f"binary counts @1 threshold, {label}: BinaryConfusionState.from_batch",
                v,
                reference="numpy floor (count_nonzero)",
                ref_value=floor,
                ratio=v / floor,
            )
        )
        out.append(
            Result(
                part,
                f"binary counts @1 threshold, {label}: BinaryConfusionState.from_batch",
                v,
                reference=f"sklearn confusion_matrix{' (weighted)' if label == 'weighted' else ''}",
                ref_value=sk_rate,
                ratio=v / sk_rate,
                target=f">= {target_abs / 1e6:.0f} M rows/s and >= 15x sklearn",
                met=ok,
                note=f"target scaled to this run's floor: {target_abs * scale / 1e6:.0f} M rows/s. {sk_note}".strip(),
            )
        )
    for key, label, sk_rate in (("val", "unweighted", sk), ("val_w", "weighted", sk_w)):
        v = rate(n, t[key])
        out.append(
            Result(
                part,
                f"binary counts @1 threshold, {label}, + validation (make_batch)",
                v,
                reference=f"sklearn confusion_matrix{' (weighted)' if label == 'weighted' else ''}",
                ref_value=sk_rate,
                ratio=v / sk_rate,
            )
        )

    # -- 10-class confusion matrix ------------------------------------------------------------
    cbatch = Batch(yc, y_pred=pc)
    t = measure(
        {
            "floor": lambda: np.bincount(yc * 10 + pc, minlength=100),
            "fold": lambda: ConfusionMatrixState.from_batch(cm_layout, cbatch),
            "val": lambda: ConfusionMatrixState.from_batch(cm_layout, make_batch(num_classes=10, y_true=yc, y_pred=pc)[0]),
        },
        repeats,
        clock,
    )
    tk = measure({"sk": lambda: confusion_matrix(ycs, pcs)}, max(1, repeats // 2), clock)
    floor10, sk10 = rate(n, t["floor"]), rate(m, tk["sk"])
    v = rate(n, t["fold"])
    scale10 = floor10 / ISSUE_FLOOR_BINCOUNT
    out.append(
        Result(
            part,
            "10-class confusion matrix: ConfusionMatrixState.from_batch",
            v,
            reference="numpy bincount(y*10+p)",
            ref_value=floor10,
            ratio=v / floor10,
            note=f"this run's bincount floor / the issue's ~300 M rows/s = {scale10:.2f}",
        )
    )
    out.append(
        Result(
            part,
            "10-class confusion matrix: ConfusionMatrixState.from_batch",
            v,
            reference="sklearn confusion_matrix (10 classes)",
            ref_value=sk10,
            ratio=v / sk10,
            target=">= 200 M rows/s and >= 10x sklearn",
            met=(v >= 200e6 or v >= 200e6 * scale10) and v / sk10 >= 10,
            note=f"target scaled to this run's bincount floor: {200 * scale10:.0f} M rows/s. {sk_note}".strip(),
        )
    )
    out.append(
        Result(
            part,
            "10-class confusion matrix + validation (make_batch)",
            rate(n, t["val"]),
            reference="sklearn confusion_matrix (10 classes)",
            ref_value=sk10,
            ratio=rate(n, t["val"]) / sk10,
        )
    )

    # -- regression moments -----------------------------------------------------------------
    rbatch = Batch(yr, y_pred=pr)
    rlayout = RegressionLayout()
    t = measure({"fold": lambda: RegressionMomentsState.from_batch(rlayout, rbatch)}, repeats, clock)
    tk = measure({"sk": lambda: r2_score(yr[:m], pr[:m])}, max(1, repeats // 2), clock)
    v, skr = rate(n, t["fold"]), rate(m, tk["sk"])
    out.append(
        Result(
            part,
            "regression moments: RegressionMomentsState.from_batch",
            v,
            reference="sklearn r2_score",
            ref_value=skr,
            ratio=v / skr,
            target=">= 150 M rows/s",
            met=v >= 150e6 or v >= 150e6 * scale,
            note=f"target scaled to this run's floor: {150 * scale:.0f} M rows/s; the state holds 11 moments (r2_score computes 2 sums), folded in 65,536-row chunks",
        )
    )

    # -- score distribution (ROC AUC) ---------------------------------------------------------
    slayout = ScoreDistributionLayout()
    t = measure({"fold": lambda: ScoreDistributionState.from_batch(slayout, batch)}, repeats, clock)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tk = measure({"sk": lambda: roc_auc_score(ys, ss)}, 1, clock)
    v, ska = rate(n, t["fold"]), rate(m, tk["sk"])
    out.append(
        Result(
            part,
            "ROC AUC state: ScoreDistributionState.from_batch (one batch)",
            v,
            reference="sklearn roc_auc_score (exact)",
            ref_value=ska,
            ratio=v / ska,
            note="details and targets: python -m benchmarks.bench_auc",
        )
    )
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.bench_core", description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="1M rows, 3 repeats")
    p.add_argument("--rows", type=int, help="rows (default 10,000,000; 1,000,000 with --quick)")
    p.add_argument("--repeats", type=int, help="interleaved repeats (median; default 5, 3 with --quick)")
    p.add_argument("--clock", choices=["cpu", "wall"], default="cpu")
    p.add_argument("--markdown", action="store_true")
    a = p.parse_args(argv)
    n = a.rows or (1_000_000 if a.quick else 10_000_000)
    repeats = a.repeats or (3 if a.quick else 5)
    print(f"# bench_core: {n:,} rows, {repeats} repeats, clock={a.clock}; {machine_line()}")
    print(format_table(run(n, repeats, a.clock), markdown=a.markdown))
    return 0


if __name__ == "__main__":
    sys.exit(main())
