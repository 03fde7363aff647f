"""Class values (``classes=``): the cost of mapping label values to class indices.

Usage::

    python -m benchmarks.bench_labels            # 1M rows, 5 repeats
    python -m benchmarks.bench_labels --quick    # 200k rows, 3 repeats

Workloads: :func:`mergeable_metrics.inputs.labels.encode_labels` of 1M labels drawn from three strings (an object
array, as pandas and Arrow give them; a fixed-width ``<U4`` array) and from ``{-1, 1}`` (int64),
against ``pandas.Categorical(values, categories=classes).codes`` (the usual pandas way; -1 for a
value outside the categories, as ours), and the plain fold of the 3-class confusion matrix the
codes feed (``ConfusionMatrixState.from_batch``), for scale. Rates are rows per CPU-second,
medians of interleaved repeats (see :mod:`benchmarks._harness`).
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from benchmarks._harness import Result, format_table, machine_line, measure, rate


def run(n: int = 1_000_000, repeats: int = 5, clock: str = "cpu", seed: int = 0) -> list[Result]:
    import pandas as pd

    from mergeable_metrics.inputs.validation import Batch
    from mergeable_metrics.inputs.labels import encode_labels
    from mergeable_metrics.states.base import ConfusionMatrixLayout, ConfusionMatrixState

    rng = np.random.default_rng(seed)
    animals = ["cat", "dog", "bird"]
    obj = rng.choice(np.array(animals, dtype=object), n)
    fixed = obj.astype("<U4")
    ints = rng.choice(np.array([-1, 1]), n)
    codes = encode_labels(obj, animals, "y")
    batch = Batch(codes, y_pred=rng.integers(0, 3, n))
    layout = ConfusionMatrixLayout(3)
    t = measure(
        {
            "obj": lambda: encode_labels(obj, animals, "y"),
            "fixed": lambda: encode_labels(fixed, animals, "y"),
            "ints": lambda: encode_labels(ints, [-1, 1], "y"),
            "pd_obj": lambda: pd.Categorical(obj, categories=animals).codes,
            "pd_ints": lambda: pd.Categorical(ints, categories=[-1, 1]).codes,
            "fold": lambda: ConfusionMatrixState.from_batch(layout, batch),
        },
        repeats,
        clock,
    )
    part = "labels"
    out = []
    for key, what, ref in (
        ("obj", "3 string classes, object array", "pd_obj"),
        ("fixed", "3 string classes, <U4 array", "pd_obj"),
        ("ints", "{-1, 1} int64", "pd_ints"),
    ):
        v = rate(n, t[key])
        out.append(Result(part, f"encode_labels: {what}", v, reference="pandas.Categorical(...).codes", ref_value=rate(n, t[ref]), ratio=v / rate(n, t[ref])))
    fold = rate(n, t["fold"])
    out.append(
        Result(
            part,
            "3-class confusion matrix fold of the codes (for scale)",
            fold,
            reference="encode_labels, object array",
            ref_value=rate(n, t["obj"]),
            ratio=fold / rate(n, t["obj"]),
        )
    )
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--clock", choices=["cpu", "wall"], default="cpu")
    args = p.parse_args(argv)
    results = run(n=200_000 if args.quick else 1_000_000, repeats=3 if args.quick else 5, clock=args.clock)
    print(machine_line())
    print(format_table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
