"""Cost of ``ci="analytic"`` and ``ci="posterior"`` against the same evaluation without intervals.

Usage::

    python -m benchmarks.bench_ci                  # flights x 1, the example's slices
    python -m benchmarks.bench_ci --repeats 7

Data: the flights predictions of :mod:`benchmarks.bench_onepass` with the flights example's
slices (``carrier``, ``origin``, ``carrier,origin``). Timed (CPU time, median of ``--repeats``
interleaved rounds, :mod:`benchmarks._harness`): ``evaluate`` (fold every batch, then finish) of
the same metrics with ``ci=None``, ``"analytic"`` and ``"posterior"`` (200 samples). Intervals are
computed in ``finish`` only (from the merged states), so the fold costs the same in all three.
"""

from __future__ import annotations

import sys
import warnings

from benchmarks._harness import machine_line, measure
from benchmarks.bench_onepass import flights_args

METRICS = ["accuracy", "precision", "recall", "f1", "f1@macro", "mcc", "roc_auc"]
SLICES = ["carrier", "origin", "carrier,origin"]


def main(argv: list[str] | None = None) -> None:
    from mergeable_metrics import Evaluation

    args, batches = flights_args(__doc__, argv)
    print(f"flights predictions x {args.replicate}: {sum(b.num_rows for b in batches):,} rows; metrics {','.join(METRICS)}; slices {SLICES}")
    print(f"CPU time, median of {args.repeats}; {machine_line()}")
    evs = {ci: Evaluation(label_col="delayed", score_col="score", slices=SLICES, metrics=METRICS, ci=ci) for ci in (None, "analytic", "posterior")}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # undefined metrics of small slices
        slices = len(evs[None].evaluate(batches).slices)
        t = measure({str(ci): (lambda ev=ev: ev.evaluate(batches)) for ci, ev in evs.items()}, args.repeats)
    base = t["None"]
    print(f"{'ci':<10} {'slices':>6} {'evaluate s':>10} {'ratio':>6}")
    for ci in evs:
        print(f"{str(ci):<10} {slices:>6} {t[str(ci)]:>10.3f} {t[str(ci)] / base:>6.2f}")


if __name__ == "__main__":
    sys.exit(main())
