"""``Evaluation.finish`` of many slices: the metrics of every slice at once against one at a time.

Usage::

    python -m benchmarks.bench_finish                  # flights x 1, tailnum slices
    python -m benchmarks.bench_finish --repeats 7

Data: the flights predictions of :mod:`benchmarks.bench_onepass` (``--replicate`` copies), folded
once per workload into an accumulator over ``tailnum`` (~3,800 slices). Timed (CPU time, median
of ``--repeats`` interleaved rounds, :mod:`benchmarks._harness`):

* ``finish``: ``Evaluation.finish(acc)`` of the folded accumulator: for the confusion metrics of
  unweighted rows, one :func:`mergeable_metrics.collection.stacked.compute_fields` over the arrays the accumulator's
  blocks hold (:meth:`mergeable_metrics.evaluation.accumulator.Accumulator.stacked`: no per-slice state objects);
  otherwise one :meth:`mergeable_metrics.collection.plan.Plan.compute_many` of the per-slice states;
* ``finish (states)``: ``Evaluation.finish`` of the same slices given as per-slice tuples of
  states (a ``{slice_key: states}`` mapping: the path of ``compute_many``);
* ``per-slice``: the previous finish's metric step, ``plan.compute_detailed`` slice by slice
  (the rest of ``finish``, the result assembly, is not in this figure);
* ``compute_many``: the one ``plan.compute_many`` call alone.

Workloads: precision/recall/f1/accuracy (issue 12's workload 2), and a larger confusion set
(the same plus ``f1@macro``, ``mcc``, ``cohen_kappa``, ``specificity``, ``npv``,
``classification_report``), and ``roc_auc`` (computed slice by slice inside ``compute_many``: the
cost of the fallback).
"""

from __future__ import annotations

import sys
import warnings

from benchmarks._harness import machine_line, measure
from benchmarks.bench_onepass import METRICS, flights_args

WORKLOADS = (
    ("precision/recall/f1/accuracy, tailnum", METRICS),
    (
        "+ f1@macro, mcc, cohen_kappa, specificity, npv, classification_report",
        METRICS + ["f1@macro", "mcc", "cohen_kappa", "specificity", "npv", "classification_report"],
    ),
    ("roc_auc, tailnum (not vectorised: computed slice by slice)", ["roc_auc"]),
)


def main(argv: list[str] | None = None) -> None:
    from mergeable_metrics import Evaluation

    args, batches = flights_args(__doc__, argv)
    print(f"flights predictions x {args.replicate}: {sum(b.num_rows for b in batches):,} rows; CPU time, median of {args.repeats}")
    print(machine_line())
    head = f"{'workload':<72} {'slices':>6} {'finish s':>9} {'finish (states) s':>17} {'per-slice s':>11} {'compute_many s':>14} {'speed-up':>8}"
    print(head)
    print("-" * len(head))
    for name, metrics in WORKLOADS:
        ev = Evaluation(label_col="delayed", score_col="score", slices=["tailnum"], metrics=metrics)
        acc = ev.zero()
        offset = 0
        for b in batches:
            ev.fold(acc, b, row_offset=offset)
            offset += b.num_rows
        held = dict(acc.copy().items())  # per-slice states, built once before timing (acc keeps its blocks)
        states = list(held.values())
        plan = ev.plan
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # undefined metrics of small slices
            t = measure(
                {
                    "finish": lambda: ev.finish(acc),
                    "finish (states)": lambda: ev.finish(held),
                    "per-slice": lambda: [plan.compute_detailed(s) for s in states],
                    "many": lambda: plan.compute_many(states),
                },
                args.repeats,
            )
        print(
            f"{name:<72} {len(states):>6,} {t['finish']:>9.3f} {t['finish (states)']:>17.3f} {t['per-slice']:>11.3f} {t['many']:>14.3f} {t['per-slice'] / t['many']:>8.1f}",
            flush=True,
        )
    print("speed-up = per-slice compute_detailed / one compute_many (the metric step of finish from states)")


if __name__ == "__main__":
    sys.exit(main())
